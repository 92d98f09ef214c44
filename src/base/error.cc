#include "scalemodel/base/error.h"

#include <cstdio>
#include <cstdlib>

#include "scalemodel/base/check.h"

namespace scalemodel {

std::string Error::ToString() const {
  if (where.empty()) return message;
  return where + ": " + message;
}

namespace internal {
void CheckFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "internal error: check failed: %s at %s:%d\n", condition,
               file, line);
  std::abort();
}
}  // namespace internal

}  // namespace scalemodel
