#include "scalemodel/net/collective.h"

#include <gtest/gtest.h>

#include <random>

#include "../testing/catalog.h"
#include "scalemodel/net/simulate.h"

namespace scalemodel::net {
namespace {

using scalemodel::testing::System;
using units::Bytes;
using units::Seconds;

CollectiveCost Must(const Result<CollectiveCost>& r) {
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r.has_value() ? *r : CollectiveCost{};
}

TEST(CollectiveTest, ParseNames) {
  EXPECT_EQ(*ParseCollective("all-gather"), Collective::kAllGather);
  EXPECT_EQ(*ParseCollective("AllReduce"), Collective::kAllReduce);
  EXPECT_EQ(*ParseCollective("a2a"), Collective::kAllToAll);
  EXPECT_EQ(ParseCollective("all-gahter").error().message,
            "unknown collective 'all-gahter' (did you mean 'all-gather'?); "
            "expected all-gather, reduce-scatter, all-reduce, all-to-all or "
            "permute");
}

TEST(CollectiveTest, AxisErrors) {
  hw::System s = System("tpu-v5e:16x16");
  EXPECT_EQ(EstimateCollective(s, Collective::kAllGather, Bytes(1e6), {"w"})
                .error()
                .ToString(),
            "axes: unknown axis 'w' for tpu-v5e:16x16 (did you mean 'x'?); "
            "its axes are x, y, dcn");
  EXPECT_EQ(
      EstimateCollective(s, Collective::kAllGather, Bytes(1e6), {"x", "x"})
          .error()
          .ToString(),
      "axes: axis 'x' is named twice");
  EXPECT_EQ(EstimateCollective(System("h100:8x4"), Collective::kAllGather,
                               Bytes(1e6), {"nodes"})
                .error()
                .message,
            "unknown axis 'nodes' for h100:8x4 (did you mean 'node'?); its "
            "axes are node, net");
}

// Property: on rings and lines of 1..12 chips the closed forms equal the
// hop-by-hop simulation, under both link models, for all-gather and
// reduce-scatter.
TEST(CollectivePropertyTest, RingClosedFormEqualsSimulation) {
  const units::BytesPerSecond link(45e9);
  const Seconds hop(1e-6);
  for (LinkModel model : {LinkModel::kBook, LinkModel::kAlphaBeta}) {
    for (bool wrap : {true, false}) {
      for (int n = 1; n <= 12; ++n) {
        for (double bytes : {1e3, 3.6e5, 1e8}) {
          RingDimension dim("x", n, wrap, link, hop);
          SimLink sl{link, hop};
          double ag = dim.Cost(Collective::kAllGather, Bytes(bytes), n, model)
                          .time.si();
          double rs =
              dim.Cost(Collective::kReduceScatter, Bytes(bytes), n, model)
                  .time.si();
          double sim_ag =
              SimulateRingAllGather(n, wrap, Bytes(bytes), sl, model).si();
          double sim_rs =
              SimulateRingReduceScatter(n, wrap, Bytes(bytes), sl, model).si();
          EXPECT_NEAR(ag, sim_ag, 1e-12 + 1e-9 * sim_ag)
              << "n=" << n << " wrap=" << wrap << " bytes=" << bytes;
          EXPECT_NEAR(rs, sim_rs, 1e-12 + 1e-9 * sim_rs)
              << "n=" << n << " wrap=" << wrap << " bytes=" << bytes;
        }
      }
    }
  }
}

// Property: on small 2D and 3D tori (with and without wraparound) the
// axis-by-axis simulation equals the sum of the 1D closed forms over the
// growing arrays; the concurrent multi-axis form the estimator uses is never
// slower than that and never faster than the incoming-link bound
// V (N-1)/N / (sum of the links into one chip).
TEST(CollectivePropertyTest, TorusSimulationAndBounds) {
  const units::BytesPerSecond link(90e9);
  const Seconds hop(1e-6);
  for (const std::vector<int>& dims :
       std::vector<std::vector<int>>{{4, 4}, {2, 4}, {4, 4, 4}, {4, 8, 8}}) {
    for (bool wrap : {true, false}) {
      std::vector<bool> wraps(dims.size(), wrap);
      const Bytes v(64e6);
      SimLink sl{link, hop};
      double sim = SimulateTorusAllGatherByAxes(dims, wraps, v, sl,
                                                LinkModel::kAlphaBeta)
                       .si();
      int n_total = 1;
      for (int d : dims) n_total *= d;
      double closed = 0, held = 1, in_bw = 0;
      for (int d : dims) {
        held *= d;
        RingDimension dim("a", d, wrap, link, hop);
        closed += dim.Cost(Collective::kAllGather, (held / n_total) * v, d,
                           LinkModel::kAlphaBeta)
                      .time.si();
        in_bw += (wrap && d > 2 ? 2 : 1) * link.si();
      }
      EXPECT_NEAR(sim, closed, 1e-9 * closed);
      // The estimator's concurrent form, built from the same axes.
      std::string shape;
      for (int d : dims)
        shape += (shape.empty() ? "" : "x") + std::to_string(d);
      double concurrent = 0;
      {
        hw::System s =
            System((dims.size() == 2 ? "tpu-v5e:" : "tpu-v5p:") + shape);
        std::vector<int> idx, sizes;
        for (size_t i = 0; i < dims.size(); ++i) {
          idx.push_back(static_cast<int>(i));
          sizes.push_back(dims[i]);
          s.axes[i].wraparound = wrap && dims[i] > 2;
          s.axes[i].bandwidth = link;
        }
        concurrent = EstimateOnAxes(s, Collective::kAllGather, v, idx, sizes,
                                    {Mode::kPeak})
                         .bandwidth_time.si();
      }
      double bound = v.si() * (n_total - 1) / n_total / in_bw;
      EXPECT_LE(concurrent, sim * (1 + 1e-9)) << shape << " wrap=" << wrap;
      EXPECT_GE(concurrent, bound * (1 - 1e-9)) << shape << " wrap=" << wrap;
    }
  }
}

// Property, on every dimension kind and many systems: all-reduce costs what
// reduce-scatter plus all-gather cost (without in-network reduction), and
// time never decreases as bytes grow.
TEST(CollectivePropertyTest, AllReduceIsRsPlusAgAndMonotone) {
  std::mt19937 rng(
      static_cast<unsigned>(::testing::UnitTest::GetInstance()->random_seed()));
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"tpu-v5e:16x16", {"x"}},       {"tpu-v5e:8x16", {"x", "y"}},
      {"tpu-v5p:4x4x8", {"x", "z"}},  {"tpu-v5p:4x4x4/4", {"x", "dcn"}},
      {"a100:8x16", {"node"}},        {"a100:8x16", {"net"}},
      {"a100:8x16", {"node", "net"}}, {"h100:4x2", {"node"}},
  };
  std::uniform_real_distribution<double> exp10(2, 11);
  for (const auto& [spec, axes] : cases) {
    hw::System s = System(spec);
    for (Mode mode : {Mode::kPeak, Mode::kRealistic}) {
      CollectiveOptions opt{mode};
      for (int i = 0; i < 50; ++i) {
        Bytes v(std::pow(10, exp10(rng)));
        double ar =
            Must(EstimateCollective(s, Collective::kAllReduce, v, axes, opt))
                .bandwidth_time.si();
        double rs = Must(EstimateCollective(s, Collective::kReduceScatter, v,
                                            axes, opt))
                        .bandwidth_time.si();
        double ag =
            Must(EstimateCollective(s, Collective::kAllGather, v, axes, opt))
                .bandwidth_time.si();
        EXPECT_NEAR(ar, rs + ag, 1e-9 * ar) << spec;
        for (Collective op :
             {Collective::kAllGather, Collective::kReduceScatter,
              Collective::kAllReduce, Collective::kAllToAll,
              Collective::kPermute}) {
          double t1 = Must(EstimateCollective(s, op, v, axes, opt)).time.si();
          double t2 =
              Must(EstimateCollective(s, op, 1.5 * v, axes, opt)).time.si();
          EXPECT_GE(t2, t1) << spec << " " << CollectiveName(op);
          EXPECT_GT(t1, 0);
        }
      }
    }
  }
}

// Property: below the documented threshold (per-hop message smaller than one
// hop's latency at the link rate, i.e. V < n x W_one_way x T_hop) the verdict
// is "latency"; well above it, "bandwidth" (docs/model.md 2.3).
TEST(CollectivePropertyTest, LatencyThreshold) {
  for (const char* spec : {"tpu-v5e:16x16", "tpu-v5e:8x16", "h100:8x1"}) {
    hw::System s = System(spec);
    const hw::PhysicalAxis& a = s.axes[0];
    double threshold = a.size * a.bandwidth.si() * a.hop_latency.si();
    auto below = Must(EstimateCollective(s, Collective::kAllGather,
                                         Bytes(0.9 * threshold), {a.name}));
    auto above = Must(EstimateCollective(s, Collective::kAllGather,
                                         Bytes(1.1 * threshold), {a.name}));
    EXPECT_TRUE(below.latency_bound) << spec;
    EXPECT_FALSE(above.latency_bound) << spec;
  }
}

TEST(CollectiveTest, RealisticIsSlowerThanPeak) {
  hw::System s = System("h100:8x16");
  for (double v : {1e4, 1e6, 1e9}) {
    auto peak = Must(EstimateCollective(s, Collective::kAllGather, Bytes(v),
                                        {"node", "net"}, {Mode::kPeak}));
    auto real = Must(EstimateCollective(s, Collective::kAllGather, Bytes(v),
                                        {"node", "net"}, {Mode::kRealistic}));
    EXPECT_GT(real.time, peak.time);
  }
}

TEST(CollectiveTest, OversubscriptionSlowsAllToAllOnly) {
  hw::System meta = System("meta-llama3-h100-16k");
  hw::System flat = System("h100:8x2048");
  Bytes v(8e9);
  auto a2a_meta =
      Must(EstimateCollective(meta, Collective::kAllToAll, v, {"net"}));
  auto a2a_flat =
      Must(EstimateCollective(flat, Collective::kAllToAll, v, {"net"}));
  EXPECT_GT(a2a_meta.time.si(), 5 * a2a_flat.time.si());
  auto ag_meta =
      Must(EstimateCollective(meta, Collective::kAllGather, v, {"net"}));
  auto ag_flat =
      Must(EstimateCollective(flat, Collective::kAllGather, v, {"net"}));
  EXPECT_DOUBLE_EQ(ag_meta.time.si(), ag_flat.time.si());
}

// An all-to-all over node x net: every chip holds V / N and its node step
// exchanges that among the node's 8 GPUs, an all-to-all of the node's share
// of the array (V 8 / N), not of the whole array; the net step exchanges
// the same V / N among the 18 nodes (an array of V 18 / N).
TEST(CollectiveTest, HierarchicalAllToAllMovesEachLevelsShare) {
  hw::System s = System("h800:8x18");
  const Bytes v(793e6);
  for (Mode mode : {Mode::kPeak, Mode::kRealistic}) {
    auto both = Must(EstimateCollective(s, Collective::kAllToAll, v,
                                        {"node", "net"}, {mode}));
    ASSERT_EQ(both.per_axis.size(), 2u);
    EXPECT_NEAR(both.per_axis[0].bytes.si(), 793e6 * 8 / 144, 1);
    EXPECT_NEAR(both.per_axis[1].bytes.si(), 793e6 * 18 / 144, 1);
    auto node_only = Must(EstimateCollective(
        s, Collective::kAllToAll, Bytes(793e6 * 8 / 144), {"node"}, {mode}));
    EXPECT_NEAR(both.per_axis[0].bandwidth_time.si(),
                node_only.bandwidth_time.si(),
                1e-9 * node_only.bandwidth_time.si());
    // One node's all-to-all of the whole array is 18x the node step.
    auto whole =
        Must(EstimateCollective(s, Collective::kAllToAll, v, {"node"}, {mode}));
    EXPECT_GT(whole.bandwidth_time.si(),
              10 * both.per_axis[0].bandwidth_time.si());
  }
}

}  // namespace
}  // namespace scalemodel::net
