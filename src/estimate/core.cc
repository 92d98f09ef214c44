#include "scalemodel/estimate/core.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace scalemodel::estimate {

StateBytes TrainingStateBytes(Mode mode, const MemoryPolicy& policy) {
  StateBytes b;
  if (mode == Mode::kPeak) {
    b.grads = 0;
    b.optimizer = 8;
    b.reserve_fraction = 0;
    return b;
  }
  b.weights = policy.weight_bytes;
  b.grads = policy.grad_bytes;
  b.optimizer = policy.master_bytes + policy.moment_bytes;
  b.reserve_fraction = policy.reserve_fraction;
  return b;
}

double UsableCapacity(const hw::Chip& chip, const MemoryPolicy& policy) {
  return chip.hbm_capacity.si() * (1 - policy.headroom_fraction);
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
  mc.grad_reduce_bytes = hw::BytesPerElement(cfg.precision.grad_reduce);
  // Megatron's GPT layer (megatron/model/transformer.py): two norm scales,
  // and with biases (GPT-2 style) the QKV, output and two MLP biases and
  // the LayerNorms' two shifts: 12 tensors in all.
  const bool biased = m.attention_bias || m.mlp_bias;
  mc.small_tensors_per_layer = 2.0 + (m.attention_bias ? 2 : 0) +
                               (m.mlp_bias ? 2 : 0) + (biased ? 2 : 0);
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
    mc.adapter_params = LoraAdapterParams(m, cfg.lora_rank, cfg.lora_targets);
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

std::array<LoraModule, 4> LoraModules(const model::ModelSpec& m,
                                      const LoraTargets& targets) {
  const double D = m.d_model;
  double q = m.num_heads * m.head_dim, kv = 2.0 * m.num_kv_heads * m.head_dim;
  if (m.mla) {
    model::ParamCounts pc = model::CountParams(m);
    q = kv = 0.5 * (pc.attention / m.num_layers) / D;
  }
  const double up = m.gated_mlp ? 2 : 1;
  return {{{D, q + kv, false, false, targets.qkv},
           {q, D, false, true, targets.proj},
           {D, up * m.ffn, true, false, targets.fc1},
           {static_cast<double>(m.ffn), D, true, true, targets.fc2}}};
}

ElementwiseTraffic ElementwisePerToken(const model::ModelSpec& m, double d) {
  ElementwiseTraffic t;
  t.norms = 10 * d;
  t.attention = 2.0 * (m.num_heads + m.num_kv_heads) * m.head_dim;
  return t;
}

double LoraAdapterParams(const model::ModelSpec& m, int rank,
                         const LoraTargets& targets) {
  // A (in x r) and B (r x out) on each adapted projection; MoE layers adapt
  // attention only.
  const double r = rank;
  double attn = 0, mlp = 0;
  for (const LoraModule& x : LoraModules(m, targets)) {
    if (!x.on) continue;
    (x.mlp ? mlp : attn) += r * (x.in + x.out);
  }
  double total = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    total += attn + (m.IsMoeLayer(l) ? 0 : mlp);
  }
  return total;
}

namespace {

// Forward GEMM times of one layer's parts at `t` tokens per rank.
struct LayerGemms {
  const hw::Chip& chip;
  const ChipEfficiency& eff;
  hw::Dtype dt;
  double Time(double m, double n, double k) const {
    return GemmTime(chip, eff, m, n, k, dt).si();
  }
  double Bf16(double m, double n, double k) const {
    return GemmTime(chip, eff, m, n, k, hw::Dtype::kBf16).si();
  }
};

// Q/K/V and output projections (MLA: its down and up projections).
double AttentionProjections(const model::ModelSpec& m, const LayerGemms& g,
                            double D, double tp, double t) {
  if (m.mla) {
    model::ParamCounts pc = model::CountParams(m);
    double width = (pc.attention / m.num_layers) / D;
    return g.Time(t, width / tp, D);
  }
  double qkv = (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
  return g.Time(t, qkv / tp, D) + g.Time(t, D, m.num_heads * m.head_dim / tp);
}

// LoRA adapters of one layer: on every adapted projection (in K, out N,
// LoraModules) X[t, K] . A[K, r] and H[t, r] . B[r, N] forward; backward
// dB = H^T dY, dH = dY B^T, dA = X^T dH and dX += dH A^T. Thin (r is 8 to
// 64), so each is bound by reading or writing the t x K (t x N)
// activations, plus its launch: costed by the GEMM model in the
// activations' bf16. Tensor parallelism splits a projection's output
// (column-parallel) or input (row-parallel) as it splits the base weight.
// Dense layers only for the MLP's projections.
void AdapterGemms(const model::ModelSpec& m, const ModelConsts& mc,
                  const LayerGemms& g, const TrainingConfig& cfg, double tp,
                  double t, LayerCompute* lc) {
  const double r = cfg.lora_rank;
  for (const LoraModule& x : LoraModules(m, cfg.lora_targets)) {
    if (!x.on) continue;
    const double share = x.mlp ? 1 - mc.moe_frac : 1.0;
    const double in = x.row_parallel ? x.in / tp : x.in;
    const double out = x.row_parallel ? x.out : x.out / tp;
    lc->adapter_fwd += share * (g.Bf16(t, r, in) + g.Bf16(t, out, r));
    lc->adapter_bwd += share * (g.Bf16(r, out, t) + g.Bf16(t, r, out) +
                                g.Bf16(in, r, t) + g.Bf16(t, in, r));
  }
}

// An MoE layer's MLP: the routed experts' GEMMs (each local expert sees
// top_k x (capacity factor or imbalance) / local of the tokens), shared
// experts, the router, and with token dropping the one-hot dispatch and
// combine. `in` gets the input projections alone; `shared_ffn` the shared
// experts' width.
double MoeMlp(const model::ModelSpec& m, const LayerGemms& g,
              const TrainingConfig& cfg, double D, double tp, double ep,
              double cp, double t, double* in, double* shared_ffn) {
  const double up = m.gated_mlp ? 2 : 1;
  double local = static_cast<double>(m.moe.num_experts) / ep;
  const bool dropping = cfg.habits.capacity_factor > 0;
  double per_expert =
      t * m.moe.top_k *
      (dropping ? cfg.habits.capacity_factor : cfg.habits.load_imbalance) /
      local;
  double fe = m.moe.expert_ffn;
  double moe_in = local * g.Time(per_expert, up * fe / tp, D);
  double moe_mlp = moe_in + local * g.Time(per_expert, D, fe / tp);
  double fs = 0;
  if (m.moe.num_shared_experts > 0) {
    fs = (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : fe) *
         m.moe.num_shared_experts;
    double shared_in = g.Time(t, up * fs / tp, D);
    moe_in += shared_in;
    moe_mlp += shared_in + g.Time(t, D, fs / tp);
  }
  moe_mlp += g.Bf16(t, m.moe.num_experts, D);
  if (dropping) {
    // One-hot dispatch and combine, per sequence (chunk) of S tokens:
    // [E x C, S] x [S, D] each, C = capacity_factor x S x top_k / E slots
    // per expert. Activations are not split by tp here.
    double S = std::min(t, cfg.seq / cp);
    double E = m.moe.num_experts;
    double C = std::ceil(cfg.habits.capacity_factor * S * m.moe.top_k / E);
    moe_mlp += 2 * (t / S) * g.Bf16(E * C, D, S);
  }
  *in = moe_in;
  *shared_ffn = fs;
  return moe_mlp;
}

// Attention core forward: FLOPs at the kernel's efficiency for this
// sequence chunk, or the materialised S x S path.
double AttentionCore(const model::ModelSpec& m, const hw::Chip& chip,
                     const ChipEfficiency& eff, const TrainingConfig& cfg,
                     double tp, double cp, double t) {
  const double C_bf16 = chip.Peak(hw::Dtype::kBf16).si();
  double attn_flops = model::AttentionFlopsPerToken(
                          m, cfg.seq, model::AttentionFlops::kCausal) /
                      m.num_layers * t / tp;
  // Each attention call sees a sequence of seq / cp tokens (a ring step's
  // chunk); short ones run below the 8K-token constants.
  const double attn_eff =
      (cfg.habits.attention_kernel == AttentionKernel::kFlash2
           ? eff.attention_fa2
           : eff.attention) *
      (eff.attention_ramp ? AttentionSeqFactor(cfg.seq / cp) : 1.0);
  if (cfg.habits.attention_kernel == AttentionKernel::kMaterialized &&
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
    return full_flops / (eff.gemm_max * C_bf16) +
           scores * 12 / (chip.hbm_bandwidth.si() * eff.hbm);
  }
  return attn_flops / (attn_eff * C_bf16);
}

// Memory-bound elementwise work per token per layer, forward, in bf16
// elements (ElementwisePerToken), with fp8's casts.
double ElementwiseElems(const model::ModelSpec& m, const ModelConsts& mc,
                        const TrainingConfig& cfg, double f_active) {
  const double D = mc.d;
  const ElementwiseTraffic t = ElementwisePerToken(m, D);
  double elem = t.norms + t.per_ffn * f_active + t.attention;
  if (cfg.precision.matmul == hw::Dtype::kFp8 ||
      cfg.precision.matmul == hw::Dtype::kFp4 ||
      cfg.precision.matmul == hw::Dtype::kInt8) {
    // Every GEMM input is cast to fp8 (fp4, int8; docs 5.2): the q/k/v and
    // MLP inputs
    // (an MoE layer's experts see top_k copies, plus the shared experts'),
    // the attention output and the MLP's hidden activations; in bf16
    // elements of Fp8CastBytes each.
    double mlp_in = D;
    if (m.is_moe()) {
      double expert_in = (m.moe.top_k + (m.moe.num_shared_experts > 0)) * D;
      mlp_in = (1 - mc.moe_frac) * D + mc.moe_frac * expert_in;
    }
    // int8 (AQT) scales per channel from a fresh amax: tensorwise's cost.
    const double cast = cfg.precision.matmul == hw::Dtype::kInt8
                            ? Fp8CastBytes(Fp8Recipe::kTensorwise)
                            : Fp8CastBytes(cfg.precision.fp8_recipe);
    elem += cast / 2 * (D + mlp_in + m.num_heads * m.head_dim + f_active);
  }
  return elem;
}

// The MoE token permutation per token per layer, forward, in bf16 elements:
// each token's top_k copies gathered into expert order and back (4·k·D,
// docs 5.2). Dropless routing moves them with row gathers, at the chip's
// `gather` fraction of the streaming rate (on TPUs XLA gathers, MaxText's
// sparse_matmul around megablox); token dropping dispatches with one-hot
// einsums instead (MoeMlp), and its copies stream.
double PermuteStreamElems(const model::ModelSpec& m, const ModelConsts& mc,
                          const TrainingConfig& cfg,
                          const ChipEfficiency& eff) {
  if (!m.is_moe()) return 0.0;
  const double elems = mc.moe_frac * 4.0 * m.moe.top_k * mc.d;
  const bool dropless = !(cfg.habits.capacity_factor > 0);
  return dropless ? elems / eff.gather : elems;
}

}  // namespace

LayerCompute ComputeLayer(const model::ModelSpec& m, const ModelConsts& mc,
                          const hw::Chip& chip, const ChipEfficiency& eff,
                          double tp, double ep, double cp, double t,
                          const TrainingConfig& cfg) {
  LayerCompute lc;
  const double D = mc.d;
  // The fp8 / fp4 recipe's GEMM speed (a chip that cannot run the recipe
  // is refused before this; 0 keeps the measured rate).
  ChipEfficiency e = eff;
  if (const double f = Fp8RecipeGemmFactor(chip, cfg.precision.fp8_recipe);
      f > 0 && cfg.mode == Mode::kRealistic) {
    e.gemm_max_fp8 *= f;
    e.gemm_max_fp4 *= f;
  }
  const LayerGemms g{chip, e, cfg.precision.matmul};
  const double hbm = chip.hbm_bandwidth.si() * eff.hbm;
  double attn_proj = AttentionProjections(m, g, D, tp, t);
  double up = m.gated_mlp ? 2 : 1;
  double dense_in = g.Time(t, up * m.ffn / tp, D);
  double dense_mlp = dense_in + g.Time(t, D, m.ffn / tp);
  double moe_mlp = 0, moe_in = 0;
  double f_active = (1 - mc.moe_frac) * m.ffn;
  if (m.is_moe()) {
    double fs = 0;
    moe_mlp = MoeMlp(m, g, cfg, D, tp, ep, cp, t, &moe_in, &fs);
    f_active += mc.moe_frac * (m.moe.expert_ffn * m.moe.top_k + fs);
  }
  lc.gemm_fwd =
      attn_proj + (1 - mc.moe_frac) * dense_mlp + mc.moe_frac * moe_mlp;
  // The output projection stays in bf16 under fp8 training: Transformer
  // Engine's fp8 autocast covers the transformer layers' linears, not
  // Megatron's output layer, and torchtitan's float8 filters "output".
  lc.logits_fwd = g.Bf16(t, m.vocab / tp, D);
  // Vocabulary-parallel cross-entropy per token. Fused (one kernel each
  // way): read the bf16 logits and write the fp32 softmax (2 + 4 B per
  // logit) forward, read it and write the bf16 logit gradient (4 + 2 B)
  // backward: 12 B. Megatron-LM's unfused default: cast to fp32 (2 + 4),
  // max (4), subtract (4 + 4), exp (4 + 4), sum (4), divide (4 + 4)
  // forward; scale the saved softmax by the loss gradient (4 + 4) and cast
  // it back to bf16 (4 + 2) backward: 52 B.
  const double ce_bytes = cfg.habits.unfused_cross_entropy ? 52 : 12;
  const bool peak = cfg.mode == Mode::kPeak;
  lc.loss_total = peak ? 0.0 : t * m.vocab / tp * ce_bytes / hbm;
  lc.mlp_in_fwd = (1 - mc.moe_frac) * dense_in + mc.moe_frac * moe_in;
  lc.attn_proj_fwd = attn_proj;
  lc.mtp_proj_fwd = mc.mtp > 0 ? g.Time(t, D, 2 * D) : 0.0;
  lc.attn_fwd = AttentionCore(m, chip, eff, cfg, tp, cp, t);
  if (mc.lora && !peak) AdapterGemms(m, mc, g, cfg, tp, t, &lc);
  const double elem = ElementwiseElems(m, mc, cfg, f_active) +
                      PermuteStreamElems(m, mc, cfg, eff);
  lc.elem_fwd = peak ? 0.0 : elem * 2 * t / tp / hbm;
  return lc;
}

namespace {

// What every phase of one plan's evaluation reads: the degrees as numbers,
// the layers on each pipeline stage, the tokens a rank sees per
// microbatch.
struct PlanShape {
  double chips = 1, pp = 1, tp = 1, ep = 1, cp = 1;
  // Layers per stage: ceil(L / pp) on all but the last, which holds the
  // rest (or --last-stage-layers, the others sharing what remains) and the
  // MTP modules (last_units); lps is the most any stage holds.
  double others = 0, last_layers = 0, last_units = 0, lps = 0;
  double t = 0;  // tokens per microbatch per rank (micro_batch x seq / cp)
  int m = 1;     // microbatches per step
  int vpp = 1;
  int remat = 0;
  bool full = false;  // full recompute
  bool peak = false;
  // GEMM passes per layer: forward, input and weight gradients; frozen
  // (LoRA) weights skip the weight gradients.
  double gemm_passes = 3;
};

PlanShape ShapeOf(const ModelConsts& mc, const Parallelism& par,
                  const TrainingConfig& cfg, int m) {
  PlanShape s;
  s.gemm_passes = mc.lora ? 2 : 3;
  s.peak = cfg.mode == Mode::kPeak;
  s.chips = par.product();
  s.pp = par.pp;
  s.tp = par.tp;
  s.ep = par.ep;
  s.cp = par.cp;
  s.others = std::ceil(mc.layers / s.pp);
  s.last_layers = std::max(0.0, mc.layers - (s.pp - 1) * s.others);
  if (cfg.layout.last_stage_layers > 0 && par.pp > 1) {
    s.last_layers = cfg.layout.last_stage_layers;
    s.others = std::ceil((mc.layers - s.last_layers) / (s.pp - 1));
  }
  // The MTP modules' layers run on the last stage (the only one with
  // pp = 1).
  s.last_units = s.last_layers + mc.mtp;
  s.lps = par.pp > 1 ? std::max(s.others, s.last_units) : s.others + mc.mtp;
  // Tokens per microbatch per rank; a replica's share of one sequence when
  // the replicas outnumber the sequences (SplitsSequences).
  const double replicas = static_cast<double>(par.dp) * par.fsdp * par.ep;
  s.t = cfg.batch_tokens / cfg.seq < replicas
            ? cfg.batch_tokens / (replicas * s.cp)
            : cfg.layout.micro_batch * cfg.seq / s.cp;
  s.m = m;
  s.remat = static_cast<int>(cfg.memory.remat);
  s.full = cfg.memory.remat == model::Remat::kFull;
  s.vpp = cfg.layout.schedule == Schedule::kInterleaved
              ? std::max(1, cfg.layout.vpp)
              : 1;
  return s;
}

// The forward work a remat policy runs again in the backward pass.
double RecomputeFwd(const LayerCompute& lc, model::Remat remat) {
  switch (remat) {
    case model::Remat::kNone:
      return 0;
    case model::Remat::kSelective:
      return lc.attn_fwd;
    case model::Remat::kSaveMatmulOutputs:
      return lc.attn_fwd + lc.elem_fwd;
    case model::Remat::kSaveDotExceptMlpIn:
      return lc.attn_fwd + lc.elem_fwd + lc.mlp_in_fwd;
    case model::Remat::kFull:
      return lc.gemm_fwd + lc.adapter_fwd + lc.attn_fwd + lc.elem_fwd;
  }
  return 0;
}

// Compute of one microbatch on the slowest stage (stage), on one of the
// stages before the last (typical: the pipeline's fill and drain run
// through those), and its memory-bound part.
struct StageTimes {
  double stage = 0, typical = 0, elem = 0;
  double layer = 0;  // one layer, one microbatch, forward and backward
};

StageTimes ComputeStage(const ModelConsts& mc, const LayerCompute& lc,
                        const PlanShape& s, const TrainingConfig& cfg, double C,
                        CoreResult* r) {
  StageTimes st;
  if (s.peak) {
    double hw_flops =
        (mc.model_flops_per_token + mc.recompute_flops_per_token[s.remat]) *
        cfg.batch_tokens;
    st.stage = hw_flops / s.chips / s.m / C;
    st.typical = st.stage;
    r->layer_matmul = st.stage / s.lps;
    r->last_stage_paces = s.pp > 1 && s.last_units > s.others;
    return st;
  }
  const double recompute = RecomputeFwd(lc, cfg.memory.remat);
  const double matmul =
      s.gemm_passes * lc.gemm_fwd + lc.adapter_fwd + lc.adapter_bwd;
  double layer = matmul + 3.5 * lc.attn_fwd + 3 * lc.elem_fwd + recompute;
  r->layer_matmul = matmul;
  r->layer_attention = 3.5 * lc.attn_fwd;
  r->layer_elem = 3 * lc.elem_fwd;
  r->layer_recompute = recompute;
  // The output layer and loss sit on the last stage, and so do the MTP
  // modules (a layer, the projection, another output layer and loss each):
  // the pipeline runs at the pace of the slower of it and the others.
  const double head =
      (1 + mc.mtp) * (s.gemm_passes * lc.logits_fwd + lc.loss_total) +
      mc.mtp * s.gemm_passes * lc.mtp_proj_fwd;
  r->head = head;
  r->last_stage_paces =
      s.pp > 1 && s.last_units * layer + head > s.others * layer;
  st.stage = s.pp > 1 ? std::max(s.others * layer, s.last_units * layer + head)
                      : s.lps * layer + head;
  st.typical = s.pp > 1 ? s.others * layer : st.stage;
  st.elem = s.lps * 3 * lc.elem_fwd;
  st.layer = layer;
  return st;
}

// Writes one slot's bytes, calls and time; returns the time.
struct SlotWriter {
  const LayoutCoefficients& lay;
  CoreResult* r;
  bool detail;
  bool peak;
  double Put(int i, double bytes, std::int64_t calls) const {
    if (detail) {
      r->coll_bytes[i] = bytes;
      r->coll_calls[i] = calls;
    }
    r->coll_time[i] = calls * lay.coll[i].Time(bytes, peak);
    return r->coll_time[i];
  }
  double T(int i) const { return r->coll_time[i]; }
};

// Communication per step by parallelism family, before overlap.
struct CommTotals {
  double tp_mb = 0, ep_mb = 0;          // per microbatch
  double cp_mb = 0, cp_exposed_mb = 0;  // per microbatch
  double pp_total = 0, pp_exposed = 0;  // per step
  double fsdp_total = 0;                // per step
  double fsdp_gather = 0;               // its all-gathers, per step
  // The share of a layer's gathered bytes its attention projections hold
  // (AttentionWeightShare).
  double fsdp_attn_share = 0;
  double dp_total = 0, dp_gather = 0;  // per step
};

// Tensor parallel: an all-gather and a reduce-scatter (sequence parallel)
// or an all-reduce around each of the layer's two blocks, per pass.
double TensorParallelComm(const SlotWriter& w, const PlanShape& s,
                          const ModelConsts& mc, const Parallelism& par) {
  if (par.tp <= 1) return 0;
  double v = s.t * mc.d * 2;
  int passes = 2 + (s.full ? 1 : 0);
  const std::int64_t calls =
      static_cast<std::int64_t>(s.lps) * 2 * passes * s.m;
  if (par.sequence_parallel) {
    w.Put(kTpAg, v, calls / 2);
    w.Put(kTpRs, v, calls / 2);
    return (w.T(kTpAg) + w.T(kTpRs)) / s.m;
  }
  w.Put(kTpAr, v, calls);
  return w.T(kTpAr) / s.m;
}

// Expert parallel: dispatch and combine all-to-alls per MoE layer, forward
// and backward (and the recompute's forward).
double ExpertParallelComm(const SlotWriter& w, const PlanShape& s,
                          const ModelConsts& mc, const LayoutCoefficients& lay,
                          const Parallelism& par) {
  if (par.ep <= 1) return 0;
  double v = s.ep * s.t * mc.top_k * mc.d * 2 / s.tp * lay.ep_bytes_scale;
  int per_layer = 4 + (s.full ? 2 : 0);
  w.Put(kEpA2a, v,
        static_cast<std::int64_t>(
            std::round(s.lps * mc.moe_frac * per_layer * s.m)));
  return w.T(kEpA2a) / s.m;
}

// Context parallel, by the configured K/V exchange; fills cp_mb and
// cp_exposed_mb.
void ContextParallelComm(const SlotWriter& w, const PlanShape& s,
                         const ModelConsts& mc, const LayerCompute& lc,
                         const Parallelism& par, const TrainingConfig& cfg,
                         CommTotals* c) {
  if (par.cp <= 1) return;
  const auto layers = static_cast<std::int64_t>(s.lps);
  const std::int64_t m = s.m;
  double v = s.cp * s.t * mc.kv_per_token_layer * 2 / s.tp;
  switch (cfg.habits.cp_comm) {
    case CpComm::kRing: {
      // (cp - 1) K/V passes per layer forward, K/V and their gradients
      // backward, under the attention.
      double hop = w.lay.coll[kCpPermute].Time(v, s.peak);
      double per_layer = (s.cp - 1) * 3 * hop;
      c->cp_mb = s.lps * per_layer;
      c->cp_exposed_mb = s.lps * std::max(0.0, per_layer - 3.5 * lc.attn_fwd);
      w.Put(kCpPermute, v, layers * (par.cp - 1) * 3 * m);
      break;
    }
    case CpComm::kAllGather: {
      // K/V gathered forward and again backward, their gradients
      // reduce-scattered; the attention waits for them.
      w.Put(kCpAg, v, layers * (2 + (s.full ? 1 : 0)) * m);
      w.Put(kCpRs, v, layers * m);
      c->cp_mb = (w.T(kCpAg) + w.T(kCpRs)) / m;
      c->cp_exposed_mb = c->cp_mb;
      break;
    }
    case CpComm::kAllToAll: {
      // Ulysses: q, k, v to a head split before the attention and its
      // output back, forward and (as gradients) backward.
      double qkv =
          s.cp * s.t * (mc.heads + 2.0 * mc.kv_heads) * mc.head_dim * 2 / s.tp;
      double out = s.cp * s.t * mc.heads * mc.head_dim * 2 / s.tp;
      int passes = 2 + (s.full ? 1 : 0);
      w.Put(kCpA2a, 0.5 * (qkv + out), layers * 2 * passes * m);
      c->cp_mb = w.T(kCpA2a) / m;
      c->cp_exposed_mb = c->cp_mb;
      break;
    }
  }
}

// Pipeline: each microbatch's activations forward and gradients backward
// between stages (per virtual stage); the first microbatch's trip through
// the stages shows.
void PipelineComm(const SlotWriter& w, const PlanShape& s,
                  const ModelConsts& mc, const Parallelism& par,
                  CommTotals* c) {
  if (par.pp <= 1) return;
  double v = s.pp * s.t * mc.d * 2 / s.tp;
  double send = w.lay.coll[kPpPermute].Time(v, s.peak);
  w.Put(kPpPermute, v, std::int64_t{2} * s.m * s.vpp);
  c->pp_total = w.T(kPpPermute);
  c->pp_exposed = 2.0 * (s.pp - 1) * send;
}

// NCCL's ring latency over a flat communicator of `ranks` GPUs on `nodes`
// nodes (NVIDIA/nccl src/graph/tuning.cc; efficiency.md 4.4): the base
// latency, then ranks - 1 steps of which nodes - 1 cross the network.
// Simple protocol (large messages): base 8.4 us, 3.4 us per NVLink step,
// 14 us per network step; LL (small ones): 6.6, 0.6 and 2.7 us.
double FlatRingLatency(double ranks, double nodes, bool simple) {
  if (ranks <= 1) return 0;
  const double base = simple ? 8.4e-6 : 6.6e-6;
  const double nvlink = simple ? 3.4e-6 : 0.6e-6;
  const double net = simple ? 14e-6 : 2.7e-6;
  const double inter = std::max(0.0, nodes - 1);
  return base + (ranks - 1 - inter) * nvlink + inter * net;
}

// DeepSpeed ZeRO-3 before v0.5.5 (EngineHabits::fsdp_sync_per_tensor): one
// all-gather per weight matrix in the forward, the recompute's forward (its
// post-forward hook released them) and the backward; one reduce-scatter per
// parameter tensor (stage3.py at v0.3.13: _reduce_scatter_gradients loops
// over the bucket's parameters); each a flat NCCL ring over the whole
// group. The small tensors are not gathered (stage3_param_persistence_
// threshold 1e5 elements keeps them whole); their reduce-scatters are
// latency-bound (LL protocol).
double FsdpSyncPerTensorComm(const SlotWriter& w, const PlanShape& s,
                             const ModelConsts& mc, const ParamShares& sh) {
  const LayoutCoefficients& lay = w.lay;
  const double mats = mc.weight_tensors_per_layer;
  const double small = mc.small_tensors_per_layer;
  const double passes = 2 + (s.full ? 1 : 0);
  const auto ag_calls =
      static_cast<std::int64_t>(std::llround(passes * s.m * s.lps * mats));
  const auto rs_calls =
      static_cast<std::int64_t>(std::llround(s.m * s.lps * (mats + small)));
  // Bandwidth as the layout costs it; latency replaced by the flat ring's.
  const double simple = FlatRingLatency(lay.fsdp_ranks, lay.fsdp_nodes, true);
  const double ll = FlatRingLatency(lay.fsdp_ranks, lay.fsdp_nodes, false);
  w.Put(kFsdpAg, sh.stage * 2 / (s.lps * mats), ag_calls);
  w.Put(kFsdpRs, sh.trained * sh.grad_reduce_bytes / (s.lps * (mats + small)),
        rs_calls);
  const CollCoef& ag = lay.coll[kFsdpAg];
  const CollCoef& rs = lay.coll[kFsdpRs];
  const double rs_flat =
      (mats * simple + small * ll) / (mats + small) - rs.latency;
  w.r->coll_time[kFsdpAg] += ag_calls * (simple - ag.latency);
  w.r->coll_time[kFsdpRs] += rs_calls * rs_flat;
  return w.T(kFsdpAg) + w.T(kFsdpRs);
}

// FSDP: each layer's weights gathered for the forward and the backward of
// every microbatch, its gradients reduce-scattered once per microbatch.
double FsdpComm(const SlotWriter& w, const PlanShape& s, const ModelConsts& mc,
                const ParamShares& sh, const Parallelism& par,
                const EngineHabits& h) {
  if (par.fsdp <= 1) return 0;
  if (h.fsdp_sync_per_tensor && !s.peak) {
    return FsdpSyncPerTensorComm(w, s, mc, sh);
  }
  w.Put(kFsdpAg, sh.stage * 2 / s.lps,
        static_cast<std::int64_t>(2 * s.m * s.lps));
  w.Put(kFsdpRs, sh.trained * sh.grad_reduce_bytes / s.lps,
        static_cast<std::int64_t>(s.m * s.lps));
  return w.T(kFsdpAg) + w.T(kFsdpRs);
}

// The attention projections' share of the weights one layer gathers on
// this chip (Q and O: d x heads x head_dim each, K and V: d x kv_heads x
// head_dim each, over tp); the MLP (or the experts) hold the rest. Layers
// average sh.stage / lps.
double AttentionWeightShare(const ModelConsts& mc, const ParamShares& sh,
                            const PlanShape& s, const Parallelism& par) {
  const double per_layer = sh.stage / s.lps;
  const double attn =
      2 * mc.d * (mc.heads + mc.kv_heads) * mc.head_dim / par.tp;
  return per_layer > 0 ? std::clamp(attn / per_layer, 0.0, 1.0) : 1.0;
}

// Data parallel gradient reduction (dense parameters over dp x ep). With
// the optimizer state sharded over dp (zero >= 1), a reduce-scatter of the
// gradients before the update and an all-gather of the bf16 parameters
// after it (which the next step's first forward can hide); otherwise an
// all-reduce. Fills dp_total (reductions) and dp_gather (the all-gather).
void DataParallelComm(const SlotWriter& w, const ParamShares& sh,
                      const Parallelism& par, CommTotals* c) {
  if (par.dp <= 1 && par.ep <= 1) return;
  const double gb = sh.grad_reduce_bytes;
  double vd = sh.train_dense * gb / par.fsdp,
         ve = sh.train_expert * gb / par.fsdp;
  double pd = sh.train_dense * 2 / par.fsdp,
         pe = sh.train_expert * 2 / par.fsdp;
  const bool sharded = par.zero >= 1;
  auto reduce = [&](int ar, int rs, int ag, double grads, double params) {
    if (sharded) {
      w.Put(rs, grads, 1);
      w.Put(ag, params, 1);
    } else {
      w.Put(ar, grads, 1);
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
  c->dp_total = w.T(kDenseAr) + w.T(kDpAr) + w.T(kDpRs) + w.T(kDenseRs);
  c->dp_gather = w.T(kDpAg) + w.T(kDenseAg);
}

// The optimizer update and host offload traffic per step.
struct OptimizerTimes {
  double update = 0;   // Adam, on the device or the host
  double offload = 0;  // optimizer state over PCIe
  // Prefetched host traffic over PCIe: parameters in and gradients out
  // (offload_params) and saved activations out in the forward, in before
  // the backward (offload_activations), the busier direction.
  double offload_params = 0;
  double offload_acts = 0;  // the activations' share, for the notes
};

OptimizerTimes OptimizerAndOffload(const PlanShape& s, const ParamShares& sh,
                                   const Parallelism& par,
                                   const TrainingConfig& cfg,
                                   const hw::Chip& chip,
                                   const ChipEfficiency& eff, double saved_mb) {
  OptimizerTimes o;
  const double owned = OwnedOptimizerParams(sh, par);
  o.update = s.peak ? 0.0 : owned * 30 / (chip.hbm_bandwidth.si() * eff.hbm);
  const double pcie = chip.pcie_bandwidth.si() * (s.peak ? 1.0 : 0.85);
  // Saved activations: out during each microbatch's forward, back in
  // before its backward (opposite directions of the link).
  const double acts = cfg.memory.offload_activations ? s.m * saved_mb : 0.0;
  o.offload_acts = acts / pcie;
  if (cfg.memory.offload_params) {
    // Every microbatch's forward and backward (and a full-remat recompute)
    // bring each layer's bf16 shard in; each backward sends its gradient
    // shard out, on the opposite direction of the link. Prefetched under
    // the compute.
    const double passes = 2 + (s.full ? 1 : 0);
    const double in = s.m * passes * sh.stage * 2 / par.fsdp;
    const double out = s.m * sh.trained * sh.grad_reduce_bytes / par.fsdp;
    o.offload_params = std::max(in + acts, out + acts) / pcie;
  } else {
    o.offload_params = o.offload_acts;
    if (cfg.memory.offload_optimizer) o.offload = owned * 4 / pcie;
  }
  if (cfg.memory.offload_params || cfg.memory.offload_optimizer) {
    // Adam on the host: the same ~30 bytes per owned parameter, at the
    // chip's share of its host's peak DRAM bandwidth (a lower bound; not
    // costed where the catalog has no host figure).
    const double host = chip.host_memory_bandwidth.si();
    o.update = s.peak || host <= 0 ? 0.0 : owned * 30 / host;
  }
  return o;
}

// Exposed communication by family (realistic mode), kept for the
// per-collective split.
struct Exposure {
  double total = 0;
  double tp_mb = 0, ep = 0, fsdp = 0, dp = 0, gather = 0;
  double fsdp_ag = 0;  // the FSDP all-gathers' part of fsdp (scanned loop)
};

// One job of a scanned layer's iteration: a weight's all-gather and the
// compute that waits for it (0 bytes: compute that needs no new weight).
struct ScanJob {
  double gather = 0, compute = 0;
};

// What the gathers of one scanned-layer iteration leave exposed. Each
// matmul waits for its weight's all-gather; XLA's continuation fusion runs
// a gather under the compute scheduled between its start and done (MaxText
// benchmarks/xla_flags_library.py, CF_FOR_ALL_GATHER). XLA's latency-hiding
// scheduler keeps one all-gather in flight (SchedulerConfig
// all_gather_overlap_limit = 1, xla/service/latency_hiding_scheduler.h) and
// places each done just before its use, so a gather starts after the
// previous one is done and overlaps the compute up to its own use: the
// compute of the jobs from the previous gather's use on. Nothing of the
// iteration runs before its first gather (MaxText PR #4493): that one
// shows in full.
double ScanIterationExposed(const std::vector<ScanJob>& jobs) {
  double exposed = 0, cover = 0;
  bool first = true;
  for (const ScanJob& j : jobs) {
    if (j.gather > 0) {
      exposed += first ? j.gather : std::max(0.0, j.gather - cover);
      first = false;
      cover = 0;
    }
    cover += j.compute;
  }
  return exposed;
}

// One layer's forward iteration as scan jobs: Q, K, V (the attention
// projections' time shared by their weights), the attention itself, O,
// then the MLP's three matrices (or the experts'), then the elementwise
// work. g: the layer's gathers; attn_share: AttentionWeightShare.
std::vector<ScanJob> ForwardScanJobs(const ModelConsts& mc,
                                     const LayerCompute& lc, double g,
                                     double attn_share) {
  const double qo = mc.heads, kv = mc.kv_heads;
  const double attn_g = g * attn_share, mlp_g = g - attn_g;
  const double mlp_c = std::max(0.0, lc.gemm_fwd - lc.attn_proj_fwd);
  auto part = [&](double share) {
    return ScanJob{attn_g * share, lc.attn_proj_fwd * share};
  };
  const double n = 2 * (qo + kv) > 0 ? 2 * (qo + kv) : 1;
  std::vector<ScanJob> jobs = {part(qo / n), part(kv / n), part(kv / n),
                               ScanJob{0, lc.attn_fwd}, part(qo / n)};
  for (int i = 0; i < 3; ++i) jobs.push_back({mlp_g / 3, mlp_c / 3});
  jobs.push_back({0, lc.elem_fwd});
  return jobs;
}

// FSDP's exposed time. Prefetched (the default): what exceeds the compute,
// and at least one layer's collectives. Inside a scanned layer loop
// (habits.fsdp_scan_exposed): each layer's forward and backward iteration
// gathers its own weights (ScanIterationExposed); the gradient
// reduce-scatters still run under the later layers' backward. The backward
// iteration under full remat recomputes the forward first (the forward's
// order, then the backward, which needs no new weight); otherwise it runs
// the layer in reverse at the backward's compute. Sets x->fsdp, x->fsdp_ag.
void FsdpExposed(const PlanShape& s, const CommTotals& c, const ModelConsts& mc,
                 const LayerCompute& lc, const StageTimes& st, double compute,
                 const EngineHabits& h, Exposure* x) {
  // Each gather waits for torch.cuda.synchronize(), which drains the
  // compute and the reduce-scatters queued on the reduction stream.
  if (h.fsdp_sync_per_tensor && !s.peak) {
    x->fsdp = c.fsdp_total;
    return;
  }
  if (!h.fsdp_scan_exposed) {
    x->fsdp = std::max(
        {0.0, c.fsdp_total / (s.m * 3 * s.lps), c.fsdp_total - compute});
    return;
  }
  // Per layer and microbatch: one gather in each iteration.
  const double iterations = s.m * s.lps;
  const double g = c.fsdp_gather / (2 * iterations);
  std::vector<ScanJob> jobs = ForwardScanJobs(mc, lc, g, c.fsdp_attn_share);
  double fwd = 0;
  for (const ScanJob& j : jobs) fwd += j.compute;
  const double bwd = std::max(0.0, st.layer - fwd);
  double exposed = ScanIterationExposed(jobs);
  if (s.full) {
    jobs.push_back({0, std::max(0.0, bwd - fwd)});
  } else {
    std::reverse(jobs.begin(), jobs.end());
    for (ScanJob& j : jobs) j.compute *= fwd > 0 ? bwd / fwd : 0;
  }
  exposed += ScanIterationExposed(jobs);
  x->fsdp_ag = iterations * exposed;
  const double rs = c.fsdp_total - c.fsdp_gather;
  x->fsdp = x->fsdp_ag + std::max({0.0, rs / iterations, rs - compute});
}

// Realistic overlap: what each family's communication leaves exposed under
// the compute it can run beside.
Exposure ExposeRealistic(const PlanShape& s, const ModelConsts& mc,
                         const CommTotals& c, const LayerCompute& lc,
                         const StageTimes& st, const OptimizerTimes& o,
                         double compute, const Parallelism& par,
                         const TrainingConfig& cfg, const ChipEfficiency& eff) {
  Exposure x;
  const double m = s.m;
  x.tp_mb = c.tp_mb;
  x.ep = m * c.ep_mb;
  double backward_last = 2.0 / 3.0 * st.stage;
  if (par.fsdp > 1) FsdpExposed(s, c, mc, lc, st, compute, cfg.habits, &x);
  // Data-parallel overlap hides dp_overlap_fraction of what it could.
  const double dpf = cfg.habits.dp_overlap ? cfg.habits.dp_overlap_fraction : 0;
  x.dp = c.dp_total > 0
             ? std::max(c.dp_total / s.lps, c.dp_total - dpf * backward_last)
             : 0.0;
  // The parameter all-gather, layer by layer under the first forward.
  x.gather = c.dp_gather > 0 ? std::max(c.dp_gather / s.lps,
                                        c.dp_gather - dpf * st.stage / 3)
                             : 0.0;
  if (cfg.habits.tp_comm_overlap) {
    // Split GEMMs hide a fraction of the collectives, at most the GEMMs.
    const double gemm_mb = s.lps * s.gemm_passes * lc.gemm_fwd;
    const double f = TpOverlapFraction(cfg.habits, par.tp);
    x.tp_mb = c.tp_mb - std::min(f * c.tp_mb, gemm_mb);
  }
  // Expert all-to-all: exposed in full, or with --ep-overlap hidden under
  // the paired microbatch's compute from the second microbatch on. On GPUs
  // the dispatch kernels hold SMs meanwhile (DeepEP's examples use
  // Buffer.set_num_sms(24)), so the compute that runs beside them slows by
  // units / (units - 24); TPUs move data with DMA engines.
  if (cfg.habits.ep_overlap && c.ep_mb > 0) {
    const double kCommUnits = 24;
    const double slow =
        eff.units > 2 * kCommUnits ? eff.units / (eff.units - kCommUnits) : 1.0;
    const double cover = cfg.habits.ep_overlap_fraction * st.stage;
    const double beside = std::min(c.ep_mb, cover);
    x.ep = c.ep_mb +
           (m - 1) * (std::max(0.0, c.ep_mb - cover) + beside * (slow - 1));
  }
  x.total = m * (x.tp_mb + c.cp_exposed_mb) + x.ep + c.pp_exposed + x.fsdp +
            x.dp + x.gather + o.offload;
  if (o.offload_params > 0) {
    // Beyond the compute, and at least one layer's transfer (the first
    // layer's parameters in, the last layer's activations back).
    x.total +=
        std::max(o.offload_params / (m * s.lps), o.offload_params - compute);
  }
  return x;
}

// Each collective's share of the exposed time (realistic mode).
void SplitExposed(const PlanShape& s, const CommTotals& c, const Exposure& x,
                  const TrainingConfig& cfg, CoreResult* r) {
  const auto& T = r->coll_time;
  auto& X = r->coll_exposed;
  double tp_share = c.tp_mb > 0 ? x.tp_mb / c.tp_mb : 0;
  X[kTpAg] = T[kTpAg] * tp_share;
  X[kTpRs] = T[kTpRs] * tp_share;
  X[kTpAr] = T[kTpAr] * tp_share;
  X[kEpA2a] = x.ep;
  X[kCpPermute] =
      cfg.habits.cp_comm == CpComm::kRing ? s.m * c.cp_exposed_mb : 0;
  X[kCpAg] = T[kCpAg];
  X[kCpRs] = T[kCpRs];
  X[kCpA2a] = T[kCpA2a];
  X[kPpPermute] = c.pp_exposed;
  // Each group's exposed time, shared out in proportion to its members.
  auto share = [&](double exposed_part, double total,
                   std::initializer_list<int> members) {
    if (total <= 0) return;
    for (int i : members) X[i] = T[i] * (exposed_part / total);
  };
  if (cfg.habits.fsdp_sync_per_tensor && !s.peak && c.fsdp_total > 0) {
    X[kFsdpAg] = T[kFsdpAg];  // nothing overlaps (FsdpExposed)
    X[kFsdpRs] = T[kFsdpRs];
  } else if (cfg.habits.fsdp_scan_exposed && c.fsdp_total > 0) {
    X[kFsdpAg] = x.fsdp_ag;  // FsdpExposed
    X[kFsdpRs] = x.fsdp - x.fsdp_ag;
  } else {
    share(x.fsdp, c.fsdp_total, {kFsdpAg, kFsdpRs});
  }
  share(x.dp, c.dp_total, {kDpAr, kDenseAr, kDpRs, kDenseRs});
  share(x.gather, c.dp_gather, {kDpAg, kDenseAg});
}

}  // namespace

double TpOverlapFraction(const EngineHabits& h, int tp) {
  if (h.tp_overlap_fraction >= 0) return std::min(1.0, h.tp_overlap_fraction);
  return tp > 1 ? (tp - 1.0) / tp : 0.0;
}

ParamShares SharesOf(const ModelConsts& mc, const Parallelism& par) {
  ParamShares sh;
  const double pp = par.pp, tp = par.tp, ep = par.ep;
  sh.stage_dense = mc.dense_params / pp / tp;
  sh.stage_expert = mc.expert_params / pp / tp / ep;
  sh.stage = sh.stage_dense + sh.stage_expert;
  sh.train_dense = mc.lora ? mc.adapter_params / pp / tp : sh.stage_dense;
  sh.train_expert = mc.lora ? 0.0 : sh.stage_expert;
  sh.trained = sh.train_dense + sh.train_expert;
  sh.grad_reduce_bytes = mc.grad_reduce_bytes;
  return sh;
}

double OptimizerShards(const Parallelism& par) {
  return (par.fsdp > 1 || par.zero >= 1)
             ? par.fsdp *
                   (par.zero >= 1 ? static_cast<double>(par.dp) * par.cp : 1.0)
             : 1.0;
}

double DenseOptimizerShards(const Parallelism& par) {
  return OptimizerShards(par) * (par.zero >= 1 ? par.ep : 1.0);
}

namespace {

// `bytes` per trained parameter, the dense ones over `dense_shards` ranks and
// the routed experts' over `expert_shards`.
double SplitOverShards(const ParamShares& sh, double bytes, double dense_shards,
                       double expert_shards) {
  return sh.train_dense * bytes / dense_shards +
         sh.train_expert * bytes / expert_shards;
}

}  // namespace

double OwnedOptimizerParams(const ParamShares& sh, const Parallelism& par) {
  return SplitOverShards(sh, 1.0, DenseOptimizerShards(par),
                         OptimizerShards(par));
}

StateMemory StatePerChip(const ParamShares& sh, const Parallelism& par,
                         const StateBytes& sb, bool peak,
                         bool offload_optimizer, bool offload_params,
                         double stage_layers) {
  StateMemory s;
  // FSDP's transiently gathered layers are not counted: engines differ
  // (PyTorch FSDP holds about two blocks, DeepSpeed caps live parameters,
  // XLA gathers weight by weight).
  s.params = sh.stage * sb.weights / par.fsdp;
  // ZeRO-2 shards the gradients like the optimizer state (dense ones over
  // the expert ranks too, DenseOptimizerShards).
  const double grad_shards =
      par.fsdp * (par.zero >= 2 ? static_cast<double>(par.dp) * par.cp : 1.0);
  const double dense_grad_shards = grad_shards * (par.zero >= 2 ? par.ep : 1.0);
  s.grads = SplitOverShards(sh, sb.grads, dense_grad_shards, grad_shards);
  s.optimizer =
      offload_optimizer || offload_params
          ? 0
          : SplitOverShards(sh, sb.optimizer, DenseOptimizerShards(par),
                            OptimizerShards(par));
  if (offload_params) {
    // On the device: the layer being used and the one being prefetched,
    // gathered over fsdp, and the layer's fp32 gradient before it leaves.
    s.params = peak ? 0 : 2 * sh.stage * sb.weights / stage_layers;
    s.grads = peak ? 0 : sh.trained * sb.grads / stage_layers;
  }
  return s;
}

namespace {

// Bytes one microbatch saves for the backward pass on one chip of the
// busiest stage: the remat policy's tensors of each of its layers (and
// materialised attention's scores where kept).
double SavedPerMicrobatch(const ModelConsts& mc, const PlanShape& s,
                          const Parallelism& par, const TrainingConfig& cfg) {
  double saved = s.t * s.lps * mc.act_bytes_per_token_layer[s.remat] /
                 (par.sequence_parallel ? s.tp : 1.0);
  // Materialised attention keeps the softmax output, the dropout mask and
  // its output (2 + 1 + 2 bytes per score element) unless the attention
  // core is recomputed (selective) or the whole layer is (full).
  if (cfg.habits.attention_kernel == AttentionKernel::kMaterialized &&
      (cfg.memory.remat == model::Remat::kNone ||
       cfg.memory.remat == model::Remat::kSaveMatmulOutputs)) {
    saved += s.t * s.lps * (mc.heads / s.tp) * cfg.seq * 5;
  }
  return saved;
}

double ActivationsOf(const ModelConsts& mc, const PlanShape& s,
                     const Parallelism& par, const TrainingConfig& cfg) {
  double in_flight = 1;
  if (par.pp > 1) {
    in_flight = cfg.layout.schedule == Schedule::kGpipe
                    ? s.m
                    : std::min<double>(s.m, s.pp);
    // The interleaved schedule's longer warm-up keeps more on the first
    // stage: x (1 + (p - 1) / (p v)) (Korthikanti et al. 2022, section
    // 4.2.3, for p stages of v model chunks each).
    if (cfg.layout.schedule == Schedule::kInterleaved && s.vpp > 1) {
      in_flight *= 1 + (s.pp - 1) / (s.pp * s.vpp);
    }
  }
  // Held on the device: every in-flight microbatch's layers, or with the
  // activations offloaded two layers' worth (one in transit, one in use).
  double held = in_flight * s.lps;
  if (cfg.memory.offload_activations) held = std::min(held, 2.0);
  double acts = held / s.lps * SavedPerMicrobatch(mc, s, par, cfg);
  if (s.full) acts += s.t * mc.act_none_per_token_layer / s.tp;
  // The logits at their peak: Megatron's unfused loss holds an fp32 copy
  // and the fp32 softmax it saves (4 + 4 B per logit); a fused kernel keeps
  // the bf16 logits, which it overwrites with their gradient (2 B).
  acts += s.t * mc.vocab / s.tp * (cfg.habits.unfused_cross_entropy ? 8 : 2) /
          std::max(1, cfg.habits.vocab_tiling);
  return acts;
}

void MemoryOf(const ModelConsts& mc, const PlanShape& s, const ParamShares& sh,
              const Parallelism& par, const TrainingConfig& cfg,
              const hw::Chip& chip, CoreResult* r) {
  const StateBytes sb = TrainingStateBytes(cfg.mode, cfg.memory);
  const StateMemory st =
      StatePerChip(sh, par, sb, s.peak, cfg.memory.offload_optimizer,
                   cfg.memory.offload_params, s.lps);
  r->params = st.params;
  r->grads = st.grads;
  r->optimizer = st.optimizer;
  r->activations = ActivationsOf(mc, s, par, cfg);
  r->capacity = chip.hbm_capacity.si();
  r->reserve = sb.reserve_fraction * r->capacity;
  r->total_mem =
      r->params + r->grads + r->optimizer + r->activations + r->reserve;
  r->headroom = cfg.memory.headroom_fraction;
  r->feasible = r->total_mem <= UsableCapacity(chip, cfg.memory);
}

}  // namespace

double ActivationsPerChip(const ModelConsts& mc, const Parallelism& par,
                          const TrainingConfig& cfg, int microbatches) {
  return ActivationsOf(mc, ShapeOf(mc, par, cfg, microbatches), par, cfg);
}

void MemoryPerChip(const ModelConsts& mc, const Parallelism& par,
                   const TrainingConfig& cfg, const hw::Chip& chip,
                   int microbatches, CoreResult* r) {
  MemoryOf(mc, ShapeOf(mc, par, cfg, microbatches), SharesOf(mc, par), par, cfg,
           chip, r);
}

double StepLowerBound(const ModelConsts& mc, const LayerCompute& lc,
                      const Parallelism& par, const TrainingConfig& cfg,
                      int microbatches) {
  if (cfg.mode == Mode::kPeak || cfg.assume_mfu > 0) return 0;
  const double passes = mc.lora ? 2 : 3;
  // A layer without recompute (ComputeStage's layer at remat none) and the
  // last stage's heads; the busiest stage holds at least a pp-th of them.
  const double layer =
      passes * lc.gemm_fwd + 3.5 * lc.attn_fwd + 3 * lc.elem_fwd;
  const double head = (1 + mc.mtp) * (passes * lc.logits_fwd + lc.loss_total) +
                      mc.mtp * passes * lc.mtp_proj_fwd;
  return microbatches * ((mc.layers + mc.mtp) * layer + head) /
         std::max(1, par.pp);
}

double StepComputeBound(const ModelConsts& mc, const LayerCompute& lc,
                        const Parallelism& par, const TrainingConfig& cfg,
                        const hw::Chip& chip, int microbatches) {
  if (cfg.assume_mfu > 0) return 0;
  const PlanShape s = ShapeOf(mc, par, cfg, microbatches);
  CoreResult r;
  const StageTimes st =
      ComputeStage(mc, lc, s, cfg, chip.Peak(cfg.precision.matmul).si(), &r);
  // EvaluateCore's compute and the first term of its bubble, the same
  // expressions: the step adds non-negative terms to their sum.
  const double compute = microbatches * st.stage;
  const double idle = par.pp > 1 ? (s.pp - 1) / s.vpp : 0.0;
  return compute + idle * st.typical;
}

void EvaluateCore(const ModelConsts& mc, const LayerCompute& lc,
                  const LayoutCoefficients& lay, const Parallelism& par,
                  const TrainingConfig& cfg, const hw::Chip& chip,
                  const ChipEfficiency& eff, int m, CoreResult* r,
                  bool detail) {
  const PlanShape s = ShapeOf(mc, par, cfg, m);
  if (detail) {
    *r = CoreResult{};
  } else {
    r->coll_time.fill(0.0);  // the only array the sums below read
  }
  r->stage_layers = static_cast<int>(s.others);
  r->last_stage_layers = static_cast<int>(s.last_layers);
  const ParamShares sh = SharesOf(mc, par);
  // Memory first: the plan search (detail = false) needs no step time for
  // a plan over HBM, and most of the plans it scores are.
  MemoryOf(mc, s, sh, par, cfg, chip, r);
  if (!detail && !r->feasible) return;
  const StageTimes st =
      ComputeStage(mc, lc, s, cfg, chip.Peak(cfg.precision.matmul).si(), r);

  // Communication by parallelism family.
  const SlotWriter w{lay, r, detail, s.peak};
  CommTotals c;
  c.tp_mb = TensorParallelComm(w, s, mc, par);
  c.ep_mb = ExpertParallelComm(w, s, mc, lay, par);
  ContextParallelComm(w, s, mc, lc, par, cfg, &c);
  PipelineComm(w, s, mc, par, &c);
  c.fsdp_total = FsdpComm(w, s, mc, sh, par, cfg.habits);
  c.fsdp_gather = r->coll_time[kFsdpAg];
  c.fsdp_attn_share = AttentionWeightShare(mc, sh, s, par);
  DataParallelComm(w, sh, par, &c);
  const OptimizerTimes o = OptimizerAndOffload(
      s, sh, par, cfg, chip, eff,
      cfg.memory.offload_activations ? SavedPerMicrobatch(mc, s, par, cfg)
                                     : 0.0);

  // Step: compute, what the communication leaves exposed, bubble, update.
  // The fill and drain idle (pp - 1) / vpp stage times (GPipe and 1F1B:
  // vpp = 1).
  double compute = m * st.stage;
  const double idle = par.pp > 1 ? (s.pp - 1) / s.vpp : 0.0;
  double bubble = idle * st.typical;
  double comm_total = m * (c.tp_mb + c.ep_mb + c.cp_mb) + c.pp_total +
                      c.fsdp_total + c.dp_total + c.dp_gather + o.offload +
                      o.offload_params;
  double exposed, step;
  if (s.peak) {
    exposed = std::max(0.0, comm_total - compute);
    step = compute + exposed + bubble;
    for (int i = 0; detail && i < kNumColl; ++i) {
      r->coll_exposed[i] =
          comm_total > 0 ? r->coll_time[i] / comm_total * exposed : 0;
    }
  } else {
    const Exposure x =
        ExposeRealistic(s, mc, c, lc, st, o, compute, par, cfg, eff);
    exposed = x.total;
    // A stage time of the fill and drain carries its microbatch's exposed
    // tensor, context and expert collectives too (they run inside the
    // chunk, as the step timeline lays them out; docs/trace.md).
    bubble += idle * (x.tp_mb + c.cp_exposed_mb + x.ep / m);
    step = compute + exposed + bubble + o.update;
    if (detail) SplitExposed(s, c, x, cfg, r);
  }
  if (cfg.assume_mfu > 0) {
    step = mc.model_flops_per_token * cfg.batch_tokens /
           (s.chips * chip.Peak(hw::Dtype::kBf16).si() * cfg.assume_mfu);
  }
  r->step = step;
  r->compute = compute;
  r->exposed = exposed;
  r->bubble = bubble;
  r->other = o.update;
  r->elem_total = m * st.elem + o.update;
  r->pcie_time = o.offload + o.offload_params;
  r->act_offload_time = o.offload_acts;
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
              "plan");
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
        Error{layout.error().code, layout.error().message, "plan"});
  }
  for (size_t k = 0; k < which.size(); ++k) {
    DegreeOf(par, which[k]) = mesh.sizes[k];
    out[which[k]] = {layout->physical[k], layout->sizes[k]};
  }
  return out;
}

Placement SlotPlacement(const CollSlot& slot, const Placements& pl) {
  Placement p = pl[slot.placement];
  if (slot.plus_ep_axes) {
    p.axes.insert(p.axes.end(), pl[kEp].axes.begin(), pl[kEp].axes.end());
    p.sizes.insert(p.sizes.end(), pl[kEp].sizes.begin(), pl[kEp].sizes.end());
  }
  return p;
}

namespace {

// A slot's coefficients on its axes, measured at 1 GB.
CollCoef SlotCoef(const hw::System& sys, net::Collective op, const Placement& p,
                  Mode mode) {
  const net::Mode nm =
      mode == Mode::kPeak ? net::Mode::kPeak : net::Mode::kRealistic;
  const double v = 1e9;
  net::CollectiveCost c =
      net::EstimateOnAxes(sys, op, units::Bytes(v), p.axes, p.sizes, {nm});
  CollCoef k;
  k.active = true;
  k.per_byte = c.bandwidth_time.si() / v;
  k.latency = c.latency_time.si();
  k.launch = mode == Mode::kPeak
                 ? 0.0
                 : std::max(0.0, c.time.si() - c.bandwidth_time.si() -
                                     c.latency_time.si());
  return k;
}

}  // namespace

LayoutCoefficients BuildCoefficients(const hw::System& sys,
                                     const Placements& pl, Mode mode,
                                     CollCoefCache* cache) {
  LayoutCoefficients lay;
  for (size_t i = 0; i < pl[kEp].axes.size(); ++i) {
    hw::AxisKind kind = sys.axes[pl[kEp].axes[i]].kind;
    if (kind == hw::AxisKind::kScaleOut || kind == hw::AxisKind::kDcn) {
      lay.ep_nodes *= pl[kEp].sizes[i];
    }
  }
  for (size_t i = 0; i < pl[kFsdp].axes.size(); ++i) {
    lay.fsdp_ranks *= pl[kFsdp].sizes[i];
    hw::AxisKind kind = sys.axes[pl[kFsdp].axes[i]].kind;
    if (kind == hw::AxisKind::kScaleOut || kind == hw::AxisKind::kDcn) {
      lay.fsdp_nodes *= pl[kFsdp].sizes[i];
    }
  }
  std::vector<int> key;
  for (const CollSlot& s : kCollSlots) {
    const Placement p = SlotPlacement(s, pl);
    if (p.axes.empty()) continue;
    if (!cache) {
      lay.coll[s.slot] = SlotCoef(sys, s.op, p, mode);
      continue;
    }
    key.assign({static_cast<int>(mode), static_cast<int>(s.op)});
    key.insert(key.end(), p.axes.begin(), p.axes.end());
    key.push_back(-1);
    key.insert(key.end(), p.sizes.begin(), p.sizes.end());
    auto it = cache->find(key);
    if (it == cache->end()) {
      it = cache->emplace(key, SlotCoef(sys, s.op, p, mode)).first;
    }
    lay.coll[s.slot] = it->second;
  }
  return lay;
}

LayoutCoefficients BuildCoefficients(const hw::System& sys,
                                     const Placements& pl,
                                     const TrainingConfig& cfg,
                                     const ModelConsts& mc,
                                     CollCoefCache* cache) {
  LayoutCoefficients lay = BuildCoefficients(sys, pl, cfg.mode, cache);
  if (cfg.habits.ep_dedup && lay.ep_nodes > 1 && mc.top_k > 0) {
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
