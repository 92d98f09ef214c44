// Sharding specs (`shard` and `matmul`): the input's first line is a mesh
// ("X=4,Y=2"), the second an array or matmul in the book's notation
// ("A[I_X, J_Y]", "A[I_X, J] * B[J, K_Y]"), the third the dimension sizes
// ("I=1024,J=512"). An accepted layout must have finite, non-negative local
// shapes and at least one replica and shard.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/sharding/spec.h"

namespace ss = scalemodel::sharding;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::CheckNonNegative;
using scalemodel::fuzz::Fail;
using scalemodel::fuzz::Fields;

namespace {

void CheckLayout(const ss::ArraySpec& a, const ss::Mesh& mesh,
                 const std::map<std::string, double>& dims) {
  auto l = ss::Layout(a, mesh, dims);
  if (!l) return;
  for (double d : l->local_shape) CheckNonNegative("local shape", d);
  CheckNonNegative("elements per device", l->elements_per_device);
  if (!(l->replicas >= 1)) Fail("replicas", l->replicas);
  if (l->shards < 1) Fail("shards", l->shards);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  std::vector<std::string> f = Fields(AsText(data, size), 3);
  f.resize(3);
  auto mesh = ss::ParseMesh(f[0]);
  if (!mesh) return 0;
  // A mesh of physical axes ("X=x,Y=y.z") has its sizes filled in when laid
  // onto a system (the CLI does that first): no layout without sizes.
  const bool sized = mesh->physical.empty();
  if (sized && mesh->num_devices() < 1) {
    Fail("mesh devices", mesh->num_devices());
  }
  scalemodel::Result<std::map<std::string, double>> dims =
      tl::unexpected(scalemodel::Error{});
  if (sized) dims = ss::ParseDims(f[2]);
  if (dims) {
    for (const auto& [name, v] : *dims) {
      if (!std::isfinite(v) || v <= 0) Fail("dim size", v);
    }
  }
  if (auto a = ss::ParseArray(f[1], *mesh)) {
    (void)a->ToString();
    if (dims) CheckLayout(*a, *mesh, *dims);
  }
  if (auto m = ss::ParseMatmul(f[1], *mesh)) {
    if (dims) {
      CheckLayout(m->a, *mesh, *dims);
      CheckLayout(m->b, *mesh, *dims);
    }
  }
  return 0;
}
