#include "scalemodel/ingest/hf_config.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_set>
#include <vector>

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

// Limits checked before a config.json is parsed into a tree (docs/units.md).
constexpr size_t kMaxJsonBytes = size_t{16} << 20;
constexpr int kMaxJsonDepth = 64;
// Caps on what the reader accepts (docs/units.md, "Limits").
constexpr long kMaxLayers = 100000;
constexpr long kMaxWidth = long{1} << 24;  // hidden sizes, heads, ranks
constexpr long kMaxVocab = long{1} << 26;
constexpr long kMaxExperts = long{1} << 16;
constexpr long kMaxPositions = long{1} << 40;  // context lengths, windows

// "path:LINE" and the column of byte `offset` of `text`.
struct TextPosition {
  std::string where;
  size_t column = 1;
};
TextPosition PositionOf(std::string_view text, size_t offset,
                        const std::string& path) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const size_t line = 1 + std::count(before.begin(), before.end(), '\n');
  const size_t newline = before.rfind('\n');
  const size_t column =
      newline == std::string_view::npos ? offset + 1 : offset - newline;
  return {path + ":" + std::to_string(line), column};
}

// The byte offset of the first bracket, outside strings, that opens a level
// deeper than kMaxJsonDepth; npos when there is none.
size_t TooDeepAt(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// A SAX pass that builds nothing and records the first syntax error or
// out-of-range number, with its position, so that no nlohmann exception
// text reaches a message.
class SyntaxCheck final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return Value(); }
  bool boolean(bool /*val*/) override { return Value(); }
  bool number_integer(number_integer_t /*val*/) override { return Value(); }
  bool number_unsigned(number_unsigned_t /*val*/) override { return Value(); }
  bool number_float(number_float_t /*val*/, const string_t& /*s*/) override {
    return Value();
  }
  bool string(string_t& /*val*/) override { return Value(); }
  bool binary(binary_t& /*val*/) override { return Value(); }
  bool start_object(std::size_t /*elements*/) override {
    Value();
    open_.push_back(Level{true, {}, nullptr, 0});
    return true;
  }
  // A key seen twice in one object: nlohmann keeps the last value without
  // a word, so `"num_hidden_layers": 32, ..., "num_hidden_layers": 8` would
  // be an 8-layer model.
  bool key(string_t& val) override {
    Level& top = open_.back();
    const auto [at, fresh] = top.keys.insert(val);
    if (!fresh) {
      twice_ = val;
      for (size_t i = 0; i + 1 < open_.size(); ++i) {
        twice_in_ += '/';
        twice_in_ += open_[i].object ? Excerpt(*open_[i].key, 40)
                                     : std::to_string(open_[i].items - 1);
      }
      return false;
    }
    top.key = &*at;  // a set's elements stay put as it grows
    return true;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) override {
    Value();
    open_.push_back(Level{false, {}, nullptr, 0});
    return true;
  }
  bool end_array() override {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const json::exception& ex) override {
    position_ = position;
    token_ = last_token;
    number_overflow_ = ex.id == 406;
    return false;
  }

  // The sentence for the recorded error, and where it is; `what` names the
  // text ("a config.json").
  Error ToError(std::string_view text, const std::string& path,
                const std::string& what) const {
    if (!twice_.empty()) {
      return Error{ErrorCode::kParse,
                   "expected each key once in " +
                       (twice_in_.empty() ? what : "each object of " + what) +
                       ", got '" + Excerpt(twice_, 40) + "' twice" +
                       (twice_in_.empty() ? "" : " in " + twice_in_),
                   path};
    }
    // nlohmann's position is one past the byte it stopped at.
    const size_t offset = position_ > 0 ? position_ - 1 : 0;
    TextPosition at = PositionOf(text, offset, path);
    std::string message;
    if (number_overflow_) {
      message = "expected a number within the range of a double, got " +
                Excerpt(token_);
    } else if (offset >= text.size()) {
      message = "expected more JSON, found the end of the text at column " +
                std::to_string(at.column);
    } else if (static_cast<unsigned char>(text[offset]) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "U+%04X",
                    static_cast<unsigned>(text[offset]));
      message = "expected valid JSON, found the control character " +
                std::string(code) + " at column " + std::to_string(at.column);
    } else {
      // The text from the byte the parser stopped at, to the line's end.
      std::string_view rest = text.substr(offset, 21);
      rest = rest.substr(0, rest.find('\n'));
      message = "expected valid JSON, found '" + Excerpt(rest, 20) +
                "' at column " + std::to_string(at.column);
    }
    return Error{ErrorCode::kParse, message, at.where};
  }

 private:
  // An open object (its keys so far, the latest of them) or array (its
  // items so far), for the JSON pointer of a repeated key.
  struct Level {
    bool object;
    std::unordered_set<std::string> keys;
    const std::string* key;  // in `keys`
    size_t items;
  };
  // Counts an item of the array that holds it.
  bool Value() {
    if (!open_.empty() && !open_.back().object) ++open_.back().items;
    return true;
  }

  std::vector<Level> open_;
  std::string twice_;     // the repeated key
  std::string twice_in_;  // its object's JSON pointer ("" at the top)
  size_t position_ = 0;
  std::string token_;
  bool number_overflow_ = false;
};

tl::unexpected<Error> TooLarge(uintmax_t bytes, const std::string& path,
                               const std::string& what = "a config.json") {
  return ParseError("expected " + what + " of at most 16 MiB, got " +
                        FormatNumber(static_cast<double>(bytes) /
                                     static_cast<double>(1 << 20)) +
                        " MiB",
                    path);
}

}  // namespace

Result<void> CheckJsonText(std::string_view text, const std::string& path,
                           const std::string& what) {
  if (text.size() > kMaxJsonBytes) return TooLarge(text.size(), path, what);
  if (size_t at = TooDeepAt(text); at != std::string_view::npos) {
    TextPosition p = PositionOf(text, at, path);
    return ParseError("expected JSON nested at most " +
                          std::to_string(kMaxJsonDepth) +
                          " levels deep, found deeper nesting at column " +
                          std::to_string(p.column),
                      p.where);
  }
  SyntaxCheck check;
  if (!json::sax_parse(text.begin(), text.end(), &check)) {
    return tl::unexpected(check.ToError(text, path, what));
  }
  return {};
}

namespace {

// Parses `text` into a tree after checking its size, nesting depth, syntax
// and number range; every failure is one sentence.
Result<json> ParseJsonText(std::string_view text, const std::string& path) {
  if (auto ok = CheckJsonText(text, path); !ok) {
    return tl::unexpected(ok.error());
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception&) {
    return ParseError("expected valid JSON", path);
  }
}

// "a string", "an object": a JSON value's type for messages.
std::string TypeOf(const json& v) {
  const std::string name = v.type_name();
  return (name == "object" || name == "array" ? "an " : "a ") + name;
}

// Typed reads of config.json keys with aliases: the language model's object
// (text_config in multimodal wrappers) first, then the top level. Marks
// every alias as used; the first type or range error wins, with the key's
// JSON path.
class Reader {
 public:
  Reader(const json& root, const json& lm, std::string prefix)
      : root_(root), lm_(lm), prefix_(std::move(prefix)) {}

  struct Found {
    const json* value = nullptr;
    std::string path;  // "/text_config/hidden_size"
  };
  Found Find(std::initializer_list<const char*> names) {
    for (const json* obj : {&lm_, &root_}) {
      for (const char* n : names) {
        used.insert(n);
        auto it = obj->find(n);
        if (it != obj->end() && !it->is_null()) {
          return {&*it,
                  (obj == &lm_ && &lm_ != &root_ ? "/text_config/" : "/") +
                      std::string(n)};
        }
      }
    }
    return {};
  }
  bool Has(std::initializer_list<const char*> names) {
    return Find(names).value != nullptr;
  }
  void Fail(const std::string& json_path, const std::string& message) {
    if (!error)
      error = Error{ErrorCode::kParse, json_path + ": " + message, ""};
  }
  // An integer from 0 to `max`; 0 when absent or wrong.
  long Integer(std::initializer_list<const char*> names, bool required,
               long max) {
    Found f = Find(names);
    if (!f.value) {
      if (required) missing.push_back(prefix_ + *names.begin());
      return 0;
    }
    const std::string expected = "expected a non-negative integer of at most " +
                                 std::to_string(max) + ", got ";
    if (!f.value->is_number_integer()) {
      Fail(f.path, expected + (f.value->is_number() ? Excerpt(f.value->dump())
                                                    : TypeOf(*f.value)));
      return 0;
    }
    const bool in_range =
        f.value->is_number_unsigned()
            ? f.value->get<uint64_t>() <= static_cast<uint64_t>(max)
            : f.value->get<int64_t>() >= 0 && f.value->get<int64_t>() <= max;
    if (!in_range) {
      Fail(f.path, expected + Excerpt(f.value->dump()));
      return 0;
    }
    return static_cast<long>(f.value->get<int64_t>());
  }
  bool Boolean(std::initializer_list<const char*> names, bool dflt) {
    Found f = Find(names);
    if (!f.value) return dflt;
    if (!f.value->is_boolean()) {
      Fail(f.path, "expected true or false, got " + TypeOf(*f.value));
      return dflt;
    }
    return f.value->get<bool>();
  }
  std::string String(std::initializer_list<const char*> names) {
    Found f = Find(names);
    return f.value ? StringOf(*f.value, f.path) : std::string();
  }
  // `v` as a string, or "" and an error naming `json_path`.
  std::string StringOf(const json& v, const std::string& json_path) {
    if (v.is_null()) return "";
    if (!v.is_string()) {
      Fail(json_path, "expected a string, got " + TypeOf(v));
      return "";
    }
    return v.get<std::string>();
  }
  // The array under one of `names`, or nullptr (absent, or an error).
  const json* Array(std::initializer_list<const char*> names) {
    Found f = Find(names);
    if (f.value && !f.value->is_array()) {
      Fail(f.path, "expected an array, got " + TypeOf(*f.value));
      return nullptr;
    }
    return f.value;
  }

  std::set<std::string> used;
  std::vector<std::string> missing;
  std::optional<Error> error;

 private:
  const json& root_;
  const json& lm_;
  std::string prefix_;
};

// A compressed-tensors quantization_config's 4-bit weight format: "int4"
// or "fp4" when a config group stores 4-bit weights (weights.num_bits 4,
// type int or float), else null.
const char* FourBitGroups(const json& quant) {
  const json groups = quant.value("config_groups", json());
  if (!groups.is_object()) return nullptr;
  for (const auto& [name, g] : groups.items()) {
    if (!g.is_object()) continue;
    const json w = g.value("weights", json());
    if (!w.is_object()) continue;
    const json bits = w.value("num_bits", json());
    if (!bits.is_number_integer() || bits.get<long>() != 4) continue;
    const json type = w.value("type", json());
    return type.is_string() && type.get<std::string>() == "float" ? "fp4"
                                                                  : "int4";
  }
  return nullptr;
}

// Whether a compressed-tensors `ignore` list leaves the attention
// unquantized (an entry naming self_attn).
bool IgnoresAttention(const json& quant) {
  const json ignore = quant.value("ignore", json());
  if (!ignore.is_array()) return false;
  for (const json& e : ignore) {
    if (e.is_string() &&
        e.get<std::string>().find("self_attn") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Families whose attention always normalizes q and k (RMSNorm per head, or
// over all heads for MiniMax-M2) before RoPE; other configs say so with
// "use_qk_norm".
bool QkNormFamily(const std::string& model_type) {
  static const std::set<std::string> kQkNorm = {
      "qwen3",       "qwen3_moe", "qwen3_next", "gemma3",
      "gemma3_text", "olmo2",     "minimax_m2"};
  return kQkNorm.count(model_type) > 0;
}

}  // namespace

Result<ImportedModel> ParseHfConfig(std::string_view json_text,
                                    const std::string& path) {
  auto parsed = ParseJsonText(json_text, path);
  if (!parsed) return tl::unexpected(parsed.error());
  const json& root = *parsed;
  if (!root.is_object()) {
    return ParseError(
        "expected a JSON object such as a HuggingFace config.json, got " +
            TypeOf(root),
        path);
  }
  ImportedModel out;
  model::ModelSpec& m = out.spec;
  // Multimodal wrappers nest the language model under text_config.
  const json* lm = &root;
  std::string prefix;
  if (auto it = root.find("text_config"); it != root.end() && !it->is_null()) {
    if (!it->is_object()) {
      return ParseError("/text_config: expected an object, got " + TypeOf(*it),
                        path);
    }
    lm = &*it;
    prefix = "text_config.";
    out.notes.emplace_back("read the language model from text_config");
  }
  Reader r(root, *lm, prefix);
  auto integer = [&r](std::initializer_list<const char*> names, bool required,
                      long max = kMaxWidth) {
    return r.Integer(names, required, max);
  };
  auto boolean = [&r](std::initializer_list<const char*> names, bool dflt) {
    return r.Boolean(names, dflt);
  };
  auto string = [&r](std::initializer_list<const char*> names) {
    return r.String(names);
  };
  std::set<std::string>& used = r.used;

  std::string type = string({"model_type"});
  std::string top_type =
      lm == &root ? type
                  : r.StringOf(root.value("model_type", json()), "/model_type");
  m.id = type;
  m.d_model = integer({"hidden_size", "n_embd", "d_model"}, true);
  m.num_layers = static_cast<int>(integer(
      {"num_hidden_layers", "n_layer", "num_layers"}, true, kMaxLayers));
  m.num_heads = static_cast<int>(
      integer({"num_attention_heads", "n_head", "num_heads"}, true));
  m.vocab = integer({"vocab_size"}, true, kMaxVocab);
  long kv =
      integer({"num_key_value_heads", "num_kv_heads", "n_head_kv"}, false);
  if (kv == 0 && boolean({"multi_query"}, false)) kv = 1;
  m.num_kv_heads = kv > 0 ? static_cast<int>(kv) : m.num_heads;
  long hd = integer({"head_dim"}, false);
  // Without head_dim the heads split hidden_size evenly (HF's
  // hidden_size // num_attention_heads); MLA configs give their own widths.
  if (hd == 0 && m.num_heads > 0 && m.d_model % m.num_heads != 0 &&
      !r.Has({"kv_lora_rank"})) {
    r.Fail(r.Find({"hidden_size", "n_embd", "d_model"}).path,
           "expected a multiple of num_attention_heads=" +
               std::to_string(m.num_heads) + " (or a head_dim key), got " +
               std::to_string(static_cast<long>(m.d_model)));
  }
  m.head_dim =
      hd > 0
          ? static_cast<int>(hd)
          : (m.num_heads > 0 ? static_cast<int>(m.d_model / m.num_heads) : 0);
  m.max_positions =
      integer({"max_position_embeddings", "n_positions", "max_seq_len"}, false,
              kMaxPositions);
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
  m.qk_norm = boolean({"use_qk_norm"}, QkNormFamily(type));
  const std::string qk_norm_type = string({"qk_norm_type"});
  m.qk_norm_all_heads =
      m.qk_norm && (qk_norm_type == "per_layer" ||
                    (qk_norm_type.empty() && type == "minimax_m2"));

  // MoE: three names for the expert count.
  long experts =
      integer({"num_local_experts", "num_experts", "n_routed_experts"}, false,
              kMaxExperts);
  // Dense FFN width; MoE-only models may leave it unused.
  long ffn =
      integer({"intermediate_size", "n_inner", "ffn_dim", "d_ff"}, false);
  if (ffn == 0 && kPlainMlp.count(type) > 0) ffn = 4 * m.d_model;
  m.ffn = ffn;
  if (experts > 0) {
    m.moe.num_experts = static_cast<int>(experts);
    m.moe.top_k = static_cast<int>(integer(
        {"num_experts_per_tok", "moe_topk", "top_k"}, true, kMaxExperts));
    long expert_ffn = integer({"moe_intermediate_size", "expert_ffn"}, false);
    m.moe.expert_ffn = expert_ffn > 0 ? expert_ffn : ffn;
    m.moe.num_shared_experts = static_cast<int>(integer(
        {"n_shared_experts", "num_shared_experts"}, false, kMaxExperts));
    long shared_width = integer({"shared_expert_intermediate_size"}, false);
    if (shared_width > 0) {
      // Qwen2-MoE: one shared expert of this width.
      m.moe.shared_ffn = shared_width;
      if (m.moe.num_shared_experts == 0) m.moe.num_shared_experts = 1;
    }
    m.moe.first_dense_layers =
        static_cast<int>(integer({"first_k_dense_replace"}, false, kMaxLayers));
    m.moe.topk_group =
        static_cast<int>(integer({"topk_group"}, false, kMaxExperts));
    // The router's groups (n_group) and correction bias: DeepSeek-V3 and
    // Kimi K2 name it topk_method "noaux_tc"; GLM-4.5/4.6 (glm4_moe) always
    // carry e_score_correction_bias, one group unless n_group says
    // otherwise (transformers' Glm4MoeConfig defaults n_group 1).
    m.moe.expert_groups =
        static_cast<int>(integer({"n_group"}, false, kMaxExperts));
    // The router views its experts as n_group equal groups.
    if (m.moe.expert_groups > 0 &&
        m.moe.num_experts % m.moe.expert_groups != 0) {
      r.Fail(r.Find({"n_group"}).path,
             "expected a divisor of the " + std::to_string(m.moe.num_experts) +
                 " routed experts (the router splits them into n_group "
                 "equal groups), got " +
                 std::to_string(m.moe.expert_groups));
    }
    const std::string topk_method = string({"topk_method"});
    m.moe.router_bias = topk_method == "noaux_tc" || type == "glm4_moe";
    if (type == "glm4_moe" && m.moe.expert_groups == 0) {
      m.moe.expert_groups = 1;
    }
    long freq =
        integer({"moe_layer_freq", "decoder_sparse_step"}, false, kMaxLayers);
    m.moe.layer_freq = freq > 0 ? static_cast<int>(freq) : 1;
    if (const json* dense = r.Array({"mlp_only_layers"});
        dense && !dense->empty() &&
        dense->size() <= static_cast<size_t>(kMaxLayers)) {
      out.notes.emplace_back(
          "mlp_only_layers is approximated by its count as "
          "leading dense layers");
      m.moe.first_dense_layers = static_cast<int>(dense->size());
    }
  }
  // DeepSeek MLA.
  if (r.Has({"kv_lora_rank"})) {
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
  long window = integer({"sliding_window"}, false, kMaxPositions);
  bool use_window = boolean({"use_sliding_window"}, true);
  if (window > 0 && use_window) {
    m.sliding_window = window;
    if (const json* types = r.Array({"layer_types"})) {
      for (size_t i = 0; i < types->size(); ++i) {
        m.sliding_layers.push_back(
            r.StringOf((*types)[i], "/layer_types/" + std::to_string(i)) ==
            "sliding_attention");
      }
    } else if (long pattern =
                   integer({"sliding_window_pattern"}, false, kMaxLayers);
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
  m.mtp_layers = static_cast<int>(
      integer({"num_nextn_predict_layers"}, false, kMaxLayers));
  if (m.mtp_layers > 0) {
    out.notes.push_back(
        "the " + std::to_string(m.mtp_layers) +
        " multi-token-prediction module(s) are not in the parameter count; "
        "training estimates run them on the last pipeline stage "
        "(--mtp-layers 0 drops them), serving does not");
  }
  // Checkpoint dtype: v4 torch_dtype, v5 dtype; FP8 quantization wins.
  std::string dtype =
      r.StringOf(root.value("torch_dtype", json()), "/torch_dtype");
  if (dtype.empty()) dtype = r.StringOf(root.value("dtype", json()), "/dtype");
  if (dtype.empty()) dtype = string({"torch_dtype", "dtype"});
  if (!dtype.empty()) {
    auto d = hw::ParseDtype(dtype);
    if (d) m.weight_dtype = *d;
  }
  used.insert("quantization_config");
  const json quant = root.value("quantization_config", json());
  if (!quant.is_null() && !quant.is_object()) {
    r.Fail("/quantization_config", "expected an object, got " + TypeOf(quant));
  } else if (quant.is_object()) {
    std::string method =
        ToLower(r.StringOf(quant.value("quant_method", json()),
                           "/quantization_config/quant_method"));
    if (method == "fp8") {
      m.weight_dtype = hw::Dtype::kFp8;
      // weight_block_size [n, k]: block-scaled fp8 (DeepSeek-V3's
      // [128, 128]); absent: one scale per tensor or channel.
      const json block = quant.value("weight_block_size", json());
      if (block.is_array() && block.size() == 2 && block[1].is_number() &&
          block[1].get<double>() >= 1 && block[1].get<double>() <= 1 << 20) {
        m.fp8_block_k = static_cast<int>(block[1].get<double>());
      } else if (!block.is_null()) {
        r.Fail("/quantization_config/weight_block_size",
               "expected two block sizes [n, k] of 1 to 1048576, got " +
                   Excerpt(block.dump()));
      }
    } else if (method == "mxfp4") {
      // gpt-oss: MXFP4 routed experts; attention, router, embeddings and
      // the output layer stay in the checkpoint's dtype
      // (quantization_config.modules_to_not_convert).
      const std::string base(hw::DtypeName(m.weight_dtype));
      out.notes.push_back(
          "quantization method 'mxfp4': the routed experts are MXFP4 and the "
          "rest " +
          base + "; serve with --weights " + base + " --expert-weights fp4");
    } else if (const char* dt = method == "compressed-tensors"
                                    ? FourBitGroups(quant)
                                    : nullptr) {
      // llm-compressor's 4-bit checkpoints (Kimi K2 Thinking: INT4 routed
      // experts, its `ignore` list naming attention, shared experts and
      // dense MLPs): the experts alone when the attention is ignored.
      const std::string base(hw::DtypeName(m.weight_dtype));
      out.notes.push_back(
          IgnoresAttention(quant)
              ? "quantization method 'compressed-tensors': 4-bit (" +
                    std::string(dt) +
                    ") weights outside its ignore list, which names the "
                    "attention; serve with --weights " +
                    base + " --expert-weights " + dt
              : "quantization method 'compressed-tensors': 4-bit (" +
                    std::string(dt) + ") weights; serve with --weights " + dt);
    } else if (!method.empty()) {
      out.notes.push_back("quantization method '" + method +
                          "' is not modelled; weights counted at " +
                          std::string(hw::DtypeName(m.weight_dtype)));
    }
  }
  used.insert("text_config");
  used.insert("multi_query");
  used.insert("position_embedding_type");
  // The catalog's own block: id, display name, source, engine names.
  const json meta = root.value("_scalemodel", json());
  auto meta_string = [&](const char* key, const std::string& dflt) {
    auto it = meta.find(key);
    if (it == meta.end() || it->is_null()) return dflt;
    return r.StringOf(*it, std::string("/_scalemodel/") + key);
  };
  if (!meta.is_null() && !meta.is_object()) {
    r.Fail("/_scalemodel", "expected an object, got " + TypeOf(meta));
  } else if (meta.is_object()) {
    m.id = meta_string("id", m.id);
    m.name = meta_string("name", m.id);
    m.source = meta_string("source", "");
    out.engine_names.hf_repo = meta_string("hf_repo", "");
    out.engine_names.maxtext_model = meta_string("maxtext_model", "");
    out.engine_names.torchtitan_model = meta_string("torchtitan_model", "");
    out.engine_names.torchtitan_flavor = meta_string("torchtitan_flavor", "");
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
  if (r.error)
    return tl::unexpected(Error{r.error->code, r.error->message, path});
  const std::vector<std::string>& missing = r.missing;
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

Result<ImportedModel> ReadHfConfigFile(const std::string& path) {
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxJsonBytes) return TooLarge(bytes, path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return IoError("cannot read file", path);
  return ParseHfConfig(ss.str(), path);
}

}  // namespace scalemodel::ingest
