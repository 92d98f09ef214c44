// Import of HuggingFace config.json files. The inline configs carry the
// official field values of each model's published config.json.
#include "scalemodel/ingest/hf_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../testing/catalog.h"

namespace scalemodel::ingest {
namespace {

using scalemodel::testing::BuiltinCatalog;

ImportedModel Parse(const char* text) {
  auto m = ParseHfConfig(text, "config.json");
  EXPECT_TRUE(m.has_value()) << m.error().ToString();
  return m.has_value() ? *m : ImportedModel{};
}

// transformers v5 names: rope_parameters instead of rope_scaling, dtype
// instead of torch_dtype (Llama 3.1 8B values).
TEST(HfConfigTest, TransformersV5Llama) {
  ImportedModel m = Parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": false,
    "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0,
      "factor": 8.0}, "dtype": "bfloat16", "transformers_version": "5.0.0"})");
  EXPECT_EQ(m.spec.head_dim, 128);  // D / N when head_dim is absent
  EXPECT_EQ(m.spec.weight_dtype, hw::Dtype::kBf16);
  EXPECT_NEAR(model::CountParams(m.spec).total, 8.03e9, 0.01e9);
  EXPECT_TRUE(m.notes.empty());
}

// Qwen1.5-MoE-A2.7B (qwen2_moe): 60 experts top-4 of width 1408, one shared
// expert of width 5632, qkv biases implied by the architecture. The model
// card: 14.3B total, 2.7B activated.
TEST(HfConfigTest, Qwen2MoeSharedExpert) {
  ImportedModel m = Parse(R"({
    "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
    "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
    "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_key_value_heads": 16, "vocab_size": 151936,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})");
  EXPECT_EQ(m.spec.moe.num_experts, 60);
  EXPECT_EQ(m.spec.moe.num_shared_experts, 1);
  EXPECT_TRUE(m.spec.attention_bias);
  model::ParamCounts p = model::CountParams(m.spec);
  EXPECT_NEAR(p.total / 1e9, 14.3, 0.1);
  EXPECT_NEAR(p.active / 1e9, 2.7, 0.05);
}

// Gemma 3 nests the language model under text_config and lists layer types.
TEST(HfConfigTest, Gemma3TextConfigAndLayerTypes) {
  ImportedModel m = Parse(R"({
    "model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560,
      "intermediate_size": 10240, "num_hidden_layers": 6,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
      "vocab_size": 262208, "sliding_window": 1024,
      "layer_types": ["sliding_attention", "sliding_attention",
        "sliding_attention", "sliding_attention", "sliding_attention",
        "full_attention"]},
    "vision_config": {"hidden_size": 1152}, "torch_dtype": "bfloat16"})");
  EXPECT_EQ(m.spec.d_model, 2560);
  EXPECT_EQ(m.spec.head_dim, 256);  // N H = 2048 != D
  EXPECT_TRUE(m.spec.IsSlidingLayer(0));
  EXPECT_FALSE(m.spec.IsSlidingLayer(5));
  EXPECT_TRUE(m.spec.tied_embeddings);  // HF default
  ASSERT_FALSE(m.notes.empty());
  EXPECT_EQ(m.notes[0], "read the language model from text_config");
}

// GPT-2 small: GPT-2 field names, learned positions, plain MLP, biases;
// 124.4M parameters.
TEST(HfConfigTest, Gpt2) {
  ImportedModel m = Parse(R"({"model_type": "gpt2", "n_embd": 768,
    "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257,
    "activation_function": "gelu_new", "n_inner": null})");
  EXPECT_FALSE(m.spec.gated_mlp);
  EXPECT_TRUE(m.spec.learned_positions);
  EXPECT_EQ(m.spec.ffn, 4 * 768);
  EXPECT_NEAR(model::CountParams(m.spec).total / 1e6, 124.4, 0.2);
}

// DeepSeek-V3 from the catalog: MLA, MoE alias n_routed_experts, dense layer
// placement, FP8 weights, the MTP module noted and not counted.
TEST(HfConfigTest, DeepSeekV3) {
  auto m = FindModel(BuiltinCatalog(), "deepseek-v3");
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->spec.mla.has_value());
  EXPECT_EQ(m->spec.moe.num_experts, 256);
  EXPECT_EQ(m->spec.moe.first_dense_layers, 3);
  EXPECT_FALSE(m->spec.IsMoeLayer(2));
  EXPECT_TRUE(m->spec.IsMoeLayer(3));
  EXPECT_EQ(m->spec.weight_dtype, hw::Dtype::kFp8);
  EXPECT_EQ(m->notes[0],
            "the 1 multi-token-prediction module(s) are not in the parameter "
            "count; training estimates run them on the last pipeline stage "
            "(--mtp-layers 0 drops them), serving does not");
}

// Mixtral's alias num_local_experts; experts as wide as intermediate_size.
TEST(HfConfigTest, Mixtral) {
  auto m = FindModel(BuiltinCatalog(), "mixtral-8x7b");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->spec.moe.num_experts, 8);
  EXPECT_EQ(m->spec.moe.expert_ffn, 14336);
}

TEST(HfConfigTest, UnknownKeysAreNotedMissingKeysAreOneError) {
  ImportedModel m = Parse(R"({"model_type": "llama", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "my_custom_flag": 3,
    "another": "x"})");
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0], "ignored keys: another, my_custom_flag");

  EXPECT_EQ(
      ParseHfConfig(R"({"model_type": "llama", "hidden_size": 64})", "cfg.json")
          .error()
          .ToString(),
      "cfg.json: missing required keys num_hidden_layers, "
      "num_attention_heads, vocab_size");
  EXPECT_EQ(ParseHfConfig("{not json", "cfg.json").error().ToString(),
            "cfg.json:1: expected valid JSON, found 'ot json' at column 3");
  EXPECT_EQ(ParseHfConfig(R"({"hidden_size": "big", "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 10})",
                          "cfg.json")
                .error()
                .ToString(),
            "cfg.json: /hidden_size: expected a non-negative integer of at "
            "most 16777216, got a string");
  EXPECT_EQ(ParseHfConfig(R"({"hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 10,
    "intermediate_size": 8})",
                          "cfg.json")
                .error()
                .ToString(),
            "cfg.json: num_key_value_heads: 3 must divide num_heads=4");
}

// A valid config with `extra` spliced in before the closing brace (without
// its model_type when `extra` gives one: a key given twice is an error).
std::string Config(const std::string& extra) {
  const bool typed = extra.find("\"model_type\"") == std::string::npos;
  return std::string(typed ? R"({"model_type": "llama", )" : "{") +
         R"("hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8)" +
         extra + "}";
}

std::string ErrorOf(const std::string& text) {
  auto m = ParseHfConfig(text, "cfg.json");
  return m ? "(parsed)" : m.error().ToString();
}

// Checkpoints that quantize the routed experts alone get a note naming the
// serve flags: gpt-oss's MXFP4, llm-compressor's 4-bit groups whose ignore
// list names the attention (Kimi K2 Thinking); 4-bit everywhere otherwise.
TEST(HfConfigTest, QuantizedExpertsAreNoted) {
  auto notes = [](const std::string& quant) {
    auto m = ParseHfConfig(Config(", \"quantization_config\": " + quant),
                           "cfg.json");
    std::string all;
    if (m) {
      for (const std::string& n : m->notes) all += n + "\n";
    }
    return all;
  };
  EXPECT_NE(notes(R"({"quant_method": "mxfp4"})")
                .find("serve with --weights bf16 --expert-weights fp4"),
            std::string::npos);
  const std::string group =
      R"("config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}})";
  EXPECT_NE(notes(R"({"quant_method": "compressed-tensors", )" + group +
                  R"(, "ignore": ["lm_head", "re:.*self_attn.*"]})")
                .find("serve with --weights bf16 --expert-weights int4"),
            std::string::npos);
  EXPECT_NE(notes(R"({"quant_method": "compressed-tensors", )" + group + "}")
                .find("4-bit (int4) weights; serve with --weights int4"),
            std::string::npos);
}

// MiniMax-M2 normalizes q and k over all heads ("qk_norm_type":
// "per_layer", its default); per-head QK norms (Qwen3) do not.
TEST(HfConfigTest, QkNormOverAllHeads) {
  auto flag = [](const std::string& extra) {
    auto m = ParseHfConfig(Config(extra), "cfg.json");
    return m && m->spec.qk_norm_all_heads;
  };
  EXPECT_TRUE(flag(R"(, "model_type": "minimax_m2")"));
  EXPECT_TRUE(flag(R"(, "use_qk_norm": true, "qk_norm_type": "per_layer")"));
  EXPECT_FALSE(flag(R"(, "model_type": "qwen3")"));
  EXPECT_FALSE(flag(R"(, "model_type": "minimax_m2", "use_qk_norm": false)"));
}

// An fp8 checkpoint's weight_block_size [n, k] marks block-scaled fp8
// (DeepSeek-V3's 128 x 128); without it the scales are per tensor.
TEST(HfConfigTest, Fp8WeightBlockSize) {
  auto block = [](const std::string& quant) {
    auto m = ParseHfConfig(Config(", \"quantization_config\": " + quant),
                           "cfg.json");
    return m ? m->spec.fp8_block_k : -1;
  };
  EXPECT_EQ(
      block(R"({"quant_method": "fp8", "weight_block_size": [128, 128]})"),
      128);
  EXPECT_EQ(block(R"({"quant_method": "fp8"})"), 0);
  EXPECT_EQ(block(R"({"quant_method": "mxfp4"})"), 0);
  EXPECT_EQ(ErrorOf(Config(", \"quantization_config\": {\"quant_method\": "
                           "\"fp8\", \"weight_block_size\": [128]}")),
            "cfg.json: /quantization_config/weight_block_size: expected two "
            "block sizes [n, k] of 1 to 1048576, got [128]");
}

TEST(HfConfigTest, HostileInputIsOneSentence) {
  ASSERT_EQ(ErrorOf(Config("")), "(parsed)");
  // Nesting 100,000 deep is refused before parsing, and not echoed.
  const std::string deep =
      Config(", \"x\": " + std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(ErrorOf(deep),
            "cfg.json:2: expected JSON nested at most 64 levels deep, found "
            "deeper nesting at column 141");
  // Brackets inside strings do not count.
  EXPECT_EQ(ErrorOf(Config(", \"x\": \"" + std::string(100, '[') + "\"")),
            "(parsed)");
  EXPECT_EQ(
      ErrorOf(Config(", \"x\": \"" + std::string((16 << 20) + 1, 'a') + "\"")),
      "cfg.json: expected a config.json of at most 16 MiB, got 16 MiB");
  EXPECT_EQ(ErrorOf(Config(", \"rms_norm_eps\": 1e400")),
            "cfg.json:2: expected a number within the range of a double, got "
            "1e400");
  EXPECT_EQ(ErrorOf(Config(", \"model_type\": 5")),
            "cfg.json: /model_type: expected a string, got a number");
  EXPECT_EQ(ErrorOf(Config(", \"torch_dtype\": 16")),
            "cfg.json: /torch_dtype: expected a string, got a number");
  EXPECT_EQ(ErrorOf(Config(", \"quantization_config\": {\"quant_method\": 1}")),
            "cfg.json: /quantization_config/quant_method: expected a string, "
            "got a number");
  EXPECT_EQ(ErrorOf(Config(", \"text_config\": [1]")),
            "cfg.json: /text_config: expected an object, got an array");
  EXPECT_EQ(ErrorOf(Config(", \"tie_word_embeddings\": \"no\"")),
            "cfg.json: /tie_word_embeddings: expected true or false, got a "
            "string");
  // 2^32 + 1 layers is not read as 1, and 2^31 - 1 is refused, not looped.
  EXPECT_EQ(ErrorOf(R"({"hidden_size": 64, "num_hidden_layers": 4294967297,
    "num_attention_heads": 4, "vocab_size": 10})"),
            "cfg.json: /num_hidden_layers: expected a non-negative integer of "
            "at most 100000, got 4294967297");
  EXPECT_EQ(ErrorOf(R"({"hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 99999999999})"),
            "cfg.json: /vocab_size: expected a non-negative integer of at most "
            "67108864, got 99999999999");
  EXPECT_EQ(ErrorOf(Config(", \"num_local_experts\": 70000")),
            "cfg.json: /num_local_experts: expected a non-negative integer of "
            "at most 65536, got 70000");
  // A key given twice is refused, not read as its last value (nlohmann's
  // default), at the top and within nested objects and arrays.
  EXPECT_EQ(ErrorOf(Config(", \"num_hidden_layers\": 8")),
            "cfg.json: expected each key once in a config.json, got "
            "'num_hidden_layers' twice");
  EXPECT_EQ(ErrorOf(Config(", \"text_config\": {\"a\": 1, \"b\": 2, "
                           "\"a\": 3}")),
            "cfg.json: expected each key once in each object of a "
            "config.json, got 'a' twice in /text_config");
  EXPECT_EQ(ErrorOf(Config(", \"x\": [{\"a\": 1}, [], {\"b\": {}, "
                           "\"b\": 2}]")),
            "cfg.json: expected each key once in each object of a "
            "config.json, got 'b' twice in /x/2");
  // The same key in sibling objects is not a repeat.
  EXPECT_EQ(ErrorOf(Config(", \"x\": [{\"a\": 1}, {\"a\": 1}], "
                           "\"y\": {\"a\": {\"a\": 2}}")),
            "(parsed)");
  // A long value is cut in the message.
  EXPECT_EQ(
      ErrorOf(Config(", \"rms_norm_eps\": 1" + std::string(100, '0') + "e400")),
      "cfg.json:2: expected a number within the range of a double, got "
      "1" +
          std::string(59, '0') + "...");
}

TEST(HfConfigTest, FindModelErrors) {
  EXPECT_EQ(FindModel(BuiltinCatalog(), "lama3-405b").error().ToString(),
            "model: unknown model 'lama3-405b' (did you mean 'llama3-405b'?); "
            "`scalemodel models` lists all 25, or pass a path to a "
            "config.json or its directory");
  EXPECT_EQ(
      FindModel(BuiltinCatalog(), "/no/such/config.json").error().ToString(),
      "model: no such file '/no/such/config.json' (expected a "
      "HuggingFace config.json, its directory or a catalog model)");
}

// Every catalog model parses, validates, and has a source.
TEST(HfConfigTest, EveryCatalogModelLoads) {
  for (const std::string& id : ModelIds(BuiltinCatalog())) {
    auto m = FindModel(BuiltinCatalog(), id);
    ASSERT_TRUE(m.has_value()) << id << ": " << m.error().ToString();
    EXPECT_EQ(m->spec.id, id);
    EXPECT_FALSE(m->spec.source.empty()) << id;
    EXPECT_GT(model::CountParams(m->spec).total, 1e9) << id;
  }
}

}  // namespace
}  // namespace scalemodel::ingest
