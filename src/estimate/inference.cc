#include "scalemodel/estimate/inference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>

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

// Output-tile rows a GEMM library picks for a skinny GEMM of `rows` rows:
// the smallest power-of-two tile of at least 8 rows that covers them
// (cuBLASLt enumerates 8x8 ... 64x64 tiles besides the 128-row ones:
// nvmath cublasLt.MatmulTile, efficiency.md 1.3; vLLM's fused-MoE configs
// start at BLOCK_SIZE_M 16). Padding is then at most 2x, never the 128x of
// a one-row GEMM on a 128-row tile.
double SkinnyTileRows(double rows) {
  for (double t : {8.0, 16.0, 32.0, 64.0}) {
    if (rows <= t) return t;
  }
  return 128;
}

// The start-up of one small GPU kernel in a stream of back-to-back launches:
// 2.555 us (A100 80GB), 2.433 us (H200), 1.6 us (L40), fitted by gpu-benches
// (te42kyfo/gpu-benches gpu-small-kernels, 10,000 launches of an
// L2-resident kernel; efficiency.md 3); the Hopper value for every GPU.
constexpr double kSmallKernelFloor = 2.433e-6;

// Time of an all-reduce of `bytes` on the chip's measured curve (the
// catalog's [[allreduce_measured]], over `gpus` GPUs), log-log interpolated
// between points: time = bytes x 2(n-1)/n / busbw; below the smallest point
// the smallest point's time (latency-bound), above the largest its busbw.
double MeasuredAllReduceTime(std::span<const hw::AllReducePoint> curve,
                             double bytes) {
  auto time = [](const hw::AllReducePoint& p, double b) {
    const double n = p.gpus;
    return b * 2 * (n - 1) / n / p.busbw.si();
  };
  const hw::AllReducePoint &lo = curve.front(), &hi = curve.back();
  if (bytes <= lo.bytes.si()) return time(lo, lo.bytes.si());
  if (bytes >= hi.bytes.si()) return time(hi, bytes);
  size_t i = 1;
  while (bytes > curve[i].bytes.si()) ++i;
  const hw::AllReducePoint &a = curve[i - 1], &b = curve[i];
  double f =
      std::log(bytes / a.bytes.si()) / std::log(b.bytes.si() / a.bytes.si());
  double ta = std::log(time(a, a.bytes.si()));
  double tb = std::log(time(b, b.bytes.si()));
  return std::exp(ta + f * (tb - ta));
}

}  // namespace

// What every step of a serving replica reads; built once per configuration.
struct StepCostModel::Impl {
  model::ModelSpec m;
  hw::System sys;
  ServeConfig cfg;
  ChipEfficiency eff;
  bool peak = false;
  hw::Dtype compute = hw::Dtype::kBf16;
  double C = 0;   // matrix rate at the compute dtype
  double W = 0;   // achievable HBM bandwidth
  double n = 1;   // chips per replica (tp x ep)
  double wb = 2;  // bytes per weight
  model::ParamCounts pc;
  double L = 0, D = 0;
  double moe_layers = 0;
  double expert_params_layer = 0;  // one routed expert of one layer
  double kv_shard = 1;             // the KV cache's split over tp
  LayoutCoefficients lay;
  // Per-step coefficients, taken at the reference contexts (decode: prompt
  // + output / 2; prefill: the prompt).
  double kv_bytes_per_token = 0;      // per chip, per context token read
  double decode_flops_per_key = 0;    // per chip, one query over one key
  double prefill_flops_per_pair = 0;  // per chip, one causal query-key pair
  double prefill_attn_rate = 0;       // FLOP/s of the prefill attention kernel
  double fixed = 0;                   // per-step overhead, s
  double host_step = 0;               // unoverlapped host time per step, s
  double host_fraction = 0;           // ... and per second of GPU time
  // The measured 8-GPU all-reduce curve of the chip's NVLink (realistic
  // GPUs; empty: the network model alone).
  std::span<const hw::AllReducePoint> ar_curve;

  const hw::Chip& chip() const { return sys.chip; }
  // Expected routed experts touched per MoE layer by `tokens` tokens, each
  // picking top_k of E at random: E (1 - (1 - k/E)^tokens).
  double Touched(double tokens) const {
    if (!m.is_moe()) return 0.0;
    double E = m.moe.num_experts, k = m.moe.top_k;
    return E * (1 - std::pow(1 - k / E, tokens));
  }
  // One realistic GEMM without a launch cost (that is per step). Skinny
  // GEMMs (fewer rows than the catalog tile) get a small tile and split-K,
  // so no wave quantization: they stream their weights.
  double Gemm(double rows, double cols, double inner) const {
    ChipEfficiency e = eff;
    e.op_overhead = units::Seconds(0);
    if (rows < e.tile_m) {
      e.tile_m = static_cast<int>(SkinnyTileRows(rows));
      e.units = 0;
    }
    return GemmTime(chip(), e, rows, cols, inner,
                    GemmFormat{compute, 2, wb, 2, true})
        .si();
  }
  // The routed experts' grouped GEMM: `groups` experts of `rows` rows
  // each, [rows, inner] x [inner, cols] per expert, in one kernel.
  double GroupedGemm(double groups, double rows, double cols,
                     double inner) const;
  double TpAllReduce(double bytes) const;
  double Comm(double tokens) const;
  double RealisticMatmuls(double tokens) const;
  double PeakMatmuls(double tokens) const;
  double WeightBytesRead(double tokens) const;
  double Attention(const StepWork& w) const;
  StepParts PeakDecode(const StepWork& w) const;
};

namespace {

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

// HBM per chip held back from weights and KV cache in realistic mode
// (activations, CUDA graphs, fragmentation): 5% of capacity.
double ReserveBytes(const StepCostModel::Impl& x) {
  return x.peak ? 0 : 0.05 * x.chip().hbm_capacity.si();
}

// Memory per chip: weights sharded over the replica, KV cache of the batch
// at the full context. The book shards the KV cache over heads first, then
// over the batch, so every tensor-parallel rank holds 1/tp of it
// (attention data parallelism does the same for MLA's latent cache).
void ServeMemory(const StepCostModel::Impl& x, ServeEstimate* est) {
  const ServeConfig& cfg = x.cfg;
  double weights_per_chip = x.pc.total * x.wb / x.n;
  double kv_per_seq = model::KvCacheBytes(x.m, cfg.prompt + cfg.output, cfg.kv);
  double kv_per_chip = cfg.batch * kv_per_seq / (x.kv_shard * cfg.ep);
  double capacity = x.chip().hbm_capacity.si();
  double reserve = ReserveBytes(x);
  est->weights_bytes = units::Bytes(weights_per_chip);
  est->kv_cache_bytes = units::Bytes(kv_per_chip);
  est->total_bytes = units::Bytes(weights_per_chip + kv_per_chip + reserve);
  est->capacity_bytes = x.chip().hbm_capacity;
  est->max_batch =
      std::max(0.0, std::floor((capacity - reserve - weights_per_chip) *
                               x.kv_shard * cfg.ep / kv_per_seq));
  if (est->total_bytes.si() > capacity) {
    est->feasible = false;
    est->reason =
        "needs " + units::FormatBytes(est->total_bytes) +
        " HBM per chip, has " + units::FormatBytes(x.chip().hbm_capacity) +
        " (weights " + units::FormatBytes(est->weights_bytes) + ", KV cache " +
        units::FormatBytes(est->kv_cache_bytes) +
        "); the largest batch that fits is " + FormatNumber(est->max_batch);
  }
}

}  // namespace

// One grouped GEMM (vLLM/SGLang fused MoE, TensorRT-LLM and DeepGEMM
// grouped GEMMs): every expert streams its own weights and pads its rows to
// whole tiles, but the tiles of all experts share the SMs, so waves are
// counted over the whole group, not per expert. Skinny experts (fewer rows
// than the catalog tile) take a small tile and split-K as Gemm does: no
// wave quantization.
double StepCostModel::Impl::GroupedGemm(double groups, double rows, double cols,
                                        double inner) const {
  if (!(groups > 0) || !(rows > 0)) return 0;
  if (peak || rows < eff.tile_m) return groups * Gemm(rows, cols, inner);
  const double low = compute == hw::Dtype::kFp8 || compute == hw::Dtype::kFp4;
  const double e = low ? eff.gemm_max_fp8 : eff.gemm_max;
  const double tm = std::ceil(rows / eff.tile_m);
  const double tn = std::ceil(cols / eff.tile_n);
  const double tiles = groups * tm * tn;
  double q = (rows * cols) / (tm * eff.tile_m * tn * eff.tile_n);
  if (eff.units > 0) {
    q *= tiles / (std::ceil(tiles / eff.units) * eff.units);
  }
  const double flops = groups * 2 * rows * cols * inner;
  const double bytes =
      groups * (rows * inner * 2 + inner * cols * wb + rows * cols * 2);
  return std::max(flops / (e * q * C), bytes / W);
}

// A tensor-parallel all-reduce of `bytes`: the network model's time; on a
// GPU whose NVLink generation has a measured 8-GPU curve (efficiency.md
// 4.2: the catalog's [[allreduce_measured]]), at least that curve's time
// at this size, scaled from the measured n GPUs to tp by the ring's steps,
// 2 (tp - 1) of 2 (n - 1) (realistic mode; tp within one NVLink domain).
double StepCostModel::Impl::TpAllReduce(double bytes) const {
  double t = lay.coll[kTpAr].Time(bytes, peak);
  if (!peak && !ar_curve.empty() && cfg.tp <= ar_curve.front().gpus) {
    const double n = ar_curve.front().gpus;
    t = std::max(
        t, MeasuredAllReduceTime(ar_curve, bytes) * (cfg.tp - 1) / (n - 1));
  }
  return t;
}

// Tensor-parallel all-reduce of [tokens, D] twice per layer; the expert
// all-to-all (dispatch and combine) per MoE layer.
double StepCostModel::Impl::Comm(double tokens) const {
  double t = 0;
  if (cfg.tp > 1) {
    t += 2 * L * TpAllReduce(tokens * D * 2);
  }
  if (cfg.ep > 1) {
    t += 2 * moe_layers *
         lay.coll[kEpA2a].Time(cfg.ep * tokens * m.moe.top_k * D * 2 / cfg.ep,
                               peak);
  }
  return t;
}

// Realistic matmul time of one forward pass over `tokens` tokens: the
// per-layer GEMMs at their shapes; the routed experts as one grouped GEMM
// (vLLM/SGLang fused MoE, TensorRT-LLM's grouped GEMM): every expert the
// tokens touch streams its weights once and computes its rows on its own
// tiles; the output layer.
double StepCostModel::Impl::RealisticMatmuls(double tokens) const {
  const double tp = cfg.tp;
  double qkv = m.mla ? (pc.attention / L) / D
                     : (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
  double up = m.gated_mlp ? 2 : 1;
  double per_layer = Gemm(tokens, qkv / tp, D);
  if (!m.mla) {
    per_layer +=
        Gemm(tokens, D, static_cast<double>(m.num_heads) * m.head_dim / tp);
  }
  double dense_mlp = Gemm(tokens, up * m.ffn / tp, D) +
                     Gemm(tokens, D, static_cast<double>(m.ffn) / tp);
  double moe = 0;
  if (m.is_moe()) {
    double touched = Touched(tokens);
    double local = touched / cfg.ep;
    double rows = tokens * m.moe.top_k / std::max(1.0, touched);
    double fe = m.moe.expert_ffn;
    moe = GroupedGemm(local, rows, up * fe / tp, D) +
          GroupedGemm(local, rows, D, fe / tp);
    if (m.moe.num_shared_experts > 0) {
      double fs = (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : fe) *
                  m.moe.num_shared_experts;
      moe += Gemm(tokens, up * fs / tp, D) + Gemm(tokens, D, fs / tp);
    }
  }
  double t = L * per_layer + (L - moe_layers) * dense_mlp + moe_layers * moe;
  return t + Gemm(tokens, static_cast<double>(m.vocab) / tp, D);
}

// Matmul weight bytes one pass over `tokens` tokens reads per chip.
double StepCostModel::Impl::WeightBytesRead(double tokens) const {
  double dense_w = pc.matmul_total - pc.experts;  // incl. logits
  return (dense_w + moe_layers * Touched(tokens) * expert_params_layer) * wb /
         n;
}

// Peak matmul time: all FLOPs at peak or all weight bytes at HBM peak.
double StepCostModel::Impl::PeakMatmuls(double tokens) const {
  double flops = 2 * pc.matmul_active * tokens / n;
  return std::max(flops / C, WeightBytesRead(tokens) / W);
}

// Peak decode (the book's formula): KV + max(FLOPs, parameter bytes), every
// parameter's bytes counted (routed experts: those the batch touches), the
// collectives overlapped: the step is max(that, communication), so the
// exposed communication is the excess.
StepParts StepCostModel::Impl::PeakDecode(const StepWork& w) const {
  const double B = w.decode_seqs;
  double param_bytes =
      (pc.total - pc.experts + moe_layers * Touched(B) * expert_params_layer) *
      wb;
  StepParts p;
  p.matmul = units::Seconds(
      std::max(2 * B * pc.active / (n * C), param_bytes / (n * W)));
  p.attention = units::Seconds(w.decode_context * kv_bytes_per_token / W);
  double comm = Comm(B);
  double rest = (p.matmul + p.attention).si();
  p.communication = units::Seconds(std::max(0.0, comm - rest));
  return p;
}

double StepCostModel::TokenTime(double tokens) const {
  const Impl& x = *impl_;
  if (!(tokens > 0)) return 0;
  return ((x.peak ? x.PeakMatmuls(tokens) : x.RealisticMatmuls(tokens)) +
          x.Comm(tokens)) *
         (1 + x.host_fraction);
}

// Decode attention on paged KV: the larger of the context's KV bytes at the
// achievable HBM bandwidth and its FLOPs (one query per sequence); prefill
// attention: its causal FLOPs at the attention kernel's rate.
double StepCostModel::Impl::Attention(const StepWork& w) const {
  double kv = w.decode_context * kv_bytes_per_token / W;
  double dflops = w.decode_context * decode_flops_per_key /
                  chip().Peak(hw::Dtype::kBf16).si();
  return std::max(kv, dflops) +
         w.prefill_pairs * prefill_flops_per_pair / prefill_attn_rate;
}

double StepCostModel::ContextTime(const StepWork& w) const {
  const Impl& x = *impl_;
  return (x.Attention(w) + x.fixed) * (1 + x.host_fraction) + x.host_step;
}

StepParts StepCostModel::Cost(const StepWork& w) const {
  const Impl& x = *impl_;
  if (x.peak && w.prefill_tokens <= 0) return x.PeakDecode(w);
  const double tokens = w.decode_seqs + w.prefill_tokens;
  StepParts p;
  if (tokens > 0) {
    p.matmul = units::Seconds(x.peak ? x.PeakMatmuls(tokens)
                                     : x.RealisticMatmuls(tokens));
    p.communication = units::Seconds(x.Comm(tokens));
  }
  p.attention = units::Seconds(x.Attention(w));
  // The engine's unoverlapped host time (EngineHostTime) is overhead too.
  const double gpu = (p.matmul + p.communication + p.attention).si() + x.fixed;
  p.overhead = units::Seconds(x.fixed + x.host_step + x.host_fraction * gpu);
  return p;
}

bool StepCostModel::peak() const { return impl_->peak; }
double StepCostModel::KvBytesPerTokenPerChip() const {
  const Impl& x = *impl_;
  return model::KvCacheBytesPerToken(x.m, x.cfg.kv) / (x.kv_shard * x.cfg.ep);
}
double StepCostModel::WeightsBytesPerChip() const {
  return impl_->pc.total * impl_->wb / impl_->n;
}
double StepCostModel::KvCapacityBytesPerChip() const {
  return std::max(0.0, impl_->chip().hbm_capacity.si() - ReserveBytes(*impl_) -
                           WeightsBytesPerChip());
}
int StepCostModel::chips_per_replica() const {
  return static_cast<int>(impl_->n);
}

namespace {

// The fixed cost of one step, whatever the batch or the experts touched:
// decode runs as a CUDA graph (vLLM, SGLang, TensorRT-LLM), whose kernels
// still start one after another, each taking at least its floor. GEMM-class
// kernels (QKV, attention output, MLP in, MLP out; a grouped MoE GEMM is
// one; the router's gate) at the chip's measured per-dot floor
// (op_overhead: XLA's measured dot table, 5 us on H100/B200; efficiency.md
// 1.2). On a GPU the rest of a layer's kernels too, at the measured start-up
// of back-to-back small kernels, kSmallKernelFloor: two fused residual-add
// RMSNorms, rotary embedding, the attention kernel and the gated
// activation; a MoE layer adds top-k routing, the token sort by expert
// (moe_align_block_size) and the weighted sum of the experts' outputs
// (vLLM's and SGLang's Llama and Qwen3-MoE layers). On a TPU, XLA fuses
// those into the GEMMs: four kernels per layer.
double FixedStepCost(const StepCostModel::Impl& x) {
  const double gemm = x.eff.op_overhead.si();
  if (x.chip().is_tpu()) return x.L * 4 * gemm;
  return x.L * (4 * gemm + 5 * kSmallKernelFloor) +
         x.moe_layers * (gemm + 3 * kSmallKernelFloor);
}

// The replica's constants: rates, parameter counts, collective
// coefficients, the per-token KV and attention coefficients and the fixed
// per-step cost.
Result<std::shared_ptr<StepCostModel::Impl>> BuildImpl(
    const model::ModelSpec& m, const hw::System& sys, const ServeConfig& cfg) {
  auto ok = CheckServePlan(m, sys, cfg);
  if (!ok) return tl::unexpected(ok.error());
  auto x = std::make_shared<StepCostModel::Impl>();
  x->m = m;
  x->sys = sys;
  x->cfg = cfg;
  const hw::Chip& chip = x->chip();
  x->peak = cfg.mode == Mode::kPeak;
  x->eff = x->peak ? PeakEfficiency() : RealisticEfficiency(chip);
  x->compute = ComputeDtypeFor(chip, cfg.weights);
  x->C = chip.Peak(x->compute).si();
  x->W = chip.hbm_bandwidth.si() * (x->peak ? 1.0 : x->eff.hbm);
  x->n = cfg.tp * cfg.ep;
  x->wb = hw::BytesPerElement(cfg.weights);
  x->pc = model::CountParams(m);
  x->L = m.num_layers;
  x->D = m.d_model;
  x->kv_shard = cfg.tp;
  for (int l = 0; l < m.num_layers; ++l) x->moe_layers += m.IsMoeLayer(l);
  x->expert_params_layer =
      x->moe_layers > 0 ? x->pc.experts / x->moe_layers / m.moe.num_experts : 0;
  Parallelism par;
  par.tp = cfg.tp;
  par.ep = cfg.ep;
  par.dp = cfg.dp;
  auto placement = PlaceParallelism(par, sys);
  if (!placement) return tl::unexpected(placement.error());
  x->lay = BuildCoefficients(sys, *placement, cfg.mode);
  // Coefficients at the reference contexts: exact there, linear around them
  // (sliding-window layers make KV bytes and attention FLOPs sublinear).
  const double ctx = cfg.prompt + cfg.output / 2;
  x->kv_bytes_per_token =
      model::KvCacheBytes(m, ctx, cfg.kv) / ctx / (x->kv_shard * cfg.ep);
  x->decode_flops_per_key =
      model::AttentionFlopsPerToken(m, ctx, model::AttentionFlops::kFull) /
      ctx / x->n;
  x->prefill_flops_per_pair =
      model::AttentionFlopsPerToken(m, cfg.prompt,
                                    model::AttentionFlops::kCausal) /
      (cfg.prompt / 2) / x->n;
  x->prefill_attn_rate =
      (x->peak ? 1.0
               : x->eff.attention * (x->eff.attention_ramp
                                         ? AttentionSeqFactor(cfg.prompt)
                                         : 1.0)) *
      chip.Peak(hw::Dtype::kBf16).si();
  x->fixed = x->peak ? 0 : FixedStepCost(*x);
  if (!x->peak) {
    x->host_step = std::max(0.0, cfg.host_step_s);
    x->host_fraction = std::max(0.0, cfg.host_fraction);
  }
  if (!x->peak) x->ar_curve = chip.allreduce_measured;
  return x;
}

// Throughput, cost, what binds, and the notes.
void Summarize(const StepCostModel::Impl& x, double attn_time,
               ServeEstimate* est) {
  const ServeConfig& cfg = x.cfg;
  const int chips = x.sys.num_chips();
  const double step = est->decode_step.si();
  const double prefill = est->prefill_time.si();
  est->ttft = est->prefill_time;
  est->request_latency = units::Seconds(prefill + cfg.output * step);
  // Static batching: each replica runs prefill then `output` decode steps.
  double per_replica = cfg.batch * cfg.output / (prefill + cfg.output * step);
  est->tokens_per_s = per_replica * cfg.dp;
  est->tokens_per_s_per_chip = est->tokens_per_s / chips;
  est->tokens_per_s_per_user = 1.0 / step;
  // Decode turns compute-bound when 2 B N_active / C exceeds weight bytes / W.
  est->critical_batch =
      (x.pc.total * x.wb / x.W) * x.C / (2 * x.pc.matmul_active);
  double price = cfg.price_per_chip_hour > 0
                     ? cfg.price_per_chip_hour
                     : (x.chip().price ? x.chip().price->usd_per_chip_hour : 0);
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
  if (cfg.tp > 1 && ar.active &&
      ar.per_byte * cfg.batch * x.D * 2 < ar.latency) {
    est->notes.emplace_back(
        "tensor-parallel all-reduces are latency-bound at this batch");
  }
  est->notes.push_back(fmt::format(
      "decode is {} below a batch of about {:.0f} (the book's B_crit for "
      "these weights and this chip)",
      "memory-bound", est->critical_batch));
  if (std::string n = BorrowedEfficiencyNote(x.chip()); !x.peak && !n.empty()) {
    est->notes.push_back(n);
  }
}

}  // namespace

Result<StepCostModel> StepCostModel::Create(const model::ModelSpec& model,
                                            const hw::System& system,
                                            const ServeConfig& config) {
  auto impl = BuildImpl(model, system, config);
  if (!impl) return tl::unexpected(impl.error());
  return StepCostModel(*impl);
}

Result<ServeEstimate> EstimateServing(const model::ModelSpec& m,
                                      const hw::System& sys,
                                      const ServeConfig& cfg) {
  auto sc = StepCostModel::Create(m, sys, cfg);
  if (!sc) return tl::unexpected(sc.error());
  const StepCostModel::Impl& x = *sc->impl_;
  const double B = cfg.batch;
  ServeEstimate est;
  ServeMemory(x, &est);
  // Decode: one token per sequence at the mean context of the output.
  StepWork decode{B, B * (cfg.prompt + cfg.output / 2), 0, 0};
  est.decode_parts = sc->Cost(decode);
  est.decode_step = est.decode_parts.total();
  est.weight_time = units::Seconds(x.WeightBytesRead(B) / x.W);
  est.kv_time =
      units::Seconds(decode.decode_context * x.kv_bytes_per_token / x.W);
  est.compute_time = units::Seconds(2 * x.pc.matmul_active * B / x.n / x.C);
  est.comm_time = units::Seconds(x.Comm(B));
  est.overhead = est.decode_parts.overhead;
  // Prefill: the batch's prompts in one pass (compute-bound).
  StepWork prefill{0, 0, B * cfg.prompt, B * cfg.prompt * cfg.prompt / 2};
  est.prefill_parts = sc->Cost(prefill);
  est.prefill_time = est.prefill_parts.total();
  double attn_time = decode.decode_context * x.decode_flops_per_key /
                     x.chip().Peak(hw::Dtype::kBf16).si();
  Summarize(x, attn_time, &est);
  return est;
}

namespace {

// One engine version range whose scheduler leaves the GPU idle while the
// host prepares the next step; versions [lo, hi) as major * 1000 + minor.
struct HostTimeRow {
  std::string_view engine;
  int lo, hi;
  double step_s, fraction;
  std::string_view source;
};

constexpr HostTimeRow kHostTime[] = {
    {"sglang", 0, 4, 0, 0.10,
     "LMSYS blog 2024-12-04 'SGLang v0.4': the zero-overhead batch scheduler "
     "(host work overlapped with the GPU) raised throughput 1.1x over v0.3, "
     "so v0.3's unoverlapped host time was 10% of the GPU time"},
    {"vllm", 0, 6, 0, 0.29 / 0.38,
     "vLLM blog 2024-09-05 'vLLM v0.6.0' (Llama 3 8B, 1 H100, v0.5.3): "
     "scheduling and input preparation 29% of the time, GPU execution 38%"},
    {"vllm", 6, 7, 0.4e-3, 0,
     "vllm-project/vllm issue #6854 (multi-step scheduling RFC): 4 ms of GPU "
     "idle per scheduler call (Llama 3 8B, H100), paid once per "
     "--num-scheduler-steps 10, the setting of vLLM's v0.6.0 benchmarks"},
};

}  // namespace

EngineHostOverhead EngineHostTime(std::string_view engine) {
  const std::string text = ToLower(engine);
  const size_t name_end = text.find_first_of(" @");
  const std::string_view name = std::string_view(text).substr(0, name_end);
  int major = -1, minor = 0;
  if (name_end != std::string::npos) {
    const char* v = text.c_str() + name_end + 1;
    if (*v == 'v') ++v;
    if (std::sscanf(v, "%d.%d", &major, &minor) < 1) major = -1;
  }
  EngineHostOverhead out;
  if (major < 0) return out;
  const int at = major * 1000 + minor;
  for (const HostTimeRow& r : kHostTime) {
    if (name == r.engine && at >= r.lo && at < r.hi) {
      out.step_s = r.step_s;
      out.fraction = r.fraction;
      out.source = std::string(r.source);
    }
  }
  return out;
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
