// Importing what users already run: a launch line or config of an engine
// read back into the model, the plan, the engine preset and the batch
// (`scalemodel train --from ENGINE ...`, `serve --from ENGINE ...`). The
// inverse of launch.h's emitters: `--emit ENGINE` then `--from ENGINE`
// gives back the plan that was emitted (round-trip tests per engine,
// tests/launch/import_test.cc).
//
// Inputs are the words after `--from ENGINE`. A word naming a file is read:
// a .yml/.yaml file is MaxText's config, a .toml file torchtitan's job
// config, any other file a launch script (comments, `export` lines and `\`
// continuations as ParseLaunchText reads them); other words are launch-line
// text ("--tensor-model-parallel-size 8 ...", "key=value", "--section.key
// value"). The system is not part of a launch line and comes from the
// caller; so does, where the line does not say, the model.
//
// Arguments that do not change the estimate (data paths, learning rates,
// logging, ports) are ignored and listed in `ignored`; arguments that
// change the plan in a way scalemodel cannot express (expert tensor
// parallelism, a first-stage layer count, pipeline parallelism in
// serving, ...) are refused with one sentence naming the argument. Where
// the mapping approximates (a MaxText remat policy, torchtitan's
// layer-level checkpointing), a note says how.
//
// Example:
//   auto run = launch::ImportTraining(launch::TrainEngine::kMegatron,
//       {"--tensor-model-parallel-size 8 --micro-batch-size 1 ..."}, cat,
//       system, "");
//   auto est = estimate::EstimateTraining(run->model.spec, system,
//                                         run->config);
#ifndef SCALEMODEL_LAUNCH_IMPORT_H_
#define SCALEMODEL_LAUNCH_IMPORT_H_

#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/launch.h"

namespace scalemodel::launch {

struct ImportedTraining {
  ingest::ImportedModel model;
  // The name the model was found by (a catalog id, alias or path), so that
  // ingest::FindModel finds it again.
  std::string model_name;
  estimate::Engine preset = estimate::Engine::kMegatron;
  // The engine's preset applied, then what the line sets: degrees, micro
  // batch, schedule, vpp, last-stage layers, remat, precision and recipe,
  // gradient-reduction dtype, overlaps, offload, MTP layers, batch and
  // sequence length.
  estimate::TrainingConfig config;
  std::vector<std::string> notes;    // approximations, defaults assumed
  std::vector<std::string> ignored;  // arguments read and not used
};

// `model_override`: a model name from the caller (--model); empty: the
// model the line names (MaxText model_name, torchtitan model name and
// flavor, the header of a scalemodel launch line) or whose shape its flags
// give (Megatron-LM's --num-layers, --hidden-size, ... matched against the
// catalog).
Result<ImportedTraining> ImportTraining(TrainEngine engine,
                                        const std::vector<std::string>& args,
                                        const catalog::Catalog& catalog,
                                        const hw::System& system,
                                        const std::string& model_override);

struct ImportedServing {
  ingest::ImportedModel model;
  std::string model_name;
  // tp, ep, pp, dp (replicas on the system: its chips / (tp x ep x pp)),
  // DP attention, redundant experts, speculative decoding (method, draft
  // tokens and draft model; no acceptance, which a line does not carry),
  // batch (concurrent sequences per replica), weights and KV dtypes.
  // prompt and output keep the defaults; max_model_len bounds their sum.
  estimate::ServeConfig config;
  // The speculation as `serve --spec` takes it ("mtp:2", "eagle:3",
  // "draft:MODEL:4", "ngram:3"); empty when the line does not speculate.
  std::string spec;
  long max_model_len = 0;       // 0: the line does not say
  long max_batched_tokens = 0;  // tokens per engine step; 0: not given
  // SGLang's --scheduler-recv-interval (estimate::SchedulerOptions::
  // recv_interval); 1: every step, the default.
  int recv_interval = 1;
  // TensorRT-LLM's attention_dp_config enable_balance timeout_iters
  // (estimate::SchedulerOptions::adp_balance_timeout_iters); 0: off.
  int adp_balance_timeout = 0;
  // The overlap scheduler as the line sets it (estimate::SchedulerOptions::
  // overlap_schedule): 0 off (SGLang --disable-overlap-schedule, vLLM
  // --no-async-scheduling, TensorRT-LLM disable_overlap_scheduler: true),
  // 1 on (vLLM --async-scheduling), -1 the engine's default.
  int overlap_schedule = -1;
  // Piecewise CUDA graphs for prefill as the line sets them: 1 on (SGLang
  // --enable-piecewise-cuda-graph, TensorRT-LLM
  // torch_compile_config.enable_piecewise_cuda_graph: true; `serve
  // --piecewise-cuda-graph`), 0 off (SGLang --disable-piecewise-cuda-graph,
  // TensorRT-LLM's key false; `--no-piecewise-cuda-graph`), -1 the
  // engine's default.
  int prefill_graph = -1;
  bool batch_given = false;  // the line sets the batch cap
  std::vector<std::string> notes;
  std::vector<std::string> ignored;
};

Result<ImportedServing> ImportServing(ServeEngine engine,
                                      const std::vector<std::string>& args,
                                      const catalog::Catalog& catalog,
                                      const hw::System& system,
                                      const std::string& model_override);

// The plan key estimate::ParsePlanKey reads back ("dp=2,tp=8,pp=4,zero=1
// mb=1 remat=full interleaved vpp=2 last=5 offload"), for front ends that
// pass an imported plan on as text.
std::string PlanKeyOf(const estimate::TrainingConfig& config);

// What each importer reads, for docs and tests: flag or key names.
std::vector<std::string> UnderstoodArguments(TrainEngine engine);
std::vector<std::string> UnderstoodArguments(ServeEngine engine);

}  // namespace scalemodel::launch

#endif  // SCALEMODEL_LAUNCH_IMPORT_H_
