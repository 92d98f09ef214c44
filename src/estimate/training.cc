#include "scalemodel/estimate/training.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scalemodel/base/check.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/units/format.h"

namespace scalemodel::estimate {

using units::Bytes;
using units::Seconds;

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
                         "--schedule");
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

Result<Parallelism> ParsePlan(std::string_view text) {
  Parallelism p;
  static const std::vector<std::string> kKeys = {"dp", "fsdp", "tp",   "pp",
                                                 "ep", "cp",   "zero", "sp"};
  for (const std::string& raw : Split(text, ',')) {
    std::string item(Trim(raw));
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return InvalidArgument(
          "expected KEY=VALUE such as 'fsdp=256,tp=4', got '" + item + "'",
          "--plan");
    }
    std::string key = ToLower(Trim(item.substr(0, eq)));
    std::string value(Trim(item.substr(eq + 1)));
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return InvalidArgument(
          "unknown key '" + key + "'" + DidYouMean(key, kKeys) +
              "; expected dp, fsdp, tp, pp, ep, cp, zero or sp",
          "--plan");
    }
    if (key == "sp") {
      p.sequence_parallel = value == "1" || value == "true" || value == "on";
      continue;
    }
    bool numeric =
        !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        });
    if (!numeric) {
      if (key == "zero") {
        return InvalidArgument("zero: expected 0, 1 or 2, got '" + value + "'",
                               "--plan");
      }
      p.axes[key] = Split(value, '.');
      continue;
    }
    long v = std::strtol(value.c_str(), nullptr, 10);
    if (key == "zero") {
      if (v > 2) {
        return InvalidArgument("zero=" + value +
                                   " is not a ZeRO level for dp: use 1 or 2 "
                                   "(ZeRO-3 is fsdp=N)",
                               "--plan");
      }
      p.zero = static_cast<int>(v);
      continue;
    }
    if (v <= 0 || v > 1000000) {
      return InvalidArgument(key + "=" + value + " must be a positive degree",
                             "--plan");
    }
    int* slot = key == "dp"     ? &p.dp
                : key == "fsdp" ? &p.fsdp
                : key == "tp"   ? &p.tp
                : key == "pp"   ? &p.pp
                : key == "ep"   ? &p.ep
                                : &p.cp;
    *slot = static_cast<int>(v);
  }
  return p;
}

namespace {

// The order parallelisms are laid onto physical axes when given by degree:
// the most communication-hungry innermost (fastest links).
const char* const kOrder[] = {"tp", "cp", "ep", "fsdp", "dp", "pp"};

int* Degree(Parallelism& p, const std::string& k) {
  if (k == "dp") return &p.dp;
  if (k == "fsdp") return &p.fsdp;
  if (k == "tp") return &p.tp;
  if (k == "pp") return &p.pp;
  if (k == "ep") return &p.ep;
  return &p.cp;
}

struct Placement {
  std::vector<int> axes;   // physical axis indices
  std::vector<int> sizes;  // group size on each
};

Result<std::map<std::string, Placement>> Place(Parallelism& par,
                                               const hw::System& sys) {
  sharding::Mesh mesh;
  bool explicit_axes = !par.axes.empty();
  for (const char* k : kOrder) {
    std::string key(k);
    if (explicit_axes) {
      auto it = par.axes.find(key);
      if (it == par.axes.end()) {
        if (*Degree(par, key) > 1) {
          return InvalidArgument(
              "give every parallelism physical axes or none: " + key + "=" +
                  std::to_string(*Degree(par, key)) +
                  " has a degree while others name axes",
              "--plan");
        }
        continue;
      }
      mesh.names.push_back(key);
      mesh.sizes.push_back(0);
      mesh.physical.push_back(it->second);
    } else if (*Degree(par, key) > 1) {
      mesh.names.push_back(key);
      mesh.sizes.push_back(*Degree(par, key));
      mesh.physical.emplace_back();
    }
  }
  std::map<std::string, Placement> out;
  if (mesh.names.empty()) return out;
  auto layout = sharding::LayMesh(mesh, sys);
  if (!layout) {
    return tl::unexpected(
        Error{layout.error().code, layout.error().message, "--plan"});
  }
  for (size_t i = 0; i < mesh.names.size(); ++i) {
    *Degree(par, mesh.names[i]) = mesh.sizes[i];
    out[mesh.names[i]] = {layout->physical[i], layout->sizes[i]};
  }
  return out;
}

}  // namespace

Result<TrainingEstimate> EstimateTraining(const model::ModelSpec& m,
                                          const hw::System& sys,
                                          const TrainingConfig& cfg_in) {
  TrainingConfig cfg = cfg_in;
  Parallelism& par = cfg.par;
  auto placement = Place(par, sys);
  if (!placement) return tl::unexpected(placement.error());
  const int chips = sys.num_chips();
  // ---- Validation (bad input).
  if (par.product() != chips) {
    return InvalidArgument(
        "dp*fsdp*tp*pp*ep*cp = " + std::to_string(par.product()) + " (" +
            par.ToString() + ") but " + sys.id + " has " +
            std::to_string(chips) + " chips",
        "--plan");
  }
  if (m.num_heads % par.tp != 0) {
    return InvalidArgument(
        "tensor_parallel=" + std::to_string(par.tp) +
            " does not divide num_heads=" + std::to_string(m.num_heads),
        "--plan");
  }
  if (par.pp > m.num_layers) {
    return InvalidArgument("pipeline_parallel=" + std::to_string(par.pp) +
                               " is more than the model's " +
                               std::to_string(m.num_layers) + " layers",
                           "--plan");
  }
  if (par.ep > 1 && !m.is_moe()) {
    return InvalidArgument("expert_parallel=" + std::to_string(par.ep) +
                               " needs a "
                               "mixture-of-experts model; " +
                               m.id + " is dense",
                           "--plan");
  }
  if (m.is_moe() && m.moe.num_experts % par.ep != 0) {
    return InvalidArgument(
        "expert_parallel=" + std::to_string(par.ep) +
            " does not divide num_experts=" + std::to_string(m.moe.num_experts),
        "--plan");
  }
  if (!(cfg.seq > 0) || !(cfg.batch_tokens > 0)) {
    return InvalidArgument("expected a positive sequence length and batch",
                           "--batch-tokens");
  }
  if (std::fmod(cfg.seq, par.cp) != 0) {
    return InvalidArgument("context_parallel=" + std::to_string(par.cp) +
                               " does not divide the sequence of " +
                               FormatNumber(cfg.seq) + " tokens",
                           "--plan");
  }
  double seqs = cfg.batch_tokens / cfg.seq;
  if (std::floor(seqs) != seqs) {
    double lo = std::max(1.0, std::floor(seqs));
    return InvalidArgument(
        "a batch of " + FormatNumber(cfg.batch_tokens) +
            " tokens is not a whole number of " + FormatNumber(cfg.seq) +
            "-token sequences (try " + FormatNumber(lo * cfg.seq) + " = " +
            FormatNumber(lo) + "x" + FormatNumber(cfg.seq) +
            "; binary suffixes such as 4Mi give powers of two)",
        "--batch-tokens");
  }
  const int replicas = par.dp * par.fsdp * par.ep;
  if (std::fmod(seqs, replicas) != 0) {
    return InvalidArgument("the batch of " + FormatNumber(seqs) +
                               " sequences does not split over dp*fsdp*ep = " +
                               std::to_string(replicas) + " replicas",
                           "--batch-tokens");
  }
  const double seqs_per_replica = seqs / replicas;
  if (cfg.micro_batch <= 0 ||
      std::fmod(seqs_per_replica, cfg.micro_batch) != 0) {
    return InvalidArgument("micro batch of " + std::to_string(cfg.micro_batch) +
                               " sequences does not divide the " +
                               FormatNumber(seqs_per_replica) +
                               " sequences per replica",
                           "--micro-batch");
  }
  int vpp = cfg.schedule == Schedule::kInterleaved ? std::max(1, cfg.vpp) : 1;
  if (par.pp * vpp > m.num_layers) {
    return InvalidArgument("pp*vpp = " + std::to_string(par.pp * vpp) +
                               " virtual stages but only " +
                               std::to_string(m.num_layers) + " layers",
                           "--vpp");
  }
  if (sys.chip.Peak(cfg.precision).si() <= 0) {
    return InvalidArgument(sys.chip.id + " has no " +
                               std::string(hw::DtypeName(cfg.precision)) +
                               " matrix rate",
                           "--precision");
  }
  const bool peak = cfg.mode == Mode::kPeak;
  const ChipEfficiency eff =
      peak ? PeakEfficiency() : RealisticEfficiency(sys.chip);
  const net::Mode net_mode = peak ? net::Mode::kPeak : net::Mode::kRealistic;
  const hw::Chip& chip = sys.chip;
  const double C = chip.Peak(cfg.precision).si();
  const double C_bf16 = chip.Peak(hw::Dtype::kBf16).si();
  const double W_hbm = chip.hbm_bandwidth.si() * eff.hbm;

  TrainingEstimate est;
  for (const auto& [k, p] : *placement) {
    std::string desc;
    for (size_t i = 0; i < p.axes.size(); ++i) {
      const hw::PhysicalAxis& a = sys.axes[p.axes[i]];
      desc += (desc.empty() ? "" : ".") + a.name +
              (p.sizes[i] < a.size ? "(" + std::to_string(p.sizes[i]) + "/" +
                                         std::to_string(a.size) + ")"
                                   : "");
    }
    est.layout[k] = desc;
  }
  auto coll = [&](net::Collective kind, const std::string& parallelism,
                  double bytes) -> Seconds {
    auto it = placement->find(parallelism);
    if (it == placement->end() || bytes <= 0) return Seconds(0);
    return net::EstimateOnAxes(sys, kind, Bytes(bytes), it->second.axes,
                               it->second.sizes, {net_mode})
        .time;
  };
  auto axis_names = [&](const std::string& parallelism) {
    std::vector<std::string> names;
    auto it = placement->find(parallelism);
    if (it != placement->end()) {
      for (int i : it->second.axes) names.push_back(sys.axes[i].name);
    }
    return names;
  };

  // ---- Shapes.
  const model::ParamCounts pc = model::CountParams(m);
  const int L = m.num_layers;
  const double layers_per_stage = std::ceil(static_cast<double>(L) / par.pp);
  const double moe_frac = [&] {
    int n = 0;
    for (int l = 0; l < L; ++l) n += m.IsMoeLayer(l);
    return static_cast<double>(n) / L;
  }();
  const int microbatches = static_cast<int>(seqs_per_replica / cfg.micro_batch);
  est.microbatches = microbatches;
  const double t = cfg.micro_batch * cfg.seq /
                   par.cp;  // tokens per microbatch per chip group
  const double D = m.d_model, tp = par.tp;
  const double bpe = 2;  // bf16 activations and weights in flight
  const hw::Dtype gemm_dtype = cfg.precision;

  // ---- Compute per microbatch per stage.
  double attn_fwd_flops_layer =
      model::AttentionFlopsPerToken(m, cfg.seq,
                                    model::AttentionFlops::kCausal) /
      L * t / tp;
  Seconds gemm_fwd_layer;  // forward GEMMs of one (average) layer
  {
    Seconds attn_proj;
    if (m.mla) {
      double width = (pc.attention / L) / D;
      attn_proj = GemmTime(chip, eff, t, width / tp, D, gemm_dtype);
    } else {
      double qkv = (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
      attn_proj =
          GemmTime(chip, eff, t, qkv / tp, D, gemm_dtype) +
          GemmTime(chip, eff, t, D, m.num_heads * m.head_dim / tp, gemm_dtype);
    }
    double up = m.gated_mlp ? 2 : 1;
    Seconds dense_mlp = GemmTime(chip, eff, t, up * m.ffn / tp, D, gemm_dtype) +
                        GemmTime(chip, eff, t, D, m.ffn / tp, gemm_dtype);
    Seconds moe_mlp;
    if (m.is_moe()) {
      double local_experts = static_cast<double>(m.moe.num_experts) / par.ep;
      double tokens_per_expert =
          t * m.moe.top_k * cfg.load_imbalance / local_experts;
      double fe = m.moe.expert_ffn;
      moe_mlp =
          local_experts *
          (GemmTime(chip, eff, tokens_per_expert, up * fe / tp, D, gemm_dtype) +
           GemmTime(chip, eff, tokens_per_expert, D, fe / tp, gemm_dtype));
      if (m.moe.num_shared_experts > 0) {
        double fs = (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : fe) *
                    m.moe.num_shared_experts;
        moe_mlp += GemmTime(chip, eff, t, up * fs / tp, D, gemm_dtype) +
                   GemmTime(chip, eff, t, D, fs / tp, gemm_dtype);
      }
      moe_mlp += GemmTime(chip, eff, t, m.moe.num_experts, D, hw::Dtype::kBf16);
    }
    gemm_fwd_layer =
        attn_proj + (1 - moe_frac) * dense_mlp + moe_frac * moe_mlp;
  }
  Seconds logits_fwd = GemmTime(chip, eff, t, m.vocab / tp, D, gemm_dtype);
  Seconds attn_fwd_layer(attn_fwd_flops_layer / (eff.attention * C_bf16));
  // Memory-bound elementwise work (norms, residuals, activation, rotary):
  // ~10D + 3F + 2(N+K)H elements read or written per token per layer in the
  // forward pass, twice that in the backward pass.
  double f_active = (1 - moe_frac) * m.ffn +
                    moe_frac * (m.moe.expert_ffn * m.moe.top_k +
                                m.moe.num_shared_experts *
                                    (m.moe.shared_ffn > 0 ? m.moe.shared_ffn
                                                          : m.moe.expert_ffn));
  double elem =
      10 * D + 3 * f_active + 2.0 * (m.num_heads + m.num_kv_heads) * m.head_dim;
  // MoE token permutation: each routed copy of a token's hidden vector is
  // gathered to its expert and scattered back (read + write each way).
  if (m.is_moe()) elem += moe_frac * 4.0 * m.moe.top_k * D;
  // FP8 (Transformer Engine style): every GEMM input is quantized (read
  // bf16, write fp8: 1.5x the bf16 bytes) before qkv, o, up and down
  // projections.
  if (cfg.precision == hw::Dtype::kFp8) {
    elem += 1.5 * (2 * D + m.num_heads * m.head_dim + f_active);
  }
  Seconds elem_fwd_layer(peak ? 0.0 : elem * bpe * t / tp / W_hbm);
  // Recompute cost per layer (forward pieces run again).
  Seconds recompute_layer;
  switch (cfg.remat) {
    case model::Remat::kNone:
      break;
    case model::Remat::kSelective:
      recompute_layer = attn_fwd_layer;
      break;
    case model::Remat::kSaveMatmulOutputs:
      recompute_layer = attn_fwd_layer + elem_fwd_layer;
      break;
    case model::Remat::kFull:
      recompute_layer = gemm_fwd_layer + attn_fwd_layer + elem_fwd_layer;
      break;
  }
  // Backward: twice the forward GEMM work (dX and dW); attention backward is
  // 2.5x its forward (recomputes the scores).
  Seconds layer_time = 3 * gemm_fwd_layer + 3.5 * attn_fwd_layer +
                       3 * elem_fwd_layer + recompute_layer;
  Seconds stage_compute_mb =
      layers_per_stage * layer_time + (1.0 / par.pp) * 3 * logits_fwd;
  Seconds elem_mb = layers_per_stage * 3 * elem_fwd_layer;

  // FLOP accounting (whole step).
  const double model_flops_per_token =
      model::TrainFlopsPerToken(m, cfg.seq, cfg.attention);
  const model::ActivationCost act = model::Activations(
      m, cfg.remat, cfg.seq, hw::Dtype::kBf16, cfg.attention);
  est.model_flops_per_step = model_flops_per_token * cfg.batch_tokens;
  est.hardware_flops_per_step =
      (model_flops_per_token + act.recompute_flops_per_token) *
      cfg.batch_tokens;
  if (peak) {
    // The book's bound: every FLOP at peak.
    stage_compute_mb =
        Seconds(est.hardware_flops_per_step / chips / microbatches / C);
    elem_mb = Seconds(0);
  }

  // ---- Communication.
  std::vector<CommItem> comms;
  auto add = [&](const char* kind, const char* parallelism, double bytes,
                 int calls, Seconds each, Seconds exposed) {
    if (calls <= 0 || each.si() <= 0) return;
    CommItem c;
    c.kind = kind;
    c.parallelism = parallelism;
    c.axes = axis_names(parallelism);
    c.bytes = Bytes(bytes);
    c.calls = calls;
    c.time = calls * each;
    c.exposed = exposed;
    comms.push_back(c);
  };
  const bool full_remat = cfg.remat == model::Remat::kFull;
  // Tensor parallel: per layer, two all-gathers and two reduce-scatters in
  // the forward pass (sequence parallel; else two all-reduces), the same in
  // the backward pass, and again in a full-remat recompute.
  Seconds tp_mb;
  if (par.tp > 1) {
    double v = t * D * bpe;
    int passes = 2 + (full_remat ? 1 : 0);
    int per_layer = 2 * passes;
    int calls = static_cast<int>(layers_per_stage) * per_layer * microbatches;
    if (par.sequence_parallel) {
      Seconds ag = coll(net::Collective::kAllGather, "tp", v);
      Seconds rs = coll(net::Collective::kReduceScatter, "tp", v);
      tp_mb = layers_per_stage * passes * 2 * (ag + rs) / 2.0;
      add("all-gather", "tp", v, calls / 2, ag, Seconds(0));
      add("reduce-scatter", "tp", v, calls / 2, rs, Seconds(0));
    } else {
      Seconds ar = coll(net::Collective::kAllReduce, "tp", v);
      tp_mb = layers_per_stage * per_layer * ar;
      add("all-reduce", "tp", v, calls, ar, Seconds(0));
    }
  }
  // Expert parallel: dispatch and combine all-to-alls per MoE layer, forward
  // and backward.
  Seconds ep_mb;
  if (par.ep > 1) {
    double v = par.ep * t * m.moe.top_k * D * bpe / tp;
    Seconds a2a = coll(net::Collective::kAllToAll, "ep", v);
    int per_layer = 4 + (full_remat ? 2 : 0);
    double moe_layers = layers_per_stage * moe_frac;
    ep_mb = moe_layers * per_layer * a2a;
    add("all-to-all", "ep", v,
        static_cast<int>(std::round(moe_layers * per_layer * microbatches)),
        a2a, Seconds(0));
  }
  // Context parallel: ring attention passes K and V around the ring, hidden
  // under the attention compute when it is long enough.
  Seconds cp_mb, cp_exposed_mb;
  if (par.cp > 1) {
    double kv = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim
                      : 2.0 * m.num_kv_heads * m.head_dim;
    double v = par.cp * t * kv * bpe / tp;
    Seconds hop = coll(net::Collective::kPermute, "cp", v);
    Seconds per_layer = (par.cp - 1) * 3 * hop;
    cp_mb = layers_per_stage * per_layer;
    cp_exposed_mb = layers_per_stage *
                    units::Max(Seconds(0), per_layer - 3.5 * attn_fwd_layer);
    add("permute", "cp", v,
        static_cast<int>(layers_per_stage) * (par.cp - 1) * 3 * microbatches,
        hop, Seconds(0));
  }
  // Pipeline: activations forward and gradients backward at each boundary.
  Seconds pp_total, pp_exposed;
  if (par.pp > 1) {
    double v = par.pp * t * D * bpe / tp;
    Seconds send = coll(net::Collective::kPermute, "pp", v);
    int calls = 2 * microbatches * vpp;
    pp_total = calls * send;
    pp_exposed = 2.0 * (par.pp - 1) * send;
    add("permute", "pp", v, calls, send, peak ? Seconds(0) : pp_exposed);
  }
  // Parameters held per chip (bf16), for FSDP gathers and DP reductions.
  const double dense_params = pc.total - pc.experts;
  const double stage_dense = dense_params / par.pp / tp;
  const double stage_expert = pc.experts / par.pp / tp / par.ep;
  const double stage_params = stage_dense + stage_expert;
  Seconds fsdp_total, fsdp_exposed;
  if (par.fsdp > 1) {
    double v = stage_params * bpe;
    Seconds ag = coll(net::Collective::kAllGather, "fsdp", v);
    Seconds rs = coll(net::Collective::kReduceScatter, "fsdp", v);
    fsdp_total = microbatches * (2 * ag + rs);
    add("all-gather", "fsdp", v, 2 * microbatches, ag, Seconds(0));
    add("reduce-scatter", "fsdp", v, microbatches, rs, Seconds(0));
  }
  Seconds dp_total, dp_exposed;
  {
    // Gradients of each parameter reduce over the replicas that hold it:
    // dense parameters over dp x ep, experts over dp (FSDP shards first).
    double shard = par.fsdp;
    if (par.dp > 1 || par.ep > 1) {
      double v_dense = stage_dense * bpe / shard;
      double v_expert = stage_expert * bpe / shard;
      Seconds t_dense, t_expert;
      if (par.dp > 1 && par.ep > 1) {
        // dense grads over dp and ep together
        auto itd = placement->find("dp");
        auto ite = placement->find("ep");
        std::vector<int> axes = itd->second.axes, sizes = itd->second.sizes;
        axes.insert(axes.end(), ite->second.axes.begin(),
                    ite->second.axes.end());
        sizes.insert(sizes.end(), ite->second.sizes.begin(),
                     ite->second.sizes.end());
        t_dense = net::EstimateOnAxes(sys, net::Collective::kAllReduce,
                                      Bytes(v_dense), axes, sizes, {net_mode})
                      .time;
        t_expert = coll(net::Collective::kAllReduce, "dp", v_expert);
      } else if (par.dp > 1) {
        t_dense = coll(net::Collective::kAllReduce, "dp", v_dense + v_expert);
      } else {
        t_dense = coll(net::Collective::kAllReduce, "ep", v_dense);
      }
      dp_total = t_dense + t_expert;
      add("all-reduce", par.dp > 1 ? "dp" : "ep", v_dense + v_expert, 1,
          dp_total, Seconds(0));
    }
  }
  // Optimizer: Adam streams ~30 bytes per parameter it owns (fp32 master, m
  // and v read and written, fp32 gradient read, bf16 parameter written).
  // ZeRO-1/2 (Megatron's distributed optimizer) shards over the whole
  // data-parallel group, context-parallel ranks included.
  const double opt_shard =
      (par.fsdp > 1 || par.zero >= 1)
          ? par.fsdp * (par.zero >= 1 ? par.dp * par.cp : 1)
          : 1;
  const double params_owned = stage_params / opt_shard;
  Seconds t_opt(peak ? 0.0 : params_owned * 30 / W_hbm);
  Seconds offload_time;
  if (cfg.offload_optimizer) {
    // Gradients to the host and updated parameters back, over PCIe.
    offload_time =
        Bytes(params_owned * 4) / (chip.pcie_bandwidth * (peak ? 1.0 : 0.85));
    t_opt = Seconds(0);
  }

  // ---- Step time.
  const Seconds compute = microbatches * stage_compute_mb;
  Seconds bubble;
  if (par.pp > 1) {
    double stages_idle = cfg.schedule == Schedule::kInterleaved
                             ? (par.pp - 1.0) / vpp
                             : par.pp - 1.0;
    bubble = stages_idle * stage_compute_mb;
  }
  Seconds comm_total = microbatches * (tp_mb + ep_mb + cp_mb) + pp_total +
                       fsdp_total + dp_total + offload_time;
  Seconds exposed;
  if (peak) {
    // Perfect overlap: communication shows only beyond the compute.
    exposed = units::Max(Seconds(0), comm_total - compute);
    est.step_time = compute + exposed + bubble;
    if (par.pp > 1)
      bubble = bubble + (comm_total > compute ? Seconds(0) : Seconds(0));
  } else {
    // Tensor and expert parallel collectives sit between dependent matmuls
    // and stay exposed; FSDP gathers are prefetched a layer ahead (the first
    // one shows); DP reductions overlap the last microbatch's backward pass
    // (one bucket, a layer's worth, shows).
    Seconds backward_last = (2.0 / 3.0) * stage_compute_mb;
    fsdp_exposed =
        par.fsdp > 1
            ? units::Max(fsdp_total / (microbatches * 3 * layers_per_stage),
                         fsdp_total - (compute - bubble * 0))
            : Seconds(0);
    if (fsdp_exposed.si() < 0) fsdp_exposed = Seconds(0);
    dp_exposed = dp_total.si() > 0 ? units::Max(dp_total / layers_per_stage,
                                                dp_total - backward_last)
                                   : Seconds(0);
    exposed = microbatches * (tp_mb + ep_mb + cp_exposed_mb) + pp_exposed +
              fsdp_exposed + dp_exposed + offload_time;
    est.step_time = compute + exposed + bubble + t_opt;
  }
  // Exposed share per collective (realistic): attribute by parallelism.
  for (CommItem& c : comms) {
    if (peak) {
      c.exposed =
          comm_total.si() > 0 ? (c.time / comm_total) * exposed : Seconds(0);
      continue;
    }
    if (c.parallelism == "tp" || c.parallelism == "ep") {
      c.exposed = c.time;
    } else if (c.parallelism == "cp") {
      c.exposed = microbatches * cp_exposed_mb;
    } else if (c.parallelism == "fsdp") {
      c.exposed = fsdp_total.si() > 0 ? (c.time / fsdp_total) * fsdp_exposed
                                      : Seconds(0);
    } else if (c.parallelism == "dp" || c.parallelism == "ep") {
      c.exposed = dp_exposed;
    }
  }
  est.comms = comms;
  est.compute = compute;
  est.exposed_comm = exposed;
  est.bubble = bubble;
  est.other = t_opt;

  // --assume-mfu: the book's "how long at 40% MFU".
  if (cfg.assume_mfu > 0) {
    est.step_time =
        Seconds(est.model_flops_per_step / (chips * C_bf16 * cfg.assume_mfu));
    est.notes.push_back("step time from --assume-mfu " +
                        FormatNumber(cfg.assume_mfu) +
                        "; memory and communication are still checked");
  }

  // ---- Memory per chip.
  MemoryBreakdown& mem = est.memory;
  const double data_shards = par.dp * par.fsdp;
  double param_bytes_per = 2, grad_bytes_per = 4, opt_bytes_per = 12;
  if (peak) {
    // The book's accounting: bf16 parameters and fp32 Adam moments (10 bytes
    // per parameter); gradients not counted.
    grad_bytes_per = 0;
    opt_bytes_per = 8;
  }
  mem.params = Bytes(stage_params * param_bytes_per / par.fsdp);
  double grad_shard = par.fsdp * (par.zero >= 2 ? par.dp * par.cp : 1);
  mem.grads = Bytes(stage_params * grad_bytes_per / grad_shard);
  double opt_shard_mem = opt_shard;
  mem.optimizer = cfg.offload_optimizer
                      ? Bytes(0)
                      : Bytes(stage_params * opt_bytes_per / opt_shard_mem);
  (void)data_shards;
  // Activations: tokens in flight x saved bytes per token per layer.
  double in_flight = 1;
  if (par.pp > 1) {
    in_flight = cfg.schedule == Schedule::kGpipe
                    ? microbatches
                    : std::min<double>(microbatches, par.pp);
  }
  double act_layer = act.bytes_per_token_per_layer;
  double acts = in_flight * t * layers_per_stage * act_layer /
                (par.sequence_parallel ? tp : 1.0);
  if (cfg.remat == model::Remat::kFull) {
    // One layer is rematerialised in full during its backward pass.
    acts += t *
            model::Activations(m, model::Remat::kNone, cfg.seq)
                .bytes_per_token_per_layer /
            tp;
  }
  // fp32 logits and their gradient on the last stage.
  acts += t * m.vocab / tp * 4 * 2;
  mem.activations = Bytes(acts);
  mem.capacity = chip.hbm_capacity;
  // Runtime reserve: CUDA/XLA context, collective buffers, fragmentation.
  mem.other = Bytes(peak ? 0.0 : 0.05 * chip.hbm_capacity.si());
  mem.total =
      mem.params + mem.grads + mem.optimizer + mem.activations + mem.other;
  if (mem.total > mem.capacity) {
    est.feasible = false;
    est.reason = "needs " + units::FormatBytes(mem.total) +
                 " HBM per chip, has " + units::FormatBytes(mem.capacity) +
                 " (" + "params " + units::FormatBytes(mem.params) +
                 ", grads " + units::FormatBytes(mem.grads) + ", optimizer " +
                 units::FormatBytes(mem.optimizer) + ", activations " +
                 units::FormatBytes(mem.activations) + ")";
  }

  // ---- Rates.
  const double step = est.step_time.si();
  est.tokens_per_s = cfg.batch_tokens / step;
  est.tokens_per_s_per_chip = est.tokens_per_s / chips;
  est.model_flops_per_s_per_chip = est.model_flops_per_step / step / chips;
  est.mfu = est.model_flops_per_s_per_chip / C_bf16;
  est.hfu = est.hardware_flops_per_step / step / chips / C_bf16;
  if (cfg.tokens > 0) {
    double steps = cfg.tokens / cfg.batch_tokens;
    est.time_to_train_s = steps * step;
    est.chip_hours = est.time_to_train_s * chips / 3600;
    double price = cfg.price_per_chip_hour > 0
                       ? cfg.price_per_chip_hour
                       : (chip.price ? chip.price->usd_per_chip_hour : 0);
    est.cost_usd = price > 0 ? est.chip_hours * price
                             : std::numeric_limits<double>::quiet_NaN();
  }

  // ---- Bottleneck.
  if (!est.feasible) {
    est.bottleneck = "memory-capacity";
  } else {
    Seconds membw = microbatches * elem_mb + t_opt;
    Seconds pure = compute - microbatches * elem_mb;
    struct Cand {
      const char* name;
      Seconds t;
    };
    Cand c[] = {{"compute", pure},
                {"communication", exposed},
                {"bubble", bubble},
                {"memory-bandwidth", membw}};
    est.bottleneck =
        std::max_element(std::begin(c), std::end(c),
                         [](const Cand& a, const Cand& b) { return a.t < b.t; })
            ->name;
  }

  // ---- The book's thresholds for this system.
  auto w_eff = [&](const std::string& parallelism) -> double {
    auto it = placement->find(parallelism);
    if (it == placement->end()) return 0;
    const double v = 1e12;  // large: the bandwidth part only
    auto c = net::EstimateOnAxes(sys, net::Collective::kAllGather, Bytes(v),
                                 it->second.axes, it->second.sizes,
                                 {net::Mode::kPeak});
    return c.bandwidth_time.si() > 0 ? v / c.bandwidth_time.si() : 0;
  };
  CriticalBatches& cb = est.critical;
  double w_data = std::max(w_eff("fsdp"), w_eff("dp"));
  if (w_data > 0) cb.data_parallel = cb.fsdp = C / w_data;
  double w_tp = w_eff("tp");
  double f_eff = m.is_moe() ? m.moe.expert_ffn : m.ffn;
  if (w_tp > 0) cb.tensor_parallel_max = f_eff * w_tp / C;
  if (w_data > 0 && w_tp > 0) cb.fsdp_tp = C * C / (w_data * w_tp * f_eff);
  const hw::PhysicalAxis* dcn = sys.FindAxis("dcn");
  if (dcn && dcn->size > 1) cb.dcn_per_slice = C / dcn->bandwidth.si();
  const double tokens_per_data_chip =
      cfg.batch_tokens / (par.dp * par.fsdp * par.ep * par.cp);
  if ((par.fsdp > 1 || par.dp > 1) && cb.data_parallel > 0) {
    const char* what = par.fsdp > 1 ? "FSDP" : "data parallelism";
    double need = par.tp > 1 && cb.fsdp_tp > 0 ? cb.fsdp_tp : cb.data_parallel;
    double have = par.tp > 1 ? cfg.batch_tokens / chips : tokens_per_data_chip;
    bool bound = have < need;
    est.notes.push_back(fmt::format(
        "{}{} is {} here: {:.0f} tokens per chip, {} {:.0f} on {} ({})", what,
        par.tp > 1 ? " x TP" : "",
        bound ? "communication-bound" : "compute-bound", have,
        bound ? "needs more than" : "above the threshold of", need, sys.id,
        par.tp > 1 ? "the book's B/N > alpha^2 / (M_X M_Y F)"
                   : "the book's B/X > C / W"));
  }
  if (par.tp > 1 && cb.tensor_parallel_max > 0) {
    est.notes.push_back(fmt::format(
        "tensor parallelism {} {} the largest compute-bound degree F W / C = "
        "{:.1f} on its axes",
        par.tp, par.tp <= cb.tensor_parallel_max ? "is within" : "exceeds",
        cb.tensor_parallel_max));
  }
  if (cb.dcn_per_slice > 0) {
    double per_slice = cfg.batch_tokens / dcn->size;
    est.notes.push_back(fmt::format(
        "across slices: {:.0f} tokens per slice vs the DCN threshold C / W_dcn "
        "= {:.0f}",
        per_slice, cb.dcn_per_slice));
  }
  if (par.pp > 1) {
    est.notes.push_back(fmt::format(
        "pipeline bubble {:.1f}% ({} schedule, {} microbatches, {} stages{})",
        100 * bubble / est.step_time, ScheduleName(cfg.schedule), microbatches,
        par.pp, vpp > 1 ? ", " + std::to_string(vpp) + " virtual" : ""));
  }
  return est;
}

}  // namespace scalemodel::estimate
