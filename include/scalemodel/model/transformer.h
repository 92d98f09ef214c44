// Transformer accounting: parameters by component, FLOPs per token, KV-cache
// bytes and activation memory under each remat policy (book: "transformers"
// chapter; docs/model.md section 3). Plain structs, no I/O: io/hf_config.h
// fills a ModelSpec from a HuggingFace config.json.
//
// Example:
//   model::ParamCounts p = model::CountParams(spec);   // p.total, p.active
//   double f = model::TrainFlopsPerToken(spec, 4096);  // 6N + attention
#ifndef SCALEMODEL_MODEL_TRANSFORMER_H_
#define SCALEMODEL_MODEL_TRANSFORMER_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/dtype.h"

namespace scalemodel::model {

// DeepSeek's multi-head latent attention. q_lora_rank = 0: queries are not
// compressed.
struct MlaSpec {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

// Mixture of experts. num_experts = 0: dense model.
struct MoeSpec {
  int num_experts = 0;
  int top_k = 0;
  int num_shared_experts = 0;
  long expert_ffn = 0;  // F of one routed expert
  long shared_ffn = 0;  // F of one shared expert (0: expert_ffn)
  // Layers [0, first_dense_layers) are dense; after that every
  // `layer_freq`-th layer is MoE (1: all of them).
  int first_dense_layers = 0;
  int layer_freq = 1;
  // Node-limited (group-limited) routing: a token's experts come from at
  // most this many of the expert groups (DeepSeek-V3 topk_group 4 of
  // n_group 8). 0: unrestricted.
  int topk_group = 0;
  // The router's expert groups (config.json "n_group"; DeepSeek-V3 8,
  // GLM-4.5/4.6 1). 0: the router does not group its experts.
  int expert_groups = 0;
  // Sigmoid scores chosen with a per-expert correction bias (DeepSeek-V3's
  // "noaux_tc", GLM-4.5/4.6's router): the engines' grouped, biased top-k.
  bool router_bias = false;
};

struct ModelSpec {
  std::string id;        // "llama3-70b"
  std::string name;      // "Llama 3.1 70B"
  std::string source;    // where the numbers come from
  int num_layers = 0;    // L
  long d_model = 0;      // D
  long ffn = 0;          // F of dense layers
  int num_heads = 0;     // N
  int num_kv_heads = 0;  // K (= N for MHA, 1 for MQA)
  int head_dim = 0;      // H; N*H may differ from D
  long vocab = 0;        // V
  bool tied_embeddings = false;
  bool gated_mlp = true;           // 3 matrices (SwiGLU/GeGLU) or 2
  bool learned_positions = false;  // else rotary
  long max_positions = 0;
  bool attention_bias = false;  // q, k, v (and o) biases
  bool mlp_bias = false;
  // RMSNorm on the queries and keys before RoPE (Qwen3, Gemma 3, OLMo 2,
  // MiniMax-M2; config.json "use_qk_norm").
  bool qk_norm = false;
  // The q/k RMSNorm spans all heads, not each head (MiniMax-M2's
  // "qk_norm_type": "per_layer"): with the heads split over tensor-parallel
  // ranks, every layer all-reduces the per-token variances of q and k
  // (vLLM models/minimax_m2.py MiniMaxText01RMSNormTP.forward_qk).
  bool qk_norm_all_heads = false;
  std::optional<MlaSpec> mla;
  MoeSpec moe;
  // Sliding-window attention: window in tokens (0: none) and, per layer,
  // whether it is local (empty: every layer local when window > 0).
  long sliding_window = 0;
  std::vector<bool> sliding_layers;
  hw::Dtype weight_dtype = hw::Dtype::kBf16;  // checkpoint dtype
  // An fp8 checkpoint's scale block along K (quantization_config's
  // weight_block_size [n, k]: 128 for DeepSeek-V3's 128 x 128 blocks);
  // 0: not block-scaled (per-tensor or per-channel scales, or not fp8).
  int fp8_block_k = 0;
  int mtp_layers = 0;  // multi-token-prediction modules, not counted

  bool is_moe() const { return moe.num_experts > 0; }
  bool IsMoeLayer(int layer) const;
  bool IsSlidingLayer(int layer) const;
};

// Checks shapes: positive dims, K divides N, top_k <= experts, ... One
// sentence naming the field.
Result<bool> Validate(const ModelSpec& m);

struct ParamCounts {
  double embedding = 0;    // token (+ position) embeddings
  double unembedding = 0;  // 0 when tied
  double attention = 0;    // all layers
  double mlp = 0;          // dense MLP layers
  double experts = 0;      // routed experts, all of them
  double shared_experts = 0;
  double router = 0;
  double norms = 0;
  double total = 0;
  double active = 0;  // per token: top-k experts instead of all
  // Parameters that multiply activations (everything but embedding lookups
  // and norms), total and active: what 2N FLOPs per token counts.
  double matmul_total = 0;
  double matmul_active = 0;
};
ParamCounts CountParams(const ModelSpec& m);

// How attention dot-product FLOPs are counted.
enum class AttentionFlops {
  kCausal,  // half the T x S product (MaxText, Megatron)
  kFull,    // the whole product (torchtitan, the book's 12 B T^2 N H)
};

// Forward FLOPs per token at sequence length `seq`: 2 x active matmul params
// plus QK^T and AV (2 N (H_qk + H_v) FLOPs per attended position).
double ForwardFlopsPerToken(const ModelSpec& m, double seq,
                            AttentionFlops conv = AttentionFlops::kCausal);
// Forward + backward, no recompute: 3 x forward.
double TrainFlopsPerToken(const ModelSpec& m, double seq,
                          AttentionFlops conv = AttentionFlops::kCausal);
// Attention dot-product FLOPs alone (forward), per token.
double AttentionFlopsPerToken(const ModelSpec& m, double seq,
                              AttentionFlops conv = AttentionFlops::kCausal);

// Arithmetic intensity of dot-product attention (QK^T and AV, bf16, no
// projections) for T queries over S keys with G = N/K query heads per KV
// head: FLOPs 4BTSNH over bytes 4BTNH + 4BSKH gives TSG / (TG + S). Prefill
// (S = T): TG/(G+1); decode (T = 1): SG/(G+S) -> G.
double AttentionIntensity(double t, double s, double g);

// KV-cache bytes for one sequence of `context` tokens: 2 K H per layer per
// token (the latent kv_lora_rank + rope dims for MLA), sliding layers capped
// at their window.
double KvCacheBytes(const ModelSpec& m, double context, hw::Dtype dtype);
// Per token of a context short enough that no window applies.
double KvCacheBytesPerToken(const ModelSpec& m, hw::Dtype dtype);

enum class Remat {
  kNone,               // save every intermediate the backward pass uses
  kSelective,          // recompute the attention core (Megatron selective)
  kSaveMatmulOutputs,  // the book's "big matmuls only": keep the 7 outputs
  // MaxText's save_dot_except_mlpwi: keep the matmul outputs but the MLP
  // input projections (w1, w3), which are recomputed with the attention core.
  kSaveDotExceptMlpIn,
  kFull,  // keep only each layer's input; recompute the layer
};
inline constexpr int kNumRemat = 5;
// Every policy, from the most memory to the least.
inline constexpr std::array<Remat, kNumRemat> kAllRemats = {
    Remat::kNone, Remat::kSelective, Remat::kSaveMatmulOutputs,
    Remat::kSaveDotExceptMlpIn, Remat::kFull};
std::string_view RematName(Remat r);
Result<Remat> ParseRemat(std::string_view text);

struct ActivationCost {
  // Bytes saved for the backward pass, per token, per layer (average over
  // layers), at `dtype`.
  double bytes_per_token_per_layer = 0;
  // Extra forward FLOPs per token (whole model) spent recomputing.
  double recompute_flops_per_token = 0;
};
ActivationCost Activations(const ModelSpec& m, Remat remat, double seq,
                           hw::Dtype dtype = hw::Dtype::kBf16,
                           AttentionFlops conv = AttentionFlops::kCausal);

}  // namespace scalemodel::model

#endif  // SCALEMODEL_MODEL_TRANSFORMER_H_
