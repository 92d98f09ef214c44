#include "scalemodel/estimate/inference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "../testing/catalog.h"
#include "scalemodel/ingest/hf_config.h"

namespace scalemodel::estimate {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::Chip;
using scalemodel::testing::Model;
using scalemodel::testing::System;

void ExpectRel(double got, double want, double tol, const std::string& what) {
  EXPECT_LE(std::fabs(got / want - 1), std::max(tol, 1e-9))
      << what << ": got " << got << ", want " << want;
}

// inference-llama2-13b-*: LLaMA-2 13B on a v5e 2x4 (8 chips), 8192-token
// context, memory-bound decode: T = (params + B KV) / (n W). The GQA rows use
// the book's hypothetical 5x smaller cache (K = 8).
TEST(BookInference, Llama2_13bDecode) {
  model::ModelSpec mha = Model("llama2-13b");
  struct Case {
    const model::ModelSpec* m;
    double batch, step_ms, tokens_per_s;
  } cases[] = {{&mha, 1, 4.985, 200.6},
               {&mha, 8, 12.13, 659.3},
               {&mha, 16, 20.3, 788.0},
               {&mha, 240, 249.1, 963.5}};
  // The GQA rows keep the MHA weights (26 GB) with a 5x smaller cache
  // (1.34 GB per sequence): the book's formula with its inputs.
  struct Gqa {
    double batch, step_ms;
  } gqa[] = {{1, 4.168}, {8, 5.598}, {32, 10.5}, {64, 17.04}};
  for (const Gqa& g : gqa) {
    double step =
        BookDecodeStep(g.batch, 1.34e9, 13e9, 26e9, 8, 1.97e14, 8.2e11);
    ExpectRel(step * 1e3, g.step_ms, 0.01, "gqa step_time_ms");
  }
  for (const Case& c : cases) {
    ServeConfig cfg;
    cfg.tp = 8;
    cfg.batch = c.batch;
    cfg.prompt = 8191;  // mean context prompt + output/2 = 8192
    cfg.output = 2;
    cfg.mode = Mode::kPeak;
    auto e = EstimateServing(*c.m, System("tpu-v5e:2x4"), cfg);
    ASSERT_TRUE(e.has_value()) << e.error().ToString();
    std::string what = "mha bs" + std::to_string(int(c.batch));
    ExpectRel(e->decode_step.si() * 1e3, c.step_ms, 0.01,
              what + " step_time_ms");
    ExpectRel(c.batch / e->decode_step.si(), c.tokens_per_s, 0.01,
              what + " throughput");
  }
}

// inference-popquiz-30b-v5e-4x4: 30e9 int8 parameters on 16 v5e, 100 kB KV
// per token at 8192: memory-bound at batch 4, compute-bound weights at 256.
TEST(BookInference, PopQuiz30b) {
  double c = 1.97e14, w = 8.2e11, kv = 100e3 * 8192;
  ExpectRel(BookDecodeStep(4, kv, 30e9, 30e9, 16, c, w) * 1e3, 2.54, 0.03,
            "batch 4");
  ExpectRel(BookDecodeStep(256, kv, 30e9, 30e9, 16, c, w) * 1e3, 20.9, 0.03,
            "batch 256");
  // inference-q3-param-load: 18.4 GB of weights over 16 chips.
  ExpectRel(BookDecodeStep(1e-9, 0, 0, 18.4e9, 16, c, w) * 1e3, 1.4, 0.03,
            "t_ms");
}

// inference-q2-max-batch-128k: 16 v5e (256 GB), 18.4 GB of weights, 128K
// context at 262 kB per token: 7 sequences fit; with one KV head, 56.
TEST(BookInference, MaxBatch) {
  model::ModelSpec m = Model("llama3-8b");  // shape only; fields set below
  m.num_layers = 64;
  m.d_model = 4096;
  m.ffn = 16384;
  m.num_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 256;
  m.vocab = 32128;
  m.tied_embeddings = true;
  ServeConfig cfg;
  cfg.tp = 16;
  cfg.prompt = 128000 - 1;
  cfg.output = 1;
  cfg.weights = hw::Dtype::kInt8;
  cfg.kv = hw::Dtype::kInt8;
  cfg.mode = Mode::kPeak;
  hw::System sys = System("tpu-v5e:4x4");
  sys.chip.hbm_capacity = units::Bytes(16e9);
  auto e = EstimateServing(m, sys, cfg);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  ExpectRel(model::KvCacheBytesPerToken(m, hw::Dtype::kInt8) * 128000, 33.54e9,
            0.01, "kv_bytes_per_seq");
  EXPECT_EQ(e->max_batch, 7);
  m.num_kv_heads = 1;
  e = EstimateServing(m, sys, cfg);
  EXPECT_EQ(e->max_batch, 56);
  // A batch over the maximum is a result with a reason, not an error.
  m.num_kv_heads = 8;
  cfg.batch = 8;
  e = EstimateServing(m, sys, cfg);
  EXPECT_FALSE(e->feasible);
  EXPECT_NE(e->reason.find("the largest batch that fits is 7"),
            std::string::npos);
}

// The engine's memory fraction (SGLang --mem-fraction-static, vLLM
// --gpu-memory-utilization) gives weights and KV cache that fraction of the
// device's memory as its driver reports it (B200: 183,359 MiB, not the
// datasheet's 180 GB): DeepSeek-V3 fp8 on 4 B200 at InferenceX's 0.95
// holds 32 sequences of 8,275 tokens, which the default rule (95% of 180
// GB) does not; a fraction outside (0, 1] is an error naming the flag.
TEST(ServeMemory, EngineMemoryFractionOfTheDeviceTotal) {
  const model::ModelSpec m = Model("deepseek-v3");
  hw::System sys = System("b200:4x1");
  EXPECT_DOUBLE_EQ(sys.chip.DeviceMemory().si(), 183359.0 * (1 << 20));
  ServeConfig cfg;
  cfg.tp = 4;
  cfg.weights = hw::Dtype::kFp8;
  cfg.kv = hw::Dtype::kFp8;
  cfg.batch = 32;
  cfg.prompt = 7350;
  cfg.output = 925;
  auto dflt = EstimateServing(m, sys, cfg);
  ASSERT_TRUE(dflt.has_value()) << dflt.error().ToString();
  EXPECT_FALSE(dflt->feasible);
  cfg.memory_fraction = 0.95;
  auto e = EstimateServing(m, sys, cfg);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_TRUE(e->feasible) << e->reason;
  EXPECT_DOUBLE_EQ(e->capacity_bytes.si(), 183359.0 * (1 << 20));
  const double kv_seq = e->kv_cache_bytes.si() / cfg.batch;
  EXPECT_EQ(e->max_batch,
            std::floor((0.95 * 183359.0 * (1 << 20) - e->weights_bytes.si()) /
                       kv_seq));
  cfg.memory_fraction = 0.82;
  e = EstimateServing(m, sys, cfg);
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->feasible);
  EXPECT_NE(e->reason.find("0.82 of the device's"), std::string::npos)
      << e->reason;
  // TensorRT-LLM's rule: the KV cache gets 0.75 of what the weights and
  // the 5% allowance leave of the device total.
  cfg.memory_fraction = 0;
  cfg.kv_free_fraction = 0.75;
  e = EstimateServing(m, sys, cfg);
  ASSERT_TRUE(e.has_value());
  const double device = 183359.0 * (1 << 20);
  EXPECT_EQ(
      e->max_batch,
      std::floor(0.75 * (0.95 * device - e->weights_bytes.si()) / kv_seq));
  cfg.memory_fraction = 0.9;
  EXPECT_FALSE(EstimateServing(m, sys, cfg).has_value());  // both rules
  cfg.kv_free_fraction = 0;
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    cfg.memory_fraction = bad;
    auto err = EstimateServing(m, sys, cfg);
    ASSERT_FALSE(err.has_value()) << bad;
    EXPECT_NE(err.error().ToString().find("--mem-fraction"), std::string::npos);
  }
}

// llama3-70b-kv-per-token, -min-topology, -qps-per-chip-*, -prefill-time,
// -disaggregation-ratio, -kv-eviction, llama3-serving-flops-per-dollar.
TEST(BookInference, Llama3_70bServing) {
  model::ModelSpec m = Model("llama3-70b");
  EXPECT_EQ(model::KvCacheBytesPerToken(m, hw::Dtype::kInt8), 163840);
  ExpectRel(model::KvCacheBytes(m, 32768, hw::Dtype::kInt8), 5.243e9, 0.03,
            "32k");
  ExpectRel(240 * model::KvCacheBytes(m, 32768, hw::Dtype::kInt8), 1.258e12,
            0.03, "bs240");
  // Min topology: raw chips = bytes / 16 GB; leftover on the power-of-two
  // slice; 43 caches of 8192 tokens in each dtype.
  struct Row {
    hw::Dtype d;
    double raw, slice, free, caches;
  } rows[] = {{hw::Dtype::kBf16, 8.75, 16, 116e9, 43},
              {hw::Dtype::kInt8, 4.375, 8, 58e9, 43},
              {hw::Dtype::kInt4, 2.1875, 4, 29e9, 43}};
  for (const Row& r : rows) {
    double bytes = 70e9 * hw::BytesPerElement(r.d);
    ExpectRel(bytes / 16e9, r.raw, 0.01, "chips_raw");
    EXPECT_EQ(std::pow(2, std::ceil(std::log2(bytes / 16e9))), r.slice);
    double free = r.slice * 16e9 - bytes;
    ExpectRel(free, r.free, 0.01, "free_bytes");
    double per_cache = 8192.0 * 324000 * hw::BytesPerElement(r.d) / 2;
    EXPECT_EQ(std::floor(free / per_cache), r.caches);
  }
  // Throughput per chip: B / (step x decode tokens x chips).
  ExpectRel(43 / (0.019 * 512 * 8), 0.553, 0.03, "qps int8");
  ExpectRel(43 / (0.019 * 512 * 4), 1.11, 0.03, "qps int4");
  ExpectRel(140 / (0.019 * 512 * 16), 0.899, 0.03, "qps int8 4x4");
  // Prefill at 40% MFU on 16 v5e: 2 x 70e9 x 8192 / (16 x 1.97e14 x 0.4).
  ExpectRel(2 * 70e9 * 8192 /
                (16 * Chip("tpu-v5e").Peak(hw::Dtype::kBf16).si() * 0.4),
            0.91, 0.02, "prefill t_s");
  ExpectRel(PrefillToDecodeRatio(0.91, 32, 0.019, 512), 2.99, 0.02,
            "P/G ratio");
  // Continuous batching: B / G sequences finish per step.
  EXPECT_DOUBLE_EQ(32.0 / 4096, 0.0078125);
  EXPECT_DOUBLE_EQ(32.0 * (8192 + 4096) / 4096, 96);
  // FLOPs per dollar at the book's prices: the TPUs' are the catalog's
  // (Google Cloud, 2025-02); the book's H100 price is Google Cloud A3's
  // $10.80, the catalog's is AWS on-demand (one cloud per chip, issue #16).
  for (auto [id, want, usd] :
       {std::tuple<const char*, double, double>{"h100", 3.3e17, 10.80},
        {"tpu-v5p", 3.93e17, 0},
        {"tpu-v5e", 5.91e17, 0}}) {
    const hw::Chip& c = Chip(id);
    const double price = usd > 0 ? usd : c.price->usd_per_chip_hour;
    ExpectRel(c.Peak(hw::Dtype::kBf16).si() * 3600 / price, want, 0.03, id);
  }
}

// llama3-70b-4x8-sharding and inference-decode-tp-limit: per-matmul times
// and the TP limits for batch 64 on a v5e 4x8.
TEST(BookInference, TensorParallelLimits) {
  double B = 64, D = 8192, F = 28672, W = 9e10, Whbm = 8.2e11, C = 1.97e14;
  ExpectRel(2 * F / 2200, 26.1, 0.05, "Y_compute_bound_limit");
  // The book rounds beta = W_hbm / W_ici to 8 on v5e (8.2e11 / 9e10 = 9.1).
  ExpectRel(F / (B * 8), 56, 0.05, "Y_memory_bound_limit");
  EXPECT_NEAR(Whbm / W, 9.1, 0.05);
  ExpectRel(2 * B * D / W * 1e6, 11.7, 0.05, "t_ici_us");
  ExpectRel(2 * D * F / (32 * Whbm) * 1e6, 17.9, 0.05, "t_hbm_us");
  ExpectRel(2 * B * D * F / (32 * C) * 1e6, 4.77, 0.05, "t_math_us");
  EXPECT_DOUBLE_EQ(16384.0 / (32 * 8), 64);  // Y_max = F / (B beta)
  // inference-q7-2d-weight-stationary.
  ExpectRel(128 * 0.75 * 0.75, 72, 0.01, "N_threshold");
  ExpectRel(std::sqrt(128.0), 11.31, 0.01, "comm constant");
  EXPECT_DOUBLE_EQ(std::sqrt(128 / 8.0), 4);
  EXPECT_DOUBLE_EQ(std::sqrt(8 * 128.0), 32);
}

// Properties: max batch is the largest that fits; realistic is slower than
// peak; more batch never lowers throughput below memory-bound limits.
TEST(InferenceTest, MaxBatchIsLargestThatFits) {
  model::ModelSpec m = Model("llama3-8b");
  ServeConfig cfg;
  cfg.prompt = 2048;
  cfg.output = 512;
  auto e = EstimateServing(m, System("h100:1x1"), cfg);
  ASSERT_TRUE(e.has_value());
  cfg.batch = e->max_batch;
  EXPECT_TRUE(EstimateServing(m, System("h100:1x1"), cfg)->feasible);
  cfg.batch = e->max_batch + 1;
  EXPECT_FALSE(EstimateServing(m, System("h100:1x1"), cfg)->feasible);
}

TEST(InferenceTest, RealisticSlowerThanPeakAndErrors) {
  model::ModelSpec m = Model("llama3-70b");
  for (double b : {1.0, 16.0, 128.0}) {
    ServeConfig cfg;
    cfg.tp = 8;
    cfg.batch = b;
    auto r = EstimateServing(m, System("h100:8x1"), cfg);
    cfg.mode = Mode::kPeak;
    auto p = EstimateServing(m, System("h100:8x1"), cfg);
    EXPECT_GT(r->decode_step, p->decode_step);
    EXPECT_GE(r->tokens_per_s, 0);
  }
  ServeConfig bad;
  bad.tp = 3;
  bad.dp = 1;
  EXPECT_EQ(EstimateServing(m, System("h100:3x1"), bad).error().message,
            "tensor_parallel=3 does not divide num_heads=64");
  bad.tp = 4;
  EXPECT_EQ(EstimateServing(m, System("h100:8x1"), bad).error().message,
            "tp*ep*pp*dp = 4 but h100:8x1 has 8 chips");
}

}  // namespace
}  // namespace scalemodel::estimate
