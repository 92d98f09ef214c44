#include "scalemodel/estimate/inference.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>

#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/hw/price.h"
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

// The start-up of one small GPU kernel in a stream of back-to-back launches:
// 2.555 us (A100 80GB), 2.433 us (H200), 1.6 us (L40), fitted by gpu-benches
// (te42kyfo/gpu-benches gpu-small-kernels, 10,000 launches of an
// L2-resident kernel; efficiency.md 3); the Hopper value for every GPU
// whose catalog file gives no `kernel_launch` of its own (MI300X: 4.5 us).
constexpr double kSmallKernelFloor = 2.433e-6;

// The fixed time of one decode attention kernel over a paged KV cache,
// beyond streaming its KV at the achievable HBM rate: 6.15 us, the median
// of (measured time - KV bytes / (0.90 x 4.8 TB/s)) over the ten
// measurements with at most 150 MB of KV of PyTorch's cuDNN SDPA decode on
// an H200 (batch 1-128, context 1K-16K, GQA 32/8 heads of 128; 3.2-9.1 us;
// docs/device-checks.md, 2026-12-04); FlashAttention-2's were larger. A
// GPU's attention kernel costs at least this or its small-kernel time.
constexpr double kAttentionKernelFloor = 6.15e-6;

// The chip's small-kernel start-up: its catalog `kernel_launch`, else
// Hopper's.
double SmallKernelTime(const ChipEfficiency& e) {
  return e.kernel_launch.si() > 0 ? e.kernel_launch.si() : kSmallKernelFloor;
}

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

// Time of one all-reduce of `bytes` on an engine's in-graph curve:
// log-log interpolated between its points, the smallest point's time below
// it (latency-bound), the largest point's bandwidth above it.
double InGraphAllReduceTime(const hw::AllReduceInGraph& c, double bytes) {
  if (bytes <= c.bytes.front()) return c.time_s.front();
  if (bytes >= c.bytes.back()) return c.time_s.back() * bytes / c.bytes.back();
  size_t i = 1;
  while (bytes > c.bytes[i]) ++i;
  const double f =
      std::log(bytes / c.bytes[i - 1]) / std::log(c.bytes[i] / c.bytes[i - 1]);
  return std::exp(std::log(c.time_s[i - 1]) +
                  f * (std::log(c.time_s[i]) - std::log(c.time_s[i - 1])));
}

// The chip's in-graph all-reduce curve for `engine` over exactly g GPUs:
// the engine's own; unknown or not measured, vLLM's; else another engine's
// (the engines' custom all-reduce kernels share their design: SGLang's is a
// port of vLLM's); null when there is none (another GPU count, or a chip
// without [[allreduce_in_graph]]).
const hw::AllReduceInGraph* InGraphCurve(const hw::Chip& chip,
                                         const std::string& engine, int g) {
  const hw::AllReduceInGraph* vllm = nullptr;
  const hw::AllReduceInGraph* other = nullptr;
  for (const hw::AllReduceInGraph& c : chip.allreduce_in_graph) {
    if (c.gpus != g) continue;
    if (c.engine == engine) return &c;
    if (c.engine == "vllm") vllm = &c;
    if (!other) other = &c;
  }
  return vllm ? vllm : other;
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
  double C = 0;  // matrix rate at the compute dtype
  // The routed experts' compute dtype, its matrix rate and their bytes per
  // weight (ServeConfig::expert_weights; equal to the above when unset).
  hw::Dtype ecompute = hw::Dtype::kBf16;
  double eC = 0;
  double ewb = 2;
  double W = 0;  // achievable HBM bandwidth
  double n = 1;  // chips per replica (tp x ep)
  // The tensor-parallel group of attention, the dense MLPs, the shared
  // experts and the output layer: tp with DP attention; otherwise all tp x
  // ep chips of the replica, as the engines run "EP" without DP attention
  // (vLLM -tp N --enable-expert-parallel, SGLang --tp N --ep N,
  // TensorRT-LLM tp_size N with moe_ep_size: attention and dense GEMMs
  // split over the N ranks, the routed experts over ep; docs/model.md 7.5).
  // The collectives are laid out with g as their tp group (the all-reduce
  // over it is lay.coll[kTpAr]) and ep only with DP attention (the expert
  // all-to-all); without it a replica's ep chips are part of g.
  double g = 1;
  double wb = 2;  // bytes per weight
  model::ParamCounts pc;
  double L = 0, D = 0;
  double moe_layers = 0;
  double expert_params_layer = 0;  // one routed expert of one layer
  // MLA's down-projections of one layer (q_a and kv_a with the rope key),
  // whole on every tensor-parallel rank: SGLang's
  // fused_qkv_a_proj_with_mqa is a ReplicatedLinear, vLLM's
  // fused_qkv_a_proj a MergedColumnParallelLinear with disable_tp=True
  // (models/deepseek_v2.py in both). 0 without MLA.
  double replicated_attention = 0;
  // The KV cache's split over the replica's chips: on GPUs (realistic) by
  // KV heads over the dense group g (a rank holds at least one head: with
  // fewer KV heads than g, or MLA's one latent, copies; TensorRT-LLM
  // docs/source/features/parallel-strategy.md: "if num_heads <
  // tensor_parallel_size, the KV-cache is replicated on every GPU"); else
  // g (the book's heads-then-batch layout); times ep with DP attention
  // (each rank its own sequences).
  double kv_shard = 1;
  LayoutCoefficients lay;
  // Per-step coefficients, taken at the reference contexts (decode: prompt
  // + output / 2; prefill: the prompt).
  double kv_bytes_per_token = 0;  // per chip, per context token read
  // Decode attention's least time per context token, per chip, whatever
  // its bytes (SGLang's FlashAttention-3 MLA over an fp8 KV cache: layers x
  // the chip's mla_fp8_kv_token); 0: none.
  double kv_token_time = 0;
  // The decode attention kernel's work units, per decoding sequence of the
  // replica: layers x KV heads per chip x attention_decode_head, over the
  // chips that share the replica's sequences (DP attention ranks), s.
  double attn_per_seq = 0;
  double decode_flops_per_key = 0;    // per chip, one query over one key
  double prefill_flops_per_pair = 0;  // per chip, one causal query-key pair
  double prefill_attn_rate = 0;       // FLOP/s of the prefill attention kernel
  double fixed = 0;                   // per-step overhead, s
  double host_step = 0;               // unoverlapped host time per step, s
  double host_fraction = 0;           // ... and per second of GPU time
  double eager_prefill = 0;  // host launch time of an eager prefill step, s
  // The measured 8-GPU all-reduce curve of the chip's NVLink (realistic
  // GPUs; empty: the network model alone).
  std::span<const hw::AllReducePoint> ar_curve;
  // The engine's measured in-graph all-reduce over the dense group
  // (InGraphCurve; realistic GPUs; null: ar_curve and the network model).
  const hw::AllReduceInGraph* ar_graph = nullptr;
  double q = 1;          // queries per decoding sequence: k + 1 speculating
  double imbalance = 1;  // the hottest expert rank's load over the mean
  // The measured fused-MoE kernel (MeasuredFusedMoe; realistic GPUs, bf16
  // or fp8 experts; floor_s == 0: the generic GEMM and kernel costs).
  FusedMoeKernel moe_kernel;
  // The shared expert runs inside the fused-MoE op as one more expert
  // every token takes (SGLang's shared-experts fusion, SharedExpertsFused):
  // its GEMMs and kernels leave the dense group.
  bool fused_shared = false;
  // The router runs SGLang's torch.compile'd grouped top-k instead of one
  // fused kernel (UnfusedRouter): kUnfusedRouter's kernels more per MoE
  // layer.
  bool unfused_router = false;
  double slots = 0;  // routed-expert slots, num_experts + redundant
  // Block-scaled fp8 dense GEMMs on an untuned kernel configuration
  // (UntunedBlockFp8): the chip's time per 128-wide K step of one
  // workgroup's 128 x 128 tile, s; 0: the tuned kernels (GemmTime).
  double untuned_block_step = 0;
  // One dense GEMM of the dense group, [rows, inner] x [inner, cols]: at
  // least the untuned kernel's time at `untuned_step` per K step (> 0).
  double DenseGemm(double rows, double cols, double inner,
                   double untuned_step) const;
  // Rows of attention, dense-MLP and output GEMMs per chip for `tokens`
  // tokens in the replica: all of them, or 1/ep with DP attention.
  double DenseRows(double tokens) const {
    return cfg.dp_attention ? tokens / cfg.ep : tokens;
  }
  // The draft model's step cost (SpecDecode::kDraft), else null.
  std::shared_ptr<const StepCostModel> draft;

  const hw::Chip& chip() const { return sys.chip; }
  // The shared experts' intermediate width, all of them together.
  double SharedFfn() const {
    return (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : m.moe.expert_ffn) *
           m.moe.num_shared_experts;
  }
  // Expected routed experts touched per MoE layer by `tokens` tokens, each
  // picking top_k of E at random: E (1 - (1 - k/E)^tokens).
  double Touched(double tokens) const {
    if (!m.is_moe()) return 0.0;
    double E = m.moe.num_experts, k = m.moe.top_k;
    return E * (1 - std::pow(1 - k / E, tokens));
  }
  // One realistic GEMM without a launch cost (that is per step). On a GPU
  // the library's best tile (TileQuantization: skinny GEMMs take a small
  // tile and split-K and stream their weights); on a TPU fewer rows than
  // the MXU tile pad only to a skinny tile.
  // `expert`: a routed expert's GEMM, at the experts' dtype.
  double Gemm(double rows, double cols, double inner,
              bool expert = false) const {
    ChipEfficiency e = eff;
    e.op_overhead = units::Seconds(0);
    if (rows < e.tile_m && e.units <= 0) {
      e.tile_m = static_cast<int>(SkinnyTileRows(rows));
    }
    return GemmTime(chip(), e, rows, cols, inner,
                    expert ? GemmFormat{ecompute, 2, ewb, 2, true}
                           : GemmFormat{compute, 2, wb, 2, true})
        .si();
  }
  // The routed experts' grouped GEMM: `groups` experts of `rows` rows
  // each, [rows, inner] x [inner, cols] per expert, in one kernel.
  double GroupedGemm(double groups, double rows, double cols,
                     double inner) const;
  double TpAllReduce(double bytes) const;
  double TpAllReduces(double tokens) const;
  double Comm(double tokens) const;
  double RealisticMatmuls(double tokens) const;
  double Elementwise(double tokens) const;
  double DenseMatmuls(double rows) const {
    return DenseMatmuls(rows, untuned_block_step);
  }
  // The same with an untuned block-fp8 K step of `untuned_step` (0: the
  // tuned kernels), which the serve note compares.
  double DenseMatmuls(double rows, double untuned_step) const;
  double DpAttentionImbalance(const StepWork& w) const;
  double PeakMatmuls(double tokens) const;
  double WeightBytesRead(double tokens) const;
  double Attention(const StepWork& w) const;
  StepParts PeakDecode(const StepWork& w) const;
  double Logits(double tokens) const;
  double KvRead(double context) const;
  double DraftTime(const StepWork& w) const;
  double WeightsPerChip() const;
  double DraftKvPerTokenPerChip() const;
  double KvPerTokenPerChip() const;
};

Result<bool> CheckExpertWeights(const model::ModelSpec& m,
                                const ServeConfig& cfg) {
  if (cfg.expert_weights && !m.is_moe()) {
    return InvalidArgument(
        "an expert weight dtype needs a mixture-of-experts model; " + m.id +
            " is dense: give its dtype with --weights",
        "--expert-weights");
  }
  return true;
}

namespace {

// Most draft tokens per step (--spec): EAGLE-2's dynamic trees and vLLM's
// num_speculative_tokens are in single digits; 16 bounds the input.
constexpr int kMaxDraftTokens = 16;

// The speculative-decoding plan: k in range, one acceptance or k, each in
// [0, 1], a draft model for kDraft.
Result<bool> CheckSpec(const SpecDecode& sp) {
  if (sp.on() && (sp.k < 1 || sp.k > kMaxDraftTokens)) {
    return InvalidArgument("expected 1 to " + std::to_string(kMaxDraftTokens) +
                               " draft tokens per step, got " +
                               std::to_string(sp.k),
                           "--spec");
  }
  if (sp.on() && (sp.accept.size() != 1 &&
                  sp.accept.size() != static_cast<size_t>(sp.k))) {
    return InvalidArgument(
        "expected one acceptance probability or one per draft position (" +
            std::to_string(sp.k) + "), got " + std::to_string(sp.accept.size()),
        "--spec-accept");
  }
  for (double a : sp.accept) {
    if (!(a >= 0 && a <= 1)) {
      return InvalidArgument(
          "expected acceptance probabilities from 0 to 1, got " +
              FormatNumber(a),
          "--spec-accept");
    }
  }
  if (sp.kind == SpecDecode::kDraft && !sp.draft) {
    return InvalidArgument("a draft-model plan needs the draft model",
                           "--spec");
  }
  return true;
}

Result<bool> CheckServePlan(const model::ModelSpec& m, const hw::System& sys,
                            const ServeConfig& cfg) {
  const int chips = sys.num_chips();
  if (cfg.tp * cfg.ep * cfg.pp * cfg.dp != chips) {
    return InvalidArgument(
        "tp*ep*pp*dp = " + std::to_string(cfg.tp * cfg.ep * cfg.pp * cfg.dp) +
            " but " + sys.id + " has " + std::to_string(chips) + " chips",
        "plan");
  }
  if (cfg.pp < 1 || cfg.pp > m.num_layers) {
    return InvalidArgument("pipeline_parallel=" + std::to_string(cfg.pp) +
                               " must be from 1 to " + m.id + "'s " +
                               std::to_string(m.num_layers) +
                               " layers (each stage holds at least one layer)",
                           "plan");
  }
  if (m.num_heads % cfg.tp) {
    return InvalidArgument(
        "tensor_parallel=" + std::to_string(cfg.tp) +
            " does not divide num_heads=" + std::to_string(m.num_heads),
        "plan");
  }
  // Without DP attention the heads are split over all tp x ep chips.
  if (cfg.ep > 1 && !cfg.dp_attention && m.num_heads % (cfg.tp * cfg.ep)) {
    return InvalidArgument(
        "tp*ep=" + std::to_string(cfg.tp * cfg.ep) +
            " does not divide num_heads=" + std::to_string(m.num_heads) +
            " (without DP attention the heads are split over all tp x ep "
            "chips); add --dp-attention or choose a smaller ep",
        "plan");
  }
  const int slots = m.is_moe() ? m.moe.num_experts + cfg.redundant_experts : 0;
  if (cfg.ep > 1 && (!m.is_moe() || slots % cfg.ep)) {
    return InvalidArgument(
        m.is_moe() ? "expert_parallel=" + std::to_string(cfg.ep) +
                         " does not divide num_experts=" +
                         std::to_string(m.moe.num_experts) +
                         (cfg.redundant_experts > 0
                              ? " + redundant experts " +
                                    std::to_string(cfg.redundant_experts)
                              : std::string())
                   : "expert_parallel needs a mixture-of-experts model; " +
                         m.id + " is dense",
        "plan");
  }
  if (cfg.redundant_experts < 0 ||
      (cfg.redundant_experts > 0 && (!m.is_moe() || cfg.ep < 2))) {
    return InvalidArgument(
        "redundant experts need a mixture-of-experts model served with "
        "ep >= 2 (and a count >= 0); got " +
            std::to_string(cfg.redundant_experts) +
            " with ep=" + std::to_string(cfg.ep) + " on " + m.id,
        "--redundant-experts");
  }
  if (auto ok = CheckExpertWeights(m, cfg); !ok) return ok;
  if (cfg.dp_attention && cfg.ep < 2) {
    return InvalidArgument(
        "data-parallel attention splits the sequences over the ep ranks; "
        "give ep >= 2 in --plan",
        "--dp-attention");
  }
  if (auto ok = CheckSpec(cfg.spec); !ok) return ok;
  if (!(cfg.kv_free_fraction >= 0 && cfg.kv_free_fraction <= 1)) {
    return InvalidArgument(
        "expected a KV-cache fraction above 0 and at most 1 of the memory "
        "left after the weights (TensorRT-LLM's free_gpu_memory_fraction, "
        "e.g. 0.9), got " +
            FormatNumber(cfg.kv_free_fraction),
        "--kv-free-fraction");
  }
  if (cfg.memory_fraction > 0 && cfg.kv_free_fraction > 0) {
    return InvalidArgument(
        "give one memory rule: --mem-fraction (SGLang, vLLM) or "
        "--kv-free-fraction (TensorRT-LLM), not both",
        "--kv-free-fraction");
  }
  if (!(cfg.memory_fraction >= 0 && cfg.memory_fraction <= 1)) {
    return InvalidArgument(
        "expected a memory fraction above 0 and at most 1 (the engine's "
        "--mem-fraction-static or --gpu-memory-utilization, e.g. 0.9), got " +
            FormatNumber(cfg.memory_fraction),
        "--mem-fraction");
  }
  if (!(cfg.batch >= 1) || !(cfg.prompt >= 1) || !(cfg.output >= 1)) {
    return InvalidArgument("batch, prompt and output must be at least 1",
                           "batch");
  }
  return true;
}

// The memory per chip weights and KV cache are measured against: with the
// engine's memory fraction (realistic mode), the device's own total (the
// fraction multiplies it); otherwise the datasheet capacity.
double CapacityBytes(const StepCostModel::Impl& x) {
  return !x.peak && (x.cfg.memory_fraction > 0 || x.cfg.kv_free_fraction > 0)
             ? x.chip().DeviceMemory().si()
             : x.chip().hbm_capacity.si();
}

// HBM per chip held back from weights and KV cache in realistic mode
// (activations, CUDA graphs, fragmentation): what the engine's memory
// fraction leaves, else 5% of capacity.
// With TensorRT-LLM's KV fraction f the KV cache gets f of what the weights
// and the same 5% leave, so the rest of that is held back too.
double ReserveBytes(const StepCostModel::Impl& x) {
  if (x.peak) return 0;
  const double f = x.cfg.memory_fraction;
  const double device = CapacityBytes(x);
  if (x.cfg.kv_free_fraction > 0) {
    const double free = std::max(0.0, 0.95 * device - x.WeightsPerChip());
    return 0.05 * device + (1 - x.cfg.kv_free_fraction) * free;
  }
  return (f > 0 ? 1 - f : 0.05) * device;
}

// Memory per chip: weights sharded over the replica, KV cache of the batch
// at the full context. The book shards the KV cache over heads first, then
// over the batch, so every tensor-parallel rank holds 1/tp of it
// (attention data parallelism does the same for MLA's latent cache).
// Pipeline stages divide both (each holds its layers' weights and KV);
// a draft's weights and KV (speculative decoding) are added.
void ServeMemory(const StepCostModel::Impl& x, ServeEstimate* est) {
  const ServeConfig& cfg = x.cfg;
  const double ctx = cfg.prompt + cfg.output;
  double weights_per_chip = x.WeightsPerChip();
  // Per sequence on one chip: the target's KV at the full context (exact
  // with sliding windows) and the draft's, linear in the context.
  double kv_seq_chip =
      model::KvCacheBytes(x.m, ctx, cfg.kv) / (x.kv_shard * cfg.pp) +
      ctx * x.DraftKvPerTokenPerChip();
  double kv_per_chip = cfg.batch * kv_seq_chip;
  double capacity = CapacityBytes(x);
  double reserve = ReserveBytes(x);
  est->weights_bytes = units::Bytes(weights_per_chip);
  est->kv_cache_bytes = units::Bytes(kv_per_chip);
  est->total_bytes = units::Bytes(weights_per_chip + kv_per_chip + reserve);
  est->capacity_bytes = units::Bytes(capacity);
  est->max_batch = std::max(
      0.0, std::floor((capacity - reserve - weights_per_chip) / kv_seq_chip));
  if (!x.peak && cfg.kv_free_fraction > 0) {
    est->notes.push_back(
        "memory: the KV cache gets " + FormatNumber(cfg.kv_free_fraction) +
        " of the " +
        units::FormatBytes(
            units::Bytes(std::max(0.0, 0.95 * capacity - weights_per_chip))) +
        " the weights and a 5% activation allowance leave of the device's " +
        units::FormatBytes(units::Bytes(capacity)) +
        " (--kv-free-fraction, TensorRT-LLM's free_gpu_memory_fraction)");
  }
  if (!x.peak && cfg.memory_fraction > 0) {
    est->notes.push_back(
        "memory: weights and KV cache get " +
        FormatNumber(cfg.memory_fraction) + " of the device's " +
        units::FormatBytes(units::Bytes(capacity)) +
        " (the driver's total; --mem-fraction, the engine's "
        "--mem-fraction-static or --gpu-memory-utilization); " +
        units::FormatBytes(units::Bytes(reserve)) +
        " is left to activations and CUDA graphs");
  }
  if (est->total_bytes.si() > capacity) {
    est->feasible = false;
    const std::string parts =
        " (weights " + units::FormatBytes(est->weights_bytes) + ", KV cache " +
        units::FormatBytes(est->kv_cache_bytes) + ")";
    const double f = x.peak ? 0 : cfg.memory_fraction;
    const double kvf = x.peak ? 0 : cfg.kv_free_fraction;
    const std::string rule = f > 0
                                 ? FormatNumber(f) + " of the device's " +
                                       units::FormatBytes(est->capacity_bytes)
                                 : "the weights and " + FormatNumber(kvf) +
                                       " of what they leave of the device's " +
                                       units::FormatBytes(est->capacity_bytes);
    est->reason =
        f > 0 || kvf > 0
            ? "needs " +
                  units::FormatBytes(
                      units::Bytes(weights_per_chip + kv_per_chip)) +
                  " per chip for weights and KV cache, has " +
                  units::FormatBytes(units::Bytes(capacity - reserve)) + " (" +
                  rule + ")" + parts
            : "needs " + units::FormatBytes(est->total_bytes) +
                  " HBM per chip, has " +
                  units::FormatBytes(est->capacity_bytes) + parts;
    est->reason +=
        "; the largest batch that fits is " + FormatNumber(est->max_batch);
  }
}

}  // namespace

// One grouped GEMM (vLLM/SGLang fused MoE, TensorRT-LLM and DeepGEMM
// grouped GEMMs): every expert streams its own weights and pads its rows to
// whole tiles, but the tiles of all experts share the SMs, so waves are
// counted over the whole group, not per expert, at the library's best tile
// (TileQuantization). Skinny experts (fewer rows than the catalog tile)
// take a small tile and split-K as Gemm does: no wave quantization.
double StepCostModel::Impl::GroupedGemm(double groups, double rows, double cols,
                                        double inner) const {
  if (!(groups > 0) || !(rows > 0)) return 0;
  if (!peak && rows < eff.tile_m && moe_kernel.floor_s > 0) {
    // Decode: the fused-MoE kernel streams the experts' weights at its
    // measured fraction of the HBM peak (its fixed time is in the fixed
    // cost, FixedStepCost).
    ChipEfficiency e = eff;
    e.op_overhead = units::Seconds(0);
    e.tile_m = static_cast<int>(SkinnyTileRows(rows));
    e.units = 0;
    e.gemm_stream = moe_kernel.stream_fraction;
    return groups * GemmTime(chip(), e, rows, cols, inner,
                             GemmFormat{ecompute, 2, ewb, 2, true})
                        .si();
  }
  if (peak || rows < eff.tile_m) return groups * Gemm(rows, cols, inner, true);
  if (moe_kernel.compute_fraction > 0) {
    // Prefill and large batches: the same fused kernel, its FLOPs at its
    // measured fraction of the peak, its weights at its streaming rate;
    // with the chip's prefill fit, also the activations moved around the
    // GEMMs, 8 bytes per hidden element of each token-expert pair at its
    // fraction of the HBM peak, half with each of the op's two GEMMs.
    const double hbm = chip().hbm_bandwidth.si();
    const double flops = groups * 2 * rows * cols * inner;
    const double weights = groups * inner * cols * ewb;
    const double act =
        moe_kernel.act_fraction > 0
            ? groups * rows * D * 8 / 2 / (moe_kernel.act_fraction * hbm)
            : 0;
    return std::max(flops / (moe_kernel.compute_fraction * eC) + act,
                    weights / (moe_kernel.stream_fraction * hbm));
  }
  const double e = GemmMaxFor(eff, ecompute);
  const double tq = TileQuantization(eff, rows, cols, groups);
  const double flops = groups * 2 * rows * cols * inner;
  const double bytes =
      groups * (rows * inner * 2 + inner * cols * ewb + rows * cols * 2);
  return std::max(flops / (e * tq * eC), bytes / W);
}

// A tensor-parallel all-reduce of `bytes` over the dense group g: with
// the engine's measured in-graph curve for g GPUs on this chip (ar_graph),
// that curve's time (decode and prefill run their all-reduces in CUDA
// graphs or, eager, with the host a step ahead, docs/model.md 7.2);
// otherwise the network model's time; on a GPU whose NVLink generation has a
// measured 8-GPU curve (efficiency.md 4.2: the catalog's
// [[allreduce_measured]]), at least that curve's time at this size, scaled from
// the measured n GPUs to g by the ring's steps, 2 (g - 1) of 2 (n - 1)
// (realistic mode; g within one NVLink domain). Above the in-graph curve's
// largest measured size (MI300X's tables stop at 1-2 MiB; the engines hand
// messages above 16 MB to NCCL/RCCL) the lesser of the curve's bandwidth
// there and that path's time.
double StepCostModel::Impl::TpAllReduce(double bytes) const {
  if (ar_graph && bytes <= ar_graph->bytes.back()) {
    return InGraphAllReduceTime(*ar_graph, bytes);
  }
  double t = lay.coll[kTpAr].Time(bytes, peak);
  if (!peak && !ar_curve.empty() && g <= ar_curve.front().gpus) {
    const double gpus = ar_curve.front().gpus;
    t = std::max(t,
                 MeasuredAllReduceTime(ar_curve, bytes) * (g - 1) / (gpus - 1));
  }
  if (ar_graph) t = std::min(t, InGraphAllReduceTime(*ar_graph, bytes));
  return t;
}

// The tensor-parallel all-reduces of one forward over `tokens` tokens: two
// of [tokens, D] per layer; with a q/k norm over all heads
// (qk_norm_all_heads) one more per layer of the q and k variances, two
// fp32 values per token.
double StepCostModel::Impl::TpAllReduces(double tokens) const {
  if (!(g > 1)) return 0;
  const double rows = DenseRows(tokens);
  double t = 2 * L * TpAllReduce(rows * D * 2);
  if (m.qk_norm_all_heads) t += L * TpAllReduce(rows * 2 * 4);
  return t;
}

// Tensor-parallel all-reduce of [tokens, D] over the dense group twice per
// layer (after attention and after the MLP or MoE: without DP attention
// every rank holds all the step's tokens, so its routed experts' partial
// outputs join in that all-reduce); with DP attention, the expert
// all-to-all (dispatch and combine) per MoE layer.
// Pipeline parallelism: the activations [tokens, D] cross pp - 1 stage
// boundaries (one point-to-point send each, on the critical path).
double StepCostModel::Impl::Comm(double tokens) const {
  double t = TpAllReduces(tokens);
  if (cfg.pp > 1) {
    t += (cfg.pp - 1) * lay.coll[kPpPermute].Time(tokens * D * 2, peak);
  }
  if (cfg.ep > 1 && cfg.dp_attention) {
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
// With DP attention each chip runs the attention, dense-MLP, shared-expert
// and output GEMMs on its own 1/ep of the tokens; the routed experts' rows
// on the hottest rank are `imbalance` times the mean.
double StepCostModel::Impl::RealisticMatmuls(double all_tokens) const {
  const double tp = cfg.tp;  // the routed experts' split (with ep)
  const double up = m.gated_mlp ? 2 : 1;
  double moe = 0;
  if (m.is_moe()) {
    // Touched routed experts, their redundant copies included (a copy of a
    // touched expert shares its tokens).
    double touched = Touched(all_tokens) * slots / m.moe.num_experts;
    double local = touched / cfg.ep;
    double rows = imbalance * all_tokens * m.moe.top_k / std::max(1.0, touched);
    double fe = m.moe.expert_ffn;
    moe = GroupedGemm(local, rows, up * fe / tp, D) +
          GroupedGemm(local, rows, D, fe / tp);
    if (fused_shared) {
      // One more expert of the group, every token's (ep is 1).
      const double fs = SharedFfn();
      moe += GroupedGemm(1, all_tokens, up * fs / tp, D) +
             GroupedGemm(1, all_tokens, D, fs / tp);
    }
  }
  return DenseMatmuls(DenseRows(all_tokens)) + moe_layers * moe +
         Logits(all_tokens);
}

// The memory-bound kernels of one forward over `tokens` tokens (realistic
// mode): per token and layer the activation elements the training model
// streams too (ElementwisePerToken), in bf16 at the achievable HBM
// bandwidth. Each chip normalizes its rows' whole hidden vector (tensor
// parallelism replicates the norms) and holds 1/g of the heads and MLP;
// the routed experts' activations are split over tp x ep.
double StepCostModel::Impl::Elementwise(double tokens) const {
  if (peak || !(tokens > 0)) return 0;
  const double rows = DenseRows(tokens);
  const ElementwiseTraffic t = ElementwisePerToken(m, D);
  const double attn = t.norms + t.attention / g;
  const double dense_mlp = t.per_ffn * m.ffn / g;
  double moe = 0;
  if (m.is_moe()) {
    // Routed: every token's top_k experts' activations, over all chips.
    moe = t.per_ffn * m.moe.top_k * m.moe.expert_ffn * tokens /
          (cfg.tp * cfg.ep * rows);
    if (m.moe.num_shared_experts > 0) {
      const double fs =
          (m.moe.shared_ffn > 0 ? m.moe.shared_ffn : m.moe.expert_ffn) *
          m.moe.num_shared_experts;
      moe += t.per_ffn * fs / g;
    }
  }
  const double elems =
      L * attn + (L - moe_layers) * dense_mlp + moe_layers * moe;
  return rows * elems * 2 / W;
}

// The GEMMs of the dense group at `rows` rows per chip: attention
// projections, dense MLPs and shared experts (not the routed experts, not
// the output layer).
double StepCostModel::Impl::DenseMatmuls(double rows,
                                         double untuned_step) const {
  if (!(rows > 0)) return 0;
  auto dense = [&](double r, double cols, double inner) {
    return DenseGemm(r, cols, inner, untuned_step);
  };
  // The attention projections as one GEMM of the same FLOPs per rank: MLA's
  // replicated down-projections whole, the rest split over g.
  const double rep = replicated_attention / D;
  double qkv = m.mla ? (pc.attention / L / D - rep) / g + rep
                     : (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim / g;
  double up = m.gated_mlp ? 2 : 1;
  double per_layer = 0;
  if (!m.mla) {
    per_layer =
        dense(rows, qkv, D) +
        dense(rows, D, static_cast<double>(m.num_heads) * m.head_dim / g);
  } else {
    per_layer = Gemm(rows, qkv, D);
    if (untuned_step > 0) {
      // An untuned kernel's time depends on each GEMM's own K: MLA's
      // block-fp8 projections one by one (the fused q_a / kv_a
      // down-projection, q_b, the output projection; kv_b's weights run as
      // batched matmuls in the absorbed decode, and its K of 512 is four
      // steps in prefill, left out), each the excess over its tuned time.
      const model::MlaSpec& a = *m.mla;
      const double heads = m.num_heads / g;
      const double q_lora = std::max(0, a.q_lora_rank);
      const double shapes[][2] = {
          {q_lora + a.kv_lora_rank + a.qk_rope_head_dim, D},
          {heads * (a.qk_nope_head_dim + a.qk_rope_head_dim),
           q_lora > 0 ? q_lora : D},
          {D, heads * a.v_head_dim}};
      for (const auto& s : shapes) {
        per_layer += dense(rows, s[0], s[1]) - Gemm(rows, s[0], s[1]);
      }
    }
  }
  double dense_mlp = dense(rows, up * m.ffn / g, D) +
                     dense(rows, D, static_cast<double>(m.ffn) / g);
  double shared = 0;
  if (m.is_moe() && m.moe.num_shared_experts > 0 && !fused_shared) {
    const double fs = SharedFfn();
    shared = dense(rows, up * fs / g, D) + dense(rows, D, fs / g);
  }
  return L * per_layer + (L - moe_layers) * dense_mlp + moe_layers * shared;
}

// A block-scaled fp8 GEMM on an untuned configuration (docs/model.md 7.2):
// each workgroup computes one 128 x 128 output tile and walks K in 128-wide
// steps, one step taking the chip's measured block_fp8_k_step whatever the
// rows in the tile; the tiles run in waves over the chip's compute units.
// Without split-K a skinny GEMM (N = 2,112 outputs: 17 tiles on 304 units)
// leaves most of the chip idle and takes K / 128 steps in a row.
double StepCostModel::Impl::DenseGemm(double rows, double cols, double inner,
                                      double untuned_step) const {
  const double tuned = Gemm(rows, cols, inner);
  if (!(untuned_step > 0) || !(rows > 0) || !(cols > 0)) return tuned;
  constexpr double kTile = 128;
  const double tiles = std::ceil(rows / kTile) * std::ceil(cols / kTile);
  const double waves = eff.units > 0 ? std::ceil(tiles / eff.units) : 1.0;
  return std::max(tuned, waves * std::ceil(inner / kTile) * untuned_step);
}

// DP attention's busiest rank (realistic mode): a request lives on one DP
// rank, so a step's prompt tokens do not spread evenly when few prompts are
// in it. With prompts of the reference length p, P prompt tokens put
// ceil(P / (p ep)) prompts, at most P tokens, on the busiest rank, against
// P / ep on the mean one; every rank waits for it at the next expert
// all-to-all. The extra time of that rank's dense GEMMs and prefill
// attention over the balanced step's. TensorRT-LLM's tech blog 10 ("ADP
// Balance Strategy") models the iteration as its slowest rank's and
// measures DeepSeek-V3 on 8 GB200 with attention DP 8 and round-robin
// scheduling at 54% average balance (25,664 tokens/s against 39,552 with
// perfect balance).
// A simulator that places requests on ranks gives the busiest rank's work
// (StepWork::rank_*): then the extra is that rank's dense GEMMs and
// attention (decode KV reads too) over the mean rank's.
double StepCostModel::Impl::DpAttentionImbalance(const StepWork& w) const {
  if (peak || !cfg.dp_attention) return 0;
  if (w.has_rank()) {
    const double R = cfg.ep;
    const double rows = w.rank_decode_seqs * q + w.rank_prefill_tokens;
    const double mean = (w.decode_seqs * q + w.prefill_tokens) / R;
    const StepWork hot{w.rank_decode_seqs * R, w.rank_decode_context * R,
                       w.rank_prefill_tokens * R, w.rank_prefill_pairs * R};
    const double gemm =
        rows > mean ? DenseMatmuls(rows) - DenseMatmuls(mean) : 0.0;
    return gemm + std::max(0.0, Attention(hot) - Attention(w));
  }
  if (!(w.prefill_tokens > 0)) return 0;
  const double P = w.prefill_tokens;
  const double p = std::max(1.0, cfg.prompt);
  const double hot = std::min(P, std::ceil(P / (p * cfg.ep)) * p);
  if (!(hot > P / cfg.ep)) return 0;
  const double decode = w.decode_seqs * q / cfg.ep;
  const double gemm =
      DenseMatmuls(decode + hot) - DenseMatmuls(decode + P / cfg.ep);
  const double attn = w.prefill_pairs * prefill_flops_per_pair *
                      (hot * cfg.ep / P - 1) / prefill_attn_rate;
  return gemm + attn;
}

// The output layer's GEMM (realistic) or its bound (peak).
double StepCostModel::Impl::Logits(double tokens) const {
  const double v = m.vocab;
  if (peak) {
    return std::max(2 * tokens * v * D / n / C, v * D * wb / g / W);
  }
  return Gemm(DenseRows(tokens), v / g, D);
}

// Matmul weight bytes one pass over `tokens` tokens reads per chip.
// Every chip streams the dense weights it holds (1/g).
double StepCostModel::Impl::WeightBytesRead(double tokens) const {
  double dense_w = pc.matmul_total - pc.experts;  // incl. logits
  double expert_w = moe_layers * Touched(tokens) * expert_params_layer *
                    (m.is_moe() ? slots / m.moe.num_experts : 0.0);
  return dense_w / g * wb + expert_w * ewb / n;
}

namespace {
// Active routed-expert parameters per token (top_k experts of each MoE
// layer).
double ActiveExpertParams(const model::ModelSpec& m, double moe_layers,
                          double expert_params_layer) {
  return m.is_moe() ? moe_layers * m.moe.top_k * expert_params_layer : 0.0;
}
}  // namespace

// Peak matmul time: all FLOPs at peak (the routed experts' at their own
// dtype's) or all weight bytes at HBM peak.
double StepCostModel::Impl::PeakMatmuls(double tokens) const {
  const double experts = ActiveExpertParams(m, moe_layers, expert_params_layer);
  double flops = 2 * (pc.matmul_active - experts) * tokens / n / C +
                 2 * experts * tokens / n / eC;
  return std::max(flops, WeightBytesRead(tokens) / W);
}

// Peak decode (the book's formula): KV + max(FLOPs, parameter bytes), every
// parameter's bytes counted (routed experts: those the batch touches), the
// collectives overlapped: the step is max(that, communication), so the
// exposed communication is the excess.
// Speculating, every sequence puts q = k + 1 queries through the weights.
// NOLINTNEXTLINE(misc-no-recursion): one level, a draft model has no draft
StepParts StepCostModel::Impl::PeakDecode(const StepWork& w) const {
  const double B = w.decode_seqs * q;
  double dense = (pc.total - pc.experts) * wb;
  double experts = moe_layers * Touched(B) * expert_params_layer * ewb *
                   (m.is_moe() ? slots / m.moe.num_experts : 0.0);
  double param_bytes = dense / g + experts / n;
  const double active_experts =
      ActiveExpertParams(m, moe_layers, expert_params_layer);
  StepParts p;
  p.matmul = units::Seconds(std::max(
      2 * B * ((pc.active - active_experts) / C + active_experts / eC) / n,
      param_bytes / W));
  p.attention = units::Seconds(w.decode_context * kv_bytes_per_token / W);
  double comm = Comm(B);
  double rest = (p.matmul + p.attention).si();
  p.communication = units::Seconds(std::max(0.0, comm - rest));
  p.draft = units::Seconds(DraftTime(w));
  return p;
}

double StepCostModel::TokenTime(double tokens) const {
  const Impl& x = *impl_;
  if (!(tokens > 0)) return 0;
  return ((x.peak ? x.PeakMatmuls(tokens) : x.RealisticMatmuls(tokens)) +
          x.Elementwise(tokens) + x.Comm(tokens)) *
         (1 + x.host_fraction);
}

// Decode attention's pass over `context` cached tokens (per chip: the KV
// bytes at the achievable HBM bandwidth, or the kernel's measured time per
// token where it has one, kv_token_time).
double StepCostModel::Impl::KvRead(double context) const {
  return std::max(context * kv_bytes_per_token / W, context * kv_token_time);
}

// Decode attention on paged KV: the larger of the context's KV pass
// (KvRead) and its FLOPs (one query per sequence); prefill attention: its
// causal FLOPs at the attention kernel's rate.
// Speculating, each sequence's KV is read once for its q queries.
double StepCostModel::Impl::Attention(const StepWork& w) const {
  double kv = KvRead(w.decode_context);
  double dflops = q * w.decode_context * decode_flops_per_key /
                  chip().Peak(hw::Dtype::kBf16).si();
  return w.decode_seqs * attn_per_seq + std::max(kv, dflops) +
         w.prefill_pairs * prefill_flops_per_pair / prefill_attn_rate;
}

double StepCostModel::ContextTime(const StepWork& w) const {
  const Impl& x = *impl_;
  return (x.Attention(w) + x.DpAttentionImbalance(w) + x.fixed) *
             (1 + x.host_fraction) +
         x.host_step + x.DraftTime(w);
}

double StepCostModel::EagerHostTime(const StepWork& w) const {
  return w.prefill_tokens > 0 ? impl_->eager_prefill : 0.0;
}

double StepCostModel::DecodeQueries() const { return impl_->q; }
double StepCostModel::MatmulTokens(const StepWork& w) const {
  return w.decode_seqs * impl_->q + w.prefill_tokens;
}
const SpecDecode& StepCostModel::spec() const { return impl_->cfg.spec; }
int StepCostModel::pipeline_stages() const { return impl_->cfg.pp; }
int StepCostModel::dp_ranks() const {
  return impl_->cfg.dp_attention ? impl_->cfg.ep : 1;
}

// NOLINTNEXTLINE(misc-no-recursion): one level, a draft model has no draft
StepParts StepCostModel::Cost(const StepWork& w) const {
  const Impl& x = *impl_;
  if (x.peak && w.prefill_tokens <= 0) return x.PeakDecode(w);
  const double tokens = MatmulTokens(w);
  StepParts p;
  if (tokens > 0) {
    p.matmul = units::Seconds(x.peak ? x.PeakMatmuls(tokens)
                                     : x.RealisticMatmuls(tokens));
    p.elementwise = units::Seconds(x.Elementwise(tokens));
    p.communication = units::Seconds(x.Comm(tokens));
  }
  // DP attention's busiest rank: its extra GEMM and attention time.
  p.matmul = p.matmul + units::Seconds(x.DpAttentionImbalance(w));
  p.attention = units::Seconds(x.Attention(w));
  // The engine's unoverlapped host time (EngineHostTime) is overhead too.
  const double gpu =
      (p.matmul + p.elementwise + p.communication + p.attention).si() + x.fixed;
  p.overhead = units::Seconds(x.fixed + x.host_step + x.host_fraction * gpu);
  p.draft = units::Seconds(x.DraftTime(w));
  // An eager prefill step's host launch time adds to its GPU time
  // (kSglangEagerOpTime): host overhead.
  p.overhead = p.overhead + units::Seconds(EagerHostTime(w));
  return p;
}

// The draft's time in a step (docs/model.md 7.4). MTP and EAGLE heads: k
// passes of one average target layer (its GEMMs, collectives, attention and
// fixed cost over L) plus the output layer over the decoding sequences, and
// one such pass over the step's prompt tokens (the head's own KV). A draft
// model: k of its decode steps and its prefill of the prompt tokens.
// n-gram lookup runs on the host: no device time.
// NOLINTNEXTLINE(misc-no-recursion): one level, a draft model has no draft
double StepCostModel::Impl::DraftTime(const StepWork& w) const {
  const SpecDecode& sp = cfg.spec;
  if (sp.kind == SpecDecode::kNone || sp.kind == SpecDecode::kNgram) return 0;
  StepWork dec{w.decode_seqs, w.decode_context, 0, 0};
  StepWork pre{0, 0, w.prefill_tokens, w.prefill_pairs};
  if (sp.kind == SpecDecode::kDraft) {
    double t = 0;
    if (w.decode_seqs > 0) t += sp.k * draft->Cost(dec).total().si();
    if (w.prefill_tokens > 0) t += draft->Cost(pre).total().si();
    return t;
  }
  auto head = [&](double tokens, const StepWork& one) {
    if (!(tokens > 0)) return 0.0;
    StepWork a = one;
    double attn = std::max(KvRead(a.decode_context),
                           a.decode_context * decode_flops_per_key /
                               chip().Peak(hw::Dtype::kBf16).si()) +
                  a.prefill_pairs * prefill_flops_per_pair / prefill_attn_rate;
    double mm = peak ? PeakMatmuls(tokens) : RealisticMatmuls(tokens);
    double comm = TpAllReduces(tokens);
    return (mm + comm + attn + fixed) / L + Logits(tokens);
  };
  return sp.k * head(w.decode_seqs, dec) + head(w.prefill_tokens, pre);
}

// Weights per chip: the replica's split (with DP attention the dense
// weights are split over tp only; redundant expert copies add), over the
// pipeline stages, plus a draft's: an MTP/EAGLE head is one average layer
// (DeepSeek-V3's MTP module: 14B of 685B, about one of its 61 layers plus
// shared embeddings), a draft model its own weights over tp.
double StepCostModel::Impl::WeightsPerChip() const {
  // MLA's down-projections are whole on every rank.
  const double replicated = L * replicated_attention;
  const double dense = pc.total - pc.experts - replicated;
  const double experts =
      m.is_moe() ? pc.experts * slots / m.moe.num_experts : 0.0;
  double w = ((dense / g + replicated) * wb + experts / n * ewb) / cfg.pp;
  switch (cfg.spec.kind) {
    case SpecDecode::kMtp:
    case SpecDecode::kEagle:
      w += pc.total / L * wb / n;
      break;
    case SpecDecode::kDraft:
      w += model::CountParams(*cfg.spec.draft).total * wb / cfg.tp;
      break;
    default:
      break;
  }
  return w;
}

// KV bytes per context token per chip of the draft: one target layer's
// (MTP, EAGLE), the draft model's over tp, none for n-gram.
double StepCostModel::Impl::DraftKvPerTokenPerChip() const {
  switch (cfg.spec.kind) {
    case SpecDecode::kMtp:
    case SpecDecode::kEagle:
      return model::KvCacheBytesPerToken(m, cfg.kv) / L / kv_shard;
    case SpecDecode::kDraft:
      return model::KvCacheBytesPerToken(*cfg.spec.draft, cfg.kv) / cfg.tp;
    default:
      return 0;
  }
}

double StepCostModel::Impl::KvPerTokenPerChip() const {
  return model::KvCacheBytesPerToken(m, cfg.kv) / (kv_shard * cfg.pp) +
         DraftKvPerTokenPerChip();
}

bool StepCostModel::peak() const { return impl_->peak; }
double StepCostModel::KvTokenTimePerChip() const {
  return impl_->kv_token_time;
}

double StepCostModel::KvBytesPerTokenPerChip() const {
  return impl_->KvPerTokenPerChip();
}
double StepCostModel::WeightsBytesPerChip() const {
  return impl_->WeightsPerChip();
}
double StepCostModel::KvCapacityBytesPerChip() const {
  return std::max(0.0, CapacityBytes(*impl_) - ReserveBytes(*impl_) -
                           WeightsBytesPerChip());
}
int StepCostModel::chips_per_replica() const {
  return static_cast<int>(impl_->n) * impl_->cfg.pp;
}

namespace {

// Ops one decoder-layer block issues in SGLang's eager extend (prefill)
// path: kernel-launching calls (a GEMM, a norm, RoPE, a KV-cache store, an
// attention kernel, an activation, a routing kernel, a collective), of
// which `linears` are GEMMs that an fp8/fp4 model precedes with an
// activation-quantization kernel. Counted from the Python forward
// functions of sgl-project/sglang (the stored snapshots named; the
// v0.5.6 tag itself could not be fetched, docs/model.md 7.2).
// In a CUDA graph (decode) the same blocks issue the same kernels: `gemms`
// of the ops are GEMM-class (at the chip's GEMM floor), `attention` the
// attention kernel; the rest are small kernels (norms, RoPE, KV stores,
// activations, routing, quantization). The all-reduces' block is costed
// apart in decode (TpAllReduce).
struct EagerBlock {
  int ops, linears, gemms = 0, attention = 0;
  std::string_view counted_from;
};

constexpr EagerBlock kLayerNorms = {
    2, 0, 0, 0,
    "layers/layernorm.py RMSNorm.forward_cuda (fused_add_rmsnorm), before "
    "attention and before the MLP (models/deepseek_v2.py "
    "DeepseekV2DecoderLayer.forward via LayerCommunicator, commit 00114ae)"};
constexpr EagerBlock kTpAllReduce = {
    2, 0, 0, 0,
    "tensor_model_parallel_all_reduce after attention's o_proj and after "
    "the MLP or MoE block (LayerCommunicator.prepare_mlp, "
    "DeepseekV2MoE.forward_normal)"};
constexpr EagerBlock kGqaAttention = {
    5, 2, 2, 1,
    "models/llama.py LlamaAttention.forward: qkv_proj (bias in the GEMM), "
    "rotary_emb, RadixAttention (set_kv_buffer, extend kernel), o_proj "
    "(commit 0023954)"};
constexpr EagerBlock kQkNorm = {
    2, 0, 0, 0,
    "models/qwen3.py Qwen3Attention.forward_prepare_native -> "
    "models/utils.py apply_qk_norm: q_norm, k_norm (commit 01b5f57)"};
constexpr EagerBlock kMlaAttention = {
    10, 5, 5, 1,
    "models/deepseek_v2.py forward_absorb_prepare/forward_absorb_core "
    "(an extend with a cached prefix, PR #12160's case; commit 00114ae): "
    "fused_qkv_a_proj_with_mqa, q_a_layernorm, kv_a_layernorm, q_b_proj, "
    "w_kc bmm, rotary_emb, set_kv_buffer, attention, w_vc bmm, o_proj"};
constexpr EagerBlock kDenseMlp = {
    3, 2, 2, 0,
    "models/deepseek_v2.py DeepseekV2MLP.forward: gate_up_proj, "
    "SiluAndMul, down_proj"};
constexpr EagerBlock kRoutedMoe = {
    7, 2, 3, 0,
    "models/qwen3_moe.py Qwen3MoeSparseMoeBlock.forward_normal: gate, topk, "
    "experts (fused_moe_triton: moe_align_block_size, w13 GEMM, "
    "silu_and_mul, w2 GEMM, moe_sum_reduce)"};
constexpr EagerBlock kSharedExpert = {
    4, 2, 2, 0,
    "models/deepseek_v2.py DeepseekV2MoE._forward_shared_experts "
    "(gate_up_proj, SiluAndMul, down_proj) and forward_normal's add"};

// SGLang's biased grouped top-k (sigmoid scores plus a correction bias,
// the best experts of the best groups) where its fused kernel does not
// apply (layers/moe/topk.py biased_grouped_topk_gpu: moe_fused_gate needs
// at most 32 experts per group and a power-of-two expert count, so
// GLM-4.5/4.6's 160 experts in one group take the torch.compile'd
// biased_grouped_topk_impl). Its steps that TorchInductor cannot fuse
// make nine kernels against the table's one topk: three torch.topk calls
// (the groups' top two, the best groups, the experts), the group mask's
// fill and scatter, and the pointwise and reduction groups between them
// (sigmoid plus bias; the groups' sums; the masked fill; gather and
// renormalize). Counted from the code, not from a profile.
constexpr EagerBlock kUnfusedRouter = {
    8, 0, 0, 0,
    "layers/moe/topk.py biased_grouped_topk_impl (torch.compile): sigmoid "
    "and bias, topk(2) per group, the groups' sums, topk of the groups, "
    "the mask's fill and scatter, masked_fill, topk of the experts, gather "
    "and renormalize: 9 kernels where moe_fused_gate is 1"};

constexpr int Ops(const EagerBlock& b, bool quantized) {
  return b.ops + (quantized ? b.linears : 0);
}

// A decoder layer's kernels by class (a CUDA graph's, without the
// all-reduces, which TpAllReduce costs).
struct LayerKernels {
  int gemm = 0, small = 0, attention = 0;
  constexpr LayerKernels& operator+=(const LayerKernels& o) {
    gemm += o.gemm;
    small += o.small;
    attention += o.attention;
    return *this;
  }
};

constexpr LayerKernels Kernels(const EagerBlock& b, bool quantized) {
  return {b.gemms, Ops(b, quantized) - b.gemms - b.attention, b.attention};
}

// One decoder layer's kernels; `routed` false leaves out the routed
// experts' block (a measured fused-MoE kernel stands for it).
constexpr LayerKernels DecodeLayerKernels(bool mla, bool qk_norm, bool moe,
                                          bool shared, bool quantized,
                                          bool routed) {
  LayerKernels k = Kernels(kLayerNorms, quantized);
  k += Kernels(mla ? kMlaAttention : kGqaAttention, quantized);
  if (!mla && qk_norm) k += Kernels(kQkNorm, quantized);
  if (!moe) return k += Kernels(kDenseMlp, quantized);
  if (routed) k += Kernels(kRoutedMoe, quantized);
  if (shared) k += Kernels(kSharedExpert, quantized);
  return k;
}
// Llama 3's layer in bf16: QKV, attention output, MLP in and out; two
// norms, RoPE, the KV store and the gated activation; the attention kernel.
static_assert(
    DecodeLayerKernels(false, false, false, false, false, true).gemm == 4);
static_assert(
    DecodeLayerKernels(false, false, false, false, false, true).small == 5);

// One decoder layer's ops: its kernels and, with tensor parallelism, its
// two all-reduces.
constexpr int EagerLayerOps(bool mla, bool qk_norm, bool moe, bool shared,
                            bool quantized, bool tp) {
  const LayerKernels k =
      DecodeLayerKernels(mla, qk_norm, moe, shared, quantized, true);
  return k.gemm + k.small + k.attention +
         (tp ? Ops(kTpAllReduce, quantized) : 0);
}

// DeepSeek-V3/R1 with fp8 or int8 GEMMs and quantized activations, TP 8:
// 3 dense layers and 58 MoE layers with a shared expert.
constexpr int kDeepSeekV3EagerOps =
    3 * EagerLayerOps(true, false, false, false, true, true) +
    58 * EagerLayerOps(true, false, true, true, true, true);
static_assert(kDeepSeekV3EagerOps == 2044);
// Llama 3.1 8B with fp8 GEMMs, TP 8: 32 dense GQA layers.
constexpr int kLlama8bFp8EagerOps =
    32 * EagerLayerOps(false, false, false, false, true, true);
static_assert(kLlama8bFp8EagerOps == 512);

// The fixed cost of one step, whatever the batch or the experts touched:
// decode runs as a CUDA graph (vLLM, SGLang, TensorRT-LLM), whose kernels
// still start one after another, each taking at least its floor. On a GPU
// each layer's kernels are those of the engine's layer blocks
// (DecodeLayerKernels, counted from SGLang's model code, the same table as
// the eager prefill's ops): GEMM-class kernels (QKV or MLA's projections
// and absorbed BMMs, attention output, MLP or shared-expert in and out, the
// router's gate, the routed experts' two grouped GEMMs) at the chip's
// measured per-dot floor (op_overhead: XLA's measured dot table, 5 us on
// H100/B200; efficiency.md 1.2), the attention kernel at no less than its
// measured floor (kAttentionKernelFloor), and the rest (norms, q/k norms,
// RoPE, the KV store, activations, top-k, the token sort by expert, the
// experts' weighted sum; with fp8/fp4 GEMMs each one's activation
// quantization) at the measured start-up of back-to-back small kernels
// (SmallKernelTime). The all-reduces are costed apart (TpAllReduce).
// With a measured fused-MoE kernel (MeasuredFusedMoe) a MoE layer's routed
// experts cost that kernel's fixed time instead of their block's kernels
// (the router's gate stays a GEMM). On a TPU, XLA fuses those into the
// GEMMs: four kernels per layer.
double FixedStepCost(const StepCostModel::Impl& x) {
  const double gemm = x.eff.op_overhead.si();
  if (x.chip().is_tpu()) return x.L * 4 * gemm;
  const double small = SmallKernelTime(x.eff);
  const double attn = std::max(small, kAttentionKernelFloor);
  const bool mla = x.m.mla.has_value();
  const bool shared = x.m.moe.num_shared_experts > 0 && !x.fused_shared;
  const bool quantized = hw::BytesPerElement(x.compute) < 2;
  auto time = [&](const LayerKernels& k) {
    return k.gemm * gemm + k.small * small + k.attention * attn;
  };
  const double dense_layer =
      time(DecodeLayerKernels(mla, x.m.qk_norm, false, false, quantized, true));
  const bool fused = x.moe_kernel.floor_s > 0;
  const double moe_layer =
      fused ? time(DecodeLayerKernels(mla, x.m.qk_norm, true, shared, quantized,
                                      false)) +
                  gemm + x.moe_kernel.floor_s
            : time(DecodeLayerKernels(mla, x.m.qk_norm, true, shared, quantized,
                                      true));
  const double router =
      x.unfused_router ? Ops(kUnfusedRouter, false) * small : 0.0;
  return (x.L - x.moe_layers) * dense_layer +
         x.moe_layers * (moe_layer + router);
}

// The draft model's step cost: on the same chips with the target's tp
// (vLLM's default draft tensor_parallel_size), the rest of the chips as its
// replicas.
// NOLINTNEXTLINE(misc-no-recursion): one level, a draft model has no draft
Result<std::shared_ptr<const StepCostModel>> BuildDraft(
    const hw::System& sys, const ServeConfig& cfg) {
  ServeConfig d = cfg;
  d.ep = 1;
  d.pp = 1;
  d.dp = sys.num_chips() / cfg.tp;
  d.dp_attention = false;
  d.redundant_experts = 0;
  d.spec = SpecDecode{};
  auto draft = StepCostModel::Create(*cfg.spec.draft, sys, d);
  if (!draft) {
    return InvalidArgument(
        "the draft model " + cfg.spec.draft->id + ": " + draft.error().message,
        "--spec");
  }
  return std::make_shared<const StepCostModel>(*draft);
}

// SGLang releases whose ROCm images pin an aiter without tuned gfx942
// configurations for block-scaled fp8 GEMMs: before 0.5.10 (0.5.9 ships
// aiter v0.1.10.post3; the gfx942 DeepSeek shapes came with aiter PR
// #2024, first in v0.1.11, which sglang PR #19936 pinned on 2026-03-05).
bool UntunedBlockFp8Release(std::string_view engine) {
  if (EngineFamily(engine) != "sglang") return false;
  const EngineRelease r = ParseEngineRelease(engine);
  return r.parts >= 1 && !r.AtLeast(0, 5, 10);
}

// The replica's constants: rates, parameter counts, collective
// coefficients, the per-token KV and attention coefficients and the fixed
// per-step cost.
// NOLINTNEXTLINE(misc-no-recursion): one level, a draft model has no draft
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
  x->ecompute = ComputeDtypeFor(chip, cfg.ExpertWeights());
  x->eC = chip.Peak(x->ecompute).si();
  x->ewb = hw::BytesPerElement(cfg.ExpertWeights());
  x->W = chip.hbm_bandwidth.si() * (x->peak ? 1.0 : x->eff.hbm);
  x->n = cfg.tp * cfg.ep;
  x->g = cfg.dp_attention ? cfg.tp : x->n;
  x->wb = hw::BytesPerElement(cfg.weights);
  x->pc = model::CountParams(m);
  x->L = m.num_layers;
  x->D = m.d_model;
  // The GPU engines' head split with copies (realistic); the book's layout
  // (heads, then the batch over what is left of g: 1/g per chip) on TPUs
  // and in peak mode.
  const bool copies = !x->peak && !chip.is_tpu();
  x->kv_shard =
      (copies ? (m.mla ? 1.0 : std::min<double>(x->g, m.num_kv_heads)) : x->g) *
      (cfg.dp_attention ? cfg.ep : 1);
  if (m.mla) {
    x->replicated_attention =
        x->D * (std::max(0, m.mla->q_lora_rank) + m.mla->kv_lora_rank +
                m.mla->qk_rope_head_dim);
  }
  for (int l = 0; l < m.num_layers; ++l) x->moe_layers += m.IsMoeLayer(l);
  x->expert_params_layer =
      x->moe_layers > 0 ? x->pc.experts / x->moe_layers / m.moe.num_experts : 0;
  x->slots = m.is_moe() ? m.moe.num_experts + cfg.redundant_experts : 0;
  // The imbalance is applied to the layout it was measured on (attention
  // DP with wide EP, TensorRT-LLM; docs/model.md 7.5): plain ep plans keep
  // the balanced routing they are validated with.
  x->imbalance =
      m.is_moe() && !x->peak && (cfg.dp_attention || cfg.redundant_experts > 0)
          ? ExpertImbalance(cfg.ep, m.moe.num_experts, cfg.redundant_experts)
          : 1.0;
  x->q = cfg.spec.on() ? cfg.spec.k + 1.0 : 1.0;
  Parallelism par;
  par.tp = static_cast<int>(x->g);
  par.ep = cfg.dp_attention ? cfg.ep : 1;
  par.pp = cfg.pp;
  par.dp = cfg.dp;
  auto placement = PlaceParallelism(par, sys);
  if (!placement) return tl::unexpected(placement.error());
  x->lay = BuildCoefficients(sys, *placement, cfg.mode);
  // Coefficients at the reference contexts: exact there, linear around them
  // (sliding-window layers make KV bytes and attention FLOPs sublinear).
  const double ctx = cfg.prompt + cfg.output / 2;
  x->kv_bytes_per_token =
      model::KvCacheBytes(m, ctx, cfg.kv) / ctx / x->kv_shard;
  // SGLang runs MLA decode with its FlashAttention-3 backend on Hopper (its
  // default there); over an fp8 KV cache that kernel takes the chip's
  // measured time per cached token and layer, several times its bytes'
  // (docs/model.md 7.2). Each chip holds 1/kv_shard of the sequences.
  if (copies && m.mla && cfg.kv == hw::Dtype::kFp8 && cfg.engine == "sglang" &&
      (cfg.attention_backend.empty() || cfg.attention_backend == "fa3")) {
    x->kv_token_time = x->L * x->eff.mla_fp8_kv_token.si() / x->kv_shard;
  }
  // SGLang before 0.5.10 on a chip with a measured untuned block-fp8 step
  // (AMD gfx942) runs a block-scaled fp8 checkpoint's dense GEMMs on
  // aiter's generic Triton configuration (docs/model.md 7.2).
  if (copies && x->eff.block_fp8_k_step.si() > 0 &&
      cfg.weights == hw::Dtype::kFp8 && m.fp8_block_k > 0 &&
      UntunedBlockFp8Release(cfg.engine_release)) {
    x->untuned_block_step = x->eff.block_fp8_k_step.si();
  }
  // Decode attention kernels run a work unit per sequence and KV head
  // (FlashAttention's and FlashInfer's decode grids), each taking the
  // chip's measured attention_decode_head beyond the KV bytes (docs/model.md
  // 7.2): KV heads per chip with the GPU engines' head split (MLA's latent:
  // one), sequences per DP attention rank. Measured on SGLang's and vLLM's
  // kernels (and an unnamed engine is vLLM); TensorRT-LLM's XQA kernel has
  // no such measurement and takes none.
  if (copies && cfg.engine != "trtllm") {
    const double heads =
        m.mla ? 1.0 : m.num_kv_heads / std::min<double>(x->g, m.num_kv_heads);
    x->attn_per_seq = x->L * heads * x->eff.attention_decode_head.si() /
                      (cfg.dp_attention ? cfg.ep : 1);
  }
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
  if (!x->peak && !chip.is_tpu() && m.is_moe()) {
    const std::string runner = MoeRunner(chip, m, cfg);
    x->moe_kernel = MeasuredFusedMoe(chip, cfg.engine, cfg.ExpertWeights(),
                                     x->ecompute, runner);
    x->fused_shared =
        x->moe_kernel.floor_s > 0 && SharedExpertsFused(chip, m, cfg, runner);
    x->unfused_router = UnfusedRouter(chip, m, cfg, runner);
  }
  x->fixed = x->peak ? 0 : FixedStepCost(*x);
  if (!x->peak) {
    x->host_step = std::max(0.0, cfg.host_step_s);
    x->host_fraction = std::max(0.0, cfg.host_fraction);
    if (!chip.is_tpu() && cfg.eager_prefill_op_s > 0 &&
        !(cfg.prefill_graph_default && PiecewiseGraphsApply(chip, cfg))) {
      x->eager_prefill = cfg.eager_prefill_op_s *
                         EagerPrefillOps(m, hw::BytesPerElement(x->compute) < 2,
                                         x->g > 1, x->unfused_router);
    }
  }
  if (!x->peak) {
    x->ar_curve = chip.allreduce_measured;
    if (x->g > 1) x->ar_graph = InGraphCurve(chip, cfg.engine, x->g);
  }
  if (cfg.spec.kind == SpecDecode::kDraft) {
    auto draft = BuildDraft(sys, cfg);
    if (!draft) return tl::unexpected(draft.error());
    x->draft = *draft;
  }
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
      (((x.pc.total - x.pc.experts) * x.wb + x.pc.experts * x.ewb) / x.W) *
      x.C / (2 * x.pc.matmul_active);
  const double price = hw::PricePerChipHour(x.chip(), cfg.price_per_chip_hour);
  est->cost_per_million_tokens_usd =
      price > 0 ? price * chips / 3600 / est->tokens_per_s * 1e6
                : std::numeric_limits<double>::quiet_NaN();
  const double comm = est->comm_time.si();
  if (!est->feasible) {
    est->bound = "memory-capacity";
  } else {
    double mem = est->weight_time.si() + est->kv_time.si();
    double comp = est->compute_time.si() + attn_time;
    // The kernels' floors and the host's time per step (overhead) bind
    // when they exceed every bound: small models, high TP, small batches.
    const double fixed = est->overhead.si();
    est->bound = fixed > std::max({comm, mem, comp}) ? "kernel-overhead"
                 : comm > std::max(mem, comp)        ? "communication"
                 : comp > mem                        ? "compute"
                                                     : "memory-bandwidth";
  }
  const CollCoef& ar = x.lay.coll[kTpAr];
  if (x.g > 1 && ar.active && ar.per_byte * cfg.batch * x.D * 2 < ar.latency) {
    est->notes.emplace_back(
        "tensor-parallel all-reduces are latency-bound at this batch");
  }
  if (x.kv_token_time > 0) {
    est->notes.push_back(fmt::format(
        "SGLang's FlashAttention-3 MLA decode over the fp8 KV cache: {} per "
        "cached token and layer ({}'s measured kernel, catalog "
        "mla_fp8_kv_token), {:.1f}x the time of its bytes",
        units::FormatSeconds(x.eff.mla_fp8_kv_token), x.chip().id,
        x.kv_token_time / (x.kv_bytes_per_token / x.W)));
  }
  if (x.untuned_block_step > 0) {
    const double rows = x.DenseRows(cfg.batch * x.q);
    const double extra = x.DenseMatmuls(rows) - x.DenseMatmuls(rows, 0);
    est->notes.push_back(fmt::format(
        "{} runs the block-scaled fp8 dense GEMMs on an untuned kernel "
        "configuration (128 x 128 tiles, no split-K: {} per 128-wide K step, "
        "catalog block_fp8_k_step): {} more per decode step than tuned "
        "kernels (docs/model.md 7.2)",
        cfg.engine_release, units::FormatSeconds(x.eff.block_fp8_k_step),
        units::FormatSeconds(units::Seconds(extra))));
  }
  // Which all-reduce time the decode step used (docs/model.md 7.2).
  if (!x.peak && x.g > 1) {
    const double bytes = x.DenseRows(cfg.batch * x.q) * x.D * 2;
    std::string from;
    if (x.ar_graph) {
      from = fmt::format(
          "{}'s measured curve in a graph for {} GPUs on {} (catalog "
          "[[allreduce_in_graph]], {})",
          x.ar_graph->engine, x.g, x.chip().id, x.ar_graph->version);
    } else {
      const bool eager = !x.ar_curve.empty() && x.g <= x.ar_curve.front().gpus;
      from = !eager ? "the network model (docs/model.md 2.3)"
                    : "the network model, at least " + x.chip().id +
                          "'s measured eager NCCL/RCCL curve";
    }
    est->notes.push_back(fmt::format(
        "decode's tensor-parallel all-reduces: {} of {:.0f} KiB each, {} "
        "per step; from {}",
        units::FormatSeconds(units::Seconds(x.TpAllReduce(bytes))),
        bytes / 1024, 2 * static_cast<int>(x.L), from));
    if (x.m.qk_norm_all_heads) {
      est->notes.push_back(fmt::format(
          "the q/k norm spans all heads ({}): one more all-reduce per layer "
          "of the variances, {} each",
          x.m.id,
          units::FormatSeconds(units::Seconds(
              x.TpAllReduce(x.DenseRows(cfg.batch * x.q) * 2 * 4)))));
    }
  }
  est->notes.push_back(fmt::format(
      "decode is {} below a batch of about {:.0f} (the book's B_crit for "
      "these weights and this chip)",
      "memory-bound", est->critical_batch));
  if (std::string n = BorrowedEfficiencyNote(x.chip()); !x.peak && !n.empty()) {
    est->notes.push_back(n);
  }
  if (!x.peak && !cfg.host_time_source.empty()) {
    est->notes.push_back("engine host time, " + cfg.host_time_source);
  }
  if (x.moe_kernel.floor_s > 0) {
    est->notes.push_back(fmt::format(
        "MoE decode: each layer's fused-MoE op takes {:.1f} us plus the "
        "touched experts' weights at {:.3f} of the HBM peak ({})",
        x.moe_kernel.floor_s * 1e6, x.moe_kernel.stream_fraction,
        x.moe_kernel.source));
  }
  if (x.unfused_router) {
    est->notes.push_back(fmt::format(
        "MoE routing: SGLang's fused top-k kernel takes at most 32 experts "
        "per group and a power-of-two count; {} experts in {} group{} run "
        "its torch.compile'd grouped top-k, {} kernels per MoE layer instead "
        "of 1",
        x.m.moe.num_experts, x.m.moe.expert_groups,
        x.m.moe.expert_groups == 1 ? "" : "s", Ops(kUnfusedRouter, false) + 1));
  }
  if (x.fused_shared) {
    est->notes.emplace_back(
        "the shared expert runs inside the fused-MoE op as one more expert "
        "(SGLang's shared-experts fusion; --disable-shared-experts-fusion "
        "runs it apart)");
  }
}

}  // namespace

// NOLINTNEXTLINE(misc-no-recursion): one level, a draft model has no draft
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
  if (cfg.batch < cfg.pp) {
    return InvalidArgument(
        "a batch of " + FormatNumber(cfg.batch) +
            " cannot fill pp=" + std::to_string(cfg.pp) +
            " pipeline microbatches; give a batch of at least " +
            std::to_string(cfg.pp),
        "batch");
  }
  // Pipeline parallelism: pp microbatches of B / pp sequences in flight; a
  // microbatch's step passes every stage (the sum of the stages' times is
  // the whole model on tp x ep chips) and pp - 1 transfers, and each of
  // its sequences gets a token per step (vLLM's virtual engines).
  const double B = cfg.batch / cfg.pp;
  const double E = SpecExpectedTokens(cfg.spec);
  ServeEstimate est;
  ServeMemory(x, &est);
  // Decode: one verify step per sequence at the mean context of the output,
  // E tokens per step (1 without speculation).
  StepWork decode{B, B * (cfg.prompt + cfg.output / 2), 0, 0};
  StepParts step = sc->Cost(decode);
  est.spec_tokens_per_step = E;
  est.spec_step = step.total();
  est.decode_parts = {step.matmul / E,      step.attention / E,
                      step.elementwise / E, step.communication / E,
                      step.overhead / E,    step.draft / E};
  est.decode_step = est.decode_parts.total();
  est.expert_imbalance = x.imbalance;
  const double Bq = B * x.q;
  est.weight_time = units::Seconds(x.WeightBytesRead(Bq) / x.W);
  est.kv_time =
      units::Seconds(decode.decode_context * x.kv_bytes_per_token / x.W);
  est.compute_time = units::Seconds(2 * x.pc.matmul_active * Bq / x.n / x.C);
  est.comm_time = units::Seconds(x.Comm(Bq));
  est.overhead = step.overhead;
  // Prefill: the batch's prompts, compute-bound; through a pipeline pp
  // microbatches fill it, (2 pp - 1) / pp of one microbatch's pass.
  StepWork prefill{0, 0, B * cfg.prompt, B * cfg.prompt * cfg.prompt / 2};
  StepParts pre = sc->Cost(prefill);
  const double fill = (2.0 * cfg.pp - 1) / cfg.pp;
  est.prefill_parts = {pre.matmul * fill,      pre.attention * fill,
                       pre.elementwise * fill, pre.communication * fill,
                       pre.overhead * fill,    pre.draft * fill};
  est.prefill_time = est.prefill_parts.total();
  double attn_time = x.q * decode.decode_context * x.decode_flops_per_key /
                     x.chip().Peak(hw::Dtype::kBf16).si();
  Summarize(x, attn_time, &est);
  return est;
}

double SpecExpectedTokens(const SpecDecode& spec) {
  if (!spec.on() || spec.accept.empty()) return 1;
  double expected = 1, run = 1;
  for (int i = 0; i < spec.k; ++i) {
    run *= spec.accept.size() == 1 ? spec.accept[0] : spec.accept[i];
    expected += run;
  }
  return expected;
}

// The hottest EP rank's routed tokens over the mean, measured by
// TensorRT-LLM on DeepSeek-R1 (examples/wide_ep/ep_load_balancer/README.md):
// imbalance ratio (max - mean) / mean 1.564 at EP 32 without redundant
// experts, 0.115 at EP 36 with 32 redundant (288 slots, EPLB placement).
// Between none and 32 per 256 experts (12.5%) the ratio is interpolated
// linearly in the redundant fraction, and held beyond it.
double ExpertImbalance(int ep, int num_experts, int redundant_experts) {
  if (ep < 2 || num_experts < 1) return 1;
  constexpr double kNone = 1.564, kBalanced = 0.115, kMeasuredFraction = 0.125;
  const double f =
      std::min(1.0, redundant_experts / (kMeasuredFraction * num_experts));
  return 1 + kNone + f * (kBalanced - kNone);
}

namespace {

// SGLang 0.5's eager prefill: the host's time per op that running a
// prompt's step eagerly adds to its GPU time (docs/model.md 7.2). The mean
// of two published eager-minus-graph differences of the same step on the
// same server, each over the ops the graph captures (EagerLayerOps):
//   sgl-project/sglang PR #12160 (2025-10): DeepSeek-V3 fp8, TP 8, the
//     scheduler's forward of one new token, 82.64 ms eager, 23.10 ms as a
//     CUDA graph: (82.64 - 23.10) / 2044 = 29.1 us;
//   sgl-project/sglang PR #13094 (2025-11): Llama-3.1-8B-Instruct-FP8,
//     TP 8, mean TTFT of a 1,024-token prompt at concurrency 1, 29.97 ms
//     eager, 19.66 ms with piecewise CUDA graphs, which leave each layer's
//     attention call (KV store and extend kernel, 2 ops) eager:
//     (29.97 - 19.66) / (512 - 64) = 23.0 us.
// The eager steps' host time adds to their GPU time rather than hiding
// under it: the same PR's difference at concurrency 4, where the GPU does
// four prompts a step, is 11.09 ms against 10.31 ms at 1 (59.62 vs
// 48.53 ms); a floor (max of the two) would shrink it.
constexpr int kLlama8bPiecewiseEagerOps = 32 * 2;
constexpr double kSglangEagerOpTime =
    ((82.64e-3 - 23.10e-3) / kDeepSeekV3EagerOps +
     (29.97e-3 - 19.66e-3) /
         (kLlama8bFp8EagerOps - kLlama8bPiecewiseEagerOps)) /
    2;

// One engine version range whose scheduler leaves the GPU idle while the
// host prepares the next step; versions [lo, hi) as major * 1000 + minor.
struct HostTimeRow {
  std::string_view engine;
  int lo, hi;
  double step_s, fraction;
  double eager_prefill_op_s;
  std::string_view source;
};

constexpr HostTimeRow kHostTime[] = {
    {"sglang", 0, 4, 0, 0.10, 0,
     "LMSYS blog 2024-12-04 'SGLang v0.4': the zero-overhead batch scheduler "
     "(host work overlapped with the GPU) raised throughput 1.1x over v0.3, "
     "so v0.3's unoverlapped host time was 10% of the GPU time"},
    {"vllm", 0, 6, 0, 0.29 / 0.38, 0,
     "vLLM blog 2024-09-05 'vLLM v0.6.0' (Llama 3 8B, 1 H100, v0.5.3): "
     "scheduling and input preparation 29% of the time, GPU execution 38%"},
    {"vllm", 6, 7, 0.4e-3, 0, 0,
     "vllm-project/vllm issue #6854 (multi-step scheduling RFC): 4 ms of GPU "
     "idle per scheduler call (Llama 3 8B, H100), paid once per "
     "--num-scheduler-steps 10, the setting of vLLM's v0.6.0 benchmarks"},
    // SGLang 0.5.x runs prefill ("extend") eagerly: its piecewise CUDA
    // graph for prefill is opt-in (server_args.py,
    // enable_piecewise_cuda_graph = False); decode replays CUDA graphs.
    // The eager step's ops add their host time (kSglangEagerOpTime) to
    // its GPU time.
    {"sglang", 5, 6, 0, 0, kSglangEagerOpTime,
     "sgl-project/sglang PRs #12160 and #13094: eager minus CUDA-graph time "
     "of the same step, TP 8, 82.64 - 23.10 ms (DeepSeek-V3 fp8 forward of "
     "one token, 2044 ops) and 29.97 - 19.66 ms (Llama-3.1-8B FP8 TTFT of a "
     "1,024-token prompt, the 448 ops its piecewise graph captures): "
     "26.1 us per op, added to each eager prefill step's GPU time; prefill "
     "CUDA graphs are opt-in in SGLang 0.5 (--enable-piecewise-cuda-graph)"},
    // TensorRT-LLM's PyTorch backend (its default from 1.0) replays CUDA
    // graphs for generation-only batches; a step with context tokens runs
    // eagerly unless torch_compile_config.enable_piecewise_cuda_graph is
    // set (off by default). Its per-op host time is not published: SGLang's
    // (the same kind of Python-launched PyTorch forward) stands for it, over
    // the same op counts.
    {"trtllm", 1000, 2000, 0, 0, kSglangEagerOpTime,
     "TensorRT-LLM llmapi llm_args.py: cuda_graph_config's CUDA graphs "
     "serve batches of generation requests only, so context and mixed steps "
     "run eagerly (torch_compile_config.enable_piecewise_cuda_graph, off by "
     "default, captures them); no per-op time of TensorRT-LLM's is "
     "published: SGLang 0.5's 26.1 us per eager op (PRs #12160, #13094) "
     "stands for it"},
};

// The chip's vendor from its catalog name, and whether an NVIDIA GPU has
// fp4 tensor cores (read as Blackwell, SM100).
bool IsNvidia(const hw::Chip& chip) {
  return chip.name.rfind("NVIDIA", 0) == 0;
}
bool IsAmd(const hw::Chip& chip) { return chip.name.rfind("AMD", 0) == 0; }
bool IsBlackwell(const hw::Chip& chip) {
  return IsNvidia(chip) && chip.Peak(hw::Dtype::kFp4).si() > 0;
}

}  // namespace

bool PiecewiseGraphsApply(const hw::Chip& chip, const ServeConfig& cfg) {
  // SGLang's _handle_piecewise_cuda_graph (server_args.py, 0.5.10 on)
  // disables them on hardware other than CUDA, with DP attention and with
  // pipeline parallelism; Blackwell: sgl-project/sglang #11490's open item
  // "Fix B200 can not use piecewise-cuda-graph" (NVIDIA GPUs with fp4
  // tensor cores read as Blackwell).
  return IsNvidia(chip) && !IsBlackwell(chip) && !cfg.dp_attention &&
         cfg.pp <= 1;
}

EngineRelease ParseEngineRelease(std::string_view engine) {
  EngineRelease r;
  const size_t at = engine.find_first_of(" @");
  if (at == std::string_view::npos) return r;
  std::string_view v = engine.substr(at + 1);
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) v.remove_prefix(1);
  r.parts = 0;
  long* numbers[] = {&r.major, &r.minor, &r.patch};
  size_t i = 0;
  for (long* n : numbers) {
    size_t digits = 0;
    long x = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
      if (++digits > 5) return EngineRelease{0};
      x = x * 10 + (v[i++] - '0');
    }
    if (digits == 0) break;
    *n = x;
    ++r.parts;
    if (i >= v.size() || v[i] != '.') break;
    ++i;
  }
  if (r.parts == 0) r = EngineRelease{0};
  return r;
}

double EngineRequestPath(std::string_view engine) {
  return EngineFamily(engine).empty() ? 0.0 : kRequestPathS;
}

EngineHostOverhead EngineHostTime(std::string_view engine) {
  const std::string text = ToLower(engine);
  const std::string_view name =
      std::string_view(text).substr(0, text.find_first_of(" @"));
  // An unknown release: no host time.
  const EngineRelease release = ParseEngineRelease(text);
  EngineHostOverhead out;
  if (release.parts < 1) return out;
  const long at = release.major * 1000 + std::min(release.minor, 999L);
  const std::string family = EngineFamily(name);
  for (const HostTimeRow& r : kHostTime) {
    if (family == r.engine && at >= r.lo && at < r.hi) {
      out.step_s = r.step_s;
      out.fraction = r.fraction;
      out.eager_prefill_op_s = r.eager_prefill_op_s;
      out.source = std::string(r.source);
    }
  }
  // SGLang 0.5.10 turned piecewise CUDA graphs for prefill on by default
  // (its --enable-piecewise-cuda-graph became --disable-piecewise-cuda-graph:
  // ai-dynamo/aiconfigurator's SGLang collector, "enable_piecewise_cuda_graph
  // = False  # sglang <=0.5.9", "disable_piecewise_cuda_graph = True  #
  // sglang >=0.5.10"), off again where its server_args rules disable them.
  if (family == "sglang" && release.AtLeast(0, 5, 10) &&
      !release.AtLeast(0, 6)) {
    out.prefill_graph_default = true;
    out.source +=
        "; from 0.5.10 prefill runs as piecewise CUDA graphs by default "
        "(NVIDIA GPUs before Blackwell, no DP attention, no pipeline "
        "stages): no eager host time there";
  }
  return out;
}

// Sums the per-layer table (EagerLayerOps) over the model's layers.
double EagerPrefillOps(const model::ModelSpec& m, bool quantized_activations,
                       bool tensor_parallel, bool unfused_router) {
  const bool mla = m.mla.has_value();
  const bool shared = m.moe.num_shared_experts > 0;
  double ops = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    const bool moe = m.IsMoeLayer(l);
    ops += EagerLayerOps(mla, m.qk_norm, moe, shared, quantized_activations,
                         tensor_parallel) +
           (moe && unfused_router ? Ops(kUnfusedRouter, false) : 0);
  }
  return ops;
}

Result<EngineHostOverhead> ParseServingEngine(std::string_view text) {
  const std::string t = ToLower(std::string(text));
  const size_t at = t.find('@');
  const std::string name = t.substr(0, at);
  static const char* kNames[] = {"vllm", "sglang", "trtllm", "tensorrt-llm"};
  bool known = false;
  for (const char* n : kNames) known = known || name == n;
  if (!known) {
    return InvalidArgument(
        "expected vllm, sglang or trtllm, optionally "
        "@VERSION (sglang@0.5.6), got '" +
            std::string(text) + "'" +
            DidYouMean(name, {"vllm", "sglang", "trtllm"}),
        "engine");
  }
  if (at == std::string::npos) return EngineHostOverhead{};
  std::string v = t.substr(at + 1);
  if (!v.empty() && v[0] == 'v') v.erase(0, 1);
  const bool ok =
      !v.empty() && std::isdigit(static_cast<unsigned char>(v[0])) &&
      v.size() <= 24 &&
      std::all_of(v.begin(), v.end(),
                  [](unsigned char ch) {
                    return std::isalnum(ch) || ch == '.' || ch == '-' ||
                           ch == '+';
                  }) &&
      std::min(v.find_first_not_of("0123456789"), v.size()) <= 5;  // major
  if (!ok) {
    return InvalidArgument("expected a release such as " + name +
                               "@0.5.6 after '@', got '" + std::string(text) +
                               "'",
                           "engine");
  }
  return EngineHostTime(name + "@" + v);
}

std::string EngineFamily(std::string_view engine) {
  const std::string t = ToLower(std::string(engine));
  if (t.find("sglang") != std::string::npos) return "sglang";
  if (t.find("tensorrt") != std::string::npos ||
      t.find("trtllm") != std::string::npos ||
      t.find("trt-llm") != std::string::npos) {
    return "trtllm";
  }
  if (t.find("vllm") != std::string::npos) return "vllm";
  return "";
}

void ApplyEngineHostTime(std::string_view engine,
                         const EngineHostOverhead& host, ServeConfig* cfg) {
  cfg->engine = EngineFamily(engine);
  cfg->host_step_s = host.step_s;
  cfg->host_fraction = host.fraction;
  cfg->eager_prefill_op_s = host.eager_prefill_op_s;
  cfg->prefill_graph_default = host.prefill_graph_default;
  cfg->engine_release = std::string(engine);
  const bool any =
      host.step_s > 0 || host.fraction > 0 || host.eager_prefill_op_s > 0;
  cfg->host_time_source =
      any ? std::string(engine) + ": " + host.source : std::string();
}

namespace {

// Whether `engine` names SGLang at release 0.`minor`.`patch` or later (any
// 1.x; no release: the current one, so yes).
bool SglangAtLeast(std::string_view engine, int minor, int patch) {
  if (EngineFamily(engine) != "sglang") return false;
  const EngineRelease r = ParseEngineRelease(engine);
  return r.parts == -1 || r.AtLeast(0, minor, patch);
}

}  // namespace

bool EngineDefaultsToFlashinferMoe(std::string_view engine) {
  // sgl-project/sglang PR #11816 (merged 2025-10-19, first released in
  // 0.5.4): DeepSeek fp8 on SM100 takes flashinfer_trtllm as its default
  // MoE runner (modelopt fp4 already did).
  return SglangAtLeast(engine, 5, 4);
}

namespace {

// One of an engine flag's names (`names`, lower case), case-insensitively;
// else one sentence: what was `expected`, what was found, the nearest name.
Result<std::string> ParseEngineChoice(std::string_view text,
                                      const std::vector<std::string>& names,
                                      const std::string& expected,
                                      const std::string& where) {
  const std::string t = ToLower(std::string(text));
  if (std::find(names.begin(), names.end(), t) == names.end()) {
    return InvalidArgument("expected " + expected + ", got '" +
                               std::string(text) + "'" + DidYouMean(t, names),
                           where);
  }
  return t;
}

}  // namespace

Result<std::string> ParseMoeRunner(std::string_view text,
                                   const std::string& where) {
  static const std::vector<std::string> kRunners = {"auto",
                                                    "triton",
                                                    "triton_kernel",
                                                    "deep_gemm",
                                                    "cutlass",
                                                    "marlin",
                                                    "flashinfer_trtllm",
                                                    "flashinfer_trtllm_routed",
                                                    "flashinfer_cutlass",
                                                    "flashinfer_cutedsl",
                                                    "flashinfer_mxfp4"};
  return ParseEngineChoice(text, kRunners,
                           "an SGLang MoE runner (auto, triton, "
                           "flashinfer_trtllm, flashinfer_cutlass, cutlass, "
                           "deep_gemm, ...)",
                           where);
}

Result<std::string> ParseAttentionBackend(std::string_view text,
                                          const std::string& where) {
  static const std::vector<std::string> kBackends = {"fa3",
                                                     "fa4",
                                                     "flashinfer",
                                                     "triton",
                                                     "trtllm_mla",
                                                     "trtllm_mha",
                                                     "flashmla",
                                                     "cutlass_mla",
                                                     "aiter",
                                                     "torch_native",
                                                     "flex_attention",
                                                     "nsa",
                                                     "wave",
                                                     "dual_chunk_flash_attn",
                                                     "ascend",
                                                     "intel_amx",
                                                     "intel_xpu"};
  return ParseEngineChoice(text, kBackends,
                           "an SGLang attention backend (fa3, flashinfer, "
                           "triton, trtllm_mla, flashmla, cutlass_mla, aiter, "
                           "...)",
                           where);
}

bool EngineFusesSharedExperts(std::string_view engine, bool amd) {
  // On by default from determine_num_fused_shared_experts (sgl-project/
  // sglang PR #7180, 2025-06-14: 0.4.8 read as the first release); on ROCm
  // from PR #12201 (merged 2025-11-06: 0.5.6 read as the first release).
  return amd ? SglangAtLeast(engine, 5, 6) : SglangAtLeast(engine, 4, 8);
}

bool SharedExpertsFused(const hw::Chip& chip, const model::ModelSpec& m,
                        const ServeConfig& cfg, std::string_view runner) {
  if (!cfg.shared_experts_fusion || cfg.engine != "sglang") return false;
  // SGLang's determine_num_fused_shared_experts: DeepSeek-V3/R1 (MLA, 256
  // routed experts, one shared), no expert parallelism on NVIDIA, not
  // W4AFP8; server_args turn it off with the flashinfer_trtllm runner.
  const bool amd = IsAmd(chip);
  return (amd || IsNvidia(chip)) && m.mla.has_value() && m.is_moe() &&
         m.moe.num_experts == 256 && m.moe.num_shared_experts == 1 &&
         cfg.ep == 1 && cfg.ExpertWeights() != hw::Dtype::kInt4 &&
         (runner.empty() || runner == "triton") &&
         EngineFusesSharedExperts(cfg.engine_release, amd);
}

bool UnfusedRouter(const hw::Chip& chip, const model::ModelSpec& m,
                   const ServeConfig& cfg, std::string_view runner) {
  // SGLang's select_experts → biased_grouped_topk_gpu for a grouped router
  // with a correction bias (DeepSeek-V3, GLM-4.5/4.6, Kimi K2), unless the
  // flashinfer_trtllm runner routes inside its own kernel. On CUDA the
  // fused moe_fused_gate takes experts / n_group <= 32 with a power-of-two
  // expert count; Kimi K2's 384 experts in one group have their own fused
  // kernel (kimi_k2_moe_fused_gate, PR #13287, merged 2025-11-15: 0.5.6
  // read as its first release); ROCm runs aiter's fused kernel.
  if (cfg.engine != "sglang" || !IsNvidia(chip) || !m.is_moe() ||
      !m.moe.router_bias || m.moe.expert_groups < 1 ||
      runner == "flashinfer_trtllm") {
    return false;
  }
  const int e = m.moe.num_experts;
  const bool power_of_two = e > 0 && (e & (e - 1)) == 0;
  if (power_of_two && e / m.moe.expert_groups <= 32) return false;
  if (e == 384 && m.moe.expert_groups == 1 &&
      SglangAtLeast(cfg.engine_release, 5, 6)) {
    return false;
  }
  return true;
}

std::string MoeRunner(const hw::Chip& chip, const model::ModelSpec& m,
                      const ServeConfig& cfg) {
  if (!cfg.moe_runner.empty() && cfg.moe_runner != "auto") {
    return cfg.moe_runner;
  }
  // SGLang's server_args (_handle_model_specific_adjustments,
  // DeepseekV3ForCausalLM on SM100, moe_a2a_backend none, runner auto, fp8
  // or modelopt fp4): flashinfer_trtllm. NVIDIA GPUs with fp4 tensor cores
  // read as SM100; MLA with routed experts as DeepSeek-V3's architecture.
  const hw::Dtype w = cfg.ExpertWeights();
  if (cfg.engine == "sglang" &&
      EngineDefaultsToFlashinferMoe(cfg.engine_release) && IsBlackwell(chip) &&
      m.mla.has_value() && m.is_moe() &&
      (w == hw::Dtype::kFp8 || w == hw::Dtype::kFp4)) {
    return "flashinfer_trtllm";
  }
  return {};
}

void ApplyPrefillGraph(int setting, ServeConfig* cfg) {
  if (setting == 1) cfg->eager_prefill_op_s = 0;
  if (setting == 0) cfg->prefill_graph_default = false;
}

// Fits of T = floor + (touched experts' weight bytes) / (fraction x HBM
// peak) to the fused-MoE kernel's measured times by batch (least squares;
// the touched experts E (1 - (1 - k/E)^B), k = 8 of E = 128 in both):
// bf16: B200 (8 TB/s), vllm-project/vllm PR #31448 (benchmarks/kernels/
//   benchmark_moe.py, E=128 N=768 hidden 2048, TP 1, the default Triton
//   config): 39.61 / 51.87 / 73.18 us at batch 1 / 2 / 4; fit 27.1 us and
//   5.95 TB/s = 0.74 of the peak, within 0.5% of each point.
// fp8 (w8a8): H200 (4.8 TB/s), sgl-project/sglang PR #11730 (benchmark/
//   kernels/fused_moe_triton/tuning_fused_moe_triton.py, Qwen3-235B-A22B
//   TP 8, the default config): 31.70 / 36.56 / 49.67 / 66.87 / 92.36 /
//   117.38 / 124.99 us at batch 1 / 2 / 4 / 8 / 16 / 24 / 32; fit 22.6 us
//   and 2.61 TB/s = 0.54 of the peak, within 6% of each point.
// Each fit is used for its dtype on every GPU whose catalog file has no
// fit of its own (MeasuredFusedMoe(chip, engine, ...): [[moe_engine]], then
// moe_floor / moe_stream, fitted to aiconfigurator's MoE tables).
// From a tile's rows per expert up, the bf16 kernel's FLOP rate: the
// fraction of the dense bf16 peak it reached at the largest batch each
// source published (FLOPs 6 x batch x top_k x N x K over the kernel time,
// the two expert GEMMs; tuned configs):
//   H200, vllm-project/vllm PR #44818 (E=128, N=704, K=2816, top 8):
//     1189.6 us at batch 4096, 0.331 of 989 TFLOP/s;
//   H100, vllm-project/vllm PR #24700 (Mixtral 8x7B at TP 2: E=8,
//     N=7168, K=4096, top 2): 1122.93 us at batch 1536, 0.487;
//   A100, vllm-project/vllm PR #40542 (E=64, N=1408, K=2048, top 6):
//     2636.6 us at batch 4096, 0.517 of 312 TFLOP/s.
// The median, 0.487, is used on every GPU. No fp8 or fp4 figure is used:
// the published fp8 ones are Triton's w8a8 kernel (0.095-0.26 of the fp8
// peak), not the CUTLASS or TensorRT-LLM kernels most fp8 MoE runs use.
constexpr double kFusedMoeBf16ComputeFraction = 0.487;
FusedMoeKernel MeasuredFusedMoe(hw::Dtype weights, hw::Dtype compute) {
  FusedMoeKernel k;
  if (weights == hw::Dtype::kBf16 && compute == hw::Dtype::kBf16) {
    k.floor_s = 27.1e-6;
    k.stream_fraction = 0.74;
    k.source =
        "vllm-project/vllm PR #31448: fused_moe bf16 on B200, E=128 N=768, "
        "39.61/51.87/73.18 us at batch 1/2/4";
    k.compute_fraction = kFusedMoeBf16ComputeFraction;
    k.compute_source =
        "fused_moe bf16 at the largest published batches, the median of "
        "three GPUs' fractions of the dense peak: 0.331 (H200, vllm PR "
        "#44818), 0.487 (H100, vllm PR #24700), 0.517 (A100, vllm PR "
        "#40542)";
  } else if (weights == hw::Dtype::kFp8 && compute == hw::Dtype::kFp8) {
    k.floor_s = 22.6e-6;
    k.stream_fraction = 0.54;
    k.source =
        "sgl-project/sglang PR #11730: fused_moe fp8_w8a8 on H200, "
        "Qwen3-235B-A22B TP 8, 31.70-124.99 us at batch 1-32";
  }
  return k;
}

namespace {

// MeasuredFusedMoe's decode terms: the engine's own fit on the chip, else
// the chip's fit over every engine, else the published single-kernel fit.
FusedMoeKernel DecodeFusedMoe(const hw::Chip& chip, std::string_view engine,
                              hw::Dtype weights, hw::Dtype compute,
                              std::string_view runner) {
  FusedMoeKernel k = MeasuredFusedMoe(weights, compute);
  // A named runner's own fit (SGLang's flashinfer_trtllm on B200): experts
  // in bf16, fp8, or fp4 run at the fp4 rate (W4A4, "nvfp4").
  if (!runner.empty()) {
    const char* dt = weights == hw::Dtype::kBf16 && compute == weights  ? "bf16"
                     : weights == hw::Dtype::kFp8 && compute == weights ? "fp8"
                     : weights == hw::Dtype::kFp4 && compute == weights
                         ? "nvfp4"
                         : "";
    for (const hw::MoeEngineFit& f : chip.moe_engine) {
      if (f.engine != engine || f.kernel != runner || f.dtype != dt) continue;
      k.floor_s = f.floor.si();
      k.stream_fraction = f.stream;
      k.source = chip.id + "'s " + f.engine + " " + f.kernel + " " + f.dtype +
                 " fit, catalog [[moe_engine]]";
      return k;
    }
  }
  // 4-bit experts dequantized in the kernel (compute bf16: W4A16, int4 or
  // MXFP4 on a chip without fp4 tensor cores): the engines' own fits alone,
  // the running engine's, else vLLM's (an unnamed engine is vLLM), else
  // another engine's; none: the generic GEMM costs.
  if (k.floor_s <= 0 && compute == hw::Dtype::kBf16 &&
      (weights == hw::Dtype::kFp4 || weights == hw::Dtype::kInt4)) {
    const std::string dt = weights == hw::Dtype::kFp4 ? "fp4" : "int4";
    const hw::MoeEngineFit* pick = nullptr;
    for (const hw::MoeEngineFit& f : chip.moe_engine) {
      if (f.dtype != dt || !f.kernel.empty()) continue;
      if (f.engine == engine) {
        pick = &f;
        break;
      }
      if (!pick || f.engine == "vllm") pick = &f;
    }
    if (!pick) return k;
    k.floor_s = pick->floor.si();
    k.stream_fraction = pick->stream;
    k.source = chip.id + "'s " + pick->engine + " " + dt +
               " (W4A16) fit, catalog [[moe_engine]]";
    return k;
  }
  if (k.floor_s <= 0) return k;
  const bool bf16 = weights == hw::Dtype::kBf16;
  for (const hw::MoeEngineFit& f : chip.moe_engine) {
    if (f.engine != engine || !f.kernel.empty() ||
        f.dtype != (bf16 ? "bf16" : "fp8")) {
      continue;
    }
    k.floor_s = f.floor.si();
    k.stream_fraction = f.stream;
    k.source = chip.id + "'s " + f.engine + " " + f.dtype +
               " fit, catalog [[moe_engine]]";
    return k;
  }
  const hw::ChipEfficiencyData& d = chip.efficiency;
  const auto& floor = bf16 ? d.moe_floor : d.moe_floor_fp8;
  const auto& stream = bf16 ? d.moe_stream : d.moe_stream_fp8;
  if (!floor || !stream) return k;
  k.floor_s = floor->si();
  k.stream_fraction = *stream;
  k.source = chip.id + "'s fit over every engine, catalog " +
             (bf16 ? "moe_floor" : "moe_floor_fp8");
  return k;
}

}  // namespace

FusedMoeKernel MeasuredFusedMoe(const hw::Chip& chip, std::string_view engine,
                                hw::Dtype weights, hw::Dtype compute,
                                std::string_view runner) {
  FusedMoeKernel k = DecodeFusedMoe(chip, engine, weights, compute, runner);
  // Prefill sizes: the chip's fit over every engine's tables (catalog
  // moe_prefill / moe_prefill_act, or the _fp8 pair), in place of the
  // published bf16 compute fraction.
  const bool bf16 = weights == hw::Dtype::kBf16 && compute == hw::Dtype::kBf16;
  const bool fp8 = weights == hw::Dtype::kFp8 && compute == hw::Dtype::kFp8;
  const hw::ChipEfficiencyData& d = chip.efficiency;
  const auto& fraction = bf16 ? d.moe_prefill : d.moe_prefill_fp8;
  const auto& act = bf16 ? d.moe_prefill_act : d.moe_prefill_act_fp8;
  if ((bf16 || fp8) && fraction && act && k.stream_fraction > 0) {
    k.compute_fraction = *fraction;
    k.act_fraction = *act;
    k.compute_source = chip.id + "'s prefill fit over every engine, catalog " +
                       (bf16 ? "moe_prefill" : "moe_prefill_fp8");
  }
  return k;
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
