#include "scalemodel/model/transformer.h"

#include <algorithm>
#include <string>

#include "scalemodel/base/strings.h"

namespace scalemodel::model {

bool ModelSpec::IsMoeLayer(int layer) const {
  if (!is_moe() || layer < moe.first_dense_layers) return false;
  int freq = std::max(1, moe.layer_freq);
  return (layer - moe.first_dense_layers) % freq == 0;
}

bool ModelSpec::IsSlidingLayer(int layer) const {
  if (sliding_window <= 0) return false;
  if (sliding_layers.empty()) return true;
  return layer < static_cast<int>(sliding_layers.size()) &&
         sliding_layers[layer];
}

Result<bool> Validate(const ModelSpec& m) {
  auto bad = [&](const std::string& field, const std::string& what) {
    return InvalidArgument(field + ": " + what, m.id);
  };
  if (m.num_layers <= 0) return bad("num_layers", "must be positive");
  if (m.d_model <= 0) return bad("d_model", "must be positive");
  if (m.num_heads <= 0) return bad("num_heads", "must be positive");
  if (m.vocab <= 0) return bad("vocab_size", "must be positive");
  if (!m.mla) {
    if (m.head_dim <= 0) return bad("head_dim", "must be positive");
    if (m.num_kv_heads <= 0 || m.num_heads % m.num_kv_heads != 0) {
      return bad("num_key_value_heads",
                 std::to_string(m.num_kv_heads) +
                     " must divide num_heads=" + std::to_string(m.num_heads));
    }
  } else if (m.mla->kv_lora_rank <= 0 || m.mla->v_head_dim <= 0 ||
             m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim <= 0) {
    return bad("kv_lora_rank",
               "MLA needs kv_lora_rank, v_head_dim and "
               "qk head dims");
  }
  bool any_dense = false;
  for (int l = 0; l < m.num_layers; ++l) any_dense |= !m.IsMoeLayer(l);
  if (any_dense && m.ffn <= 0) {
    return bad("intermediate_size", "dense layers need a positive FFN width");
  }
  if (m.is_moe()) {
    if (m.moe.top_k <= 0 || m.moe.top_k > m.moe.num_experts) {
      return bad("num_experts_per_tok", std::to_string(m.moe.top_k) +
                                            " must be in 1.." +
                                            std::to_string(m.moe.num_experts));
    }
    if (m.moe.expert_ffn <= 0) {
      return bad("moe_intermediate_size", "must be positive");
    }
  }
  return true;
}

namespace {

// Per-layer attention parameters (weights and biases).
double AttentionParams(const ModelSpec& m) {
  const double d = m.d_model, n = m.num_heads;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    double q = a.q_lora_rank > 0
                   ? d * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * n * qk
                   : d * n * qk;
    double kv = d * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
                a.kv_lora_rank * n * (a.qk_nope_head_dim + a.v_head_dim);
    double o = n * a.v_head_dim * d;
    return q + kv + o;
  }
  const double h = m.head_dim, k = m.num_kv_heads;
  double w = d * n * h + 2 * d * k * h + n * h * d;
  double b = m.attention_bias ? n * h + 2 * k * h + d : 0;
  return w + b;
}

double MlpParams(const ModelSpec& m, double f) {
  const double d = m.d_model;
  double w = (m.gated_mlp ? 3 : 2) * d * f;
  double b = m.mlp_bias ? (m.gated_mlp ? 2 * f : f) + d : 0;
  return w + b;
}

// Mean over tokens of the number of keys a query attends to, for a sequence
// of `seq` tokens with an optional window.
double MeanContext(double seq, double window, AttentionFlops conv) {
  double w = window > 0 ? std::min(window, seq) : seq;
  if (conv == AttentionFlops::kFull) return w;
  // Causal: token t attends to min(t, w) keys; mean over t = 1..seq.
  if (window <= 0 || window >= seq) return (seq + 1) / 2;
  return (w * (w + 1) / 2 + (seq - w) * w) / seq;
}

double QkDim(const ModelSpec& m) {
  return m.mla ? m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim : m.head_dim;
}
double VDim(const ModelSpec& m) {
  return m.mla ? m.mla->v_head_dim : m.head_dim;
}

}  // namespace

ParamCounts CountParams(const ModelSpec& m) {
  ParamCounts p;
  const double d = m.d_model;
  p.embedding = m.vocab * d + (m.learned_positions ? m.max_positions * d : 0);
  p.unembedding = m.tied_embeddings ? 0 : m.vocab * d;
  double active_ffn = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    p.attention += AttentionParams(m);
    p.norms += 2 * d;
    if (m.IsMoeLayer(l)) {
      double expert = MlpParams(m, m.moe.expert_ffn);
      double shared_f =
          m.moe.shared_ffn > 0 ? m.moe.shared_ffn : m.moe.expert_ffn;
      double shared = m.moe.num_shared_experts * MlpParams(m, shared_f);
      p.experts += m.moe.num_experts * expert;
      p.shared_experts += shared;
      p.router += d * m.moe.num_experts;
      active_ffn += m.moe.top_k * expert + shared + d * m.moe.num_experts;
    } else {
      double mlp = MlpParams(m, m.ffn);
      p.mlp += mlp;
      active_ffn += mlp;
    }
  }
  p.norms += d;  // final norm
  p.total = p.embedding + p.unembedding + p.attention + p.mlp + p.experts +
            p.shared_experts + p.router + p.norms;
  p.active = p.embedding + p.unembedding + p.attention + active_ffn + p.norms;
  // The output projection multiplies activations even when tied.
  double logits = m.vocab * d;
  p.matmul_total =
      logits + p.attention + p.mlp + p.experts + p.shared_experts + p.router;
  p.matmul_active = logits + p.attention + active_ffn;
  return p;
}

double AttentionFlopsPerToken(const ModelSpec& m, double seq,
                              AttentionFlops conv) {
  double per_key = 2.0 * m.num_heads * (QkDim(m) + VDim(m));
  double total = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    double window = m.IsSlidingLayer(l) ? m.sliding_window : 0;
    total += per_key * MeanContext(seq, window, conv);
  }
  return total;
}

double ForwardFlopsPerToken(const ModelSpec& m, double seq,
                            AttentionFlops conv) {
  return 2 * CountParams(m).matmul_active +
         AttentionFlopsPerToken(m, seq, conv);
}

double TrainFlopsPerToken(const ModelSpec& m, double seq, AttentionFlops conv) {
  return 3 * ForwardFlopsPerToken(m, seq, conv);
}

double AttentionIntensity(double t, double s, double g) {
  return t * s * g / (t * g + s);
}

double KvCacheBytesPerToken(const ModelSpec& m, hw::Dtype dtype) {
  double per_layer = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim
                           : 2.0 * m.num_kv_heads * m.head_dim;
  return per_layer * m.num_layers * hw::BytesPerElement(dtype);
}

double KvCacheBytes(const ModelSpec& m, double context, hw::Dtype dtype) {
  double per_layer = m.mla ? m.mla->kv_lora_rank + m.mla->qk_rope_head_dim
                           : 2.0 * m.num_kv_heads * m.head_dim;
  double total = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    double tokens = m.IsSlidingLayer(l)
                        ? std::min<double>(context, m.sliding_window)
                        : context;
    total += per_layer * tokens;
  }
  return total * hw::BytesPerElement(dtype);
}

std::string_view RematName(Remat r) {
  switch (r) {
    case Remat::kNone:
      return "none";
    case Remat::kSelective:
      return "selective";
    case Remat::kSaveMatmulOutputs:
      return "save-matmul-outputs";
    case Remat::kSaveDotExceptMlpIn:
      return "save-dot-except-mlp-in";
    case Remat::kFull:
      return "full";
  }
  return "?";
}

Result<Remat> ParseRemat(std::string_view text) {
  std::string t = ToLower(Trim(text));
  std::vector<std::string> names;
  for (Remat r : kAllRemats) {
    names.emplace_back(RematName(r));
    if (t == RematName(r)) return r;
  }
  if (t == "attention-only" || t == "attention") return Remat::kSelective;
  if (t == "minimal" || t == "matmuls") return Remat::kSaveMatmulOutputs;
  if (t == "block") return Remat::kFull;
  if (t == "save_dot_except_mlpwi") return Remat::kSaveDotExceptMlpIn;
  return InvalidArgument("unknown remat policy '" + std::string(text) + "'" +
                         DidYouMean(t, names) +
                         "; expected none, selective, save-matmul-outputs, "
                         "save-dot-except-mlp-in or full");
}

// Saved tensors per token per layer, in elements (docs/model.md 3.4), with
// flash attention (the S x S scores are never stored):
//   norm inputs and outputs 4D; q, k, v (N + 2K) H; attention output N H;
//   MLP: gated 3F (w1, w3, their product), plain 2F; MoE: x top_k, + router E.
ActivationCost Activations(const ModelSpec& m, Remat remat, double seq,
                           hw::Dtype dtype, AttentionFlops conv) {
  const double d = m.d_model;
  const double qkv = m.mla ? m.num_heads * (QkDim(m) * 2 + VDim(m)) +
                                 m.mla->kv_lora_rank + m.mla->q_lora_rank
                           : (m.num_heads + 2.0 * m.num_kv_heads) * m.head_dim;
  const double attn_out = m.num_heads * VDim(m);
  double saved = 0, matmul_outputs = 0, mlp_in = 0, mlp_in_flops = 0;
  for (int l = 0; l < m.num_layers; ++l) {
    double f = m.IsMoeLayer(l) ? m.moe.expert_ffn : m.ffn;
    double k = m.IsMoeLayer(l) ? m.moe.top_k + m.moe.num_shared_experts : 1;
    double mlp = (m.gated_mlp ? 3 : 2) * f * k +
                 (m.IsMoeLayer(l) ? m.moe.num_experts : 0);
    saved += 4 * d + qkv + attn_out + mlp;
    // The 7 matmul outputs: q, k, v, o; w1, w3 (per active expert) and w2
    // (summed over experts into one D-wide output).
    matmul_outputs += qkv + d + (m.gated_mlp ? 2 : 1) * f * k + d;
    // The MLP input projections' outputs (w1, w3 per active expert).
    mlp_in += (m.gated_mlp ? 2 : 1) * f * k;
    mlp_in_flops += 2.0 * d * (m.gated_mlp ? 2 : 1) * f * k;
  }
  const double layers = m.num_layers;
  const double bytes = hw::BytesPerElement(dtype);
  ActivationCost c;
  switch (remat) {
    case Remat::kNone:
      c.bytes_per_token_per_layer = saved / layers * bytes;
      break;
    case Remat::kSelective:
      // Drop the attention output; recompute the attention core from q, k, v.
      c.bytes_per_token_per_layer =
          (saved - layers * attn_out) / layers * bytes;
      c.recompute_flops_per_token = AttentionFlopsPerToken(m, seq, conv);
      break;
    case Remat::kSaveMatmulOutputs:
      // Keep the matmul outputs and the layer input; recompute norms,
      // activations and the attention core (the book's extra 4 B T^2 N H).
      c.bytes_per_token_per_layer =
          (matmul_outputs + layers * d) / layers * bytes;
      c.recompute_flops_per_token = AttentionFlopsPerToken(m, seq, conv);
      break;
    case Remat::kSaveDotExceptMlpIn:
      // As above without the MLP input projections' outputs, which are
      // recomputed (their GEMMs) along with the attention core.
      c.bytes_per_token_per_layer =
          (matmul_outputs - mlp_in + layers * d) / layers * bytes;
      c.recompute_flops_per_token =
          AttentionFlopsPerToken(m, seq, conv) + mlp_in_flops;
      break;
    case Remat::kFull:
      // Keep each layer's input; rerun the whole layer forward (the book's
      // 6N -> 8N).
      c.bytes_per_token_per_layer = d * bytes;
      c.recompute_flops_per_token =
          ForwardFlopsPerToken(m, seq, conv) - 2.0 * m.vocab * d;
      break;
  }
  return c;
}

}  // namespace scalemodel::model
