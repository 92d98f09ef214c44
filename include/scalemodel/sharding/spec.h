// The book's named-axis sharding notation (book: "sharding" chapter):
//   A[I_X, J_Y]     dimension I split over mesh axis X, J over Y
//   A[I_XY, J]      I split over the flattened X*Y devices
//   A[I, J]         replicated
//   C[I, K]{U_X}    unreduced partial sums over X
//   A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]   a matmul (the output is optional)
// Parse errors carry a caret under the problem.
#ifndef SCALEMODEL_SHARDING_SPEC_H_
#define SCALEMODEL_SHARDING_SPEC_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"

namespace scalemodel::sharding {

// A logical mesh: named axes with sizes, in order ({"X": 4, "Y": 2}).
struct Mesh {
  std::vector<std::string> names;
  std::vector<int> sizes;
  // Explicit physical axes per logical axis (from "X=x,Y=y.z"); empty when
  // the mesh was given by sizes and is laid onto physical axes in order.
  std::vector<std::vector<std::string>> physical;

  int size(std::string_view axis) const;   // 0 when absent
  int index(std::string_view axis) const;  // -1 when absent
  int num_devices() const;
};

// Parses "X=4,Y=2" (sizes) or "X=x,Y=y.z" (physical axes; sizes are filled
// in when laid onto a system).
Result<Mesh> ParseMesh(std::string_view text);

struct DimSharding {
  std::string dim;                // "I"
  std::vector<std::string> axes;  // {"X", "Y"} for I_XY
  int column = 0;                 // position in the source text
};

struct ArraySpec {
  std::string name;  // "A"
  std::vector<DimSharding> dims;
  std::vector<std::string> unreduced;  // {U_X} -> {"X"}
  // Axes used by this array's dimensions, in order.
  std::vector<std::string> UsedAxes() const;
  // The text form, e.g. "A[I_X, J]{U_Y}".
  std::string ToString() const;
};

struct MatmulSpec {
  ArraySpec a, b;
  std::optional<ArraySpec> out;
};

// Parses one array. `mesh` resolves multi-letter subscripts (I_XY -> X, Y)
// and catches unknown axes; errors quote the text with a caret.
Result<ArraySpec> ParseArray(std::string_view text, const Mesh& mesh);
Result<MatmulSpec> ParseMatmul(std::string_view text, const Mesh& mesh);

// Parses "I=1024,J=512" (suffixes allowed: 4K, 8Ki).
Result<std::map<std::string, double>> ParseDims(std::string_view text);

struct LocalLayout {
  std::vector<double> local_shape;
  double elements_per_device = 0;
  double replicas = 1;  // devices holding each shard
  int shards = 1;       // distinct shards
};

// Local shape of `a` on `mesh` with global sizes `dims`. Errors: a dimension
// without a size, or a size not divisible by its axes ("I=1000 is not
// divisible by X*Y=16").
Result<LocalLayout> Layout(const ArraySpec& a, const Mesh& mesh,
                           const std::map<std::string, double>& dims);

}  // namespace scalemodel::sharding

#endif  // SCALEMODEL_SHARDING_SPEC_H_
