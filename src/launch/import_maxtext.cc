// MaxText config (base.yml, files naming it as base_config, key=value
// overrides) -> model, plan, preset, batch. Keys and defaults:
// AI-Hypercomputer/maxtext e591f30c (2026-08-22) src/maxtext/configs/base.yml
// (model_name :23, quantization :122, weight_dtype :174, base_* :176-226,
// pipeline :317-327, remat_policy :358, offload :384-385, scan_layers :387,
// mesh :659-684, vocab_size :712, per_device_batch_size :731,
// max_target_length :880, gradient_accumulation_steps :968).
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "fmt/format.h"
#include "import_internal.h"
#include "import_train_internal.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"

namespace scalemodel::launch::internal {
namespace {

// base.yml's values of the keys read here, for a line that names base.yml
// without the file at hand.
const ingest::FlatConfig& BaseYmlDefaults() {
  static const ingest::FlatConfig k = {
      {"model_name", "default"},
      {"quantization", ""},
      {"weight_dtype", "float32"},
      {"num_vocab_tiling", "1"},
      {"base_emb_dim", "2048"},
      {"base_num_query_heads", "16"},
      {"base_num_kv_heads", "16"},
      {"base_mlp_dim", "7168"},
      {"base_num_decoder_layers", "16"},
      {"head_dim", "128"},
      {"mtp_num_layers", "0"},
      {"num_experts", "1"},
      {"num_experts_per_tok", "1"},
      {"base_moe_mlp_dim", "-1"},
      {"num_layers_per_pipeline_stage", "1"},
      {"num_pipeline_repeats", "-1"},
      {"pipeline_parallel_layers", "-1"},
      {"num_pipeline_microbatches", "-1"},
      {"remat_policy", "full"},
      {"scan_layers", "true"},
      {"optimizer_memory_host_offload", "false"},
      {"parameter_memory_host_offload", "false"},
      {"vocab_size", "32000"},
      {"per_device_batch_size", "12.0"},
      {"max_target_length", "2048"},
      {"gradient_accumulation_steps", "1"},
      {"capacity_factor", "-1"},
      {"ici_fsdp_parallelism", "-1"},
      {"dcn_data_parallelism", "-1"}};
  return k;
}

// MaxText mesh axes and the degree each multiplies; axes scalemodel cannot
// express map to "".
struct Axis {
  const char* maxtext;
  const char* ours;
};
constexpr Axis kAxes[] = {{"data", "dp"},
                          {"fsdp", "fsdp"},
                          {"fsdp_transpose", "fsdp"},
                          {"tensor", "tp"},
                          {"tensor_transpose", "tp"},
                          {"tensor_sequence", "tp"},
                          {"pipeline", "pp"},
                          {"expert", "ep"},
                          {"context", "cp"},
                          {"sequence", "cp"},
                          {"context_usp_ulysses", ""},
                          {"context_autoregressive", ""},
                          {"autoregressive", ""},
                          {"diloco", ""}};

Result<ingest::FlatConfig> MergedConfig(const LaunchInput& in,
                                        std::vector<std::string>* notes) {
  ingest::FlatConfig cfg = BaseYmlDefaults();
  if (in.configs.empty()) {
    return InvalidArgument(
        "expected MaxText's config file (base.yml or one naming it as "
        "base_config) before the key=value overrides",
        "from");
  }
  for (const std::string& path : in.configs) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec) &&
        std::filesystem::path(path).filename() == "base.yml") {
      notes->push_back(path +
                       " is not here: MaxText's base.yml defaults were used "
                       "(AI-Hypercomputer/maxtext e591f30c)");
      continue;
    }
    auto file = ingest::ReadYamlConfig(path);
    if (!file) return tl::unexpected(file.error());
    for (auto& [k, v] : *file) cfg[k] = v;
  }
  for (const auto& [k, v] : in.parsed.keys) cfg[k] = v;
  return cfg;
}

class Config {
 public:
  explicit Config(const ingest::FlatConfig& c) : c_(c) {}
  std::string Str(const std::string& k) const {
    auto it = c_.find(k);
    if (it == c_.end()) return "";
    std::string v(Trim(it->second));
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) {
      v = v.substr(1, v.size() - 2);
    }
    return v;
  }
  Result<double> Num(const std::string& k, double fallback) const {
    const std::string v = Str(k);
    if (v.empty()) return fallback;
    return Number(k, v);
  }

 private:
  const ingest::FlatConfig& c_;
};

Result<FoundModel> MaxTextModel(const Config& c, const LaunchInput& in,
                                const catalog::Catalog& cat,
                                const std::string& override_name) {
  if (!override_name.empty()) return ModelByName(cat, override_name);
  const std::string name = c.Str("model_name");
  if (!name.empty() && name != "default") {
    auto m = ModelByName(cat, name);
    if (!m) {
      return InvalidArgument("MaxText model_name '" + name +
                                 "' is not in the catalog: pass --model "
                                 "with its config.json",
                             "from");
    }
    return m;
  }
  std::string id = CatalogIdByDisplayName(cat, in.header_model);
  std::vector<std::string> found;
  for (const std::string& cand : ingest::ModelIds(cat)) {
    auto m = ingest::FindModel(cat, cand);
    if (!m) continue;
    auto same = [&](const char* key, long have) {
      auto v = c.Num(key, 0);
      return v && static_cast<long>(*v) == have;
    };
    if (same("base_emb_dim", m->spec.d_model) &&
        same("base_num_decoder_layers", m->spec.num_layers) &&
        same("base_num_query_heads", m->spec.num_heads) &&
        same("base_mlp_dim", m->spec.ffn) &&
        same("vocab_size", m->spec.vocab)) {
      found.push_back(cand);
    }
  }
  if (found.size() == 1) return ModelByName(cat, found[0]);
  if (!id.empty()) return ModelByName(cat, id);
  return InvalidArgument(
      "MaxText model_name is 'default' and the base_* keys match " +
          (found.empty() ? std::string("no catalog model") : JoinList(found)) +
          ": pass --model",
      "from");
}

// Degrees from ici_* (inside a slice / NVLink domain) x dcn_* (across);
// -1 takes what the other axes leave.
Result<void> MaxTextMesh(const Config& c, const hw::System& sys,
                         const model::ModelSpec& m, ImportedTraining* out) {
  const LaunchContext ctx = ContextFor(m, sys);
  const long per_slice = sys.num_chips() / ctx.slices;
  std::map<std::string, long> deg = {{"dp", 1}, {"fsdp", 1}, {"tp", 1},
                                     {"pp", 1}, {"ep", 1},   {"cp", 1}};
  for (const auto& [prefix, domain] :
       {std::pair<std::string, long>{"ici_", per_slice},
        std::pair<std::string, long>{"dcn_", ctx.slices}}) {
    long product = 1;
    std::string automatic;
    for (const Axis& ax : kAxes) {
      const std::string key = prefix + ax.maxtext + "_parallelism";
      auto v = c.Num(key, 1);
      if (!v) return tl::unexpected(v.error());
      if (*v == -1) {
        if (!automatic.empty()) {
          return InvalidArgument("both " + automatic + " and " + key +
                                     " are -1 (auto); MaxText allows one",
                                 "from");
        }
        automatic = key;
        continue;
      }
      if (*v < 1 || std::floor(*v) != *v) {
        return InvalidArgument(key + ": expected a degree >= 1 or -1", "from");
      }
      if (*v > 1 && std::string(ax.ours).empty()) {
        return InvalidArgument(key + " = " + FormatNumber(*v) +
                                   ": scalemodel has no such parallelism; "
                                   "set it to 1",
                               "from");
      }
      product *= static_cast<long>(*v);
      if (*v > 1) deg[ax.ours] *= static_cast<long>(*v);
    }
    if (domain % product != 0 || (automatic.empty() && product != domain)) {
      return InvalidArgument(
          fmt::format("the {}* degrees multiply to {}, and {} has {} chips {} "
                      "(maxtext.{}-product)",
                      prefix, product, sys.id, domain,
                      prefix == "ici_" ? "per slice" : "slices",
                      prefix == "ici_" ? "ici" : "dcn"),
          "from");
    }
    if (!automatic.empty()) {
      for (const Axis& ax : kAxes) {
        if (automatic == prefix + ax.maxtext + "_parallelism") {
          deg[ax.ours] *= domain / product;
        }
      }
    }
  }
  estimate::Parallelism& par = out->config.par;
  par.dp = static_cast<int>(deg["dp"]);
  par.fsdp = static_cast<int>(deg["fsdp"]);
  par.tp = static_cast<int>(deg["tp"]);
  par.pp = static_cast<int>(deg["pp"]);
  par.ep = static_cast<int>(deg["ep"]);
  par.cp = static_cast<int>(deg["cp"]);
  return {};
}

model::Remat MaxTextRemat(const std::string& policy,
                          std::vector<std::string>* notes) {
  if (policy == "full") return model::Remat::kFull;
  if (policy == "minimal") return model::Remat::kSaveMatmulOutputs;
  if (policy == "save_dot_except_mlpwi")
    return model::Remat::kSaveDotExceptMlpIn;
  if (policy == "minimal_with_context") {
    notes->emplace_back(
        "remat_policy minimal_with_context read as remat none (MaxText's "
        "lightest policy still recomputes a little)");
    return model::Remat::kNone;
  }
  notes->push_back("remat_policy " + policy +
                   " has no scalemodel equivalent: read as "
                   "save-matmul-outputs (MaxText's minimal), the nearest");
  return model::Remat::kSaveMatmulOutputs;
}

Result<void> MaxTextPipelineAndBatch(const Config& c, const hw::System& sys,
                                     const model::ModelSpec& m,
                                     ImportedTraining* out) {
  estimate::TrainingConfig& cfg = out->config;
  auto seq = c.Num("max_target_length", 2048);
  auto pdbs = c.Num("per_device_batch_size", 12);
  auto ga = c.Num("gradient_accumulation_steps", 1);
  auto micro = c.Num("num_pipeline_microbatches", -1);
  auto repeats = c.Num("num_pipeline_repeats", -1);
  auto per_stage = c.Num("num_layers_per_pipeline_stage", 1);
  for (const auto* r : {&seq, &pdbs, &ga, &micro, &repeats, &per_stage}) {
    if (!*r) return tl::unexpected(r->error());
  }
  const int pp = cfg.par.pp;
  cfg.seq = *seq;
  const double per_step = *pdbs * sys.num_chips();
  int microbatches = 1;
  if (pp > 1) {
    cfg.batch_tokens = std::round(per_step) * cfg.seq;
    microbatches = *micro > 0 ? static_cast<int>(*micro) : pp;
    cfg.layout.vpp =
        *repeats > 0
            ? static_cast<int>(*repeats)
            : std::max(1, static_cast<int>(m.num_layers / (pp * *per_stage)));
    cfg.layout.schedule = cfg.layout.vpp > 1 ? estimate::Schedule::kInterleaved
                                             : estimate::Schedule::k1F1B;
  } else {
    microbatches = static_cast<int>(*ga);
    cfg.batch_tokens = std::round(per_step * microbatches) * cfg.seq;
  }
  if (cfg.batch_tokens < cfg.seq) {
    return InvalidArgument(
        fmt::format("per_device_batch_size {} x {} chips is less than one "
                    "sequence per step",
                    FormatNumber(*pdbs), sys.num_chips()),
        "from");
  }
  auto mb = estimate::MicroBatchFor(sys, cfg, microbatches);
  if (!mb) return tl::unexpected(mb.error());
  cfg.layout.micro_batch = *mb;
  return {};
}

Result<void> MaxTextPrecisionAndMemory(const Config& c, ImportedTraining* out) {
  estimate::TrainingConfig& cfg = out->config;
  cfg.memory.remat = MaxTextRemat(c.Str("remat_policy"), &out->notes);
  const std::string q = ToLower(c.Str("quantization"));
  if (q == "fp8" || q == "nanoo_fp8" || q == "fp8_full" || q == "fp8_gpu" ||
      q.rfind("te_fp8", 0) == 0) {
    cfg.precision.matmul = hw::Dtype::kFp8;
    if (q != "fp8") out->notes.push_back("quantization " + q + " read as fp8");
  } else if (q == "int8") {
    cfg.precision.matmul = hw::Dtype::kInt8;
  } else if (!q.empty()) {
    return InvalidArgument(
        "quantization '" + q + "' has no scalemodel equivalent (fp8 or int8)",
        "from");
  }
  // weight_dtype float32 is the preset's; bfloat16 keeps 2 + 2 + 4 B per
  // parameter and reduces in bf16 (estimate::ApplyWeightDtype).
  if (ToLower(c.Str("weight_dtype")) == "bfloat16") {
    (void)estimate::ApplyWeightDtype(hw::Dtype::kBf16, cfg);
  } else if (ToLower(c.Str("weight_dtype")) != "float32") {
    out->notes.push_back("weight_dtype " + c.Str("weight_dtype") +
                         " read as float32");
  }
  // Scanned layers gather their FSDP weights inside each iteration
  // (EngineHabits::fsdp_scan_exposed).
  cfg.habits.fsdp_scan_exposed = Truthy(c.Str("scan_layers"));
  cfg.memory.offload_params = Truthy(c.Str("parameter_memory_host_offload"));
  cfg.memory.offload_optimizer = cfg.memory.offload_params ||
                                 Truthy(c.Str("optimizer_memory_host_offload"));
  auto mtp = c.Num("mtp_num_layers", 0);
  auto capacity = c.Num("capacity_factor", -1);
  auto tiling = c.Num("num_vocab_tiling", 1);
  if (!mtp) return tl::unexpected(mtp.error());
  if (!capacity) return tl::unexpected(capacity.error());
  if (!tiling) return tl::unexpected(tiling.error());
  if (*tiling < 1 || *tiling > estimate::kMaxVocabTiling) {
    return InvalidArgument(
        fmt::format("num_vocab_tiling: expected a whole number of chunks from "
                    "1 to {}, got {}",
                    estimate::kMaxVocabTiling, *tiling),
        "from");
  }
  cfg.habits.vocab_tiling = static_cast<int>(*tiling);
  cfg.mtp_layers = static_cast<int>(*mtp);
  if (*capacity > 0) cfg.habits.capacity_factor = *capacity;
  return {};
}

// Keys read from the merged config (the rest of a config file is MaxText's
// and does not change the estimate; overrides not read are listed).
std::set<std::string> ReadKeys() {
  std::set<std::string> k;
  for (const auto& [key, v] : BaseYmlDefaults()) k.insert(key);
  // Read by the launch rules, no effect on the estimate.
  k.insert("run_name");
  k.insert("hardware");
  for (const Axis& ax : kAxes) {
    k.insert(std::string("ici_") + ax.maxtext + "_parallelism");
    k.insert(std::string("dcn_") + ax.maxtext + "_parallelism");
  }
  return k;
}

}  // namespace

Result<ImportedTraining> ImportMaxText(const LaunchInput& in,
                                       const catalog::Catalog& cat,
                                       const hw::System& sys,
                                       const std::string& override_name) {
  ImportedTraining out;
  out.preset = estimate::Engine::kMaxText;
  estimate::ApplyEnginePreset(out.preset, out.config);
  auto merged = MergedConfig(in, &out.notes);
  if (!merged) return tl::unexpected(merged.error());
  const Config c(*merged);
  auto m = MaxTextModel(c, in, cat, override_name);
  if (!m) return tl::unexpected(m.error());
  out.model = m->model;
  out.model_name = m->name;
  if (auto ok = MaxTextMesh(c, sys, out.model.spec, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  if (auto ok = MaxTextPrecisionAndMemory(c, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  if (auto ok = MaxTextPipelineAndBatch(c, sys, out.model.spec, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  const std::set<std::string> read = ReadKeys();
  for (const auto& [k, v] : in.parsed.keys) {
    if (!read.count(k)) out.ignored.push_back(k);
  }
  for (const auto& [k, v] : in.parsed.flags) out.ignored.push_back(k);
  return out;
}

std::vector<std::string> MaxTextArguments() {
  const std::set<std::string> keys = ReadKeys();
  return {keys.begin(), keys.end()};
}

}  // namespace scalemodel::launch::internal
