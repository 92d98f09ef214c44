#include "scalemodel/model/transformer.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/roofline/roofline.h"

namespace scalemodel::model {
namespace {

using scalemodel::testing::BuiltinCatalog;
using scalemodel::testing::Chip;

ModelSpec Catalog(const std::string& id) {
  auto m = ingest::FindModel(BuiltinCatalog(), id);
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  return m.has_value() ? m->spec : ModelSpec{};
}

void ExpectRel(double got, double want, double tol, const std::string& what) {
  EXPECT_LE(std::fabs(got / want - 1), std::max(tol, 1e-9))
      << what << ": got " << got << ", want " << want;
}

// Official parameter counts (model cards; DeepSeek-V3 report without the MTP
// module), within the 0.5%.
TEST(ParamsTest, OfficialCounts) {
  struct Case {
    const char* id;
    double total, active;
  };
  for (const Case& c :
       {Case{"llama3-8b", 8.03e9, 8.03e9}, Case{"llama3-70b", 70.55e9, 70.55e9},
        Case{"llama3-405b", 405.85e9, 405.85e9},
        Case{"mixtral-8x7b", 46.7e9, 12.9e9},
        Case{"deepseek-v3", 671e9, 37e9}}) {
    ParamCounts p = CountParams(Catalog(c.id));
    ExpectRel(p.total, c.total, 0.005, std::string(c.id) + " total");
    // DeepSeek reports "37B activated"; our count is 37.6e9 (1.7% above the
    // rounded figure), so active params get 2% there.
    ExpectRel(p.active, c.active,
              std::string(c.id) == "deepseek-v3" ? 0.02 : 0.005,
              std::string(c.id) + " active");
  }
}

TEST(KvCacheTest, PerToken) {
  // Llama 3 70B, bf16: 2 x 8 x 128 x 80 x 2 = 327,680 bytes.
  EXPECT_DOUBLE_EQ(
      KvCacheBytesPerToken(Catalog("llama3-70b"), hw::Dtype::kBf16), 327680);
  // DeepSeek-V3 latent cache: (512 + 64) x 61 x 2 = 70,272 bytes.
  EXPECT_DOUBLE_EQ(
      KvCacheBytesPerToken(Catalog("deepseek-v3"), hw::Dtype::kBf16), 70272);
  // Gemma 2 alternates local (4096) and global layers: at 32K context the
  // local half holds 4096 tokens.
  ModelSpec g = Catalog("gemma2-27b");
  double per_layer = 2.0 * 16 * 128 * 2;
  EXPECT_DOUBLE_EQ(KvCacheBytes(g, 32768, hw::Dtype::kBf16),
                   per_layer * (23 * 32768.0 + 23 * 4096.0));
}

TEST(FlopsTest, SixNPlusAttention) {
  ModelSpec m = Catalog("llama3-70b");
  ParamCounts p = CountParams(m);
  // Training = 3 x forward; forward = 2 x matmul params + attention.
  double attn = AttentionFlopsPerToken(m, 8192);
  EXPECT_DOUBLE_EQ(TrainFlopsPerToken(m, 8192),
                   3 * (2 * p.matmul_active + attn));
  // Causal halving: the full convention counts (about) twice the attention.
  double full = AttentionFlopsPerToken(m, 8192, AttentionFlops::kFull);
  ExpectRel(full / attn, 2 * 8192.0 / 8193, 1e-12, "full / causal");
  // 2 N (H + H) per key per layer: 80 x 2 x 64 x 256 x 8192 full.
  EXPECT_DOUBLE_EQ(full, 80.0 * 2 * 64 * 256 * 8192);
  // MoE: FLOPs follow active, not total, parameters.
  ModelSpec mx = Catalog("mixtral-8x7b");
  EXPECT_LT(ForwardFlopsPerToken(mx, 1), 2.1 * CountParams(mx).active);
}

TEST(ActivationsTest, PoliciesOrderAndRecompute) {
  for (const char* id :
       {"llama3-70b", "deepseek-v3", "mixtral-8x7b", "gpt3-175b"}) {
    SCOPED_TRACE(id);
    ModelSpec m = Catalog(id);
    ActivationCost none = Activations(m, Remat::kNone, 4096);
    ActivationCost sel = Activations(m, Remat::kSelective, 4096);
    ActivationCost mm = Activations(m, Remat::kSaveMatmulOutputs, 4096);
    ActivationCost dot = Activations(m, Remat::kSaveDotExceptMlpIn, 4096);
    ActivationCost full = Activations(m, Remat::kFull, 4096);
    EXPECT_GT(none.bytes_per_token_per_layer, sel.bytes_per_token_per_layer);
    EXPECT_GT(sel.bytes_per_token_per_layer, mm.bytes_per_token_per_layer);
    EXPECT_GT(mm.bytes_per_token_per_layer, dot.bytes_per_token_per_layer);
    EXPECT_GT(dot.bytes_per_token_per_layer, full.bytes_per_token_per_layer);
    // save-dot-except-mlp-in recomputes what save-matmul-outputs does plus
    // the MLP input projections: less than the full forward.
    EXPECT_GT(dot.recompute_flops_per_token, mm.recompute_flops_per_token);
    EXPECT_LT(dot.recompute_flops_per_token, full.recompute_flops_per_token);
    EXPECT_DOUBLE_EQ(full.bytes_per_token_per_layer, 2.0 * m.d_model);
    EXPECT_EQ(none.recompute_flops_per_token, 0);
    // Full remat reruns the forward: training goes from ~6N to ~8N.
    double ratio =
        (TrainFlopsPerToken(m, 4096) + full.recompute_flops_per_token) /
        TrainFlopsPerToken(m, 4096);
    ExpectRel(ratio, 4.0 / 3, 0.02, "full remat FLOPs multiplier");
  }
  EXPECT_EQ(*ParseRemat("attention-only"), Remat::kSelective);
  EXPECT_EQ(ParseRemat("ful").error().message,
            "unknown remat policy 'ful' (did you mean 'full'?); expected none, "
            "selective, save-matmul-outputs, save-dot-except-mlp-in or full");
  EXPECT_EQ(*ParseRemat("save_dot_except_mlpwi"), Remat::kSaveDotExceptMlpIn);
  // Llama 3 70B: w1 and w3 outputs are 2 x 28672 elements per token per
  // layer; their GEMMs 2 x 8192 x 2 x 28672 FLOPs per token per layer.
  ModelSpec l = Catalog("llama3-70b");
  ActivationCost mm = Activations(l, Remat::kSaveMatmulOutputs, 4096);
  ActivationCost dot = Activations(l, Remat::kSaveDotExceptMlpIn, 4096);
  EXPECT_DOUBLE_EQ(mm.bytes_per_token_per_layer - dot.bytes_per_token_per_layer,
                   2.0 * 2 * 28672);
  EXPECT_DOUBLE_EQ(dot.recompute_flops_per_token - mm.recompute_flops_per_token,
                   80.0 * 2 * 8192 * 2 * 28672);
}

// ---- Book vectors (shared/reference/book-vectors.json, topic
// transformer-math), copied with their ids.

ModelSpec Shape(int layers, long d, long f, int n, int k, int h, long v,
                bool tied) {
  ModelSpec m;
  m.id = "book";
  m.num_layers = layers;
  m.d_model = d;
  m.ffn = f;
  m.num_heads = n;
  m.num_kv_heads = k;
  m.head_dim = h;
  m.vocab = v;
  m.tied_embeddings = tied;
  return m;
}

// transformers-q1-param-count: L=64, D=4096, F=16384, V=32000, MHA, untied,
// gated MLP: 17.44e9 params, attention a quarter of each layer.
TEST(BookTransformer, ParamCount) {
  ModelSpec m = Shape(64, 4096, 16384, 32, 32, 128, 32000, false);
  ParamCounts p = CountParams(m);
  ExpectRel(p.total, 17.44e9, 0.02, "total_params");
  ExpectRel(p.attention / (p.attention + p.mlp), 0.25, 0.02,
            "attention_fraction");
}

// inference-q1-params-kv: GQA with H = 256 (N H != D), tied, int8 KV.
TEST(BookTransformer, ParamsAndKv) {
  ModelSpec m = Shape(64, 4096, 16384, 32, 8, 256, 32128, true);
  ExpectRel(CountParams(m).total, 18.39e9, 0.01, "total_params");
  EXPECT_DOUBLE_EQ(KvCacheBytesPerToken(m, hw::Dtype::kInt8), 262144);
}

// transformers-kv-cache-8k and transformers-q1-kv-per-token (MHA, int8).
TEST(BookTransformer, KvCache) {
  ModelSpec m = Shape(64, 4096, 16384, 32, 32, 128, 32000, false);
  EXPECT_DOUBLE_EQ(KvCacheBytesPerToken(m, hw::Dtype::kInt8), 524288);
  ModelSpec wide = Shape(64, 8192, 32768, 64, 64, 128, 32000, false);
  EXPECT_DOUBLE_EQ(KvCacheBytes(wide, 8192, hw::Dtype::kInt8), 8589934592.0);
}

// training-q1-llama2-13b-params: FFW 8.493e9, attention 4.194e9, vocab
// 327.7e6, total 13.02e9, from the catalog's Llama 2 13B config.
TEST(BookTransformer, Llama2_13b) {
  ParamCounts p = CountParams(Catalog("llama2-13b"));
  ExpectRel(p.mlp, 8.493e9, 0.02, "ffw_params");
  ExpectRel(p.attention, 4.194e9, 0.02, "attention_params");
  ExpectRel(p.embedding + p.unembedding, 327.7e6, 0.02, "vocab_params");
  ExpectRel(p.total, 13.02e9, 0.02, "total_params");
}

// transformers-deepseek-sparsity and transformers-q8-moe-bcrit-deepseek: the
// MoE critical batch is the dense one (120 on v5e, int8 weights, bf16
// compute) times E/k = 32.
TEST(BookTransformer, DeepSeekSparsityAndCriticalBatch) {
  ModelSpec m = Catalog("deepseek-v3");
  double sparsity = static_cast<double>(m.moe.num_experts) / m.moe.top_k;
  EXPECT_EQ(sparsity, 32);
  auto dense = roofline::AnalyzeMatmul(
      Chip("tpu-v5e"), {1, 7168, 2048},
      {.activations = hw::Dtype::kBf16, .weights = hw::Dtype::kInt8});
  ExpectRel(dense->critical_batch * sparsity, 3840, 0.01, "B_crit_tokens");
}

// transformers-q4-attn-intensity-prefill: the book's answer is S = 240, but
// its own formula (I = TG/(G+1) for prefill; MHA: T/2) crosses v5e's 240 at
// T = 480, which the inference chapter also says. The vector is marked low
// confidence; we follow the formula and record the disagreement here.
TEST(BookTransformer, AttentionIntensityPrefill) {
  EXPECT_DOUBLE_EQ(AttentionIntensity(480, 480, 1), 240);
  EXPECT_NEAR(AttentionIntensity(1, 8192, 8), 8, 0.01);  // decode -> G
}

}  // namespace
}  // namespace scalemodel::model
