// Disaggregated serving (docs/model.md 7.7): a prefill pool and a decode
// pool, each with its own plan and scheduler, and the KV cache of every
// prompt moved from the first to the second over the network between them
// (DistServe, OSDI'24; Splitwise, ISCA'24; Mooncake, FAST'25; NVIDIA
// Dynamo). The prefill pool computes each prompt and its first token; the
// request's KV then crosses to the decode pool, which generates the rest.
//
//   TTFT = prefill queueing + prefill + exposed KV transfer
//   TPOT = (last token - handoff) / (output - 1), the decode pool alone
//
// Example:
//   estimate::DisaggregatedPools pools{*prefill_cost, 2, sched_p,
//                                      *decode_cost, 1, sched_d};
//   pools.link = estimate::KvTransferLinkOf(h100, 16, 8 + 8);
//   auto r = estimate::SimulateDisaggregated(pools, workload, slo);
#ifndef SCALEMODEL_ESTIMATE_DISAGGREGATED_H_
#define SCALEMODEL_ESTIMATE_DISAGGREGATED_H_

#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/hw/chip.h"

namespace scalemodel::estimate {

// The network path a request's KV takes from the prefill pool to the
// decode pool: per chip, per direction.
struct KvTransferLink {
  double bytes_per_s_per_chip = 0;
  double latency_s = 0;  // once per transfer
  std::string name;      // "NVLink", "InfiniBand NDR", "DCN"
};

// NVLink (the chip's NVLink bandwidth and hop latency) when both pools fit
// one NVLink domain (`pool_chips` = prefill + decode chips <= the domain),
// else the chip's scale-out network (its NIC share or DCN per chip, and its
// latency). TPU pools are separate slices: DCN.
KvTransferLink KvTransferLinkOf(const hw::Chip& chip, int pool_chips);

// How the transfer overlaps the prefill that produces it.
enum class KvOverlap {
  // The whole KV moves after the prefill (DistServe, vLLM's disaggregated
  // prefill connector, Dynamo's NIXL read by the decode worker).
  kAfter,
  // Layer by layer while later layers compute (Splitwise, Mooncake): only
  // what the link cannot hide behind the prefill is exposed.
  kLayerwise,
};

// Parses "after" or "layerwise"; errors name `where`.
Result<KvOverlap> ParseKvOverlap(const std::string& text,
                                 const std::string& where);

// Seconds to move the KV of `prompt_tokens` tokens: every chip of the
// prefill replica sends its shard and every chip of the decode replica
// receives its own, in parallel over per-chip links, so the side holding
// more bytes per chip bounds it:
//   latency + prompt x max(kv_p, kv_d) / bandwidth.
// kv_p, kv_d: KV bytes per token per chip in the two replicas
// (StepCostModel::KvBytesPerTokenPerChip). A zero bandwidth is infinite.
double KvTransferSeconds(double prompt_tokens, double kv_p, double kv_d,
                         const KvTransferLink& link);

// The part of a transfer of `transfer_s` that the request waits for after
// a prefill of `prefill_s` over `layers` layers: all of it (kAfter), or for
// a layer-by-layer pipeline on one link max(T/L, T - P (L-1)/L) (the last
// layer's share, or what the link is slower than the prefill by).
double ExposedTransferSeconds(double transfer_s, double prefill_s, int layers,
                              KvOverlap overlap);

// The two pools. Each pool's StepCostModel is one replica of its plan.
struct DisaggregatedPools {
  StepCostModel prefill;
  int prefill_replicas = 1;
  SchedulerOptions prefill_scheduler;
  StepCostModel decode;
  int decode_replicas = 1;
  SchedulerOptions decode_scheduler;
  KvTransferLink link;
  KvOverlap overlap = KvOverlap::kAfter;
  int layers = 1;  // the model's layers (kLayerwise)
};

struct DisaggregatedResult {
  // The whole service as users see it: TTFT, TPOT, ITL (the decode pool's
  // gaps), E2E, throughput and goodput; per-chip figures over both pools.
  SimulationResult service;
  SimulationResult prefill_pool;  // prompts with one output token each
  SimulationResult decode_pool;   // the handed-off requests
  Percentiles kv_transfer_s;      // whole transfer, per request
  Percentiles kv_exposed_s;       // the part added to TTFT
  int prefill_chips = 0, decode_chips = 0;
  // Closed-loop clients (--concurrency): the even arrival rate that stood
  // in for them (FitClosedLoop; 0 when all requests start at once) and the
  // simulations it took (0 without --concurrency).
  double closed_loop_rate_per_s = 0;
  int closed_loop_runs = 0;
};

// Runs the prefill pool on the workload's requests (open loop: Poisson or a
// trace), hands each off after its exposed transfer, and runs the decode
// pool on the handed-off requests, whose prompt KV arrives cached.
// Requests with one output token end at the prefill pool. Closed-loop
// clients (kConcurrency) run as FitClosedLoop's open-loop stand-in, which
// a note names. Errors: SimulateServing's and FitClosedLoop's.
Result<DisaggregatedResult> SimulateDisaggregated(
    const DisaggregatedPools& pools, const Workload& workload, const Slo& slo);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_DISAGGREGATED_H_
