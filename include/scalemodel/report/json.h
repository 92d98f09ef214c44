// One serializer for everything that leaves the library as JSON: the CLI's
// --json output and the golden tests. Numbers are SI base units with the unit
// in the key (`_s`, `_bytes`, `_flops_per_s`, `_bytes_per_s`, `_usd`).
#ifndef SCALEMODEL_REPORT_JSON_H_
#define SCALEMODEL_REPORT_JSON_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/chip.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"

namespace scalemodel::report {

using Json = nlohmann::ordered_json;

// The schema version printed in every --json document.
inline constexpr int kSchemaVersion = 2;

// A number, or null when it is zero (unknown / unsupported).
Json NumberOrNull(double v);

// One realistic-mode constant of a chip's [efficiency] table, as `chip
// NAME` shows it: its SI value (seconds for times, a fraction, a count or
// 0/1 for a flag), what it is a fraction or count of, and its source
// ("borrowed from h100: ..." where the file left it out).
struct EfficiencyEntry {
  std::string key;
  double value = 0;
  bool is_time = false;
  bool is_flag = false;
  std::string unit;  // "of the bf16 peak", "rows", "per GEMM", ...
  std::string source;
};
// Every constant the chip's realistic mode reads, the required ones (its
// own or borrowed) then the optional ones its file sets, in catalog order.
std::vector<EfficiencyEntry> EfficiencyEntries(const hw::Chip& chip);

// The chip: peaks, memory, links, power, price, sources, and the
// realistic-mode data (`efficiency`, `allreduce_in_graph`,
// `allreduce_measured`, `moe_engine`).
Json ToJson(const hw::Chip& chip);
Json ToJson(const hw::PhysicalAxis& axis);
Json ToJson(const hw::System& system);
Json ToJson(const catalog::SystemEntry& entry);
Json ToJson(const roofline::Roofline& r);
Json ToJson(const roofline::MatmulRoofline& m);
Json ToJson(const net::CollectiveCost& c);
Json ToJson(const estimate::TrainingEstimate& e);
// matmul_s, attention_s, communication_s, overhead_s: they add up to the
// step time.
Json ToJson(const estimate::StepParts& p);
Json ToJson(const estimate::ServeEstimate& e);
// The continuous-batching simulation: ttft_s, tpot_s, itl_s, e2e_s (each
// {p50, p90, p99, mean}), throughputs, goodput, kv_cache, counters.
Json ToJson(const estimate::SimulationResult& r);
// A model's parameters, FLOPs, KV cache and activations at sequence length
// `seq`, KV-cache dtype `kv` and the attention FLOP convention `conv`.
Json ToJson(const model::ModelSpec& m, double seq, hw::Dtype kv,
            model::AttentionFlops conv);

// Pretty-prints with 2-space indentation and a trailing newline; a whole
// number prints as an integer (32, not 32.0).
std::string Dump(const Json& j);

}  // namespace scalemodel::report

#endif  // SCALEMODEL_REPORT_JSON_H_
