// Inference estimator (book: "inference", "applied-inference"; docs/model.md
// section 7): prefill and decode step times from weight streaming, KV-cache
// streaming and FLOPs, the collectives of the sharding, memory per chip,
// maximum batch, TTFT, time per output token, throughput and cost.
//
// Example:
//   estimate::ServeConfig cfg{.tp = 8, .batch = 64, .prompt = 2048,
//                             .output = 512};
//   auto e = estimate::EstimateServing(llama70b, v5e_4x8, cfg);
#ifndef SCALEMODEL_ESTIMATE_INFERENCE_H_
#define SCALEMODEL_ESTIMATE_INFERENCE_H_

#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::estimate {

struct ServeConfig {
  int tp = 1;            // tensor parallel within one replica
  int ep = 1;            // expert parallel (MoE), within one replica
  int dp = 1;            // replicas; tp * ep * dp = chips
  double batch = 1;      // concurrent sequences per replica
  double prompt = 1024;  // prompt tokens
  double output = 256;   // generated tokens
  hw::Dtype weights = hw::Dtype::kBf16;
  hw::Dtype kv = hw::Dtype::kBf16;
  Mode mode = Mode::kRealistic;
  double price_per_chip_hour = 0;  // 0: catalog price
};

struct ServeEstimate {
  bool feasible = true;
  std::string reason;
  units::Seconds prefill_time;  // one batch of `batch` prompts
  units::Seconds ttft;          // = prefill_time (static batching)
  units::Seconds decode_step;   // time per output token, mean over the output
  units::Seconds request_latency;  // ttft + output x decode_step
  double tokens_per_s = 0;         // output tokens/s, all replicas
  double tokens_per_s_per_chip = 0;
  double tokens_per_s_per_user = 0;
  double max_batch = 0;       // largest batch that fits one replica
  double critical_batch = 0;  // decode turns compute-bound above this
  units::Bytes weights_bytes, kv_cache_bytes, total_bytes, capacity_bytes;
  std::string
      bound;  // memory-bandwidth, compute, communication, memory-capacity
  double cost_per_million_tokens_usd = 0;  // NaN without a price
  // Decode step parts (per step).
  units::Seconds weight_time, kv_time, compute_time, comm_time, overhead;
  std::vector<std::string> notes;
};

// Errors: degrees not multiplying to the chips, tp not dividing the heads, ep
// without a MoE model or not dividing the experts, a dtype the chip cannot
// compute, non-positive lengths or batch.
Result<ServeEstimate> EstimateServing(const model::ModelSpec& model,
                                      const hw::System& system,
                                      const ServeConfig& config);

// The book's decode step (inference chapter), used by peak mode:
//   T = B KV_bytes / (n W) + max(2 B N / (n C), N_bytes / (n W)).
double BookDecodeStep(double batch, double kv_bytes_per_seq, double params,
                      double param_bytes, double chips, double flops_per_s,
                      double hbm_bytes_per_s);

// The book's disaggregation balance: prefill servers per generate server,
// P / G = prefill_latency x batch / (step x output).
double PrefillToDecodeRatio(double prefill_latency_s, double batch,
                            double step_s, double output);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_INFERENCE_H_
