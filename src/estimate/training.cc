#include "scalemodel/estimate/training.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "scalemodel/base/check.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/hw/price.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/units/format.h"

namespace scalemodel::estimate {

using units::Bytes;
using units::Seconds;

namespace {

// One of `values` by its name (case and surrounding spaces ignored); the
// error lists the names ("expected a, b or c, got 'x'") and suggests the
// nearest.
template <typename E, typename NameFn>
Result<E> ParseByName(std::string_view text, std::initializer_list<E> values,
                      NameFn name, const char* option) {
  const std::string t = ToLower(Trim(text));
  std::vector<std::string> names;
  for (E v : values) {
    if (t == name(v)) return v;
    names.emplace_back(name(v));
  }
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return InvalidArgument("expected " + list + ", got '" + std::string(text) +
                             "'" + DidYouMean(t, names),
                         option);
}

// Lays the plan's degrees onto the system's axes, in the configured order
// when one is given.
Result<Placements> Place(Parallelism& par, const hw::System& sys,
                         const TrainingConfig& cfg) {
  std::array<int, kNumPar> order{};
  const bool has_order = cfg.layout.placement_order.size() == kNumPar;
  if (has_order) {
    std::copy(cfg.layout.placement_order.begin(),
              cfg.layout.placement_order.end(), order.begin());
  }
  return PlaceParallelism(par, sys, has_order ? &order : nullptr);
}

}  // namespace

std::string_view ScheduleName(Schedule s) {
  switch (s) {
    case Schedule::kGpipe:
      return "gpipe";
    case Schedule::k1F1B:
      return "1f1b";
    case Schedule::kInterleaved:
      return "interleaved";
  }
  return "?";
}

Result<Schedule> ParseSchedule(std::string_view text) {
  std::string t = ToLower(Trim(text));
  if (t == "gpipe") return Schedule::kGpipe;
  if (t == "1f1b") return Schedule::k1F1B;
  if (t == "interleaved" || t == "interleaved-1f1b")
    return Schedule::kInterleaved;
  return InvalidArgument("expected gpipe, 1f1b or interleaved, got '" +
                             std::string(text) + "'" +
                             DidYouMean(t, {"gpipe", "1f1b", "interleaved"}),
                         "schedule");
}

std::string_view AttentionKernelName(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kFused:
      return "fused";
    case AttentionKernel::kFlash2:
      return "flash2";
    case AttentionKernel::kMaterialized:
      return "materialized";
  }
  return "?";
}

Result<AttentionKernel> ParseAttentionKernel(std::string_view text) {
  return ParseByName(text,
                     {AttentionKernel::kFused, AttentionKernel::kFlash2,
                      AttentionKernel::kMaterialized},
                     AttentionKernelName, "attention_kernel");
}

std::string_view CpCommName(CpComm c) {
  switch (c) {
    case CpComm::kRing:
      return "p2p";
    case CpComm::kAllGather:
      return "allgather";
    case CpComm::kAllToAll:
      return "a2a";
  }
  return "?";
}

Result<CpComm> ParseCpComm(std::string_view text) {
  std::string t = ToLower(Trim(text));
  if (t == "p2p" || t == "ring") return CpComm::kRing;
  if (t == "allgather" || t == "all-gather" || t == "all_gather") {
    return CpComm::kAllGather;
  }
  if (t == "a2a" || t == "all-to-all" || t == "ulysses") {
    return CpComm::kAllToAll;
  }
  return InvalidArgument(
      "expected p2p (ring), allgather or a2a (Ulysses), "
      "got '" +
          std::string(text) + "'" +
          DidYouMean(t, {"p2p", "allgather", "a2a", "ring", "ulysses"}),
      "cp_comm");
}

Result<LoraTargets> ParseLoraTargets(std::string_view text) {
  std::string all = ToLower(Trim(text));
  if (all == "all") return LoraTargets{};
  if (all == "attention") return LoraTargets{true, true, false, false};
  if (all == "mlp") return LoraTargets{false, false, true, true};
  LoraTargets t{false, false, false, false};
  size_t start = 0;
  while (start <= all.size()) {
    size_t comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    const std::string part = all.substr(start, comma - start);
    const std::string name(Trim(part));
    if (name == "qkv" || name == "attention_qkv") {
      t.qkv = true;
    } else if (name == "proj" || name == "o" || name == "attention_dense") {
      t.proj = true;
    } else if (name == "fc1" || name == "mlp_fc1") {
      t.fc1 = true;
    } else if (name == "fc2" || name == "mlp_fc2") {
      t.fc2 = true;
    } else {
      return InvalidArgument(
          "expected all, attention, mlp or a comma list of qkv, proj, fc1, "
          "fc2, got '" +
              name + "'" +
              DidYouMean(name, {"all", "attention", "mlp", "qkv", "proj", "fc1",
                                "fc2"}),
          "lora_targets");
    }
    start = comma + 1;
  }
  return t;
}

std::string LoraTargetsName(const LoraTargets& t) {
  if (t == LoraTargets{}) return "all";
  std::string out;
  for (auto [on, name] : {std::pair{t.qkv, "qkv"}, std::pair{t.proj, "proj"},
                          std::pair{t.fc1, "fc1"}, std::pair{t.fc2, "fc2"}}) {
    if (!on) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out;
}

std::string_view Fp8RecipeName(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kDelayed:
      return "delayed";
    case Fp8Recipe::kTensorwise:
      return "tensorwise";
    case Fp8Recipe::kBlockwise:
      return "blockwise";
    case Fp8Recipe::kMxfp8:
      return "mxfp8";
    case Fp8Recipe::kRowwise:
      return "rowwise";
    case Fp8Recipe::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

Result<Fp8Recipe> ParseFp8Recipe(std::string_view text) {
  return ParseByName(
      text,
      {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kRowwise,
       Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8, Fp8Recipe::kNvfp4},
      Fp8RecipeName, "fp8_recipe");
}

double Fp8CastBytes(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kTensorwise:
    case Fp8Recipe::kRowwise:
      return 6.0;
    case Fp8Recipe::kNvfp4:
      return 3.0;
    default:
      return 4.0;
  }
}

std::string_view MfuBasisName(MfuBasis b) {
  return b == MfuBasis::kDtype ? "dtype" : "bf16";
}

Result<MfuBasis> ParseMfuBasis(std::string_view text) {
  return ParseByName(text, {MfuBasis::kBf16, MfuBasis::kDtype}, MfuBasisName,
                     "mfu_basis");
}

std::string Parallelism::ToString() const {
  std::string s;
  auto add = [&](const char* k, int v) {
    if (v > 1)
      s += (s.empty() ? "" : ",") + std::string(k) + "=" + std::to_string(v);
  };
  add("dp", dp);
  add("fsdp", fsdp);
  add("tp", tp);
  add("pp", pp);
  add("ep", ep);
  add("cp", cp);
  if (zero > 0)
    s += (s.empty() ? "" : ",") + std::string("zero=") + std::to_string(zero);
  return s.empty() ? "dp=1" : s;
}

namespace {

// The keys of a plan's degrees part ("dp=8,fsdp=256,tp=4,zero=1,sp=0").
const std::vector<std::string> kPlanDegreeKeys = {"dp", "fsdp", "tp",   "pp",
                                                  "ep", "cp",   "zero", "sp"};

// "sp=VALUE": sequence parallelism on or off.
Result<bool> ParseSequenceParallel(const std::string& value) {
  const std::string v = ToLower(value);
  if (v != "0" && v != "1" && v != "true" && v != "false" && v != "on" &&
      v != "off") {
    return InvalidArgument(
        "sp: expected 0, 1, true, false, on or off, got '" + value + "'",
        "plan");
  }
  return v == "1" || v == "true" || v == "on";
}

// "KEY=x.y": physical axis names (a letter, then letters, digits or '_').
Result<std::vector<std::string>> ParseAxes(const std::string& key,
                                           const std::string& value) {
  std::vector<std::string> axes = Split(value, '.');
  const bool names =
      std::all_of(axes.begin(), axes.end(), [](const std::string& a) {
        return !a.empty() && std::isalpha(static_cast<unsigned char>(a[0])) &&
               std::all_of(a.begin(), a.end(), [](char ch) {
                 return std::isalnum(static_cast<unsigned char>(ch)) ||
                        ch == '_';
               });
      });
  if (!names) {
    return InvalidArgument(key +
                               ": expected a positive degree or physical "
                               "axes such as x.y, got '" +
                               value + "'",
                           "plan");
  }
  return axes;
}

// The chip count in 64 bits: degrees of a million each would wrap an int.
Result<bool> CheckPlanSize(const Parallelism& p) {
  constexpr long long kMaxPlanChips = 1LL << 24;
  const long long chips =
      static_cast<long long>(p.dp) * p.fsdp * p.tp * p.pp * p.ep * p.cp;
  if (chips > kMaxPlanChips) {
    return InvalidArgument(
        "the degrees multiply to " + FormatNumber(static_cast<double>(chips)) +
            " chips, more than the 16777216 (2^24) a plan may span",
        "plan");
  }
  return true;
}

// An empty field between commas ("tp=8,,dp=1", "dp=8,"); a blank plan is
// the default.
Result<bool> CheckPlanFields(std::string_view text) {
  if (Trim(text).empty()) return true;
  for (const std::string& raw : Split(text, ',')) {
    if (!Trim(raw).empty()) continue;
    return InvalidArgument(
        "expected KEY=VALUE between every two commas such as "
        "'fsdp=256,tp=4', got an empty field in '" +
            Excerpt(std::string(Trim(text))) + "'",
        "plan");
  }
  return true;
}

}  // namespace

Result<Parallelism> ParsePlan(std::string_view text) {
  Parallelism p;
  std::vector<std::string> seen;
  if (auto ok = CheckPlanFields(text); !ok) return tl::unexpected(ok.error());
  for (const std::string& raw : Split(text, ',')) {
    std::string item(Trim(raw));
    if (item.empty()) continue;  // a blank plan: the default
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument(
          "expected KEY=VALUE such as 'fsdp=256,tp=4', got '" + item + "'",
          "plan");
    }
    std::string key = ToLower(Trim(item.substr(0, eq)));
    std::string value(Trim(item.substr(eq + 1)));
    if (std::find(kPlanDegreeKeys.begin(), kPlanDegreeKeys.end(), key) ==
        kPlanDegreeKeys.end()) {
      return InvalidArgument(
          "unknown key '" + key + "'" + DidYouMean(key, kPlanDegreeKeys) +
              "; expected dp, fsdp, tp, pp, ep, cp, zero or sp",
          "plan");
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return InvalidArgument(key + " is given twice in the plan", "plan");
    }
    seen.push_back(key);
    if (key == "sp") {
      auto sp = ParseSequenceParallel(value);
      if (!sp) return tl::unexpected(sp.error());
      p.sequence_parallel = *sp;
      continue;
    }
    bool numeric =
        !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        });
    if (!numeric) {
      if (key == "zero") {
        return InvalidArgument("zero: expected 0, 1 or 2, got '" + value + "'",
                               "plan");
      }
      auto axes = ParseAxes(key, value);
      if (!axes) return tl::unexpected(axes.error());
      p.axes[key] = std::move(*axes);
      continue;
    }
    long v = std::strtol(value.c_str(), nullptr, 10);
    if (key == "zero") {
      if (v > 2) {
        return InvalidArgument("zero=" + value +
                                   " is not a ZeRO level for dp: use 1 or 2 "
                                   "(ZeRO-3 is fsdp=N)",
                               "plan");
      }
      p.zero = static_cast<int>(v);
      continue;
    }
    if (v <= 0) {
      return InvalidArgument(key + "=" + value + " must be a positive degree",
                             "plan");
    }
    // strtol saturates at LONG_MAX, so an overlong value lands here too.
    if (v > 1000000) {
      return InvalidArgument(key +
                                 ": expected a degree of at most 1000000, "
                                 "got '" +
                                 Excerpt(value) + "'",
                             "plan");
    }
    int* slot = key == "dp"     ? &p.dp
                : key == "fsdp" ? &p.fsdp
                : key == "tp"   ? &p.tp
                : key == "pp"   ? &p.pp
                : key == "ep"   ? &p.ep
                                : &p.cp;
    *slot = static_cast<int>(v);
  }
  auto ok = CheckPlanSize(p);
  if (!ok) return tl::unexpected(ok.error());
  return p;
}

namespace {

// A whole number >= `min` for a plan-key field ("mb=2"), or a sentence.
Result<int> KeyCount(const std::string& key, const std::string& value, int min,
                     const char* what) {
  const bool digits = !value.empty() && value.size() <= 9 &&
                      std::all_of(value.begin(), value.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c));
                      });
  const long v = digits ? std::strtol(value.c_str(), nullptr, 10) : -1;
  if (v < min) {
    return InvalidArgument(key + ": expected " + what + ", got '" + value + "'",
                           "plan");
  }
  return static_cast<int>(v);
}

// "order=fsdp>tp>cp": the named parallelisms first, innermost first, then
// the others in the default order tp, cp, ep, fsdp, dp, pp (as the plan
// search builds its placement orders).
Result<std::vector<int>> ParseOrder(const std::string& value) {
  std::vector<std::string> names;
  names.reserve(kNumPar);
  for (int i = 0; i < kNumPar; ++i) names.emplace_back(ParName(i));
  std::vector<int> order;
  for (const std::string& raw : Split(value, '>')) {
    const std::string name = ToLower(Trim(raw));
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return InvalidArgument(
          "order: expected parallelisms such as "
          "fsdp>tp>dp (tp, cp, ep, fsdp, dp, pp), got '" +
              std::string(Trim(raw)) + "'" + DidYouMean(name, names),
          "plan");
    }
    const int index = static_cast<int>(it - names.begin());
    if (std::find(order.begin(), order.end(), index) != order.end()) {
      return InvalidArgument(
          "order: " + name + " is named twice in '" + value + "'", "plan");
    }
    order.push_back(index);
  }
  for (int i = 0; i < kNumPar; ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end())
      order.push_back(i);
  }
  return order;
}

// One field of a plan key after the degrees, applied to `c`; `seen`
// collects the field names so that none is given twice.
Result<void> ApplyKeyField(const std::string& field, TrainingConfig* c,
                           std::vector<std::string>* seen, bool* vpp_given) {
  const size_t eq = field.find('=');
  const std::string key = ToLower(field.substr(0, eq));
  const std::string value =
      eq == std::string::npos ? "" : std::string(Trim(field.substr(eq + 1)));
  const bool is_schedule =
      eq == std::string::npos && ParseSchedule(key).has_value();
  const std::string slot = is_schedule               ? "schedule"
                           : key == "offload-params" ? "offload"
                                                     : key;
  if (key == "offload-acts" && eq == std::string::npos &&
      std::find(seen->begin(), seen->end(), key) == seen->end()) {
    seen->push_back(key);
    c->memory.offload_activations = true;
    return {};
  }
  if (std::find(seen->begin(), seen->end(), slot) != seen->end()) {
    return InvalidArgument(
        (slot == "schedule" || slot == "offload" ? "the " + slot : slot) +
            " is given twice in the plan",
        "plan");
  }
  seen->push_back(slot);
  if (is_schedule) {
    c->layout.schedule = *ParseSchedule(key);
  } else if (key == "offload" || key == "offload-params") {
    if (eq != std::string::npos) {
      return InvalidArgument(
          key +
              " takes no value: write 'offload' (optimizer state in host "
              "memory) or 'offload-params' (parameters too), got '" +
              field + "'",
          "plan");
    }
    c->memory.offload_optimizer = true;
    c->memory.offload_params = key == "offload-params";
  } else if (key == "mb" && eq != std::string::npos) {
    auto mb = KeyCount(key, value, 1, "a positive number of sequences");
    if (!mb) return tl::unexpected(mb.error());
    c->layout.micro_batch = *mb;
  } else if (key == "vpp" && eq != std::string::npos) {
    auto vpp = KeyCount(key, value, 1,
                        "a positive number of virtual stages per device");
    if (!vpp) return tl::unexpected(vpp.error());
    c->layout.vpp = *vpp;
    *vpp_given = true;
  } else if (key == "last" && eq != std::string::npos) {
    auto last = KeyCount(key, value, 0,
                         "the layers on the last pipeline stage (0: the "
                         "default)");
    if (!last) return tl::unexpected(last.error());
    c->layout.last_stage_layers = *last;
  } else if (key == "remat" && eq != std::string::npos) {
    auto remat = model::ParseRemat(value);
    if (!remat) {
      return InvalidArgument("remat: " + remat.error().message, "plan");
    }
    c->memory.remat = *remat;
  } else if (key == "order" && eq != std::string::npos) {
    auto order = ParseOrder(value);
    if (!order) return tl::unexpected(order.error());
    c->layout.placement_order = *order;
  } else {
    static const std::vector<std::string> kFields = {
        "mb",      "remat",          "vpp",         "last",
        "order",   "1f1b",           "gpipe",       "interleaved",
        "offload", "offload-params", "offload-acts"};
    return InvalidArgument(
        "unknown field '" + field + "'" + DidYouMean(key, kFields) +
            "; after the degrees a plan takes mb=N, remat=NAME, 1f1b, gpipe "
            "or interleaved, vpp=N, last=N, offload or offload-params, "
            "offload-acts and order=A>B>..",
        "plan");
  }
  return {};
}

// Whether a space-separated token of a plan key is a field after the
// degrees ("mb=2", "1f1b", "offload") rather than the degrees themselves.
bool IsKeyField(const std::string& token) {
  const std::string key = ToLower(token.substr(0, token.find('=')));
  return std::find(kPlanDegreeKeys.begin(), kPlanDegreeKeys.end(), key) ==
         kPlanDegreeKeys.end();
}

}  // namespace

Result<void> ParsePlanKey(std::string_view text, TrainingConfig* config) {
  TrainingConfig c = *config;
  std::vector<std::string> tokens;
  for (const std::string& t : Split(text, ' ')) {
    if (!Trim(t).empty()) tokens.emplace_back(Trim(t));
  }
  bool degrees_given = false;
  bool vpp_given = false;
  std::vector<std::string> seen;
  for (const std::string& token : tokens) {
    if (!IsKeyField(token)) {
      if (degrees_given) {
        return InvalidArgument(
            "the degrees are given twice; write them once, comma-separated "
            "('dp=2,fsdp=16 mb=1'), got '" +
                token + "'",
            "plan");
      }
      degrees_given = true;
      auto par = ParsePlan(token);
      if (!par) return tl::unexpected(par.error());
      c.par = *par;
      continue;
    }
    auto ok = ApplyKeyField(token, &c, &seen, &vpp_given);
    if (!ok) return tl::unexpected(ok.error());
  }
  if (!degrees_given) {
    return InvalidArgument(
        "expected the degrees first, such as 'fsdp=256,tp=4 mb=1', got '" +
            std::string(Trim(text)) + "'",
        "plan");
  }
  const bool schedule_given =
      std::find(seen.begin(), seen.end(), "schedule") != seen.end();
  if (vpp_given && c.layout.vpp > 1 && c.par.pp < 2) {
    return InvalidArgument("vpp=" + std::to_string(c.layout.vpp) +
                               " needs pipeline stages (pp >= 2), got pp=" +
                               std::to_string(c.par.pp),
                           "plan");
  }
  if (vpp_given && c.layout.vpp > 1) {
    if (schedule_given && c.layout.schedule != Schedule::kInterleaved) {
      return InvalidArgument("vpp=" + std::to_string(c.layout.vpp) +
                                 " needs the interleaved schedule, got '" +
                                 std::string(ScheduleName(c.layout.schedule)) +
                                 "'",
                             "plan");
    }
    c.layout.schedule = Schedule::kInterleaved;
  } else if (schedule_given && !vpp_given &&
             c.layout.schedule != Schedule::kInterleaved) {
    c.layout.vpp = 1;
  }
  *config = std::move(c);
  return {};
}

namespace {

// A whole number with thousands separators ("4,001,792").
std::string Grouped(double value) {
  std::string digits = FormatNumber(value);
  if (!std::all_of(digits.begin(), digits.end(), [](char ch) {
        return std::isdigit(static_cast<unsigned char>(ch));
      })) {
    return digits;
  }
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::optional<std::string> RoundBatchToSequences(TrainingConfig* config) {
  TrainingConfig& c = *config;
  if (!(c.seq > 0) || !(c.batch_tokens > 0) || !std::isfinite(c.batch_tokens) ||
      std::floor(c.seq) != c.seq || c.seq > 1e12) {
    return std::nullopt;
  }
  const double seqs = c.batch_tokens / c.seq;
  const double whole = std::round(seqs);
  if (whole == seqs || whole < 1 || whole > 1e12) return std::nullopt;
  std::string note =
      "batch of " + Grouped(c.batch_tokens) + " tokens rounded to " +
      Grouped(whole) + (whole == 1 ? " sequence of " : " sequences of ") +
      Grouped(c.seq) + " = " + Grouped(whole * c.seq) + " tokens";
  c.batch_tokens = whole * c.seq;
  return note;
}

Result<int> MicroBatchFor(const hw::System& sys, const TrainingConfig& cfg,
                          int microbatches) {
  if (microbatches <= 0) {
    return InvalidArgument("expected a positive number of microbatches",
                           "microbatches");
  }
  Parallelism par = cfg.par;
  auto placement = Place(par, sys, cfg);
  if (!placement) return tl::unexpected(placement.error());
  const double replicas = static_cast<double>(par.dp) * par.fsdp * par.ep;
  const double per_replica = std::floor(cfg.batch_tokens / cfg.seq) / replicas;
  if (per_replica < 1 || std::fmod(per_replica, 1.0) != 0 ||
      std::fmod(per_replica, microbatches) != 0) {
    std::string counts;
    for (int k = 1; k <= per_replica && counts.size() < 40; ++k) {
      if (std::fmod(per_replica, k) == 0) {
        counts += (counts.empty() ? "" : ", ") + std::to_string(k);
      }
    }
    return InvalidArgument(
        std::to_string(microbatches) + " microbatches do not split the " +
            FormatNumber(per_replica) + " sequences per replica" +
            (counts.empty() ? "" : " (try " + counts + ")"),
        "microbatches");
  }
  return static_cast<int>(per_replica / microbatches);
}

bool SplitsSequences(const TrainingConfig& cfg) {
  const Parallelism& par = cfg.par;
  const double replicas = static_cast<double>(par.dp) * par.fsdp * par.ep;
  return cfg.seq > 0 && cfg.batch_tokens / cfg.seq < replicas;
}

double MicrobatchTokens(const TrainingConfig& cfg) {
  const Parallelism& par = cfg.par;
  if (SplitsSequences(cfg)) {
    return cfg.batch_tokens /
           (static_cast<double>(par.dp) * par.fsdp * par.ep * par.cp);
  }
  return cfg.layout.micro_batch * cfg.seq / par.cp;
}

PlanFault FindPlanFault(const model::ModelSpec& m, const hw::System& sys,
                        const TrainingConfig& cfg) {
  const Parallelism& par = cfg.par;
  if (par.product() != sys.num_chips()) return PlanFault::kChipCount;
  if (m.num_heads % par.tp != 0) return PlanFault::kTpHeads;
  if (cfg.layout.last_stage_layers > 0) {
    if (par.pp < 2) return PlanFault::kLastStageWithoutPp;
    if (cfg.layout.last_stage_layers >= m.num_layers ||
        m.num_layers - cfg.layout.last_stage_layers < par.pp - 1) {
      return PlanFault::kLastStageRange;
    }
  }
  if (cfg.habits.cp_comm == CpComm::kAllToAll && par.cp > 1 &&
      m.num_heads % (par.tp * par.cp) != 0) {
    return PlanFault::kUlyssesHeads;
  }
  if (par.pp > m.num_layers) return PlanFault::kPpLayers;
  if (par.ep > 1 && !m.is_moe()) return PlanFault::kEpDense;
  if (m.is_moe() && m.moe.num_experts % par.ep != 0) {
    return PlanFault::kEpExperts;
  }
  if (!(cfg.seq > 0) || !(cfg.batch_tokens > 0)) return PlanFault::kNoBatch;
  if (std::fmod(cfg.seq, par.cp) != 0) return PlanFault::kCpSeq;
  const double seqs = cfg.batch_tokens / cfg.seq;
  if (std::floor(seqs) != seqs) return PlanFault::kPartialSequence;
  const int replicas = par.dp * par.fsdp * par.ep;
  if (SplitsSequences(cfg)) {
    return cfg.layout.micro_batch == 1 ? PlanFault::kNone
                                       : PlanFault::kMicroBatch;
  }
  if (std::fmod(seqs, replicas) != 0) return PlanFault::kBatchReplicas;
  if (cfg.layout.micro_batch <= 0 ||
      std::fmod(seqs / replicas, cfg.layout.micro_batch) != 0) {
    return PlanFault::kMicroBatch;
  }
  const int vpp = cfg.layout.schedule == Schedule::kInterleaved
                      ? std::max(1, cfg.layout.vpp)
                      : 1;
  // In 64 bits: --vpp may be any int (2^31 - 1 x pp wrapped negative).
  if (static_cast<int64_t>(par.pp) * vpp > m.num_layers) {
    return PlanFault::kVirtualStages;
  }
  if (sys.chip.Peak(cfg.precision.matmul).si() <= 0)
    return PlanFault::kNoMatrixRate;
  return PlanFault::kNone;
}

namespace {

Error Bad(std::string message, std::string where) {
  return Error{ErrorCode::kInvalidArgument, std::move(message),
               std::move(where)};
}

// The sentence for a fault in the degrees against the model and system.
Error DegreeFault(PlanFault fault, const model::ModelSpec& m,
                  const hw::System& sys, const TrainingConfig& cfg) {
  const Parallelism& par = cfg.par;
  const int chips = sys.num_chips();
  switch (fault) {
    case PlanFault::kChipCount:
      return Bad("dp*fsdp*tp*pp*ep*cp = " + std::to_string(par.product()) +
                     " (" + par.ToString() + ") but " + sys.id + " has " +
                     std::to_string(chips) + " chips",
                 "plan");
    case PlanFault::kTpHeads:
      return Bad(
          "tensor_parallel=" + std::to_string(par.tp) +
              " does not divide num_heads=" + std::to_string(m.num_heads),
          "plan");
    case PlanFault::kLastStageWithoutPp:
      return Bad(
          "a last-stage layer count needs pipeline parallelism (pp >= 2)",
          "last_stage_layers");
    case PlanFault::kLastStageRange:
      return Bad("the other " + std::to_string(par.pp - 1) +
                     " stages need at least a layer each: expected 1 to " +
                     std::to_string(m.num_layers - par.pp + 1) + " of " +
                     std::to_string(m.num_layers) + " layers, got " +
                     std::to_string(cfg.layout.last_stage_layers),
                 "last_stage_layers");
    case PlanFault::kUlyssesHeads:
      return Bad(
          "a2a (Ulysses) context parallelism splits the heads: tp x cp = " +
              std::to_string(par.tp * par.cp) +
              " does not divide num_heads=" + std::to_string(m.num_heads) +
              "; use p2p or allgather context-parallel communication",
          "plan");
    case PlanFault::kPpLayers:
      return Bad("pipeline_parallel=" + std::to_string(par.pp) +
                     " is more than the model's " +
                     std::to_string(m.num_layers) + " layers",
                 "plan");
    case PlanFault::kEpDense:
      return Bad("expert_parallel=" + std::to_string(par.ep) +
                     " needs a mixture-of-experts model; " + m.id + " is dense",
                 "plan");
    case PlanFault::kEpExperts:
      return Bad("expert_parallel=" + std::to_string(par.ep) +
                     " does not divide num_experts=" +
                     std::to_string(m.moe.num_experts),
                 "plan");
    default:
      break;
  }
  return Error{};
}

// The sentence for a fault in the batch, micro batch, stages or precision.
Error BatchFault(PlanFault fault, const model::ModelSpec& m,
                 const hw::System& sys, const TrainingConfig& cfg) {
  const Parallelism& par = cfg.par;
  const double seqs = cfg.batch_tokens / cfg.seq;
  const int replicas = par.dp * par.fsdp * par.ep;
  switch (fault) {
    case PlanFault::kNoBatch:
      return Bad("expected a positive sequence length and batch",
                 "batch_tokens");
    case PlanFault::kCpSeq:
      return Bad("context_parallel=" + std::to_string(par.cp) +
                     " does not divide the sequence of " +
                     FormatNumber(cfg.seq) + " tokens",
                 "plan");
    case PlanFault::kPartialSequence: {
      double lo = std::max(1.0, std::floor(seqs));
      return Bad("a batch of " + FormatNumber(cfg.batch_tokens) +
                     " tokens is not a whole number of " +
                     FormatNumber(cfg.seq) + "-token sequences (try " +
                     FormatNumber(lo * cfg.seq) + " = " + FormatNumber(lo) +
                     "x" + FormatNumber(cfg.seq) +
                     "; binary suffixes such as 4Mi give powers of two)",
                 "batch_tokens");
    }
    case PlanFault::kBatchReplicas:
      return Bad("the batch of " + FormatNumber(seqs) +
                     " sequences does not split over dp*fsdp*ep = " +
                     std::to_string(replicas) + " replicas",
                 "batch_tokens");
    case PlanFault::kMicroBatch:
      return Bad("micro batch of " + std::to_string(cfg.layout.micro_batch) +
                     " sequences does not divide the " +
                     FormatNumber(seqs / replicas) + " sequences per replica",
                 "micro_batch");
    case PlanFault::kVirtualStages:
      return Bad("pp*vpp = " +
                     std::to_string(static_cast<int64_t>(par.pp) *
                                    std::max(1, cfg.layout.vpp)) +
                     " virtual stages but only " +
                     std::to_string(m.num_layers) + " layers",
                 "vpp");
    case PlanFault::kNoMatrixRate:
      return Bad(sys.chip.id + " has no " +
                     std::string(hw::DtypeName(cfg.precision.matmul)) +
                     " matrix rate",
                 "precision");
    default:
      break;
  }
  return Error{};
}

}  // namespace

Result<bool> CheckPlan(const model::ModelSpec& m, const hw::System& sys,
                       const TrainingConfig& cfg) {
  const PlanFault fault = FindPlanFault(m, sys, cfg);
  if (fault == PlanFault::kNone) return true;
  Error e = fault < PlanFault::kNoBatch ? DegreeFault(fault, m, sys, cfg)
                                        : BatchFault(fault, m, sys, cfg);
  return tl::unexpected(e);
}

namespace {

// Where each parallelism sits: "x.y(2/4)" and its degree inside and across
// the fast domain.
void DescribeLayout(const hw::System& sys, const Placements& placements,
                    TrainingEstimate* est) {
  for (int i = 0; i < kNumPar; ++i) {
    const Placement& p = placements[i];
    if (p.axes.empty()) continue;
    std::string desc;
    TrainingEstimate::DomainSplit split;
    for (size_t k = 0; k < p.axes.size(); ++k) {
      const hw::PhysicalAxis& a = sys.axes[p.axes[k]];
      const bool slow =
          a.kind == hw::AxisKind::kDcn || a.kind == hw::AxisKind::kScaleOut;
      (slow ? split.slow : split.fast) *= p.sizes[k];
      desc += (desc.empty() ? "" : ".") + a.name +
              (p.sizes[k] < a.size ? "(" + std::to_string(p.sizes[k]) + "/" +
                                         std::to_string(a.size) + ")"
                                   : "");
    }
    est->layout[ParName(i)] = desc;
    est->layout_split[ParName(i)] = split;
  }
}

// The core's numbers as the report's: step and its parts, the comms list,
// the per-layer split, memory.
void DescribeCore(const hw::System& sys, const Placements& placements,
                  const ModelConsts& mc, const CoreResult& r,
                  TrainingEstimate* est) {
  for (const CollSlot& slot : kCollSlots) {
    const int i = slot.slot;
    if (r.coll_calls[i] <= 0 || r.coll_time[i] <= 0) continue;
    CommItem c;
    c.kind = std::string(net::CollectiveName(slot.op));
    c.parallelism = slot.label;
    for (int ax : SlotPlacement(slot, placements).axes) {
      c.axes.push_back(sys.axes[ax].name);
    }
    c.bytes = Bytes(r.coll_bytes[i]);
    c.calls = r.coll_calls[i];
    c.time = Seconds(r.coll_time[i]);
    c.exposed = Seconds(r.coll_exposed[i]);
    est->comms.push_back(c);
  }
  TrainingEstimate::LayerTimes& pl = est->per_layer;
  pl.matmul = Seconds(r.layer_matmul);
  pl.attention = Seconds(r.layer_attention);
  pl.elementwise = Seconds(r.layer_elem);
  pl.recompute = Seconds(r.layer_recompute);
  pl.total = Seconds(r.layer_matmul + r.layer_attention + r.layer_elem +
                     r.layer_recompute);
  pl.output_and_loss = Seconds(r.head);
  pl.layers_per_stage = r.stage_layers;
  pl.last_stage_layers = r.last_stage_layers;
  pl.mtp_modules = static_cast<int>(mc.mtp);
  pl.last_stage_paces = r.last_stage_paces;
  est->step_time = Seconds(r.step);
  est->compute = Seconds(r.compute);
  est->exposed_comm = Seconds(r.exposed);
  est->bubble = Seconds(r.bubble);
  est->other = Seconds(r.other);
  MemoryBreakdown& mem = est->memory;
  mem.params = Bytes(r.params);
  mem.grads = Bytes(r.grads);
  mem.optimizer = Bytes(r.optimizer);
  mem.activations = Bytes(r.activations);
  mem.other = Bytes(r.reserve);
  mem.total = Bytes(r.total_mem);
  mem.capacity = sys.chip.hbm_capacity;
  est->feasible = r.feasible;
  if (!r.feasible) {
    const double headroom = r.headroom;
    est->reason =
        "needs " + units::FormatBytes(mem.total) + " HBM per chip, has " +
        units::FormatBytes(mem.capacity) +
        (headroom > 0 ? fmt::format(" ({} after the {:.0f}% headroom)",
                                    units::FormatBytes(units::Bytes(
                                        mem.capacity.si() * (1 - headroom))),
                                    100 * headroom)
                      : std::string()) +
        " (" + "params " + units::FormatBytes(mem.params) + ", grads " +
        units::FormatBytes(mem.grads) + ", optimizer " +
        units::FormatBytes(mem.optimizer) + ", activations " +
        units::FormatBytes(mem.activations) + ")";
  }
}

// The notes that explain the step's own numbers: an assumed MFU, offload.
void CoreNotes(const hw::System& sys, const TrainingConfig& cfg,
               const CoreResult& r, TrainingEstimate* est) {
  if (std::string n = BorrowedEfficiencyNote(sys.chip);
      cfg.mode != Mode::kPeak && !n.empty()) {
    est->notes.push_back(n);
  }
  if (std::string n = PowerCapNote(sys.chip);
      cfg.mode != Mode::kPeak && !n.empty()) {
    est->notes.push_back(n);
  }
  if (cfg.assume_mfu > 0) {
    est->notes.push_back("step time from an assumed MFU of " +
                         FormatNumber(cfg.assume_mfu) +
                         "; memory and communication are still checked");
  }
  if (cfg.memory.offload_activations) {
    est->notes.push_back(fmt::format(
        "saved activations in host memory: {} of transfers each way over the "
        "host link ({} per direction at 85%) per step, prefetched under the "
        "compute; two layers' worth stay on the chip",
        FormatSeconds(Seconds(r.act_offload_time)),
        FormatBandwidth(sys.chip.pcie_bandwidth)));
  }
  if (cfg.memory.offload_params || cfg.memory.offload_optimizer) {
    const bool host_known = sys.chip.host_memory_bandwidth.si() > 0;
    est->notes.push_back(fmt::format(
        "{} in host memory: {} of PCIe transfers per step{}; {}",
        cfg.memory.offload_params ? "parameters, gradients and optimizer state"
                                  : "optimizer state",
        FormatSeconds(Seconds(r.pcie_time)),
        cfg.memory.offload_params ? ", prefetched under the compute"
                                  : ", after the backward pass",
        host_known
            ? fmt::format("the host's Adam step takes {} at the chip's share "
                          "of its host's peak memory bandwidth ({}; a lower "
                          "bound)",
                          FormatSeconds(Seconds(r.other)),
                          FormatBandwidth(sys.chip.host_memory_bandwidth))
            : "the host's Adam step (about 30 bytes of host-memory traffic "
              "per parameter a chip owns) is not costed: the catalog has no "
              "host memory bandwidth for " +
                  sys.chip.id));
  }
}

// FLOPs, throughput, MFU/HFU, time and cost to train.
void Throughput(const hw::Chip& chip, const TrainingConfig& cfg,
                const ModelConsts& mc, double step, int chips,
                TrainingEstimate* est) {
  double C_bf16 = chip.Peak(hw::Dtype::kBf16).si();
  if (cfg.precision.mfu_basis == MfuBasis::kDtype &&
      chip.Peak(cfg.precision.matmul).si() > 0) {
    C_bf16 = chip.Peak(cfg.precision.matmul).si();
  }
  est->model_flops_per_step = mc.model_flops_per_token * cfg.batch_tokens;
  est->hardware_flops_per_step =
      (mc.model_flops_per_token +
       mc.recompute_flops_per_token[static_cast<int>(cfg.memory.remat)]) *
      cfg.batch_tokens;
  est->tokens_per_s = cfg.batch_tokens / step;
  est->tokens_per_s_per_chip = est->tokens_per_s / chips;
  est->model_flops_per_s_per_chip = est->model_flops_per_step / step / chips;
  est->mfu = est->model_flops_per_s_per_chip / C_bf16;
  est->hfu = est->hardware_flops_per_step / step / chips / C_bf16;
  // MFU (or, when only it exceeds 1, HFU) above 100%: the ratio is stated
  // against the bf16 peak while the matmuls run faster.
  if (est->mfu > 1 || est->hfu > 1) {
    const bool mfu = est->mfu > 1;
    est->notes.push_back(fmt::format(
        "{} {:.0f}% is above 100% because it is stated against the bf16 "
        "peak while the matmuls run in {} at up to {:.0f}x that rate; "
        "--mfu-basis dtype states it against the {} peak",
        mfu ? "MFU" : "HFU", 100 * (mfu ? est->mfu : est->hfu),
        hw::DtypeName(cfg.precision.matmul),
        chip.Peak(cfg.precision.matmul).si() / C_bf16,
        hw::DtypeName(cfg.precision.matmul)));
  }
  if (cfg.tokens > 0) {
    double steps = cfg.tokens / cfg.batch_tokens;
    est->time_to_train_s = steps * step;
    est->chip_hours = est->time_to_train_s * chips / 3600;
    const double price = hw::PricePerChipHour(chip, cfg.price_per_chip_hour);
    est->cost_usd = price > 0 ? est->chip_hours * price
                              : std::numeric_limits<double>::quiet_NaN();
  }
}

// What binds: memory capacity when it does not fit, else the largest of
// matrix compute, exposed communication, bubble and memory-bound work.
std::string Bottleneck(const CoreResult& r) {
  if (!r.feasible) return "memory-capacity";
  struct Cand {
    const char* name;
    double t;
  };
  Cand c[] = {{"compute", r.compute - (r.elem_total - r.other)},
              {"communication", r.exposed},
              {"bubble", r.bubble},
              {"memory-bandwidth", r.elem_total}};
  return std::max_element(
             std::begin(c), std::end(c),
             [](const Cand& a, const Cand& b) { return a.t < b.t; })
      ->name;
}

// The book's memory floor for this job: weights for every parameter,
// gradients and optimizer state for the trained ones, against the HBM the
// runtime leaves.
MemoryFloor FloorOf(const hw::Chip& chip, const TrainingConfig& cfg,
                    const ModelConsts& mc) {
  const StateBytes sb = TrainingStateBytes(cfg.mode, cfg.memory);
  const double trained = mc.lora ? mc.adapter_params : mc.total_params;
  return MinChipsByMemory(
      sb.weights * mc.total_params + (sb.grads + sb.optimizer) * trained,
      mc.act_bytes_per_token_layer[static_cast<int>(cfg.memory.remat)],
      mc.layers + mc.mtp, cfg.batch_tokens,
      chip.hbm_capacity.si() * (1 - sb.reserve_fraction));
}

// Effective all-gather bandwidth over the given axes at their full sizes
// (peak mode, bandwidth part only); 0 without axes of size > 1.
double BandwidthOn(const hw::System& sys, const std::vector<int>& axes) {
  std::vector<int> sizes;
  std::vector<int> used;
  for (int a : axes) {
    if (sys.axes[a].size > 1) {
      used.push_back(a);
      sizes.push_back(sys.axes[a].size);
    }
  }
  if (used.empty()) return 0;
  const double v = 1e12;
  auto c = net::EstimateOnAxes(sys, net::Collective::kAllGather, Bytes(v), used,
                               sizes, {net::Mode::kPeak});
  return c.bandwidth_time.si() > 0 ? v / c.bandwidth_time.si() : 0;
}

// The same over a parallelism's placement; 0 when it is not placed.
double BandwidthOf(const hw::System& sys, const Placement& p) {
  if (p.axes.empty()) return 0;
  const double v = 1e12;  // large: the bandwidth part only
  auto c = net::EstimateOnAxes(sys, net::Collective::kAllGather, Bytes(v),
                               p.axes, p.sizes, {net::Mode::kPeak});
  return c.bandwidth_time.si() > 0 ? v / c.bandwidth_time.si() : 0;
}

// The book's critical batch sizes from the bandwidth each strategy's
// collectives get here. Where the plan does not use a strategy, its
// threshold is still shown for the system: data parallelism over every ICI
// axis (TPU) or the whole system (GPU), tensor parallelism on the innermost
// axis.
CriticalBatches CriticalFor(const model::ModelSpec& m, const hw::System& sys,
                            const TrainingConfig& cfg,
                            const Placements& placements) {
  CriticalBatches cb;
  const double C = sys.chip.Peak(cfg.precision.matmul).si();
  const int chips = sys.num_chips();
  std::vector<int> all_scale_up, inner;
  for (size_t a = 0; a < sys.axes.size(); ++a) {
    if (sys.axes[a].kind != hw::AxisKind::kDcn)
      all_scale_up.push_back(static_cast<int>(a));
  }
  for (size_t a = 0; a < sys.axes.size() && inner.empty(); ++a) {
    if (sys.axes[a].size > 1) inner.push_back(static_cast<int>(a));
  }
  double w_data = std::max(BandwidthOf(sys, placements[kFsdp]),
                           BandwidthOf(sys, placements[kDp]));
  if (w_data <= 0) w_data = BandwidthOn(sys, all_scale_up);
  if (w_data > 0) cb.data_parallel = cb.fsdp = C / w_data;
  double w_tp = BandwidthOf(sys, placements[kTp]);
  if (w_tp <= 0) w_tp = BandwidthOn(sys, inner);
  double f_eff = m.is_moe() ? m.moe.expert_ffn : m.ffn;
  if (w_tp > 0) cb.tensor_parallel_max = f_eff * w_tp / C;
  // FSDP x TP needs disjoint axes: without TP in the plan, TP takes the
  // innermost axis and FSDP the rest.
  double w_data_tp = w_data;
  if (BandwidthOf(sys, placements[kTp]) <= 0) {
    std::vector<int> rest;
    for (int a : all_scale_up) {
      if (inner.empty() || a != inner[0]) rest.push_back(a);
    }
    w_data_tp = BandwidthOn(sys, rest);
  }
  if (w_data_tp > 0 && w_tp > 0) {
    cb.fsdp_tp = C * C / (w_data_tp * w_tp * f_eff);
    cb.fsdp_tp_x_opt =
        std::sqrt(chips * cfg.batch_tokens / f_eff * w_data_tp / w_tp);
  }
  const hw::PhysicalAxis* dcn = sys.FindAxis("dcn");
  if (dcn && dcn->size > 1) cb.dcn_per_slice = C / dcn->bandwidth.si();
  return cb;
}

// The FSDP x TP part of the critical-batch note. The book's X_opt is
// continuous ("TP 2.6", "TP 0.4"); the note gives the nearest whole
// power-of-two degrees and X_opt itself.
std::string FsdpTpText(const CriticalBatches& cb, int chips) {
  if (cb.fsdp_tp <= 0) return "FSDP x TP not applicable (one axis)";
  const double tp_opt = chips / cb.fsdp_tp_x_opt;
  const int tp_whole =
      tp_opt <= 1
          ? 1
          : std::min(chips,
                     1 << static_cast<int>(std::lround(std::log2(tp_opt))));
  return fmt::format(
      "FSDP x TP {:.0f} tokens per chip (for this batch {}; the book's "
      "X_opt = {:.0f})",
      cb.fsdp_tp,
      tp_whole == 1 ? std::string("FSDP alone is best")
                    : fmt::format("the best whole split is FSDP {} x TP {}",
                                  chips / tp_whole, tp_whole),
      cb.fsdp_tp_x_opt);
}

// Notes that compare the plan with the book's thresholds: data / FSDP
// (x TP) batch per chip, the critical batches, the TP degree, the memory
// floor, the batch per slice across DCN.
void ThresholdNotes(const hw::System& sys, const TrainingConfig& cfg,
                    TrainingEstimate* est) {
  const Parallelism& par = cfg.par;
  const CriticalBatches& cb = est->critical;
  const int chips = sys.num_chips();
  const double tokens_per_data_chip =
      cfg.batch_tokens / (par.dp * par.fsdp * par.ep * par.cp);
  if ((par.fsdp > 1 || par.dp > 1) && cb.data_parallel > 0) {
    const char* what = par.fsdp > 1 ? "FSDP" : "data parallelism";
    double need = par.tp > 1 && cb.fsdp_tp > 0 ? cb.fsdp_tp : cb.data_parallel;
    double have = par.tp > 1 ? cfg.batch_tokens / chips : tokens_per_data_chip;
    bool bound = have < need;
    est->notes.push_back(fmt::format(
        "{}{} is {} here: {:.0f} tokens per chip, {} {:.0f} on {} ({})", what,
        par.tp > 1 ? " x TP" : "",
        bound ? "communication-bound" : "compute-bound", have,
        bound ? "needs more than" : "above the threshold of", need, sys.id,
        par.tp > 1 ? "the book's B/N > alpha^2 / (M_X M_Y F)"
                   : "the book's B/X > C / W"));
  }
  // Below 2-way, F W / C says no tensor-parallel degree stays
  // compute-bound; "up to 0.2-way" would read as nonsense.
  std::string tp_text =
      cb.tensor_parallel_max >= 2
          ? fmt::format("tensor parallel up to {:.1f}-way",
                        cb.tensor_parallel_max)
          : fmt::format(
                "tensor parallel not compute-bound at any degree "
                "(F W / C = {:.2f} < 2)",
                cb.tensor_parallel_max);
  // FSDP x TP needs an axis for each; a system with one has no threshold.
  const std::string fsdp_tp_text = FsdpTpText(cb, chips);
  est->notes.push_back(fmt::format(
      "the book's critical batches on {}: data parallel / FSDP {:.0f} tokens "
      "per chip, {}, {}{}",
      sys.id, cb.data_parallel, tp_text, fsdp_tp_text,
      cb.dcn_per_slice > 0 ? fmt::format(", {:.0f} tokens per slice across DCN",
                                         cb.dcn_per_slice)
                           : std::string()));
  if (par.tp > 1 && cb.tensor_parallel_max > 0) {
    est->notes.push_back(fmt::format(
        "tensor parallelism {} {} the largest compute-bound degree F W / C = "
        "{:.1f} on its axes",
        par.tp, par.tp <= cb.tensor_parallel_max ? "is within" : "exceeds",
        cb.tensor_parallel_max));
  }
  const MemoryFloor& f = est->memory_floor;
  est->notes.push_back(fmt::format(
      "memory floor (the book's): with the whole batch in one pass the job "
      "holds {} ({} of parameters, gradients and optimizer state, {} of "
      "saved activations at remat {}), at least {:.0f} chips of {} however "
      "it is sharded; gradient accumulation shrinks the activation part",
      units::FormatBytes(Bytes(f.state_bytes + f.activation_bytes)),
      units::FormatBytes(Bytes(f.state_bytes)),
      units::FormatBytes(Bytes(f.activation_bytes)),
      model::RematName(cfg.memory.remat), f.min_chips,
      units::FormatBytes(sys.chip.hbm_capacity)));
  if (cb.dcn_per_slice > 0) {
    double per_slice = cfg.batch_tokens / sys.FindAxis("dcn")->size;
    est->notes.push_back(fmt::format(
        "across slices: {:.0f} tokens per slice vs the DCN threshold C / W_dcn "
        "= {:.0f}",
        per_slice, cb.dcn_per_slice));
  }
}

// Notes on the layout's structure: pipeline stages and bubble, LoRA, token
// dropping.
void StructureNotes(const model::ModelSpec& m, const TrainingConfig& cfg,
                    const ModelConsts& mc, TrainingEstimate* est) {
  const Parallelism& par = cfg.par;
  if (par.pp > 1) {
    // The stage that sets the pace: the busiest (ceil(L / pp) layers), or
    // the last, which holds what the others leave plus the output layer
    // and loss (docs/model.md 5.4).
    const TrainingEstimate::LayerTimes& pl = est->per_layer;
    const int mtp = pl.mtp_modules;
    est->notes.push_back(fmt::format(
        "pipeline stages: {} layers over {} stages, {} on each but the last "
        "and {} plus the output layer and loss{} ({}) on the last; the {} "
        "the pace{}",
        m.num_layers, par.pp, pl.layers_per_stage, pl.last_stage_layers,
        mtp > 0 ? fmt::format(" and {} MTP module{}", mtp, mtp > 1 ? "s" : "")
                : "",
        FormatSeconds(pl.output_and_loss),
        pl.last_stage_paces ? "last sets" : "others set",
        pl.last_stage_paces && pl.last_stage_layers > 1 &&
                cfg.layout.last_stage_layers == 0
            ? " (a lighter last stage, Megatron's "
              "--decoder-last-pipeline-num-layers, can give it fewer)"
            : ""));
  }
  if (mc.lora) {
    est->notes.push_back(fmt::format(
        "LoRA rank {}: {} adapter parameters ({:.2f}% of the model) get "
        "gradients and optimizer state; the frozen base skips its "
        "weight-gradient GEMMs (MFU counts forward + input gradients)",
        cfg.lora_rank, units::FormatCount(mc.adapter_params),
        100 * mc.adapter_params / mc.total_params));
  }
  if (m.is_moe() && cfg.habits.capacity_factor > 0) {
    est->notes.push_back(fmt::format(
        "token dropping at capacity factor {}: experts padded to {}x their "
        "share, plus one-hot dispatch and combine (not in model FLOPs)",
        FormatNumber(cfg.habits.capacity_factor),
        FormatNumber(cfg.habits.capacity_factor)));
  }
  if (par.pp > 1) {
    const int vpp = cfg.layout.schedule == Schedule::kInterleaved
                        ? std::max(1, cfg.layout.vpp)
                        : 1;
    est->notes.push_back(fmt::format(
        "pipeline bubble {:.1f}% ({} schedule, {}, {} stages{})",
        100 * est->bubble / est->step_time, ScheduleName(cfg.layout.schedule),
        units::Plural(est->microbatches, "microbatch", "microbatches"), par.pp,
        vpp > 1 ? ", " + std::to_string(vpp) + " virtual" : ""));
  }
}

}  // namespace

namespace {

// How a plan whose replicas outnumber the sequences runs: the book's
// fraction of a sequence per replica; an engine needs the sequence split.
std::string SequenceShareNote(const TrainingConfig& cfg) {
  const Parallelism& par = cfg.par;
  const double replicas = static_cast<double>(par.dp) * par.fsdp * par.ep;
  const double seqs = cfg.batch_tokens / cfg.seq;
  const double chips = static_cast<double>(par.product());
  std::string note = fmt::format(
      "{} sequences over {} replicas: each holds {:.3g} of a {}-token "
      "sequence ({} tokens, {} per chip), as the book shards the sequence",
      FormatNumber(seqs), FormatNumber(replicas), seqs / replicas,
      FormatNumber(cfg.seq),
      FormatNumber(std::round(cfg.batch_tokens / replicas)),
      FormatNumber(std::round(cfg.batch_tokens / chips)));
  if (cfg.mode == Mode::kPeak) return note;
  return note + fmt::format(
                    "; an engine splits the sequence to run it: MaxText as "
                    "per_device_batch_size={:.3g} with the rest of the "
                    "split in ici_context_parallelism, Megatron with "
                    "--context-parallel-size; this estimate does not count "
                    "that split's K/V exchange (give cp= to count it)",
                    seqs / chips);
}

}  // namespace

Result<TrainingEstimate> EstimateTraining(const model::ModelSpec& m,
                                          const hw::System& sys,
                                          const TrainingConfig& cfg_in) {
  // Check and place the plan.
  TrainingConfig cfg = cfg_in;
  auto placement = Place(cfg.par, sys, cfg);
  if (!placement) return tl::unexpected(placement.error());
  auto ok = CheckPlan(m, sys, cfg);
  if (!ok) return tl::unexpected(ok.error());
  const Parallelism& par = cfg.par;
  const hw::Chip& chip = sys.chip;
  const ChipEfficiency eff =
      cfg.mode == Mode::kPeak ? PeakEfficiency() : RealisticEfficiency(chip);
  // Evaluate: per-layer compute, layout coefficients, the core's phases.
  const double seqs_per_replica =
      cfg.batch_tokens / cfg.seq / (par.dp * par.fsdp * par.ep);
  const int microbatches =
      SplitsSequences(cfg)
          ? 1
          : static_cast<int>(seqs_per_replica / cfg.layout.micro_batch);
  const ModelConsts mc = PrepareModel(m, cfg);
  const LayerCompute lc = ComputeLayer(m, mc, chip, eff, par.tp, par.ep, par.cp,
                                       MicrobatchTokens(cfg), cfg);
  const LayoutCoefficients lay = BuildCoefficients(sys, *placement, cfg, mc);
  CoreResult r;
  EvaluateCore(mc, lc, lay, par, cfg, chip, eff, microbatches, &r);
  // Describe.
  TrainingEstimate est;
  est.microbatches = microbatches;
  DescribeLayout(sys, *placement, &est);
  DescribeCore(sys, *placement, mc, r, &est);
  CoreNotes(sys, cfg, r, &est);
  est.memory_floor = FloorOf(chip, cfg, mc);
  Throughput(chip, cfg, mc, r.step, sys.num_chips(), &est);
  est.bottleneck = Bottleneck(r);
  est.critical = CriticalFor(m, sys, cfg, *placement);
  ThresholdNotes(sys, cfg, &est);
  StructureNotes(m, cfg, mc, &est);
  if (SplitsSequences(cfg)) est.notes.push_back(SequenceShareNote(cfg));
  return est;
}

MemoryFloor MinChipsByMemory(double state_bytes,
                             double act_bytes_per_token_layer, double layers,
                             double batch_tokens, double usable_hbm_per_chip) {
  MemoryFloor f;
  f.state_bytes = state_bytes;
  f.activation_bytes = batch_tokens * layers * act_bytes_per_token_layer;
  f.min_chips = usable_hbm_per_chip > 0
                    ? std::ceil((f.state_bytes + f.activation_bytes) /
                                usable_hbm_per_chip)
                    : 0;
  return f;
}

}  // namespace scalemodel::estimate
