#include "scalemodel/estimate/core.h"

#include <algorithm>
#include <cmath>

namespace scalemodel::estimate {

StateBytes TrainingStateBytes(Mode mode) {
  StateBytes b;
  if (mode == Mode::kPeak) {
    b.grads = 0;
    b.optimizer = 8;
    b.reserve_fraction = 0;
  }
  return b;
}

int MtpModules(const model::ModelSpec& m, const TrainingConfig& cfg) {
  if (cfg.lora_rank > 0) return 0;
  return cfg.mtp_layers < 0 ? m.mtp_layers : cfg.mtp_layers;
}

ModelConsts PrepareModel(const model::ModelSpec& m, const TrainingConfig& cfg) {
  ModelConsts mc;
  const model::ParamCounts pc = model::CountParams(m);
  mc.layers = m.num_layers;
  int moe_layers = 0;
  for (int l = 0; l < m.num_layers; ++l) moe_layers += m.IsMoeLayer(l);
  mc.moe_frac = static_cast<double>(moe_layers) / m.num_layers;
  mc.d = m.d_model;
  mc.heads = m.num_heads;
  mc.kv_heads = m.num_kv_heads;
  mc.head_dim = m.head_dim;
  mc.kv_per_token_layer = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim
                                : 2.0 * m.num_kv_heads * m.head_dim;
  mc.top_k = m.moe.top_k;
  mc.experts = m.moe.num_experts;
  mc.topk_group = m.moe.topk_group;
  mc.total_params = pc.total;
  mc.expert_params = pc.experts;
  mc.dense_params = pc.total - pc.experts;
  mc.vocab = m.vocab;
  mc.model_flops_per_token =
      model::TrainFlopsPerToken(m, cfg.seq, cfg.attention);
  mc.grad_reduce_bytes = hw::BytesPerElement(cfg.grad_reduce);
  // Multi-token prediction (DeepSeek-V3 section 2.2): each module is one
  // more transformer layer like the model's last, a projection of the
  // concatenated hidden state and next-token embedding (2D x D), and a pass
  // through the shared output layer and loss.
  mc.mtp = MtpModules(m, cfg);
  if (mc.mtp > 0 && m.num_layers > 0) {
    const double L = m.num_layers, D = m.d_model;
    const bool moe_last = m.IsMoeLayer(m.num_layers - 1);
    const double n_moe = std::max(1, moe_layers);
    const double n_dense = std::max(1, m.num_layers - moe_layers);
    double dense = pc.attention / L + pc.norms / L + 2 * D * D;
    double expert = 0, active = pc.attention / L + 2 * D * D;
    if (moe_last) {
      dense += (pc.shared_experts + pc.router) / n_moe;
      expert = pc.experts / n_moe;
      active += (pc.shared_experts + pc.router) / n_moe +
                expert * m.moe.top_k / m.moe.num_experts;
    } else {
      dense += pc.mlp / n_dense;
      active += pc.mlp / n_dense;
    }
    const double attn_layer =
        model::AttentionFlopsPerToken(m, cfg.seq, cfg.attention) / L;
    mc.dense_params += mc.mtp * dense;
    mc.expert_params += mc.mtp * expert;
    mc.total_params += mc.mtp * (dense + expert);
    mc.model_flops_per_token +=
        mc.mtp * 3 * (2 * (active + D * m.vocab) + attn_layer);
  }
  if (cfg.lora_rank > 0) {
    // Frozen base: forward (matmuls M + attention A) plus the input-gradient
    // pass (M + 2A); no weight gradients. 2 (M + A) + A.
    mc.lora = true;
    mc.model_flops_per_token =
        2 * model::ForwardFlopsPerToken(m, cfg.seq, cfg.attention) +
        model::AttentionFlopsPerToken(m, cfg.seq, cfg.attention);
    mc.adapter_params = LoraAdapterParams(m, cfg.lora_rank);
  }
  for (model::Remat r : model::kAllRemats) {
    model::ActivationCost a =
        model::Activations(m, r, cfg.seq, hw::Dtype::kBf16, cfg.attention);
    mc.recompute_flops_per_token[static_cast<int>(r)] =
        a.recompute_flops_per_token * (m.num_layers + mc.mtp) /
        std::max(1, m.num_layers);
    mc.act_bytes_per_token_layer[static_cast<int>(r)] =
        a.bytes_per_token_per_layer;
  }
  mc.act_none_per_token_layer = mc.act_bytes_per_token_layer[0];
  return mc;
}

double LoraAdapterParams(const model::ModelSpec& m, int rank) {
  // A (in x r) and B (r x out) on q/k/v, o, and the dense MLP's up (and
  // gate) and down projections; MoE layers adapt attention only.
  const double D = m.d_model, r = rank;
  double q = m.num_heads * m.head_dim, kv = 2.0 * m.num_kv_heads * m.head_dim;
  if (m.mla) {
    model::ParamCounts pc = model::CountParams(m);
    q = kv = 0.5 * (pc.attention / m.num_layers) / D;
  }
  double attn = r * (D + q + kv) + r * (q + D);
  double up = m.gated_mlp ? 2 : 1;
  double mlp = r * (D + up * m.ffn) + r * (m.ffn + D);
  double total = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    total += attn + (m.IsMoeLayer(l) ? 0 : mlp);
  }
  return total;
}

LayerCompute ComputeLayer(const model::ModelSpec& m, const ModelConsts& mc,
                          const hw::Chip& chip, const ChipEfficiency& eff,
                          double tp, double ep, double cp, double t,
                          const TrainingConfig& cfg) {
  LayerCompute lc;
  const double D = mc.d;
  const hw::Dtype dt = cfg.precision;
  auto gemm = [&](double mm, double n, double k) {
    return GemmTime(chip, eff, mm, n, k, dt).si();
  };
  double attn_proj;
  if (m.mla) {
    model::ParamCounts pc = model::CountParams(m);
    double width = (pc.attention / m.num_layers) / D;
    attn_proj = gemm(t, width / tp, D);
  } else {
    double qkv = (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
    attn_proj =
        gemm(t, qkv / tp, D) + gemm(t, D, m.num_heads * m.head_dim / tp);
  }
  double up = m.gated_mlp ? 2 : 1;
  double dense_in = gemm(t, up * m.ffn / tp, D);
  double dense_mlp = dense_in + gemm(t, D, m.ffn / tp);
  double moe_mlp = 0, moe_in = 0;
  double f_active = (1 - mc.moe_frac) * m.ffn;
  if (m.is_moe()) {
    double local = static_cast<double>(m.moe.num_experts) / ep;
    const bool dropping = cfg.capacity_factor > 0;
    double per_expert = t * m.moe.top_k *
                        (dropping ? cfg.capacity_factor : cfg.load_imbalance) /
                        local;
    double fe = m.moe.expert_ffn;
    moe_in = local * gemm(per_expert, up * fe / tp, D);
    moe_mlp = moe_in + local * gemm(per_expert, D, fe / tp);
    double fs = 0;
    if (m.moe.num_shared_experts > 0) {
      fs = (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : fe) *
           m.moe.num_shared_experts;
      double shared_in = gemm(t, up * fs / tp, D);
      moe_in += shared_in;
      moe_mlp += shared_in + gemm(t, D, fs / tp);
    }
    moe_mlp +=
        GemmTime(chip, eff, t, m.moe.num_experts, D, hw::Dtype::kBf16).si();
    if (dropping) {
      // One-hot dispatch and combine, per sequence (chunk) of S tokens:
      // [E x C, S] x [S, D] each, C = capacity_factor x S x top_k / E slots
      // per expert. Activations are not split by tp here.
      double S = std::min(t, cfg.seq / cp);
      double E = m.moe.num_experts;
      double C = std::ceil(cfg.capacity_factor * S * m.moe.top_k / E);
      moe_mlp +=
          2 * (t / S) * GemmTime(chip, eff, E * C, D, S, hw::Dtype::kBf16).si();
    }
    f_active += mc.moe_frac * (fe * m.moe.top_k + fs);
  }
  lc.gemm_fwd =
      attn_proj + (1 - mc.moe_frac) * dense_mlp + mc.moe_frac * moe_mlp;
  // The output projection stays in bf16 under fp8 training: Transformer
  // Engine's fp8 autocast covers the transformer layers' linears, not
  // Megatron's output layer, and torchtitan's float8 filters "output".
  lc.logits_fwd =
      GemmTime(chip, eff, t, m.vocab / tp, D, hw::Dtype::kBf16).si();
  // Vocabulary-parallel cross-entropy per token. Fused (one kernel each
  // way): read the bf16 logits and write the fp32 softmax (2 + 4 B per
  // logit) forward, read it and write the bf16 logit gradient (4 + 2 B)
  // backward: 12 B. Megatron-LM's unfused default: cast to fp32 (2 + 4),
  // max (4), subtract (4 + 4), exp (4 + 4), sum (4), divide (4 + 4)
  // forward; scale the saved softmax by the loss gradient (4 + 4) and cast
  // it back to bf16 (4 + 2) backward: 52 B.
  const double ce_bytes = cfg.unfused_cross_entropy ? 52 : 12;
  lc.loss_total =
      cfg.mode == Mode::kPeak
          ? 0.0
          : t * m.vocab / tp * ce_bytes / (chip.hbm_bandwidth.si() * eff.hbm);
  lc.mlp_in_fwd = (1 - mc.moe_frac) * dense_in + mc.moe_frac * moe_in;
  lc.mtp_proj_fwd = mc.mtp > 0 ? gemm(t, D, 2 * D) : 0.0;
  const double C_bf16 = chip.Peak(hw::Dtype::kBf16).si();
  double attn_flops = model::AttentionFlopsPerToken(
                          m, cfg.seq, model::AttentionFlops::kCausal) /
                      m.num_layers * t / tp;
  // Each attention call sees a sequence of seq / cp tokens (a ring step's
  // chunk); short ones run below the 8K-token constants.
  const double attn_eff =
      (cfg.attention_kernel == AttentionKernel::kFlash2 ? eff.attention_fa2
                                                        : eff.attention) *
      (eff.attention_ramp ? AttentionSeqFactor(cfg.seq / cp) : 1.0);
  lc.attn_fwd = attn_flops / (attn_eff * C_bf16);
  if (cfg.attention_kernel == AttentionKernel::kMaterialized &&
      cfg.mode == Mode::kRealistic) {
    // Materialised attention: QK^T and AV run as batched GEMMs on the full
    // S x S product (the mask is applied afterwards), and the scores stream
    // through HBM: written by QK^T, read and written by scale-mask-softmax
    // and by dropout (with a 1-byte mask), read by AV: ~12 bytes per score
    // element per forward pass (Korthikanti et al. 2022 count the same
    // tensors for memory).
    double full_flops = model::AttentionFlopsPerToken(
                            m, cfg.seq, model::AttentionFlops::kFull) /
                        m.num_layers * t / tp;
    double scores = t * (m.num_heads / tp) * cfg.seq;
    lc.attn_fwd = full_flops / (eff.gemm_max * C_bf16) +
                  scores * 12 / (chip.hbm_bandwidth.si() * eff.hbm);
  }
  // Memory-bound elementwise work per token per layer, forward (docs 5.2).
  double elem =
      10 * D + 3 * f_active + 2.0 * (m.num_heads + m.num_kv_heads) * m.head_dim;
  if (m.is_moe()) elem += mc.moe_frac * 4.0 * m.moe.top_k * D;
  if (cfg.precision == hw::Dtype::kFp8) {
    // Every GEMM input is cast to fp8 (docs 5.2): the q/k/v and MLP inputs
    // (an MoE layer's experts see top_k copies, plus the shared experts'),
    // the attention output and the MLP's hidden activations; in bf16
    // elements of Fp8CastBytes each.
    double mlp_in = D;
    if (m.is_moe()) {
      double expert_in = (m.moe.top_k + (m.moe.num_shared_experts > 0)) * D;
      mlp_in = (1 - mc.moe_frac) * D + mc.moe_frac * expert_in;
    }
    elem += Fp8CastBytes(cfg.fp8_recipe) / 2 *
            (D + mlp_in + m.num_heads * m.head_dim + f_active);
  }
  const bool peak = cfg.mode == Mode::kPeak;
  lc.elem_fwd =
      peak ? 0.0 : elem * 2 * t / tp / (chip.hbm_bandwidth.si() * eff.hbm);
  return lc;
}

void EvaluateCore(const ModelConsts& mc, const LayerCompute& lc,
                  const LayoutCoefficients& lay, const Parallelism& par,
                  const TrainingConfig& cfg, const hw::Chip& chip,
                  const ChipEfficiency& eff, int m, CoreResult* r,
                  bool detail) {
  // GEMM passes per layer: forward, input and weight gradients; frozen
  // (LoRA) weights skip the weight gradients.
  const double gemm_passes = mc.lora ? 2 : 3;
  const bool peak = cfg.mode == Mode::kPeak;
  const double chips = par.product();
  const double pp = par.pp, tp = par.tp, ep = par.ep, cp = par.cp;
  // Layers per stage: ceil(L / pp) on all but the last, which holds the rest
  // (or --last-stage-layers, the others sharing what remains); lps is the
  // most any stage holds.
  double others = std::ceil(mc.layers / pp);
  double last_layers = std::max(0.0, mc.layers - (pp - 1) * others);
  if (cfg.last_stage_layers > 0 && par.pp > 1) {
    last_layers = cfg.last_stage_layers;
    others = std::ceil((mc.layers - last_layers) / (pp - 1));
  }
  // The MTP modules' layers run on the last stage (the only one with
  // pp = 1).
  const double last_units = last_layers + mc.mtp;
  const double lps =
      par.pp > 1 ? std::max(others, last_units) : others + mc.mtp;
  const double t = cfg.micro_batch * cfg.seq / cp;
  const double D = mc.d;
  const int remat = static_cast<int>(cfg.remat);
  const bool full = cfg.remat == model::Remat::kFull;
  const int vpp =
      cfg.schedule == Schedule::kInterleaved ? std::max(1, cfg.vpp) : 1;
  const double C_bf16 = chip.Peak(hw::Dtype::kBf16).si();
  const double C = chip.Peak(cfg.precision).si();
  if (detail) {
    *r = CoreResult{};
  } else {
    r->coll_time.fill(0.0);  // the only array the sums below read
  }
  r->stage_layers = static_cast<int>(others);
  r->last_stage_layers = static_cast<int>(last_layers);

  // Compute per microbatch per stage.
  double stage_mb, elem_mb;
  // A microbatch's pass through one of the stages before the last (the
  // pipeline's fill and drain run through those; the slowest stage sets
  // the steady-state pace).
  double typical_mb;
  if (peak) {
    double hw_flops =
        (mc.model_flops_per_token + mc.recompute_flops_per_token[remat]) *
        cfg.batch_tokens;
    stage_mb = hw_flops / chips / m / C;
    typical_mb = stage_mb;
    elem_mb = 0;
    r->layer_matmul = stage_mb / lps;
    r->last_stage_paces = par.pp > 1 && last_units > others;
  } else {
    double recompute = 0;
    switch (cfg.remat) {
      case model::Remat::kNone:
        break;
      case model::Remat::kSelective:
        recompute = lc.attn_fwd;
        break;
      case model::Remat::kSaveMatmulOutputs:
        recompute = lc.attn_fwd + lc.elem_fwd;
        break;
      case model::Remat::kSaveDotExceptMlpIn:
        recompute = lc.attn_fwd + lc.elem_fwd + lc.mlp_in_fwd;
        break;
      case model::Remat::kFull:
        recompute = lc.gemm_fwd + lc.attn_fwd + lc.elem_fwd;
        break;
    }
    double layer = gemm_passes * lc.gemm_fwd + 3.5 * lc.attn_fwd +
                   3 * lc.elem_fwd + recompute;
    r->layer_matmul = gemm_passes * lc.gemm_fwd;
    r->layer_attention = 3.5 * lc.attn_fwd;
    r->layer_elem = 3 * lc.elem_fwd;
    r->layer_recompute = recompute;
    // The output layer and loss sit on the last stage: the pipeline runs at
    // the pace of the slower of it and the others.
    // So do the MTP modules: a layer, the projection, another output layer
    // and loss each.
    const double head =
        (1 + mc.mtp) * (gemm_passes * lc.logits_fwd + lc.loss_total) +
        mc.mtp * gemm_passes * lc.mtp_proj_fwd;
    r->head = head;
    r->last_stage_paces =
        par.pp > 1 && last_units * layer + head > others * layer;
    stage_mb = par.pp > 1 ? std::max(others * layer, last_units * layer + head)
                          : lps * layer + head;
    typical_mb = par.pp > 1 ? others * layer : stage_mb;
    elem_mb = lps * 3 * lc.elem_fwd;
  }
  auto& T = r->coll_time;
  auto& N = r->coll_calls;
  auto& V = r->coll_bytes;
  auto put = [&](int i, double bytes, int calls) {
    if (detail) {
      V[i] = bytes;
      N[i] = calls;
    }
    T[i] = calls * lay.coll[i].Time(bytes, peak);
  };
  // Tensor parallel.
  double tp_mb = 0;
  if (par.tp > 1) {
    double v = t * D * 2;
    int passes = 2 + (full ? 1 : 0);
    int calls = static_cast<int>(lps) * 2 * passes * m;
    if (par.sequence_parallel) {
      put(kTpAg, v, calls / 2);
      put(kTpRs, v, calls / 2);
      tp_mb = (T[kTpAg] + T[kTpRs]) / m;
    } else {
      put(kTpAr, v, calls);
      tp_mb = T[kTpAr] / m;
    }
  }
  // Expert parallel.
  double ep_mb = 0;
  if (par.ep > 1) {
    double v = ep * t * mc.top_k * D * 2 / tp * lay.ep_bytes_scale;
    int per_layer = 4 + (full ? 2 : 0);
    put(kEpA2a, v,
        static_cast<int>(std::round(lps * mc.moe_frac * per_layer * m)));
    ep_mb = T[kEpA2a] / m;
  }
  // Context parallel.
  double cp_mb = 0, cp_exposed_mb = 0;
  if (par.cp > 1) {
    const int layers = static_cast<int>(lps);
    double v = cp * t * mc.kv_per_token_layer * 2 / tp;
    switch (cfg.cp_comm) {
      case CpComm::kRing: {
        // (cp - 1) K/V passes per layer forward, K/V and their gradients
        // backward, under the attention.
        double hop = lay.coll[kCpPermute].Time(v, peak);
        double per_layer = (cp - 1) * 3 * hop;
        cp_mb = lps * per_layer;
        cp_exposed_mb = lps * std::max(0.0, per_layer - 3.5 * lc.attn_fwd);
        put(kCpPermute, v, layers * (par.cp - 1) * 3 * m);
        break;
      }
      case CpComm::kAllGather: {
        // K/V gathered forward and again backward, their gradients
        // reduce-scattered; the attention waits for them.
        put(kCpAg, v, layers * (2 + (full ? 1 : 0)) * m);
        put(kCpRs, v, layers * m);
        cp_mb = (T[kCpAg] + T[kCpRs]) / m;
        cp_exposed_mb = cp_mb;
        break;
      }
      case CpComm::kAllToAll: {
        // Ulysses: q, k, v to a head split before the attention and its
        // output back, forward and (as gradients) backward.
        double qkv =
            cp * t * (mc.heads + 2.0 * mc.kv_heads) * mc.head_dim * 2 / tp;
        double out = cp * t * mc.heads * mc.head_dim * 2 / tp;
        int passes = 2 + (full ? 1 : 0);
        put(kCpA2a, 0.5 * (qkv + out), layers * 2 * passes * m);
        cp_mb = T[kCpA2a] / m;
        cp_exposed_mb = cp_mb;
        break;
      }
    }
  }
  // Pipeline.
  double pp_total = 0, pp_exposed = 0;
  if (par.pp > 1) {
    double v = pp * t * D * 2 / tp;
    double send = lay.coll[kPpPermute].Time(v, peak);
    put(kPpPermute, v, 2 * m * vpp);
    pp_total = T[kPpPermute];
    pp_exposed = 2.0 * (pp - 1) * send;
  }
  // FSDP.
  const double stage_dense = mc.dense_params / pp / tp;
  const double stage_expert = mc.expert_params / pp / tp / ep;
  const double stage = stage_dense + stage_expert;
  // Trained parameters on this stage (LoRA: the adapters, split like the
  // dense weights).
  const double train_dense =
      mc.lora ? mc.adapter_params / pp / tp : stage_dense;
  const double train_expert = mc.lora ? 0.0 : stage_expert;
  const double trained = train_dense + train_expert;
  const double gb = mc.grad_reduce_bytes;
  double fsdp_total = 0;
  if (par.fsdp > 1) {
    put(kFsdpAg, stage * 2 / lps, static_cast<int>(2 * m * lps));
    put(kFsdpRs, trained * gb / lps, static_cast<int>(m * lps));
    fsdp_total = T[kFsdpAg] + T[kFsdpRs];
  }
  // Data parallel gradient reduction (dense parameters over dp x ep). With
  // the optimizer state sharded over dp (zero >= 1), a reduce-scatter of
  // the gradients before the update and an all-gather of the bf16
  // parameters after it (which the next step's first forward can hide);
  // otherwise an all-reduce.
  double dp_total = 0, dp_gather = 0;
  if (par.dp > 1 || par.ep > 1) {
    double vd = train_dense * gb / par.fsdp, ve = train_expert * gb / par.fsdp;
    double pd = train_dense * 2 / par.fsdp, pe = train_expert * 2 / par.fsdp;
    const bool sharded = par.zero >= 1;
    auto reduce = [&](int ar, int rs, int ag, double grads, double params) {
      if (sharded) {
        put(rs, grads, 1);
        put(ag, params, 1);
      } else {
        put(ar, grads, 1);
      }
    };
    if (par.dp > 1 && par.ep > 1) {
      reduce(kDenseAr, kDenseRs, kDenseAg, vd, pd);
      reduce(kDpAr, kDpRs, kDpAg, ve, pe);
    } else if (par.dp > 1) {
      reduce(kDpAr, kDpRs, kDpAg, vd + ve, pd + pe);
    } else {
      reduce(kDenseAr, kDenseRs, kDenseAg, vd, pd);
    }
    dp_total = T[kDenseAr] + T[kDpAr] + T[kDpRs] + T[kDenseRs];
    dp_gather = T[kDpAg] + T[kDenseAg];
  }
  // Optimizer.
  const double opt_shard =
      (par.fsdp > 1 || par.zero >= 1)
          ? par.fsdp *
                (par.zero >= 1 ? static_cast<double>(par.dp) * par.cp : 1.0)
          : 1.0;
  const double owned = trained / opt_shard;
  double t_opt = peak ? 0.0 : owned * 30 / (chip.hbm_bandwidth.si() * eff.hbm);
  double offload = 0, offload_params = 0;
  const double pcie = chip.pcie_bandwidth.si() * (peak ? 1.0 : 0.85);
  if (cfg.offload_params) {
    // Every microbatch's forward and backward (and a full-remat recompute)
    // bring each layer's bf16 shard in; each backward sends its gradient
    // shard out, on the opposite direction of the link. Prefetched under
    // the compute.
    const double passes = 2 + (full ? 1 : 0);
    const double in = m * passes * stage * 2 / par.fsdp;
    const double out = m * trained * gb / par.fsdp;
    offload_params = std::max(in, out) / pcie;
  } else if (cfg.offload_optimizer) {
    offload = owned * 4 / pcie;
  }
  if (cfg.offload_params || cfg.offload_optimizer) {
    // Adam on the host: the same ~30 bytes per owned parameter, at the
    // chip's share of its host's peak DRAM bandwidth (a lower bound; not
    // costed where the catalog has no host figure).
    const double host = chip.host_memory_bandwidth.si();
    t_opt = peak || host <= 0 ? 0.0 : owned * 30 / host;
  }
  // Step.
  double compute = m * stage_mb;
  double bubble = 0;
  if (par.pp > 1) {
    double idle =
        cfg.schedule == Schedule::kInterleaved ? (pp - 1) / vpp : pp - 1;
    bubble = idle * typical_mb;
  }
  double comm_total = m * (tp_mb + ep_mb + cp_mb) + pp_total + fsdp_total +
                      dp_total + dp_gather + offload + offload_params;
  double exposed, step;
  auto& X = r->coll_exposed;
  // Exposed parts (realistic mode), kept for the per-collective split.
  double fsdp_exposed = 0, dp_exposed = 0, gather_exposed = 0,
         tp_exposed_mb = tp_mb, ep_exposed = m * ep_mb;
  if (peak) {
    exposed = std::max(0.0, comm_total - compute);
    step = compute + exposed + bubble;
    for (int i = 0; detail && i < kNumColl; ++i) {
      X[i] = comm_total > 0 ? T[i] / comm_total * exposed : 0;
    }
  } else {
    double backward_last = 2.0 / 3.0 * stage_mb;
    fsdp_exposed =
        par.fsdp > 1
            ? std::max({0.0, fsdp_total / (m * 3 * lps), fsdp_total - compute})
            : 0.0;
    dp_exposed =
        dp_total > 0
            ? std::max(dp_total / lps,
                       dp_total - (cfg.dp_overlap ? backward_last : 0.0))
            : 0.0;
    // The parameter all-gather, layer by layer under the first forward.
    gather_exposed =
        dp_gather > 0
            ? std::max(dp_gather / lps,
                       dp_gather - (cfg.dp_overlap ? stage_mb / 3 : 0.0))
            : 0.0;
    if (cfg.tp_comm_overlap) {
      // Split GEMMs hide the collectives; what exceeds the GEMMs shows.
      double gemm_mb = lps * gemm_passes * lc.gemm_fwd;
      tp_exposed_mb = std::max(0.0, tp_mb - gemm_mb);
    }
    // Expert all-to-all: exposed in full, or with --ep-overlap hidden under
    // the paired microbatch's compute from the second microbatch on. On
    // GPUs the dispatch kernels hold SMs meanwhile (DeepEP's examples use
    // Buffer.set_num_sms(24)), so the compute that runs beside them slows
    // by units / (units - 24); TPUs move data with DMA engines.
    if (cfg.ep_overlap && ep_mb > 0) {
      const double kCommUnits = 24;
      const double slow = eff.units > 2 * kCommUnits
                              ? eff.units / (eff.units - kCommUnits)
                              : 1.0;
      const double beside = std::min(ep_mb, stage_mb);
      ep_exposed = ep_mb + (m - 1) * (std::max(0.0, ep_mb - stage_mb) +
                                      beside * (slow - 1));
    }
    exposed = m * (tp_exposed_mb + cp_exposed_mb) + ep_exposed + pp_exposed +
              fsdp_exposed + dp_exposed + gather_exposed + offload;
    if (offload_params > 0) {
      // Beyond the compute, and at least one layer's transfer.
      exposed += std::max(offload_params / (m * lps), offload_params - compute);
    }
    step = compute + exposed + bubble + t_opt;
  }
  if (detail && !peak) {
    double tp_share = tp_mb > 0 ? tp_exposed_mb / tp_mb : 0;
    X[kTpAg] = T[kTpAg] * tp_share;
    X[kTpRs] = T[kTpRs] * tp_share;
    X[kTpAr] = T[kTpAr] * tp_share;
    X[kEpA2a] = ep_exposed;
    X[kCpPermute] = cfg.cp_comm == CpComm::kRing ? m * cp_exposed_mb : 0;
    X[kCpAg] = T[kCpAg];
    X[kCpRs] = T[kCpRs];
    X[kCpA2a] = T[kCpA2a];
    X[kPpPermute] = pp_exposed;
    // Each group's exposed time, shared out in proportion to its members.
    auto share = [&](double exposed_part, double total,
                     std::initializer_list<int> members) {
      if (total <= 0) return;
      for (int i : members) X[i] = T[i] * (exposed_part / total);
    };
    share(fsdp_exposed, fsdp_total, {kFsdpAg, kFsdpRs});
    share(dp_exposed, dp_total, {kDpAr, kDenseAr, kDpRs, kDenseRs});
    share(gather_exposed, dp_gather, {kDpAg, kDenseAg});
  }
  if (cfg.assume_mfu > 0) {
    step = mc.model_flops_per_token * cfg.batch_tokens /
           (chips * C_bf16 * cfg.assume_mfu);
  }
  r->step = step;
  r->compute = compute;
  r->exposed = exposed;
  r->bubble = bubble;
  r->other = t_opt;
  r->elem_total = m * elem_mb + t_opt;
  r->pcie_time = offload + offload_params;
  // Memory per chip.
  const StateBytes sb = TrainingStateBytes(cfg.mode);
  const double grad_b = sb.grads, opt_b = sb.optimizer;
  // FSDP's transiently gathered layers are not counted: engines differ
  // (PyTorch FSDP holds about two blocks, DeepSpeed caps live parameters,
  // XLA gathers weight by weight).
  r->params = stage * sb.weights / par.fsdp;
  r->grads =
      trained * grad_b /
      (par.fsdp * (par.zero >= 2 ? static_cast<double>(par.dp) * par.cp : 1.0));
  r->optimizer = cfg.offload_optimizer || cfg.offload_params
                     ? 0
                     : trained * opt_b / opt_shard;
  if (cfg.offload_params) {
    // On the device: the layer being used and the one being prefetched,
    // gathered over fsdp, and the layer's fp32 gradient before it leaves.
    r->params = peak ? 0 : 2 * stage * sb.weights / lps;
    r->grads = peak ? 0 : trained * grad_b / lps;
  }
  double in_flight = 1;
  if (par.pp > 1) {
    in_flight = cfg.schedule == Schedule::kGpipe ? m : std::min<double>(m, pp);
  }
  double acts = in_flight * t * lps * mc.act_bytes_per_token_layer[remat] /
                (par.sequence_parallel ? tp : 1.0);
  if (full) acts += t * mc.act_none_per_token_layer / tp;
  // Materialised attention keeps the softmax output, the dropout mask and its
  // output (2 + 1 + 2 bytes per score element) unless the attention core is
  // recomputed (selective) or the whole layer is (full).
  if (cfg.attention_kernel == AttentionKernel::kMaterialized &&
      (cfg.remat == model::Remat::kNone ||
       cfg.remat == model::Remat::kSaveMatmulOutputs)) {
    acts += in_flight * t * lps * (mc.heads / tp) * cfg.seq * 5;
  }
  // The logits at their peak: Megatron's unfused loss holds an fp32 copy
  // and the fp32 softmax it saves (4 + 4 B per logit); a fused kernel keeps
  // the bf16 logits, which it overwrites with their gradient (2 B).
  acts += t * mc.vocab / tp * (cfg.unfused_cross_entropy ? 8 : 2);
  r->activations = acts;
  r->capacity = chip.hbm_capacity.si();
  r->reserve = sb.reserve_fraction * r->capacity;
  r->total_mem =
      r->params + r->grads + r->optimizer + r->activations + r->reserve;
  r->feasible = r->total_mem <= r->capacity;
}

}  // namespace scalemodel::estimate

#include "scalemodel/sharding/matmul.h"

namespace scalemodel::estimate {

const char* ParName(int i) {
  static const char* kNames[] = {"tp", "cp", "ep", "fsdp", "dp", "pp"};
  return kNames[i];
}

int& DegreeOf(Parallelism& p, int i) {
  switch (i) {
    case kTp:
      return p.tp;
    case kCp:
      return p.cp;
    case kEp:
      return p.ep;
    case kFsdp:
      return p.fsdp;
    case kDp:
      return p.dp;
    default:
      return p.pp;
  }
}

Result<Placements> PlaceParallelism(Parallelism& par, const hw::System& sys,
                                    const std::array<int, kNumPar>* order) {
  static const std::array<int, kNumPar> kDefault = {kTp,   kCp, kEp,
                                                    kFsdp, kDp, kPp};
  const std::array<int, kNumPar>& ord = order ? *order : kDefault;
  sharding::Mesh mesh;
  std::vector<int> which;
  const bool explicit_axes = !par.axes.empty();
  for (int i : ord) {
    std::string key = ParName(i);
    if (explicit_axes) {
      auto it = par.axes.find(key);
      if (it == par.axes.end()) {
        if (DegreeOf(par, i) > 1) {
          return InvalidArgument(
              "give every parallelism physical axes or none: " + key + "=" +
                  std::to_string(DegreeOf(par, i)) +
                  " has a degree while others name axes",
              "--plan");
        }
        continue;
      }
      mesh.names.push_back(key);
      mesh.sizes.push_back(0);
      mesh.physical.push_back(it->second);
    } else if (DegreeOf(par, i) > 1) {
      mesh.names.push_back(key);
      mesh.sizes.push_back(DegreeOf(par, i));
      mesh.physical.emplace_back();
    } else {
      continue;
    }
    which.push_back(i);
  }
  Placements out;
  if (mesh.names.empty()) return out;
  auto layout = sharding::LayMesh(mesh, sys);
  if (!layout) {
    return tl::unexpected(
        Error{layout.error().code, layout.error().message, "--plan"});
  }
  for (size_t k = 0; k < which.size(); ++k) {
    DegreeOf(par, which[k]) = mesh.sizes[k];
    out[which[k]] = {layout->physical[k], layout->sizes[k]};
  }
  return out;
}

LayoutCoefficients BuildCoefficients(const hw::System& sys,
                                     const Placements& pl, Mode mode) {
  LayoutCoefficients lay;
  const net::Mode nm =
      mode == Mode::kPeak ? net::Mode::kPeak : net::Mode::kRealistic;
  auto coef = [&](int slot, net::Collective op, const Placement& p) {
    if (p.axes.empty()) return;
    const double v = 1e9;
    net::CollectiveCost c =
        net::EstimateOnAxes(sys, op, units::Bytes(v), p.axes, p.sizes, {nm});
    CollCoef& k = lay.coll[slot];
    k.active = true;
    k.per_byte = c.bandwidth_time.si() / v;
    k.latency = c.latency_time.si();
    k.launch = mode == Mode::kPeak
                   ? 0.0
                   : std::max(0.0, c.time.si() - c.bandwidth_time.si() -
                                       c.latency_time.si());
  };
  coef(kTpAg, net::Collective::kAllGather, pl[kTp]);
  coef(kTpRs, net::Collective::kReduceScatter, pl[kTp]);
  coef(kTpAr, net::Collective::kAllReduce, pl[kTp]);
  coef(kEpA2a, net::Collective::kAllToAll, pl[kEp]);
  for (size_t i = 0; i < pl[kEp].axes.size(); ++i) {
    hw::AxisKind kind = sys.axes[pl[kEp].axes[i]].kind;
    if (kind == hw::AxisKind::kScaleOut || kind == hw::AxisKind::kDcn) {
      lay.ep_nodes *= pl[kEp].sizes[i];
    }
  }
  coef(kCpPermute, net::Collective::kPermute, pl[kCp]);
  coef(kPpPermute, net::Collective::kPermute, pl[kPp]);
  coef(kFsdpAg, net::Collective::kAllGather, pl[kFsdp]);
  coef(kFsdpRs, net::Collective::kReduceScatter, pl[kFsdp]);
  coef(kDpAr, net::Collective::kAllReduce, pl[kDp]);
  Placement dense = pl[kDp];
  dense.axes.insert(dense.axes.end(), pl[kEp].axes.begin(), pl[kEp].axes.end());
  dense.sizes.insert(dense.sizes.end(), pl[kEp].sizes.begin(),
                     pl[kEp].sizes.end());
  coef(kDenseAr, net::Collective::kAllReduce, dense);
  coef(kCpAg, net::Collective::kAllGather, pl[kCp]);
  coef(kCpRs, net::Collective::kReduceScatter, pl[kCp]);
  coef(kCpA2a, net::Collective::kAllToAll, pl[kCp]);
  coef(kDpRs, net::Collective::kReduceScatter, pl[kDp]);
  coef(kDpAg, net::Collective::kAllGather, pl[kDp]);
  coef(kDenseRs, net::Collective::kReduceScatter, dense);
  coef(kDenseAg, net::Collective::kAllGather, dense);
  return lay;
}

LayoutCoefficients BuildCoefficients(const hw::System& sys,
                                     const Placements& pl,
                                     const TrainingConfig& cfg,
                                     const ModelConsts& mc) {
  LayoutCoefficients lay = BuildCoefficients(sys, pl, cfg.mode);
  if (cfg.ep_dedup && lay.ep_nodes > 1 && mc.top_k > 0) {
    // A token crosses the network once per distinct destination node:
    // n (1 - (1 - 1/n)^k) nodes for k uniformly routed experts over n, at
    // most topk_group with node-limited routing.
    double n = lay.ep_nodes, k = mc.top_k;
    double nodes = n * (1 - std::pow(1 - 1 / n, k));
    if (mc.topk_group > 0) nodes = std::min(nodes, mc.topk_group);
    lay.ep_bytes_scale = nodes / k;
  }
  return lay;
}

}  // namespace scalemodel::estimate
