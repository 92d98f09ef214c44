// launch::ImportTraining / ImportServing: the engine's importer, then what
// every import shares (docs/launch.md "Importing launch lines").
#include "scalemodel/launch/import.h"

#include "fmt/format.h"
#include "import_internal.h"
#include "import_train_internal.h"

namespace scalemodel::launch {

Result<ImportedTraining> ImportTraining(TrainEngine engine,
                                        const std::vector<std::string>& args,
                                        const catalog::Catalog& catalog,
                                        const hw::System& system,
                                        const std::string& model_override) {
  if (args.empty()) {
    return InvalidArgument(
        "expected the launch line or config after the engine name", "from");
  }
  if (auto ok = CheckTrainEngine(engine, system); !ok) {
    return tl::unexpected(ok.error());
  }
  auto in = internal::ReadLaunchInput(args);
  if (!in) return tl::unexpected(in.error());
  switch (engine) {
    case TrainEngine::kMegatron:
      return internal::ImportMegatron(*in, catalog, system, model_override);
    case TrainEngine::kMaxText:
      return internal::ImportMaxText(*in, catalog, system, model_override);
    case TrainEngine::kTorchtitan:
      return internal::ImportTorchtitan(*in, catalog, system, model_override);
  }
  return InvalidArgument("unknown training engine", "from");
}

Result<ImportedServing> ImportServing(ServeEngine engine,
                                      const std::vector<std::string>& args,
                                      const catalog::Catalog& catalog,
                                      const hw::System& system,
                                      const std::string& model_override) {
  if (args.empty()) {
    return InvalidArgument("expected the launch line after the engine name",
                           "from");
  }
  auto in = internal::ReadLaunchInput(args);
  if (!in) return tl::unexpected(in.error());
  switch (engine) {
    case ServeEngine::kVllm:
      return internal::ImportVllm(*in, catalog, system, model_override);
    case ServeEngine::kSglang:
      return internal::ImportSglang(*in, catalog, system, model_override);
    case ServeEngine::kTrtllm:
      return internal::ImportTrtllm(*in, catalog, system, model_override);
  }
  return InvalidArgument("unknown serving engine", "from");
}

std::string PlanKeyOf(const estimate::TrainingConfig& c) {
  std::string key = c.par.ToString();
  if (!c.par.sequence_parallel && c.par.tp > 1) key += ",sp=0";
  key += fmt::format(" mb={} remat={} {}", c.layout.micro_batch,
                     model::RematName(c.memory.remat),
                     estimate::ScheduleName(c.layout.schedule));
  if (c.layout.vpp > 1) key += fmt::format(" vpp={}", c.layout.vpp);
  if (c.layout.last_stage_layers > 0) {
    key += fmt::format(" last={}", c.layout.last_stage_layers);
  }
  if (c.memory.offload_params) {
    key += " offload-params";
  } else if (c.memory.offload_optimizer) {
    key += " offload";
  }
  return key;
}

std::vector<std::string> UnderstoodArguments(TrainEngine engine) {
  switch (engine) {
    case TrainEngine::kMegatron:
      return internal::MegatronArguments();
    case TrainEngine::kMaxText:
      return internal::MaxTextArguments();
    case TrainEngine::kTorchtitan:
      return internal::TorchtitanArguments();
  }
  return {};
}

std::vector<std::string> UnderstoodArguments(ServeEngine engine) {
  switch (engine) {
    case ServeEngine::kVllm:
      return internal::VllmArguments();
    case ServeEngine::kSglang:
      return internal::SglangArguments();
    case ServeEngine::kTrtllm:
      return internal::TrtllmArguments();
  }
  return {};
}

}  // namespace scalemodel::launch
