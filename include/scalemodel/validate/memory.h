// Memory validation: predicted bytes per chip against the figures sources
// publish for a stated model, layout, batch, sequence, remat policy and
// engine (data/validation/memory_runs.json), and the engine whose memory
// habits a published training row ran with.
//
// Example:
//   auto rep = validate::RunMemoryValidation(catalog);
//   std::string md = validate::MemoryMarkdown(*rep);
#ifndef SCALEMODEL_VALIDATE_MEMORY_H_
#define SCALEMODEL_VALIDATE_MEMORY_H_

#include <optional>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"

namespace scalemodel::validate {

// The engine a published training row ran: its "engine" key when given
// (an estimate::ParseEngine name), else read from its "family" (MaxText,
// DeepSpeed, NeMo and Megatron-Bridge, Megatron-LM / Megatron-Core,
// torchtitan); nothing when neither names one.
std::optional<estimate::Engine> RowEngine(const std::string& engine_key,
                                          const std::string& family);
// Sets `config`'s bytes per parameter and reserve to RowEngine's
// (estimate::ApplyEngineMemory); leaves it alone when there is none.
void ApplyRowMemory(const std::string& engine_key, const std::string& family,
                    estimate::TrainingConfig* config);

// Whether a data/validation file holds memory rows (memory_runs.json),
// which the step-time validation leaves to RunMemoryValidation.
bool IsMemoryFile(const std::string& path);

// What a memory row measures: the model state per chip (weights, gradients,
// optimizer state), the saved activations of one layer per chip, or the
// whole peak per chip (state, activations, logits and the reserve).
enum class MemoryKind { kModelStates, kLayerActivations, kPeak };

struct MemoryCase {
  std::string id, kind, engine, source, detail;
  double predicted_bytes = 0, measured_bytes = 0;
  double rel_error = 0;  // predicted / measured - 1
};

struct MemoryReport {
  std::vector<MemoryCase> cases;
  std::vector<std::string> skipped;  // "id: reason"
  double median_abs_rel_error = 0, p90_abs_rel_error = 0, max_abs_rel_error = 0;
};

// Every row of the catalog's memory files, estimated in realistic mode
// with the row's engine preset. Errors only for a file that is not JSON.
Result<MemoryReport> RunMemoryValidation(const catalog::Catalog& catalog);
// The report as a Markdown section ("## Memory") and as a text table.
std::string MemoryMarkdown(const MemoryReport& report);
std::string MemoryText(const MemoryReport& report);

}  // namespace scalemodel::validate

#endif  // SCALEMODEL_VALIDATE_MEMORY_H_
