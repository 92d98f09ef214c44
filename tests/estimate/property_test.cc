// Property tests over random valid inputs (issue #17): results are finite
// and non-negative, MFU and HFU stay in their convention's range, more bytes
// never take less time, more chips never need more memory per chip for the
// same plan shape, and a serving estimate is never faster than its peak
// (the book's) bound. Seeds are fixed, so every run draws the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../testing/catalog.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::Model;
using scalemodel::testing::System;

// Models of every kind the catalog holds: dense, GQA, MoE, MLA, sliding
// windows.
const std::vector<std::string> kModels = {
    "llama3-8b",  "llama3-70b",  "mixtral-8x7b", "qwen3-30b-a3b",
    "gemma3-27b", "deepseek-v3", "gpt3-175b",    "llama2-7b"};

// GPU node counts and TPU slices of 8 to 256 chips.
const std::vector<std::string> kSystems = {
    "h100:8x1",      "h100:8x4",      "a100:8x2",      "b200:8x8",
    "h200:8x16",     "tpu-v5p:2x2x2", "tpu-v5p:4x4x4", "tpu-v5e:4x4",
    "tpu-v5e:16x16", "tpu-v4:4x4x8",  "tpu-v6e:8x8",   "gb200:72x2"};

bool Finite(double v) { return std::isfinite(v); }

// A random factorisation of `chips` into dp, fsdp, tp, pp (powers of two
// where `chips` allows: every system above has a power-of-two count, or
// 72 x n, whose odd factor goes to dp).
Parallelism RandomPlan(int chips, std::mt19937& rng) {
  Parallelism p;
  int left = chips;
  int* degrees[] = {&p.tp, &p.pp, &p.fsdp};
  for (int* d : degrees) {
    int steps = std::uniform_int_distribution<int>(0, 3)(rng);
    while (steps-- > 0 && left % 2 == 0) {
      *d *= 2;
      left /= 2;
    }
  }
  p.dp = left;
  p.zero = std::uniform_int_distribution<int>(0, 2)(rng);
  return p;
}

TrainingConfig RandomTraining(int chips, std::mt19937& rng) {
  TrainingConfig c;
  c.par = RandomPlan(chips, rng);
  const double seqs[] = {1024, 2048, 4096, 8192};
  c.seq = seqs[std::uniform_int_distribution<int>(0, 3)(rng)];
  // A whole number of sequences per replica, 1 to 8 of them.
  int replicas = c.par.dp * c.par.fsdp;
  c.batch_tokens =
      c.seq * replicas * std::uniform_int_distribution<int>(1, 8)(rng);
  const model::Remat remats[] = {model::Remat::kNone, model::Remat::kFull};
  c.memory.remat = remats[std::uniform_int_distribution<int>(0, 1)(rng)];
  if (c.par.pp > 1) c.layout.schedule = Schedule::k1F1B;
  c.tokens = 1e12;
  return c;
}

void ExpectTrainingSane(const TrainingEstimate& e, const std::string& what) {
  SCOPED_TRACE(what);
  if (!e.feasible) {
    EXPECT_FALSE(e.reason.empty());
    return;
  }
  const double times[] = {e.step_time.si(), e.compute.si(), e.exposed_comm.si(),
                          e.bubble.si(), e.other.si()};
  for (double t : times) {
    EXPECT_TRUE(Finite(t) && t >= 0) << t;
  }
  EXPECT_GT(e.step_time.si(), 0);
  const double bytes[] = {e.memory.params.si(),    e.memory.grads.si(),
                          e.memory.optimizer.si(), e.memory.activations.si(),
                          e.memory.other.si(),     e.memory.total.si()};
  for (double b : bytes) {
    EXPECT_TRUE(Finite(b) && b >= 0) << b;
  }
  EXPECT_TRUE(Finite(e.tokens_per_s) && e.tokens_per_s > 0);
  EXPECT_TRUE(Finite(e.time_to_train_s) && e.time_to_train_s > 0);
  EXPECT_TRUE(Finite(e.chip_hours) && e.chip_hours > 0);
  EXPECT_TRUE(std::isnan(e.cost_usd) ||
              (Finite(e.cost_usd) && e.cost_usd >= 0));
  EXPECT_GE(e.microbatches, 1);
  for (const CommItem& c : e.comms) {
    EXPECT_TRUE(Finite(c.time.si()) && c.time.si() >= 0) << c.kind;
    EXPECT_TRUE(Finite(c.exposed.si()) && c.exposed.si() >= 0) << c.kind;
  }
}

// Random valid training plans: finite, non-negative results; with bf16
// matmuls MFU and HFU are fractions of the bf16 peak, 0 < MFU <= HFU <= 1.
TEST(TrainingProperties, FiniteNonNegativeAndMfuInRange) {
  std::mt19937 rng(20261201);
  int estimated = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string& mname = kModels[rng() % kModels.size()];
    const std::string& sname = kSystems[rng() % kSystems.size()];
    hw::System sys = System(sname);
    TrainingConfig c = RandomTraining(sys.num_chips(), rng);
    c.mode = (rng() % 4 == 0) ? Mode::kPeak : Mode::kRealistic;
    auto e = EstimateTraining(Model(mname), sys, c);
    if (!e) continue;  // tp not dividing the heads, and the like
    ++estimated;
    std::string what = mname + " on " + sname + " " + c.par.ToString();
    ExpectTrainingSane(*e, what);
    if (!e->feasible) continue;
    EXPECT_GT(e->mfu, 0) << what;
    EXPECT_LE(e->mfu, e->hfu * (1 + 1e-12)) << what;
    EXPECT_LE(e->hfu, 1.0) << what;
  }
  // The draw must exercise the estimate, not only its refusals.
  EXPECT_GE(estimated, 200);
}

// With fp8 matmuls MFU against fp8's own peak (--mfu-basis dtype) is at
// most 1; against the bf16 peak (the default) at most fp8 / bf16 peak.
TEST(TrainingProperties, Fp8MfuWithinItsBasis) {
  std::mt19937 rng(17);
  int estimated = 0;
  const std::vector<std::string> fp8_systems = {"h100:8x4", "b200:8x8",
                                                "h200:8x16"};
  for (int i = 0; i < 120; ++i) {
    const std::string& mname = kModels[rng() % kModels.size()];
    const std::string& sname = fp8_systems[rng() % fp8_systems.size()];
    hw::System sys = System(sname);
    TrainingConfig c = RandomTraining(sys.num_chips(), rng);
    c.precision.matmul = hw::Dtype::kFp8;
    c.mode = (rng() % 2) ? Mode::kPeak : Mode::kRealistic;
    for (MfuBasis basis : {MfuBasis::kBf16, MfuBasis::kDtype}) {
      c.precision.mfu_basis = basis;
      auto e = EstimateTraining(Model(mname), sys, c);
      if (!e || !e->feasible) continue;
      ++estimated;
      double cap = basis == MfuBasis::kDtype
                       ? 1.0
                       : sys.chip.Peak(hw::Dtype::kFp8).si() /
                             sys.chip.Peak(hw::Dtype::kBf16).si();
      EXPECT_GT(e->mfu, 0) << mname << " " << sname;
      EXPECT_LE(e->hfu, cap * (1 + 1e-12)) << mname << " " << sname;
      EXPECT_LE(e->mfu, e->hfu * (1 + 1e-12));
    }
  }
  EXPECT_GE(estimated, 60);
}

// A TPU slice of `chips` (a power of two) as near a cube as it gets:
// 8 -> "2x2x2", 32 -> "4x4x2".
std::string TpuShape(int chips) {
  int d[3] = {1, 1, 1};
  for (int i = 0; chips > 1; chips /= 2, i = (i + 1) % 3) d[i] *= 2;
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
         std::to_string(d[2]);
}

// The same plan shape on twice the chips (fsdp doubled, the global batch
// kept) never needs more memory per chip.
TEST(TrainingProperties, MoreChipsNeverMoreMemoryPerChip) {
  std::mt19937 rng(5);
  int compared = 0;
  for (int i = 0; i < 150; ++i) {
    const std::string& mname = kModels[rng() % kModels.size()];
    bool tpu = rng() % 2 == 0;
    int tp = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    int fsdp = 1 << std::uniform_int_distribution<int>(0, 4)(rng);
    TrainingConfig c;
    c.seq = 4096;
    c.batch_tokens = c.seq * 512;
    c.par.tp = tp;
    c.par.fsdp = fsdp;
    c.memory.remat = (rng() % 2) ? model::Remat::kFull : model::Remat::kNone;
    auto system_for = [&](int chips) {
      return tpu ? System("tpu-v5p:" + TpuShape(chips))
                 : System("h100:" + std::to_string(std::min(chips, 8)) + "x" +
                          std::to_string(std::max(1, chips / 8)));
    };
    auto small = EstimateTraining(Model(mname), system_for(tp * fsdp), c);
    c.par.fsdp *= 2;
    auto large = EstimateTraining(Model(mname), system_for(tp * fsdp * 2), c);
    if (!small || !large) continue;
    ++compared;
    EXPECT_LE(large->memory.total.si(), small->memory.total.si() * (1 + 1e-9))
        << mname << (tpu ? " tpu-v5p" : " h100") << " tp=" << tp
        << " fsdp=" << fsdp << " -> " << 2 * fsdp;
    EXPECT_LE(large->memory.params.si(),
              small->memory.params.si() * (1 + 1e-9));
    EXPECT_LE(large->memory.optimizer.si(),
              small->memory.optimizer.si() * (1 + 1e-9));
  }
  EXPECT_GE(compared, 75);
}

// More bytes never take less time: every collective on random axes of
// random systems, in both modes.
TEST(CollectiveProperties, MoreBytesNeverFaster) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> log_bytes(3, 12);
  const net::Collective ops[] = {
      net::Collective::kAllGather, net::Collective::kReduceScatter,
      net::Collective::kAllReduce, net::Collective::kAllToAll,
      net::Collective::kPermute};
  for (int i = 0; i < 500; ++i) {
    hw::System sys = System(kSystems[rng() % kSystems.size()]);
    std::vector<std::string> axes;
    for (const hw::PhysicalAxis& a : sys.axes) {
      if (rng() % 2 == 0) axes.push_back(a.name);
    }
    if (axes.empty()) axes.push_back(sys.axes.front().name);
    net::Collective op = ops[rng() % 5];
    net::CollectiveOptions opt;
    opt.mode = (rng() % 2) ? net::Mode::kPeak : net::Mode::kRealistic;
    double b1 = std::pow(10, log_bytes(rng));
    double b2 = b1 * (1 + std::uniform_real_distribution<double>(0, 10)(rng));
    auto t1 = net::EstimateCollective(sys, op, units::Bytes(b1), axes, opt);
    auto t2 = net::EstimateCollective(sys, op, units::Bytes(b2), axes, opt);
    ASSERT_TRUE(t1 && t2) << sys.id;
    EXPECT_TRUE(Finite(t1->time.si()) && t1->time.si() >= 0);
    EXPECT_LE(t1->time.si(), t2->time.si() * (1 + 1e-12))
        << sys.id << " " << net::CollectiveName(op) << " " << b1 << " -> "
        << b2;
  }
}

// More bytes (and more FLOPs) never take less time on the roofline.
TEST(RooflineProperties, MoreWorkNeverFaster) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> log_v(3, 15);
  for (int i = 0; i < 1000; ++i) {
    const hw::Chip& chip = System(kSystems[rng() % kSystems.size()]).chip;
    units::FlopsPerSecond peak = chip.Peak(hw::Dtype::kBf16);
    double f = std::pow(10, log_v(rng));
    double b1 = std::pow(10, log_v(rng));
    double b2 = b1 * (1 + std::uniform_real_distribution<double>(0, 10)(rng));
    auto r1 = roofline::Evaluate(units::Flops(f), units::Bytes(b1), peak,
                                 chip.hbm_bandwidth);
    auto r2 = roofline::Evaluate(units::Flops(f), units::Bytes(b2), peak,
                                 chip.hbm_bandwidth);
    auto r3 = roofline::Evaluate(units::Flops(2 * f), units::Bytes(b1), peak,
                                 chip.hbm_bandwidth);
    EXPECT_TRUE(Finite(r1.t_lower.si()) && r1.t_lower.si() > 0);
    EXPECT_LE(r1.t_lower.si(), r2.t_lower.si());
    EXPECT_LE(r1.t_upper.si(), r2.t_upper.si());
    EXPECT_LE(r1.t_lower.si(), r3.t_lower.si());
    EXPECT_LE(r1.t_lower.si(), r1.t_upper.si());
    EXPECT_LE(r1.achieved.si(), peak.si() * (1 + 1e-12));
  }
}

// Serving: finite, non-negative results, and the realistic time per output
// token never below the peak-mode one (the book's bound) for the same
// model, system, sharding and batch.
TEST(ServingProperties, TpotNeverBelowPeakBound) {
  std::mt19937 rng(29);
  int compared = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string& mname = kModels[rng() % kModels.size()];
    const std::string& sname = kSystems[rng() % kSystems.size()];
    hw::System sys = System(sname);
    ServeConfig c;
    int chips = sys.num_chips();
    c.tp = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    if (chips % c.tp != 0) c.tp = 1;
    c.dp = chips / c.tp;
    c.batch = 1 << std::uniform_int_distribution<int>(0, 7)(rng);
    c.prompt = 1 << std::uniform_int_distribution<int>(7, 14)(rng);
    c.output = 1 << std::uniform_int_distribution<int>(4, 11)(rng);
    c.mode = Mode::kRealistic;
    auto real = EstimateServing(Model(mname), sys, c);
    c.mode = Mode::kPeak;
    auto peak = EstimateServing(Model(mname), sys, c);
    if (!real || !peak) continue;
    std::string what = mname + " on " + sname + " tp=" + std::to_string(c.tp) +
                       " batch=" + std::to_string(c.batch);
    for (const ServeEstimate* e : {&*real, &*peak}) {
      const double v[] = {e->prefill_time.si(), e->ttft.si(),
                          e->decode_step.si(),  e->request_latency.si(),
                          e->tokens_per_s,      e->total_bytes.si()};
      for (double x : v) EXPECT_TRUE(Finite(x) && x >= 0) << what << " " << x;
    }
    if (!real->feasible || !peak->feasible) continue;
    ++compared;
    EXPECT_GE(real->decode_step.si(), peak->decode_step.si() * (1 - 1e-12))
        << what;
    EXPECT_GE(real->ttft.si(), peak->ttft.si() * (1 - 1e-12)) << what;
  }
  EXPECT_GE(compared, 100);
}

}  // namespace
}  // namespace scalemodel::estimate
