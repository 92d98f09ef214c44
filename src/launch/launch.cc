#include "scalemodel/launch/launch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "fmt/format.h"
#include "scalemodel/base/strings.h"
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
  void Arg(const std::string& arg) { args_.push_back(arg); }
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
    out += command_;
    for (const std::string& a : args_) out += " \\\n    " + a;
    return out + "\n";
  }

 private:
  std::vector<std::string> comments_;
  std::string command_;
  std::vector<std::string> args_;
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
    if (micro % d.pp != 0) {
      out.Comment(fmt::format(
          "MaxText wants num_pipeline_microbatches to be a multiple of the {} "
          "stages: raise the batch or the microbatch count",
          d.pp));
    }
    if (cfg.layout.vpp > 1) out.Key("num_pipeline_repeats", cfg.layout.vpp);
    out.Comment(
        "MaxText pipelines with a circular (repeat) schedule; the estimate "
        "used " +
        std::string(estimate::ScheduleName(cfg.layout.schedule)));
  } else {
    out.Key("per_device_batch_size",
            FormatNumber(static_cast<double>(gbs) / chips / micro));
    if (micro > 1) out.Key("gradient_accumulation_steps", micro);
  }
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
  if (cfg.precision.matmul == hw::Dtype::kFp8) out.Key("quantization", "fp8");
  // AQT int8 matmuls (--precision int8).
  if (cfg.precision.matmul == hw::Dtype::kInt8) out.Key("quantization", "int8");
  if (cfg.memory.offload_optimizer)
    out.Key("optimizer_memory_host_offload", "True");
  if (cfg.memory.offload_params)
    out.Key("parameter_memory_host_offload", "True");
  if (d.dp > 1 && cfg.par.zero > 0) {
    out.Comment(fmt::format(
        "zero={} has no MaxText equivalent: the data axis keeps full optimizer "
        "state per replica; move those degrees to fsdp to shard it",
        cfg.par.zero));
  }
  return out.Str();
}

// GPUs per host for torchrun: the NVLink domain up to 8; larger domains
// (GB200 NVL72) are racks of 4-GPU compute trays (NVIDIA GB200 NVL72
// datasheet: 18 trays x 4 GPUs).
int GpusPerHost(const hw::System& sys) {
  int domain = sys.chip.nvlink ? sys.chip.nvlink->domain_size : 8;
  int per = domain > 8 ? 4 : domain;
  per = std::max(1, std::min(per, sys.num_chips()));
  while (sys.num_chips() % per != 0) --per;
  return per;
}

// `torchrun` over the system's hosts, GPUs per host from GpusPerHost.
std::string Torchrun(const hw::System& sys, const std::string& entry) {
  const int per_host = GpusPerHost(sys);
  return fmt::format("torchrun --nproc-per-node {} --nnodes {} {}", per_host,
                     sys.num_chips() / per_host, entry);
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

Result<std::string> EmitMegatron(const model::ModelSpec& m,
                                 const hw::System& sys,
                                 const estimate::TrainingConfig& cfg,
                                 const estimate::TrainingEstimate& est,
                                 const Degrees& d) {
  LaunchText out;
  TrainingHeader(out, "Megatron-LM", m, sys, cfg, est, d);
  const int per_host = GpusPerHost(sys);
  out.Comment(fmt::format(
      "run on each of the {} hosts (torchrun also needs --node-rank and "
      "--master-addr); add your data, tokenizer and checkpoint flags; the "
      "tokenizer sets the vocabulary (V = {})",
      sys.num_chips() / per_host, m.vocab));
  out.Command(Torchrun(sys, "pretrain_gpt.py"));
  out.Flag("--tensor-model-parallel-size", d.tp);
  out.Flag("--pipeline-model-parallel-size", d.pp);
  if (d.pp > 1 && cfg.layout.vpp > 1) {
    out.Flag("--num-layers-per-virtual-pipeline-stage",
             m.num_layers / (d.pp * cfg.layout.vpp));
  }
  if (d.pp > 1 && cfg.layout.last_stage_layers > 0) {
    out.Flag("--decoder-last-pipeline-num-layers",
             cfg.layout.last_stage_layers);
    const int rest = m.num_layers - cfg.layout.last_stage_layers;
    if (rest % (d.pp - 1) != 0) {
      out.Comment(fmt::format(
          "Megatron splits the other {} layers evenly over {} stages: pick a "
          "last-stage count that leaves a multiple of {}",
          rest, d.pp - 1, d.pp - 1));
    }
  }
  if (const int mtp = estimate::MtpModules(m, cfg); mtp > 0) {
    out.Flag("--mtp-num-layers", mtp);
  }
  out.Flag("--context-parallel-size", d.cp);
  if (d.cp > 1 && cfg.habits.cp_comm != estimate::CpComm::kRing) {
    out.Flag("--cp-comm-type",
             std::string(estimate::CpCommName(cfg.habits.cp_comm)));
  }
  if (d.ep > 1) out.Flag("--expert-model-parallel-size", d.ep);
  if (d.tp > 1 && cfg.par.sequence_parallel) out.Arg("--sequence-parallel");
  if (cfg.habits.tp_comm_overlap && d.tp > 1) out.Arg("--tp-comm-overlap");
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
  out.Flag("--micro-batch-size", cfg.layout.micro_batch);
  out.Flag("--global-batch-size", GlobalSequences(cfg));
  out.Flag("--seq-length", static_cast<long>(cfg.seq));
  out.Flag("--max-position-embeddings",
           std::max(static_cast<long>(cfg.seq), m.max_positions));
  MegatronModelFlags(out, m);
  MegatronDispatchFlags(out, m, cfg, d);
  // Selective recompute of some modules: the nearest Megatron has to a
  // policy it lacks.
  auto selective = [&](const char* modules, const std::string& why) {
    out.Flag("--recompute-granularity", "selective");
    out.Flag("--recompute-modules", modules);
    out.Comment(why);
  };
  switch (cfg.memory.remat) {
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

Result<std::string> EmitTorchtitan(const model::ModelSpec& m,
                                   const ingest::EngineNames& names,
                                   const hw::System& sys,
                                   const estimate::TrainingConfig& cfg,
                                   const estimate::TrainingEstimate& est,
                                   const Degrees& d) {
  LaunchText out;
  TrainingHeader(out, "torchtitan", m, sys, cfg, est, d);
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
  out.Comment(
      "--section.key flags work with TOML-era and config-registry torchtitan "
      "(add --job.config_file or --module/--config for the rest)");
  out.Command(Torchrun(sys, "-m torchtitan.train"));
  if (!names.torchtitan_model.empty()) {
    out.Flag("--model.name", names.torchtitan_model);
    out.Flag("--model.flavor", names.torchtitan_flavor);
  }
  const long gbs = GlobalSequences(cfg);
  const long dp_ranks = static_cast<long>(replicate) * shard;
  out.Flag("--training.seq_len", static_cast<long>(cfg.seq));
  out.Flag("--training.local_batch_size",
           d.pp > 1 ? gbs / dp_ranks : cfg.layout.micro_batch);
  out.Flag("--training.global_batch_size", gbs);
  out.Flag("--parallelism.data_parallel_replicate_degree", replicate);
  out.Flag("--parallelism.data_parallel_shard_degree", shard);
  out.Flag("--parallelism.tensor_parallel_degree", d.tp);
  if (d.tp > 1 && cfg.habits.tp_comm_overlap) {
    out.Arg("--parallelism.enable_async_tensor_parallel");
  }
  out.Flag("--parallelism.pipeline_parallel_degree", d.pp);
  if (d.pp > 1) {
    static const char* kSchedules[] = {"GPipe", "1F1B", "Interleaved1F1B"};
    out.Flag("--parallelism.pipeline_parallel_schedule",
             kSchedules[static_cast<int>(cfg.layout.schedule)]);
    out.Flag("--parallelism.pipeline_parallel_microbatch_size",
             cfg.layout.micro_batch);
  }
  out.Flag("--parallelism.context_parallel_degree", d.cp);
  if (d.pp > 1 && cfg.layout.last_stage_layers > 0) {
    out.Comment(fmt::format(
        "the estimate put {} layers on the last pipeline stage: split the "
        "model accordingly (torchtitan's pipeline splits it for you)",
        cfg.layout.last_stage_layers));
  }
  if (d.cp > 1 && cfg.habits.cp_comm != estimate::CpComm::kRing) {
    out.Comment(fmt::format(
        "torchtitan's context parallelism is ring attention (--cp-comm "
        "p2p); the estimate assumed --cp-comm {}",
        estimate::CpCommName(cfg.habits.cp_comm)));
  }
  out.Flag("--parallelism.expert_parallel_degree", d.ep);
  if (const int mtp = estimate::MtpModules(m, cfg); mtp > 0) {
    out.Comment(fmt::format(
        "the estimate trains {} multi-token-prediction module(s) as the "
        "model's config has them; if your torchtitan model trains without, "
        "rerun with --mtp-layers 0",
        mtp));
  }
  switch (cfg.memory.remat) {
    case model::Remat::kNone:
      out.Flag("--activation_checkpoint.mode", "none");
      break;
    case model::Remat::kSelective:
    case model::Remat::kSaveMatmulOutputs:
    case model::Remat::kSaveDotExceptMlpIn:
      out.Flag("--activation_checkpoint.mode", "selective");
      out.Flag("--activation_checkpoint.selective_ac_option", "op");
      break;
    case model::Remat::kFull:
      out.Flag("--activation_checkpoint.mode", "full");
      break;
  }
  if (cfg.precision.matmul == hw::Dtype::kFp8) {
    out.Flag("--model.converters", "float8");
    if (cfg.precision.fp8_recipe != estimate::Fp8Recipe::kTensorwise) {
      out.Comment(
          fmt::format("torchtitan's float8 scales each tensor as it is cast "
                      "(tensorwise); the estimate assumed --fp8-recipe {}",
                      estimate::Fp8RecipeName(cfg.precision.fp8_recipe)));
    }
  }
  if (cfg.memory.offload_optimizer) {
    out.Arg("--training.enable_cpu_offload");
    if (!cfg.memory.offload_params) {
      out.Comment(
          "torchtitan's CPU offload moves parameters and gradients as well "
          "as the optimizer state to host memory (--offload-params)");
    }
  }
  return out.Str();
}

void ServingHeader(LaunchText& out, std::string_view engine,
                   const model::ModelSpec& m, const hw::System& sys,
                   const estimate::ServeConfig& cfg,
                   const estimate::ServeEstimate& est) {
  out.Comment(fmt::format(
      "{} -> {}: {} on {} ({} chips): {} replica(s) of tp={}{}, batch {}",
      kVersion, engine, m.name, sys.id, sys.num_chips(), cfg.dp, cfg.tp,
      cfg.ep > 1 ? fmt::format(" ep={}", cfg.ep) : std::string(),
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
        cfg.dp, cfg.tp * cfg.ep, cfg.tp * cfg.ep > 1 ? "s" : ""));
  }
  const int replica = cfg.tp * cfg.ep;
  const int domain = sys.chip.nvlink ? sys.chip.nvlink->domain_size : 0;
  if (domain > 0 && replica > domain) {
    out.Comment(fmt::format(
        "a replica of {} GPUs spans NVLink domains of {}: start it across "
        "hosts (vLLM: a Ray cluster; SGLang: --nnodes, --node-rank, "
        "--dist-init-addr)",
        replica, domain));
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

Result<std::string> EmitVllm(const model::ModelSpec& m,
                             const ingest::EngineNames& names,
                             const hw::System& sys,
                             const estimate::ServeConfig& cfg,
                             const estimate::ServeEstimate& est) {
  LaunchText out;
  ServingHeader(out, "vLLM", m, sys, cfg, est);
  if (sys.chip.is_tpu()) {
    out.Comment("TPU: install vLLM's TPU backend; the flags are the same");
  }
  out.Command("vllm serve " + ModelPath(m, names, out));
  out.Flag("--tensor-parallel-size", cfg.tp);
  if (cfg.ep > 1) {
    out.Comment(fmt::format(
        "ep={}: attention runs data-parallel on {} ranks of tp={}, experts "
        "are spread over all {} chips of the replica",
        cfg.ep, cfg.ep, cfg.tp, cfg.tp * cfg.ep));
    out.Flag("--data-parallel-size", cfg.ep);
    out.Arg("--enable-expert-parallel");
  }
  out.Flag("--max-num-seqs", std::lround(std::ceil(cfg.batch)));
  out.Flag("--max-model-len", std::lround(cfg.prompt + cfg.output));
  WeightFlags(out, m, cfg, "fp8");
  return out.Str();
}

Result<std::string> EmitSglang(const model::ModelSpec& m,
                               const ingest::EngineNames& names,
                               const hw::System& sys,
                               const estimate::ServeConfig& cfg,
                               const estimate::ServeEstimate& est) {
  if (auto ok = NeedGpu(sys, "SGLang"); !ok) return tl::unexpected(ok.error());
  LaunchText out;
  ServingHeader(out, "SGLang", m, sys, cfg, est);
  out.Command("python3 -m sglang.launch_server --model-path " +
              ModelPath(m, names, out));
  const int replica = cfg.tp * cfg.ep;
  out.Flag("--tp-size", replica);
  if (cfg.ep > 1) {
    out.Comment(fmt::format(
        "ep={}: SGLang's DP attention ({} attention groups of tp={}) with "
        "experts over the {} chips",
        cfg.ep, cfg.ep, cfg.tp, replica));
    out.Flag("--ep-size", replica);
    out.Arg("--enable-dp-attention");
    out.Flag("--dp-size", cfg.ep);
  }
  out.Flag("--max-running-requests", std::lround(std::ceil(cfg.batch)));
  out.Flag("--context-length", std::lround(cfg.prompt + cfg.output));
  WeightFlags(out, m, cfg, "fp8_e4m3");
  return out.Str();
}

}  // namespace

Result<TrainEngine> ParseTrainEngine(std::string_view text) {
  static const std::vector<std::string> kNames = {"maxtext", "megatron",
                                                  "torchtitan"};
  std::string t = ToLower(text);
  if (t == "maxtext") return TrainEngine::kMaxText;
  if (t == "megatron" || t == "megatron-lm") return TrainEngine::kMegatron;
  if (t == "torchtitan") return TrainEngine::kTorchtitan;
  return InvalidArgument("unknown training engine '" + std::string(text) + "'" +
                             DidYouMean(text, kNames) +
                             "; expected maxtext, megatron or torchtitan",
                         "engine");
}

Result<ServeEngine> ParseServeEngine(std::string_view text) {
  static const std::vector<std::string> kNames = {"vllm", "sglang"};
  std::string t = ToLower(text);
  if (t == "vllm") return ServeEngine::kVllm;
  if (t == "sglang") return ServeEngine::kSglang;
  return InvalidArgument("unknown serving engine '" + std::string(text) + "'" +
                             DidYouMean(text, kNames) +
                             "; expected vllm or sglang",
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

Result<std::string> EmitTraining(TrainEngine engine,
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
      return EmitTorchtitan(model.spec, model.engine_names, system, cfg, est,
                            d);
  }
  return InvalidArgument("unknown training engine", "engine");
}

Result<std::string> EmitServing(ServeEngine engine,
                                const ingest::ImportedModel& model,
                                const hw::System& system,
                                const estimate::ServeConfig& cfg,
                                const estimate::ServeEstimate& est) {
  switch (engine) {
    case ServeEngine::kVllm:
      return EmitVllm(model.spec, model.engine_names, system, cfg, est);
    case ServeEngine::kSglang:
      return EmitSglang(model.spec, model.engine_names, system, cfg, est);
  }
  return InvalidArgument("unknown serving engine", "engine");
}

}  // namespace scalemodel::launch
