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
  units::BytesPerSecond bandwidth;    // per GPU, per direction
  int domain_size = 0;                // GPUs in one NVLink/NVSwitch domain
  units::Seconds hop_latency;         // per ring step
  bool in_network_reduction = false;  // NVLink SHARP (NVLS)
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

struct Price {
  double usd_per_chip_hour = 0;
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
  units::BytesPerSecond hbm_bandwidth;
  std::vector<OnChipMemory> on_chip;

  std::optional<IciLinks> ici;           // TPUs
  std::optional<NvLinks> nvlink;         // GPUs
  std::optional<ScaleOut> scale_out;     // GPU NIC or TPU DCN
  units::BytesPerSecond pcie_bandwidth;  // host link, per direction
  // The chip's share of its host's DRAM bandwidth (peak); 0 when unknown.
  // Bounds an optimizer step that runs on the host (offload).
  units::BytesPerSecond host_memory_bandwidth;

  double power_watts = 0;  // 0 when unknown
  std::optional<Price> price;

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
