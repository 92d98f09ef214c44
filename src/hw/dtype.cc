#include "scalemodel/hw/dtype.h"

#include <string>
#include <vector>

#include "scalemodel/base/strings.h"

namespace scalemodel::hw {

double BytesPerElement(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
    case Dtype::kTf32:
      return 4;
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2;
    case Dtype::kFp8:
    case Dtype::kInt8:
      return 1;
    case Dtype::kInt4:
    case Dtype::kFp4:
      return 0.5;
  }
  return 0;
}

std::string_view DtypeName(Dtype d) {
  switch (d) {
    case Dtype::kFp32:
      return "fp32";
    case Dtype::kTf32:
      return "tf32";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp8:
      return "fp8";
    case Dtype::kInt8:
      return "int8";
    case Dtype::kInt4:
      return "int4";
    case Dtype::kFp4:
      return "fp4";
  }
  return "?";
}

Result<Dtype> ParseDtype(std::string_view text) {
  std::string t = ToLower(Trim(text));
  struct Alias {
    const char* name;
    Dtype dtype;
  };
  static const Alias kAliases[] = {
      {"float32", Dtype::kFp32},  {"f32", Dtype::kFp32},
      {"bfloat16", Dtype::kBf16}, {"float16", Dtype::kFp16},
      {"f16", Dtype::kFp16},      {"half", Dtype::kFp16},
      {"e4m3", Dtype::kFp8},      {"e5m2", Dtype::kFp8},
      {"float8", Dtype::kFp8},    {"float8_e4m3fn", Dtype::kFp8},
      {"nvfp4", Dtype::kFp4},     {"mxfp4", Dtype::kFp4},
  };
  std::vector<std::string> names;
  for (Dtype d : kAllDtypes) {
    if (t == DtypeName(d)) return d;
    names.emplace_back(DtypeName(d));
  }
  for (const Alias& a : kAliases) {
    if (t == a.name) return a.dtype;
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown dtype '" + std::string(text) + "'" +
                         DidYouMean(t, names) + "; expected one of " + list);
}

}  // namespace scalemodel::hw
