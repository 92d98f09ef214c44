// torchtitan job config (TOML) and --section.key flags -> model, plan,
// preset, batch. Keys and defaults: pytorch/torchtitan v0.2.2
// torchtitan/config/job_config.py (Model :100-118, Training :243-290,
// Parallelism :312-464, ActivationCheckpoint :651-655, Compile :721,
// Float8Linear :731-738 under quantize.linear.float8). The config-registry
// era (main since 9810191b: --module, --config, --training.
// max_context_length, --training.num_tokens_per_*) is read as far as the
// flags say; the registered Python config itself is not.
#include <cmath>
#include <map>
#include <set>

#include "fmt/format.h"
#include "import_internal.h"
#include "import_train_internal.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch::internal {
namespace {

class Job {
 public:
  explicit Job(ingest::FlatConfig values) : v_(std::move(values)) {}
  std::string Str(const std::string& k, const std::string& fallback = "") {
    read_.insert(k);
    auto it = v_.find(k);
    return it == v_.end() ? fallback : std::string(Trim(it->second));
  }
  bool Has(const std::string& k) {
    read_.insert(k);
    return v_.count(k) > 0;
  }
  Result<long> Int(const std::string& k, long fallback) {
    const std::string s = Str(k);
    if (s.empty()) return fallback;
    auto d = Number(k, s);
    if (!d) return tl::unexpected(d.error());
    return static_cast<long>(*d);
  }
  bool Flag(const std::string& k) {
    const std::string s = Str(k);
    return Has(k) && (s.empty() || Truthy(s));
  }
  std::vector<std::string> Unread(
      const std::set<std::string>& from_line) const {
    std::vector<std::string> out;
    for (const std::string& k : from_line) {
      if (!read_.count(k)) out.push_back("--" + k);
    }
    return out;
  }

 private:
  ingest::FlatConfig v_;
  std::set<std::string> read_;
};

// (model name, flavor) -> catalog id: catalog files' torchtitan names, and
// the flavors torchtitan v0.2.2 registers for catalog models without them
// (models/deepseek_v3/__init__.py:130, models/qwen3/__init__.py:145,168).
std::string CatalogIdFor(const catalog::Catalog& cat, const std::string& name,
                         const std::string& flavor) {
  for (const ingest::CatalogModelNames& n : ingest::CatalogNames(cat)) {
    if (n.torchtitan_model == name &&
        ToLower(n.torchtitan_flavor) == ToLower(flavor)) {
      return n.id;
    }
  }
  static const std::map<std::pair<std::string, std::string>, std::string> k = {
      {{"deepseek_v3", "671b"}, "deepseek-v3"},
      {{"qwen3", "235b-a22b"}, "qwen3-235b-a22b"},
      {{"qwen3", "30b-a3b"}, "qwen3-30b-a3b"},
      {{"qwen3", "8b"}, "qwen3-8b"}};
  auto it = k.find({name, ToLower(flavor)});
  return it == k.end() ? "" : it->second;
}

// The registry's "<module>_<flavor>[_float8]" config name -> flavor.
std::string FlavorOfConfig(const std::string& module, std::string config) {
  if (config.rfind(module + "_", 0) == 0)
    config = config.substr(module.size() + 1);
  if (config.size() > 7 && config.ends_with("_float8")) {
    config = config.substr(0, config.size() - 7);
  }
  std::replace(config.begin(), config.end(), '_', '-');
  return config;
}

Result<FoundModel> TorchtitanModel(Job& j, const LaunchInput& in,
                                   const catalog::Catalog& cat,
                                   const std::string& override_name) {
  if (!override_name.empty()) return ModelByName(cat, override_name);
  std::string name = j.Str("model.name"), flavor = j.Str("model.flavor");
  if (const std::string module = j.Str("module"); !module.empty()) {
    name = module;
    flavor = FlavorOfConfig(module, j.Str("config"));
  }
  if (!name.empty() && !flavor.empty()) {
    if (std::string id = CatalogIdFor(cat, name, flavor); !id.empty()) {
      return ModelByName(cat, id);
    }
  }
  if (std::string id = CatalogIdByDisplayName(cat, in.header_model);
      !id.empty()) {
    return ModelByName(cat, id);
  }
  return InvalidArgument(
      "torchtitan model " +
          (name.empty() ? std::string("llama3 debugmodel (the default)")
                        : name + " " + flavor) +
          " is not in the catalog: pass --model",
      "from");
}

Result<void> TorchtitanDegrees(Job& j, const hw::System& sys,
                               ImportedTraining* out) {
  estimate::Parallelism& par = out->config.par;
  long d[6];
  const char* keys[6] = {"parallelism.data_parallel_replicate_degree",
                         "parallelism.data_parallel_shard_degree",
                         "parallelism.tensor_parallel_degree",
                         "parallelism.pipeline_parallel_degree",
                         "parallelism.context_parallel_degree",
                         "parallelism.expert_parallel_degree"};
  const long fallback[6] = {1, -1, 1, 1, 1, 1};
  for (int i = 0; i < 6; ++i) {
    auto v = j.Int(keys[i], fallback[i]);
    if (!v) return tl::unexpected(v.error());
    d[i] = *v;
  }
  if (auto etp = j.Int("parallelism.expert_tensor_parallel_degree", 1);
      etp && *etp != 1) {
    return InvalidArgument(
        "parallelism.expert_tensor_parallel_degree > 1 splits experts by "
        "tensor parallelism, which scalemodel's plans cannot express",
        "from");
  }
  const long chips = sys.num_chips();
  const long fixed = d[0] * d[2] * d[3] * d[4];
  if (d[1] == -1) d[1] = fixed > 0 && chips % fixed == 0 ? chips / fixed : 0;
  if (d[0] * d[1] * d[2] * d[3] * d[4] != chips || d[1] < 1) {
    return InvalidArgument(
        fmt::format("replicate x shard x tp x pp x cp = {} is not the {} "
                    "chips of {} (torchtitan.world)",
                    d[0] * std::max(1L, d[1]) * d[2] * d[3] * d[4], chips,
                    sys.id),
        "from");
  }
  // Expert parallelism is carved out of the sharded data-parallel ranks.
  if (d[5] > 1 && d[1] % d[5] != 0) {
    return InvalidArgument(
        fmt::format("expert_parallel_degree {} does not divide "
                    "data_parallel_shard_degree {}",
                    d[5], d[1]),
        "from");
  }
  par.dp = static_cast<int>(d[0]);
  par.fsdp = static_cast<int>(d[1] / d[5]);
  par.tp = static_cast<int>(d[2]);
  par.pp = static_cast<int>(d[3]);
  par.cp = static_cast<int>(d[4]);
  par.ep = static_cast<int>(d[5]);
  par.zero = 0;
  return {};
}

Result<void> TorchtitanPipeline(Job& j, const model::ModelSpec& m,
                                ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  const std::string sched =
      j.Str("parallelism.pipeline_parallel_schedule", "1F1B");
  auto per_stage = j.Int("parallelism.pipeline_parallel_layers_per_stage", 0);
  if (!per_stage) return tl::unexpected(per_stage.error());
  c.layout.vpp = 1;
  if (c.par.pp == 1) return {};
  if (sched == "GPipe") {
    c.layout.schedule = estimate::Schedule::kGpipe;
  } else if (sched == "1F1B") {
    c.layout.schedule = estimate::Schedule::k1F1B;
  } else {
    c.layout.schedule = estimate::Schedule::kInterleaved;
    c.layout.vpp = 2;
    if (*per_stage > 0) {
      c.layout.vpp = static_cast<int>((m.num_layers + 2 + *per_stage - 1) /
                                      *per_stage / c.par.pp);
    }
    if (sched != "Interleaved1F1B") {
      out->notes.push_back("pipeline schedule " + sched +
                           " read as interleaved 1F1B");
    }
  }
  return {};
}

model::Remat TorchtitanRemat(Job& j, const LaunchInput& in,
                             std::vector<std::string>* notes) {
  std::string mode = j.Str("activation_checkpoint.mode", "selective");
  for (const std::string& w : in.parsed.words) {
    if (w.rfind("activation_checkpoint:", 0) == 0) mode = w.substr(22);
  }
  if (mode == "none") return model::Remat::kNone;
  if (mode == "full") return model::Remat::kFull;
  const std::string option =
      j.Str("activation_checkpoint.selective_ac_option", "2");
  if (mode == "selective" && option == "op") {
    return model::Remat::kSaveMatmulOutputs;
  }
  notes->push_back("activation_checkpoint " + mode +
                   (mode == "selective" ? " every " + option + " layers" : "") +
                   " read as full recompute (an upper bound)");
  return model::Remat::kFull;
}

Result<void> TorchtitanBatch(Job& j, ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  const long dp_ranks = static_cast<long>(c.par.dp) * c.par.fsdp * c.par.ep;
  auto seq = j.Int("training.seq_len", 2048);
  auto local = j.Int("training.local_batch_size", 8);
  auto global = j.Int("training.global_batch_size", -1);
  auto pp_mb = j.Int("parallelism.pipeline_parallel_microbatch_size", 1);
  if (!seq || !local || !global || !pp_mb) {
    return tl::unexpected(!seq      ? seq.error()
                          : !local  ? local.error()
                          : !global ? global.error()
                                    : pp_mb.error());
  }
  if (j.Has("training.max_context_length")) {  // the registry's flags
    auto ctx = j.Int("training.max_context_length", *seq);
    auto per_rank = j.Int("training.num_tokens_per_microbatch_per_dp_rank", 0);
    auto step = j.Int("training.num_tokens_per_train_step", 0);
    auto n_mb = j.Int("parallelism.num_pp_microbatches", 0);
    if (!ctx || !per_rank || !step || !n_mb) {
      return InvalidArgument("a torchtitan token count is not a number",
                             "from");
    }
    *seq = *ctx;
    if (*per_rank > 0) *local = *per_rank / *seq;
    if (*step > 0) *global = *step / *seq;
    if (*n_mb > 0) *pp_mb = std::max(1L, *local / *n_mb);
  }
  if (*global <= 0) *global = *local * dp_ranks;
  c.seq = static_cast<double>(*seq);
  c.batch_tokens = static_cast<double>(*global) * c.seq;
  c.layout.micro_batch = static_cast<int>(c.par.pp > 1 ? *pp_mb : *local);
  return {};
}

void TorchtitanHabits(Job& j, ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  const std::string converters = j.Str("model.converters");
  if (converters.find("float8") != std::string::npos ||
      j.Str("config").ends_with("_float8")) {
    c.precision.matmul = hw::Dtype::kFp8;
    const std::string recipe = j.Str("quantize.linear.float8.recipe_name");
    if (recipe == "rowwise" || recipe == "rowwise_with_gw_hp") {
      c.precision.fp8_recipe = estimate::Fp8Recipe::kRowwise;
    }
  }
  if (ToLower(j.Str("training.mixed_precision_reduce")) == "bfloat16") {
    c.precision.grad_reduce = hw::Dtype::kBf16;
  }
  c.habits.tp_comm_overlap =
      c.par.tp > 1 && (j.Flag("parallelism.enable_async_tensor_parallel") ||
                       j.Flag("compile.enable_async_tensor_parallel"));
  j.Flag("compile.enable");
  if (j.Flag("training.enable_cpu_offload")) {
    c.memory.offload_params = true;
    c.memory.offload_optimizer = true;
  }
}

// The TOML files, then the --section.key flags of the line.
Result<ingest::FlatConfig> MergedJob(const LaunchInput& in,
                                     std::set<std::string>* from_line) {
  ingest::FlatConfig job;
  std::vector<std::string> files = in.configs;
  if (auto it = in.parsed.flags.find("--job.config_file");
      it != in.parsed.flags.end()) {
    files.push_back(it->second);
  }
  for (const std::string& f : files) {
    auto t = ingest::ReadTomlConfig(f);
    if (!t) return tl::unexpected(t.error());
    for (auto& [k, v] : *t) job[k] = v;
  }
  static const std::set<std::string> kLauncher = {
      "--nproc-per-node", "--nproc_per_node", "--nnodes",
      "--node-rank",      "--node_rank",      "--master-addr",
      "--master_addr",    "--master-port",    "--master_port",
      "--rdzv-backend",   "--rdzv-endpoint",  "--rdzv-id",
      "--job.config_file"};
  for (const auto& [flag, value] : in.parsed.flags) {
    if (kLauncher.count(flag)) continue;
    const std::string key = flag.substr(2);
    job[key] = value;
    from_line->insert(key);
  }
  return job;
}

}  // namespace

Result<ImportedTraining> ImportTorchtitan(const LaunchInput& in,
                                          const catalog::Catalog& cat,
                                          const hw::System& sys,
                                          const std::string& override_name) {
  std::set<std::string> from_line;
  auto merged = MergedJob(in, &from_line);
  if (!merged) return tl::unexpected(merged.error());
  Job j(std::move(*merged));
  ImportedTraining out;
  out.preset = estimate::Engine::kTorchtitan;
  estimate::ApplyEnginePreset(out.preset, out.config);
  auto m = TorchtitanModel(j, in, cat, override_name);
  if (!m) return tl::unexpected(m.error());
  out.model = m->model;
  out.model_name = m->name;
  if (auto ok = TorchtitanDegrees(j, sys, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  if (auto ok = TorchtitanPipeline(j, out.model.spec, &out); !ok) {
    return tl::unexpected(ok.error());
  }
  out.config.memory.remat = TorchtitanRemat(j, in, &out.notes);
  if (auto ok = TorchtitanBatch(j, &out); !ok)
    return tl::unexpected(ok.error());
  TorchtitanHabits(j, &out);
  // torchtitan trains no multi-token-prediction modules by default.
  out.config.mtp_layers = 0;
  j.Str("model.name");
  j.Str("model.flavor");
  out.ignored = j.Unread(from_line);
  return out;
}

std::vector<std::string> TorchtitanArguments() {
  return {"model.name",
          "model.flavor",
          "model.converters",
          "training.seq_len",
          "training.local_batch_size",
          "training.global_batch_size",
          "training.mixed_precision_reduce",
          "training.enable_cpu_offload",
          "parallelism.data_parallel_replicate_degree",
          "parallelism.data_parallel_shard_degree",
          "parallelism.tensor_parallel_degree",
          "parallelism.pipeline_parallel_degree",
          "parallelism.context_parallel_degree",
          "parallelism.expert_parallel_degree",
          "parallelism.expert_tensor_parallel_degree",
          "parallelism.pipeline_parallel_schedule",
          "parallelism.pipeline_parallel_microbatch_size",
          "parallelism.pipeline_parallel_layers_per_stage",
          "parallelism.enable_async_tensor_parallel",
          "activation_checkpoint.mode",
          "activation_checkpoint.selective_ac_option",
          "quantize.linear.float8.recipe_name",
          "compile.enable",
          "job.config_file",
          "module (registry era)",
          "config (registry era)",
          "training.max_context_length (registry era)",
          "training.num_tokens_per_microbatch_per_dp_rank (registry era)",
          "training.num_tokens_per_train_step (registry era)",
          "parallelism.num_pp_microbatches (registry era)",
          "compile.enable_async_tensor_parallel (registry era)"};
}

}  // namespace scalemodel::launch::internal
