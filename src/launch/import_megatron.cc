// Megatron-LM pretrain_gpt.py arguments -> model, plan, preset, batch.
// Argument names and defaults: NVIDIA/Megatron-LM d98e8a64 (main,
// 2026-08-22) megatron/training/arguments.py (ArgumentGroupFactory over
// megatron/core/model_parallel_config.py and
// megatron/core/transformer/transformer_config.py dataclass fields,
// underscores as dashes; --recompute-activations -> selective at :607;
// virtual stages at :940-980) and megatron/training/config/training_config.py
// (micro and global batch).
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "import_internal.h"
#include "import_train_internal.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::launch::internal {
namespace {

// Flags that describe the model: they identify it in the catalog and are
// not listed as ignored.
const std::set<std::string>& ModelFlags() {
  static const std::set<std::string> k = {
      "--num-layers", "--hidden-size", "--ffn-hidden-size",
      "--num-attention-heads", "--num-query-groups", "--group-query-attention",
      "--kv-channels", "--swiglu", "--untie-embeddings-and-output-weights",
      "--position-embedding-type", "--normalization", "--disable-bias-linear",
      "--add-qkv-bias", "--num-experts", "--moe-router-topk",
      "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size",
      "--moe-layer-freq", "--moe-grouped-gemm", "--multi-latent-attention",
      "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim",
      "--qk-pos-emb-head-dim", "--v-head-dim", "--rotary-base",
      "--use-rope-scaling", "--qk-layernorm", "--moe-router-score-function",
      "--moe-router-enable-expert-bias", "--moe-router-topk-scaling-factor",
      "--moe-router-num-groups", "--moe-router-group-topk",
      "--moe-router-load-balancing-type", "--rope-type",
      "--rotary-scaling-factor", "--mscale", "--mscale-all-dim",
      "--max-position-embeddings", "--vocab-size", "--bf16",
      // torchrun's own flags.
      "--nproc-per-node", "--nproc_per_node", "--nnodes", "--node-rank",
      "--node_rank", "--master-addr", "--master_addr", "--master-port",
      "--master_port", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id"};
  return k;
}

struct Shape {
  long layers = 0, hidden = 0, ffn = 0, heads = 0, groups = 0, experts = 0,
       vocab = 0;
  bool any() const { return layers || hidden || heads; }
  std::string Text() const {
    std::string s =
        fmt::format("{} layers, hidden {}, {} heads", layers, hidden, heads);
    if (groups) s += fmt::format(", {} query groups", groups);
    if (ffn) s += fmt::format(", FFN {}", ffn);
    if (experts) s += fmt::format(", {} experts", experts);
    if (vocab) s += fmt::format(", vocabulary {}", vocab);
    return s;
  }
  bool Matches(const model::ModelSpec& m) const {
    auto same = [](long want, long have) { return want == 0 || want == have; };
    return same(layers, m.num_layers) && same(hidden, m.d_model) &&
           same(heads, m.num_heads) && same(ffn, m.ffn) &&
           experts == m.moe.num_experts && same(vocab, m.vocab) &&
           (groups == 0 || m.mla || groups == m.num_kv_heads);
  }
};

Result<Shape> ReadShape(Args& a) {
  Shape s;
  for (auto [flag, field] : std::vector<std::pair<const char*, long*>>{
           {"--num-layers", &s.layers},
           {"--hidden-size", &s.hidden},
           {"--ffn-hidden-size", &s.ffn},
           {"--num-attention-heads", &s.heads},
           {"--num-experts", &s.experts},
           {"--vocab-size", &s.vocab}}) {
    auto v = a.Int(flag, 0);
    if (!v) return tl::unexpected(v.error());
    *field = *v;
  }
  if (a.Has("--group-query-attention")) {
    auto g = a.Int("--num-query-groups", 0);
    if (!g) return tl::unexpected(g.error());
    s.groups = *g;
  }
  return s;
}

// The model: --model, else the header's (when its shape agrees), else the
// one catalog model with the line's shape.
Result<FoundModel> MegatronModel(Args& a, const LaunchInput& in,
                                 const catalog::Catalog& cat,
                                 const std::string& override_name,
                                 std::vector<std::string>* notes) {
  auto shape = ReadShape(a);
  if (!shape) return tl::unexpected(shape.error());
  if (!override_name.empty()) {
    auto m = ModelByName(cat, override_name);
    if (m && shape->any() && !shape->Matches(m->model.spec)) {
      notes->push_back("the line's model flags (" + shape->Text() +
                       ") differ from " + m->model.spec.name +
                       ", which --model names and the estimate uses");
    }
    return m;
  }
  if (std::string id = CatalogIdByDisplayName(cat, in.header_model);
      !id.empty()) {
    auto m = ModelByName(cat, id);
    if (m && (!shape->any() || shape->Matches(m->model.spec))) return m;
  }
  if (!shape->any()) {
    return InvalidArgument(
        "the Megatron-LM line gives no model shape (--num-layers, "
        "--hidden-size, --num-attention-heads): pass --model",
        "from");
  }
  std::vector<std::string> found;
  for (const std::string& id : ingest::ModelIds(cat)) {
    auto m = ingest::FindModel(cat, id);
    if (m && shape->Matches(m->spec)) found.push_back(id);
  }
  if (found.size() == 1) return ModelByName(cat, found[0]);
  if (found.empty()) {
    return InvalidArgument("no catalog model has the line's shape (" +
                               shape->Text() +
                               "): pass --model with its config.json",
                           "from");
  }
  return InvalidArgument("the line's shape (" + shape->Text() +
                             ") is that of " + JoinList(found) +
                             ": pass --model, or --vocab-size in the line",
                         "from");
}

Result<void> Refuse(Args& a) {
  static const std::vector<std::pair<const char*, const char*>> kRefused = {
      {"--decoder-first-pipeline-num-layers",
       "a layer count for the first pipeline stage (scalemodel plans the "
       "last stage's, --last-stage-layers)"},
      {"--num-layers-in-first-pipeline-stage",
       "a layer count for the first pipeline stage"},
      {"--account-for-embedding-in-pipeline-split",
       "the embedding counted as a layer in the pipeline split"},
      {"--account-for-loss-in-pipeline-split",
       "the loss counted as a layer in the pipeline split"},
      {"--fp4-format",
       "fp4 training (scalemodel's nvfp4 recipe has no Megatron-LM line)"},
      {"--hybrid-override-pattern", "a hybrid (Mamba) layer pattern"}};
  for (const auto& [flag, what] : kRefused) {
    if (a.Has(flag)) {
      return InvalidArgument(std::string(flag) + " sets " + what +
                                 ", which scalemodel's plans cannot express; "
                                 "drop it to estimate the rest",
                             "from");
    }
  }
  return {};
}

// The world size: the system's chips, which torchrun's, when given, must be.
Result<long> WorldSize(Args& a, const hw::System& sys) {
  auto per = a.Int({"--nproc-per-node", "--nproc_per_node"}, 0);
  auto nodes = a.Int("--nnodes", 1);
  if (!per) return tl::unexpected(per.error());
  if (!nodes) return tl::unexpected(nodes.error());
  const long chips = sys.num_chips();
  if (*per > 0 && *per * *nodes != chips) {
    return InvalidArgument(
        fmt::format("the line runs {} processes (torchrun --nproc-per-node {} "
                    "x --nnodes {}) and {} has {} chips: pass the system it "
                    "runs on",
                    *per * *nodes, *per, *nodes, sys.id, chips),
        "from");
  }
  return chips;
}

Result<void> MegatronDegrees(Args& a, const hw::System& sys,
                             const model::ModelSpec& m, ImportedTraining* out) {
  estimate::Parallelism& par = out->config.par;
  long d[4];
  const char* flags[4] = {
      "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
      "--context-parallel-size", "--expert-model-parallel-size"};
  for (int i = 0; i < 4; ++i) {
    auto v = a.Int(flags[i], 1);
    if (!v) return tl::unexpected(v.error());
    if (*v < 1)
      return InvalidArgument(std::string(flags[i]) + ": expected a degree >= 1",
                             "from");
    d[i] = *v;
  }
  auto world = WorldSize(a, sys);
  if (!world) return tl::unexpected(world.error());
  const long model_parallel = d[0] * d[1] * d[2] * d[3];
  if (*world % model_parallel != 0) {
    return InvalidArgument(
        fmt::format("tp x pp x cp x ep = {} does not divide the {} chips of {}",
                    model_parallel, *world, sys.id),
        "from");
  }
  par.tp = static_cast<int>(d[0]);
  par.pp = static_cast<int>(d[1]);
  par.cp = static_cast<int>(d[2]);
  par.ep = static_cast<int>(d[3]);
  const int rest = static_cast<int>(*world / model_parallel);
  const bool fsdp = a.Has("--use-torch-fsdp2") ||
                    a.Has("--use-megatron-fsdp") || a.Has("--use-custom-fsdp");
  par.fsdp = fsdp ? rest : 1;
  par.dp = fsdp ? 1 : rest;
  par.zero =
      !fsdp && a.Has("--use-distributed-optimizer") && par.dp * par.ep > 1 ? 1
                                                                           : 0;
  if (par.zero == 1) {
    out->notes.emplace_back(
        "--use-distributed-optimizer read as zero=1 (Megatron-LM shards the "
        "optimizer state and keeps a full gradient buffer)");
  }
  par.sequence_parallel = par.tp == 1 || a.Has("--sequence-parallel");
  (void)m;
  return {};
}

Result<void> MegatronPipeline(Args& a, const model::ModelSpec& m,
                              ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  const int pp = c.par.pp, layers = m.num_layers;
  auto per_virtual = a.Int("--num-layers-per-virtual-pipeline-stage", 0);
  auto virtual_stages = a.Int({"--num-virtual-stages-per-pipeline-rank",
                               "--virtual-pipeline-model-parallel-size"},
                              0);
  auto last = a.Int("--decoder-last-pipeline-num-layers", 0);
  if (!per_virtual || !virtual_stages || !last) {
    return tl::unexpected(!per_virtual      ? per_virtual.error()
                          : !virtual_stages ? virtual_stages.error()
                                            : last.error());
  }
  c.layout.vpp = 1;
  c.layout.last_stage_layers = static_cast<int>(*last);
  if (*per_virtual > 0 && pp > 1) {
    c.layout.vpp = static_cast<int>(layers / (pp * *per_virtual));
  } else if (*virtual_stages > 0) {
    c.layout.vpp = static_cast<int>(*virtual_stages);
  }
  if (std::string layout = a.Str("--pipeline-model-parallel-layout");
      !layout.empty() && pp > 1) {
    const std::vector<std::string> stages = LayoutStages(layout);
    if (stages.empty() || stages.size() % pp != 0) {
      return InvalidArgument(
          fmt::format("--pipeline-model-parallel-layout has {} stages, not a "
                      "multiple of the {} pipeline ranks",
                      stages.size(), pp),
          "from");
    }
    c.layout.vpp = static_cast<int>(stages.size() / pp);
    if (c.layout.vpp == 1) {
      const int on_last = static_cast<int>(
          std::count(stages.back().begin(), stages.back().end(), 't'));
      const std::vector<int> even = StageLayers(layers, pp, 1, 0);
      if (on_last != even.back()) c.layout.last_stage_layers = on_last;
    }
  }
  c.layout.schedule = pp > 1 && c.layout.vpp > 1
                          ? estimate::Schedule::kInterleaved
                          : estimate::Schedule::k1F1B;
  return {};
}

model::Remat MegatronRemat(Args& a, std::vector<std::string>* notes) {
  std::string granularity = a.Str("--recompute-granularity");
  if (a.Has("--recompute-activations")) granularity = "selective";
  const std::string modules = a.Str("--recompute-modules");
  const std::string method = a.Str("--recompute-method");
  auto n = a.Int("--recompute-num-layers", 1);
  if (granularity == "full") {
    if ((n && *n > 1 && method == "uniform") || method == "block") {
      notes->push_back(
          "full recompute of only some layers (--recompute-method " + method +
          ") read as full recompute of every layer");
    }
    return model::Remat::kFull;
  }
  if (granularity != "selective") return model::Remat::kNone;
  if (modules.find("mlp") != std::string::npos) {
    return model::Remat::kSaveDotExceptMlpIn;
  }
  if (modules.find("layernorm") != std::string::npos) {
    return model::Remat::kSaveMatmulOutputs;
  }
  return model::Remat::kSelective;
}

Result<void> MegatronPrecision(Args& a, ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  if (a.Has("--fp16")) {
    out->notes.emplace_back("--fp16 read as bf16 (the same matmul rates)");
  }
  if (std::string fmt8 = a.Str("--fp8-format"); !fmt8.empty()) {
    c.precision.matmul = hw::Dtype::kFp8;
    if (std::string r = a.Str("--fp8-recipe"); !r.empty()) {
      auto recipe = estimate::ParseFp8Recipe(r);
      if (!recipe) {
        return InvalidArgument("--fp8-recipe: " + recipe.error().message,
                               "from");
      }
      c.precision.fp8_recipe = *recipe;
    }
  }
  if (a.Has("--grad-reduce-in-bf16"))
    c.precision.grad_reduce = hw::Dtype::kBf16;
  return {};
}

// Overlaps, dispatch, context-parallel comm, offload, loss kernel, MTP.
Result<void> MegatronHabits(Args& a, ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  if (a.Has("--cross-entropy-loss-fusion")) {
    c.habits.unfused_cross_entropy = false;
  }
  c.habits.tp_comm_overlap = a.Has("--tp-comm-overlap") && c.par.tp > 1;
  const int dp_ranks = c.par.dp * c.par.fsdp * c.par.ep;
  if (dp_ranks > 1 && !a.Has("--overlap-grad-reduce")) {
    c.habits.dp_overlap = false;
    out->notes.emplace_back(
        "no --overlap-grad-reduce: the gradient reduction runs after the "
        "backward pass (Megatron-LM's default)");
  }
  a.Use("--overlap-param-gather");
  const std::string dispatcher = a.Str("--moe-token-dispatcher-type");
  const std::string backend = a.Str("--moe-flex-dispatcher-backend");
  c.habits.ep_dedup = a.Has("--moe-enable-deepep") ||
                      (dispatcher == "flex" && backend == "deepep");
  c.habits.ep_overlap = a.Has("--overlap-moe-expert-parallel-comm");
  a.Use("--delay-wgrad-compute");
  if (std::string cp = a.Str("--cp-comm-type"); !cp.empty()) {
    auto comm = estimate::ParseCpComm(cp == "all_gather" ? "allgather" : cp);
    if (!comm) {
      return InvalidArgument("--cp-comm-type " + cp +
                                 " has no scalemodel equivalent; expected "
                                 "p2p, all_gather or a2a",
                             "from");
    }
    c.habits.cp_comm = *comm;
  }
  c.memory.offload_optimizer = a.Has("--optimizer-cpu-offload");
  a.Use("--use-precision-aware-optimizer");
  auto mtp = a.Int("--mtp-num-layers", 0);
  if (!mtp) return tl::unexpected(mtp.error());
  c.mtp_layers = static_cast<int>(*mtp);
  a.Use("--no-gradient-accumulation-fusion");
  a.Use("--ckpt-format");
  return {};
}

Result<void> MegatronBatch(Args& a, ImportedTraining* out) {
  estimate::TrainingConfig& c = out->config;
  auto seq = a.Int({"--seq-length", "--encoder-seq-length"}, 0);
  auto mbs = a.Int("--micro-batch-size", 1);
  if (!seq) return tl::unexpected(seq.error());
  if (!mbs) return tl::unexpected(mbs.error());
  if (*seq <= 0) {
    return InvalidArgument(
        "the Megatron-LM line has no --seq-length (Megatron-LM requires it)",
        "from");
  }
  const long dp_ranks = static_cast<long>(c.par.dp) * c.par.fsdp * c.par.ep;
  auto gbs = a.Int("--global-batch-size", *mbs * dp_ranks);
  if (!gbs) return tl::unexpected(gbs.error());
  if (!a.Has("--global-batch-size")) {
    out->notes.push_back(fmt::format(
        "no --global-batch-size: micro batch x data-parallel size = {} "
        "sequences (Megatron-LM's default)",
        *gbs));
  }
  c.layout.micro_batch = static_cast<int>(*mbs);
  c.seq = static_cast<double>(*seq);
  c.batch_tokens = static_cast<double>(*gbs) * c.seq;
  return {};
}

}  // namespace

Result<ImportedTraining> ImportMegatron(const LaunchInput& in,
                                        const catalog::Catalog& cat,
                                        const hw::System& sys,
                                        const std::string& override_name) {
  Args a(in.parsed);
  ImportedTraining out;
  out.preset = estimate::Engine::kMegatron;
  estimate::ApplyEnginePreset(out.preset, out.config);
  if (auto ok = Refuse(a); !ok) return tl::unexpected(ok.error());
  auto m = MegatronModel(a, in, cat, override_name, &out.notes);
  if (!m) return tl::unexpected(m.error());
  out.model = m->model;
  out.model_name = m->name;
  const model::ModelSpec& spec = out.model.spec;
  for (auto step :
       {MegatronDegrees(a, sys, spec, &out), MegatronPipeline(a, spec, &out)}) {
    if (!step) return tl::unexpected(step.error());
  }
  out.config.memory.remat = MegatronRemat(a, &out.notes);
  for (auto step : {MegatronPrecision(a, &out), MegatronHabits(a, &out),
                    MegatronBatch(a, &out)}) {
    if (!step) return tl::unexpected(step.error());
  }
  out.ignored = a.Unused(ModelFlags());
  return out;
}

std::vector<std::string> MegatronArguments() {
  return {"--tensor-model-parallel-size",
          "--pipeline-model-parallel-size",
          "--context-parallel-size",
          "--expert-model-parallel-size",
          "--use-torch-fsdp2 / --use-megatron-fsdp / --use-custom-fsdp",
          "--use-distributed-optimizer",
          "--sequence-parallel",
          "--num-layers-per-virtual-pipeline-stage",
          "--num-virtual-stages-per-pipeline-rank",
          "--virtual-pipeline-model-parallel-size",
          "--pipeline-model-parallel-layout",
          "--decoder-last-pipeline-num-layers",
          "--recompute-granularity",
          "--recompute-activations",
          "--recompute-modules",
          "--recompute-method",
          "--recompute-num-layers",
          "--fp16",
          "--fp8-format",
          "--fp8-recipe",
          "--grad-reduce-in-bf16",
          "--cross-entropy-loss-fusion",
          "--tp-comm-overlap",
          "--overlap-grad-reduce",
          "--moe-token-dispatcher-type",
          "--moe-flex-dispatcher-backend",
          "--moe-enable-deepep",
          "--overlap-moe-expert-parallel-comm",
          "--cp-comm-type",
          "--optimizer-cpu-offload",
          "--mtp-num-layers",
          "--seq-length",
          "--micro-batch-size",
          "--global-batch-size",
          "--num-layers",
          "--hidden-size",
          "--ffn-hidden-size",
          "--num-attention-heads",
          "--group-query-attention",
          "--num-query-groups",
          "--num-experts",
          "--vocab-size",
          "torchrun --nproc-per-node / --nnodes"};
}

}  // namespace scalemodel::launch::internal
