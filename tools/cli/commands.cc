#include "commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/io/hf_config.h"
#include "scalemodel/io/validate.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"

namespace scalemodel::cli {

io::Json Document(const Json& inputs, const Json& results) {
  Json j;
  j["schema_version"] = io::kSchemaVersion;
  j["inputs"] = inputs;
  for (auto it = results.begin(); it != results.end(); ++it) {
    j[it.key()] = it.value();
  }
  return j;
}

Result<bool> PutLaunch(const std::string& engine_name,
                       const Result<std::string>& text, Output& out) {
  if (!text) return tl::unexpected(text.error());
  out.text = *text;
  out.json["launch"] = {{"engine", ToLower(engine_name)}, {"script", *text}};
  return true;
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  std::string out;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < rows[k].size(); ++i) {
      std::string cell = rows[k][i];
      if (i + 1 < rows[k].size()) cell.resize(width[i] + 2, ' ');
      line += cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

Result<net::Mode> ParseMode(const std::string& text, const char* where) {
  std::string m = ToLower(text);
  if (m == "peak") return net::Mode::kPeak;
  if (m == "realistic") return net::Mode::kRealistic;
  return InvalidArgument("expected 'peak' or 'realistic', got '" + text + "'",
                         where);
}

}  // namespace scalemodel::cli
