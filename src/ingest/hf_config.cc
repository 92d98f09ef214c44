#include "scalemodel/ingest/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "nlohmann/json.hpp"
#include "scalemodel/base/strings.h"

namespace scalemodel::ingest {
namespace {

using nlohmann::json;

// Keys we read, and keys we know and deliberately ignore (they do not change
// cost). Anything else is reported as an ignored unknown key.
const std::set<std::string>& IgnoredKnownKeys() {
  static const std::set<std::string> k = {"architectures",
                                          "rms_norm_eps",
                                          "layer_norm_eps",
                                          "layer_norm_epsilon",
                                          "bos_token_id",
                                          "eos_token_id",
                                          "pad_token_id",
                                          "initializer_range",
                                          "transformers_version",
                                          "use_cache",
                                          "rope_theta",
                                          "rope_scaling",
                                          "rope_parameters",
                                          "hidden_act",
                                          "hidden_activation",
                                          "activation_function",
                                          "attention_dropout",
                                          "router_aux_loss_coef",
                                          "output_router_logits",
                                          "n_group",
                                          "topk_method",
                                          "scoring_func",
                                          "routed_scaling_factor",
                                          "norm_topk_prob",
                                          "ep_size",
                                          "aux_loss_alpha",
                                          "seq_aux",
                                          "query_pre_attn_scalar",
                                          "attn_logit_softcapping",
                                          "final_logit_softcapping",
                                          "cache_implementation",
                                          "rope_local_base_freq",
                                          "pretraining_tp",
                                          "auto_map",
                                          "_name_or_path",
                                          "resid_pdrop",
                                          "embd_pdrop",
                                          "attn_pdrop",
                                          "summary_type",
                                          "summary_use_proj",
                                          "summary_activation",
                                          "summary_proj_to_labels",
                                          "summary_first_dropout",
                                          "scale_attn_weights",
                                          "vision_config",
                                          "image_token_index",
                                          "mm_tokens_per_image",
                                          "boi_token_index",
                                          "eoi_token_index",
                                          "router_jitter_noise",
                                          "max_window_layers",
                                          "_scalemodel",
                                          "torch_dtype",
                                          "dtype",
                                          "model_type",
                                          "attention_chunk_size",
                                          "qk_layernorm"};
  return k;
}

// Field lookup with aliases; marks every alias as used.
class Fields {
 public:
  Fields(const json& j, std::set<std::string>* used) : j_(j), used_(used) {}
  const json* Get(std::initializer_list<const char*> names) const {
    for (const char* n : names) {
      used_->insert(n);
      auto it = j_.find(n);
      if (it != j_.end() && !it->is_null()) return &*it;
    }
    return nullptr;
  }
  bool Has(std::initializer_list<const char*> names) const {
    return Get(names) != nullptr;
  }

 private:
  const json& j_;
  std::set<std::string>* used_;
};

}  // namespace

Result<ImportedModel> ParseHfConfig(std::string_view json_text,
                                    const std::string& path) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return ParseError(std::string("not valid JSON (") + e.what() + ")", path);
  }
  if (!root.is_object()) {
    return ParseError(
        "expected a JSON object such as a HuggingFace "
        "config.json",
        path);
  }
  ImportedModel out;
  model::ModelSpec& m = out.spec;
  // Multimodal wrappers nest the language model under text_config.
  const json* lm = &root;
  std::string prefix;
  if (root.contains("text_config") && root["text_config"].is_object()) {
    lm = &root["text_config"];
    prefix = "text_config.";
    out.notes.emplace_back("read the language model from text_config");
  }
  std::set<std::string> used;
  Fields f(*lm, &used);
  Fields top(root, &used);
  std::vector<std::string> missing;
  std::optional<Error> type_error;

  auto integer = [&](std::initializer_list<const char*> names,
                     bool required) -> long {
    const json* v = f.Get(names);
    if (!v) v = top.Get(names);
    if (!v) {
      if (required) missing.push_back(prefix + *names.begin());
      return 0;
    }
    if (!v->is_number_integer() || v->get<long>() < 0) {
      if (!type_error) {
        type_error =
            Error{ErrorCode::kParse,
                  "/" + prefix + *names.begin() +
                      ": expected a non-negative integer, got " + v->dump(),
                  path};
      }
      return 0;
    }
    return v->get<long>();
  };
  auto boolean = [&](std::initializer_list<const char*> names, bool dflt) {
    const json* v = f.Get(names);
    if (!v) v = top.Get(names);
    return v && v->is_boolean() ? v->get<bool>() : dflt;
  };
  auto string = [&](std::initializer_list<const char*> names) {
    const json* v = f.Get(names);
    if (!v) v = top.Get(names);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };

  std::string type = string({"model_type"});
  std::string top_type = root.value("model_type", std::string());
  m.id = type;
  m.d_model = integer({"hidden_size", "n_embd", "d_model"}, true);
  m.num_layers = static_cast<int>(
      integer({"num_hidden_layers", "n_layer", "num_layers"}, true));
  m.num_heads = static_cast<int>(
      integer({"num_attention_heads", "n_head", "num_heads"}, true));
  m.vocab = integer({"vocab_size"}, true);
  long kv =
      integer({"num_key_value_heads", "num_kv_heads", "n_head_kv"}, false);
  if (kv == 0 && boolean({"multi_query"}, false)) kv = 1;
  m.num_kv_heads = kv > 0 ? static_cast<int>(kv) : m.num_heads;
  long hd = integer({"head_dim"}, false);
  m.head_dim =
      hd > 0
          ? static_cast<int>(hd)
          : (m.num_heads > 0 ? static_cast<int>(m.d_model / m.num_heads) : 0);
  m.max_positions =
      integer({"max_position_embeddings", "n_positions", "max_seq_len"}, false);
  // HF's PretrainedConfig ties embeddings unless a config says otherwise.
  m.tied_embeddings = boolean({"tie_word_embeddings"}, true);
  static const std::set<std::string> kPlainMlp = {
      "gpt2",  "gpt",    "gptj", "gpt_neox",     "gpt_bigcode", "opt",
      "bloom", "falcon", "phi",  "megatron_gpt", "gpt_neo"};
  m.gated_mlp = kPlainMlp.count(type) == 0;
  static const std::set<std::string> kLearnedPositions = {
      "gpt2", "gpt", "opt", "gpt_bigcode", "megatron_gpt", "gpt_neo"};
  m.learned_positions = kLearnedPositions.count(type) > 0 ||
                        string({"position_embedding_type"}) == "absolute";
  m.attention_bias = boolean(
      {"attention_bias", "bias", "qkv_bias"},
      type == "qwen2" || type == "qwen2_moe" || kPlainMlp.count(type) > 0);
  m.mlp_bias = boolean({"mlp_bias"}, kPlainMlp.count(type) > 0);

  // MoE: three names for the expert count.
  long experts =
      integer({"num_local_experts", "num_experts", "n_routed_experts"}, false);
  // Dense FFN width; MoE-only models may leave it unused.
  long ffn =
      integer({"intermediate_size", "n_inner", "ffn_dim", "d_ff"}, false);
  if (ffn == 0 && kPlainMlp.count(type) > 0) ffn = 4 * m.d_model;
  m.ffn = ffn;
  if (experts > 0) {
    m.moe.num_experts = static_cast<int>(experts);
    m.moe.top_k = static_cast<int>(
        integer({"num_experts_per_tok", "moe_topk", "top_k"}, true));
    long expert_ffn = integer({"moe_intermediate_size", "expert_ffn"}, false);
    m.moe.expert_ffn = expert_ffn > 0 ? expert_ffn : ffn;
    m.moe.num_shared_experts = static_cast<int>(
        integer({"n_shared_experts", "num_shared_experts"}, false));
    long shared_width = integer({"shared_expert_intermediate_size"}, false);
    if (shared_width > 0) {
      // Qwen2-MoE: one shared expert of this width.
      m.moe.shared_ffn = shared_width;
      if (m.moe.num_shared_experts == 0) m.moe.num_shared_experts = 1;
    }
    m.moe.first_dense_layers =
        static_cast<int>(integer({"first_k_dense_replace"}, false));
    m.moe.topk_group = static_cast<int>(integer({"topk_group"}, false));
    long freq = integer({"moe_layer_freq", "decoder_sparse_step"}, false);
    m.moe.layer_freq = freq > 0 ? static_cast<int>(freq) : 1;
    if (const json* dense = f.Get({"mlp_only_layers"});
        dense && dense->is_array() && !dense->empty()) {
      out.notes.emplace_back(
          "mlp_only_layers is approximated by its count as "
          "leading dense layers");
      m.moe.first_dense_layers = static_cast<int>(dense->size());
    }
  }
  // DeepSeek MLA.
  if (f.Has({"kv_lora_rank"})) {
    model::MlaSpec a;
    a.q_lora_rank = static_cast<int>(integer({"q_lora_rank"}, false));
    a.kv_lora_rank = static_cast<int>(integer({"kv_lora_rank"}, true));
    a.qk_nope_head_dim = static_cast<int>(integer({"qk_nope_head_dim"}, true));
    a.qk_rope_head_dim = static_cast<int>(integer({"qk_rope_head_dim"}, true));
    a.v_head_dim = static_cast<int>(integer({"v_head_dim"}, true));
    m.mla = a;
    m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  }
  // Sliding windows: Qwen2 gates them with use_sliding_window; Gemma 2
  // alternates (even layers local); Gemma 3 gives a pattern or layer_types.
  long window = integer({"sliding_window"}, false);
  bool use_window = boolean({"use_sliding_window"}, true);
  if (window > 0 && use_window) {
    m.sliding_window = window;
    if (const json* types = f.Get({"layer_types"});
        types && types->is_array()) {
      for (const json& t : *types) {
        m.sliding_layers.push_back(t.is_string() &&
                                   t.get<std::string>() == "sliding_attention");
      }
    } else if (long pattern = integer({"sliding_window_pattern"}, false);
               pattern > 0) {
      for (int l = 0; l < m.num_layers; ++l) {
        m.sliding_layers.push_back((l + 1) % pattern != 0);
      }
    } else if (type == "gemma2") {
      for (int l = 0; l < m.num_layers; ++l)
        m.sliding_layers.push_back(l % 2 == 0);
    } else if (type == "gemma3_text" || type == "gemma3") {
      for (int l = 0; l < m.num_layers; ++l) {
        m.sliding_layers.push_back((l + 1) % 6 != 0);
      }
    }
  }
  m.mtp_layers = static_cast<int>(integer({"num_nextn_predict_layers"}, false));
  if (m.mtp_layers > 0) {
    out.notes.push_back(
        "the " + std::to_string(m.mtp_layers) +
        " multi-token-prediction module(s) are not in the parameter count; "
        "training estimates run them on the last pipeline stage "
        "(--mtp-layers 0 drops them), serving does not");
  }
  // Checkpoint dtype: v4 torch_dtype, v5 dtype; FP8 quantization wins.
  std::string dtype = root.value("torch_dtype", root.value("dtype", ""));
  if (dtype.empty()) dtype = string({"torch_dtype", "dtype"});
  if (!dtype.empty()) {
    auto d = hw::ParseDtype(dtype);
    if (d) m.weight_dtype = *d;
  }
  used.insert("quantization_config");
  if (root.contains("quantization_config") &&
      root["quantization_config"].is_object()) {
    std::string method =
        ToLower(root["quantization_config"].value("quant_method", ""));
    if (method == "fp8") {
      m.weight_dtype = hw::Dtype::kFp8;
    } else if (!method.empty()) {
      out.notes.push_back("quantization method '" + method +
                          "' is not modelled; weights counted at " +
                          std::string(hw::DtypeName(m.weight_dtype)));
    }
  }
  used.insert("text_config");
  used.insert("multi_query");
  used.insert("position_embedding_type");
  if (type_error) return tl::unexpected(*type_error);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& k : missing) list += (list.empty() ? "" : ", ") + k;
    return ParseError(std::string("missing required key") +
                          (missing.size() > 1 ? "s " : " ") + list,
                      path);
  }
  std::vector<std::string> ignored;
  for (const json* obj : {static_cast<const json*>(&root), lm}) {
    for (auto it = obj->begin(); it != obj->end(); ++it) {
      if (!used.count(it.key()) && !IgnoredKnownKeys().count(it.key())) {
        ignored.push_back((obj == lm && lm != &root ? prefix : "") + it.key());
      }
    }
  }
  std::sort(ignored.begin(), ignored.end());
  ignored.erase(std::unique(ignored.begin(), ignored.end()), ignored.end());
  if (!ignored.empty()) {
    std::string list;
    for (const std::string& k : ignored) list += (list.empty() ? "" : ", ") + k;
    out.notes.push_back("ignored keys: " + list);
  }
  if (root.contains("_scalemodel")) {
    const json& s = root["_scalemodel"];
    m.id = s.value("id", m.id);
    m.name = s.value("name", m.id);
    m.source = s.value("source", "");
    out.engine_names.hf_repo = s.value("hf_repo", "");
    out.engine_names.maxtext_model = s.value("maxtext_model", "");
    out.engine_names.torchtitan_model = s.value("torchtitan_model", "");
    out.engine_names.torchtitan_flavor = s.value("torchtitan_flavor", "");
  } else {
    m.name = top_type.empty() ? path : top_type + " (" + path + ")";
    // ".../Llama-3.1-8B/config.json" is named by its directory.
    const std::filesystem::path fp(path);
    m.id = fp.stem() == "config" && fp.parent_path().has_filename()
               ? fp.parent_path().filename().string()
               : fp.stem().string();
    m.source = path;
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    out.engine_names.hf_repo = dir.empty() ? "." : dir.string();
  }
  auto ok = model::Validate(m);
  if (!ok) {
    return tl::unexpected(Error{ok.error().code, ok.error().message, path});
  }
  return out;
}

std::vector<std::string> ModelIds(const catalog::Catalog& catalog) {
  std::vector<std::string> ids;
  for (const catalog::DataFile& f : catalog.model_files()) {
    ids.push_back(std::filesystem::path(f.path).stem().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<ImportedModel> FindModel(const catalog::Catalog& catalog,
                                const std::string& name_or_path) {
  std::string name(Trim(name_or_path));
  std::string lname = ToLower(name);
  for (const catalog::DataFile& f : catalog.model_files()) {
    if (ToLower(std::filesystem::path(f.path).stem().string()) == lname) {
      return ParseHfConfig(f.contents, f.path);
    }
  }
  std::error_code ec;
  bool looks_like_path =
      name.find('/') != std::string::npos ||
      (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
  if (std::filesystem::is_regular_file(name, ec)) {
    std::ifstream in(name);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in && !in.eof()) return IoError("cannot read file", name);
    return ParseHfConfig(ss.str(), name);
  }
  if (looks_like_path) {
    return IoError("no such file '" + name +
                       "' (expected a HuggingFace config.json or a catalog "
                       "model)",
                   "model");
  }
  std::vector<std::string> ids = ModelIds(catalog);
  return NotFound("unknown model '" + name + "'" + DidYouMean(name, ids) +
                      "; `scalemodel models` lists all " +
                      std::to_string(ids.size()) +
                      ", or pass a path to a config.json",
                  "model");
}

}  // namespace scalemodel::ingest
