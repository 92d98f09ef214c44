#include "scalemodel/estimate/inference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/units/format.h"

namespace scalemodel::estimate {

namespace {

// The dtype matmuls run in: fp8 or fp4 weights run natively when the chip
// has that rate; int8/int4 weights (and fp8/fp4 on chips without the rate)
// are upcast to bf16 (the book's int8-weights case).
hw::Dtype ComputeDtypeFor(const hw::Chip& chip, hw::Dtype w) {
  if ((w == hw::Dtype::kFp8 || w == hw::Dtype::kFp4) && chip.Peak(w).si() > 0) {
    return w;
  }
  return hw::Dtype::kBf16;
}

// What every phase of a serving estimate reads.
struct ServeContext {
  const model::ModelSpec& m;
  const hw::System& sys;
  const ServeConfig& cfg;
  const hw::Chip& chip;
  ChipEfficiency eff;
  bool peak = false;
  hw::Dtype compute = hw::Dtype::kBf16;
  double C = 0;   // matrix rate at the compute dtype
  double W = 0;   // achievable HBM bandwidth
  double n = 1;   // chips per replica (tp x ep)
  double B = 1;   // batch
  double wb = 2;  // bytes per weight
  model::ParamCounts pc;
  double L = 0, D = 0;
  double moe_layers = 0;
  double expert_params_layer = 0;  // one routed expert of one layer
  double kv_shard = 1;             // the KV cache's split over tp
  LayoutCoefficients lay;

  // Expected routed experts touched per MoE layer by `tokens` tokens.
  double Touched(double tokens) const {
    if (!m.is_moe()) return 0.0;
    double E = m.moe.num_experts, k = m.moe.top_k;
    return E * (1 - std::pow(1 - k / E, tokens));
  }
  double Gemm(double rows, double cols, double inner) const {
    return GemmTime(chip, eff, rows, cols, inner,
                    GemmFormat{compute, 2, wb, 2, !peak})
        .si();
  }
};

Result<bool> CheckServePlan(const model::ModelSpec& m, const hw::System& sys,
                            const ServeConfig& cfg) {
  const int chips = sys.num_chips();
  if (cfg.tp * cfg.ep * cfg.dp != chips) {
    return InvalidArgument(
        "tp*ep*dp = " + std::to_string(cfg.tp * cfg.ep * cfg.dp) + " but " +
            sys.id + " has " + std::to_string(chips) + " chips",
        "plan");
  }
  if (m.num_heads % cfg.tp) {
    return InvalidArgument(
        "tensor_parallel=" + std::to_string(cfg.tp) +
            " does not divide num_heads=" + std::to_string(m.num_heads),
        "plan");
  }
  if (cfg.ep > 1 && (!m.is_moe() || m.moe.num_experts % cfg.ep)) {
    return InvalidArgument(
        m.is_moe() ? "expert_parallel=" + std::to_string(cfg.ep) +
                         " does not divide num_experts=" +
                         std::to_string(m.moe.num_experts)
                   : "expert_parallel needs a mixture-of-experts model; " +
                         m.id + " is dense",
        "plan");
  }
  if (!(cfg.batch >= 1) || !(cfg.prompt >= 1) || !(cfg.output >= 1)) {
    return InvalidArgument("batch, prompt and output must be at least 1",
                           "batch");
  }
  return true;
}

// Memory per chip: weights sharded over the replica, KV cache of the batch
// at the full context. The book shards the KV cache over heads first, then
// over the batch, so every tensor-parallel rank holds 1/tp of it
// (attention data parallelism does the same for MLA's latent cache).
void ServeMemory(const ServeContext& x, ServeEstimate* est) {
  const ServeConfig& cfg = x.cfg;
  double weight_total = x.pc.total * x.wb;
  double weights_per_chip = weight_total / x.n;
  double kv_per_seq = model::KvCacheBytes(x.m, cfg.prompt + cfg.output, cfg.kv);
  double kv_per_chip = x.B * kv_per_seq / (x.kv_shard * cfg.ep);
  double capacity = x.chip.hbm_capacity.si();
  double reserve = x.peak ? 0 : 0.05 * capacity;
  est->weights_bytes = units::Bytes(weights_per_chip);
  est->kv_cache_bytes = units::Bytes(kv_per_chip);
  est->total_bytes = units::Bytes(weights_per_chip + kv_per_chip + reserve);
  est->capacity_bytes = x.chip.hbm_capacity;
  est->max_batch =
      std::max(0.0, std::floor((capacity - reserve - weights_per_chip) *
                               x.kv_shard * cfg.ep / kv_per_seq));
  if (est->total_bytes.si() > capacity) {
    est->feasible = false;
    est->reason =
        "needs " + units::FormatBytes(est->total_bytes) +
        " HBM per chip, has " + units::FormatBytes(x.chip.hbm_capacity) +
        " (weights " + units::FormatBytes(est->weights_bytes) + ", KV cache " +
        units::FormatBytes(est->kv_cache_bytes) +
        "); the largest batch that fits is " + FormatNumber(est->max_batch);
  }
}

// Tensor-parallel all-reduce of [tokens, D] twice per layer; the expert
// all-to-all (dispatch and combine) per MoE layer.
double CommPerPass(const ServeContext& x, double tokens) {
  const ServeConfig& cfg = x.cfg;
  double t = 0;
  if (cfg.tp > 1) {
    t += 2 * x.L * x.lay.coll[kTpAr].Time(tokens * x.D * 2, x.peak);
  }
  if (cfg.ep > 1) {
    t += 2 * x.moe_layers *
         x.lay.coll[kEpA2a].Time(
             cfg.ep * tokens * x.m.moe.top_k * x.D * 2 / cfg.ep, x.peak);
  }
  return t;
}

// Realistic matmul time of one forward pass: the per-layer GEMMs at their
// shapes, routed experts as the batch touches them, the output layer.
double RealisticMatmuls(const ServeContext& x, double tokens) {
  const model::ModelSpec& m = x.m;
  const double tp = x.cfg.tp, D = x.D;
  double qkv = m.mla ? (x.pc.attention / x.L) / D
                     : (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
  double up = m.gated_mlp ? 2 : 1;
  double per_layer = x.Gemm(tokens, qkv / tp, D);
  if (!m.mla) {
    per_layer +=
        x.Gemm(tokens, D, static_cast<double>(m.num_heads) * m.head_dim / tp);
  }
  double dense_mlp = x.Gemm(tokens, up * m.ffn / tp, D) +
                     x.Gemm(tokens, D, static_cast<double>(m.ffn) / tp);
  double moe = 0;
  if (m.is_moe()) {
    double local = x.Touched(tokens) / x.cfg.ep;
    double per_expert = tokens * m.moe.top_k / std::max(1.0, x.Touched(tokens));
    double fe = m.moe.expert_ffn;
    moe = local * (x.Gemm(per_expert, up * fe / tp, D) +
                   x.Gemm(per_expert, D, fe / tp));
    if (m.moe.num_shared_experts > 0) {
      double fs = (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : fe) *
                  m.moe.num_shared_experts;
      moe += x.Gemm(tokens, up * fs / tp, D) + x.Gemm(tokens, D, fs / tp);
    }
  }
  double t =
      x.L * per_layer + (x.L - x.moe_layers) * dense_mlp + x.moe_layers * moe;
  t += x.Gemm(tokens, static_cast<double>(m.vocab) / tp, D);
  return t;
}

// Matmul time of one forward pass over `tokens` tokens (per chip), and the
// weight bytes it reads.
double MatmulTime(const ServeContext& x, double tokens,
                  double* weight_bytes_read) {
  double dense_w = x.pc.matmul_total - x.pc.experts;  // incl. logits
  double w_read =
      dense_w + x.moe_layers * x.Touched(tokens) * x.expert_params_layer;
  *weight_bytes_read = w_read * x.wb / x.n;
  if (x.peak) {
    double flops = 2 * x.pc.matmul_active * tokens / x.n;
    return std::max(flops / x.C, *weight_bytes_read / x.W);
  }
  return RealisticMatmuls(x, tokens);
}

// Decode: one token per sequence at the mean context of the output.
// Returns the step; fills the decode parts of est and the attention time.
double DecodeStep(const ServeContext& x, ServeEstimate* est,
                  double* attn_time_out) {
  const ServeConfig& cfg = x.cfg;
  const model::ModelSpec& m = x.m;
  const double B = x.B;
  double context = cfg.prompt + cfg.output / 2;
  double w_read = 0;
  double mm = MatmulTime(x, B, &w_read);
  double kv_read =
      B * model::KvCacheBytes(m, context, cfg.kv) / (x.kv_shard * cfg.ep);
  double kv_time = kv_read / x.W;
  double attn_flops =
      B *
      model::AttentionFlopsPerToken(m, context, model::AttentionFlops::kFull) /
      (2 * x.n);  // one query over `context` keys: half the T x S product
  double attn_time = attn_flops / x.chip.Peak(hw::Dtype::kBf16).si();
  double comm = CommPerPass(x, B);
  // Per step, the token's layers run one after another: kernel launches and
  // norms/rotary/sampling (small memory-bound ops) add a fixed cost per layer.
  double overhead = x.peak ? 0 : x.L * 4 * x.eff.op_overhead.si();
  double step;
  if (x.peak) {
    // The book's formula, communication overlapped (perfect overlap).
    // The book counts every parameter's bytes (routed experts: those the
    // batch touches) and 2 FLOPs per parameter per token.
    double param_bytes = (x.pc.total - x.pc.experts +
                          x.moe_layers * x.Touched(B) * x.expert_params_layer) *
                         x.wb;
    step = std::max(
        BookDecodeStep(B, model::KvCacheBytes(m, context, cfg.kv) / cfg.ep,
                       x.pc.active, param_bytes, x.n, x.C, x.W),
        comm);
  } else {
    step = mm + std::max(kv_time, attn_time) + comm + overhead;
  }
  est->decode_step = units::Seconds(step);
  est->weight_time = units::Seconds(w_read / x.W);
  est->kv_time = units::Seconds(kv_time);
  est->compute_time = units::Seconds(2 * x.pc.matmul_active * B / x.n / x.C);
  est->comm_time = units::Seconds(comm);
  est->overhead = units::Seconds(overhead);
  *attn_time_out = attn_time;
  return step;
}

// Prefill: the batch's prompts in one pass (compute-bound).
double PrefillTime(const ServeContext& x) {
  const ServeConfig& cfg = x.cfg;
  double p_tokens = x.B * cfg.prompt;
  double p_wread = 0;
  double p_mm = MatmulTime(x, p_tokens, &p_wread);
  double p_attn =
      p_tokens *
      model::AttentionFlopsPerToken(x.m, cfg.prompt,
                                    model::AttentionFlops::kCausal) /
      x.n /
      ((x.peak ? 1.0
               : x.eff.attention * (x.eff.attention_ramp
                                        ? AttentionSeqFactor(cfg.prompt)
                                        : 1.0)) *
       x.chip.Peak(hw::Dtype::kBf16).si());
  return p_mm + p_attn + CommPerPass(x, p_tokens) +
         (x.peak ? 0 : x.L * 4 * x.eff.op_overhead.si());
}

// Throughput, cost, what binds, and the notes.
void Summarize(const ServeContext& x, double step, double prefill,
               double attn_time, ServeEstimate* est) {
  const ServeConfig& cfg = x.cfg;
  const int chips = x.sys.num_chips();
  est->prefill_time = units::Seconds(prefill);
  est->ttft = est->prefill_time;
  est->request_latency = units::Seconds(prefill + cfg.output * step);
  // Static batching: each replica runs prefill then `output` decode steps.
  double per_replica = x.B * cfg.output / (prefill + cfg.output * step);
  est->tokens_per_s = per_replica * cfg.dp;
  est->tokens_per_s_per_chip = est->tokens_per_s / chips;
  est->tokens_per_s_per_user = 1.0 / step;
  // Decode turns compute-bound when 2 B N_active / C exceeds weight bytes / W.
  est->critical_batch =
      (x.pc.total * x.wb / x.W) * x.C / (2 * x.pc.matmul_active);
  double price = cfg.price_per_chip_hour > 0
                     ? cfg.price_per_chip_hour
                     : (x.chip.price ? x.chip.price->usd_per_chip_hour : 0);
  est->cost_per_million_tokens_usd =
      price > 0 ? price * chips / 3600 / est->tokens_per_s * 1e6
                : std::numeric_limits<double>::quiet_NaN();
  const double comm = est->comm_time.si();
  if (!est->feasible) {
    est->bound = "memory-capacity";
  } else {
    double mem = est->weight_time.si() + est->kv_time.si();
    double comp = est->compute_time.si() + attn_time;
    est->bound = comm > std::max(mem, comp) ? "communication"
                 : comp > mem               ? "compute"
                                            : "memory-bandwidth";
  }
  const CollCoef& ar = x.lay.coll[kTpAr];
  if (cfg.tp > 1 && ar.active && ar.per_byte * x.B * x.D * 2 < ar.latency) {
    est->notes.emplace_back(
        "tensor-parallel all-reduces are latency-bound at this batch");
  }
  est->notes.push_back(fmt::format(
      "decode is {} below a batch of about {:.0f} (the book's B_crit for "
      "these weights and this chip)",
      "memory-bound", est->critical_batch));
  if (std::string n = BorrowedEfficiencyNote(x.chip); !x.peak && !n.empty()) {
    est->notes.push_back(n);
  }
}

}  // namespace

Result<ServeEstimate> EstimateServing(const model::ModelSpec& m,
                                      const hw::System& sys,
                                      const ServeConfig& cfg) {
  auto ok = CheckServePlan(m, sys, cfg);
  if (!ok) return tl::unexpected(ok.error());
  ServeContext x{m, sys, cfg, sys.chip};
  x.peak = cfg.mode == Mode::kPeak;
  x.eff = x.peak ? PeakEfficiency() : RealisticEfficiency(x.chip);
  x.compute = ComputeDtypeFor(x.chip, cfg.weights);
  x.C = x.chip.Peak(x.compute).si();
  x.W = x.chip.hbm_bandwidth.si() * (x.peak ? 1.0 : x.eff.hbm);
  x.n = cfg.tp * cfg.ep;
  x.B = cfg.batch;
  x.wb = hw::BytesPerElement(cfg.weights);
  x.pc = model::CountParams(m);
  x.L = m.num_layers;
  x.D = m.d_model;
  x.kv_shard = cfg.tp;
  for (int l = 0; l < m.num_layers; ++l) x.moe_layers += m.IsMoeLayer(l);
  x.expert_params_layer =
      x.moe_layers > 0 ? x.pc.experts / x.moe_layers / m.moe.num_experts : 0;
  Parallelism par;
  par.tp = cfg.tp;
  par.ep = cfg.ep;
  par.dp = cfg.dp;
  auto placement = PlaceParallelism(par, sys);
  if (!placement) return tl::unexpected(placement.error());
  x.lay = BuildCoefficients(sys, *placement, cfg.mode);

  ServeEstimate est;
  ServeMemory(x, &est);
  double attn_time = 0;
  const double step = DecodeStep(x, &est, &attn_time);
  Summarize(x, step, PrefillTime(x), attn_time, &est);
  return est;
}

double BookDecodeStep(double batch, double kv_bytes_per_seq, double params,
                      double param_bytes, double chips, double flops_per_s,
                      double hbm_bytes_per_s) {
  double kv = batch * kv_bytes_per_seq / (chips * hbm_bytes_per_s);
  double flops = 2 * batch * params / (chips * flops_per_s);
  double weights = param_bytes / (chips * hbm_bytes_per_s);
  return kv + std::max(flops, weights);
}

double PrefillToDecodeRatio(double prefill_latency_s, double batch,
                            double step_s, double output) {
  return prefill_latency_s * batch / (step_s * output);
}

}  // namespace scalemodel::estimate
