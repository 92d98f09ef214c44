#include "scalemodel/estimate/batching.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>

#include "scalemodel/base/strings.h"

namespace scalemodel::estimate {

namespace {

// A small portable generator (splitmix64): the same stream on every
// platform and standard library, so seeded runs and goldens are stable
// (std::normal_distribution is implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1).
  double Uniform() { return ((Next() >> 11) + 0.5) * 0x1.0p-53; }
  double Normal() {  // Box-Muller
    double u = Uniform(), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }
  double Exponential(double rate) { return -std::log(Uniform()) / rate; }

 private:
  uint64_t s_;
};

// Whether `w` replays a list of lengths (Workload::trace beside a
// concurrency or a rate) rather than drawing them.
bool Replays(const Workload& w) {
  return w.arrivals != Workload::kTrace && !w.trace.empty();
}

// The requests a workload sends: a trace's or a replayed list's, else
// `requests`.
double RequestsSent(const Workload& w) {
  return w.trace.empty() ? w.requests : static_cast<double>(w.trace.size());
}

// A length as the simulator holds it: whole tokens, at least 1.
int WholeTokens(double tokens) {
  return static_cast<int>(std::max(1.0, std::round(tokens)));
}

double BlocksForTokens(double tokens, int block) {
  // Whole blocks.
  return std::ceil(tokens / block);
}

// Caps (docs/units.md, Limits): lengths as a sequence's, requests and
// scheduler limits so that every count fits an int and a run ends in
// seconds to minutes, arrivals as a trace file's.
constexpr double kMaxLength = 1073741824.0;  // 2^30 tokens
constexpr int kMaxRequests = 1 << 20;
constexpr int kMaxNumSeqs = 1 << 24;
constexpr int kMaxBatchedTokens = 1 << 30;
constexpr double kMaxArrivalS = 1e9;

double Sample(const LengthDist& d, Rng& rng) {
  double x = d.a;
  switch (d.kind) {
    case LengthDist::kFixed:
      break;
    case LengthDist::kUniform:
      x = std::floor(d.a + rng.Uniform() * (d.b - d.a + 1));
      break;
    case LengthDist::kNormal:
      x = d.a + d.b * rng.Normal();
      break;
    case LengthDist::kLogNormal: {
      // Mean m and SD s of the lengths: sigma^2 = ln(1 + s^2/m^2),
      // mu = ln m - sigma^2 / 2.
      double s2 = std::log(1 + d.b * d.b / (d.a * d.a));
      x = std::exp(std::log(d.a) - s2 / 2 + std::sqrt(s2) * rng.Normal());
      break;
    }
  }
  // Tails beyond a sequence's cap are cut there (inputs are capped too).
  return std::clamp(std::round(x), 1.0, kMaxLength);
}

// One request as the scheduler tracks it (vLLM V1's Request: tokens known
// so far = prompt + generated, of which `computed` have KV in the cache).
struct Req {
  int id = 0;
  double arrival = 0;
  int prompt = 1, output = 1;
  int generated = 0;
  int computed = 0;
  int blocks = 0;
  int client = -1;  // closed loop: whose next request follows this one
  int cached = 0;   // prompt KV that arrived with the request
  double first = -1, last = 0, finish = -1;
  int tokens() const { return prompt + generated; }
};

// Samples as (value, count) runs: one step gives the same inter-token gap
// to every sequence that also got a token in the step before, so the ITL
// list holds about one run per step instead of one entry per token.
using Runs = std::vector<std::pair<double, double>>;

struct Scheduled {
  int req;
  int tokens;
};

// The reason a request of `tokens` cannot run: one scheduler's KV cache (a
// replica's, or a DP rank's when `ranks` > 1) holds `capacity_tokens`.
std::string DoesNotFit(double tokens, double capacity_tokens, int ranks) {
  return "a request of " + FormatNumber(tokens) + " tokens does not fit " +
         (ranks > 1 ? "a DP rank's" : "the replica's") + " KV cache of " +
         FormatNumber(capacity_tokens) + " tokens";
}

// One scheduler's state (a replica's, or one DP rank's with DP attention)
// and its part of a step: admission, the step's requests, completion.
class Scheduler {
 public:
  Scheduler(const StepCostModel& cost, const SchedulerOptions& opt,
            double capacity_blocks, uint64_t seed)
      : cost_(cost),
        opt_(opt),
        capacity_(capacity_blocks),
        rng_(seed),
        lookahead_(cost.spec().on() ? cost.spec().k : 0) {}

  // Takes `reqs` (sorted by arrival for open loop; for closed loop the
  // first `clients` start at 0 and each finish releases the client's next).
  void Start(std::vector<Req>* reqs, int clients);
  // Open loop: requests that have arrived by `now` join the queue; `area`
  // gains their time in the system before `now`.
  void Arrive(double now, double* area);
  // The next open-loop arrival (infinity: none left).
  double NextArrival() const {
    return next_ < reqs_->size() ? (*reqs_)[next_].arrival
                                 : std::numeric_limits<double>::infinity();
  }
  // Closed loop: with nothing to run, requests sent meanwhile are here.
  void TakeSentWhenIdle() {
    if (!Idle()) return;
    // An idle scheduler receives at once, whatever its recv interval, and
    // with the overlap scheduler has no step ahead of the request.
    Deliver(&lag_);
    Deliver(&arrived_);
    Deliver(&sent_ahead_);
    if (!socket_.empty()) Receive();
    if (!sent_.empty()) TakeSent();
  }
  bool Idle() const { return running_.empty() && waiting_.empty(); }
  // Forms this scheduler's part of the next step and its work; the
  // requests sent during the step's forming reach the queue after it.
  void ScheduleStep();
  // Attention-DP balance: whether new requests may start in the next step.
  void HoldAdmission(bool hold) { hold_ = hold; }
  bool Decoding() const { return !running_.empty(); }
  bool WaitingWithRoom() const {
    return !waiting_.empty() &&
           static_cast<int>(running_.size()) < opt_.max_num_seqs;
  }
  bool StepEmpty() const { return step_.empty(); }
  // This scheduler's work in the step ScheduleStep formed.
  const StepWork& Work() const { return work_; }
  // The step ended at `now`. Returns how many requests finished.
  int Complete(double now, Runs* itl);
  double used() const { return used_; }
  double capacity() const { return capacity_; }
  double in_system() const {
    return static_cast<double>(running_.size() + waiting_.size() +
                               socket_.size() + lag_.size() + arrived_.size() +
                               sent_ahead_.size());
  }
  int preemptions() const { return preemptions_; }
  int requests() const { return static_cast<int>(reqs_->size()); }
  // Why nothing could run: the head request is larger than the cache.
  std::string Stuck() const {
    return DoesNotFit((*reqs_)[waiting_[0]].tokens(),
                      capacity_ * opt_.block_tokens, cost_.dp_ranks());
  }
  bool HasWaiting() const { return !waiting_.empty(); }
  // Tokens of the largest request (prompt and output).
  int LongestRequest() const {
    int m = 0;
    for (const Req& q : *reqs_) m = std::max(m, q.prompt + q.output);
    return m;
  }

 private:
  int BlocksFor(int tokens) const {
    return (tokens + opt_.block_tokens - 1) / opt_.block_tokens;
  }
  bool Grow(int r, int new_computed);
  void Preempt(int r);
  bool Admissible(int r) const;
  void ScheduleInto(std::vector<Scheduled>* step);
  StepWork StepWorkOf() const;
  void SchedulePrefillFirst(std::vector<Scheduled>* step, bool admit);
  void AdmitWaiting(std::vector<Scheduled>* step, int* budget,
                    bool reserve = false);
  bool RoomToFinish(int r) const;
  void Finish(int r, double now);
  int Accepted();
  void TakeSent() {
    waiting_.insert(waiting_.end(), sent_.begin(), sent_.end());
    sent_.clear();
  }
  // Requests that reach the scheduler: at its socket when it receives only
  // every recv interval, else in its queue.
  void Deliver(std::vector<int>* reqs) {
    if (opt_.recv_interval > 1) {
      socket_.insert(socket_.end(), reqs->begin(), reqs->end());
    } else {
      waiting_.insert(waiting_.end(), reqs->begin(), reqs->end());
    }
    reqs->clear();
  }
  // SGLang's recv interval: the requests at the socket join the queue and
  // the counter restarts.
  void Receive() {
    waiting_.insert(waiting_.end(), socket_.begin(), socket_.end());
    socket_.clear();
    recv_count_ = 0;
  }
  bool Decoding(const Req& q, int tokens) const {
    return tokens == 1 && q.generated > 0 && q.computed + 1 == q.tokens();
  }

  const StepCostModel& cost_;
  SchedulerOptions opt_;
  double capacity_;
  Rng rng_;        // speculative decoding: accepted draft tokens
  int lookahead_;  // draft tokens per decode step (0: no speculation)
  std::vector<Req>* reqs_ = nullptr;
  size_t next_ = 0;  // open loop: next arrival
  std::vector<Scheduled> step_;
  StepWork work_;  // step_'s work, as the cost model takes it
  std::deque<int> waiting_;
  int group_left_ = 0;  // multi-step: decode steps left in the run
  // SGLang's recv interval (opt_.recv_interval > 1): the weighted steps
  // since the last receive, the last step's weight, and the requests at the
  // scheduler's socket, not yet received.
  static constexpr int kRecvWeightPrefill = 1000;
  int recv_count_ = 0;
  int last_weight_ = 1;
  bool hold_ = false;  // attention-DP balance holds new requests
  std::vector<int> socket_;
  // The overlap scheduler (opt_.overlap_schedule): requests that arrived
  // during the step now running (`arrived_`; closed loop: sent at its start,
  // `sent_ahead_`) are first seen when the step after the next is formed;
  // `lag_` holds those seen when the next one is.
  std::vector<int> arrived_, sent_ahead_, lag_;
  bool admitted_ = true;  // the last step could admit waiting requests
  std::vector<int> running_;
  double used_ = 0;
  int preemptions_ = 0;
  int next_new_ = 0;           // closed loop: next unsent request
  std::vector<int> released_;  // closed loop: finished this step
  // Closed loop: requests sent after their predecessor's last token, not
  // yet at the scheduler (they reach it during the step that follows).
  std::vector<int> sent_;
  Runs gaps_;  // this step: (time of the previous token, tokens)
  void AddGap(double last) {
    for (auto& g : gaps_) {
      if (g.first == last) {
        g.second += 1;
        return;
      }
    }
    gaps_.emplace_back(last, 1.0);
  }
};

// Blocks for `new_computed` tokens of request r; false when the cache
// cannot hold them even after preempting others.
bool Scheduler::Grow(int r, int new_computed) {
  Req& q = (*reqs_)[r];
  int need = BlocksFor(new_computed) - q.blocks;
  while (need > 0 && used_ + need > capacity_) {
    // Preempt the most recently admitted request (vLLM: recompute, last in
    // first out); when that is r itself, r waits.
    int victim = running_.back();
    Preempt(victim);
    if (victim == r) return false;
  }
  if (need > 0) {
    q.blocks += need;
    used_ += need;
  }
  return true;
}

void Scheduler::Preempt(int r) {
  Req& q = (*reqs_)[r];
  used_ -= q.blocks;
  q.blocks = 0;
  q.computed = 0;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  waiting_.push_front(r);
  ++preemptions_;
}

// A waiting request can start when a sequence slot and the KV blocks for
// its first chunk (chunked: at least one token) are free.
bool Scheduler::Admissible(int r) const {
  const Req& q = (*reqs_)[r];
  if (static_cast<int>(running_.size()) >= opt_.max_num_seqs) return false;
  // Without chunking the whole prompt is computed at once.
  int first = opt_.chunked_prefill ? q.computed + 1 : q.tokens();
  return used_ + BlocksFor(first) <= capacity_;
}

void Scheduler::ScheduleStep() {
  if (opt_.overlap_schedule) {
    // The host formed this step while the last one ran: it sees the
    // requests that reached the scheduler before the last step began.
    std::vector<int> seen = std::move(lag_);
    lag_ = std::move(arrived_);
    arrived_.clear();
    lag_.insert(lag_.end(), sent_ahead_.begin(), sent_ahead_.end());
    sent_ahead_ = std::move(sent_);
    sent_.clear();
    Deliver(&seen);
  }
  if (opt_.recv_interval <= 1) {
    ScheduleInto(&step_);
    work_ = StepWorkOf();
    TakeSent();
    return;
  }
  // SGLang's recv interval: the loop receives what reached its socket only
  // when the counter, grown by the last step's weight (1 for decode or
  // nothing to run, 1000 for prompt work), reaches the interval.
  recv_count_ += last_weight_;
  if (recv_count_ >= opt_.recv_interval) Receive();
  ScheduleInto(&step_);
  work_ = StepWorkOf();
  last_weight_ = work_.prefill_tokens > 0 ? kRecvWeightPrefill : 1;
  // Requests sent after the last step reach the socket during this one.
  socket_.insert(socket_.end(), sent_.begin(), sent_.end());
  sent_.clear();
}

// Forms one step: which requests compute how many tokens.
void Scheduler::ScheduleInto(std::vector<Scheduled>* step) {
  step->clear();
  int budget = opt_.max_batched_tokens;
  // Multi-step: inside a run of decode steps nothing is admitted.
  const bool admit = (group_left_ <= 0 || running_.empty()) && !hold_;
  if (group_left_ > 0) --group_left_;
  admitted_ = admit;
  if (opt_.chunked_prefill && !opt_.mixed_prefill) {
    SchedulePrefillFirst(step, admit);
    return;
  }
  const bool prefill_only = admit && !opt_.chunked_prefill &&
                            !waiting_.empty() && Admissible(waiting_[0]);
  if (!prefill_only) {
    // Running requests first, in admission order; a preemption may remove
    // later ones, so walk by index.
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      int r = running_[i];
      Req& q = (*reqs_)[r];
      int n = std::min(q.tokens() - q.computed, budget);
      if (!opt_.chunked_prefill && n < q.tokens() - q.computed) continue;
      // Speculating, a decode step verifies k draft tokens too: their KV
      // slots (vLLM's lookahead slots) and their share of the token budget.
      const int extra = Decoding(q, n) ? lookahead_ : 0;
      if (!Grow(r, q.computed + n + extra)) break;
      step->push_back({r, n});
      budget -= n + extra;
    }
    if (!opt_.chunked_prefill || !admit) return;
  }
  // TensorRT-LLM's GUARANTEED_NO_EVICT: new requests only where every
  // running one can still finish; with nothing running, the head request
  // starts whatever it needs.
  if (admit) {
    AdmitWaiting(step, &budget, opt_.reserve_to_finish && !running_.empty());
  }
}

// Moves waiting requests that fit into the step (whole prompts, or chunks
// with chunked prefill), first come first served, within `budget` tokens.
void Scheduler::AdmitWaiting(std::vector<Scheduled>* step, int* budget,
                             bool reserve) {
  while (!waiting_.empty() && *budget > 0 && Admissible(waiting_[0]) &&
         (!reserve || RoomToFinish(waiting_[0]))) {
    int r = waiting_[0];
    Req& q = (*reqs_)[r];
    int need = q.tokens() - q.computed;
    int n = opt_.chunked_prefill ? std::min(need, *budget) : need;
    if (!opt_.chunked_prefill && n > *budget && !step->empty()) break;
    if (used_ + BlocksFor(q.computed + n) - q.blocks > capacity_) {
      // vLLM V1 schedules a waiting request only when the KV blocks for its
      // whole chunk are free (allocate_slots, else the waiting loop ends);
      // a preempted request so waits for room for its recompute instead of
      // restarting a token at a time. With nothing running, the head
      // request starts with what fits.
      if (!opt_.chunked_prefill || !running_.empty()) break;
      n = static_cast<int>(capacity_ - used_ + q.blocks) * opt_.block_tokens -
          q.computed;
      if (n <= 0) break;
    }
    waiting_.pop_front();
    running_.push_back(r);
    Grow(r, q.computed + n);
    step->push_back({r, n});
    *budget -= n;
  }
}

// Whether the cache holds request r to its last token besides every
// running request's remaining tokens (SGLang admits a prompt only within
// what the running requests' outputs leave: PrefillAdder's reservation,
// max_new_tokens x new_token_ratio; here the whole remainder, where SGLang
// reserves a decaying fraction and retracts a request when decode
// overflows).
bool Scheduler::RoomToFinish(int r) const {
  const std::vector<Req>& R = *reqs_;
  long need = BlocksFor(R[r].prompt + R[r].output) - R[r].blocks;
  for (int x : running_) {
    need += std::max(0, BlocksFor(R[x].prompt + R[x].output) - R[x].blocks);
  }
  return used_ + need <= capacity_;
}

// SGLang's default (chunked prefill, mixed chunks off): prompt work first
// and alone (the next chunk of a prompt already started, then new prompts
// within the budget); when there is none, one decode step of every running
// sequence (bounded by max_num_seqs, not by the token budget).
void Scheduler::SchedulePrefillFirst(std::vector<Scheduled>* step, bool admit) {
  int budget = opt_.max_batched_tokens;
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    int r = running_[i];
    Req& q = (*reqs_)[r];
    const int left = q.tokens() - q.computed;
    if (Decoding(q, left)) continue;
    const int n = std::min(left, budget);
    if (!Grow(r, q.computed + n)) break;
    step->push_back({r, n});
    budget -= n;
  }
  // New prompts only where the running requests can still finish; with
  // nothing running, the head request may start whatever it needs.
  if (admit) AdmitWaiting(step, &budget, !running_.empty());
  if (!step->empty()) return;
  for (size_t i = 0; i < running_.size(); ++i) {
    int r = running_[i];
    // Speculating, the draft tokens' KV slots too (as in ScheduleStep).
    if (!Grow(r, (*reqs_)[r].computed + 1 + lookahead_)) break;
    step->push_back({r, 1});
  }
}

StepWork Scheduler::StepWorkOf() const {
  StepWork w;
  for (const Scheduled& s : step_) {
    const Req& q = (*reqs_)[s.req];
    if (Decoding(q, s.tokens)) {
      w.decode_seqs += 1;
      w.decode_context += q.computed + 1;
    } else {
      w.prefill_tokens += s.tokens;
      w.prefill_pairs += s.tokens * (q.computed + s.tokens / 2.0);
    }
  }
  return w;
}

void Scheduler::Finish(int r, double now) {
  Req& q = (*reqs_)[r];
  q.finish = now;
  used_ -= q.blocks;
  q.blocks = 0;
  running_.erase(std::find(running_.begin(), running_.end(), r));
  if (q.client >= 0) released_.push_back(q.client);
}

// The step ends at `now`: its requests' computed tokens advance; each that
// has computed all its known tokens samples one; finished requests leave
// (closed loop: their clients send the next). Returns how many finished.
int Scheduler::Complete(double now, Runs* itl) {
  // Multi-step: a decode-only step scheduled at a run's boundary starts the
  // next run.
  const bool decode_only =
      !step_.empty() && cost_.MatmulTokens(work_) == work_.decode_seqs;
  if (opt_.scheduler_steps > 1 && admitted_ && decode_only) {
    group_left_ = opt_.scheduler_steps - 1;
  }
  const std::vector<Scheduled>& step = step_;
  std::vector<Req>& R = *reqs_;
  const int n = static_cast<int>(R.size());
  int finished = 0;
  // Inter-token gaps grouped by when the previous token came (a few
  // distinct step ends per step), one run per group.
  gaps_.clear();
  for (const Scheduled& s : step) {
    Req& q = R[s.req];
    const bool decoding = Decoding(q, s.tokens);
    q.computed += s.tokens;
    if (q.computed < q.tokens()) continue;
    // A verify step yields the accepted draft tokens and one more, streamed
    // together (one inter-token gap); their KV stays (lookahead slots).
    const int got = decoding && lookahead_ > 0
                        ? std::min(Accepted(), q.output - q.generated)
                        : 1;
    q.generated += got;
    q.computed += got - 1;
    if (q.first < 0) {
      q.first = now;
    } else {
      AddGap(q.last);
    }
    q.last = now;
    if (q.generated >= q.output) {
      Finish(s.req, now);
      ++finished;
    }
  }
  for (const auto& [last, count] : gaps_) itl->emplace_back(now - last, count);
  for (int c : released_) {
    if (next_new_ >= n) break;
    Req& q = R[next_new_];
    q.client = c;
    q.arrival = now;
    sent_.push_back(next_new_++);
  }
  released_.clear();
  return finished;
}

// Tokens one verify step yields: 1 + the draft tokens accepted before the
// first rejection, position i accepted with probability accept[i].
int Scheduler::Accepted() {
  const SpecDecode& sp = cost_.spec();
  int got = 1;
  for (int i = 0; i < sp.k; ++i) {
    const double a = sp.accept.size() == 1 ? sp.accept[0] : sp.accept[i];
    if (!(rng_.Uniform() < a)) break;
    ++got;
  }
  return got;
}

void Scheduler::Start(std::vector<Req>* reqs, int clients) {
  reqs_ = reqs;
  std::vector<Req>& R = *reqs;
  const int n = static_cast<int>(R.size());
  if (clients > 0) {
    for (int c = 0; c < std::min(clients, n); ++c) {
      R[c].client = c;
      R[c].arrival = 0;
      waiting_.push_back(c);
    }
    next_new_ = std::min(clients, n);
    next_ = R.size();
  }
}

void Scheduler::Arrive(double now, double* area) {
  std::vector<Req>& R = *reqs_;
  while (next_ < R.size() && R[next_].arrival <= now) {
    *area += now - R[next_].arrival;  // in the system since it arrived
    // With a recv interval an arrival waits at the socket to be received.
    const int r = static_cast<int>(next_++);
    if (opt_.overlap_schedule) {
      arrived_.push_back(r);
    } else if (opt_.recv_interval > 1) {
      socket_.push_back(r);
    } else {
      waiting_.push_back(r);
    }
  }
}

// One engine: its schedulers (one, or one per DP rank) step in lockstep,
// each step lasting what the cost model gives for their work together
// (DP attention: the busiest rank's dense GEMMs and attention bound it).
class Engine {
 public:
  Engine(const StepCostModel& cost, std::vector<double>* token_time,
         int balance_timeout, bool overlap_schedule)
      : cost_(cost),
        tt_(token_time),
        balance_timeout_(balance_timeout),
        overlap_(overlap_schedule) {}
  void Run(std::vector<Scheduler>* ranks, Runs* itl, SimulationResult* out,
           bool record_series);

 private:
  // `head_start`: how long before the step's turn on the GPU the host
  // began launching it (the overlap scheduler's; 0 without it).
  double StepTime(const StepWork& w, double head_start) const;
  // TensorRT-LLM's attention-DP balance (SchedulerOptions::
  // adp_balance_timeout_iters): every rank with a request waiting and a
  // free slot starts them; otherwise the iteration counter grows, and new
  // requests wait unless it reaches the timeout (then it resets) or some
  // rank has nothing decoding.
  void BalanceAdmission(std::vector<Scheduler>* ranks) {
    bool all_waiting = true, all_decoding = true;
    for (const Scheduler& r : *ranks) {
      all_waiting = all_waiting && r.WaitingWithRoom();
      all_decoding = all_decoding && r.Decoding();
    }
    // Start now: every rank has one, the timeout is reached, or some rank
    // has nothing decoding; the counter then restarts.
    const bool start =
        all_waiting || ++balance_count_ >= balance_timeout_ || !all_decoding;
    if (start) balance_count_ = 0;
    const bool hold = !start;
    for (Scheduler& r : *ranks) r.HoldAdmission(hold);
  }
  const StepCostModel& cost_;
  std::vector<double>* tt_;
  int balance_timeout_ = 0;
  int balance_count_ = 0;
  bool overlap_ = false;
};

// The step's time from the cost model: the token-count part from the
// cache, the context part (KV reads, attention FLOPs) from the work.
double Engine::StepTime(const StepWork& w, double head_start) const {
  const double tokens = cost_.MatmulTokens(w);
  if (cost_.peak() && w.prefill_tokens == 0) return cost_.Cost(w).total().si();
  const size_t t = static_cast<size_t>(tokens);
  double token_time;
  if (t < tt_->size()) {
    double& c = (*tt_)[t];
    if (c < 0) c = cost_.TokenTime(tokens);
    token_time = c;
  } else {
    token_time = cost_.TokenTime(tokens);
  }
  // An eager prefill step's host launch time adds to its GPU time, less
  // what the host launched while the step before ran (`head_start`).
  return token_time + cost_.ContextTime(w) +
         std::max(0.0, cost_.EagerHostTime(w) - head_start);
}

void Engine::Run(std::vector<Scheduler>* ranks, Runs* itl,
                 SimulationResult* out, bool record_series) {
  std::vector<Scheduler>& S = *ranks;
  int n = 0;
  for (const Scheduler& r : S) n += r.requests();
  double capacity = 0;
  for (const Scheduler& r : S) capacity += r.capacity();
  double now = 0, area = 0, kv_area = 0;
  double start = std::numeric_limits<double>::infinity();
  for (const Scheduler& r : S) start = std::min(start, r.NextArrival());
  if (!std::isfinite(start)) start = 0;  // closed loop: all at 0
  int done = 0;
  // A run where no request finishes for this many steps is thrashing: the
  // KV cache cannot hold the running requests, which preempt one another
  // and recompute (a request needs at most one step per token).
  int longest = 0;
  for (const Scheduler& r : S) longest = std::max(longest, r.LongestRequest());
  const long stall_limit = 10L * (longest + 1) + 1000;
  long since_done = 0;
  auto all_idle = [&S] {
    bool idle = true;
    for (const Scheduler& r : S) idle = idle && r.Idle();
    return idle;
  };
  // The host's launch of the steps (eager prefill steps take EagerHostTime,
  // which their GPU work waits on): when it is free to launch the next
  // one, and when the last one began on the GPU. With the overlap
  // scheduler the host forms and launches a step while the one before
  // runs (docs/model.md 7.3).
  double host_free = 0, last_start = 0;
  while (done < n) {
    for (Scheduler& r : S) r.Arrive(now, &area);
    // Closed loop: a client sends its next request when it has the last
    // token of the one before; an idle engine starts it then, a busy one
    // (any of its ranks busy: they step together) has started its next
    // step by the time it arrives (the token's trip to the client and the
    // request's back take milliseconds), so it waits for that step to end
    // (docs/model.md 7.3).
    bool idle = all_idle();
    const bool from_idle = idle;  // an idle host forms the step now
    if (idle) {
      for (Scheduler& r : S) r.TakeSentWhenIdle();
      idle = all_idle();
    }
    if (idle) {
      double next = std::numeric_limits<double>::infinity();
      for (const Scheduler& r : S) next = std::min(next, r.NextArrival());
      if (!std::isfinite(next)) {
        // Cannot happen (a closed loop sends on every finish); never spin.
        out->feasible = false;
        out->reason = "the simulation stalled with requests left";
        return;
      }
      now = next;  // idle until the next arrival
      continue;
    }
    if (balance_timeout_ > 0 && S.size() > 1) BalanceAdmission(&S);
    for (Scheduler& r : S) r.ScheduleStep();
    // The step's work; with ranks, the busiest one's (most GEMM rows, then
    // most context).
    StepWork w;
    double hot_rows = -1, hot_context = -1;
    int empty = 0;
    for (const Scheduler& r : S) {
      empty += r.StepEmpty();
      const StepWork& x = r.Work();
      w.decode_seqs += x.decode_seqs;
      w.decode_context += x.decode_context;
      w.prefill_tokens += x.prefill_tokens;
      w.prefill_pairs += x.prefill_pairs;
      const double rows = cost_.MatmulTokens(x);
      if (S.size() > 1 &&
          (rows > hot_rows ||
           (rows == hot_rows && x.decode_context > hot_context))) {
        hot_rows = rows;
        hot_context = x.decode_context;
        w.rank_decode_seqs = x.decode_seqs;
        w.rank_decode_context = x.decode_context;
        w.rank_prefill_tokens = x.prefill_tokens;
        w.rank_prefill_pairs = x.prefill_pairs;
      }
    }
    if (empty == static_cast<int>(S.size())) {
      // Nothing fits: a head request is larger than its scheduler's cache.
      out->feasible = false;
      for (const Scheduler& r : S) {
        if (r.HasWaiting()) {
          out->reason = r.Stuck();
          break;
        }
      }
      return;
    }
    // With the overlap scheduler the host began launching this step when
    // the last one began (or when it finished launching that one), so an
    // eager step's host time runs partly under the last step.
    const double launch =
        overlap_ && !from_idle ? std::max(host_free, last_start) : now;
    const double dt = StepTime(w, now - launch);
    // An eager step holds the host to its end; a graph replay frees it
    // once launched.
    host_free = cost_.EagerHostTime(w) > 0 ? now + dt : launch;
    last_start = now;
    const double tokens = cost_.MatmulTokens(w);
    double in_system = 0, used = 0;
    for (const Scheduler& r : S) {
      in_system += r.in_system();
      used += r.used();
    }
    area += in_system * dt;
    kv_area += used * dt;
    out->kv_peak_fraction = std::max(out->kv_peak_fraction, used / capacity);
    out->max_step_tokens = std::max(out->max_step_tokens, tokens);
    out->mean_decode_batch += w.decode_seqs;
    ++out->steps;
    if (record_series) out->kv_series.emplace_back(now, used / capacity);
    now += dt;
    int finished = 0;
    for (Scheduler& r : S) finished += r.Complete(now, itl);
    done += finished;
    since_done = finished > 0 ? 0 : since_done + 1;
    if (since_done > stall_limit) {
      int preempted = 0;
      for (const Scheduler& r : S) preempted += r.preemptions();
      out->feasible = false;
      out->reason = fmt::format(
          "the KV cache cannot hold the running requests: no request "
          "finished in {} steps while they preempted one another {} times "
          "(lower the concurrency or --max-num-seqs, or add memory)",
          since_done, preempted);
      return;
    }
  }
  for (const Scheduler& r : S) out->preemptions += r.preemptions();
  const double end = now;
  out->mean_requests_in_system += area;  // normalized by the caller
  out->kv_mean_fraction += end > start ? kv_area / capacity / (end - start) : 0;
}

// Percentiles by linear interpolation between order statistics (numpy's
// default), over the runs sorted by value.
Percentiles Summarize(Runs v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  std::vector<double> cum(v.size());
  double n = 0, sum = 0;
  for (size_t j = 0; j < v.size(); ++j) {
    n += v[j].second;
    sum += v[j].first * v[j].second;
    cum[j] = n;
  }
  auto order = [&](double k) {  // the k-th smallest, from 0
    size_t j = std::upper_bound(cum.begin(), cum.end(), k) - cum.begin();
    return v[std::min(j, v.size() - 1)].first;
  };
  auto at = [&](double q) {
    double pos = q * (n - 1);
    double i = std::floor(pos), f = pos - i;
    return f == 0 ? order(i) : order(i) * (1 - f) + order(i + 1) * f;
  };
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  p.mean = sum / n;
  return p;
}

Result<bool> CheckInputs(const StepCostModel& cost, int replicas,
                         const Workload& w, const SchedulerOptions& s) {
  if (w.arrivals == Workload::kPoisson &&
      !(w.rate_per_s > 0 && std::isfinite(w.rate_per_s))) {
    return InvalidArgument("expected a request rate > 0 requests/s, got " +
                               FormatNumber(w.rate_per_s),
                           "--rate");
  }
  if (w.arrivals == Workload::kConcurrency && w.concurrency < 1) {
    return InvalidArgument("expected a concurrency of at least 1, got " +
                               std::to_string(w.concurrency),
                           "--concurrency");
  }
  if (Replays(w) && w.trace.size() > static_cast<size_t>(kMaxRequests)) {
    return InvalidArgument("expected at most 2^20 (1048576) requests, got " +
                               std::to_string(w.trace.size()),
                           "--trace-file");
  }
  if (w.trace.empty() && w.arrivals != Workload::kTrace && w.requests < 1) {
    return InvalidArgument(
        "expected at least 1 request, got " + std::to_string(w.requests),
        "--requests");
  }
  if (w.trace.empty() && w.arrivals != Workload::kTrace &&
      w.requests > kMaxRequests) {
    return InvalidArgument(
        "expected at most 2^20 (1048576) requests (a simulation of that many "
        "takes about a minute), got " +
            std::to_string(w.requests),
        "--requests");
  }
  const double sent = RequestsSent(w);
  if (w.arrivals == Workload::kPoisson && sent / w.rate_per_s > kMaxArrivalS) {
    return InvalidArgument(
        "expected a rate of at least " + FormatNumber(sent / kMaxArrivalS) +
            " requests/s for " + FormatNumber(sent) +
            " requests (arrivals within 1e9 s, as in a trace file), got " +
            FormatNumber(w.rate_per_s),
        "--rate");
  }
  if (w.arrivals == Workload::kTrace && w.trace.empty()) {
    return InvalidArgument("the trace has no requests", "--trace-file");
  }
  // The scheduler's limits, each within its range.
  const struct {
    long value, lo, hi;
    const char* expected;
    const char* flag;
  } limits[] = {
      {s.max_num_seqs, 1, kMaxNumSeqs, "from 1 to 2^24 (16777216) sequences",
       "--max-num-seqs"},
      {s.max_batched_tokens, 1, kMaxBatchedTokens,
       "from 1 to 2^30 (1073741824) tokens per step", "--max-batched-tokens"},
      {s.adp_balance_timeout_iters, 0, kMaxNumSeqs,
       "a balance timeout from 0 to 2^24 (16777216) iterations",
       "--adp-balance-timeout"},
      {s.recv_interval, 1, kMaxNumSeqs,
       "a receive interval from 1 to 2^24 (16777216) decode steps",
       "--scheduler-recv-interval"},
  };
  for (const auto& l : limits) {
    if (l.value < l.lo || l.value > l.hi) {
      return InvalidArgument(std::string("expected ") + l.expected + ", got " +
                                 std::to_string(l.value),
                             l.flag);
    }
  }
  if (!(s.prefix_hit >= 0 && s.prefix_hit < 1)) {
    return InvalidArgument(
        "expected a prefix-cache hit fraction >= 0 and < 1, "
        "got " +
            FormatNumber(s.prefix_hit),
        "--prefix-hit");
  }
  // Up to an hour: beyond that it is no request path.
  if (!(s.request_path_s >= 0 && s.request_path_s <= 3600)) {
    return InvalidArgument(
        "expected a request path from 0 to 1 h (such as 7ms), got " +
            FormatNumber(s.request_path_s) + " s",
        "--request-path");
  }
  if (replicas < 1 || s.block_tokens < 1 || cost.chips_per_replica() < 1) {
    return InvalidArgument("expected at least one replica", "plan");
  }
  return true;
}

// The requests in arrival order (open loop) or sending order (closed).
std::vector<Req> MakeRequests(const Workload& w) {
  std::vector<Req> reqs;
  Rng rng(w.seed);
  if (w.arrivals == Workload::kTrace) {
    const std::vector<TraceRequest>& t = w.trace;
    std::vector<int> order(t.size());
    for (size_t i = 0; i < t.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&t](int a, int b) {
      return t[a].arrival_s < t[b].arrival_s;
    });
    for (int i : order) {
      const TraceRequest& r = t[i];
      Req q;
      q.id = i;
      q.arrival = r.arrival_s;
      q.prompt = WholeTokens(r.prompt_tokens);
      q.output = WholeTokens(r.output_tokens);
      q.cached = static_cast<int>(
          std::clamp(std::floor(r.cached_tokens), 0.0, q.prompt - 1.0));
      reqs.push_back(q);
    }
    return reqs;
  }
  // Drawn lengths, or a replayed list's in its order; Poisson arrivals or
  // (closed loop) sent by the clients.
  const bool replay = Replays(w);
  const int n = static_cast<int>(RequestsSent(w));
  double t = 0;
  for (int i = 0; i < n; ++i) {
    Req q;
    q.id = i;
    if (w.arrivals == Workload::kPoisson) {
      t += rng.Exponential(w.rate_per_s);
      q.arrival = t;
    }
    if (replay) {
      q.prompt = WholeTokens(w.trace[i].prompt_tokens);
      q.output = WholeTokens(w.trace[i].output_tokens);
    } else {
      q.prompt = static_cast<int>(Sample(w.prompt, rng));
      q.output = static_cast<int>(Sample(w.output, rng));
    }
    reqs.push_back(q);
  }
  return reqs;
}

// Latency and throughput figures from the finished requests.
// per_replica[s] is scheduler s's, of replica (engine) s mod `engines`.
// `path`: the request path outside the engine (SchedulerOptions::
// request_path_s), added to every TTFT and E2E and to the time in the
// system.
void Collect(const std::vector<std::vector<Req>>& per_replica, int engines,
             Runs itl, const Slo& slo, int chips, double path,
             SimulationResult* out) {
  Runs ttft, tpot, e2e;
  double out_tokens = 0, in_tokens = 0, good = 0;
  for (const auto& reqs : per_replica) {
    for (const Req& q : reqs) {
      const double first = q.first - q.arrival + path;
      ttft.emplace_back(first, 1.0);
      e2e.emplace_back(q.finish - q.arrival + path, 1.0);
      double t = q.output > 1 ? (q.finish - q.first) / (q.output - 1) : 0;
      if (q.output > 1) tpot.emplace_back(t, 1.0);
      out_tokens += q.output;
      in_tokens += q.prompt;
      bool ok = (slo.ttft_s <= 0 || first <= slo.ttft_s) &&
                (slo.tpot_s <= 0 || t <= slo.tpot_s);
      good += ok;
    }
  }
  out->requests = static_cast<int>(e2e.size());
  double start = std::numeric_limits<double>::infinity(), end = 0;
  for (size_t r = 0; r < per_replica.size(); ++r) {
    for (const Req& q : per_replica[r]) {
      start = std::min(start, q.arrival);
      end = std::max(end, q.finish);
      out->request_spans.push_back({q.id, static_cast<int>(r) % engines,
                                    q.arrival, q.first, q.finish, q.prompt,
                                    q.output});
    }
  }
  out->duration_s = out->requests > 0 ? end - start : 0;
  out->ttft_s = Summarize(std::move(ttft));
  out->tpot_s = Summarize(std::move(tpot));
  out->itl_s = Summarize(std::move(itl));
  out->e2e_s = Summarize(std::move(e2e));
  const double d = out->duration_s;
  if (d > 0) {
    out->requests_per_s = out->requests / d;
    out->throughput_output_tokens_per_s = out_tokens / d;
    out->throughput_total_tokens_per_s = (out_tokens + in_tokens) / d;
    out->goodput_requests_per_s = good / d;
    // Each request spends the path outside the engine's steps too.
    out->mean_requests_in_system =
        (out->mean_requests_in_system + out->requests * path) / d;
  }
  out->output_tokens_per_s_per_chip =
      out->throughput_output_tokens_per_s / chips;
  out->requests_per_s_per_chip = out->requests_per_s / chips;
  out->slo_attainment = out->requests > 0 ? good / out->requests : 1;
}

}  // namespace

// "SGLang v0.5.6.post1", "sglang@0.5.6", "sglang".
static bool IsSglang(std::string_view engine) {
  return ToLower(engine).rfind("sglang", 0) == 0;
}

bool EngineMixesPrefill(std::string_view engine) { return !IsSglang(engine); }

bool EngineLimitsPerDpRank(std::string_view engine) {
  return !IsSglang(engine);
}

bool EngineReservesToFinish(std::string_view engine) {
  return EngineFamily(engine) == "trtllm";
}

int EngineDefaultBatchedTokens(std::string_view engine,
                               double device_memory_bytes) {
  if (!IsSglang(engine)) return 0;
  const EngineRelease r = ParseEngineRelease(engine);
  if (r.parts >= 2 && !r.AtLeast(0, 5)) return 0;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  const double gib = device_memory_bytes / kGiB;
  if (!(gib > 0)) return 0;
  // --chunked-prefill-size by memory; --max-prefill-tokens' default, 16384,
  // is never below it.
  return gib < 35 ? 2048 : gib < 60 ? 4096 : gib < 160 ? 8192 : 16384;
}

void ApplyEngineScheduling(std::string_view engine, SchedulerOptions* s) {
  s->mixed_prefill = EngineMixesPrefill(engine);
  s->limits_per_rank = EngineLimitsPerDpRank(engine);
  s->reserve_to_finish = EngineReservesToFinish(engine);
  s->overlap_schedule = EngineOverlapsScheduling(engine);
  s->request_path_s = EngineRequestPath(engine);
}

bool EngineOverlapsScheduling(std::string_view engine) {
  const std::string family = EngineFamily(engine);
  if (family.empty()) return false;
  const EngineRelease r = ParseEngineRelease(engine);
  if (r.parts == -1) return true;  // no release: the current one
  if (family == "sglang") return r.AtLeast(0, 4);
  if (family == "trtllm") return r.AtLeast(1, 0);
  return r.AtLeast(0, 14);  // vllm
}

bool EngineChunksPrefill(std::string_view engine) {
  if (IsSglang(engine)) return true;
  const std::string e = ToLower(engine);
  if (e.rfind("trtllm", 0) == 0 || e.rfind("tensorrt", 0) == 0) return true;
  if (e.rfind("vllm", 0) != 0) return false;
  // "vllm", "vllm@0.10.1", "vLLM v0.6.0": V1 from 0.8.
  const EngineRelease r = ParseEngineRelease(e);
  if (r.parts < 0) return e == "vllm";
  if (r.parts < 1) return true;
  return r.AtLeast(0, 8);
}

Result<LengthDist> ParseLengthDist(const std::string& text, double fixed_value,
                                   const std::string& where) {
  std::vector<std::string> parts = Split(text, ':');
  static const std::vector<std::string> kKinds = {"fixed", "uniform", "normal",
                                                  "lognormal"};
  const std::string& kind = parts[0];
  auto it = std::find(kKinds.begin(), kKinds.end(), kind);
  if (it == kKinds.end()) {
    return InvalidArgument("unknown distribution '" + Excerpt(kind) + "'" +
                               DidYouMean(kind, kKinds) +
                               "; expected fixed, fixed:N, uniform:LO:HI, "
                               "normal:MEAN:SD or lognormal:MEAN:SD",
                           where);
  }
  LengthDist d;
  d.kind = static_cast<LengthDist::Kind>(it - kKinds.begin());
  const size_t want = d.kind == LengthDist::kFixed ? 1 : 2;
  if (d.kind == LengthDist::kFixed && parts.size() == 1) {
    d.a = fixed_value;
    return d;
  }
  if (parts.size() != want + 1) {
    return InvalidArgument("expected " + kind +
                               (want == 1           ? ":N"
                                : kind == "uniform" ? ":LO:HI"
                                                    : ":MEAN:SD") +
                               ", got '" + Excerpt(text) + "'",
                           where);
  }
  double v[2] = {0, 0};
  for (size_t i = 0; i < want; ++i) {
    char* end = nullptr;
    v[i] = std::strtod(parts[i + 1].c_str(), &end);
    if (parts[i + 1].empty() || *end != '\0' || !std::isfinite(v[i])) {
      return InvalidArgument("expected a number, got '" +
                                 Excerpt(parts[i + 1]) + "' in '" +
                                 Excerpt(text) + "'",
                             where);
    }
  }
  // fixed:N and uniform:LO:HI are token counts; a mean and a standard
  // deviation need not be whole.
  const bool counts =
      d.kind == LengthDist::kFixed || d.kind == LengthDist::kUniform;
  for (size_t i = 0; counts && i < want; ++i) {
    if (v[i] != std::floor(v[i])) {
      return InvalidArgument("expected a whole number of tokens, got '" +
                                 Excerpt(parts[i + 1]) + "' in '" +
                                 Excerpt(text) + "'",
                             where);
    }
  }
  for (size_t i = 0; i < want; ++i) {
    if (std::abs(v[i]) > kMaxLength) {
      return InvalidArgument(
          "expected lengths and spreads of at most 2^30 (1073741824) tokens, "
          "got '" +
              Excerpt(parts[i + 1]) + "' in '" + Excerpt(text) + "'",
          where);
    }
  }
  d.a = v[0];
  d.b = v[1];
  if (d.a < 1 || (d.kind == LengthDist::kUniform && d.b < d.a) ||
      (d.kind != LengthDist::kUniform && d.b < 0)) {
    return InvalidArgument(
        "expected lengths of at least 1 token (LO <= HI, SD >= 0), got '" +
            Excerpt(text) + "'",
        where);
  }
  return d;
}

namespace {

// numpy's legacy RandomState.randint(low, high + 1) for int64: masked
// rejection on MT19937's 32-bit outputs (numpy/random/src/distributions/
// distributions.c, random_bounded_uint64_fill with use_masked; a range of
// one value draws nothing). std::mt19937 seeded with s is numpy's
// RandomState(s) (the same init_genrand).
int64_t NumpyRandint(std::mt19937* gen, int64_t low, int64_t high) {
  const uint64_t rng = static_cast<uint64_t>(high - low);
  if (rng == 0) return low;
  uint64_t mask = rng;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  uint64_t v = 0;
  do {
    v = static_cast<uint64_t>((*gen)()) & mask;
  } while (v > rng);
  return low + static_cast<int64_t>(v);
}

}  // namespace

Result<std::vector<TraceRequest>> SglangRandomLengths(
    const BenchRandomDataset& d) {
  if (d.requests < 1 || d.requests > kMaxRequests) {
    return InvalidArgument("expected 1 to 2^20 (1048576) requests, got " +
                               std::to_string(d.requests),
                           "num_prompts");
  }
  if (d.input_len < 1 || d.output_len < 1 || d.input_len > kMaxLength ||
      d.output_len > kMaxLength) {
    return InvalidArgument(
        "expected input and output lengths from 1 to 2^30 tokens, got " +
            std::to_string(d.input_len) + " and " +
            std::to_string(d.output_len),
        "random_input_len");
  }
  if (!(d.range_ratio >= 0 && d.range_ratio <= 1)) {
    return InvalidArgument("expected a range ratio from 0 to 1, got " +
                               FormatNumber(d.range_ratio),
                           "random_range_ratio");
  }
  if (d.output_min != 0 && d.output_min != 1) {
    return InvalidArgument("expected an output minimum of 0 or 1, got " +
                               std::to_string(d.output_min),
                           "output_min");
  }
  std::mt19937 gen(d.seed);
  const auto lo_in = std::max<int64_t>(
      static_cast<int64_t>(std::floor(d.input_len * d.range_ratio)), 1);
  const auto lo_out = std::max<int64_t>(
      static_cast<int64_t>(std::floor(d.output_len * d.range_ratio)),
      d.output_min);
  std::vector<TraceRequest> out(static_cast<size_t>(d.requests));
  for (TraceRequest& r : out) {
    r.prompt_tokens =
        static_cast<double>(NumpyRandint(&gen, lo_in, d.input_len));
  }
  for (TraceRequest& r : out) {
    r.output_tokens = static_cast<double>(
        std::max<int64_t>(1, NumpyRandint(&gen, lo_out, d.output_len)));
  }
  return out;
}

Result<std::vector<TraceRequest>> ParseBenchDataset(const std::string& text,
                                                    int requests,
                                                    const std::string& where) {
  std::vector<std::string> parts = Split(text, ':');
  static const std::vector<std::string> kNames = {"sglang-random"};
  if (std::find(kNames.begin(), kNames.end(), parts[0]) == kNames.end()) {
    return InvalidArgument("unknown dataset '" + Excerpt(parts[0]) + "'" +
                               DidYouMean(parts[0], kNames) +
                               "; expected sglang-random:IN:OUT[:RATIO[:SEED]]",
                           where);
  }
  if (parts.size() < 3 || parts.size() > 5) {
    return InvalidArgument(
        "expected sglang-random:IN:OUT[:RATIO[:SEED]] (sglang.bench_serving's "
        "--random-input-len, --random-output-len, --random-range-ratio and "
        "--seed), got '" +
            Excerpt(text) + "'",
        where);
  }
  double v[4] = {0, 0, 0, 1};
  for (size_t i = 1; i < parts.size(); ++i) {
    char* end = nullptr;
    v[i - 1] = std::strtod(parts[i].c_str(), &end);
    const bool whole = i != 3;
    if (parts[i].empty() || *end != '\0' || !std::isfinite(v[i - 1]) ||
        (whole && (v[i - 1] != std::floor(v[i - 1]) || v[i - 1] < 0 ||
                   v[i - 1] > 4294967295.0))) {
      return InvalidArgument(
          "expected " + std::string(whole ? "a whole number" : "a number") +
              ", got '" + Excerpt(parts[i]) + "' in '" + Excerpt(text) + "'",
          where);
    }
  }
  if (v[0] > kMaxLength || v[1] > kMaxLength) {
    return InvalidArgument(
        "expected lengths of at most 2^30 tokens, got '" + Excerpt(text) + "'",
        where);
  }
  BenchRandomDataset d;
  d.requests = requests;
  d.input_len = static_cast<int>(v[0]);
  d.output_len = static_cast<int>(v[1]);
  d.range_ratio = v[2];
  d.seed = static_cast<uint32_t>(v[3]);
  auto t = SglangRandomLengths(d);
  if (!t) {
    return InvalidArgument(t.error().message + " in '" + Excerpt(text) + "'",
                           where);
  }
  return t;
}

std::vector<TraceRequest> OpenLoopRequests(const Workload& w) {
  std::vector<TraceRequest> out;
  if (w.arrivals == Workload::kConcurrency) return out;
  std::vector<Req> reqs = MakeRequests(w);
  out.resize(reqs.size());
  for (const Req& q : reqs) {
    out[q.id] = {q.arrival, static_cast<double>(q.prompt),
                 static_cast<double>(q.output), static_cast<double>(q.cached)};
  }
  return out;
}

Result<SimulationResult> SimulateServing(const StepCostModel& cost,
                                         int replicas, const Workload& w,
                                         const SchedulerOptions& s,
                                         const Slo& slo) {
  auto ok = CheckInputs(cost, replicas, w, s);
  if (!ok) return tl::unexpected(ok.error());
  SimulationResult out;
  out.replicas = replicas;
  // Pipeline parallelism: each replica runs pp virtual engines (vLLM), each
  // its own scheduler over 1/pp of the KV cache, a step passing every stage.
  // DP attention: each engine runs one scheduler per DP rank over 1/ep of
  // it, in lockstep (docs/model.md 7.5).
  const int stages = cost.pipeline_stages();
  const int engines = replicas * stages;
  const int ranks = cost.dp_ranks();
  const int schedulers = engines * ranks;
  const double block_bytes = cost.KvBytesPerTokenPerChip() * s.block_tokens;
  const double replica_blocks =
      std::floor(cost.KvCapacityBytesPerChip() / block_bytes);
  const double capacity = std::floor(replica_blocks / stages / ranks);
  out.kv_capacity_tokens = replica_blocks * s.block_tokens;
  // Each rank's limits: the engine's own (TensorRT-LLM, vLLM) or the
  // server's shared among its ranks (SGLang).
  SchedulerOptions rank_opt = s;
  if (ranks > 1 && !s.limits_per_rank) {
    rank_opt.max_num_seqs = std::max(1, s.max_num_seqs / ranks);
    rank_opt.max_batched_tokens = std::max(1, s.max_batched_tokens / ranks);
  }
  // Requests dealt round-robin to the engines, then to their ranks
  // (closed loop: to the clients, client c on scheduler c mod schedulers;
  // scheduler k is rank k / engines of engine k mod engines).
  std::vector<Req> all = MakeRequests(w);
  std::vector<std::vector<Req>> per(schedulers);
  const bool closed = w.arrivals == Workload::kConcurrency;
  for (size_t i = 0; i < all.size(); ++i) {
    Req q = all[i];
    // In double: two lengths of up to 2^30 tokens overflow an int.
    const double total = static_cast<double>(q.prompt) + q.output;
    if (BlocksForTokens(total, s.block_tokens) > capacity) {
      out.feasible = false;
      out.reason = DoesNotFit(total, capacity * s.block_tokens, ranks);
      return out;
    }
    q.computed = std::max(
        q.cached,
        std::min(q.prompt - 1,
                 static_cast<int>(std::floor(q.prompt * s.prefix_hit))));
    size_t client = closed ? i % static_cast<size_t>(w.concurrency) : i;
    per[client % schedulers].push_back(q);
  }
  // Token-count part of the step time, cached by count (-1: not yet).
  // Counts beyond the cache (huge scheduler limits) are computed each time.
  constexpr int64_t kMaxCached = int64_t{1} << 22;
  std::vector<double> token_time(
      static_cast<size_t>(std::min(
          static_cast<int64_t>((rank_opt.max_batched_tokens +
                                static_cast<double>(rank_opt.max_num_seqs) *
                                    cost.DecodeQueries()) *
                                   ranks +
                               1),
          kMaxCached)),
      -1.0);
  Runs itl;
  Engine engine(cost, &token_time, s.adp_balance_timeout_iters,
                s.overlap_schedule);
  for (int e = 0; e < engines; ++e) {
    std::vector<Scheduler> group;
    int requests = 0;
    for (int k = 0; k < ranks; ++k) {
      const int at = e + k * engines;
      int clients = 0;
      if (closed) {
        clients =
            w.concurrency / schedulers + (at < w.concurrency % schedulers);
      }
      group.emplace_back(cost, rank_opt, capacity,
                         w.seed ^ (0x9e3779b97f4a7c15ULL * (at + 1)));
      group.back().Start(&per[at], clients);
      requests += static_cast<int>(per[at].size());
    }
    if (requests == 0) continue;
    engine.Run(&group, &itl, &out, e == 0);
    if (!out.feasible) return out;
  }
  out.mean_decode_batch /= std::max(1, out.steps);
  out.kv_mean_fraction /= engines;
  // Thin the series to at most ~200 points.
  if (out.kv_series.size() > 200) {
    std::vector<std::pair<double, double>> thin;
    size_t stride = (out.kv_series.size() + 199) / 200;
    for (size_t i = 0; i < out.kv_series.size(); i += stride) {
      thin.push_back(out.kv_series[i]);
    }
    out.kv_series = std::move(thin);
  }
  Collect(per, engines, std::move(itl), slo,
          cost.chips_per_replica() * replicas, s.request_path_s, &out);
  if (out.preemptions > 0) {
    out.notes.push_back(std::to_string(out.preemptions) +
                        " preemptions (recompute): the KV cache ran full");
  }
  return out;
}

namespace {

// The closed workload's requests as a trace: the first `c` at 0, request
// i >= c at (i - c + 1) / rate.
Workload ClockedArrivals(const std::vector<Req>& reqs, int c, double rate,
                         uint64_t seed) {
  Workload open;
  open.arrivals = Workload::kTrace;
  open.seed = seed;
  open.trace.reserve(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const double k = static_cast<double>(i) - c + 1;
    open.trace.push_back({k > 0 ? k / rate : 0.0,
                          static_cast<double>(reqs[i].prompt),
                          static_cast<double>(reqs[i].output), 0.0});
  }
  return open;
}

}  // namespace

Result<ClosedLoopFit> FitClosedLoop(
    const Workload& closed,
    const std::function<Result<double>(const Workload&)>& mean_in_system) {
  const double requests = RequestsSent(closed);
  if (closed.concurrency < 1 || requests < 1 || requests > kMaxRequests) {
    return InvalidArgument("expected a concurrency of at least 1 and 1 to " +
                               std::to_string(kMaxRequests) +
                               " requests, got " +
                               std::to_string(closed.concurrency) + " and " +
                               FormatNumber(requests),
                           "concurrency");
  }
  Workload lengths = closed;
  lengths.arrivals = Workload::kConcurrency;
  const std::vector<Req> reqs = MakeRequests(lengths);
  const int c = closed.concurrency;
  ClosedLoopFit fit;
  auto at_rate = [&](double rate) -> Result<double> {
    ++fit.runs;
    fit.open = ClockedArrivals(reqs, c, rate, closed.seed);
    fit.rate_per_s = rate;
    auto m = mean_in_system(fit.open);
    if (m) fit.mean_in_system = *m;
    return m;
  };
  // At most C requests: all arrive at once, as in the closed loop.
  if (static_cast<int>(reqs.size()) <= c) {
    auto m = at_rate(1.0);
    if (!m) return tl::unexpected(m.error());
    fit.rate_per_s = 0;
    return fit;
  }
  // Bracket from a rate of C per second, doubling or halving until the
  // mean in the system crosses C; then bisect.
  double lo = 0, hi = 0, rate = c;
  for (int i = 0; i < 120; ++i) {
    auto m = at_rate(rate);
    if (!m) return tl::unexpected(m.error());
    if (std::fabs(*m - c) <= 0.01 * c) return fit;
    (*m < c ? lo : hi) = rate;
    if (lo > 0 && hi > 0 && hi / lo < 1.0001) return fit;
    rate =
        lo > 0 && hi > 0 ? std::sqrt(lo * hi) : (*m < c ? 2 * rate : rate / 2);
  }
  return InvalidArgument(
      "found no arrival rate that keeps " + std::to_string(c) +
          " requests in the system (the last tried, " +
          FormatNumber(fit.rate_per_s) + " requests/s, kept " +
          FormatNumber(fit.mean_in_system) + ")",
      "concurrency");
}

Result<SpreadClosedLoop> SimulateSpreadClosedLoop(const StepCostModel& cost,
                                                  int replicas,
                                                  const Workload& closed,
                                                  const SchedulerOptions& s,
                                                  const Slo& slo) {
  SpreadClosedLoop out;
  auto fit = FitClosedLoop(closed, [&](const Workload& open) -> Result<double> {
    auto r = SimulateServing(cost, replicas, open, s, slo);
    if (!r) return tl::unexpected(r.error());
    out.result = std::move(*r);
    // A request that fits at no rate: stop there.
    if (!out.result.feasible) return static_cast<double>(closed.concurrency);
    return out.result.mean_requests_in_system;
  });
  if (!fit) return tl::unexpected(fit.error());
  out.fit = std::move(*fit);
  return out;
}

}  // namespace scalemodel::estimate
