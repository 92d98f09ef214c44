// SCALEMODEL_CHECK: internal invariants that stay on in release builds.
// Never use it for user input; validate that and return an Error instead.
#ifndef SCALEMODEL_BASE_CHECK_H_
#define SCALEMODEL_BASE_CHECK_H_

namespace scalemodel::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file,
                              int line);
}  // namespace scalemodel::internal

#define SCALEMODEL_CHECK(cond)                                        \
  do {                                                                \
    if (!(cond)) {                                                    \
      ::scalemodel::internal::CheckFailed(#cond, __FILE__, __LINE__); \
    }                                                                 \
  } while (false)

#endif  // SCALEMODEL_BASE_CHECK_H_
