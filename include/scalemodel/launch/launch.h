// Runnable plan export: the launch line an engine needs to run a plan that
// scalemodel evaluated (shared/reference/ecosystem.md, sections 1.2-1.6 and
// 5). Training plans go to MaxText (`key=value` overrides of base.yml),
// Megatron-LM (`pretrain_gpt.py` flags) or torchtitan (`--section.key`
// flags); serving plans to `vllm serve` or SGLang's `launch_server`.
//
// Each emitted text starts with a comment header: tool version, model,
// system, plan, the predicted figures and every approximation the mapping
// makes (for example a recompute policy the engine names differently). The
// checks the engine itself enforces at launch (degrees multiply to the chip
// count, divisibility of heads, layers, experts and batch) already passed in
// the estimator; what an engine cannot express is an error naming the
// parallelism and the engine that can.
//
// Example:
//   auto text = launch::EmitTraining(launch::TrainEngine::kMegatron, model,
//                                    system, cfg, estimate);
#ifndef SCALEMODEL_LAUNCH_LAUNCH_H_
#define SCALEMODEL_LAUNCH_LAUNCH_H_

#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/rules.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::launch {

enum class TrainEngine { kMaxText, kMegatron, kTorchtitan };
enum class ServeEngine { kVllm, kSglang };

// "maxtext", "megatron", "torchtitan" / "vllm", "sglang", optionally
// "@VERSION" (rules.h KnownVersions); errors list the accepted names or the
// known versions.
Result<TrainEngine> ParseTrainEngine(std::string_view text);
Result<ServeEngine> ParseServeEngine(std::string_view text);

// Whether the engine runs on this system's chips (Megatron-LM and
// torchtitan need GPUs).
Result<bool> CheckTrainEngine(TrainEngine engine, const hw::System& system);
// The preset (estimate/presets.h) of the framework a launch line is for;
// estimate::MaxZeroLevel and estimate::ExactRemats of it say which plans
// the engine can launch.
estimate::Engine PresetOf(TrainEngine engine);

// `est` is EstimateTraining's result for (model.spec, system, cfg): it
// carries the degrees placed on the fast (ICI / NVLink) and slow (DCN /
// network) domains and the number of microbatches. The engine's name for the
// model (MaxText model_name, torchtitan --model.name and --model.flavor)
// comes from model.engine_names.
Result<std::string> EmitTraining(TrainEngine engine,
                                 const ingest::ImportedModel& model,
                                 const hw::System& system,
                                 const estimate::TrainingConfig& cfg,
                                 const estimate::TrainingEstimate& est);

// `cfg.batch` becomes the engine's cap on concurrent sequences; the context
// length is prompt + output. The checkpoint to load is
// model.engine_names.hf_repo (a placeholder with a comment when empty).
Result<std::string> EmitServing(ServeEngine engine,
                                const ingest::ImportedModel& model,
                                const hw::System& system,
                                const estimate::ServeConfig& cfg,
                                const estimate::ServeEstimate& est);

// A launch line checked by its engine's validator (rules.h).
struct CheckedLaunch {
  EngineVersion version;
  // The launch text (first line: the version it was checked against);
  // empty when a rule fails.
  std::string text;
  std::vector<RuleFailure> failures;  // empty: the engine accepts the line
  bool launchable() const { return failures.empty(); }
  // One sentence: which rule fails and where the engine enforces it.
  std::string Reason() const;
};

// `engine` is "ENGINE[@VERSION]". Emits the line for that version and runs
// its validator. A plan the engine cannot run is a result
// (launchable() false), not an error; errors are bad input (unknown engine
// or version, a GPU engine on TPUs).
Result<CheckedLaunch> EmitTrainingChecked(
    std::string_view engine, const ingest::ImportedModel& model,
    const hw::System& system, const estimate::TrainingConfig& cfg,
    const estimate::TrainingEstimate& est);
Result<CheckedLaunch> EmitServingChecked(std::string_view engine,
                                         const ingest::ImportedModel& model,
                                         const hw::System& system,
                                         const estimate::ServeConfig& cfg,
                                         const estimate::ServeEstimate& est);
// Whether `engine` (ENGINE[@VERSION]) can launch the training plan `cfg`
// on `system` (estimates it, emits and validates); the plan search's
// engine filter.
bool CanLaunchTraining(std::string_view engine,
                       const ingest::ImportedModel& model,
                       const hw::System& system,
                       const estimate::TrainingConfig& cfg);

}  // namespace scalemodel::launch

#endif  // SCALEMODEL_LAUNCH_LAUNCH_H_
