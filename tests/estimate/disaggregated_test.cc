#include "scalemodel/estimate/disaggregated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "../testing/catalog.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::Chip;
using scalemodel::testing::Model;
using scalemodel::testing::System;

// The KV of a prompt over a link, by hand: Llama 3 70B keeps 2 (K, V) x 80
// layers x 8 KV heads x 128 dims x 2 bytes = 327,680 bytes per token; TP 8
// shards it over 8 chips (40,960 per chip), TP 4 over 4 (81,920).
TEST(KvTransfer, SecondsByHand) {
  const model::ModelSpec m = Model("llama3-70b");
  EXPECT_DOUBLE_EQ(model::KvCacheBytesPerToken(m, hw::Dtype::kBf16), 327680);
  KvTransferLink link{50e9, 5e-6, "test"};
  // 2048 tokens x 81,920 bytes (the side with more per chip) / 50 GB/s.
  EXPECT_DOUBLE_EQ(KvTransferSeconds(2048, 81920, 40960, link),
                   5e-6 + 2048 * 81920 / 50e9);
  EXPECT_DOUBLE_EQ(KvTransferSeconds(2048, 40960, 81920, link),
                   KvTransferSeconds(2048, 81920, 40960, link));
  // The step cost models agree on the per-chip bytes.
  ServeConfig c;
  c.tp = 8;
  auto sc = StepCostModel::Create(m, System("h100:8x1"), c);
  ASSERT_TRUE(sc);
  EXPECT_DOUBLE_EQ(sc->KvBytesPerTokenPerChip(), 40960);
  // No network: nothing to wait for.
  EXPECT_EQ(KvTransferSeconds(2048, 81920, 40960, KvTransferLink{}), 0);
}

// Which link: NVLink when both pools fit one NVLink domain, else the NIC.
TEST(KvTransfer, LinkOfChip) {
  const hw::Chip& h100 = Chip("h100");
  KvTransferLink in = KvTransferLinkOf(h100, 8);
  EXPECT_EQ(in.name, h100.nvlink->name);
  EXPECT_DOUBLE_EQ(in.bytes_per_s_per_chip, h100.nvlink->bandwidth.si());
  KvTransferLink out = KvTransferLinkOf(h100, 16);
  EXPECT_DOUBLE_EQ(out.bytes_per_s_per_chip, h100.scale_out->bandwidth.si());
  EXPECT_DOUBLE_EQ(out.latency_s, h100.scale_out->latency.si());
  EXPECT_LT(out.bytes_per_s_per_chip, in.bytes_per_s_per_chip);
}

// Layer-by-layer overlap hides what the prefill covers: a link faster than
// the prefill leaves one layer's share; a slower one leaves its excess.
TEST(KvTransfer, LayerwiseOverlap) {
  EXPECT_DOUBLE_EQ(ExposedTransferSeconds(0.08, 1.0, 80, KvOverlap::kAfter),
                   0.08);
  EXPECT_DOUBLE_EQ(ExposedTransferSeconds(0.08, 1.0, 80, KvOverlap::kLayerwise),
                   0.001);
  EXPECT_DOUBLE_EQ(ExposedTransferSeconds(2.0, 1.0, 80, KvOverlap::kLayerwise),
                   2.0 - 1.0 * 79 / 80);
  EXPECT_FALSE(ParseKvOverlap("overlap", "kv_transfer"));
  EXPECT_TRUE(ParseKvOverlap("layerwise", "kv_transfer"));
}

struct Pools {
  StepCostModel prefill, decode;
};

Pools LlamaPools() {
  const model::ModelSpec m = Model("llama3-70b");
  ServeConfig c;
  c.prompt = 2048;
  c.output = 256;
  c.tp = 4;
  auto p = StepCostModel::Create(m, System("h100:4x1"), c);
  c.tp = 8;
  auto d = StepCostModel::Create(m, System("h100:8x1"), c);
  EXPECT_TRUE(p && d);
  return {*p, *d};
}

Workload Poisson(double rate, int n) {
  Workload w;
  w.rate_per_s = rate;
  w.requests = n;
  w.prompt = {LengthDist::kFixed, 2048};
  w.output = {LengthDist::kUniform, 64, 256};
  w.seed = 7;
  return w;
}

// With a network of unbounded bandwidth the service is the two pools
// simulated on their own: TTFT is the prefill pool's, each request's
// decode starts when its prefill ends, and its finish is the decode pool's.
TEST(Disaggregated, HugeNetworkIsPrefillThenDecode) {
  Pools pl = LlamaPools();
  SchedulerOptions sp, sd;
  sd.chunked_prefill = true;
  DisaggregatedPools pools{pl.prefill, 2, sp, pl.decode, 1, sd};
  pools.link = {std::numeric_limits<double>::max(), 0, "ideal"};
  const Workload w = Poisson(6, 300);
  auto r = SimulateDisaggregated(pools, w, {});
  ASSERT_TRUE(r && r->service.feasible) << r->service.reason;
  EXPECT_LT(r->kv_transfer_s.p99, 1e-12);
  // The prefill pool alone: the same requests, one output token each.
  Workload wp;
  wp.arrivals = Workload::kTrace;
  wp.trace = OpenLoopRequests(w);
  for (auto& q : wp.trace) q.output_tokens = 1;
  auto p = SimulateServing(pl.prefill, 2, wp, sp, {});
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(r->service.ttft_s.p50, p->ttft_s.p50);
  EXPECT_DOUBLE_EQ(r->service.ttft_s.p99, p->ttft_s.p99);
  // The decode pool alone on those prefill ends.
  std::vector<double> ready(wp.trace.size());
  for (const RequestSpan& s : p->request_spans) ready[s.id] = s.first_token_s;
  Workload wd;
  wd.arrivals = Workload::kTrace;
  const std::vector<TraceRequest> all = OpenLoopRequests(w);
  for (size_t i = 0; i < all.size(); ++i) {
    wd.trace.push_back({ready[i], all[i].prompt_tokens + 1,
                        all[i].output_tokens - 1, all[i].prompt_tokens});
  }
  auto d = SimulateServing(pl.decode, 1, wd, sd, {});
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(r->service.itl_s.p99, d->itl_s.p99);
  double last = 0;
  for (const RequestSpan& s : d->request_spans)
    last = std::max(last, s.finish_s);
  EXPECT_DOUBLE_EQ(r->service.duration_s, last - all.front().arrival_s);
  // TPOT: decode-pool time per token after the handoff.
  EXPECT_GT(r->service.tpot_s.p50, 0);
  EXPECT_LT(r->service.tpot_s.p50, 0.1);
}

// A slower network adds its exposed transfer to every TTFT and leaves the
// decode pool's share alone; Little's law holds on the service.
TEST(Disaggregated, TransferAddsToTtft) {
  Pools pl = LlamaPools();
  SchedulerOptions sp, sd;
  sd.chunked_prefill = true;
  DisaggregatedPools fast{pl.prefill, 2, sp, pl.decode, 1, sd};
  fast.link = {std::numeric_limits<double>::max(), 0, "ideal"};
  DisaggregatedPools slow = fast;
  slow.link = {1e10, 0, "10 GB/s"};  // 2048 x 81,920 B = 16.8 ms
  const Workload w = Poisson(2, 200);
  auto a = SimulateDisaggregated(fast, w, {});
  auto b = SimulateDisaggregated(slow, w, {});
  ASSERT_TRUE(a && b);
  const double x = 2048 * 81920 / 1e10;
  EXPECT_DOUBLE_EQ(b->kv_transfer_s.p50, x);
  EXPECT_NEAR(b->service.ttft_s.mean - a->service.ttft_s.mean, x, 1e-9);
  EXPECT_NEAR(b->service.mean_requests_in_system,
              b->service.requests_per_s * b->service.e2e_s.mean, 1e-9);
  // Layerwise: a 2048-token prefill of a 70B model on TP 4 (tens of ms)
  // outlasts the transfer, so one layer's share is left.
  slow.overlap = KvOverlap::kLayerwise;
  slow.layers = 80;
  auto c = SimulateDisaggregated(slow, w, {});
  ASSERT_TRUE(c);
  EXPECT_NEAR(c->kv_exposed_s.p50, x / 80, 1e-12);
}

// The request path (the prefill pool's front end) adds to every TTFT and
// E2E of the service once, not to the pools' own figures, and Little's law
// still holds on the service.
TEST(Disaggregated, RequestPathAddsOnce) {
  Pools pl = LlamaPools();
  SchedulerOptions sp, sd;
  sd.chunked_prefill = true;
  DisaggregatedPools a{pl.prefill, 2, sp, pl.decode, 1, sd};
  DisaggregatedPools b = a;
  b.prefill_scheduler.request_path_s = 0.02;
  b.decode_scheduler.request_path_s = 0.02;
  const Workload w = Poisson(2, 200);
  auto x = SimulateDisaggregated(a, w, {});
  auto y = SimulateDisaggregated(b, w, {});
  ASSERT_TRUE(x && y);
  EXPECT_NEAR(y->service.ttft_s.p50 - x->service.ttft_s.p50, 0.02, 1e-12);
  EXPECT_NEAR(y->service.e2e_s.mean - x->service.e2e_s.mean, 0.02, 1e-12);
  EXPECT_EQ(y->prefill_pool.ttft_s.p50, x->prefill_pool.ttft_s.p50);
  EXPECT_EQ(y->decode_pool.e2e_s.p50, x->decode_pool.e2e_s.p50);
  EXPECT_NEAR(y->service.mean_requests_in_system,
              y->service.requests_per_s * y->service.e2e_s.mean, 1e-9);
}

// FitClosedLoop against the exact closed loop of the aggregated simulator
// (which runs clients): the same requests, the open-loop stand-in at the
// rate that keeps C in the system. The figures are docs/model.md 7.7's.
TEST(ClosedLoop, StandInTracksTheExactClosedLoop) {
  const model::ModelSpec m = Model("llama3-70b");
  ServeConfig c;
  c.tp = 8;
  auto cost = StepCostModel::Create(m, System("h100:8x1"), c);
  ASSERT_TRUE(cost);
  SchedulerOptions s;
  s.chunked_prefill = true;
  for (int clients : {1, 8, 32, 128}) {
    Workload w = Poisson(1, 600);
    w.arrivals = Workload::kConcurrency;
    w.concurrency = clients;
    auto exact = SimulateServing(*cost, 1, w, s, {});
    ASSERT_TRUE(exact && exact->feasible);
    auto fit = FitClosedLoop(w, [&](const Workload& o) -> Result<double> {
      auto r = SimulateServing(*cost, 1, o, s, {});
      if (!r) return tl::unexpected(r.error());
      return r->mean_requests_in_system;
    });
    ASSERT_TRUE(fit) << fit.error().message;
    EXPECT_NEAR(fit->mean_in_system, clients, 0.01 * clients);
    auto open = SimulateServing(*cost, 1, fit->open, s, {});
    ASSERT_TRUE(open);
    auto rel = [](double a, double b) { return a / b - 1; };
    std::printf(
        "C=%d runs=%d rate=%.3f/s: TTFT p50 %+.1f%% p99 %+.1f%%, TPOT p50 "
        "%+.1f%% p99 %+.1f%%, E2E p50 %+.1f%%, throughput %+.1f%%\n",
        clients, fit->runs, fit->rate_per_s,
        100 * rel(open->ttft_s.p50, exact->ttft_s.p50),
        100 * rel(open->ttft_s.p99, exact->ttft_s.p99),
        100 * rel(open->tpot_s.p50, exact->tpot_s.p50),
        100 * rel(open->tpot_s.p99, exact->tpot_s.p99),
        100 * rel(open->e2e_s.p50, exact->e2e_s.p50),
        100 * rel(open->throughput_output_tokens_per_s,
                  exact->throughput_output_tokens_per_s));
    // Past saturation (128 clients: the queue the closed loop holds at
    // exactly C swings under clocked arrivals) only the throughput holds,
    // and less closely (-10.2% at 128 clients since the GEMM tile menu and
    // the elementwise kernels, 2026-12-04).
    if (clients <= 32) {
      EXPECT_NEAR(rel(open->tpot_s.p50, exact->tpot_s.p50), 0, 0.10);
      EXPECT_NEAR(rel(open->e2e_s.p50, exact->e2e_s.p50), 0, 0.10);
    }
    EXPECT_NEAR(rel(open->throughput_output_tokens_per_s,
                    exact->throughput_output_tokens_per_s),
                0, clients <= 32 ? 0.10 : 0.12);
  }
}

// Disaggregated --concurrency: the stand-in keeps C requests in the
// service, says so, and at most C requests all start at once.
TEST(Disaggregated, ClosedLoopByStandIn) {
  Pools pl = LlamaPools();
  SchedulerOptions sp, sd;
  sd.chunked_prefill = true;
  DisaggregatedPools pools{pl.prefill, 2, sp, pl.decode, 1, sd};
  pools.link = {5e10, 5e-6, "test"};
  Workload w = Poisson(1, 300);
  w.arrivals = Workload::kConcurrency;
  w.concurrency = 24;
  auto r = SimulateDisaggregated(pools, w, {});
  ASSERT_TRUE(r && r->service.feasible) << r.error().message;
  EXPECT_NEAR(r->service.mean_requests_in_system, 24, 0.24);
  EXPECT_GT(r->closed_loop_rate_per_s, 0);
  EXPECT_GT(r->closed_loop_runs, 1);
  ASSERT_FALSE(r->service.notes.empty());
  EXPECT_NE(r->service.notes.back().find("closed loop of 24 clients"),
            std::string::npos);
  EXPECT_EQ(r->service.requests, 300);
  w.requests = 10;
  auto all = SimulateDisaggregated(pools, w, {});
  ASSERT_TRUE(all && all->service.feasible);
  EXPECT_EQ(all->closed_loop_rate_per_s, 0);
  EXPECT_EQ(all->closed_loop_runs, 1);
  for (const RequestSpan& q : all->service.request_spans) {
    EXPECT_EQ(q.arrival_s, 0);
  }
  w.concurrency = 0;
  auto bad = SimulateDisaggregated(pools, w, {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "concurrency");
}

}  // namespace
}  // namespace scalemodel::estimate
