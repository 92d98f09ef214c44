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

// One GEMM with weights [k, n] at `wbytes` per element and activations
// [m, k] in bf16: t0 + max(FLOPs / (e q C), bytes / (e_hbm W)).
double Gemm(const hw::Chip& chip, const ChipEfficiency& eff, double m, double n,
            double k, double wbytes, hw::Dtype compute, bool peak) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  double C = chip.Peak(compute).si();
  double e = compute == hw::Dtype::kBf16 ? eff.gemm_max : eff.gemm_max_fp8;
  double q = 1;
  if (!peak) {
    double tm = std::ceil(m / eff.tile_m), tn = std::ceil(n / eff.tile_n);
    q = (m * n) / (tm * eff.tile_m * tn * eff.tile_n);
    if (eff.units > 0) {
      double tiles = tm * tn, waves = std::ceil(tiles / eff.units);
      q *= tiles / (waves * eff.units);
    }
  }
  double flops = 2 * m * n * k;
  double bytes = wbytes * k * n + 2 * m * k + 2 * m * n;
  return eff.op_overhead.si() +
         std::max(flops / (e * q * C),
                  bytes / (eff.hbm * chip.hbm_bandwidth.si()));
}

}  // namespace

Result<ServeEstimate> EstimateServing(const model::ModelSpec& m,
                                      const hw::System& sys,
                                      const ServeConfig& cfg) {
  const int chips = sys.num_chips();
  if (cfg.tp * cfg.ep * cfg.dp != chips) {
    return InvalidArgument(
        "tp*ep*dp = " + std::to_string(cfg.tp * cfg.ep * cfg.dp) + " but " +
            sys.id + " has " + std::to_string(chips) + " chips",
        "--plan");
  }
  if (m.num_heads % cfg.tp) {
    return InvalidArgument(
        "tensor_parallel=" + std::to_string(cfg.tp) +
            " does not divide num_heads=" + std::to_string(m.num_heads),
        "--plan");
  }
  if (cfg.ep > 1 && (!m.is_moe() || m.moe.num_experts % cfg.ep)) {
    return InvalidArgument(
        m.is_moe() ? "expert_parallel=" + std::to_string(cfg.ep) +
                         " does not divide num_experts=" +
                         std::to_string(m.moe.num_experts)
                   : "expert_parallel needs a mixture-of-experts model; " +
                         m.id + " is dense",
        "--plan");
  }
  if (!(cfg.batch >= 1) || !(cfg.prompt >= 1) || !(cfg.output >= 1)) {
    return InvalidArgument("batch, prompt and output must be at least 1",
                           "--batch");
  }
  const hw::Chip& chip = sys.chip;
  const bool peak = cfg.mode == Mode::kPeak;
  const ChipEfficiency eff =
      peak ? PeakEfficiency() : RealisticEfficiency(chip);
  const hw::Dtype compute = ComputeDtypeFor(chip, cfg.weights);
  const double C = chip.Peak(compute).si();
  const double W = chip.hbm_bandwidth.si() * (peak ? 1.0 : eff.hbm);
  const double n = cfg.tp * cfg.ep;  // chips per replica
  const double B = cfg.batch;
  const double wb = hw::BytesPerElement(cfg.weights);
  const model::ParamCounts pc = model::CountParams(m);
  const double L = m.num_layers, D = m.d_model;
  ServeEstimate est;

  // Memory per chip: weights sharded over the replica, KV cache of the batch
  // at the full context (heads shard over tp up to K; MLA's latent does not
  // shard over heads).
  double weight_total = pc.total * wb;
  double weights_per_chip = weight_total / n;
  // The book shards the KV cache over heads first, then over the batch, so
  // every tensor-parallel rank holds 1/tp of it (attention data parallelism
  // does the same for MLA's latent cache).
  double kv_shard = cfg.tp;
  double kv_per_seq = model::KvCacheBytes(m, cfg.prompt + cfg.output, cfg.kv);
  double kv_per_chip = B * kv_per_seq / (kv_shard * cfg.ep);
  double capacity = chip.hbm_capacity.si();
  double reserve = peak ? 0 : 0.05 * capacity;
  est.weights_bytes = units::Bytes(weights_per_chip);
  est.kv_cache_bytes = units::Bytes(kv_per_chip);
  est.total_bytes = units::Bytes(weights_per_chip + kv_per_chip + reserve);
  est.capacity_bytes = chip.hbm_capacity;
  est.max_batch =
      std::max(0.0, std::floor((capacity - reserve - weights_per_chip) *
                               kv_shard * cfg.ep / kv_per_seq));
  if (est.total_bytes.si() > capacity) {
    est.feasible = false;
    est.reason = "needs " + units::FormatBytes(est.total_bytes) +
                 " HBM per chip, has " + units::FormatBytes(chip.hbm_capacity) +
                 " (weights " + units::FormatBytes(est.weights_bytes) +
                 ", KV cache " + units::FormatBytes(est.kv_cache_bytes) +
                 "); the largest batch that fits is " +
                 FormatNumber(est.max_batch);
  }

  // Tensor-parallel all-reduce of [B, D] twice per layer; expert all-to-all.
  TrainingConfig tcfg;
  tcfg.mode = cfg.mode;
  Parallelism par;
  par.tp = cfg.tp;
  par.ep = cfg.ep;
  par.dp = cfg.dp;
  auto placement = PlaceParallelism(par, sys);
  if (!placement) return tl::unexpected(placement.error());
  LayoutCoefficients lay = BuildCoefficients(sys, *placement, cfg.mode);
  auto comm_per_token_batch = [&](double tokens) {
    double t = 0;
    if (cfg.tp > 1) t += 2 * L * lay.coll[kTpAr].Time(tokens * D * 2, peak);
    if (cfg.ep > 1) {
      double moe_layers = 0;
      for (int l = 0; l < m.num_layers; ++l) moe_layers += m.IsMoeLayer(l);
      t += 2 * moe_layers *
           lay.coll[kEpA2a].Time(cfg.ep * tokens * m.moe.top_k * D * 2 / cfg.ep,
                                 peak);
    }
    return t;
  };

  // Expected routed experts touched per MoE layer by `tokens` tokens.
  auto touched = [&](double tokens) {
    if (!m.is_moe()) return 0.0;
    double E = m.moe.num_experts, k = m.moe.top_k;
    return E * (1 - std::pow(1 - k / E, tokens));
  };
  double moe_layers = 0;
  for (int l = 0; l < m.num_layers; ++l) moe_layers += m.IsMoeLayer(l);
  const double expert_params_layer =
      moe_layers > 0 ? pc.experts / moe_layers / m.moe.num_experts : 0;

  // Matmul time of one forward pass over `tokens` tokens (per chip).
  auto matmul_time = [&](double tokens, double* weight_bytes_read) {
    double dense_w = pc.matmul_total - pc.experts;  // incl. logits
    double w_read =
        dense_w + moe_layers * touched(tokens) * expert_params_layer;
    *weight_bytes_read = w_read * wb / n;
    if (peak) {
      double flops = 2 * pc.matmul_active * tokens / n;
      return std::max(flops / C, *weight_bytes_read / W);
    }
    // Realistic: the per-layer GEMMs at their shapes.
    double t = 0;
    double qkv = m.mla ? (pc.attention / L) / D
                       : (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
    double up = m.gated_mlp ? 2 : 1;
    double per_layer =
        Gemm(chip, eff, tokens, qkv / cfg.tp, D, wb, compute, peak);
    if (!m.mla) {
      per_layer += Gemm(chip, eff, tokens, D,
                        static_cast<double>(m.num_heads) * m.head_dim / cfg.tp,
                        wb, compute, peak);
    }
    double dense_mlp =
        Gemm(chip, eff, tokens, up * m.ffn / cfg.tp, D, wb, compute, peak) +
        Gemm(chip, eff, tokens, D, static_cast<double>(m.ffn) / cfg.tp, wb,
             compute, peak);
    double moe = 0;
    if (m.is_moe()) {
      double local = touched(tokens) / cfg.ep;
      double per_expert = tokens * m.moe.top_k / std::max(1.0, touched(tokens));
      double fe = m.moe.expert_ffn;
      moe =
          local *
          (Gemm(chip, eff, per_expert, up * fe / cfg.tp, D, wb, compute, peak) +
           Gemm(chip, eff, per_expert, D, fe / cfg.tp, wb, compute, peak));
      if (m.moe.num_shared_experts > 0) {
        double fs = (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : fe) *
                    m.moe.num_shared_experts;
        moe += Gemm(chip, eff, tokens, up * fs / cfg.tp, D, wb, compute, peak) +
               Gemm(chip, eff, tokens, D, fs / cfg.tp, wb, compute, peak);
      }
    }
    t = L * per_layer + (L - moe_layers) * dense_mlp + moe_layers * moe;
    t += Gemm(chip, eff, tokens, static_cast<double>(m.vocab) / cfg.tp, D, wb,
              compute, peak);
    return t;
  };

  // Decode: one token per sequence at the mean context of the output.
  double context = cfg.prompt + cfg.output / 2;
  double w_read = 0;
  double mm = matmul_time(B, &w_read);
  double kv_read =
      B * model::KvCacheBytes(m, context, cfg.kv) / (kv_shard * cfg.ep);
  double kv_time = kv_read / W;
  double attn_flops =
      B *
      model::AttentionFlopsPerToken(m, context, model::AttentionFlops::kFull) /
      (2 * n);  // one query over `context` keys: half the T x S product
  double attn_time = attn_flops / chip.Peak(hw::Dtype::kBf16).si();
  double comm = comm_per_token_batch(B);
  // Per step, the token's layers run one after another: kernel launches and
  // norms/rotary/sampling (small memory-bound ops) add a fixed cost per layer.
  double overhead = peak ? 0 : L * 4 * eff.op_overhead.si();
  double step;
  if (peak) {
    // The book's formula, communication overlapped (perfect overlap).
    // The book counts every parameter's bytes (routed experts: those the
    // batch touches) and 2 FLOPs per parameter per token.
    double param_bytes = (pc.total - pc.experts +
                          moe_layers * touched(B) * expert_params_layer) *
                         wb;
    step = std::max(
        BookDecodeStep(B, model::KvCacheBytes(m, context, cfg.kv) / cfg.ep,
                       pc.active, param_bytes, n, C, W),
        comm);
  } else {
    step = mm + std::max(kv_time, attn_time) + comm + overhead;
  }
  est.decode_step = units::Seconds(step);
  est.weight_time = units::Seconds(w_read / W);
  est.kv_time = units::Seconds(kv_time);
  est.compute_time = units::Seconds(2 * pc.matmul_active * B / n / C);
  est.comm_time = units::Seconds(comm);
  est.overhead = units::Seconds(overhead);

  // Prefill: the batch's prompts in one pass (compute-bound).
  double p_tokens = B * cfg.prompt;
  double p_wread = 0;
  double p_mm = matmul_time(p_tokens, &p_wread);
  double p_attn = p_tokens *
                  model::AttentionFlopsPerToken(
                      m, cfg.prompt, model::AttentionFlops::kCausal) /
                  n /
                  ((peak ? 1.0
                         : eff.attention * (eff.attention_ramp
                                                ? AttentionSeqFactor(cfg.prompt)
                                                : 1.0)) *
                   chip.Peak(hw::Dtype::kBf16).si());
  double prefill = p_mm + p_attn + comm_per_token_batch(p_tokens) +
                   (peak ? 0 : L * 4 * eff.op_overhead.si());
  est.prefill_time = units::Seconds(prefill);
  est.ttft = est.prefill_time;
  est.request_latency = units::Seconds(prefill + cfg.output * step);
  // Static batching: each replica runs prefill then `output` decode steps.
  double per_replica = B * cfg.output / (prefill + cfg.output * step);
  est.tokens_per_s = per_replica * cfg.dp;
  est.tokens_per_s_per_chip = est.tokens_per_s / chips;
  est.tokens_per_s_per_user = 1.0 / step;
  // Decode turns compute-bound when 2 B N_active / C exceeds weight bytes / W.
  est.critical_batch = (pc.total * wb / W) * C / (2 * pc.matmul_active);
  double price = cfg.price_per_chip_hour > 0
                     ? cfg.price_per_chip_hour
                     : (chip.price ? chip.price->usd_per_chip_hour : 0);
  est.cost_per_million_tokens_usd =
      price > 0 ? price * chips / 3600 / est.tokens_per_s * 1e6
                : std::numeric_limits<double>::quiet_NaN();
  if (!est.feasible) {
    est.bound = "memory-capacity";
  } else {
    double mem = w_read / W + kv_time;
    double comp = est.compute_time.si() + attn_time;
    est.bound = comm > std::max(mem, comp) ? "communication"
                : comp > mem               ? "compute"
                                           : "memory-bandwidth";
  }
  if (cfg.tp > 1 && lay.coll[kTpAr].active &&
      lay.coll[kTpAr].per_byte * B * D * 2 < lay.coll[kTpAr].latency) {
    est.notes.emplace_back(
        "tensor-parallel all-reduces are latency-bound at this batch");
  }
  est.notes.push_back(fmt::format(
      "decode is {} below a batch of about {:.0f} (the book's B_crit for "
      "these weights and this chip)",
      "memory-bound", est.critical_batch));
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
