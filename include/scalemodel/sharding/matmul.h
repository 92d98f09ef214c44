// Sharded matmul analysis (book: "sharding" chapter, four cases):
//   1. no sharded contracting dim: no communication;
//   2. one operand sharded on the contracting dim: all-gather it first, or
//      slice the other operand and reduce the partial sums afterwards;
//   3. both sharded identically on it: local matmul gives C{U_X}, then
//      all-reduce, or reduce-scatter onto an output dim (cheaper);
//   4. both use one mesh axis on non-contracting dims: all-gather one input.
// Each plan lists its collectives (kind, axes, bytes, time), per-device FLOPs,
// compute and communication time, the total with collective-matmul overlap,
// and the output sharding.
#ifndef SCALEMODEL_SHARDING_MATMUL_H_
#define SCALEMODEL_SHARDING_MATMUL_H_

#include <map>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/sharding/spec.h"

namespace scalemodel::sharding {

// Where each logical mesh axis lives: physical axis indices of the system
// and the group size used on each.
struct MeshLayout {
  std::vector<std::vector<int>> physical;  // per logical axis
  std::vector<std::vector<int>> sizes;     // per logical axis
  std::string Describe(const Mesh& mesh, const hw::System& sys) const;
};

// Lays `mesh` onto `sys`: in order (each logical axis takes whole physical
// axes, or a divisor of one, from x outwards), or as given explicitly
// ("X=x,Y=y.z"), filling the sizes. Errors when the mesh does not fit.
Result<MeshLayout> LayMesh(Mesh& mesh, const hw::System& sys);

struct CollectiveStep {
  net::Collective kind = net::Collective::kAllGather;
  std::string array;              // "A", "B" or "C"
  std::vector<std::string> axes;  // logical mesh axes
  units::Bytes bytes;             // V: the array one group works on
  units::Seconds time;
  bool overlappable = false;  // can hide under the matmul (collective matmul)
  std::string why;
};

struct MatmulPlan {
  std::string description;
  int matmul_case = 1;
  std::vector<CollectiveStep> collectives;
  double per_device_flops = 0;
  units::Seconds t_math;   // per-device FLOPs at peak
  units::Seconds t_comm;   // sum of the collectives
  units::Seconds t_total;  // max(t_math, overlappable) + the rest
  ArraySpec output;
  std::string bound;  // "compute" or "communication"
};

struct MatmulAnalysis {
  std::vector<std::string> contracting;  // dimension names
  MatmulPlan plan;                       // the book's default for this case
  std::vector<MatmulPlan> alternatives;  // cheaper ones, best first
};

struct MatmulOptions {
  hw::Dtype dtype = hw::Dtype::kBf16;
  net::Mode mode = net::Mode::kPeak;
};

Result<MatmulAnalysis> AnalyzeShardedMatmul(
    const MatmulSpec& spec, const Mesh& mesh, const MeshLayout& layout,
    const hw::System& sys, const std::map<std::string, double>& dims,
    const MatmulOptions& options = {});

}  // namespace scalemodel::sharding

#endif  // SCALEMODEL_SHARDING_MATMUL_H_
