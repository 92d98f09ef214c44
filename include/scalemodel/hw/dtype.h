// Numeric formats and their storage sizes.
#ifndef SCALEMODEL_HW_DTYPE_H_
#define SCALEMODEL_HW_DTYPE_H_

#include <array>
#include <string>
#include <string_view>

#include "scalemodel/base/error.h"

namespace scalemodel::hw {

enum class Dtype { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8, kInt4, kFp4 };
inline constexpr int kNumDtypes = 8;
inline constexpr std::array<Dtype, kNumDtypes> kAllDtypes = {
    Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16,
    Dtype::kFp8,  Dtype::kInt8, Dtype::kInt4, Dtype::kFp4};

// Storage bytes per element: fp32 4, bf16/fp16 2, fp8/int8 1, int4/fp4 0.5.
// tf32 is stored as fp32 (4 bytes).
double BytesPerElement(Dtype d);
// Lower-case name as used on the command line and in catalog files ("bf16").
std::string_view DtypeName(Dtype d);
// Parses "bf16", "fp8", "int8", ... (case-insensitive; "float32" and "e4m3"
// style aliases accepted). Error names the accepted values.
Result<Dtype> ParseDtype(std::string_view text);

}  // namespace scalemodel::hw

#endif  // SCALEMODEL_HW_DTYPE_H_
