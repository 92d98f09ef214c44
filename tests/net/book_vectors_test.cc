// The collective examples of How to Scale Your Model, copied from
// shared/reference/book-vectors.json (ids kept), run through the library in
// peak mode (the book's first-order bound) at the vector's tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"
#include "scalemodel/net/collective.h"

namespace scalemodel::net {
namespace {

using scalemodel::testing::Chip;
using scalemodel::testing::System;
using units::Bytes;

void ExpectRel(double got, double want, double tol, const char* what) {
  EXPECT_LE(std::fabs(got / want - 1), std::max(tol, 1e-9))
      << what << ": got " << got << ", want " << want;
}

double Us(const Result<CollectiveCost>& c) {
  EXPECT_TRUE(c.has_value()) << c.error().ToString();
  return c->time.si() * 1e6;
}

// sharding-q2-allgather-v4p-x / -xy and sharding-q2-allreduce-v4p-z: a
// bf16[1024, 4096] array sharded [B_X, D_Y] on a v4 4x4x4 (mesh X, Y, Z).
// Gathering over X works on the V/Y bytes of one Y-slice.
TEST(BookCollective, V4AllGatherAndAllReduce) {
  hw::System v4 = System("tpu-v4:4x4x4");
  const double array = 2.0 * 1024 * 4096;
  ExpectRel(Us(EstimateCollective(v4, Collective::kAllGather, Bytes(array / 4),
                                  {"x"})),
            23.3, 0.02, "AllGather_X t_us");
  ExpectRel(Us(EstimateCollective(v4, Collective::kAllGather, Bytes(array),
                                  {"x", "y"})),
            46.6, 0.03, "AllGather_XY t_us");
  ExpectRel(Us(EstimateCollective(v4, Collective::kAllGather, Bytes(array),
                                  {"x", "y", "z"})),
            31.07, 0.03, "t_with_3_axes_us");
  // AllReduce_Z([B_X, D_Y]{U_Z}): each Z group reduces V/(XY) bytes.
  ExpectRel(Us(EstimateCollective(v4, Collective::kAllReduce, Bytes(array / 16),
                                  {"z"})),
            11.65, 0.02, "AllReduce_Z t_us");
}

// sharding-q3-latency-bound-allgather: bf16[128] over X=4 with wraparound:
// 2 hops of 1 us, latency-bound.
TEST(BookCollective, LatencyBoundAllGather) {
  auto c = EstimateCollective(System("tpu-v4:4x4x4"), Collective::kAllGather,
                              Bytes(256), {"x"});
  ExpectRel(Us(c), 2.0, 0, "t_us");
  EXPECT_TRUE(c->latency_bound);
  EXPECT_EQ(c->per_axis[0].bytes.si() / 4, 64);  // bytes_per_device
}

// sharding-popquiz2-allgather-v5e: AllGather_Y([E_Y, F]) of bf16[2048, 8192]
// on a v5e 8x4 mesh: the 4-axis has no wraparound on v5e, so it takes 1.5x
// the ring time (3/4 V over one direction vs V over two).
TEST(BookCollective, V5eWithAndWithoutWraparound) {
  const double array = 2.0 * 2048 * 8192;
  ExpectRel(array, 33554432, 0, "array_bytes");
  // A full 16-long axis of v5e is a ring; compare per the book's formula.
  RingDimension ring("y", 4, true, Chip("tpu-v5e").ici->link_bandwidth,
                     units::Microseconds(1));
  ExpectRel(ring.Cost(Collective::kAllGather, Bytes(array), 4, LinkModel::kBook)
                    .time.si() *
                1e6,
            372.8, 0.05, "t_ring_us");
  auto line = EstimateCollective(System("tpu-v5e:8x4"), Collective::kAllGather,
                                 Bytes(array), {"y"});
  ExpectRel(Us(line), 559.2, 0.05, "t_no_wrap_us");
}

// profiling-reducescatter-time: TPU v2 4x2, 128 MiB shards over one hop at
// 1.2e11 B/s bidirectional.
TEST(BookCollective, ProfilingReduceScatter) {
  RingDimension pair("x", 2, false, units::BytesPerSecond(0.6e11),
                     units::Microseconds(1));
  double t = pair.Cost(Collective::kReduceScatter, Bytes(2 * 134217728.0 / 2),
                       2, LinkModel::kBook)
                 .time.si();
  ExpectRel(t * 1e3, 1.12, 0.03, "t_ms");
}

// inference-latency-bound-megatron: int8 activations of 16 x 8192 over an
// 8-way v5e axis are latency-bound: the threshold is 8 x 4.5e10 x 1 us.
TEST(BookCollective, LatencyBoundMegatron) {
  hw::System s = System("tpu-v5e:8x16");
  const hw::PhysicalAxis& x = *s.FindAxis("x");
  double threshold = x.size * x.bandwidth.si() * x.hop_latency.si();
  ExpectRel(threshold, 360000, 0.01, "buffer_threshold_bytes");
  double act = 16.0 * 8192;
  ExpectRel(act, 131072, 0, "activation_bytes");
  EXPECT_TRUE(EstimateCollective(s, Collective::kAllGather, Bytes(act), {"x"})
                  ->latency_bound);
  ExpectRel(act / (x.bandwidth.si() * x.hop_latency.si()), 2.91, 0.01,
            "Y_latency_threshold");
}

// gpus-tree-allgather-bandwidth: all-gather bandwidth of each level of the
// H100 SuperPOD = V / T: node 8 x 450 / 7, leaf 32 x 400 / 31.
TEST(BookCollective, TreeLevelBandwidths) {
  hw::System s = System("dgx-h100-superpod");
  const Bytes v(1e9);
  auto node = EstimateCollective(s, Collective::kAllGather, v, {"node"});
  ExpectRel(v.si() / node->time.si(), 514e9, 0.01, "node_bw");
  // 32 nodes of one scalable unit: each GPU carries V/8 on its own NIC.
  std::vector<int> idx = {0, 1}, sizes = {8, 32};
  CollectiveCost leaf =
      EstimateOnAxes(s, Collective::kAllGather, v, idx, sizes, {Mode::kPeak});
  ExpectRel(v.si() / leaf.per_axis[1].time.si(), 413e9, 0.01, "leaf_bw");
  ExpectRel(v.si() / leaf.time.si(), 413e9, 0.01, "bottleneck_bw");
}

// gpus-popquiz3-sharded-allgather: AllGather_X(bf16[D_X, F_Y]), D = 8192,
// F = 32768, in one 256-GPU scalable unit. Y <= 8 (Y inside a node): X spans
// 32 nodes, each GPU's NIC carries 2DF/8 x 31/32.
TEST(BookCollective, ShardedAllGatherAcrossNodes) {
  hw::System s = System("h100:8x32");
  const double array = 2.0 * 8192 * 32768;
  auto y8 = EstimateOnAxes(s, Collective::kAllGather, Bytes(array / 8), {1},
                           {32}, {Mode::kPeak});
  ExpectRel(y8.time.si() * 1e3, 1.3, 0.02, "t_Y_le_8_ms");
  // Y = 32: X = 8 nodes. The book writes 2DF / (Y x 50 GB/s) = 0.336 ms,
  // dropping the ring factor (X-1)/X = 7/8 that we keep, so we predict
  // 0.294 ms: 12.5% below the book. Checked at that known gap.
  auto y32 = EstimateOnAxes(s, Collective::kAllGather, Bytes(array / 32), {1},
                            {8}, {Mode::kPeak});
  ExpectRel(y32.time.si() * 1e3, 0.336 * 7 / 8, 0.01, "t_Y_32_ms (x 7/8)");
}

// gpus-intra-vs-cross-node-alltoall: the book's approximate forms B/(N W_gpu)
// in a node and B/(M W_node) across M nodes, from catalog bandwidths. The
// library's exact forms keep the (N-1)/N factors; both are checked.
TEST(BookCollective, AllToAllInsideAndAcrossNodes) {
  hw::System s = System("h100:8x2");
  const hw::PhysicalAxis& node = *s.FindAxis("node");
  const hw::PhysicalAxis& net = *s.FindAxis("net");
  double w_node = node.size * net.bandwidth.si();
  ExpectRel(node.size * node.bandwidth.si(), 3.6e12, 0.01,
            "intra_node_effective_bw");
  ExpectRel(net.size * w_node, 800e9, 0.01, "two_node_effective_bw");
  ExpectRel(node.size * node.bandwidth.si() / (net.size * w_node), 4.5, 0.01,
            "slowdown");
  // Exact cross-node form: B (M-1) / (M^2 W_node).
  const Bytes v(8e9);
  auto across = EstimateOnAxes(s, Collective::kAllToAll, v, {0, 1}, {8, 2},
                               {Mode::kPeak});
  ExpectRel(across.per_axis[1].time.si(), v.si() / (4 * w_node), 1e-9,
            "exact cross-node all-to-all B (M-1) / (M^2 W_node)");
}

// gpus-sharp-practical and gpus-empirical-mlp-allreduce: NVLS all-reduce on 8
// H100s is ~30% faster than the ring in realistic mode (measured busbw 480 vs
// ~370 GB/s); the book's 58 MB MLP all-reduce array.
TEST(BookCollective, SharpGain) {
  ExpectRel(2.0 * 8192 * 3584, 58720256, 0.02, "bytes");
  hw::System s = System("h100:8x1");
  const Bytes v(16e9);
  auto nvls = EstimateCollective(s, Collective::kAllReduce, v, {"node"},
                                 {Mode::kRealistic});
  EXPECT_EQ(nvls->algorithm, "NVLink SHARP (NVLS)");
  hw::System no_sharp = s;
  no_sharp.axes[0].in_network_reduction = false;
  auto ring = EstimateCollective(no_sharp, Collective::kAllReduce, v, {"node"},
                                 {Mode::kRealistic});
  double busbw_ring = 2 * 7.0 / 8 * v.si() / ring->time.si();
  double busbw_nvls = 2 * 7.0 / 8 * v.si() / nvls->time.si();
  ExpectRel(busbw_ring * 1.3, 481e9, 0.05,
            "effective_bw_with_sharp (ring x 1.3)");
  ExpectRel(busbw_nvls, 481e9, 0.05, "effective_bw_with_sharp (NVLS)");
}

}  // namespace
}  // namespace scalemodel::net
