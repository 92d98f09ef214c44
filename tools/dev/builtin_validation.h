// The validation report of the built-in catalog, computed at build time
// (validation_cache_gen.cc writes the definition into the build tree).
#ifndef SCALEMODEL_TOOLS_DEV_BUILTIN_VALIDATION_H_
#define SCALEMODEL_TOOLS_DEV_BUILTIN_VALIDATION_H_

#include <cstdint>
#include <string_view>

namespace scalemodel::validate {

// The report as ReportToJson wrote it, and the fingerprint of the catalog
// it was run on.
std::string_view BuiltinValidationJson();
uint64_t BuiltinValidationFingerprint();

// Installs it (validate::InstallPrecomputedValidation); call once before
// the first CachedValidation.
void InstallBuiltinValidation();

}  // namespace scalemodel::validate

#endif  // SCALEMODEL_TOOLS_DEV_BUILTIN_VALIDATION_H_
