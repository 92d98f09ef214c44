// Continuous-batching simulator (docs/model.md 7.3): requests arrive
// (Poisson at a rate, a fixed number of closed-loop clients, or a trace),
// a vLLM/SGLang-style scheduler forms one engine step at a time under
// max_num_seqs, max_num_batched_tokens and the paged KV cache (chunked
// prefill optional, preemption by recompute, prefix-cache hits), and each
// step lasts what StepCostModel says. Output: TTFT, TPOT, inter-token and
// end-to-end latency percentiles, throughput, goodput under SLOs and the
// KV cache's use over time. Deterministic for a given seed.
//
// Example:
//   auto sc = estimate::StepCostModel::Create(llama70b, h100x8, cfg);
//   estimate::Workload w;
//   w.rate_per_s = 4;
//   w.requests = 1000;
//   w.prompt = {estimate::LengthDist::kFixed, 2048};
//   w.output = {estimate::LengthDist::kFixed, 512};
//   auto r = estimate::SimulateServing(*sc, 1, w, {}, {});
#ifndef SCALEMODEL_ESTIMATE_BATCHING_H_
#define SCALEMODEL_ESTIMATE_BATCHING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/inference.h"

namespace scalemodel::estimate {

// A distribution of token counts. Samples are rounded to whole tokens and
// kept at least 1.
struct LengthDist {
  enum Kind { kFixed, kUniform, kNormal, kLogNormal };
  Kind kind = kFixed;
  double a = 1;  // fixed: the value; uniform: low; normal, lognormal: mean
  double b = 0;  // uniform: high; normal, lognormal: standard deviation
};

// Parses "fixed" (the value `fixed_value`), "fixed:N", "uniform:LO:HI",
// "normal:MEAN:SD" or "lognormal:MEAN:SD" (mean and standard deviation of
// the lengths themselves, not of their logarithm). Errors name `where`: an
// unknown kind (with "did you mean"), a missing or non-numeric field,
// LO > HI, a mean below 1 or a negative SD, a fractional fixed:N, LO or HI,
// a field above 2^30 tokens. Sampled lengths are whole, from 1 to 2^30.
Result<LengthDist> ParseLengthDist(const std::string& text, double fixed_value,
                                   const std::string& where);

// One request of a trace: when it arrives (seconds from the start), its
// prompt and output lengths in tokens.
struct TraceRequest {
  double arrival_s = 0;
  double prompt_tokens = 1;
  double output_tokens = 1;
  // Prompt tokens whose KV arrives with the request (a disaggregated decode
  // pool's handed-off prompt, estimate/disaggregated.h): never computed;
  // at most prompt - 1 count.
  double cached_tokens = 0;
};

struct Workload {
  enum Arrivals { kPoisson, kConcurrency, kTrace };
  Arrivals arrivals = kPoisson;
  double rate_per_s = 1;  // kPoisson: requests/s over all replicas
  int concurrency = 1;    // kConcurrency: clients, each sending its next
                          // request when the last one finishes
  int requests = 1000;    // kPoisson, kConcurrency: how many to simulate
  LengthDist prompt, output;
  // kTrace: the requests, any order. kConcurrency, kPoisson: when not
  // empty, the requests' lengths in sending order (arrival times ignored;
  // `requests` and the length distributions unused), as a benchmark
  // replays a dataset.
  std::vector<TraceRequest> trace;
  uint64_t seed = 0;
};

// The engine scheduler's limits (vLLM: --max-num-seqs,
// --max-num-batched-tokens, --enable-chunked-prefill, --block-size).
struct SchedulerOptions {
  int max_num_seqs = 256;         // vLLM's default
  int max_batched_tokens = 8192;  // tokens per step
  // Off: a step is either prefills of whole prompts (first in the queue
  // first; one prompt longer than the budget runs alone) or one decode
  // token per running sequence, prefills first (vLLM V0). On: prompts are
  // computed in chunks of at most the step's token budget, as
  // mixed_prefill says.
  bool chunked_prefill = false;
  // With chunked prefill. True: each step gives every running sequence its
  // token first and fills the rest of the budget with prompt chunks (vLLM
  // V1; SGLang with --enable-mixed-chunk). False (SGLang's default): a step
  // with prompt work runs only that (the next chunk of a prompt already
  // started, then new prompts), and decode steps run when no prompt waits
  // (SGLang's scheduler: prefill first, mixed chunks off).
  bool mixed_prefill = true;
  // Fraction of every prompt found in the prefix cache: those tokens are
  // not computed (they still hold KV blocks: sharing is not modelled).
  double prefix_hit = 0;
  int block_tokens = 16;  // paged-KV block (vLLM's default)
  // vLLM V0's --num-scheduler-steps: a decode-only step starts a run of
  // this many decode steps of the same batch; requests that arrive during
  // the run wait for its end to be admitted. 1: every step is scheduled.
  int scheduler_steps = 1;
  // DP attention (StepCostModel::dp_ranks() > 1): each rank has its own
  // scheduler, queue and 1/ep of the KV cache, requests dealt to ranks
  // round-robin, all ranks stepping together. True: max_num_seqs and
  // max_batched_tokens are each rank's (TensorRT-LLM's max_batch_size and
  // max_num_tokens per rank; vLLM's flags per DP engine). False: the
  // server's, divided among its ranks (SGLang divides --chunked-prefill-size
  // and --max-running-requests by dp_size under --enable-dp-attention).
  bool limits_per_rank = true;
  // TensorRT-LLM's capacity scheduler, GUARANTEED_NO_EVICT (its default):
  // a waiting request starts only where the KV cache holds it and every
  // running request to their last tokens, so nothing is ever preempted
  // (here each request's actual output stands for its max_tokens). False:
  // vLLM's, which starts what its next chunk needs and preempts (recompute)
  // when decode outgrows the cache.
  bool reserve_to_finish = false;
  // SGLang's --scheduler-recv-interval N: the scheduler takes the requests
  // sent to it only when a counter reaches N, the counter growing by 1 per
  // decode step and by 1000 per step with prompt work, so the first loop
  // after a prefill step receives (python/sglang/srt/managers/
  // scheduler_recv_skipper.py; SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DECODE
  // 1, _DEFAULT 1000 in environ.py). In steady decode a new request so
  // waits up to N decode steps before it is seen. 1 (SGLang's default):
  // every step. An idle scheduler receives at once.
  int recv_interval = 1;
  // TensorRT-LLM's attention-DP balance (attention_dp_config: enable_balance
  // true, timeout_iters N, batching_wait_iters 0), with DP ranks: new
  // requests start only in an iteration where every rank has one waiting
  // and a free slot, or when a counter of iterations without that reaches
  // N, or when some rank has nothing decoding (PyExecutor
  // _balance_adp_requests). 0: off (its default).
  int adp_balance_timeout_iters = 0;
  // The overlap scheduler (SGLang's default from 0.4, TensorRT-LLM's
  // PyTorch backend's, vLLM's async scheduling, its default from 0.14): the
  // host forms step k+1 while step k runs, so a request that reaches the
  // scheduler during step k is first seen when step k+2 is formed and
  // starts a step later than without it (vllm-project/vllm PR #19970: "new
  // requests wait one more scheduling step"). An idle scheduler still takes
  // a request at once. False: the scheduler forms each step after the last
  // one ends.
  bool overlap_schedule = false;
  // The request path (EngineRequestPath, docs/model.md 7.3): the time a
  // request spends outside the engine's steps, from the client's send to
  // its first token and its last (the HTTP front end, tokenizing, the hop
  // to the scheduler, the detokenizer, the streamed chunk's way back). It
  // adds to every TTFT and E2E (and to the time in the system); the
  // engine's steps do not see it. 0: the engine's own times (an offline
  // benchmark).
  double request_path_s = 0;
};

// Whether the engine a row or a user names ("SGLang v0.5.6.post1",
// "sglang@0.5.6", "vLLM v0.19.1", "trtllm") mixes prompt chunks into decode
// steps by default (SchedulerOptions::mixed_prefill): false for SGLang
// (--enable-mixed-chunk is off by default: python/sglang/srt/server_args.py),
// true otherwise (vLLM V1's scheduler and TensorRT-LLM's in-flight batching
// mix; unknown names keep the default).
bool EngineMixesPrefill(std::string_view engine);

// Whether the engine computes prompts in chunks by default
// (SchedulerOptions::chunked_prefill): SGLang (its --chunked-prefill-size
// has a default) and vLLM V1 (the default engine from v0.8.0, always
// chunked), so "vllm" without a version too; TensorRT-LLM, whose in-flight
// batching puts context requests into the generation iterations within
// max_num_tokens (the chunked, mixed scheduler is the closest: it splits a
// prompt where TensorRT-LLM without enable_chunked_prefill would make it
// wait for room; the validation rows run it so too); false for vLLM
// before 0.8 (prefill-only steps) and unknown names.
bool EngineChunksPrefill(std::string_view engine);

// Whether the engine's scheduler limits are per DP rank under DP attention
// (SchedulerOptions::limits_per_rank): false for SGLang (server_args.py
// divides chunked_prefill_size by dp_size; its pool configurator divides
// max_running_requests), true otherwise.
bool EngineLimitsPerDpRank(std::string_view engine);

// Whether the engine admits a request only where it can finish without
// preempting (SchedulerOptions::reserve_to_finish): TensorRT-LLM, whose
// default capacity_scheduler_policy is GUARANTEED_NO_EVICT (llmapi
// SchedulerConfig; performance tuning guide, "Capacity Scheduler
// Policy"); false for vLLM and SGLang (SGLang reserves in its own
// prefill-first path) and unknown names.
bool EngineReservesToFinish(std::string_view engine);

// The engine's own tokens per step when its launch sets none (0: keep
// SchedulerOptions' 8192, vLLM's and TensorRT-LLM's default): SGLang from
// 0.5 (and "sglang" without a release) computes at most
// --chunked-prefill-size prompt tokens per step (--max-prefill-tokens'
// default, 16384, never lower), its chunk size set by the device's memory
// as its driver reports it
// (python/sglang/srt/server_args.py, _handle_gpu_memory_settings: below
// 35 GiB 2048, below 60 GiB 4096, below 160 GiB 8192 (H100, H200), else
// 16384 (B200, MI300X)).
int EngineDefaultBatchedTokens(std::string_view engine,
                               double device_memory_bytes);

// Whether the engine forms the next step while the current one runs by
// default (SchedulerOptions::overlap_schedule): SGLang from 0.4 (the
// zero-overhead batch scheduler, LMSYS "SGLang v0.4" blog, 2024-12-04;
// --disable-overlap-schedule turns it off), TensorRT-LLM from 1.0 (the
// PyTorch backend, its default from 1.0: llmapi TorchLlmArgs
// disable_overlap_scheduler = False), vLLM from 0.14 (async scheduling on
// unless incompatible: vllm-project/vllm PR #27614, 2025-12-29); a name
// without a release counts as the current one; false for older releases
// and unknown names.
bool EngineOverlapsScheduling(std::string_view engine);

// Sets the scheduling the engine runs by default: mixed_prefill,
// limits_per_rank, reserve_to_finish, overlap_schedule and request_path_s
// (EngineMixesPrefill, EngineLimitsPerDpRank, EngineReservesToFinish,
// EngineOverlapsScheduling, EngineRequestPath).
void ApplyEngineScheduling(std::string_view engine, SchedulerOptions* s);

// Service-level objectives for goodput; 0 = none.
struct Slo {
  double ttft_s = 0;
  double tpot_s = 0;
};

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

// One simulated request's times (seconds from the first arrival's clock).
struct RequestSpan {
  int id = 0;  // the request's index in the workload (trace order as given)
  int replica = 0;
  double arrival_s = 0, first_token_s = 0, finish_s = 0;
  int prompt = 0, output = 0;
};

struct SimulationResult {
  bool feasible = true;
  std::string reason;  // why not: a request larger than the KV cache
  int requests = 0;    // completed (all of them, when feasible)
  int replicas = 1;
  Percentiles ttft_s;     // arrival -> first token
  Percentiles tpot_s;     // (last token - first) / (output - 1), per request
  Percentiles itl_s;      // every gap between a request's tokens
  Percentiles e2e_s;      // arrival -> last token
  double duration_s = 0;  // first arrival -> last completion
  double requests_per_s = 0;
  double throughput_output_tokens_per_s = 0;
  double throughput_total_tokens_per_s = 0;  // prompt + output
  double output_tokens_per_s_per_chip = 0;
  double requests_per_s_per_chip = 0;
  double goodput_requests_per_s = 0;  // requests meeting every SLO given
  double slo_attainment = 1;          // their fraction
  // Time-average of requests in the system (arrived, not finished),
  // integrated step by step: Little's law L = requests_per_s x mean E2E.
  double mean_requests_in_system = 0;
  double kv_capacity_tokens = 0;  // per replica
  double kv_peak_fraction = 0, kv_mean_fraction = 0;
  // KV-cache use (fraction of blocks) over time, replica 0, at most ~200
  // points (time s, fraction).
  std::vector<std::pair<double, double>> kv_series;
  int preemptions = 0;
  int steps = 0;
  double mean_decode_batch = 0;  // decoding sequences per step
  double max_step_tokens = 0;    // largest tokens in one step
  // Every finished request, replica by replica (timeline::SimulationTimeline
  // draws them).
  std::vector<RequestSpan> request_spans;
  std::vector<std::string> notes;
};

// The request lengths `python -m sglang.bench_serving --dataset-name random`
// sends (its defaults: --random-range-ratio 0, --seed 1), in sending
// order: numpy's legacy RandomState(seed).randint draws (MT19937, masked
// rejection), `requests` prompts uniform in
// [max(floor(input_len * range_ratio), 1), input_len], then as many
// outputs uniform in [max(floor(output_len * range_ratio), output_min),
// output_len]. SGLang releases differ in output_min (0 or 1); a run's
// total generated tokens tell which. Outputs of 0 tokens count as 1 (the
// simulator's least). Arrival times are 0 (a closed loop sends them).
// Errors: fewer than 1 request or more than 2^20, a length below 1 or
// above 2^30, a range ratio outside [0, 1], output_min not 0 or 1.
struct BenchRandomDataset {
  int requests = 1;
  int input_len = 1;
  int output_len = 1;
  double range_ratio = 0;
  uint32_t seed = 1;
  int output_min = 1;
};
Result<std::vector<TraceRequest>> SglangRandomLengths(
    const BenchRandomDataset& d);

// Parses "sglang-random:IN:OUT[:RATIO[:SEED]]" (`serve --dataset`): the
// benchmark's --random-input-len, --random-output-len, --random-range-ratio
// (default 0) and --seed (default 1), for `requests` requests, outputs
// from 1. Errors name `where`: an unknown dataset (with "did you mean"),
// a missing or non-numeric field, SglangRandomLengths' limits.
Result<std::vector<TraceRequest>> ParseBenchDataset(const std::string& text,
                                                    int requests,
                                                    const std::string& where);

// The requests an open-loop workload sends (kPoisson: sampled with its
// seed; kTrace: the trace), in the order RequestSpan::id counts them.
std::vector<TraceRequest> OpenLoopRequests(const Workload& workload);

// Simulates `replicas` identical replicas (requests dealt round-robin;
// closed-loop clients split as evenly as they go) of the replica `cost`
// models. Errors: a non-positive rate, concurrency, request count or
// scheduler limit, a prefix-hit fraction outside [0, 1), an empty trace;
// more than 2^20 requests, 2^24 sequences or 2^30 tokens per step; a rate
// so low that the arrivals would run past 1e9 s.
Result<SimulationResult> SimulateServing(const StepCostModel& cost,
                                         int replicas, const Workload& workload,
                                         const SchedulerOptions& scheduler,
                                         const Slo& slo);

// Closed-loop clients (kConcurrency) for a simulator that takes only
// open-loop arrivals (disaggregated serving): the requests, with the
// lengths SimulateServing would give the closed workload, as a trace whose
// first C requests arrive at 0 and the rest one by one at an even rate,
// the rate at which the mean number of requests in the system is C
// (Little's law: a closed loop holds exactly C), found by bisection on
// log(rate) to 1%. `mean_in_system` simulates a trace and returns its
// mean_requests_in_system. An approximation: a closed loop's arrivals
// follow its finishes, these a clock (docs/model.md 7.7 measures the
// difference on the aggregated simulator, which runs clients; iterating
// the closed loop's own rule, arrival = the client's last finish, from
// this start did not settle in 30 runs). Errors: a concurrency or request
// count below 1, the simulator's, and a bisection that finds no rate.
struct ClosedLoopFit {
  Workload open;              // kTrace: the fitted arrivals
  double rate_per_s = 0;      // 0: at most C requests, all at once
  double mean_in_system = 0;  // at that rate
  int runs = 0;               // simulations it took
};
Result<ClosedLoopFit> FitClosedLoop(
    const Workload& closed,
    const std::function<Result<double>(const Workload&)>& mean_in_system);

// A closed loop of fixed-length clients with their requests spread evenly
// over time: SimulateServing on FitClosedLoop's open-loop stand-in for
// `closed` (docs/model.md 7.3). The aggregated simulator's own closed loop
// keeps fixed-length clients in step; this is the other bound. `result`
// is the simulation at the fitted rate (infeasible where a request cannot
// fit). Errors: SimulateServing's and FitClosedLoop's.
struct SpreadClosedLoop {
  SimulationResult result;
  ClosedLoopFit fit;
};
Result<SpreadClosedLoop> SimulateSpreadClosedLoop(const StepCostModel& cost,
                                                  int replicas,
                                                  const Workload& closed,
                                                  const SchedulerOptions& s,
                                                  const Slo& slo);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_BATCHING_H_
