// A cluster: one chip type laid out over named physical axes.
//   TPU: "x", "y", "z" (ICI torus axes, with or without wraparound) and "dcn"
//        (slices joined by the data-center network).
//   GPU: "node" (inside the NVLink domain) and "net" (across domains, over
//        the scale-out fat tree).
// Built from the CLI.md `CHIP:SHAPE` syntax or from data/systems/*.toml.
#ifndef SCALEMODEL_HW_SYSTEM_H_
#define SCALEMODEL_HW_SYSTEM_H_

#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/chip.h"

namespace scalemodel::hw {

enum class AxisKind { kIci, kDcn, kNvlink, kScaleOut };
std::string_view AxisKindName(AxisKind k);

// One level of a scale-out fat tree: `radix` children per switch group and
// the oversubscription of its uplinks (1 = full bisection bandwidth).
struct SwitchTier {
  std::string name;    // "leaf", "spine"
  int group_size = 0;  // NVLink domains under one switch group of this tier
  double oversubscription = 1.0;
};

struct PhysicalAxis {
  std::string name;  // "x", "dcn", "node", "net"
  AxisKind kind = AxisKind::kIci;
  int size = 1;
  // ICI only: true when the axis closes into a ring.
  bool wraparound = false;
  // Per chip, per direction: one ICI link (a ring uses two per chip), the
  // GPU's NVLink egress, or the chip's NIC / DCN share.
  units::BytesPerSecond bandwidth;
  units::Seconds hop_latency;
  bool in_network_reduction = false;
  std::vector<SwitchTier> tiers;  // kScaleOut only; empty = one flat switch
};

struct System {
  std::string id;    // "tpu-v5p:16x20x28" or a catalog name
  std::string name;  // readable description
  std::string source;
  Chip chip;
  std::vector<PhysicalAxis> axes;  // axes of size 1 are kept (e.g. dcn=1)

  int num_chips() const;
  // Returns nullptr when the system has no axis of that name.
  const PhysicalAxis* FindAxis(std::string_view axis_name) const;
  std::vector<std::string> AxisNames() const;
};

// Builds a system from a chip and a shape string:
//   TPU "16x16" or "4x4x8", optionally "/N" for N slices over DCN;
//   GPU "8x128" (GPUs per NVLink domain x domains).
// Errors name the shape and say what was expected ("tpu-v5e is a 2D torus:
// expected 2 dimensions such as 16x16, got 3 in '4x4x4'").
Result<System> BuildSystem(const Chip& chip, std::string_view shape);

// A part of `system` with `chips` chips, for planning on fewer chips than a
// system has: GPUs keep whole NVLink domains (or part of one); TPUs take a
// slice shape whose axes fit inside the original ones (most cubic first) and
// the same number of slices. Named-system detail (fat-tree tiers, NIC rates)
// is kept. Errors when no such shape exists.
Result<System> SubSystem(const System& system, int chips);

// Whether an ICI axis of `size` chips has a wraparound link on this chip.
bool HasWraparound(const IciLinks& ici, int size);

}  // namespace scalemodel::hw

#endif  // SCALEMODEL_HW_SYSTEM_H_
