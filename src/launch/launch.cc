#include "scalemodel/launch/launch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "fmt/format.h"
#include "import_internal.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/launch/rules.h"
#include "scalemodel/units/format.h"

namespace scalemodel::launch {
namespace {

constexpr const char* kVersion = "scalemodel 0.1.0";

// A launch line under construction: comment lines, then a command whose
// arguments are printed one per line with shell continuations.
class LaunchText {
 public:
  void Comment(const std::string& line) { comments_.push_back(line); }
  void Command(std::string cmd) { command_ = std::move(cmd); }
  // A shell line before the command ("export X=1", "unset X").
  void Env(const std::string& line) { env_.push_back(line); }
  void Arg(const std::string& arg) { args_.push_back(arg); }
  // Run the command in the background (" &"), as one of several servers a
  // host starts.
  void Background() { background_ = true; }
  template <typename T>
  void Flag(const std::string& name, const T& value) {
    args_.push_back(fmt::format("{} {}", name, value));
  }
  template <typename T>
  void Key(const std::string& name, const T& value) {
    args_.push_back(fmt::format("{}={}", name, value));
  }
  std::string Str() const {
    std::string out;
    for (const std::string& c : comments_) out += "# " + c + "\n";
    for (const std::string& e : env_) out += e + "\n";
    out += command_;
    for (const std::string& a : args_) out += " \\\n    " + a;
    return out + (background_ ? " &\n" : "\n");
  }

 private:
  std::vector<std::string> comments_;
  std::vector<std::string> env_;
  std::string command_;
  std::vector<std::string> args_;
  bool background_ = false;
};

// Degrees of one parallelism inside and across the fast domain; 1 x 1 when
// the plan does not use it.
estimate::TrainingEstimate::DomainSplit SplitOf(
    const estimate::TrainingEstimate& est, const char* parallelism) {
  auto it = est.layout_split.find(parallelism);
  return it == est.layout_split.end()
             ? estimate::TrainingEstimate::DomainSplit{}
             : it->second;
}

struct Degrees {
  int dp = 1, fsdp = 1, tp = 1, pp = 1, ep = 1, cp = 1;
};

Degrees DegreesOf(const estimate::TrainingEstimate& est) {
  auto deg = [&](const char* k) {
    auto s = SplitOf(est, k);
    return s.fast * s.slow;
  };
  return {deg("dp"), deg("fsdp"), deg("tp"), deg("pp"), deg("ep"), deg("cp")};
}

std::string PlanText(const Degrees& d, int zero) {
  std::string s;
  auto add = [&](const char* k, int v) {
    if (v > 1) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v);
  };
  add("dp", d.dp);
  add("fsdp", d.fsdp);
  add("tp", d.tp);
  add("pp", d.pp);
  add("ep", d.ep);
  add("cp", d.cp);
  if (zero > 0 && d.dp * d.ep > 1) s += fmt::format(",zero={}", zero);
  return s.empty() ? "single chip" : s;
}

void TrainingHeader(LaunchText& out, std::string_view engine,
                    const model::ModelSpec& m, const hw::System& sys,
                    const estimate::TrainingConfig& cfg,
                    const estimate::TrainingEstimate& est, const Degrees& d) {
  out.Comment(fmt::format("{} -> {}: {} on {} ({} chips), plan {}", kVersion,
                          engine, m.name, sys.id, sys.num_chips(),
                          PlanText(d, cfg.par.zero)));
  out.Comment(fmt::format(
      "predicted ({} mode): {} per step, MFU {:.1f}%, {:.0f} tokens/s per "
      "chip, {} of {} HBM per chip{}",
      cfg.mode == estimate::Mode::kPeak ? "peak" : "realistic",
      units::FormatSeconds(est.step_time), est.mfu * 100,
      est.tokens_per_s_per_chip, units::FormatBytes(est.memory.total),
      units::FormatBytes(est.memory.capacity),
      est.feasible ? "" : " (INFEASIBLE: " + est.reason + ")"));
  if (engine == "MaxText") return;
  // MaxText's weight_dtype and num_vocab_tiling have no flag here.
  if (estimate::StoresBf16Weights(cfg.memory)) {
    out.Comment(fmt::format(
        "the estimate kept bf16 weights with no fp32 master copy "
        "(--weight-dtype bf16); {} keeps its own, so expect more memory",
        engine));
  }
  if (cfg.habits.vocab_tiling > 1) {
    out.Comment(fmt::format(
        "the estimate held 1/{} of the logits at once (--vocab-tiling); {} "
        "has no flag for it, so expect more memory",
        cfg.habits.vocab_tiling, engine));
  }
}

// Tokens per step as sequences; EstimateTraining already checked it splits.
long GlobalSequences(const estimate::TrainingConfig& cfg) {
  return std::lround(cfg.batch_tokens / cfg.seq);
}

std::string_view MaxTextRemat(model::Remat r) {
  switch (r) {
    case model::Remat::kNone:
    case model::Remat::kSelective:
      return "minimal_with_context";
    case model::Remat::kSaveMatmulOutputs:
      return "minimal";
    case model::Remat::kSaveDotExceptMlpIn:
      return "save_dot_except_mlpwi";
    case model::Remat::kFull:
      return "full";
  }
  return "full";
}

// MaxText's name for the model, or its shape as base_* keys.
void MaxTextModel(LaunchText& out, const model::ModelSpec& m,
                  const ingest::EngineNames& names) {
  if (!names.maxtext_model.empty()) {
    out.Key("model_name", names.maxtext_model);
  } else {
    out.Comment(fmt::format(
        "MaxText has no config named for {}: the base_* keys below give its "
        "shape; set decoder_block to the family (llama2, mixtral, ...)",
        m.name));
    out.Key("base_emb_dim", m.d_model);
    out.Key("base_num_query_heads", m.num_heads);
    out.Key("base_num_kv_heads", m.num_kv_heads);
    out.Key("head_dim", m.head_dim);
    out.Key("base_mlp_dim", m.ffn);
    out.Key("base_num_decoder_layers", m.num_layers);
    out.Key("vocab_size", m.vocab);
    if (m.is_moe()) {
      out.Key("num_experts", m.moe.num_experts);
      out.Key("num_experts_per_tok", m.moe.top_k);
      out.Key("base_moe_mlp_dim", m.moe.expert_ffn);
    }
  }
}

// MaxText's mesh: ici_* (inside a slice / NVLink domain) and dcn_*.
void MaxTextMesh(LaunchText& out, const estimate::TrainingEstimate& est) {
  // MaxText mesh axis <- our parallelism; ici_* for every axis (MaxText's
  // defaults include -1 = auto), dcn_* where used, and dcn_data always since
  // it defaults to -1 too.
  static constexpr std::array<std::pair<const char*, const char*>, 6> kAxes = {
      {{"data", "dp"},
       {"fsdp", "fsdp"},
       {"tensor", "tp"},
       {"pipeline", "pp"},
       {"expert", "ep"},
       {"context", "cp"}}};
  for (const auto& [maxtext, ours] : kAxes) {
    out.Key(fmt::format("ici_{}_parallelism", maxtext),
            SplitOf(est, ours).fast);
  }
  for (const auto& [maxtext, ours] : kAxes) {
    const int slow = SplitOf(est, ours).slow;
    if (slow > 1 || std::string_view(ours) == "dp") {
      out.Key(fmt::format("dcn_{}_parallelism", maxtext), slow);
    }
  }
}

// MaxText's pipeline: stages x num_pipeline_repeats x
// num_layers_per_pipeline_stage = pipeline_parallel_layers, which defaults
// to every decoder layer (DeepSeek: the MoE layers) (types.py:3565-3604).
// When the layers do not split over pp x vpp, the largest multiple is
// pipelined and the rest run outside it, the stage axis acting as data
// parallelism there (base.yml:320).
void MaxTextPipeline(LaunchText& out, const model::ModelSpec& m,
                     const estimate::TrainingConfig& cfg, const Degrees& d) {
  const int vpp = std::max(1, cfg.layout.vpp);
  const int pipelinable = m.mla && m.moe.first_dense_layers > 0
                              ? m.num_layers - m.moe.first_dense_layers
                              : m.num_layers;
  const int per = pipelinable / (d.pp * vpp);
  if (per * d.pp * vpp != pipelinable) {
    out.Comment(fmt::format(
        "{} pipelinable layers (of {}) do not split over {} stages x {} "
        "repeats: {} are pipelined, the other {} run outside the pipeline",
        pipelinable, m.num_layers, d.pp, vpp, per * d.pp * vpp,
        m.num_layers - per * d.pp * vpp));
    out.Key("pipeline_parallel_layers", per * d.pp * vpp);
  }
  out.Key("num_layers_per_pipeline_stage", per);
  out.Key("num_pipeline_repeats", vpp);
  out.Comment(fmt::format(
      "MaxText pipelines {}; the estimate used {}",
      vpp > 1 ? "with a circular (repeat) schedule" : "without repeats",
      estimate::ScheduleName(cfg.layout.schedule)));
}

// The matmul dtype, the stored weights' dtype, vocabulary tiling and host
// offload as MaxText's keys.
void MaxTextPrecisionKeys(LaunchText& out,
                          const estimate::TrainingConfig& cfg) {
  if (cfg.precision.matmul == hw::Dtype::kFp8) out.Key("quantization", "fp8");
  // AQT int8 matmuls (--precision int8).
  if (cfg.precision.matmul == hw::Dtype::kInt8) out.Key("quantization", "int8");
  if (estimate::StoresBf16Weights(cfg.memory)) {
    out.Key("weight_dtype", "bfloat16");  // --weight-dtype bf16
  }
  if (cfg.habits.vocab_tiling > 1) {
    out.Key("num_vocab_tiling", cfg.habits.vocab_tiling);
  }
  if (cfg.memory.offload_optimizer)
    out.Key("optimizer_memory_host_offload", "True");
  if (cfg.memory.offload_params)
    out.Key("parameter_memory_host_offload", "True");
}

Result<std::string> EmitMaxText(const model::ModelSpec& m,
                                const ingest::EngineNames& names,
                                const hw::System& sys,
                                const estimate::TrainingConfig& cfg,
                                const estimate::TrainingEstimate& est,
                                const Degrees& d) {
  LaunchText out;
  TrainingHeader(out, "MaxText", m, sys, cfg, est, d);
  if (cfg.precision.grad_reduce == hw::Dtype::kFp32 && !cfg.habits.dp_overlap) {
    out.Comment(
        "predicted as MaxText runs: fp32 gradient reductions (weight_dtype "
        "float32) and the data-parallel reduction after the backward pass "
        "(docs/model.md 5.3)");
  }
  out.Comment(
      "overrides of src/maxtext/configs/base.yml (older checkouts: python3 "
      "-m MaxText.train MaxText/configs/base.yml ...); ici_* = inside a "
      "slice (GPUs: inside an NVLink node), dcn_* = across slices (nodes)");
  out.Command(
      "python3 src/maxtext/trainers/pre_train/train.py "
      "src/maxtext/configs/base.yml");
  out.Key("run_name", "scalemodel-" + m.id);
  // GPU runs initialise jax.distributed only with hardware=gpu
  // (max_utils.py:270, 433-435); MaxText's GPU recipes set it.
  if (!sys.chip.is_tpu()) out.Key("hardware", "gpu");
  MaxTextModel(out, m, names);
  out.Key("max_target_length", static_cast<long>(cfg.seq));
  const long gbs = GlobalSequences(cfg);
  const int chips = sys.num_chips();
  const int micro = std::max(1, est.microbatches);
  // per_device_batch_size x max_target_length x chips = tokens per
  // (micro)step (ecosystem.md 1.2).
  if (d.pp > 1) {
    out.Key("per_device_batch_size",
            FormatNumber(static_cast<double>(gbs) / chips));
    out.Key("num_pipeline_microbatches", micro);
    MaxTextPipeline(out, m, cfg, d);
  } else {
    out.Key("per_device_batch_size",
            FormatNumber(static_cast<double>(gbs) / chips / micro));
    if (micro > 1) out.Key("gradient_accumulation_steps", micro);
  }
  MaxTextMesh(out, est);
  if (d.cp > 1 && cfg.habits.cp_comm != estimate::CpComm::kAllGather) {
    out.Comment(
        fmt::format("MaxText's context parallelism all-gathers K/V (--cp-comm "
                    "allgather); the estimate assumed --cp-comm {}",
                    estimate::CpCommName(cfg.habits.cp_comm)));
  }
  if (d.pp > 1 && cfg.layout.last_stage_layers > 0) {
    out.Comment(fmt::format(
        "MaxText splits the layers evenly over the pipeline stages; the "
        "estimate put {} on the last",
        cfg.layout.last_stage_layers));
  }
  if (const int mtp = estimate::MtpModules(m, cfg); mtp > 0) {
    out.Key("mtp_num_layers", std::to_string(mtp));
  }
  out.Key("remat_policy", MaxTextRemat(cfg.memory.remat));
  if (cfg.memory.remat == model::Remat::kNone) {
    out.Comment(
        "remat none: MaxText's lightest policy (minimal_with_context) still "
        "recomputes a little; expect a few % more FLOPs than predicted");
  }
  MaxTextPrecisionKeys(out, cfg);
  if (d.dp > 1 && cfg.par.zero > 0) {
    out.Comment(fmt::format(
        "zero={} has no MaxText equivalent: the data axis keeps full optimizer "
        "state per replica; move those degrees to fsdp to shard it",
        cfg.par.zero));
  }
  return out.Str();
}

// `torchrun` over the system's hosts, GPUs per host from GpusPerHost.
// With more than one host, every host runs the same line with its own
// NODE_RANK (0 .. hosts-1) and MASTER_ADDR, host 0's address (torchrun's
// --node-rank / --master-addr / --master-port).
std::string Torchrun(const hw::System& sys, const std::string& entry) {
  const int per_host = GpusPerHost(sys);
  const int hosts = sys.num_chips() / per_host;
  if (hosts == 1) {
    return fmt::format("torchrun --nproc-per-node {} --nnodes 1 {}", per_host,
                       entry);
  }
  return fmt::format(
      "torchrun --nproc-per-node {} --nnodes {} --node-rank ${{NODE_RANK}} "
      "--master-addr ${{MASTER_ADDR}} --master-port 29500 {}",
      per_host, hosts, entry);
}

void HostComment(LaunchText& out, const hw::System& sys) {
  const int hosts = sys.num_chips() / GpusPerHost(sys);
  if (hosts > 1) {
    out.Comment(fmt::format(
        "run on each of the {} hosts with NODE_RANK=0..{} and MASTER_ADDR = "
        "host 0's address (or srun with NODE_RANK=$SLURM_NODEID)",
        hosts, hosts - 1));
  }
}

Result<bool> NeedGpu(const hw::System& sys, std::string_view engine) {
  if (sys.chip.is_tpu()) {
    return InvalidArgument(std::string(engine) + " runs on GPUs, and " +
                               sys.id +
                               " is a TPU system (MaxText runs on TPUs)",
                           "engine");
  }
  return true;
}

void MegatronModelFlags(LaunchText& out, const model::ModelSpec& m) {
  out.Flag("--num-layers", m.num_layers);
  out.Flag("--hidden-size", m.d_model);
  out.Flag("--ffn-hidden-size", m.ffn);
  out.Flag("--num-attention-heads", m.num_heads);
  if (m.num_kv_heads != m.num_heads && !m.mla) {
    out.Arg("--group-query-attention");
    out.Flag("--num-query-groups", m.num_kv_heads);
  }
  if (m.mla) {
    out.Arg("--multi-latent-attention");
    if (m.mla->q_lora_rank > 0) out.Flag("--q-lora-rank", m.mla->q_lora_rank);
    out.Flag("--kv-lora-rank", m.mla->kv_lora_rank);
    out.Flag("--qk-head-dim", m.mla->qk_nope_head_dim);
    out.Flag("--qk-pos-emb-head-dim", m.mla->qk_rope_head_dim);
    out.Flag("--v-head-dim", m.mla->v_head_dim);
  } else if (static_cast<long>(m.num_heads) * m.head_dim != m.d_model) {
    out.Flag("--kv-channels", m.head_dim);
  }
  if (m.gated_mlp) out.Arg("--swiglu");
  if (!m.tied_embeddings) out.Arg("--untie-embeddings-and-output-weights");
  out.Flag("--position-embedding-type",
           m.learned_positions ? "learned_absolute" : "rope");
  out.Flag("--normalization", m.learned_positions ? "LayerNorm" : "RMSNorm");
  if (!m.attention_bias && !m.mlp_bias) out.Arg("--disable-bias-linear");
  if (m.attention_bias && !m.mlp_bias) {
    out.Arg("--disable-bias-linear");
    out.Arg("--add-qkv-bias");
  }
  if (m.is_moe()) {
    out.Flag("--num-experts", m.moe.num_experts);
    out.Flag("--moe-router-topk", m.moe.top_k);
    out.Flag("--moe-ffn-hidden-size", m.moe.expert_ffn);
    if (m.moe.num_shared_experts > 0) {
      long fs = m.moe.shared_ffn > 0 ? m.moe.shared_ffn : m.moe.expert_ffn;
      out.Flag("--moe-shared-expert-intermediate-size",
               fs * m.moe.num_shared_experts);
    }
    if (m.moe.first_dense_layers > 0 || m.moe.layer_freq > 1) {
      // Megatron evaluates the pattern as Python: runs as ([0]*3+[1]*58).
      std::string pattern;
      for (int l = 0; l < m.num_layers;) {
        int v = m.IsMoeLayer(l), n = 0;
        while (l < m.num_layers && m.IsMoeLayer(l) == v) ++l, ++n;
        pattern += fmt::format("{}[{}]*{}", pattern.empty() ? "" : "+", v, n);
      }
      out.Flag("--moe-layer-freq", "\"(" + pattern + ")\"");
    }
    out.Arg("--moe-grouped-gemm");
  }
}

// The expert dispatch the estimate assumed: DeepEP (one copy per node)
// with --ep-dedup, the all-to-all dispatcher otherwise; the all-to-all
// under another microbatch's compute with --ep-overlap.
void MegatronDispatchFlags(LaunchText& out, const model::ModelSpec& m,
                           const estimate::TrainingConfig& cfg,
                           const Degrees& d) {
  if (!m.is_moe()) return;
  if (cfg.habits.ep_dedup) {
    out.Flag("--moe-token-dispatcher-type", "flex");
    out.Flag("--moe-flex-dispatcher-backend", "deepep");
  } else {
    out.Flag("--moe-token-dispatcher-type", "alltoall");
  }
  if (cfg.habits.ep_overlap && d.ep > 1) {
    out.Arg("--overlap-moe-expert-parallel-comm");
    out.Arg("--delay-wgrad-compute");
    if (d.pp > 1 && cfg.layout.schedule != estimate::Schedule::kInterleaved) {
      out.Comment(
          "Megatron overlaps the expert all-to-all only with pp=1 or an "
          "interleaved schedule: add --vpp to the plan");
    }
  }
}

// Decoder layers of each of the pp x vpp virtual stages (Megatron's order:
// virtual stage v of rank r is entry v * pp + r): an even share, the
// remainder one each on the stages after the first, and the plan's
// last-stage count (vpp 1) on the last.
std::vector<int> StageLayers(int layers, int pp, int vpp, int last) {
  const int n = pp * vpp;
  std::vector<int> per(n, 0);
  int rest = layers, stages = n;
  if (last > 0 && vpp == 1 && n > 1) {
    per[n - 1] = last;
    rest -= last;
    --stages;
  }
  for (int i = 0; i < stages; ++i) per[i] = rest / stages;
  for (int i = 0; i < rest % stages; ++i) per[(i + 1) % stages]++;
  return per;
}

// Megatron's pipeline-model-parallel-layout string: E (embedding) on the
// first virtual stage, t per decoder layer, m per MTP layer and L (loss) on
// the last; "t*N" repeats (pipeline_parallel_layer_layout.py:283-320).
std::string MegatronLayout(const std::vector<int>& per, int mtp) {
  std::vector<std::string> st;
  for (size_t i = 0; i < per.size(); ++i) {
    std::string s = i == 0 ? "E" : "";
    if (per[i] > 0) s += per[i] == 1 ? "t" : fmt::format("t*{}", per[i]);
    if (i + 1 == per.size()) s += std::string(mtp, 'm') + "L";
    st.push_back(s);
  }
  // Runs of three or more equal stages as "(S|)*N".
  std::string out;
  for (size_t i = 0; i < st.size();) {
    size_t j = i;
    while (j < st.size() && st[j] == st[i]) ++j;
    const bool last = j == st.size();
    if (j - i >= 3 && !last) {
      out += fmt::format("({}|)*{}", st[i], j - i);
    } else {
      for (size_t k = i; k < j; ++k)
        out += st[k] + (k + 1 < st.size() ? "|" : "");
    }
    i = j;
  }
  return out;
}

// Even splits keep Megatron's per-virtual-stage count; anything else (layers
// not dividing by pp x vpp, a planned last-stage count) is written as an
// explicit layout, which Megatron accepts for any split.
void MegatronPipelineSplit(LaunchText& out, const model::ModelSpec& m,
                           const estimate::TrainingConfig& cfg,
                           const Degrees& d) {
  const int vpp = std::max(1, cfg.layout.vpp);
  const int last = cfg.layout.last_stage_layers;
  if (last == 0 && m.num_layers % (d.pp * vpp) == 0) {
    if (vpp > 1) {
      out.Flag("--num-layers-per-virtual-pipeline-stage",
               m.num_layers / (d.pp * vpp));
    }
    return;
  }
  const std::vector<int> per = StageLayers(m.num_layers, d.pp, vpp, last);
  const int mtp = estimate::MtpModules(m, cfg);
  out.Comment(fmt::format(
      "{} layers over {} pipeline stage(s) x {} virtual: an explicit layout "
      "(decoder layers per virtual stage {}..{})",
      m.num_layers, d.pp, vpp, *std::min_element(per.begin(), per.end()),
      *std::max_element(per.begin(), per.end())));
  out.Flag("--pipeline-model-parallel-layout",
           "\"" + MegatronLayout(per, mtp) + "\"");
}

// The architecture flags Megatron needs beyond the shapes, from the
// checkpoint's config.json (data/models/<id>.json: rope_theta,
// rope_scaling, scoring_func, n_group/topk_group, routed_scaling_factor;
// Qwen3's q/k RMSNorm from its modeling code).
void MegatronArchFlags(LaunchText& out, const model::ModelSpec& m) {
  const std::string& id = m.id;
  if (id.rfind("llama3", 0) == 0) {
    out.Flag("--rotary-base", 500000);
    out.Arg("--use-rope-scaling");  // rope_type llama3, factor 8
  } else if (id.rfind("qwen3", 0) == 0) {
    out.Flag("--rotary-base", 1000000);
    out.Arg("--qk-layernorm");
  } else if (id.rfind("mixtral", 0) == 0) {
    out.Flag("--rotary-base", 1000000);
  } else if (id == "deepseek-v3") {
    out.Flag("--moe-router-score-function", "sigmoid");
    out.Arg("--moe-router-enable-expert-bias");
    out.Flag("--moe-router-topk-scaling-factor", "2.5");
    out.Flag("--moe-router-num-groups", 8);
    out.Flag("--moe-router-group-topk", 4);
    out.Flag("--moe-router-load-balancing-type", "seq_aux_loss");
    out.Flag("--rope-type", "yarn");
    out.Flag("--rotary-scaling-factor", 40);
    out.Flag("--mscale", "1.0");
    out.Flag("--mscale-all-dim", "1.0");
  } else {
    out.Comment("rotary base, rotary scaling and router details of " + m.name +
                " are not known to scalemodel: add them from its config");
  }
}

// Megatron's data-parallel flavour: FSDP2 for fsdp, the distributed
// optimizer for zero >= 1, and the overlap flags.
void MegatronDataParallelFlags(LaunchText& out,
                               const estimate::TrainingConfig& cfg,
                               const Degrees& d) {
  if (d.fsdp > 1) {
    out.Comment(fmt::format(
        "fsdp={} runs as PyTorch FSDP2 inside Megatron (Megatron's data "
        "parallel size is dp x fsdp x ep = {})",
        d.fsdp, d.dp * d.fsdp * d.ep));
    out.Arg("--use-torch-fsdp2");
    out.Arg("--no-gradient-accumulation-fusion");
    out.Flag("--ckpt-format", "torch_dist");
  } else if (cfg.par.zero > 0) {
    out.Arg("--use-distributed-optimizer");
    if (cfg.par.zero > 1) {
      out.Comment(
          "zero=2: Megatron's distributed optimizer shards optimizer state "
          "and reduce-scatters gradients (ZeRO-1 with ZeRO-2's traffic)");
    }
  }
  if (d.dp * d.fsdp * d.ep > 1) {
    out.Arg("--overlap-grad-reduce");
    if (cfg.par.zero > 0 && d.fsdp == 1) out.Arg("--overlap-param-gather");
  }
}

// CUDA_DEVICE_MAX_CONNECTIONS as Megatron asserts it.
void MegatronEnv(LaunchText& out, const model::ModelSpec& m,
                 const hw::System& sys, const estimate::TrainingConfig& cfg,
                 const Degrees& d) {
  // arguments.py:1014-1015 (FSDP2: not 1) and 1413-1439 (tp or cp > 1
  // before Blackwell: 1).
  const bool ep_overlap = m.is_moe() && cfg.habits.ep_overlap && d.ep > 1;
  if (d.fsdp > 1) {
    out.Env("unset CUDA_DEVICE_MAX_CONNECTIONS");
  } else if ((d.tp > 1 || d.cp > 1) && ContextFor(m, sys).cuda_arch < 10 &&
             !ep_overlap) {
    out.Env("export CUDA_DEVICE_MAX_CONNECTIONS=1");
  }
}

void MegatronRecompute(LaunchText& out, model::Remat remat) {
  // Selective recompute of some modules: the nearest Megatron has to a
  // policy it lacks.
  auto selective = [&](const char* modules, const std::string& why) {
    out.Flag("--recompute-granularity", "selective");
    out.Flag("--recompute-modules", modules);
    out.Comment(why);
  };
  switch (remat) {
    case model::Remat::kNone:
      break;
    case model::Remat::kSelective:
      out.Flag("--recompute-granularity", "selective");
      break;
    case model::Remat::kSaveMatmulOutputs:
      selective("core_attn layernorm",
                "save-matmul-outputs: Megatron's nearest is selective "
                "recompute of the attention core and the norms");
      break;
    case model::Remat::kSaveDotExceptMlpIn:
      selective("core_attn layernorm mlp",
                "save-dot-except-mlp-in: Megatron's nearest recomputes the "
                "attention core, the norms and the whole MLP (more than "
                "w1/w3 alone)");
      break;
    case model::Remat::kFull:
      out.Flag("--recompute-granularity", "full");
      out.Flag("--recompute-method", "uniform");
      out.Flag("--recompute-num-layers", 1);
      break;
  }
}

Result<std::string> EmitMegatron(const model::ModelSpec& m,
                                 const hw::System& sys,
                                 const estimate::TrainingConfig& cfg,
                                 const estimate::TrainingEstimate& est,
                                 const Degrees& d) {
  LaunchText out;
  TrainingHeader(out, "Megatron-LM", m, sys, cfg, est, d);
  HostComment(out, sys);
  out.Comment(fmt::format(
      "add your data, tokenizer and checkpoint flags; the tokenizer sets the "
      "vocabulary (V = {})",
      m.vocab));
  MegatronEnv(out, m, sys, cfg, d);
  out.Command(Torchrun(sys, "pretrain_gpt.py"));
  out.Flag("--tensor-model-parallel-size", d.tp);
  out.Flag("--pipeline-model-parallel-size", d.pp);
  if (d.pp > 1) MegatronPipelineSplit(out, m, cfg, d);
  if (const int mtp = estimate::MtpModules(m, cfg); mtp > 0) {
    out.Flag("--mtp-num-layers", mtp);
  }
  out.Flag("--context-parallel-size", d.cp);
  if (d.cp > 1 && cfg.habits.cp_comm != estimate::CpComm::kRing) {
    // TransformerEngine's spelling (context_parallel.py:5096-5139).
    out.Flag("--cp-comm-type",
             cfg.habits.cp_comm == estimate::CpComm::kAllGather
                 ? std::string("all_gather")
                 : std::string(estimate::CpCommName(cfg.habits.cp_comm)));
  }
  if (d.ep > 1) out.Flag("--expert-model-parallel-size", d.ep);
  if (d.tp > 1 && cfg.par.sequence_parallel) out.Arg("--sequence-parallel");
  if (cfg.habits.tp_comm_overlap && d.tp > 1) out.Arg("--tp-comm-overlap");
  MegatronDataParallelFlags(out, cfg, d);
  out.Flag("--micro-batch-size", cfg.layout.micro_batch);
  out.Flag("--global-batch-size", GlobalSequences(cfg));
  out.Flag("--seq-length", static_cast<long>(cfg.seq));
  out.Flag("--max-position-embeddings",
           std::max(static_cast<long>(cfg.seq), m.max_positions));
  MegatronModelFlags(out, m);
  MegatronArchFlags(out, m);
  MegatronDispatchFlags(out, m, cfg, d);
  MegatronRecompute(out, cfg.memory.remat);
  out.Arg("--bf16");
  // Megatron-LM reduces bf16 gradients in fp32 unless told otherwise; the
  // estimate assumed bf16 reductions unless --grad-reduce fp32.
  if (cfg.precision.grad_reduce == hw::Dtype::kBf16)
    out.Arg("--grad-reduce-in-bf16");
  // The fused loss kernel the estimate assumed (--cross-entropy fused).
  if (!cfg.habits.unfused_cross_entropy) out.Arg("--cross-entropy-loss-fusion");
  if (cfg.precision.matmul == hw::Dtype::kFp8 &&
      cfg.precision.fp8_recipe != estimate::Fp8Recipe::kRowwise) {
    out.Flag("--fp8-format",
             cfg.precision.fp8_recipe == estimate::Fp8Recipe::kMxfp8
                 ? "e4m3"
                 : "hybrid");
    out.Flag("--fp8-recipe",
             std::string(estimate::Fp8RecipeName(cfg.precision.fp8_recipe)));
  } else if (cfg.precision.matmul != hw::Dtype::kBf16) {
    const bool int8 = cfg.precision.matmul == hw::Dtype::kInt8;
    out.Comment(fmt::format(
        "Megatron-LM has no flag for the estimate's {} matmuls; the line "
        "runs them in bf16",
        int8 ? std::string("int8")
             : std::string(estimate::Fp8RecipeName(cfg.precision.fp8_recipe))));
  }
  if (cfg.memory.offload_optimizer) {
    out.Arg("--optimizer-cpu-offload");
    out.Arg("--use-precision-aware-optimizer");
  }
  if (cfg.memory.offload_params) {
    out.Comment(
        "Megatron offloads optimizer state, not parameters: the estimate "
        "assumed --offload-params (use torchtitan or MaxText for that)");
  }
  if (m.sliding_window > 0) {
    out.Comment(fmt::format(
        "{} uses sliding-window attention ({} tokens) on some layers: set it "
        "in your Megatron model provider",
        m.name, m.sliding_window));
  }
  return out.Str();
}

// What the torchtitan line does differently from the estimate.
void TorchtitanNotes(LaunchText& out, const model::ModelSpec& m,
                     const estimate::TrainingConfig& cfg, const Degrees& d) {
  if (d.pp > 1 && cfg.layout.last_stage_layers > 0) {
    out.Comment(fmt::format(
        "the estimate put {} layers on the last pipeline stage; torchtitan "
        "splits the model itself",
        cfg.layout.last_stage_layers));
  }
  if (d.cp > 1 && cfg.habits.cp_comm != estimate::CpComm::kRing) {
    out.Comment(fmt::format(
        "torchtitan's context parallelism is ring attention (--cp-comm "
        "p2p); the estimate assumed --cp-comm {}",
        estimate::CpCommName(cfg.habits.cp_comm)));
  }
  if (const int mtp = estimate::MtpModules(m, cfg); mtp > 0) {
    out.Comment(fmt::format(
        "the estimate trains {} multi-token-prediction module(s); rerun with "
        "--mtp-layers 0 if your torchtitan config trains without",
        mtp));
  }
  if (cfg.precision.matmul == hw::Dtype::kFp8 &&
      cfg.precision.fp8_recipe != estimate::Fp8Recipe::kTensorwise) {
    out.Comment(fmt::format(
        "torchtitan's float8 scales each tensor as it is cast (tensorwise); "
        "the estimate assumed --fp8-recipe {}",
        estimate::Fp8RecipeName(cfg.precision.fp8_recipe)));
  }
  if (cfg.memory.offload_optimizer && !cfg.memory.offload_params) {
    out.Comment(
        "torchtitan's CPU offload moves parameters and gradients as well as "
        "the optimizer state to host memory (--offload-params)");
  }
}

// torchtitan's model and flavor (models/<name>/__init__.py at v0.2.2:
// llama3 8B/70B/405B, deepseek_v3 671B at :130, qwen3 30B-A3B and
// 235B-A22B at :145/:168) for catalog models without engine names.
std::pair<std::string, std::string> TorchtitanModel(
    const model::ModelSpec& m, const ingest::EngineNames& names) {
  if (!names.torchtitan_model.empty())
    return {names.torchtitan_model, names.torchtitan_flavor};
  if (m.id == "deepseek-v3") return {"deepseek_v3", "671B"};
  if (m.id == "qwen3-235b-a22b") return {"qwen3", "235B-A22B"};
  if (m.id == "qwen3-30b-a3b") return {"qwen3", "30B-A3B"};
  if (m.id == "qwen3-8b") return {"qwen3", "8B"};
  return {"", ""};
}

// The config-registry name (models/<name>/config_registry.py at b5bcd76c):
// "<module>_<flavor>" in lower case with '-' as '_'.
std::string TorchtitanConfig(const std::string& module,
                             const std::string& flavor) {
  std::string f = ToLower(flavor);
  std::replace(f.begin(), f.end(), '-', '_');
  return module + "_" + f;
}

// Looped schedules take 2 stages per rank unless
// pipeline_parallel_layers_per_stage sets the count: ceil((layers + 1 + 1) /
// per stage) virtual stages, the embedding and the output counting as one
// layer each (distributed/pipeline_parallel.py:59-115 at v0.2.2).
void TorchtitanStages(LaunchText& out, int layers, int pp, int vpp) {
  for (int per = 1; per <= layers + 2; ++per) {
    if ((layers + 2 + per - 1) / per == pp * vpp) {
      out.Flag("--parallelism.pipeline_parallel_layers_per_stage", per);
      return;
    }
  }
  out.Comment(fmt::format(
      "no layers-per-stage count gives {} virtual stages for {} layers: "
      "torchtitan will run 2 per rank",
      pp * vpp, layers));
}

void TorchtitanParallelism(LaunchText& out, const estimate::TrainingConfig& cfg,
                           const Degrees& d, int layers, int replicate,
                           int shard, long local, bool registry) {
  out.Flag("--parallelism.data_parallel_replicate_degree", replicate);
  out.Flag("--parallelism.data_parallel_shard_degree", shard);
  out.Flag("--parallelism.tensor_parallel_degree", d.tp);
  if (d.tp > 1 && cfg.habits.tp_comm_overlap) {
    // Async TP runs in the compiled model (tensor_parallel.py:17-23 at
    // v0.2.2; CompileConfig at main).
    out.Arg("--compile.enable");
    out.Arg(registry ? "--compile.enable_async_tensor_parallel"
                     : "--parallelism.enable_async_tensor_parallel");
  }
  out.Flag("--parallelism.pipeline_parallel_degree", d.pp);
  if (d.pp > 1) {
    static const char* kSchedules[] = {"GPipe", "1F1B", "Interleaved1F1B"};
    out.Flag("--parallelism.pipeline_parallel_schedule",
             kSchedules[static_cast<int>(cfg.layout.schedule)]);
    if (registry) {
      // A count here (configs.py:232), a size in the TOML era.
      out.Flag("--parallelism.num_pp_microbatches",
               std::max(1L, local / std::max(1, cfg.layout.micro_batch)));
    } else {
      out.Flag("--parallelism.pipeline_parallel_microbatch_size",
               cfg.layout.micro_batch);
    }
  }
  if (d.pp > 1 && cfg.layout.vpp > 1 && cfg.layout.vpp != 2) {
    TorchtitanStages(out, layers, d.pp, cfg.layout.vpp);
  }
  out.Flag("--parallelism.context_parallel_degree", d.cp);
  out.Flag("--parallelism.expert_parallel_degree", d.ep);
}

void TorchtitanRemat(LaunchText& out, model::Remat remat, bool registry) {
  const char* mode = remat == model::Remat::kNone   ? "none"
                     : remat == model::Remat::kFull ? "full"
                                                    : "selective";
  if (registry) {
    // A tyro subcommand (distributed/activation_checkpoint.py:332-336).
    out.Arg(std::string("activation_checkpoint:") + mode);
    return;
  }
  out.Flag("--activation_checkpoint.mode", mode);
  if (std::string_view(mode) == "selective")
    out.Flag("--activation_checkpoint.selective_ac_option", "op");
}

Result<std::string> EmitTorchtitan(const model::ModelSpec& m,
                                   const ingest::EngineNames& names,
                                   const hw::System& sys,
                                   const estimate::TrainingConfig& cfg,
                                   const estimate::TrainingEstimate& est,
                                   const Degrees& d, const EngineVersion& v) {
  LaunchText out;
  TrainingHeader(out, "torchtitan", m, sys, cfg, est, d);
  const bool registry = v.era == "registry";
  // torchtitan carves expert parallelism out of the sharded data-parallel
  // ranks and has no ZeRO-1/2: replicas with zero > 0 become FSDP shards.
  const bool zero_as_fsdp = cfg.par.zero > 0 && d.dp > 1;
  const int replicate = zero_as_fsdp ? 1 : d.dp;
  const int shard = d.fsdp * d.ep * (zero_as_fsdp ? d.dp : 1);
  if (zero_as_fsdp) {
    out.Comment(fmt::format(
        "zero={}: torchtitan has no ZeRO-1/2; the {} replicas shard "
        "parameters too (FSDP), which uses less memory and gathers weights "
        "each step",
        cfg.par.zero, d.dp));
  }
  HostComment(out, sys);
  out.Command(Torchrun(sys, "-m torchtitan.train"));
  const auto [module, flavor] = TorchtitanModel(m, names);
  const bool fp8 = cfg.precision.matmul == hw::Dtype::kFp8;
  const long gbs = GlobalSequences(cfg);
  const long dp_ranks = static_cast<long>(replicate) * shard;
  const long local = d.pp > 1 ? gbs / dp_ranks : cfg.layout.micro_batch;
  if (registry) {
    if (!module.empty()) {
      out.Flag("--module", module);
      out.Flag("--config",
               TorchtitanConfig(module, flavor) + (fp8 ? "_float8" : ""));
    }
    out.Flag("--training.max_context_length", static_cast<long>(cfg.seq));
    out.Flag("--training.num_tokens_per_microbatch_per_dp_rank",
             local * static_cast<long>(cfg.seq));
    out.Flag("--training.num_tokens_per_train_step",
             gbs * static_cast<long>(cfg.seq));
  } else {
    if (!module.empty()) {
      out.Flag("--model.name", module);
      out.Flag("--model.flavor", flavor);
    }
    if (fp8) out.Flag("--model.converters", "quantize.linear.float8");
    out.Flag("--training.seq_len", static_cast<long>(cfg.seq));
    out.Flag("--training.local_batch_size", local);
    out.Flag("--training.global_batch_size", gbs);
  }
  TorchtitanParallelism(out, cfg, d, m.num_layers, replicate, shard, local,
                        registry);
  TorchtitanRemat(out, cfg.memory.remat, registry);
  TorchtitanNotes(out, m, cfg, d);
  if (cfg.memory.offload_optimizer) out.Arg("--training.enable_cpu_offload");
  return out.Str();
}

int ReplicaChips(const estimate::ServeConfig& cfg) {
  return cfg.tp * cfg.ep * cfg.pp;
}

void ServingHeader(LaunchText& out, std::string_view engine,
                   const model::ModelSpec& m, const hw::System& sys,
                   const estimate::ServeConfig& cfg,
                   const estimate::ServeEstimate& est) {
  out.Comment(fmt::format(
      "{} -> {}: {} on {} ({} chips): {} replica(s) of tp={}{}{}{}, batch {}",
      kVersion, engine, m.name, sys.id, sys.num_chips(), cfg.dp, cfg.tp,
      cfg.ep > 1 ? fmt::format(" ep={}", cfg.ep) : std::string(),
      cfg.pp > 1 ? fmt::format(" pp={}", cfg.pp) : std::string(),
      cfg.dp_attention ? std::string(" with DP attention") : std::string(),
      FormatNumber(cfg.batch)));
  out.Comment(fmt::format(
      "predicted ({} mode): TTFT {}, {} per output token, {:.0f} tokens/s per "
      "chip, {} of {} HBM per chip{}",
      cfg.mode == estimate::Mode::kPeak ? "peak" : "realistic",
      units::FormatSeconds(est.ttft), units::FormatSeconds(est.decode_step),
      est.tokens_per_s_per_chip, units::FormatBytes(est.total_bytes),
      units::FormatBytes(est.capacity_bytes),
      est.feasible ? "" : " (INFEASIBLE: " + est.reason + ")"));
  if (cfg.dp > 1) {
    out.Comment(fmt::format(
        "launch {} copies of this command, one per replica of {} chip{}, "
        "behind a load balancer",
        cfg.dp, ReplicaChips(cfg), ReplicaChips(cfg) > 1 ? "s" : ""));
  }
  if (cfg.spec.on()) {
    out.Comment(fmt::format(
        "speculative decoding: {} draft token{} per step, {:.2f} tokens per "
        "verify step expected at the acceptance given to scalemodel",
        cfg.spec.k, cfg.spec.k > 1 ? "s" : "",
        estimate::SpecExpectedTokens(cfg.spec)));
  }
}

std::string ModelPath(const model::ModelSpec& m,
                      const ingest::EngineNames& names, LaunchText& out) {
  if (!names.hf_repo.empty()) return names.hf_repo;
  out.Comment("no checkpoint known for " + m.name +
              ": replace <checkpoint> with its HuggingFace repo or directory");
  return "<checkpoint>";
}

void WeightFlags(LaunchText& out, const model::ModelSpec& m,
                 const estimate::ServeConfig& cfg, const char* fp8_kv) {
  if (cfg.weights == hw::Dtype::kFp8 && m.weight_dtype != hw::Dtype::kFp8) {
    out.Flag("--quantization", "fp8");
  } else if (cfg.weights != hw::Dtype::kBf16 && cfg.weights != m.weight_dtype) {
    out.Comment(fmt::format(
        "{} weights: load a checkpoint quantized to {} (the engine's "
        "--quantization names depend on the format)",
        hw::DtypeName(cfg.weights), hw::DtypeName(cfg.weights)));
  }
  if (cfg.kv == hw::Dtype::kFp8) out.Flag("--kv-cache-dtype", fp8_kv);
}

// The checkpoint of a draft model or EAGLE head, or a placeholder with a
// comment saying what to put there.
std::string DraftPath(const estimate::SpecDecode& sp, LaunchText& out) {
  if (sp.kind == estimate::SpecDecode::kDraft) {
    if (!sp.draft_repo.empty()) return sp.draft_repo;
    const std::string id = sp.draft ? sp.draft->id : "draft";
    out.Comment("no checkpoint known for the draft model " + id +
                ": replace <" + id + "> with its HuggingFace repo");
    return "<" + id + ">";
  }
  out.Comment(
      "replace <eagle-head> with the EAGLE draft head trained for this model "
      "(a HuggingFace repo or directory)");
  return "<eagle-head>";
}

// vLLM's --speculative-config JSON (vllm-project/vllm
// vllm/config/speculative.py SpeculativeConfig: method, model,
// num_speculative_tokens; SpeculativeMethod: "mtp" (the model's own MTP
// layers), "eagle", "draft_model", "ngram").
void VllmSpec(LaunchText& out, const estimate::SpecDecode& sp) {
  if (!sp.on()) return;
  std::string body;
  switch (sp.kind) {
    case estimate::SpecDecode::kMtp:
      body = R"("method":"mtp")";
      break;
    case estimate::SpecDecode::kEagle:
      body =
          fmt::format(R"("method":"eagle","model":"{}")", DraftPath(sp, out));
      break;
    case estimate::SpecDecode::kDraft:
      body = fmt::format(R"("method":"draft_model","model":"{}")",
                         DraftPath(sp, out));
      break;
    case estimate::SpecDecode::kNgram:
    case estimate::SpecDecode::kNone:
      body = R"("method":"ngram")";
      break;
  }
  out.Flag("--speculative-config",
           fmt::format(R"('{{{},"num_speculative_tokens":{}}}')", body, sp.k));
}

// Redundant experts: vLLM's EPLB (vllm/config/parallel.py EPLBConfig
// num_redundant_experts, --enable-eplb, --eplb-config JSON); SGLang's
// --enable-eplb --ep-num-redundant-experts (server_args.py).
void VllmEplb(LaunchText& out, const estimate::ServeConfig& cfg) {
  if (cfg.redundant_experts <= 0) return;
  out.Arg("--enable-eplb");
  out.Flag("--eplb-config", fmt::format(R"('{{"num_redundant_experts":{}}}')",
                                        cfg.redundant_experts));
}

// SGLang's speculative flags (sgl-project/sglang
// python/sglang/srt/server_args.py: --speculative-algorithm EAGLE | NEXTN
// (MTP, run as EAGLE) | STANDALONE (a draft model) | NGRAM,
// --speculative-num-steps, --speculative-eagle-topk,
// --speculative-num-draft-tokens, --speculative-draft-model-path). With
// topk 1 a chain of K steps verifies K + 1 tokens (the last accepted one
// and K drafts).
void SglangSpec(LaunchText& out, const estimate::SpecDecode& sp) {
  if (!sp.on()) return;
  static const char* kAlgo[] = {"", "NEXTN", "EAGLE", "STANDALONE", "NGRAM"};
  out.Flag("--speculative-algorithm", kAlgo[sp.kind]);
  if (sp.kind == estimate::SpecDecode::kEagle ||
      sp.kind == estimate::SpecDecode::kDraft) {
    out.Flag("--speculative-draft-model-path", DraftPath(sp, out));
  }
  if (sp.kind != estimate::SpecDecode::kNgram) {
    out.Flag("--speculative-num-steps", sp.k);
    out.Flag("--speculative-eagle-topk", 1);
  }
  out.Flag("--speculative-num-draft-tokens", sp.k + 1);
}

// A DP replica over several hosts: one `vllm serve` per host, each running
// --data-parallel-size-local ranks, host 0 at --data-parallel-address
// (vLLM docs/serving/data_parallel_deployment.md).
void VllmMultiNode(LaunchText& out, const hw::System& sys,
                   const estimate::ServeConfig& cfg) {
  const int per_host = GpusPerHost(sys);
  const int rank = cfg.tp * cfg.pp;  // GPUs of one DP rank
  if (ReplicaChips(cfg) <= per_host || per_host % rank != 0) return;
  const int local = per_host / rank;
  out.Comment(fmt::format(
      "run on each of the {} hosts with NODE_RANK=0..{} and MASTER_ADDR = "
      "host 0's address; add --headless on every host but host 0",
      ReplicaChips(cfg) / per_host, ReplicaChips(cfg) / per_host - 1));
  out.Flag("--data-parallel-size-local", local);
  out.Flag("--data-parallel-start-rank",
           fmt::format("$((NODE_RANK * {}))", local));
  out.Flag("--data-parallel-address", "${MASTER_ADDR}");
  out.Flag("--data-parallel-rpc-port", 13345);
}

// Where a disaggregated server runs and what it adds to the aggregated
// line; null for an aggregated server.
struct ServerRole {
  const char* mode = "prefill";  // "prefill" or "decode"
  int index = 0, count = 1;      // instance index and pool size
  int port = 8100;
  int bootstrap_port = 0;  // SGLang prefill: --disaggregation-bootstrap-port
  int host = 0;            // first host (HOST_<n>) of the instance
  int first_gpu = 0;       // on that host
  int chips = 1;
  bool spans_hosts = false;
  int max_batched_tokens = 8192;
  bool chunked = false;
  double prompt = 0;  // for the KV transfer buffer
  bool prefill() const { return std::string_view(mode) == "prefill"; }
};

// "export CUDA_VISIBLE_DEVICES=a,b" for an instance that shares its host.
void PinGpus(LaunchText& out, const ServerRole* role, int per_host) {
  if (role == nullptr || role->spans_hosts || role->chips >= per_host) return;
  std::string ids;
  for (int g = role->first_gpu; g < role->first_gpu + role->chips; ++g) {
    ids += fmt::format("{}{}", ids.empty() ? "" : ",", g);
  }
  out.Env("export CUDA_VISIBLE_DEVICES=" + ids);
}

void VllmServer(LaunchText& out, const model::ModelSpec& m,
                const ingest::EngineNames& names, const hw::System& sys,
                const estimate::ServeConfig& cfg, const ServerRole* role) {
  if (sys.chip.is_tpu()) {
    out.Comment("TPU: install vLLM's TPU backend; the flags are the same");
  }
  PinGpus(out, role, GpusPerHost(sys));
  out.Command("vllm serve " + ModelPath(m, names, out));
  if (role != nullptr) out.Flag("--port", role->port);
  // Without DP attention, attention and the dense layers run tensor
  // parallel over all tp x ep chips (docs/model.md 7.5).
  const bool dp_ranks = cfg.ep > 1 && cfg.dp_attention;
  out.Flag("--tensor-parallel-size", dp_ranks ? cfg.tp : cfg.tp * cfg.ep);
  if (cfg.pp > 1) {
    out.Flag("--pipeline-parallel-size", cfg.pp);
    if (ReplicaChips(cfg) > GpusPerHost(sys) &&
        (cfg.ep == 1 || GpusPerHost(sys) % (cfg.tp * cfg.pp) != 0)) {
      // vLLM docs/serving/parallelism_scaling.md: a model over several
      // hosts runs on a Ray cluster.
      out.Comment(
          "pipeline stages span hosts: start a Ray cluster over them first "
          "(vLLM docs/serving/parallelism_scaling.md)");
      out.Flag("--distributed-executor-backend", "ray");
    }
  }
  long seqs = std::lround(std::ceil(cfg.batch));
  if (cfg.ep > 1 && !cfg.dp_attention) {
    out.Comment(fmt::format(
        "ep={}: attention tensor-parallel over all {} chips, experts spread "
        "over them (vLLM's expert parallelism spans tp x dp)",
        cfg.ep, cfg.tp * cfg.ep));
    out.Arg("--enable-expert-parallel");
    if (cfg.pp == 1 && ReplicaChips(cfg) > GpusPerHost(sys)) {
      out.Comment(
          "tensor parallelism spans hosts: start a Ray cluster over them "
          "first (vLLM docs/serving/parallelism_scaling.md)");
      out.Flag("--distributed-executor-backend", "ray");
    }
  } else if (cfg.ep > 1) {
    out.Comment(fmt::format(
        "ep={} with DP attention: attention runs data-parallel on {} ranks "
        "of tp={}, experts are spread over all {} chips of the replica",
        cfg.ep, cfg.ep, cfg.tp, cfg.tp * cfg.ep));
    out.Flag("--data-parallel-size", cfg.ep);
    out.Arg("--enable-expert-parallel");
    VllmMultiNode(out, sys, cfg);
    // --max-num-seqs applies per DP rank (data_parallel_deployment.md).
    seqs = std::lround(std::ceil(cfg.batch / cfg.ep));
    out.Comment(fmt::format(
        "--max-num-seqs is per DP rank: {} x {} ranks = the planned batch {}",
        seqs, cfg.ep, FormatNumber(cfg.batch)));
  }
  VllmEplb(out, cfg);
  VllmSpec(out, cfg.spec);
  out.Flag("--max-num-seqs", seqs);
  if (role != nullptr) {
    out.Flag("--max-num-batched-tokens", role->max_batched_tokens);
  }
  out.Flag("--max-model-len", std::lround(cfg.prompt + cfg.output));
  WeightFlags(out, m, cfg, "fp8");
  if (cfg.memory_fraction > 0) {
    out.Flag("--gpu-memory-utilization", FormatNumber(cfg.memory_fraction));
  }
  if (role != nullptr) {
    // vllm/config/kv_transfer.py KVTransferConfig (kv_connector, kv_role
    // kv_producer | kv_consumer | kv_both); NixlConnector instances take
    // kv_both and the proxy tells each request its side.
    out.Flag("--kv-transfer-config",
             R"('{"kv_connector":"NixlConnector","kv_role":"kv_both"}')");
  }
}

// vLLM's expert parallelism spans every tp x dp rank with whole experts
// (vllm/distributed/parallel_state.py: the EP group is the TP x DP group),
// so a plain ep plan with tp > 1 (experts also split over tp) has no line.
Result<bool> VllmExpressible(const estimate::ServeConfig& cfg) {
  if (cfg.ep > 1 && cfg.tp > 1 && !cfg.dp_attention) {
    return InvalidArgument(
        fmt::format("vLLM's expert parallelism puts whole experts on all "
                    "tp x ep = {} chips, so experts split over tp={} inside "
                    "ep={} cannot be written; plan tp=1,ep={}, add "
                    "--dp-attention, or emit sglang",
                    cfg.tp * cfg.ep, cfg.tp, cfg.ep, cfg.tp * cfg.ep),
        "engine");
  }
  return true;
}

Result<std::string> EmitVllm(const model::ModelSpec& m,
                             const ingest::EngineNames& names,
                             const hw::System& sys,
                             const estimate::ServeConfig& cfg,
                             const estimate::ServeEstimate& est) {
  if (auto ok = VllmExpressible(cfg); !ok) return tl::unexpected(ok.error());
  LaunchText out;
  ServingHeader(out, "vLLM", m, sys, cfg, est);
  VllmServer(out, m, names, sys, cfg, nullptr);
  return out.Str();
}

// SGLang's prefill/decode flags (sgl-project/sglang
// docs/advanced_features/pd_disaggregation.md at cccb6546:
// --disaggregation-mode prefill|decode, --disaggregation-transfer-backend
// mooncake|nixl, --disaggregation-bootstrap-port, --base-gpu-id).
void SglangRole(LaunchText& out, const ServerRole* role) {
  if (role == nullptr) return;
  out.Flag("--host", "0.0.0.0");
  out.Flag("--port", role->port);
  out.Flag("--disaggregation-mode", role->mode);
  out.Flag("--disaggregation-transfer-backend", "mooncake");
  if (role->prefill()) {
    out.Flag("--disaggregation-bootstrap-port", role->bootstrap_port);
  }
  if (!role->spans_hosts && role->first_gpu > 0) {
    out.Flag("--base-gpu-id", role->first_gpu);
  }
  if (role->chunked)
    out.Flag("--chunked-prefill-size", role->max_batched_tokens);
}

void SglangServer(LaunchText& out, const model::ModelSpec& m,
                  const ingest::EngineNames& names, const hw::System& sys,
                  const estimate::ServeConfig& cfg, const ServerRole* role) {
  out.Command("python3 -m sglang.launch_server --model-path " +
              ModelPath(m, names, out));
  SglangRole(out, role);
  const int replica = ReplicaChips(cfg);
  out.Flag("--tp-size", cfg.tp * cfg.ep);
  if (cfg.pp > 1) out.Flag("--pp-size", cfg.pp);
  if (const int per_host = GpusPerHost(sys); replica > per_host) {
    // SGLang's multi-node flags (server_args.py: --nnodes, --node-rank,
    // --dist-init-addr).
    out.Comment(fmt::format(
        "run on each of the {} hosts with NODE_RANK=0..{} and MASTER_ADDR = "
        "host 0's address",
        replica / per_host, replica / per_host - 1));
    out.Flag("--nnodes", replica / per_host);
    out.Flag("--node-rank", "${NODE_RANK}");
    out.Flag("--dist-init-addr", "${MASTER_ADDR}:5000");
  }
  if (cfg.ep > 1 && !cfg.dp_attention) {
    out.Comment(fmt::format(
        "ep={}: attention tensor-parallel over all {} chips, experts in {} "
        "groups of tp={}",
        cfg.ep, cfg.tp * cfg.ep, cfg.ep, cfg.tp));
    out.Flag("--ep-size", cfg.ep);
  } else if (cfg.ep > 1) {
    out.Comment(fmt::format(
        "ep={} with DP attention: SGLang's DP attention ({} attention groups "
        "of tp={}) with experts over the {} chips",
        cfg.ep, cfg.ep, cfg.tp, cfg.tp * cfg.ep));
    out.Flag("--ep-size", cfg.tp * cfg.ep);
    out.Arg("--enable-dp-attention");
    out.Flag("--dp-size", cfg.ep);
  }
  if (cfg.redundant_experts > 0) {
    out.Arg("--enable-eplb");
    out.Flag("--ep-num-redundant-experts", cfg.redundant_experts);
  }
  SglangSpec(out, cfg.spec);
  out.Flag("--max-running-requests", std::lround(std::ceil(cfg.batch)));
  out.Flag("--context-length", std::lround(cfg.prompt + cfg.output));
  WeightFlags(out, m, cfg, "fp8_e4m3");
  if (cfg.memory_fraction > 0) {
    out.Flag("--mem-fraction-static", FormatNumber(cfg.memory_fraction));
  }
}

Result<std::string> EmitSglang(const model::ModelSpec& m,
                               const ingest::EngineNames& names,
                               const hw::System& sys,
                               const estimate::ServeConfig& cfg,
                               const estimate::ServeEstimate& est) {
  if (auto ok = NeedGpu(sys, "SGLang"); !ok) return tl::unexpected(ok.error());
  LaunchText out;
  ServingHeader(out, "SGLang", m, sys, cfg, est);
  SglangServer(out, m, names, sys, cfg, nullptr);
  return out.Str();
}

// TensorRT-LLM's degrees: attention tensor-parallel over tp_size ranks, or
// data-parallel over them with enable_attention_dp (attention tp 1); the
// experts over ep_size groups of tp_size / ep_size ranks each (mapping.py:
// tp_size = moe_tp x moe_ep). The plan's tp=T, ep=E replica is tp_size =
// T x E, ep_size = E (moe_tp = T).
Result<bool> TrtllmExpressible(const estimate::ServeConfig& cfg) {
  if (cfg.dp_attention && cfg.tp > 1) {
    return InvalidArgument(
        fmt::format("TensorRT-LLM's enable_attention_dp runs attention with "
                    "tp 1 on every rank, so --dp-attention with tp={} inside "
                    "ep={} cannot be written; plan tp=1 with ep={}, drop "
                    "--dp-attention, or emit sglang",
                    cfg.tp, cfg.ep, cfg.tp * cfg.ep),
        "engine");
  }
  if (cfg.kv == hw::Dtype::kInt8) {
    return InvalidArgument(
        "TensorRT-LLM's kv_cache_config.dtype has no int8 (auto, fp8, "
        "fp8_ds_mla, nvfp4); use --kv fp8 or bf16",
        "engine");
  }
  return true;
}

// The speculative_config block (llm_args.py: MTPDecodingConfig, Eagle,
// Draft_Target, NGram; max_draft_len, speculative_model).
void TrtllmSpecYaml(std::vector<std::string>& y, const estimate::SpecDecode& sp,
                    LaunchText& out) {
  if (!sp.on()) return;
  static const char* kType[] = {"", "MTP", "Eagle", "Draft_Target", "NGram"};
  y.emplace_back("speculative_config:");
  y.push_back(fmt::format("  decoding_type: {}", kType[sp.kind]));
  y.push_back(fmt::format("  max_draft_len: {}", sp.k));
  if (sp.kind == estimate::SpecDecode::kEagle ||
      sp.kind == estimate::SpecDecode::kDraft) {
    y.push_back("  speculative_model: " + DraftPath(sp, out));
  }
}

// The --extra_llm_api_options YAML (llm_args.py at 00043967: TorchLlmArgs
// enable_attention_dp, kv_cache_config.dtype, moe_config (backend,
// load_balancer num_slots / layer_updates_per_iter), speculative_config,
// cuda_graph_config (enable_padding, max_batch_size),
// enable_chunked_prefill, disable_overlap_scheduler,
// cache_transceiver_config (backend, max_tokens_in_buffer)).
std::vector<std::string> TrtllmYaml(const model::ModelSpec& m,
                                    const estimate::ServeConfig& cfg,
                                    long batch, const ServerRole* role,
                                    LaunchText& out) {
  std::vector<std::string> y;
  if (cfg.dp_attention) y.emplace_back("enable_attention_dp: true");
  if (cfg.kv == hw::Dtype::kFp8) {
    y.emplace_back("kv_cache_config:");
    y.emplace_back("  dtype: fp8");
  }
  if (cfg.redundant_experts > 0) {
    // Online expert load balancing (examples/wide_ep/ep_load_balancer):
    // the WIDEEP MoE backend with num_slots = experts + redundant copies.
    y.emplace_back("moe_config:");
    y.emplace_back("  backend: WIDEEP");
    y.emplace_back("  load_balancer:");
    y.push_back(fmt::format("    num_slots: {}",
                            m.moe.num_experts + cfg.redundant_experts));
    y.emplace_back("    layer_updates_per_iter: 1");
  }
  TrtllmSpecYaml(y, cfg.spec, out);
  y.emplace_back("cuda_graph_config:");
  y.emplace_back("  enable_padding: true");
  y.push_back(fmt::format("  max_batch_size: {}", batch));
  if (role != nullptr) {
    if (role->chunked) y.emplace_back("enable_chunked_prefill: true");
    // The README's context servers run without the overlap scheduler.
    if (role->prefill()) y.emplace_back("disable_overlap_scheduler: true");
    y.emplace_back("cache_transceiver_config:");
    y.emplace_back("  backend: NIXL");
    y.push_back(fmt::format("  max_tokens_in_buffer: {}",
                            std::lround(std::ceil(role->prompt))));
  }
  return y;
}

// `trtllm-serve MODEL` with its flags (serve.py at 00209af1: --backend,
// --host, --port, --tp_size, --pp_size, --ep_size, --max_batch_size,
// --max_num_tokens, --max_seq_len, --kv_cache_free_gpu_memory_fraction,
// --extra_llm_api_options), the YAML written first by a heredoc.
void TrtllmServer(LaunchText& out, const model::ModelSpec& m,
                  const ingest::EngineNames& names, const hw::System& sys,
                  const estimate::ServeConfig& cfg, const ServerRole* role) {
  const int tp_size = cfg.tp * cfg.ep;
  const long batch =
      std::lround(std::ceil(cfg.dp_attention ? cfg.batch / cfg.ep : cfg.batch));
  const long seq = std::lround(cfg.prompt + cfg.output);
  const long q = cfg.spec.on() ? cfg.spec.k + 1 : 1;
  long tokens =
      std::max({8192L, std::lround(std::ceil(cfg.prompt)), batch * q});
  if (role != nullptr) {
    tokens = role->chunked ? role->max_batched_tokens
                           : std::max<long>(role->max_batched_tokens,
                                            std::lround(std::ceil(cfg.prompt)));
  }
  if (cfg.dp_attention) {
    out.Comment(fmt::format(
        "enable_attention_dp: each of the {} ranks runs attention for its "
        "own requests; --max_batch_size is per rank ({} x {} = the planned "
        "batch {})",
        tp_size, batch, cfg.ep, FormatNumber(cfg.batch)));
  }
  if (cfg.weights != m.weight_dtype && cfg.weights != hw::Dtype::kBf16) {
    out.Comment(fmt::format(
        "{} weights: TensorRT-LLM's PyTorch backend takes the weight format "
        "from the checkpoint's quantization config; serve a {}-quantized "
        "(ModelOpt) checkpoint in place of the one below",
        hw::DtypeName(cfg.weights), hw::DtypeName(cfg.weights)));
  }
  const std::string file =
      role == nullptr
          ? std::string("extra_llm_api_options.yaml")
          : fmt::format("{}_{}.yaml", role->prefill() ? "ctx" : "gen",
                        role->index);
  const std::vector<std::string> yaml = TrtllmYaml(m, cfg, batch, role, out);
  const int per_host = GpusPerHost(sys);
  const bool multi =
      role != nullptr ? role->spans_hosts : ReplicaChips(cfg) > per_host;
  if (multi) {
    out.Comment(fmt::format(
        "the instance spans {} hosts: start it through Slurm or MPI, e.g. "
        "srun -N {} --ntasks-per-node={} --mpi=pmix (TensorRT-LLM "
        "examples/disaggregated/README.md, multi-node execution)",
        ReplicaChips(cfg) / per_host, ReplicaChips(cfg) / per_host, per_host));
  }
  PinGpus(out, role, per_host);
  out.Env("cat > " + file + " <<'EOF'");
  for (const std::string& l : yaml) out.Env(l);
  out.Env("EOF");
  out.Command(std::string(multi ? "trtllm-llmapi-launch " : "") +
              "trtllm-serve " + ModelPath(m, names, out));
  out.Flag("--backend", "pytorch");
  if (role != nullptr) {
    out.Flag("--host", "0.0.0.0");
    out.Flag("--port", role->port);
  }
  out.Flag("--tp_size", tp_size);
  out.Flag("--pp_size", cfg.pp);
  if (m.is_moe()) out.Flag("--ep_size", cfg.ep);
  out.Flag("--max_batch_size", batch);
  out.Flag("--max_num_tokens", tokens);
  out.Flag("--max_seq_len", seq);
  // The KV cache's share of the memory the weights leave: the plan's where
  // it states one (--kv-free-fraction), else TensorRT-LLM's default 0.9
  // (llm_args.py KvCacheConfig), left unwritten.
  if (cfg.kv_free_fraction > 0) {
    out.Flag("--kv_cache_free_gpu_memory_fraction",
             FormatNumber(cfg.kv_free_fraction));
  }
  out.Flag("--extra_llm_api_options", file);
}

Result<std::string> EmitTrtllm(const model::ModelSpec& m,
                               const ingest::EngineNames& names,
                               const hw::System& sys,
                               const estimate::ServeConfig& cfg,
                               const estimate::ServeEstimate& est) {
  if (sys.chip.is_tpu()) {
    return InvalidArgument("TensorRT-LLM runs on NVIDIA GPUs, and " + sys.id +
                               " is a TPU system; --emit vllm writes a TPU "
                               "serving line",
                           "engine");
  }
  if (auto ok = TrtllmExpressible(cfg); !ok) {
    return tl::unexpected(ok.error());
  }
  LaunchText out;
  ServingHeader(out, "TensorRT-LLM", m, sys, cfg, est);
  TrtllmServer(out, m, names, sys, cfg, nullptr);
  return out.Str();
}

// "engine@version": the version must be known (ParseEngineVersion).
Result<std::string> EngineName(std::string_view text) {
  const size_t at = text.find('@');
  if (at == std::string_view::npos) return ToLower(text);
  // An unknown engine gets the caller's "did you mean"; a known one with an
  // unknown version the list of versions.
  if (ParseEngineVersion(text.substr(0, at))) {
    if (auto v = ParseEngineVersion(text); !v) return tl::unexpected(v.error());
  }
  return ToLower(text.substr(0, at));
}

}  // namespace

Result<TrainEngine> ParseTrainEngine(std::string_view text) {
  static const std::vector<std::string> kNames = {"maxtext", "megatron",
                                                  "torchtitan"};
  auto name = EngineName(text);
  if (!name) return tl::unexpected(name.error());
  const std::string t = *name;
  if (t == "maxtext") return TrainEngine::kMaxText;
  if (t == "megatron" || t == "megatron-lm") return TrainEngine::kMegatron;
  if (t == "torchtitan") return TrainEngine::kTorchtitan;
  return InvalidArgument("unknown training engine '" + t + "'" +
                             DidYouMean(t, kNames) +
                             "; expected maxtext, megatron or torchtitan",
                         "engine");
}

Result<ServeEngine> ParseServeEngine(std::string_view text) {
  static const std::vector<std::string> kNames = {"vllm", "sglang", "trtllm"};
  auto name = EngineName(text);
  if (!name) return tl::unexpected(name.error());
  const std::string t = *name;
  if (t == "vllm") return ServeEngine::kVllm;
  if (t == "sglang") return ServeEngine::kSglang;
  if (t == "trtllm" || t == "tensorrt-llm") return ServeEngine::kTrtllm;
  return InvalidArgument("unknown serving engine '" + t + "'" +
                             DidYouMean(t, kNames) +
                             "; expected vllm, sglang or trtllm",
                         "engine");
}

Result<bool> CheckTrainEngine(TrainEngine engine, const hw::System& system) {
  switch (engine) {
    case TrainEngine::kMaxText:
      return true;
    case TrainEngine::kMegatron:
      return NeedGpu(system, "Megatron-LM");
    case TrainEngine::kTorchtitan:
      return NeedGpu(system, "torchtitan");
  }
  return true;
}

estimate::Engine PresetOf(TrainEngine engine) {
  switch (engine) {
    case TrainEngine::kMaxText:
      return estimate::Engine::kMaxText;
    case TrainEngine::kMegatron:
      return estimate::Engine::kMegatron;
    case TrainEngine::kTorchtitan:
      return estimate::Engine::kTorchtitan;
  }
  return estimate::Engine::kMegatron;
}

namespace {

Engine EngineOf(TrainEngine e) {
  switch (e) {
    case TrainEngine::kMaxText:
      return Engine::kMaxText;
    case TrainEngine::kMegatron:
      return Engine::kMegatron;
    case TrainEngine::kTorchtitan:
      return Engine::kTorchtitan;
  }
  return Engine::kMegatron;
}

Result<std::string> EmitTrainingFor(TrainEngine engine, const EngineVersion& v,
                                    const ingest::ImportedModel& model,
                                    const hw::System& system,
                                    const estimate::TrainingConfig& cfg,
                                    const estimate::TrainingEstimate& est) {
  if (auto ok = CheckTrainEngine(engine, system); !ok) {
    return tl::unexpected(ok.error());
  }
  const Degrees d = DegreesOf(est);
  switch (engine) {
    case TrainEngine::kMaxText:
      return EmitMaxText(model.spec, model.engine_names, system, cfg, est, d);
    case TrainEngine::kMegatron:
      return EmitMegatron(model.spec, system, cfg, est, d);
    case TrainEngine::kTorchtitan:
      return EmitTorchtitan(model.spec, model.engine_names, system, cfg, est, d,
                            v);
  }
  return InvalidArgument("unknown training engine", "engine");
}

Result<CheckedLaunch> Check(const EngineVersion& v, Result<std::string> text,
                            const model::ModelSpec& m,
                            const hw::System& system) {
  if (!text) return tl::unexpected(text.error());
  CheckedLaunch c;
  c.version = v;
  c.failures = ValidateLaunch(v, *text, ContextFor(m, system));
  if (c.launchable()) {
    c.text =
        fmt::format(
            "# checked against {}@{} ({} {}): passes scalemodel's {} launch "
            "rules (docs/launch.md)\n",
            EngineId(v.engine), v.name, v.commit, v.date, RulesOf(v).size()) +
        *text;
  }
  return c;
}

}  // namespace

std::string CheckedLaunch::Reason() const {
  if (failures.empty()) return "";
  return fmt::format("{}@{} cannot launch this plan: {}",
                     EngineId(version.engine), version.name,
                     failures.front().Sentence());
}

Result<std::string> EmitTraining(TrainEngine engine,
                                 const ingest::ImportedModel& model,
                                 const hw::System& system,
                                 const estimate::TrainingConfig& cfg,
                                 const estimate::TrainingEstimate& est) {
  return EmitTrainingFor(engine, KnownVersions(EngineOf(engine)).front(), model,
                         system, cfg, est);
}

Result<CheckedLaunch> EmitTrainingChecked(
    std::string_view engine, const ingest::ImportedModel& model,
    const hw::System& system, const estimate::TrainingConfig& cfg,
    const estimate::TrainingEstimate& est) {
  auto te = ParseTrainEngine(engine);
  if (!te) return tl::unexpected(te.error());
  auto v = ParseEngineVersion(engine);
  if (!v) return tl::unexpected(v.error());
  return Check(*v, EmitTrainingFor(*te, *v, model, system, cfg, est),
               model.spec, system);
}

Result<CheckedLaunch> EmitServingChecked(std::string_view engine,
                                         const ingest::ImportedModel& model,
                                         const hw::System& system,
                                         const estimate::ServeConfig& cfg,
                                         const estimate::ServeEstimate& est) {
  auto se = ParseServeEngine(engine);
  if (!se) return tl::unexpected(se.error());
  auto v = ParseEngineVersion(engine);
  if (!v) return tl::unexpected(v.error());
  return Check(*v, EmitServing(*se, model, system, cfg, est), model.spec,
               system);
}

bool CanLaunchTraining(std::string_view engine,
                       const ingest::ImportedModel& model,
                       const hw::System& system,
                       const estimate::TrainingConfig& cfg) {
  auto est = estimate::EstimateTraining(model.spec, system, cfg);
  if (!est) return false;
  auto c = EmitTrainingChecked(engine, model, system, cfg, *est);
  return c && c->launchable();
}

Result<std::string> EmitServing(ServeEngine engine,
                                const ingest::ImportedModel& model,
                                const hw::System& system,
                                const estimate::ServeConfig& cfg,
                                const estimate::ServeEstimate& est) {
  if (cfg.spec.kind == estimate::SpecDecode::kMtp &&
      model.spec.mtp_layers == 0) {
    // vLLM's "mtp" method, SGLang's NEXTN and TensorRT-LLM's MTP load the
    // checkpoint's own multi-token-prediction layers
    // (vllm/config/speculative.py MTPModelTypes; server_args.py NEXTN;
    // llm_args.py MTPDecodingConfig).
    return InvalidArgument(
        fmt::format("{} runs --spec mtp from the checkpoint's own "
                    "multi-token-prediction layers and {} has none; use "
                    "--spec eagle:K, draft:MODEL:K or ngram:K",
                    ServeEngineName(engine), model.spec.id),
        "engine");
  }
  switch (engine) {
    case ServeEngine::kVllm:
      return EmitVllm(model.spec, model.engine_names, system, cfg, est);
    case ServeEngine::kSglang:
      return EmitSglang(model.spec, model.engine_names, system, cfg, est);
    case ServeEngine::kTrtllm:
      return EmitTrtllm(model.spec, model.engine_names, system, cfg, est);
  }
  return InvalidArgument("unknown serving engine", "engine");
}

std::string_view ServeEngineName(ServeEngine engine) {
  switch (engine) {
    case ServeEngine::kVllm:
      return "vLLM";
    case ServeEngine::kSglang:
      return "SGLang";
    case ServeEngine::kTrtllm:
      return "TensorRT-LLM";
  }
  return "vLLM";
}

namespace {

// The instances of both pools packed over the system's hosts in order
// (prefill first), each with its port and place.
std::vector<ServerRole> PlaceInstances(const hw::System& sys,
                                       const DisaggregatedPlan& plan) {
  const int per_host = GpusPerHost(sys);
  std::vector<ServerRole> roles;
  int gpu = 0;
  for (const bool prefill : {true, false}) {
    const estimate::ServeConfig& c = prefill ? plan.prefill : plan.decode;
    for (int i = 0; i < c.dp; ++i) {
      ServerRole r;
      r.mode = prefill ? "prefill" : "decode";
      r.index = i;
      r.count = c.dp;
      r.port = (prefill ? 8100 : 8200) + i;
      r.bootstrap_port = 8998 + i;
      r.chips = ReplicaChips(c);
      r.host = gpu / per_host;
      r.first_gpu = gpu % per_host;
      r.spans_hosts = r.chips > per_host;
      r.max_batched_tokens = plan.max_batched_tokens;
      r.chunked = prefill && plan.chunked_prefill;
      r.prompt = c.prompt;
      gpu += r.chips;
      roles.push_back(r);
    }
  }
  return roles;
}

std::string PoolText(const estimate::ServeConfig& c) {
  return fmt::format("{} x tp={}{}{} ({} chips)", c.dp, c.tp,
                     c.ep > 1 ? fmt::format(" ep={}", c.ep) : std::string(),
                     c.dp_attention ? " dp-attention" : "",
                     c.dp * ReplicaChips(c));
}

std::string DisaggHeader(std::string_view engine, const model::ModelSpec& m,
                         const hw::System& sys, const DisaggregatedPlan& plan,
                         std::string_view transfer) {
  LaunchText h;
  h.Comment(fmt::format(
      "{} -> {}, disaggregated: {} on {} ({} chips): prefill {} + decode {}, "
      "KV over {}",
      kVersion, engine, m.name, sys.id, sys.num_chips(), PoolText(plan.prefill),
      PoolText(plan.decode), transfer));
  if (plan.ttft_p99_s > 0 || plan.tpot_p99_s > 0) {
    h.Comment(
        fmt::format("simulated: TTFT p99 {}, TPOT p99 {}",
                    units::FormatSeconds(units::Seconds(plan.ttft_p99_s)),
                    units::FormatSeconds(units::Seconds(plan.tpot_p99_s))));
  }
  if (plan.overlap == estimate::KvOverlap::kLayerwise) {
    h.Comment(
        "the estimate moved the KV cache layer by layer (--kv-transfer "
        "layerwise); the engine sends it when a request's prefill finishes, "
        "so expect the 'after' transfer time on TTFT");
  }
  const int hosts = sys.num_chips() / GpusPerHost(sys);
  h.Comment(fmt::format(
      "set {} to the address{} of the {} ({} GPUs{}); the instances fill "
      "them in order, prefill first: run each block on its host (servers "
      "start in the background), then the router",
      hosts == 1 ? std::string("HOST_0")
                 : fmt::format("HOST_0..HOST_{}", hosts - 1),
      hosts == 1 ? "" : "es",
      hosts == 1 ? std::string("host") : fmt::format("{} hosts", hosts),
      GpusPerHost(sys), hosts == 1 ? "" : " each"));
  // Without a command, Str() ends with an empty line.
  const std::string s = h.Str();
  return s.substr(0, s.size() - 1);
}

std::string InstanceComment(const ServerRole& r, int per_host) {
  if (r.spans_hosts) {
    return fmt::format(
        "{} instance {} of {}: HOST_{}..HOST_{} ({} GPUs), MASTER_ADDR = "
        "${{HOST_{}}}",
        r.mode, r.index, r.count, r.host, r.host + r.chips / per_host - 1,
        r.chips, r.host);
  }
  return fmt::format("{} instance {} of {}: HOST_{}, GPUs {}-{}, port {}",
                     r.mode, r.index, r.count, r.host, r.first_gpu,
                     r.first_gpu + r.chips - 1, r.port);
}

// The router in front of the pools: SGLang's (docs/advanced_features/
// router.md, "Prefill/Decode Disaggregation": --prefill URL BOOTSTRAP_PORT,
// --decode URL); vLLM's NIXL toy proxy (tests/v1/kv_connector/
// nixl_integration/toy_proxy_server.py: --prefiller-hosts/-ports,
// --decoder-hosts/-ports); TensorRT-LLM's `trtllm-serve disaggregated -c`
// with context_servers / generation_servers (llmapi/disagg_utils.py
// extract_disagg_cfg: num_instances, urls).
std::string RouterText(ServeEngine engine, const std::vector<ServerRole>& rs) {
  LaunchText out;
  auto host = [](const ServerRole& r) {
    return fmt::format("${{HOST_{}}}", r.host);
  };
  if (engine == ServeEngine::kSglang) {
    out.Comment("router (on any host): the OpenAI API on port 8000");
    out.Command("python3 -m sglang_router.launch_router --pd-disaggregation");
    for (const ServerRole& r : rs) {
      if (r.prefill()) {
        out.Flag("--prefill", fmt::format("http://{}:{} {}", host(r), r.port,
                                          r.bootstrap_port));
      }
    }
    for (const ServerRole& r : rs) {
      if (!r.prefill()) {
        out.Flag("--decode", fmt::format("http://{}:{}", host(r), r.port));
      }
    }
    out.Flag("--host", "0.0.0.0");
    out.Flag("--port", 8000);
    return out.Str();
  }
  if (engine == ServeEngine::kVllm) {
    out.Comment(
        "proxy (on any host): vLLM's NIXL example proxy, "
        "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py in the "
        "vLLM repository; the OpenAI API on port 8000");
    out.Command(
        "python3 tests/v1/kv_connector/nixl_integration/toy_proxy_server.py");
    out.Flag("--port", 8000);
    std::string ph, pp, dh, dp;
    for (const ServerRole& r : rs) {
      (r.prefill() ? ph : dh) += " " + host(r);
      (r.prefill() ? pp : dp) += fmt::format(" {}", r.port);
    }
    out.Arg("--prefiller-hosts" + ph);
    out.Arg("--prefiller-ports" + pp);
    out.Arg("--decoder-hosts" + dh);
    out.Arg("--decoder-ports" + dp);
    return out.Str();
  }
  out.Comment(
      "disaggregated server (on any host): routes each request to a context "
      "then a generation server; the OpenAI API on port 8000");
  out.Env("cat > disagg_config.yaml <<EOF");
  out.Env("hostname: 0.0.0.0");
  out.Env("port: 8000");
  out.Env("backend: pytorch");
  for (const bool prefill : {true, false}) {
    int n = 0;
    for (const ServerRole& r : rs) n += r.prefill() == prefill ? 1 : 0;
    out.Env(prefill ? "context_servers:" : "generation_servers:");
    out.Env(fmt::format("  num_instances: {}", n));
    out.Env("  urls:");
    for (const ServerRole& r : rs) {
      if (r.prefill() == prefill) {
        out.Env(fmt::format("    - \"{}:{}\"", host(r), r.port));
      }
    }
  }
  out.Env("EOF");
  out.Command("trtllm-serve disaggregated -c disagg_config.yaml");
  return out.Str();
}

// One instance's server line (no header).
std::string InstanceText(ServeEngine engine, const ingest::ImportedModel& model,
                         const hw::System& sys, const estimate::ServeConfig& c,
                         const ServerRole& r) {
  LaunchText out;
  out.Comment(InstanceComment(r, GpusPerHost(sys)));
  estimate::ServeConfig one = c;
  one.dp = 1;
  switch (engine) {
    case ServeEngine::kVllm:
      VllmServer(out, model.spec, model.engine_names, sys, one, &r);
      break;
    case ServeEngine::kSglang:
      SglangServer(out, model.spec, model.engine_names, sys, one, &r);
      break;
    case ServeEngine::kTrtllm:
      TrtllmServer(out, model.spec, model.engine_names, sys, one, &r);
      break;
  }
  out.Background();
  return out.Str();
}

const char* TransferName(ServeEngine engine) {
  switch (engine) {
    case ServeEngine::kVllm:
      return "NIXL (vLLM's NixlConnector)";
    case ServeEngine::kSglang:
      return "Mooncake (--disaggregation-transfer-backend; nixl also works)";
    case ServeEngine::kTrtllm:
      return "NIXL (cache_transceiver_config; UCX and MOONCAKE also work)";
  }
  return "";
}

Result<bool> CheckDisaggPlan(ServeEngine engine,
                             const ingest::ImportedModel& model,
                             const hw::System& system,
                             const DisaggregatedPlan& plan) {
  if (system.chip.is_tpu()) {
    return InvalidArgument(
        fmt::format("disaggregated launch lines are written for GPU systems "
                    "(NIXL or Mooncake KV transfer), and {} is a TPU system",
                    system.id),
        "engine");
  }
  const int chips = plan.prefill.dp * ReplicaChips(plan.prefill) +
                    plan.decode.dp * ReplicaChips(plan.decode);
  if (chips != system.num_chips() || plan.prefill.dp < 1 ||
      plan.decode.dp < 1) {
    return InvalidArgument(
        fmt::format("the prefill and decode pools use {} chips and {} has {}",
                    chips, system.id, system.num_chips()),
        "engine");
  }
  for (const estimate::ServeConfig* c : {&plan.prefill, &plan.decode}) {
    if (c->spec.kind == estimate::SpecDecode::kMtp &&
        model.spec.mtp_layers == 0) {
      return InvalidArgument(
          fmt::format("{} runs --spec mtp from the checkpoint's own "
                      "multi-token-prediction layers and {} has none",
                      ServeEngineName(engine), model.spec.id),
          "engine");
    }
    if (engine == ServeEngine::kTrtllm) {
      if (auto ok = TrtllmExpressible(*c); !ok) {
        return tl::unexpected(ok.error());
      }
    }
    if (engine == ServeEngine::kVllm) {
      if (auto ok = VllmExpressible(*c); !ok) {
        return tl::unexpected(ok.error());
      }
    }
  }
  return true;
}

}  // namespace

Result<std::string> EmitDisaggregated(ServeEngine engine,
                                      const ingest::ImportedModel& model,
                                      const hw::System& system,
                                      const DisaggregatedPlan& plan) {
  auto c = EmitDisaggregatedParts(engine, model, system, plan);
  if (!c) return tl::unexpected(c.error());
  std::string text;
  for (size_t i = 0; i < c->size(); ++i) {
    text += (*c)[i] + (i + 1 < c->size() ? "\n" : "");
  }
  return text;
}

Result<std::vector<std::string>> EmitDisaggregatedParts(
    ServeEngine engine, const ingest::ImportedModel& model,
    const hw::System& system, const DisaggregatedPlan& plan) {
  if (auto ok = CheckDisaggPlan(engine, model, system, plan); !ok) {
    return tl::unexpected(ok.error());
  }
  const std::vector<ServerRole> roles = PlaceInstances(system, plan);
  std::vector<std::string> parts = {DisaggHeader(
      ServeEngineName(engine), model.spec, system, plan, TransferName(engine))};
  for (const ServerRole& r : roles) {
    parts.push_back(InstanceText(engine, model, system,
                                 r.prefill() ? plan.prefill : plan.decode, r));
  }
  parts.push_back(RouterText(engine, roles));
  return parts;
}

Result<CheckedLaunch> EmitDisaggregatedChecked(
    std::string_view engine, const ingest::ImportedModel& model,
    const hw::System& system, const DisaggregatedPlan& plan) {
  auto se = ParseServeEngine(engine);
  if (!se) return tl::unexpected(se.error());
  auto v = ParseEngineVersion(engine);
  if (!v) return tl::unexpected(v.error());
  auto parts = EmitDisaggregatedParts(*se, model, system, plan);
  if (!parts) return tl::unexpected(parts.error());
  CheckedLaunch c;
  c.version = *v;
  // Each server line against the engine's rules on its own GPUs.
  const std::vector<ServerRole> roles = PlaceInstances(system, plan);
  for (size_t i = 0; i < roles.size(); ++i) {
    LaunchContext ctx = ContextFor(model.spec, system);
    ctx.chips = roles[i].chips;
    for (RuleFailure& f : ValidateLaunch(*v, (*parts)[i + 1], ctx)) {
      c.failures.push_back(std::move(f));
    }
  }
  if (c.launchable()) {
    c.text = fmt::format(
        "# checked against {}@{} ({} {}): each server passes scalemodel's {} "
        "launch rules (docs/launch.md)\n",
        EngineId(v->engine), v->name, v->commit, v->date, RulesOf(*v).size());
    for (size_t i = 0; i < parts->size(); ++i) {
      c.text += (*parts)[i];
      if (i + 1 < parts->size()) c.text += "\n";
    }
  }
  return c;
}

namespace internal {

// For the importers (import_internal.h).
std::vector<int> StageLayers(int layers, int pp, int vpp, int last) {
  return launch::StageLayers(layers, pp, vpp, last);
}

}  // namespace internal

}  // namespace scalemodel::launch
