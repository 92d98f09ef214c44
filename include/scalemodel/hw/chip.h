// One accelerator chip: peak rates, memory and links, all in SI units.
// Filled from data/chips/*.toml by the catalog; the math modules take it as a
// plain struct. Conventions (see docs/catalog-format.md):
//   - FLOP/s are dense (no structured sparsity), per chip.
//   - Link bandwidths are per direction ("one-way"). A TPU ICI link number is
//     per link; a bidirectional ring over one axis uses two links per chip and
//     so moves 2x that (the book's W_ici).
//   - NVLink bandwidth is the per-GPU egress per direction (H100: 450 GB/s).
//   - Scale-out bandwidth is per chip per direction: a GPU's NIC share, or a
//     TPU chip's share of its host's DCN NICs.
#ifndef SCALEMODEL_HW_CHIP_H_
#define SCALEMODEL_HW_CHIP_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scalemodel/hw/dtype.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::hw {

enum class ChipFamily { kTpu, kGpu };

// How a TPU slice axis gets its wraparound link.
enum class WraparoundRule {
  kNone,          // no wraparound on any axis
  kFullAxis,      // only an axis as long as the pod axis (v5e/v6e: 16)
  kCubeMultiple,  // axes that are a multiple of the cube edge (v4/v5p: 4)
};

struct IciLinks {
  int links_per_chip = 0;                // 4 on 2D tori, 6 on 3D tori
  units::BytesPerSecond link_bandwidth;  // one-way, per link
  units::Seconds hop_latency;            // per hop
  int torus_dims = 0;                    // 2 or 3
  WraparoundRule wraparound = WraparoundRule::kNone;
  int wrap_unit = 0;           // 16 (full axis) or 4 (cube edge)
  std::vector<int> max_slice;  // largest ICI slice, e.g. {16, 20, 28}
  int chips_per_host = 0;
  int cores_per_chip = 1;
};

struct NvLinks {
  std::string name = "NVLink";        // "Infinity Fabric", "PCIe", "NeuronLink"
  units::BytesPerSecond bandwidth;    // per GPU, per direction
  int domain_size = 0;                // GPUs in one NVLink/NVSwitch domain
  units::Seconds hop_latency;         // per ring step
  bool in_network_reduction = false;  // NVLink SHARP (NVLS)
};

// One measured all-reduce inside one NVLink domain: `gpus` GPUs reducing
// `bytes` at the bus bandwidth the benchmark printed (nccl-tests busbw =
// bytes x 2(n-1)/n / time).
struct AllReducePoint {
  units::Bytes bytes;
  units::BytesPerSecond busbw;
  int gpus = 8;
};

// A serving engine's tensor-parallel all-reduce inside a CUDA graph, as
// the engine runs it in decode (its custom one-/two-shot kernels, symmetric
// memory or NCCL, chosen by size): the device time per all-reduce of a
// bf16 message over `gpus` GPUs of one NVLink domain, measured back to
// back in one graph ([[allreduce_in_graph]]; docs/catalog-format.md).
// `time_s` is non-decreasing in `bytes` (the catalog reader takes each
// point as the least time of it and every larger message).
struct AllReduceInGraph {
  std::string engine;   // "vllm", "sglang" or "trtllm"
  std::string version;  // the release measured
  int gpus = 8;
  std::vector<double> bytes;   // ascending
  std::vector<double> time_s;  // per all-reduce, s
};

// A serving engine's own MoE op at decode batches ([[moe_engine]];
// docs/catalog-format.md): T = floor + touched experts' weight bytes /
// (stream x HBM peak), fitted to that engine's measured tables for experts
// of `dtype` ("bf16" or "fp8").
struct MoeEngineFit {
  std::string engine;  // "vllm" or "sglang"
  // The engine's MoE runner the fit is of ("flashinfer_trtllm"); empty: the
  // engine's default kernel (docs/catalog-format.md).
  std::string kernel;
  // "bf16", "fp8", "fp4" and "int4" (4-bit weights dequantized to bf16,
  // W4A16) or "nvfp4" (fp4 weights and activations, W4A4)
  std::string dtype;
  units::Seconds floor;
  double stream = 0;
  // Its key in Chip::sources: "moe_engine.ENGINE[.KERNEL].DTYPE".
  std::string SourceKey() const {
    return "moe_engine." + engine + "." + (kernel.empty() ? "" : kernel + ".") +
           dtype;
  }
};

struct ScaleOut {
  units::BytesPerSecond bandwidth;    // per chip, per direction
  units::Seconds latency;             // per step
  bool in_network_reduction = false;  // InfiniBand SHARP
  std::string fabric;                 // "InfiniBand NDR", "DCN"
};

struct OnChipMemory {
  std::string name;  // "VMEM", "SMEM+L1", "L2"
  units::Bytes capacity;
  units::BytesPerSecond bandwidth;  // 0 when unknown
};

// Realistic-mode efficiency constants: a chip file's [efficiency] table
// (docs/catalog-format.md; docs/model.md 5.6). Fractions are of the datasheet
// peak as measured (short benchmarks, near the boost clock); the estimator
// applies the sustained-clock scaling itself. An unset field was not given by
// the chip's file: the catalog fills it from another chip's table and says
// which (`borrowed_from`, `borrowed`).
struct ChipEfficiencyData {
  std::optional<double> gemm_max;      // best-shape bf16 matmul, of peak
  std::optional<double> gemm_max_fp8;  // the same for fp8
  // The same for fp4 (NVFP4 / MXFP4, of the fp4 peak). Optional and never
  // borrowed (outside ForEachEfficiencyField): a chip whose file leaves it
  // out runs fp4 GEMMs at its gemm_max_fp8 fraction.
  std::optional<double> gemm_max_fp4;
  std::optional<int> tile_m;  // output tile rows (GPU CTA / TPU MXU)
  std::optional<int> tile_n;  // output tile columns
  // Tiles that run at once (SMs on a GPU) for wave quantization; 0 = none
  // (a TPU's few large MXUs).
  std::optional<int> wave_units;
  std::optional<units::Seconds> op_overhead;  // fixed cost per GEMM / kernel
  std::optional<double> attention;  // fused attention kernel, of bf16 peak
  // FlashAttention-2 (the pre-FA3 kernel generation on Hopper); equal to
  // `attention` where FA2 is the chip's best or unmeasured.
  std::optional<double> attention_fa2;
  // Whether attention efficiency follows the measured sequence-length ramp
  // (GPU FlashAttention kernels).
  std::optional<bool> attention_ramp;
  std::optional<double> hbm;  // streaming kernels, of HBM bandwidth
  // Row gathers and their transposes (the MoE token permutation around a
  // grouped matmul), of the `hbm` streaming rate. Optional and never
  // borrowed (outside ForEachEfficiencyField): a chip whose file leaves it
  // out gathers at its streaming rate.
  std::optional<double> gather;
  // A skinny GEMM's weight streaming (1-16 rows, weights read once), of the
  // HBM peak: an engine's GEMM kernel streams below a copy kernel (the
  // `hbm` rate). Optional and never borrowed (outside
  // ForEachEfficiencyField): a chip whose file leaves it out streams its
  // GEMMs at `hbm`.
  std::optional<double> gemm_stream;
  std::optional<units::Seconds> collective_launch;  // per collective call
  // The start-up of one small kernel in a stream of back-to-back launches
  // (a decode step's norms, rotary embedding, routing: docs/model.md 7.2).
  // Optional and never borrowed (outside ForEachEfficiencyField): a GPU
  // whose file leaves it out takes the measured Hopper value, 2.433 us.
  std::optional<units::Seconds> kernel_launch;
  // The decode attention kernel's time per decoding sequence and KV head in
  // one layer, beyond its floor and its KV bytes (a work unit per sequence
  // and head: docs/model.md 7.2). Optional and never borrowed (outside
  // ForEachEfficiencyField): a chip whose file leaves it out has none.
  std::optional<units::Seconds> attention_decode_head;
  // SGLang's MLA decode attention (its FlashAttention-3 backend, the default
  // on Hopper) over an fp8 KV cache: time per cached token of the decoding
  // sequences per layer, whatever the bytes (docs/model.md 7.2). Optional
  // and never borrowed: a chip whose file leaves it out has none.
  std::optional<units::Seconds> mla_fp8_kv_token;
  // A block-scaled fp8 GEMM run on a generic, untuned kernel configuration
  // (a 128 x 128 output tile per workgroup, no split-K: AMD gfx942 in SGLang
  // before 0.5.10): time for one workgroup to walk one 128-wide step of K
  // (docs/model.md 7.2). Optional and never borrowed: a chip whose file
  // leaves it out has none.
  std::optional<units::Seconds> block_fp8_k_step;
  // The engines' fused-MoE op at decode batches: its fixed time and its
  // streaming of the touched experts' weights, of the HBM peak, for bf16
  // experts and (`_fp8`) fp8 ones (docs/model.md 7.2). Optional, each pair
  // given together, never borrowed (outside ForEachEfficiencyField): a chip
  // whose file leaves a pair out takes the published single-kernel fits
  // (MeasuredFusedMoe).
  std::optional<units::Seconds> moe_floor;
  std::optional<double> moe_stream;
  std::optional<units::Seconds> moe_floor_fp8;
  std::optional<double> moe_stream_fp8;
  // The engines' fused-MoE op at prefill sizes: the experts' GEMM FLOPs at
  // `moe_prefill` of the dense peak, and per token-expert pair 8 bytes per
  // hidden element at `moe_prefill_act` of the HBM peak (the activations
  // moved around the GEMMs), for bf16 experts and (`_fp8`) fp8 ones
  // (docs/model.md 7.2). Optional pairs, never borrowed.
  std::optional<double> moe_prefill;
  std::optional<double> moe_prefill_act;
  std::optional<double> moe_prefill_fp8;
  std::optional<double> moe_prefill_act_fp8;

  // The chip named by the file's `defaults_from`; empty = its family's
  // reference chip (h100 for GPUs, tpu-v5p for TPUs).
  std::string defaults_from;
  // The chip whose values filled the fields the file left unset, and those
  // fields' keys; empty when the file set every one.
  std::string borrowed_from;
  std::vector<std::string> borrowed;
  // Source and date of each value by key ("gemm_max" -> "MAMF table (2025)").
  std::map<std::string, std::string> sources;
};

// Calls f(key, field) for each constant of `d` (a ChipEfficiencyData, const
// or not) in catalog order; `key` is the [efficiency] key.
template <typename Data, typename F>
void ForEachEfficiencyField(Data& d, F&& f) {
  f("gemm_max", d.gemm_max);
  f("gemm_max_fp8", d.gemm_max_fp8);
  f("tile_m", d.tile_m);
  f("tile_n", d.tile_n);
  f("wave_units", d.wave_units);
  f("op_overhead", d.op_overhead);
  f("attention", d.attention);
  f("attention_fa2", d.attention_fa2);
  f("attention_ramp", d.attention_ramp);
  f("hbm", d.hbm);
  f("collective_launch", d.collective_launch);
}

// Calls f(key, field) on the optional [efficiency] fields, which a chip
// file may leave out and which are never borrowed.
template <typename Data, typename F>
void ForEachOptionalEfficiencyField(Data& d, F&& f) {
  f("gemm_max_fp4", d.gemm_max_fp4);
  f("gemm_stream", d.gemm_stream);
  f("gather", d.gather);
  f("kernel_launch", d.kernel_launch);
  f("attention_decode_head", d.attention_decode_head);
  f("mla_fp8_kv_token", d.mla_fp8_kv_token);
  f("block_fp8_k_step", d.block_fp8_k_step);
  f("moe_floor", d.moe_floor);
  f("moe_stream", d.moe_stream);
  f("moe_floor_fp8", d.moe_floor_fp8);
  f("moe_stream_fp8", d.moe_stream_fp8);
  f("moe_prefill", d.moe_prefill);
  f("moe_prefill_act", d.moe_prefill_act);
  f("moe_prefill_fp8", d.moe_prefill_fp8);
  f("moe_prefill_act_fp8", d.moe_prefill_act_fp8);
}

struct Price {
  double usd_per_chip_hour = 0;  // list on-demand, one named cloud per chip
  std::string cloud;             // "AWS", "Google Cloud", "Azure", "Lambda"
  std::string source;
  std::string date;
};

struct Chip {
  std::string id;    // "h100"
  std::string name;  // "NVIDIA H100 SXM5 80GB"
  ChipFamily family = ChipFamily::kGpu;
  std::vector<std::string> aliases;

  // Dense peak rate per dtype; zero where the chip has no such unit.
  std::array<units::FlopsPerSecond, kNumDtypes> peak{};
  units::FlopsPerSecond vector_fp32;  // non-matrix units; 0 when unknown
  // Clocks in Hz (0 when unknown). Peak rates are quoted at the boost clock;
  // under sustained full load GPUs run near the base clock.
  double base_clock_hz = 0;
  double boost_clock_hz = 0;

  units::Bytes hbm_capacity;
  // The memory the device reports to its runtime (nvidia-smi's
  // memory.total, the ROCm pool size), which the serving engines' memory
  // fractions (SGLang --mem-fraction-static, vLLM --gpu-memory-utilization)
  // multiply; zero where no such figure is catalogued. DeviceMemory() is it,
  // else hbm_capacity.
  units::Bytes hbm_device_total;
  units::Bytes DeviceMemory() const {
    return hbm_device_total.si() > 0 ? hbm_device_total : hbm_capacity;
  }
  units::BytesPerSecond hbm_bandwidth;
  std::vector<OnChipMemory> on_chip;
  // [[allreduce_measured]]: a measured all-reduce curve inside one NVLink
  // domain, smallest message first; empty where none is published.
  std::vector<AllReducePoint> allreduce_measured;
  // [[allreduce_in_graph]]: serving engines' all-reduces in a CUDA graph,
  // by engine and GPU count; empty where none is published.
  std::vector<AllReduceInGraph> allreduce_in_graph;
  // [[moe_engine]]: engines' own fused-MoE fits; empty where none is
  // measured (the [efficiency] pair, else the published fits).
  std::vector<MoeEngineFit> moe_engine;

  std::optional<IciLinks> ici;           // TPUs
  std::optional<NvLinks> nvlink;         // GPUs
  std::optional<ScaleOut> scale_out;     // GPU NIC or TPU DCN
  units::BytesPerSecond pcie_bandwidth;  // host link, per direction
  // The chip's share of its host's DRAM bandwidth (peak); 0 when unknown.
  // Bounds an optimizer step that runs on the host (offload).
  units::BytesPerSecond host_memory_bandwidth;

  double power_watts = 0;  // 0 when unknown: the TDP, the most it may draw
  // The board power limit the chip runs at: the catalog's `power.limit`
  // (a part shipped below its TDP, e.g. Grand Teton's H100 at 500 W), or a
  // --power-cap. 0: the TDP. Realistic-mode matrix rates scale with it
  // (estimate::PowerCapFactor).
  double power_limit_watts = 0;
  std::optional<Price> price;

  // Realistic-mode constants; every field set for a catalog chip.
  ChipEfficiencyData efficiency;

  // Source and date of each number, keyed by its catalog path
  // ("compute.bf16" -> "NVIDIA H100 datasheet (2023-03)").
  std::map<std::string, std::string> sources;

  // Peak rate for `d`; zero when unsupported.
  units::FlopsPerSecond Peak(Dtype d) const {
    return peak[static_cast<int>(d)];
  }
  bool is_tpu() const { return family == ChipFamily::kTpu; }
};

}  // namespace scalemodel::hw

#endif  // SCALEMODEL_HW_CHIP_H_
