// Runnable plan export: the launch line an engine needs to run a plan that
// scalemodel evaluated (shared/reference/ecosystem.md, sections 1.2-1.6 and
// 5). Training plans go to MaxText (`key=value` overrides of base.yml),
// Megatron-LM (`pretrain_gpt.py` flags) or torchtitan (`--section.key`
// flags); serving plans to `vllm serve`, SGLang's `launch_server` or
// TensorRT-LLM's `trtllm-serve` (with its --extra_llm_api_options YAML
// written by a heredoc first), and disaggregated plans (a prefill and a
// decode pool) to one server per instance of each pool plus the engine's
// router.
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
#include "scalemodel/estimate/disaggregated.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/rules.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::launch {

enum class TrainEngine { kMaxText, kMegatron, kTorchtitan };
enum class ServeEngine { kVllm, kSglang, kTrtllm };

// "maxtext", "megatron", "torchtitan" / "vllm", "sglang", "trtllm"
// (or "tensorrt-llm"), optionally
// "@VERSION" (rules.h KnownVersions); errors list the accepted names or the
// known versions.
Result<TrainEngine> ParseTrainEngine(std::string_view text);
Result<ServeEngine> ParseServeEngine(std::string_view text);
// "vLLM", "SGLang", "TensorRT-LLM".
std::string_view ServeEngineName(ServeEngine engine);

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

// A disaggregated serving plan on one system: `prefill.dp` instances of the
// prefill pool's tp x ep replica and `decode.dp` of the decode pool's,
// filling the system (prefill first, packed over its hosts). Each pool's
// `batch` is its cap on running requests per instance.
struct DisaggregatedPlan {
  estimate::ServeConfig prefill, decode;
  int max_batched_tokens = 8192;  // tokens per step per instance
  bool chunked_prefill = false;   // the prefill pool chunks prompts
  estimate::KvOverlap overlap = estimate::KvOverlap::kAfter;
  double ttft_p99_s = 0, tpot_p99_s = 0;  // simulated; 0: not given
};

// The launch text of a disaggregated plan: a header, one server per
// instance (each with its host, GPUs and port, and the engine's
// prefill/decode and KV-transfer settings) and the router or proxy that
// sends each request to a prefill then a decode instance. Errors: a TPU
// system, pools that do not fill the system, what the engine cannot
// express (one sentence naming engine and option).
Result<std::string> EmitDisaggregated(ServeEngine engine,
                                      const ingest::ImportedModel& model,
                                      const hw::System& system,
                                      const DisaggregatedPlan& plan);
// The same as parts: the header, each instance's server, the router.
Result<std::vector<std::string>> EmitDisaggregatedParts(
    ServeEngine engine, const ingest::ImportedModel& model,
    const hw::System& system, const DisaggregatedPlan& plan);

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
// Every server of a disaggregated plan checked against the engine's rules
// on its own GPUs.
Result<CheckedLaunch> EmitDisaggregatedChecked(
    std::string_view engine, const ingest::ImportedModel& model,
    const hw::System& system, const DisaggregatedPlan& plan);
// Whether `engine` (ENGINE[@VERSION]) can launch the training plan `cfg`
// on `system` (estimates it, emits and validates); the plan search's
// engine filter.
bool CanLaunchTraining(std::string_view engine,
                       const ingest::ImportedModel& model,
                       const hw::System& system,
                       const estimate::TrainingConfig& cfg);

}  // namespace scalemodel::launch

#endif  // SCALEMODEL_LAUNCH_LAUNCH_H_
