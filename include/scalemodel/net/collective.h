// Collective costs over one or several physical axes of a system.
//
// Example:
//   auto c = net::EstimateCollective(sys, net::Collective::kAllGather,
//                                    units::Gigabytes(16), {"x", "y", "z"});
//   // c->time, c->bound ("bandwidth" or "latency"), c->per_axis
#ifndef SCALEMODEL_NET_COLLECTIVE_H_
#define SCALEMODEL_NET_COLLECTIVE_H_

#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/net/topology.h"

namespace scalemodel::net {

enum class Mode { kPeak, kRealistic };

struct CollectiveOptions {
  // kPeak: the book's first-order bound (peak link rates, latency overlapped
  // with transfer). kRealistic: measured per-fabric efficiency, alpha-beta
  // hops, a fixed launch cost.
  Mode mode = Mode::kPeak;
};

struct AxisCost {
  std::string axis;
  int size = 1;
  units::Bytes bytes;  // bytes of the array this axis's phase works on
  units::Seconds time;
  units::Seconds bandwidth_time;
  units::Seconds latency_time;
  std::string algorithm;
};

struct CollectiveCost {
  Collective op = Collective::kAllGather;
  units::Bytes bytes;  // the whole array (V)
  int group_size = 1;  // chips taking part in one collective
  units::Seconds time;
  units::Seconds bandwidth_time;
  units::Seconds latency_time;
  bool latency_bound = false;  // latency_time > bandwidth_time
  std::string algorithm;
  std::vector<AxisCost> per_axis;
};

// Cost of `op` on an array of `bytes` (the whole, unsharded array, as in the
// book) over the named physical axes, all members of each axis taking part.
// Errors name an unknown or repeated axis.
//
// Several TPU ICI axes at once use all their links together (the book's
// multi-axis form): T = max(T_hop x sum(hops), V / sum(W_axis)). GPU levels
// (NVLink inside a node, then the scale-out network) are hierarchical: the
// outer level works on V / (inner group) per chip, and the levels pipeline,
// so T = max over levels (the book's max(B/W_gpu, B/W_node)).
Result<CollectiveCost> EstimateCollective(
    const hw::System& system, Collective op, units::Bytes bytes,
    const std::vector<std::string>& axes,
    const CollectiveOptions& options = {});

// The same on axes given by index into system.axes, with a group of `sizes[i]`
// members on each (a logical mesh axis may use part of a physical axis).
// Used by the sharding and training modules; no error paths.
// REQUIRES: indices valid and distinct; 1 <= sizes[i] <= axis size.
CollectiveCost EstimateOnAxes(const hw::System& system, Collective op,
                              units::Bytes bytes,
                              const std::vector<int>& axis_indices,
                              const std::vector<int>& sizes,
                              const CollectiveOptions& options = {});

}  // namespace scalemodel::net

#endif  // SCALEMODEL_NET_COLLECTIVE_H_
