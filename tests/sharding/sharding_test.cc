#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/sharding/spec.h"

namespace scalemodel::sharding {
namespace {

using scalemodel::testing::Chip;
using scalemodel::testing::System;

Mesh M(const char* text) {
  auto m = ParseMesh(text);
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  return *m;
}

std::map<std::string, double> D(const char* text) { return *ParseDims(text); }

TEST(SpecTest, ParsesTheBookNotation) {
  Mesh mesh = M("X=4,Y=2,Z=2");
  auto a = ParseArray("A[I_XY, J]{U_Z}", mesh);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->dims[0].axes, (std::vector<std::string>{"X", "Y"}));
  EXPECT_TRUE(a->dims[1].axes.empty());
  EXPECT_EQ(a->unreduced, std::vector<std::string>{"Z"});
  EXPECT_EQ(a->ToString(), "A[I_XY, J]{U_Z}");
  // Multi-letter mesh axes split by longest match.
  Mesh named = M("data=4,model=2");
  EXPECT_EQ(ParseArray("W[D_data, F_model]", named)->ToString(),
            "W[D_data, F_model]");
}

// Errors quote the text with a caret under the problem.
TEST(SpecTest, ErrorsWithCaret) {
  Mesh mesh = M("X=4,Y=2");
  EXPECT_EQ(ParseArray("A[I_X, J_X]", mesh).error().message,
            "mesh axis X is used twice in A (an axis may shard one "
            "dimension)\n  A[I_X, J_X]\n           ^");
  EXPECT_EQ(ParseArray("A[I_W, J]", mesh).error().message,
            "unknown mesh axis 'W' (the mesh has X, Y)\n  A[I_W, J]\n"
            "      ^");
  EXPECT_EQ(ParseArray("A[I_X J]", mesh).error().message,
            "expected ',' or ']'\n  A[I_X J]\n        ^");
  EXPECT_EQ(ParseMatmul("A[I, J] @ B[K, L]", mesh).error().message,
            "the operands share no dimension to contract: A[I, J] @ B[K, L]");
  EXPECT_EQ(ParseMatmul("A[I, J] @ B[J, K] -> C[I, Q]", mesh).error().message,
            "output dimension Q is in neither operand\n  A[I, J] @ B[J, K] "
            "-> C[I, Q]\n                            ^");
  EXPECT_EQ(Layout(*ParseArray("A[I_XY, J]", mesh), mesh, D("I=1002,J=8"))
                .error()
                .message,
            "I=1002 is not divisible by X*Y=8 in A[I_XY, J]");
  EXPECT_EQ(
      Layout(*ParseArray("A[I, J]", mesh), mesh, D("I=8")).error().message,
      "dimension J of A has no size; add J=N");
  EXPECT_EQ(ParseMesh("X=4,Y").error().message,
            "expected NAME=SIZE or NAME=PHYSICAL such as 'X=4,Y=2' or "
            "'X=x,Y=y.z', got 'X=4,Y'");
  EXPECT_EQ(ParseMesh("X=4,X=2").error().message,
            "mesh axis 'X' is named twice");
}

// sharding-popquiz-local-shape-fp32: fp32[1024, 4096] as A[I_XY, J] on
// X=8, Y=2: local 64 x 4096, 1 MiB, read from H100 HBM in ~308 ns (the book
// uses 3.4e12 B/s; the catalog's 3.35e12 gives 313 ns, inside the 6%).
TEST(BookSharding, LocalShapeFp32) {
  Mesh mesh = M("X=8,Y=2");
  auto l = Layout(*ParseArray("A[I_XY, J]", mesh), mesh, D("I=1024,J=4096"));
  EXPECT_EQ(l->local_shape, (std::vector<double>{64, 4096}));
  EXPECT_EQ(l->elements_per_device * 4, 1048576);
  EXPECT_NEAR(
      l->elements_per_device * 4 / Chip("h100").hbm_bandwidth.si() / 308.4e-9,
      1, 0.06);
  EXPECT_EQ(l->replicas, 1);
}

// sharding-code-local-shapes and jax-auto-sharding-local-shapes (mesh X=4,
// Y=2): P('X','Y') on bf16[8, 2048] is 2 x 1024; P(None,'Y') on
// bf16[2048, 8192] is 2048 x 4096; P('Y', None) is 1024 x 8192; the output
// P('X', None) of [8, 8192] is 2 x 8192.
TEST(BookSharding, LocalShapes) {
  Mesh mesh = M("X=4,Y=2");
  auto dims = D("I=8,J=2048,K=8192");
  EXPECT_EQ(Layout(*ParseArray("A[I_X, J_Y]", mesh), mesh, dims)->local_shape,
            (std::vector<double>{2, 1024}));
  EXPECT_EQ(Layout(*ParseArray("B[J, K_Y]", mesh), mesh, dims)->local_shape,
            (std::vector<double>{2048, 4096}));
  EXPECT_EQ(Layout(*ParseArray("W[J_Y, K]", mesh), mesh, dims)->local_shape,
            (std::vector<double>{1024, 8192}));
  auto out = Layout(*ParseArray("O[I_X, K]", mesh), mesh, dims);
  EXPECT_EQ(out->local_shape, (std::vector<double>{2, 8192}));
  EXPECT_EQ(out->replicas, 2);  // replicated over Y
}

// sharding-q7-memory: bf16 weights [8192, 32768] and activations [128, 8192].
TEST(BookSharding, Memory) {
  Mesh mesh = M("X=2,Y=2");
  auto dims = D("B=128,D=8192,F=32768");
  EXPECT_EQ(
      Layout(*ParseArray("W[D, F]", mesh), mesh, dims)->elements_per_device * 2,
      536870912);
  EXPECT_EQ(
      Layout(*ParseArray("X[B, D]", mesh), mesh, dims)->elements_per_device * 2,
      2097152);
}

// jax-shard-map-slice-average: int32[512] sharded over ('x','y') = 2 x 4:
// 64 per device; averaging slices of 4 leaves 4 values.
TEST(BookSharding, ShardMapSlice) {
  Mesh mesh = M("x=2,y=4");
  auto l = Layout(*ParseArray("A[I_xy]", mesh), mesh, D("I=512"));
  EXPECT_EQ(l->local_shape[0], 64);
  EXPECT_EQ(l->local_shape[0] / 16, 4);
}

MatmulAnalysis Analyze(const char* spec, const char* system,
                       const char* mesh_text, const char* dims) {
  hw::System sys = System(system);
  Mesh mesh = M(mesh_text);
  auto layout = LayMesh(mesh, sys);
  EXPECT_TRUE(layout.has_value()) << layout.error().ToString();
  auto m = ParseMatmul(spec, mesh);
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  auto r = AnalyzeShardedMatmul(*m, mesh, *layout, sys, D(dims));
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return *r;
}

// The four cases, on a 1D and a 2D mesh.
TEST(MatmulTest, Case1NoCommunication) {
  auto r = Analyze("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", "tpu-v5e:4x4",
                   "X=4,Y=4", "I=4096,J=8192,K=8192");
  EXPECT_EQ(r.plan.matmul_case, 1);
  EXPECT_TRUE(r.plan.collectives.empty());
  EXPECT_EQ(r.plan.output.ToString(), "C[I_X, K_Y]");
  // 2 I J K / 16 devices.
  EXPECT_DOUBLE_EQ(r.plan.per_device_flops, 2.0 * 4096 * 8192 * 8192 / 16);
  auto r1 = Analyze("A[I_X, J] @ B[J, K]", "tpu-v5e:16x16", "X=16",
                    "I=4096,J=8192,K=8192");
  EXPECT_EQ(r1.plan.matmul_case, 1);
  EXPECT_EQ(r1.plan.output.ToString(), "C[I_X, K]");
}

TEST(MatmulTest, Case2GatherOrSliceAndReduce) {
  // A replicated on J, B sharded on J: gather B (book strategy 1) or slice A
  // and all-reduce / reduce-scatter the output (strategy 2).
  auto r = Analyze("A[I, J] @ B[J_X, K]", "tpu-v5e:16x16", "X=16",
                   "I=128,J=8192,K=8192");
  EXPECT_EQ(r.plan.matmul_case, 2);
  ASSERT_EQ(r.plan.collectives.size(), 1u);
  EXPECT_EQ(r.plan.collectives[0].kind, net::Collective::kAllGather);
  EXPECT_EQ(r.plan.collectives[0].array, "B");
  EXPECT_DOUBLE_EQ(r.plan.collectives[0].bytes.si(), 2.0 * 8192 * 8192);
  // At a small batch the reduce of the [128, 8192] output is far cheaper
  // than gathering 128 MiB of weights (the book's D > 2B rule).
  ASSERT_FALSE(r.alternatives.empty());
  EXPECT_NE(r.alternatives[0].collectives.back().kind,
            net::Collective::kAllGather);
  EXPECT_LT(r.alternatives[0].t_total, r.plan.t_total);
  // 2D mesh: the gather runs on the Y axis's links.
  auto r2 = Analyze("A[I_X, J] @ B[J_Y, K]", "tpu-v5e:16x16", "X=16,Y=16",
                    "I=4096,J=8192,K=8192");
  EXPECT_EQ(r2.plan.matmul_case, 2);
  EXPECT_EQ(r2.plan.collectives[0].axes, std::vector<std::string>{"Y"});
}

TEST(MatmulTest, Case3AllReduceOrReduceScatter) {
  auto r = Analyze("A[I, J_X] @ B[J_X, K]", "tpu-v5e:16x16", "X=16",
                   "I=128,J=8192,K=8192");
  EXPECT_EQ(r.plan.matmul_case, 3);
  EXPECT_EQ(r.plan.collectives[0].kind, net::Collective::kAllReduce);
  EXPECT_EQ(r.plan.output.ToString(), "C[I, K]");
  // Reduce-scatter is half an all-reduce and leaves the output sharded.
  ASSERT_FALSE(r.alternatives.empty());
  EXPECT_EQ(r.alternatives[0].collectives[0].kind,
            net::Collective::kReduceScatter);
  EXPECT_NEAR(
      r.alternatives[0].collectives[0].time / r.plan.collectives[0].time, 0.5,
      1e-9);
  // A requested output sharding picks the reduce-scatter directly (2D).
  auto r2 = Analyze("A[I_Y, J_X] @ B[J_X, K] -> C[I_Y, K_X]", "tpu-v5e:16x16",
                    "X=16,Y=16", "I=4096,J=8192,K=8192");
  EXPECT_EQ(r2.plan.collectives[0].kind, net::Collective::kReduceScatter);
  EXPECT_EQ(r2.plan.output.ToString(), "C[I_Y, K_X]");
  // V of the reduce is C's bytes over one Y slice: 2 I K / 16.
  EXPECT_DOUBLE_EQ(r2.plan.collectives[0].bytes.si(), 2.0 * 4096 * 8192 / 16);
}

TEST(MatmulTest, Case4GatherOneInput) {
  auto r = Analyze("A[I_X, J] @ B[J, K_X]", "tpu-v5e:16x16", "X=16",
                   "I=4096,J=8192,K=8192");
  EXPECT_EQ(r.plan.matmul_case, 4);
  ASSERT_EQ(r.plan.collectives.size(), 1u);
  EXPECT_EQ(r.plan.collectives[0].kind, net::Collective::kAllGather);
  auto r2 = Analyze("A[I_XY, J] @ B[J, K_X]", "tpu-v5e:16x16", "X=16,Y=16",
                    "I=4096,J=8192,K=8192");
  EXPECT_EQ(r2.plan.matmul_case, 4);
}

// The FSDP layer of the training chapter: In[B_X, D] . W_in[D_X, F] needs the
// weights gathered over X: V = 2 D F.
TEST(MatmulTest, FsdpGathersWeights) {
  auto r = Analyze("In[B_X, D] @ W[D_X, F]", "tpu-v5p:4x4x4", "X=64",
                   "B=65536,D=8192,F=32768");
  EXPECT_EQ(r.plan.collectives[0].array, "W");
  EXPECT_DOUBLE_EQ(r.plan.collectives[0].bytes.si(), 2.0 * 8192 * 32768);
  // X spans all three axes: all links carry the gather.
  EXPECT_NEAR(r.plan.collectives[0].time.si(), 2.0 * 8192 * 32768 / (3 * 180e9),
              1e-6);
}

TEST(MeshTest, LaysOntoPhysicalAxes) {
  hw::System sys = System("tpu-v5p:4x4x8");
  Mesh m = M("X=16,Y=8");
  auto l = LayMesh(m, sys);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->Describe(m, sys), "X=16 on x.y, Y=8 on z");
  Mesh part = M("X=2,Y=64");
  EXPECT_EQ(LayMesh(part, sys)->Describe(part, sys),
            "X=2 on x(2/4), Y=64 on x(2/4).y.z");
  Mesh named = M("X=z,Y=x.y");
  EXPECT_EQ(LayMesh(named, sys)->Describe(named, sys), "X=8 on z, Y=16 on x.y");
  Mesh big = M("X=1024");
  EXPECT_EQ(LayMesh(big, sys).error().message,
            "mesh of 1024 devices does not fit tpu-v5p:4x4x8 (128 chips)");
  Mesh odd = M("X=3");
  EXPECT_EQ(LayMesh(odd, sys).error().message,
            "mesh axis X=3 cannot be laid onto tpu-v5p:4x4x8's axis x (4 chips "
            "left on it); name the axes explicitly, e.g. X=x");
  Mesh wrong = M("X=w");
  EXPECT_EQ(LayMesh(wrong, sys).error().message,
            "mesh axis X: unknown physical axis 'w' of tpu-v5p:4x4x8 (did you "
            "mean 'x'?)");
}

}  // namespace
}  // namespace scalemodel::sharding
