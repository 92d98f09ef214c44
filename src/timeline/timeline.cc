#include "scalemodel/timeline/timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"

namespace scalemodel::timeline {

int Timeline::AddSlice(Slice s) {
  slices.push_back(std::move(s));
  return static_cast<int>(slices.size()) - 1;
}

void Timeline::AssignLanes() {
  std::vector<int> order(slices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Slice& x = slices[a];
    const Slice& y = slices[b];
    if (x.process != y.process) return x.process < y.process;
    if (x.stream != y.stream) return x.stream < y.stream;
    return x.start_s < y.start_s;
  });
  std::vector<double> lane_end;
  int process = -1, stream = -1;
  length_s = 0;
  for (int i : order) {
    Slice& s = slices[i];
    if (s.process != process || s.stream != stream) {
      lane_end.clear();
      process = s.process;
      stream = s.stream;
    }
    size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > s.start_s) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = s.end_s();
    s.lane = static_cast<int>(lane);
    length_s = std::max(length_s, s.end_s());
  }
}

int Timeline::Lanes(int process, int stream) const {
  int n = 0;
  for (const Slice& s : slices) {
    if (s.process == process && s.stream == stream) n = std::max(n, s.lane + 1);
  }
  return n;
}

namespace {

// The streams of a training process.
enum Stream { kCompute, kFast, kSlow, kSends, kHost, kNumStreams };

std::string Num(double v) { return fmt::format("{:.6g}", v); }

// Which stream a collective on these physical axes runs on.
int StreamOf(const std::vector<std::string>& axes, const hw::System& sys) {
  for (const std::string& a : axes) {
    const hw::PhysicalAxis* p = sys.FindAxis(a);
    if (p &&
        (p->kind == hw::AxisKind::kDcn || p->kind == hw::AxisKind::kScaleOut)) {
      return kSlow;
    }
  }
  return kFast;
}

std::string AxesText(const std::vector<std::string>& axes) {
  std::string s;
  for (const std::string& a : axes) s += (s.empty() ? "" : ".") + a;
  return s;
}

// A collective as the timeline places it.
struct Coll {
  const estimate::CommItem* item;
  int stream;
  double hidden_mb = 0, exposed_mb = 0;  // per microbatch (in-chunk ones)
};

// What the step's schedule simulation needs.
struct StepPlan {
  int pp = 1, v = 1, m = 1;
  estimate::Schedule schedule = estimate::Schedule::k1F1B;
  std::vector<double> stage;  // compute per microbatch on each stage
  double fwd = 1.0 / 3;       // forward's share of a microbatch's compute
  double send = 0;            // one pipeline send
  int send_stream = kFast;
  double flops_mb = 0;      // hardware FLOPs per chip per microbatch
  double mem_share = 0;     // memory-bound share of the compute
  double hbm = 0;           // bytes/s
  std::vector<Coll> chunk;  // collectives inside each chunk
};

struct Op {
  bool fwd;
  int mb, chunk;
};

// The order in which stage r runs its chunks (Megatron-LM's schedules:
// GPipe all forwards then all backwards; 1F1B and interleaved warm up,
// alternate one forward and one backward, then drain). Microbatches go in
// groups of pp through the virtual stages (interleaved).
std::vector<Op> StageOrder(const StepPlan& p, int r, bool all_first) {
  std::vector<Op> f, b;
  for (int g = 0; g < p.m; g += p.pp) {
    const int size = std::min(p.pp, p.m - g);
    for (int c = 0; c < p.v; ++c) {
      for (int j = 0; j < size; ++j) f.push_back({true, g + j, c});
    }
    for (int c = p.v - 1; c >= 0; --c) {
      for (int j = 0; j < size; ++j) b.push_back({false, g + j, c});
    }
  }
  const int total = p.m * p.v;
  int warmup = total;
  if (!all_first && p.schedule != estimate::Schedule::kGpipe) {
    warmup = p.v == 1 ? std::min(p.m, p.pp - r - 1)
                      : std::min(total, (p.pp - r - 1) * 2 + (p.v - 1) * p.pp);
  }
  std::vector<Op> out;
  size_t fi = 0, bi = 0;
  for (; fi < static_cast<size_t>(warmup); ++fi) out.push_back(f[fi]);
  while (fi < f.size()) {
    out.push_back(f[fi++]);
    out.push_back(b[bi++]);
  }
  while (bi < b.size()) out.push_back(b[bi++]);
  return out;
}

// When every chunk of the step ran: start and end per (stage, op), and the
// cross-stage edge each op waited on.
struct Simulated {
  struct Run {
    Op op;
    double start = 0, end = 0;
    int from_stage = -1;  // the stage whose send it waited for (-1: none)
    double sent_at = 0;   // when that send began
  };
  std::vector<std::vector<Run>> stages;
  bool ok = true;
};

double ChunkTime(const StepPlan& p, int r, bool fwd, double* compute) {
  const double w = (fwd ? p.fwd : 1 - p.fwd) / p.v;
  *compute = p.stage[r] * w;
  double exposed = 0;
  for (const Coll& c : p.chunk) exposed += c.exposed_mb * w;
  return *compute + exposed;
}

Simulated Simulate(const StepPlan& p, double t0, bool all_first) {
  Simulated s;
  const int n = p.m * p.v;
  std::vector<std::vector<Op>> order(p.pp);
  for (int r = 0; r < p.pp; ++r) order[r] = StageOrder(p, r, all_first);
  // Done times by (stage, fwd/bwd, microbatch x v + chunk); < 0: not yet.
  std::vector<double> done(static_cast<size_t>(p.pp) * 2 * n, -1);
  auto at = [&](int r, bool fwd, int mb, int c) -> double& {
    return done[(static_cast<size_t>(r) * 2 + (fwd ? 0 : 1)) * n +
                static_cast<size_t>(mb) * p.v + c];
  };
  std::vector<size_t> next(p.pp, 0);
  std::vector<double> free(p.pp, t0);
  s.stages.assign(p.pp, {});
  bool progress = true;
  size_t left = static_cast<size_t>(p.pp) * 2 * n;
  while (left > 0 && progress) {
    progress = false;
    for (int r = 0; r < p.pp; ++r) {
      while (next[r] < order[r].size()) {
        const Op op = order[r][next[r]];
        int dr = -1, dc = op.chunk;
        bool dfwd = op.fwd;
        if (op.fwd) {
          if (r > 0) {
            dr = r - 1;
          } else if (op.chunk > 0) {
            dr = p.pp - 1;
            dc = op.chunk - 1;
          }
        } else if (r < p.pp - 1) {
          dr = r + 1;
        } else if (op.chunk < p.v - 1) {
          dr = 0;
          dc = op.chunk + 1;
        } else {
          dr = r;  // the last virtual stage's own forward
          dfwd = true;
        }
        double ready = t0;
        if (dr >= 0) {
          const double d = at(dr, dfwd, op.mb, dc);
          if (d < 0) break;
          ready = d + (dr != r ? p.send : 0);
        }
        Simulated::Run run{op};
        run.start = std::max(free[r], ready);
        double compute = 0;
        run.end = run.start + ChunkTime(p, r, op.fwd, &compute);
        if (dr >= 0 && dr != r) {
          run.from_stage = dr;
          run.sent_at = at(dr, dfwd, op.mb, dc);
        }
        free[r] = run.end;
        at(r, op.fwd, op.mb, op.chunk) = run.end;
        s.stages[r].push_back(run);
        ++next[r];
        --left;
        progress = true;
      }
    }
  }
  s.ok = left == 0;
  return s;
}

// One chunk's slices: compute, the collectives hidden under it, the
// exposed ones after it. Returns the compute slice's index.
int EmitChunk(Timeline* t, const StepPlan& p, int r,
              const Simulated::Run& run) {
  const bool fwd = run.op.fwd;
  const double w = (fwd ? p.fwd : 1 - p.fwd) / p.v;
  double compute = 0;
  ChunkTime(p, r, fwd, &compute);
  Slice s;
  s.process = r;
  s.stream = kCompute;
  s.name = fmt::format("{} mb{}{}", fwd ? "F" : "B", run.op.mb,
                       p.v > 1 ? fmt::format(" v{}", run.op.chunk) : "");
  s.category = fwd ? "forward" : "backward";
  s.start_s = run.start;
  s.dur_s = compute;
  s.flops = p.flops_mb * w;
  s.bytes = compute * p.mem_share * p.hbm;
  s.bound = p.mem_share > 0.5 ? "memory" : "compute";
  s.args = {{"microbatch", std::to_string(run.op.mb)},
            {"virtual_stage", std::to_string(run.op.chunk * p.pp + r)}};
  const int idx = t->AddSlice(s);
  double hidden_at[kNumStreams];
  std::fill(hidden_at, hidden_at + kNumStreams, run.start);
  double hidden_total[kNumStreams] = {};
  for (const Coll& c : p.chunk) hidden_total[c.stream] += c.hidden_mb * w;
  double cursor = run.start + compute;
  for (const Coll& c : p.chunk) {
    const estimate::CommItem& it = *c.item;
    const double calls = it.calls / static_cast<double>(p.m) * w;
    // Hidden parts share the compute's span; squeezed into it when they
    // add up to more (the args keep their modelled time).
    const double squeeze = hidden_total[c.stream] > compute
                               ? compute / hidden_total[c.stream]
                               : 1.0;
    auto put = [&](double start, double dur, double modelled, bool exposed) {
      Slice k;
      k.process = r;
      k.stream = c.stream;
      k.name = it.parallelism + " " + it.kind + (exposed ? " (exposed)" : "");
      k.category = "collective";
      k.start_s = start;
      k.dur_s = dur;
      k.bytes = it.bytes.si() * calls;
      k.bound = "network";
      k.args = {{"calls", Num(calls)},
                {"bytes_per_call", Num(it.bytes.si())},
                {"axes", AxesText(it.axes)},
                {"modelled_time_s", Num(modelled)},
                {"exposed", exposed ? "true" : "false"}};
      t->AddSlice(std::move(k));
    };
    const double h = c.hidden_mb * w, x = c.exposed_mb * w;
    if (h > 0) {
      put(hidden_at[c.stream], h * squeeze, h, false);
      hidden_at[c.stream] += h * squeeze;
    }
    if (x > 0) {
      put(cursor, x, x, true);
      cursor += x;
    }
  }
  return idx;
}

// A step-level collective (before or after the pipeline) on every stage.
void EmitStepColl(Timeline* t, int pp, const Coll& c, double start, double dur,
                  bool exposed) {
  if (dur <= 0) return;
  for (int r = 0; r < pp; ++r) {
    Slice k;
    k.process = r;
    k.stream = c.stream;
    k.name = c.item->parallelism + " " + c.item->kind +
             (exposed ? " (exposed)" : "");
    k.category = "collective";
    k.start_s = start;
    k.dur_s = dur;
    k.bytes = c.item->bytes.si() * c.item->calls;
    k.bound = "network";
    k.args = {{"calls", std::to_string(c.item->calls)},
              {"axes", AxesText(c.item->axes)},
              {"modelled_time_s", Num(c.item->time.si())},
              {"exposed_time_s", Num(c.item->exposed.si())}};
    t->AddSlice(std::move(k));
  }
}

StepPlan PlanStep(const estimate::TrainingEstimate& e,
                  const estimate::TrainingConfig& cfg, const hw::System& sys) {
  StepPlan p;
  p.pp = std::max(1, cfg.par.pp);
  p.schedule = cfg.layout.schedule;
  p.v = cfg.layout.schedule == estimate::Schedule::kInterleaved
            ? std::max(1, cfg.layout.vpp)
            : 1;
  p.m = std::max(1, e.microbatches);
  const double s_max = e.compute.si() / p.m;
  p.stage.assign(p.pp, s_max);
  const auto& L = e.per_layer;
  const bool realistic = cfg.mode == estimate::Mode::kRealistic;
  if (realistic && L.total.si() > 0) {
    const double passes = cfg.lora_rank > 0 ? 2 : 3;
    const double fwd = L.matmul.si() / passes + L.attention.si() / 3.5 +
                       L.elementwise.si() / 3;
    p.fwd = fwd / L.total.si();
    p.mem_share = L.elementwise.si() / L.total.si();
    if (p.pp > 1) {
      const double typ = L.layers_per_stage * L.total.si();
      const double last = (L.last_stage_layers + L.mtp_modules) * L.total.si() +
                          L.output_and_loss.si();
      const double mx = std::max(typ, last);
      for (int r = 0; mx > 0 && r < p.pp; ++r) {
        p.stage[r] = (r == p.pp - 1 ? last : typ) * s_max / mx;
      }
    }
  }
  p.hbm = sys.chip.hbm_bandwidth.si();
  p.flops_mb = e.hardware_flops_per_step / std::max(1, sys.num_chips()) / p.m;
  return p;
}

}  // namespace

namespace {

// The step's collectives sorted by where they run: inside the chunks
// (into p->chunk), the pipeline send (p->send), the gathers before the
// pipeline, the reductions after it.
struct StepColls {
  std::vector<Coll> gathers, reductions, fsdp;
  double exposed = 0;  // all collectives' exposed time
};

StepColls SortColls(const estimate::TrainingEstimate& e, const hw::System& sys,
                    StepPlan* p) {
  StepColls out;
  for (const estimate::CommItem& c : e.comms) {
    out.exposed += c.exposed.si();
    Coll k{&c, StreamOf(c.axes, sys)};
    const std::string& par = c.parallelism;
    if (par == "pp") {
      p->send = c.calls > 0 ? c.time.si() / c.calls : 0;
      p->send_stream = k.stream;
    } else if (par == "dp" || par == "dp+ep") {
      (c.kind == "all-gather" ? out.gathers : out.reductions).push_back(k);
    } else {
      k.hidden_mb = (c.time.si() - c.exposed.si()) / p->m;
      k.exposed_mb = par == "fsdp" ? 0.0 : c.exposed.si() / p->m;
      p->chunk.push_back(k);
      if (par == "fsdp") out.fsdp.push_back(k);
    }
  }
  return out;
}

// The exposed parameter gathers before the pipeline (ZeRO's all-gather of
// the updated shards, FSDP's first layer), the ZeRO gather's hidden part
// beside the first chunks; returns when the pipeline starts.
double EmitHead(Timeline* t, const StepPlan& p, const StepColls& k) {
  double t0 = 0;
  for (const std::vector<Coll>* v : {&k.gathers, &k.fsdp}) {
    for (const Coll& c : *v) {
      EmitStepColl(t, p.pp, c, t0, c.item->exposed.si(), true);
      t0 += c.item->exposed.si();
    }
  }
  for (const Coll& c : k.gathers) {
    EmitStepColl(t, p.pp, c, t0, c.item->time.si() - c.item->exposed.si(),
                 false);
  }
  return t0;
}

// The chunks of every stage and the pipeline sends with an arrow to what
// they feed; returns when the last chunk ends.
double EmitPipeline(Timeline* t, const StepPlan& p, const Simulated& sim,
                    double t0) {
  double end = t0;
  for (int r = 0; r < p.pp; ++r) {
    for (const Simulated::Run& run : sim.stages[r]) {
      const int to = EmitChunk(t, p, r, run);
      end = std::max(end, run.end);
      if (run.from_stage < 0 || p.send <= 0) continue;
      Slice s;
      s.process = run.from_stage;
      s.stream = kSends;
      s.name =
          fmt::format("send {} mb{} to stage {}",
                      run.op.fwd ? "activations" : "gradients", run.op.mb, r);
      s.category = "send";
      s.start_s = run.sent_at;
      s.dur_s = p.send;
      s.bound = "network";
      t->flows.push_back({t->AddSlice(std::move(s)), to});
    }
  }
  return end;
}

// After the pipeline: the gradient reductions (their hidden part under the
// last backward), host offload, the optimizer update.
void EmitTail(Timeline* t, const StepPlan& p, const StepColls& k,
              const estimate::TrainingEstimate& e,
              const estimate::TrainingConfig& cfg, double t0, double end) {
  for (const Coll& c : k.reductions) {
    const double hidden = c.item->time.si() - c.item->exposed.si();
    EmitStepColl(t, p.pp, c, std::max(t0, end - hidden),
                 std::min(hidden, end - t0), false);
  }
  for (const Coll& c : k.reductions) {
    EmitStepColl(t, p.pp, c, end, c.item->exposed.si(), true);
    end += c.item->exposed.si();
  }
  const bool host = cfg.memory.offload_optimizer || cfg.memory.offload_params;
  const double offload = std::max(0.0, e.exposed_comm.si() - k.exposed);
  for (int r = 0; r < p.pp; ++r) {
    if (offload > 1e-12) {
      Slice s{r, kHost, 0, "host offload (exposed)", "offload", end, offload};
      s.bound = "host";
      t->AddSlice(std::move(s));
    }
    if (e.other.si() > 0) {
      Slice s{
          r,           host ? kHost : kCompute,
          0,           host ? "optimizer update (host)" : "optimizer update",
          "optimizer", end + offload,
          e.other.si()};
      s.bound = "memory";
      t->AddSlice(std::move(s));
    }
  }
}

}  // namespace

Timeline TrainingTimeline(const estimate::TrainingEstimate& e,
                          const estimate::TrainingConfig& cfg,
                          const hw::System& sys) {
  Timeline t;
  StepPlan p = PlanStep(e, cfg, sys);
  const bool tpu = sys.chip.is_tpu();
  for (int r = 0; r < p.pp; ++r) {
    t.processes.push_back(
        {p.pp > 1 ? fmt::format("stage {} (one chip of it)", r)
                  : std::string("chip 0 (every chip runs the same)"),
         {"compute", tpu ? "ICI collectives" : "NVLink collectives",
          tpu ? "DCN collectives" : "scale-out collectives", "pipeline sends",
          "host offload"}});
  }
  const StepColls colls = SortColls(e, sys, &p);
  const double t0 = EmitHead(&t, p, colls);
  bool fallback = false;
  Simulated sim = Simulate(p, t0, false);
  if (!sim.ok) {
    sim = Simulate(p, t0, true);  // all forwards first: always runs
    fallback = true;
  }
  const double end = EmitPipeline(&t, p, sim, t0);
  EmitTail(&t, p, colls, e, cfg, t0, end);
  t.AssignLanes();
  t.reference_s = e.step_time.si();
  if (cfg.assume_mfu > 0 && t.length_s > 0) {
    const double k = t.reference_s / t.length_s;
    for (Slice& s : t.slices) {
      s.start_s *= k;
      s.dur_s *= k;
    }
    t.length_s = t.reference_s;
    t.metadata.emplace_back("scaled_to_assume_mfu", Num(k));
  }
  t.title = fmt::format("training step, plan {}", cfg.par.ToString());
  t.metadata.emplace_back("schedule", std::string(ScheduleName(p.schedule)));
  t.metadata.emplace_back("microbatches", std::to_string(p.m));
  t.metadata.emplace_back("pp", std::to_string(p.pp));
  t.metadata.emplace_back("vpp", std::to_string(p.v));
  if (fallback) {
    t.metadata.emplace_back(
        "order", "all forwards first (the warm-up order would deadlock)");
  }
  return t;
}

namespace {

// One engine step's parts in sequence: matmuls and attention on the
// compute stream, the exposed collectives on the collective stream, the
// fixed overhead.
double EmitStep(Timeline* t, const estimate::StepParts& parts, double at,
                const std::string& what, double flops, double bytes) {
  const double total = parts.total().si();
  const double compute = parts.matmul.si() + parts.attention.si();
  auto put = [&](int stream, const std::string& name, double dur,
                 const std::string& bound, double f, double b) {
    if (dur <= 0) return;
    Slice s{0, stream, 0, name, what, at, dur, f, b, bound, {}};
    s.args = {{"step_time_s", Num(total)}};
    t->AddSlice(std::move(s));
    at += dur;
  };
  const double share = compute > 0 ? parts.matmul.si() / compute : 0;
  put(0, what + " matmuls", parts.matmul.si(),
      flops * share > 0 && bytes > 0 && flops / bytes > 100 ? "compute"
                                                            : "memory",
      flops * share, bytes * share);
  put(0, what + " attention", parts.attention.si(), "memory",
      flops * (1 - share), bytes * (1 - share));
  put(0, what + " elementwise", parts.elementwise.si(), "memory", 0, 0);
  put(1, what + " collectives (exposed)", parts.communication.si(), "network",
      0, 0);
  put(0, what + " step overhead", parts.overhead.si(), "host", 0, 0);
  // Speculative decoding's drafting (a draft model's or head's passes).
  put(0, what + " draft", parts.draft.si(), "memory", 0, 0);
  return at;
}

}  // namespace

Timeline ServingTimeline(const estimate::ServeEstimate& e,
                         const estimate::ServeConfig& cfg,
                         const model::ModelSpec& m, const hw::System& sys) {
  Timeline t;
  const int chips = std::max(1, cfg.tp * cfg.ep);
  t.processes.push_back(
      {fmt::format("replica 0 (tp={}, ep={}): one chip", cfg.tp, cfg.ep),
       {"compute",
        sys.chip.is_tpu() ? "ICI collectives" : "NVLink collectives"}});
  const double prefill_flops = cfg.batch * cfg.prompt *
                               model::ForwardFlopsPerToken(m, cfg.prompt) /
                               chips;
  double at = EmitStep(&t, e.prefill_parts, 0, "prefill", prefill_flops,
                       e.weights_bytes.si());
  const int steps = std::max(1, static_cast<int>(std::lround(cfg.output)));
  const double ctx = cfg.prompt + cfg.output / 2;
  const double decode_flops =
      cfg.batch * model::ForwardFlopsPerToken(m, ctx) / chips;
  const double decode_bytes = e.weights_bytes.si() + e.kv_cache_bytes.si();
  for (int i = 0; i < steps; ++i) {
    at = EmitStep(&t, e.decode_parts, at, "decode", decode_flops, decode_bytes);
  }
  t.AssignLanes();
  t.reference_s = e.request_latency.si();
  t.title = fmt::format("serving: prefill of {} x {} tokens, {} decode steps",
                        cfg.batch, cfg.prompt, steps);
  t.metadata.emplace_back("decode_step_s", Num(e.decode_step.si()));
  t.metadata.emplace_back("prefill_s", Num(e.prefill_time.si()));
  return t;
}

Timeline SimulationTimeline(const estimate::SimulationResult& sim) {
  Timeline t;
  for (int r = 0; r < std::max(1, sim.replicas); ++r) {
    t.processes.push_back({fmt::format("replica {}", r), {"requests"}});
  }
  double origin = 0;
  bool first = true;
  for (const estimate::RequestSpan& q : sim.request_spans) {
    if (first || q.arrival_s < origin) origin = q.arrival_s;
    first = false;
  }
  int i = 0;
  for (const estimate::RequestSpan& q : sim.request_spans) {
    const std::vector<std::pair<std::string, std::string>> args = {
        {"prompt_tokens", std::to_string(q.prompt)},
        {"output_tokens", std::to_string(q.output)},
        {"ttft_s", Num(q.first_token_s - q.arrival_s)},
        {"e2e_s", Num(q.finish_s - q.arrival_s)}};
    t.AddSlice({q.replica, 0, 0, fmt::format("request {}: wait + prefill", i),
                "prefill", q.arrival_s - origin, q.first_token_s - q.arrival_s,
                0, 0, "", args});
    t.AddSlice({q.replica, 0, 0, fmt::format("request {}: decode", i), "decode",
                q.first_token_s - origin, q.finish_s - q.first_token_s, 0, 0,
                "", args});
    ++i;
  }
  t.AssignLanes();
  t.reference_s = sim.duration_s;
  t.title = fmt::format("continuous batching: {} requests", sim.requests);
  return t;
}

}  // namespace scalemodel::timeline
