// The per-engine importers behind launch::ImportTraining / ImportServing.
#ifndef SCALEMODEL_LAUNCH_IMPORT_TRAIN_INTERNAL_H_
#define SCALEMODEL_LAUNCH_IMPORT_TRAIN_INTERNAL_H_

#include <string>
#include <vector>

#include "import_internal.h"
#include "scalemodel/launch/import.h"

namespace scalemodel::launch::internal {

Result<ImportedTraining> ImportMegatron(const LaunchInput& in,
                                        const catalog::Catalog& cat,
                                        const hw::System& sys,
                                        const std::string& override_name);
Result<ImportedTraining> ImportMaxText(const LaunchInput& in,
                                       const catalog::Catalog& cat,
                                       const hw::System& sys,
                                       const std::string& override_name);
Result<ImportedTraining> ImportTorchtitan(const LaunchInput& in,
                                          const catalog::Catalog& cat,
                                          const hw::System& sys,
                                          const std::string& override_name);
Result<ImportedServing> ImportVllm(const LaunchInput& in,
                                   const catalog::Catalog& cat,
                                   const hw::System& sys,
                                   const std::string& override_name);
Result<ImportedServing> ImportSglang(const LaunchInput& in,
                                     const catalog::Catalog& cat,
                                     const hw::System& sys,
                                     const std::string& override_name);

std::vector<std::string> MegatronArguments();
std::vector<std::string> MaxTextArguments();
std::vector<std::string> TorchtitanArguments();
std::vector<std::string> VllmArguments();
Result<ImportedServing> ImportTrtllm(const LaunchInput& in,
                                     const catalog::Catalog& cat,
                                     const hw::System& sys,
                                     const std::string& override_name);
std::vector<std::string> TrtllmArguments();
std::vector<std::string> SglangArguments();

}  // namespace scalemodel::launch::internal

#endif  // SCALEMODEL_LAUNCH_IMPORT_TRAIN_INTERNAL_H_
