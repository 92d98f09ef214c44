// Inference estimator (book: "inference", "applied-inference"; docs/model.md
// section 7): prefill and decode step times from weight streaming, KV-cache
// streaming and FLOPs, the collectives of the sharding, memory per chip,
// maximum batch, TTFT, time per output token, throughput and cost.
//
// Example:
//   estimate::ServeConfig cfg{.tp = 8, .batch = 64, .prompt = 2048,
//                             .output = 512};
//   auto e = estimate::EstimateServing(llama70b, v5e_4x8, cfg);
#ifndef SCALEMODEL_ESTIMATE_INFERENCE_H_
#define SCALEMODEL_ESTIMATE_INFERENCE_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::estimate {

// Speculative decoding (docs/model.md 7.4): each decode step drafts k
// tokens per sequence and verifies them in one target pass over k + 1
// tokens; `accept` holds the acceptance probability of draft position i
// given that positions before it were accepted (one value: the same at
// every position, Leviathan et al. 2023's alpha).
struct SpecDecode {
  enum Kind {
    kNone,
    kMtp,    // multi-token-prediction module (DeepSeek-V3): one layer
    kEagle,  // EAGLE draft head: one decoder layer, the target's LM head
    kDraft,  // a separate draft model, k forward passes
    kNgram,  // prompt lookup (n-gram): no model, no device time
  };
  Kind kind = kNone;
  int k = 0;                   // draft tokens per step
  std::vector<double> accept;  // 1 or k values in [0, 1]
  // kDraft: the draft model (runs with the target's tp, weights and KV
  // dtypes on the same chips).
  std::shared_ptr<const model::ModelSpec> draft;
  // kDraft: the draft's checkpoint (HuggingFace repo or directory) for
  // launch lines; no effect on the estimate.
  std::string draft_repo;
  bool on() const { return kind != kNone; }
};

// Expected tokens one verify step yields per sequence:
// 1 + sum_i prod_{j <= i} a_j; with one a, (1 - a^(k+1)) / (1 - a)
// (Leviathan et al. 2023, eq. 1). 1 without speculation.
double SpecExpectedTokens(const SpecDecode& spec);

// The expert-parallel load imbalance factor of routed experts: the most
// loaded rank's routed tokens over the mean (docs/model.md 7.5): 1 without
// expert parallelism.
double ExpertImbalance(int ep, int num_experts, int redundant_experts);

struct ServeConfig {
  int tp = 1;  // tensor parallel within one replica
  int ep = 1;  // expert parallel (MoE), within one replica
  int pp = 1;  // pipeline stages within one replica (layers split)
  int dp = 1;  // replicas; tp * ep * pp * dp = chips
  // Data-parallel attention (SGLang --enable-dp-attention, TensorRT-LLM
  // enable_attention_dp): the ep ranks of a replica each run attention,
  // dense MLPs and shared experts for their own 1/ep of the sequences with
  // their own copy of those weights; routed experts stay split over ep.
  bool dp_attention = false;
  // Redundant routed-expert copies over the replica (DeepSeek EPLB): ep
  // divides num_experts + redundant_experts.
  int redundant_experts = 0;
  SpecDecode spec;
  double batch = 1;      // concurrent sequences per replica
  double prompt = 1024;  // prompt tokens
  double output = 256;   // generated tokens
  hw::Dtype weights = hw::Dtype::kBf16;
  // The routed experts' weights when the checkpoint quantizes them alone
  // (gpt-oss: MXFP4 experts, bf16 attention; Kimi K2 Thinking: INT4
  // experts): their bytes, their GEMMs' compute dtype and their fused-MoE
  // fit. Unset: `weights`.
  std::optional<hw::Dtype> expert_weights;
  hw::Dtype ExpertWeights() const { return expert_weights.value_or(weights); }
  hw::Dtype kv = hw::Dtype::kBf16;
  Mode mode = Mode::kRealistic;
  // The engine's static memory fraction (SGLang --mem-fraction-static,
  // vLLM --gpu-memory-utilization): weights and KV cache get this fraction
  // of the device's memory (hw::Chip::DeviceMemory), the rest is left to
  // activations and CUDA graphs. 0 (the default): 95% of the datasheet
  // capacity (realistic mode; peak mode all of it).
  double memory_fraction = 0;
  // TensorRT-LLM's KV-cache fraction (kv_cache_config
  // free_gpu_memory_fraction, trtllm-serve
  // --kv_cache_free_gpu_memory_fraction): the KV cache gets this fraction of
  // the device's memory left after the weights and the 5% activation allowance.
  // 0: unset. At most one of the two fractions is set.
  double kv_free_fraction = 0;
  double price_per_chip_hour = 0;  // 0: catalog price
  // Host (CPU) time per step the engine does not overlap with the GPU
  // (realistic mode; docs/model.md 7.2): a fixed time per step plus a
  // fraction of the step's GPU time. Zero (the default): an engine whose
  // scheduler runs a step ahead of the GPU (SGLang >= 0.4, vLLM V1,
  // TensorRT-LLM). EngineHostTime gives the measured values by version.
  double host_step_s = 0;
  double host_fraction = 0;
  // Host (CPU) time per op (kernel-launching call) of a step with prefill
  // tokens that the engine runs eagerly, without a CUDA graph (realistic
  // mode, GPUs; docs/model.md 7.2): such a step takes
  // EagerPrefillOps(model) x this, the time the host takes to launch its
  // kernels, on top of its GPU time. Zero (the default): engines that capture
  // prefill in CUDA graphs or were not measured. EngineHostTime gives it.
  double eager_prefill_op_s = 0;
  // The engine captures prefill steps in piecewise CUDA graphs by default
  // where its rules allow them (SGLang from 0.5.10: NVIDIA GPUs before
  // Blackwell, no DP attention, no pipeline stages; docs/model.md 7.2):
  // there the eager host time does not apply. EngineHostTime gives it;
  // `serve --no-piecewise-cuda-graph` clears it.
  bool prefill_graph_default = false;
  // The engine release the host times above are those of and their source
  // (serve --engine, validation rows); empty when none applies.
  std::string host_time_source;
  // The serving engine: "vllm", "sglang", "trtllm" or empty (unknown). It
  // picks the chip's measured in-graph all-reduce curve (realistic mode;
  // unknown: vLLM's). ApplyEngineHostTime sets it (EngineFamily).
  std::string engine;
  // The MoE runner the engine runs the routed experts with (SGLang
  // --moe-runner-backend: "flashinfer_trtllm", "triton", ...); empty or
  // "auto": the engine's own choice (MoeRunner). A runner with a measured
  // fit on the chip (catalog [[moe_engine]] with `kernel`) takes that fit.
  std::string moe_runner;
  // SGLang's --attention-backend ("fa3", "flashinfer", "trtllm_mla", ...);
  // empty: the engine's own choice (FlashAttention-3 for MLA models on
  // Hopper). Only fa3 (or empty) takes the chip's mla_fp8_kv_token.
  std::string attention_backend;
  // The engine as named with its release ("sglang@0.5.6"); empty when
  // unknown. ApplyEngineHostTime sets it; the release rules read it
  // (EngineDefaultsToFlashinferMoe, EngineFusesSharedExperts).
  std::string engine_release;
  // The engine may run the shared expert inside the fused-MoE op where its
  // rules allow (SGLang's shared-experts fusion, SharedExpertsFused);
  // false: SGLang's --disable-shared-experts-fusion.
  bool shared_experts_fusion = true;
};

// Whether an engine release fuses DeepSeek's shared expert into the routed
// experts' fused-MoE op by default (SGLang from 0.4.8 on NVIDIA GPUs, from
// 0.5.6 on AMD ones; no release: the current one).
bool EngineFusesSharedExperts(std::string_view engine, bool amd);

// Whether the replica runs the shared expert as one more expert of the
// fused-MoE op (realistic mode, docs/model.md 7.2): SGLang's rule
// (determine_num_fused_shared_experts) for DeepSeek-V3's architecture (MLA,
// 256 routed experts, one shared) without expert parallelism, not with int4
// experts, and not with a FlashInfer runner (`runner`, MoeRunner), where
// cfg.shared_experts_fusion holds and the release fuses by default.
bool SharedExpertsFused(const hw::Chip& chip, const model::ModelSpec& m,
                        const ServeConfig& cfg, std::string_view runner);

// Whether SGLang routes the replica's tokens with its torch.compile'd
// grouped top-k instead of one fused kernel (realistic mode, docs/model.md
// 7.2): an NVIDIA GPU, a grouped router with a correction bias
// (m.moe.router_bias, m.moe.expert_groups), no flashinfer_trtllm runner
// (`runner`, MoeRunner), and an expert count the fused kernels do not
// take (more than 32 per group or not a power of two; Kimi K2's 384 in one
// group from 0.5.6). GLM-4.5/4.6 (160 experts, one group) does.
bool UnfusedRouter(const hw::Chip& chip, const model::ModelSpec& m,
                   const ServeConfig& cfg, std::string_view runner);

// The MoE runner the replica runs (realistic mode, docs/model.md 7.2):
// `cfg.moe_runner` when given (other than "auto"); else SGLang's own
// choice, "flashinfer_trtllm" where the release picks it
// (EngineDefaultsToFlashinferMoe of cfg.engine_release) on an
// NVIDIA GPU with fp4 tensor cores (Blackwell) for a model with MLA and
// routed experts (DeepSeek-V3's architecture) in fp8 or fp4; else empty
// (the engine's default kernel).
std::string MoeRunner(const hw::Chip& chip, const model::ModelSpec& m,
                      const ServeConfig& cfg);

// Whether an engine release picks the FlashInfer TensorRT-LLM MoE runner by
// itself (SGLang from 0.5.4, or no release: the current one).
bool EngineDefaultsToFlashinferMoe(std::string_view engine);

// Reads an SGLang MoE runner name (--moe-runner-backend): auto, triton,
// triton_kernel, deep_gemm, cutlass, marlin or flashinfer_trtllm,
// flashinfer_trtllm_routed, flashinfer_cutlass, flashinfer_cutedsl,
// flashinfer_mxfp4; an unknown one is an error naming `where`.
Result<std::string> ParseMoeRunner(std::string_view text,
                                   const std::string& where);

// SGLang's --attention-backend names (server_args.py's choices), lower
// case; an error names `where` with "did you mean" for a near miss.
Result<std::string> ParseAttentionBackend(std::string_view text,
                                          const std::string& where);

// Errors when `cfg.expert_weights` is given for a dense model (one
// sentence naming --expert-weights); EstimateServing checks it too.
Result<bool> CheckExpertWeights(const model::ModelSpec& m,
                                const ServeConfig& cfg);

// The engine family a row or a user names: "SGLang v0.5.6" -> "sglang",
// "vllm@0.6.3" -> "vllm", "TensorRT-LLM v0.6.1" and "NeMo Framework
// (TensorRT-LLM)" -> "trtllm"; empty for others.
std::string EngineFamily(std::string_view engine);

// The release after an engine's name, after its first space or '@' and an
// optional 'v' ("sglang@0.5.6", "SGLang v0.5.6.post1", "vllm@0.14"):
// `parts` numbers read from its leading "major.minor.patch" (those missing
// are 0); -1: the name carries no release (the engine's current one); 0:
// one that does not start with a number or has a part of more than five
// digits (no engine's), read as no known release.
struct EngineRelease {
  int parts = -1;
  long major = 0, minor = 0, patch = 0;
  // Whether the release is major.minor.patch or later (false when unread).
  bool AtLeast(long ma, long mi, long pa = 0) const {
    if (parts < 1) return false;
    if (major != ma) return major > ma;
    if (minor != mi) return minor > mi;
    return patch >= pa;
  }
};
EngineRelease ParseEngineRelease(std::string_view engine);

// Host time per step of an engine version whose scheduler waits for the
// GPU: a measured value with its source.
struct EngineHostOverhead {
  double step_s = 0;    // fixed per step, s
  double fraction = 0;  // of the step's GPU time
  // Host launch time per op of an eager prefill step, s.
  double eager_prefill_op_s = 0;
  // Prefill steps run as piecewise CUDA graphs by default where the
  // engine's rules allow (ServeConfig::prefill_graph_default).
  bool prefill_graph_default = false;
  std::string source;
};

// Whether an engine whose prefill graphs are on by default
// (ServeConfig::prefill_graph_default) can run them for this chip and
// plan: NVIDIA GPUs before Blackwell, without DP attention or pipeline
// stages (SGLang's rules; docs/model.md 7.2).
bool PiecewiseGraphsApply(const hw::Chip& chip, const ServeConfig& cfg);

// The ops (kernel-launching calls: GEMMs, norms, RoPE, KV stores,
// attention, activations, routing, collectives) one eager forward of
// `m` issues in SGLang 0.5's extend path, summed over its layers from a
// table of per-block counts (docs/model.md 7.2 *eager prefill*).
// quantized_activations: fp8/fp4 GEMMs, each preceded by an activation
// quantization kernel; tensor_parallel: two all-reduces per layer.
//   EagerPrefillOps(deepseek_v3, true, true) == 2044
// unfused_router: SGLang's torch.compile'd grouped top-k (UnfusedRouter),
// eight ops more per MoE layer.
double EagerPrefillOps(const model::ModelSpec& m, bool quantized_activations,
                       bool tensor_parallel, bool unfused_router = false);

// The request path of a served engine (docs/model.md 7.3): the time a
// request spends outside the engine's steps between a benchmark client's
// send and its receipt of the first token (the HTTP front end, chat template
// and tokenizing, the hop to the scheduler, the detokenizer and the
// streamed chunk's way back). 6.9 ms, measured on SGLang 0.5.11 with a mock
// forward of known length: median TTFT 9.54 ms at a 128-token prompt,
// concurrency 1, against a forward of 2.632 ms (tenstorrent/
// tt-inference-server issue #3560, 2026-05-18; `vllm bench serve
// --backend openai-chat`). It stands for vLLM's and TensorRT-LLM's
// (trtllm-serve) too: vLLM's small-model TTFTs on an A100 (Qwen3-0.6B and
// 1.7B, 128-token prompts: 12.4 and 11.4 ms against steps of 4.2 and
// 4.6 ms, tenstorrent/tt-inference-server issue #340) leave 7-8 ms.
inline constexpr double kRequestPathS = 9.54e-3 - 2.632e-3;
// The request path of the engine a row or a user names: kRequestPathS for
// SGLang, vLLM and TensorRT-LLM (any release), 0 for unknown names.
double EngineRequestPath(std::string_view engine);

// The host time of the engine a row or a user names: "SGLang v0.3.0",
// "vLLM v0.6.0", "sglang@0.3", "vllm@0.6.3". Zero for engines and versions
// that overlap the host work with the GPU, and for unknown names.
//   EngineHostTime("SGLang v0.3.0").fraction == 0.10
EngineHostOverhead EngineHostTime(std::string_view engine);

// serve --engine: "vllm", "sglang" or "trtllm" (alias "tensorrt-llm"),
// optionally "@VERSION" with a leading digit ("sglang@0.5.6",
// "vllm@v0.6.0"); the host time EngineHostTime has for that release (zero
// without a version or for releases that overlap it). Errors name what was
// expected; `where` is "engine".
Result<EngineHostOverhead> ParseServingEngine(std::string_view text);

// Sets `cfg`'s host times to `host`'s and host_time_source to "ENGINE:
// SOURCE" (empty when `host` adds nothing).
void ApplyEngineHostTime(std::string_view engine,
                         const EngineHostOverhead& host, ServeConfig* cfg);

// A launch's piecewise CUDA graphs for prefill over the engine's default:
// 1 on (no eager-prefill host time), 0 off (that time even where the engine's
// default captures prefill, ServeConfig::prefill_graph_default), -1 the
// engine's default (`serve --piecewise-cuda-graph` /
// `--no-piecewise-cuda-graph`, a validation case's piecewise_cuda_graph).
void ApplyPrefillGraph(int setting, ServeConfig* cfg);

// The measured fused-MoE kernel of a decode step on a GPU (vLLM's and
// SGLang's Triton `fused_moe`: top-k, the token sort by expert, the two
// grouped expert GEMMs, the gated activation and the weighted sum): a fixed
// time plus the touched experts' weight bytes at a fraction of the chip's
// HBM peak, fitted to the kernel's measured times by batch (docs/model.md
// 7.2). floor_s == 0: no measurement for this dtype. From a tile's rows per
// expert up (prefill, large batches) the kernel is at least its FLOPs at
// `compute_fraction` of the chip's dense peak for the dtype, measured at
// the largest published batches; 0: no measurement (the dense GEMM rule).
struct FusedMoeKernel {
  double floor_s = 0;           // the kernel's time without weights, s
  double stream_fraction = 0;   // expert weight bytes, of the HBM peak
  double compute_fraction = 0;  // expert FLOPs, of the dense peak
  // Prefill: per token-expert pair, 8 bytes per hidden element at this
  // fraction of the HBM peak (catalog moe_prefill_act); 0: no such term.
  double act_fraction = 0;
  std::string source;
  std::string compute_source;
};

// The fit for experts whose GEMMs run with `weights` at the `compute`
// dtype: bf16 weights, or fp8 weights on a chip with an fp8 rate.
//   MeasuredFusedMoe(kBf16, kBf16).floor_s == 27.1e-6
FusedMoeKernel MeasuredFusedMoe(hw::Dtype weights, hw::Dtype compute);
// The same on `chip` run by `engine` ("vllm", "sglang", "trtllm" or empty):
// the engine's own decode fit on the chip ([[moe_engine]]), else the chip's
// fit over every engine (catalog `moe_floor` and `moe_stream`, or the
// `_fp8` pair), in place of the published fit's floor and streaming
// fraction (aiconfigurator's MoE tables for H100, H200 and B200). The
// compute fraction stays.
//   MeasuredFusedMoe(h200, "", kBf16, kBf16).floor_s == 31.4e-6
// With a `runner` (MoeRunner) that the chip has the engine's fit of
// ([[moe_engine]] with that `kernel`), that fit's decode terms; fp4
// weights at the fp4 rate read its "nvfp4" fit.
//   MeasuredFusedMoe(h200, "", kBf16, kBf16).floor_s == 31.4e-6
//   MeasuredFusedMoe(b200, "sglang", kBf16, kBf16).stream_fraction == 0.718
//   MeasuredFusedMoe(b200, "sglang", kFp8, kFp8, "flashinfer_trtllm")
//       .floor_s == 22.4e-6
FusedMoeKernel MeasuredFusedMoe(const hw::Chip& chip, std::string_view engine,
                                hw::Dtype weights, hw::Dtype compute,
                                std::string_view runner = {});

// The parts of one engine step (docs/model.md 7.2). They add up to the step
// time exactly: total() is the step time, by definition.
struct StepParts {
  // The GEMMs: per GEMM the larger of its FLOPs at the matrix-unit rate for
  // its row count and its weight bytes at the achievable HBM bandwidth.
  units::Seconds matmul;
  // Paged-KV reads of the decoding sequences (or their attention FLOPs, the
  // larger) plus the prefill tokens' attention FLOPs.
  units::Seconds attention;
  // The memory-bound kernels between the GEMMs (residual-add RMSNorms,
  // rotary embedding, the gated activation, the KV-cache store): their
  // activation bytes at the achievable HBM bandwidth (docs/model.md 7.2).
  units::Seconds elementwise;
  units::Seconds communication;  // collectives not hidden behind the rest
  units::Seconds overhead;       // the fixed per-step cost
  // Speculative decoding's drafting (k draft passes); 0 without it.
  units::Seconds draft;
  units::Seconds total() const {
    return matmul + attention + elementwise + communication + overhead + draft;
  }
};

struct ServeEstimate {
  bool feasible = true;
  std::string reason;
  units::Seconds prefill_time;  // one batch of `batch` prompts
  units::Seconds ttft;          // = prefill_time (static batching)
  units::Seconds decode_step;   // time per output token, mean over the output
  units::Seconds request_latency;  // ttft + output x decode_step
  double tokens_per_s = 0;         // output tokens/s, all replicas
  double tokens_per_s_per_chip = 0;
  double tokens_per_s_per_user = 0;
  double max_batch = 0;       // largest batch that fits one replica
  double critical_batch = 0;  // decode turns compute-bound above this
  units::Bytes weights_bytes, kv_cache_bytes, total_bytes, capacity_bytes;
  // memory-bandwidth, compute, communication, kernel-overhead or
  // memory-capacity
  std::string bound;
  double cost_per_million_tokens_usd = 0;  // NaN without a price
  // Decode step terms (per step): the weight-streaming, KV-streaming and
  // matrix-FLOP bounds, the whole collective time and the fixed cost. These
  // are bounds and need not add up; decode_parts do (decode_step =
  // decode_parts.total()), as prefill_parts add up to prefill_time.
  units::Seconds weight_time, kv_time, compute_time, comm_time, overhead;
  StepParts decode_parts, prefill_parts;
  // Speculative decoding: expected tokens per verify step per sequence and
  // the verify step's time (draft included); decode_step is their ratio
  // and decode_parts the step's parts over the tokens. 1 and decode_step
  // without it.
  double spec_tokens_per_step = 1;
  units::Seconds spec_step;
  // Routed-expert load imbalance applied (1 for dense models or ep = 1).
  double expert_imbalance = 1;
  std::vector<std::string> notes;
};

// Errors: degrees not multiplying to the chips, tp not dividing the heads, ep
// without a MoE model or not dividing the experts, a dtype the chip cannot
// compute, non-positive lengths or batch.
Result<ServeEstimate> EstimateServing(const model::ModelSpec& model,
                                      const hw::System& system,
                                      const ServeConfig& config);

// What one engine step of a continuous-batching server computes on one
// replica: `decode_seqs` sequences add one token each, over contexts that
// sum to `decode_context` tokens; `prefill_tokens` prompt tokens are
// computed, whose query-key pairs (each chunk: tokens x (cached prefix +
// tokens / 2), causal) sum to `prefill_pairs`.
struct StepWork {
  double decode_seqs = 0;
  double decode_context = 0;
  double prefill_tokens = 0;
  double prefill_pairs = 0;
  // DP attention, from a simulator that places requests on ranks: the
  // busiest rank's share of the four figures above (the rank with the most
  // GEMM rows). Zero: not given; the step's prompts are taken to be of the
  // reference length and spread as evenly as whole prompts go
  // (docs/model.md 7.5).
  double rank_decode_seqs = 0;
  double rank_decode_context = 0;
  double rank_prefill_tokens = 0;
  double rank_prefill_pairs = 0;
  bool has_rank() const {
    return rank_decode_seqs > 0 || rank_prefill_tokens > 0;
  }
};

// The cost of one engine step of a serving replica: the same model
// EstimateServing uses (docs/model.md 7.2), for any mix of decode and
// prefill tokens, as continuous batching runs them. Immutable after
// Create, cheap to copy, safe to share between threads.
//
// Example:
//   auto sc = estimate::StepCostModel::Create(llama70b, h100x8, cfg);
//   double t = sc->Cost({.decode_seqs = 64, .decode_context = 64 * 2304})
//                  .total().si();
class StepCostModel {
 public:
  // Errors as EstimateServing's. cfg.prompt and cfg.output set the
  // reference context at which the per-token KV and attention
  // coefficients are taken (exact for models without sliding windows).
  static Result<StepCostModel> Create(const model::ModelSpec& model,
                                      const hw::System& system,
                                      const ServeConfig& config);
  // The step's parts; total() is its time.
  StepParts Cost(const StepWork& work) const;
  // matmul + communication for `tokens` tokens in the step (the part that
  // depends only on the token count; callers may cache it by count).
  double TokenTime(double tokens) const;
  // attention + overhead + drafting + pipeline transfers of the step.
  double ContextTime(const StepWork& work) const;
  // The host's launch time of an eagerly run prefill step
  // (ServeConfig::eager_prefill_op_s x EagerPrefillOps), which adds to its
  // GPU time, else 0. Cost(work).total() ==
  // TokenTime + ContextTime + EagerHostTime.
  double EagerHostTime(const StepWork& work) const;
  // Cost(work).total() == TokenTime(MatmulTokens(work)) + ContextTime(work)
  // up to
  // rounding in realistic mode and in peak mode with prefill tokens; peak
  // decode-only steps overlap communication (the book's formula), so use
  // Cost there.
  bool peak() const;
  // Tokens a decoding sequence puts through the target's GEMMs per step:
  // k + 1 with speculative decoding, else 1.
  double DecodeQueries() const;
  // The token count TokenTime is taken at for `work`: decode sequences x
  // DecodeQueries() + prefill tokens.
  double MatmulTokens(const StepWork& work) const;
  const SpecDecode& spec() const;
  // Pipeline stages (virtual engines the simulator runs per replica).
  int pipeline_stages() const;
  // Schedulers per engine stepping in lockstep: ep with DP attention (one
  // per DP rank, every rank waiting for the slowest at each expert
  // all-to-all), else 1.
  int dp_ranks() const;
  // KV-cache bytes one token of one sequence's context takes on one chip.
  double KvBytesPerTokenPerChip() const;
  // Decode attention's least time per context token on one chip whatever
  // its bytes (SGLang's FlashAttention-3 MLA over an fp8 KV cache: layers x
  // the chip's mla_fp8_kv_token), 0 where the bytes set it.
  double KvTokenTimePerChip() const;
  // HBM per chip left for the KV cache after the weights and the reserve.
  double KvCapacityBytesPerChip() const;
  double WeightsBytesPerChip() const;
  int chips_per_replica() const;

  struct Impl;

 private:
  friend Result<ServeEstimate> EstimateServing(const model::ModelSpec&,
                                               const hw::System&,
                                               const ServeConfig&);
  explicit StepCostModel(std::shared_ptr<const Impl> impl)
      : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The book's decode step (inference chapter), used by peak mode:
//   T = B KV_bytes / (n W) + max(2 B N / (n C), N_bytes / (n W)).
double BookDecodeStep(double batch, double kv_bytes_per_seq, double params,
                      double param_bytes, double chips, double flops_per_s,
                      double hbm_bytes_per_s);

// The book's disaggregation balance: prefill servers per generate server,
// P / G = prefill_latency x batch / (step x output).
double PrefillToDecodeRatio(double prefill_latency_s, double batch,
                            double step_s, double output);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_INFERENCE_H_
