// HuggingFace config.json (`model FILE`, `--model FILE`, `--catalog DIR`
// models): ParseHfConfig, then the accounting a command does with the model.
// An accepted model must give finite, non-negative parameter counts, FLOPs
// per token and KV-cache bytes.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/model/transformer.h"

namespace sm = scalemodel::model;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::CheckNonNegative;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  auto m = scalemodel::ingest::ParseHfConfig(AsText(data, size), "fuzz.json");
  if (!m) return 0;
  const sm::ModelSpec& s = m->spec;
  sm::ParamCounts p = sm::CountParams(s);
  CheckNonNegative("total params", p.total);
  CheckNonNegative("active params", p.active);
  CheckNonNegative("train FLOPs per token", sm::TrainFlopsPerToken(s, 4096));
  CheckNonNegative("forward FLOPs per token",
                   sm::ForwardFlopsPerToken(s, 4096));
  CheckNonNegative("KV bytes per token",
                   sm::KvCacheBytesPerToken(s, scalemodel::hw::Dtype::kBf16));
  return 0;
}
