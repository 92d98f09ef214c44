// Training step estimator (book: "training" and "applied-training"
// chapters; docs/model.md section 5). Given a model, a system and a layout,
// returns the step time with its breakdown, every collective with its bytes
// and the part left exposed, memory per chip against HBM, MFU and HFU.
//
// Example:
//   auto plan = estimate::ParsePlan("fsdp=2048,tp=4");
//   estimate::TrainingConfig cfg{.par = *plan, .batch_tokens = 4194304,
//                                .seq = 4096};
//   auto est = estimate::EstimateTraining(llama70b, v5p_pod, cfg);
#ifndef SCALEMODEL_ESTIMATE_TRAINING_H_
#define SCALEMODEL_ESTIMATE_TRAINING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"

namespace scalemodel::estimate {

enum class Mode { kPeak, kRealistic };
enum class Schedule { kGpipe, k1F1B, kInterleaved };
std::string_view ScheduleName(Schedule s);

// Degrees of each parallelism; their product is the chip count.
struct Parallelism {
  int dp = 1;    // data parallel replicas (ZeRO level `zero`)
  int fsdp = 1;  // fully sharded data parallel (ZeRO-3)
  int tp = 1;    // tensor parallel (Megatron), with sequence parallelism
  int pp = 1;    // pipeline stages
  int ep = 1;    // expert parallel (data parallel for dense layers)
  int cp = 1;    // context (sequence) parallel, ring attention
  int zero = 0;  // 0 plain DP, 1 optimizer state sharded, 2 + gradients
  bool sequence_parallel = true;
  // Physical axes per parallelism ("tp" -> {"z"}), when given explicitly.
  std::map<std::string, std::vector<std::string>> axes;

  int product() const { return dp * fsdp * tp * pp * ep * cp; }
  std::string ToString() const;  // "dp=8,fsdp=256,tp=4"
};

// Parses "dp=8,fsdp=256,tp=4,pp=1,ep=1,cp=1,zero=1" or with physical axes
// instead of degrees ("fsdp=x.y,tp=z"); degrees of explicit axes are filled
// in by EstimateTraining. Errors name the key; a key given twice, an sp
// value other than 0/1/true/false/on/off, a degree that is neither positive
// nor axis names, and degrees multiplying past 2^24 chips are refused.
Result<Parallelism> ParsePlan(std::string_view text);
Result<Schedule> ParseSchedule(std::string_view text);

struct TrainingConfig;
// Parses a whole plan as `scalemodel plan train` prints it
// (search::PlanCandidate::Key()) into `config`: the degrees (ParsePlan),
// then space-separated fields mb=N (layout.micro_batch), remat=NAME
// (memory.remat), 1f1b | gpipe | interleaved (layout.schedule), vpp=N
// (layout.vpp; > 1 implies interleaved), last=N (layout.last_stage_layers),
// offload | offload-params (memory.*) and order=A>B>.. (layout.
// placement_order: the named parallelisms innermost first, then the others
// in the default order tp, cp, ep, fsdp, dp, pp). Fields absent keep
// `config`'s values; a schedule other than interleaved without vpp= sets
// vpp to 1. `config` is unchanged on error ("plan": one sentence per bad
// field, a field given twice, degrees missing or given twice).
//   "dp=2,fsdp=512,cp=2,zero=2 mb=1 remat=none 1f1b last=5 order=fsdp>cp>dp"
Result<void> ParsePlanKey(std::string_view text, TrainingConfig* config);

// A batch that is not a whole number of sequences ("4M" tokens at seq 4096)
// rounded to the nearest whole number of them; returns the note that says
// so ("batch of 4,000,000 tokens rounded to 977 sequences of 4,096 =
// 4,001,792 tokens"), or nothing when the batch is whole or would round to
// no sequence at all (EstimateTraining then refuses it).
std::optional<std::string> RoundBatchToSequences(TrainingConfig* config);

enum class AttentionKernel { kFused, kFlash2, kMaterialized };
std::string_view AttentionKernelName(AttentionKernel k);
Result<AttentionKernel> ParseAttentionKernel(std::string_view text);

// How context parallelism moves K and V (Megatron's --cp-comm-type): ring
// passes of each rank's K/V chunk overlapped with the attention (p2p), an
// all-gather of K/V before the attention and a reduce-scatter of their
// gradients after it (allgather; Llama 3's), or all-to-alls that trade the
// sequence split for a head split around the attention (a2a, Ulysses).
enum class CpComm { kRing, kAllGather, kAllToAll };
std::string_view CpCommName(CpComm c);
Result<CpComm> ParseCpComm(std::string_view text);

// How low-precision GEMM inputs get their scales (Megatron's and torchao's
// --fp8-recipe names; docs/model.md 5.2 "Precision recipes").
// delayed: per-tensor scales from an amax history, inside the cast;
// tensorwise: per-tensor current scaling, an extra amax pass over each input;
// rowwise: a scale per row (torchao's float8 rowwise), its own GEMM kernel;
// blockwise: 1x128 / 128x128 block scales (DeepSeek-V3's fine-grained fp8);
// mxfp8: a shared 8-bit exponent per 32 elements, scaled by Blackwell's
// tensor cores; nvfp4: fp4 values with an fp8 scale per 16 elements, GEMMs
// at the fp4 rate (Blackwell).
enum class Fp8Recipe {
  kDelayed,
  kTensorwise,
  kRowwise,
  kBlockwise,
  kMxfp8,
  kNvfp4
};
std::string_view Fp8RecipeName(Fp8Recipe r);
Result<Fp8Recipe> ParseFp8Recipe(std::string_view text);
// HBM bytes per quantized element: read bf16 (2), write the low-precision
// copy and its transpose for the backward GEMMs (1 + 1, fp4: 0.5 + 0.5);
// tensorwise and rowwise read it once more for the amax (+2).
double Fp8CastBytes(Fp8Recipe r);
// The recipe's GEMM speed relative to the chip's measured per-tensor-scaled
// fp8 GEMM (gemm_max_fp8), each from a published measurement or 1 where the
// kernel is measured no slower (efficiency.cc states the sources). 0 when
// the chip cannot run the recipe (mxfp8 and nvfp4 need Blackwell's
// block-scaled tensor cores: a chip with an fp4 rate).
double Fp8RecipeGemmFactor(const hw::Chip& chip, Fp8Recipe r);

// Which peak MFU is stated against: the bf16 peak (the convention of most
// papers, and the default), or the peak of the matmul dtype (fp8, int8,
// fp4), which can be twice or four times as large.
enum class MfuBasis { kBf16, kDtype };
std::string_view MfuBasisName(MfuBasis b);
Result<MfuBasis> ParseMfuBasis(std::string_view text);

// Beyond the degrees: how a replica's batch and the model's layers are cut.
struct LayoutOptions {
  int micro_batch = 1;  // sequences per replica per microbatch
  Schedule schedule = Schedule::k1F1B;
  int vpp = 1;  // virtual stages per device (interleaved)
  // Layers on the last pipeline stage, which also runs the output layer and
  // the loss (Megatron's --decoder-last-pipeline-num-layers); 0: what the
  // others, ceil(L / pp) each, leave it.
  int last_stage_layers = 0;
  // Order in which degrees are laid onto physical axes, innermost first
  // (indices of estimate::ParIndex); empty: tp, cp, ep, fsdp, dp, pp.
  std::vector<int> placement_order;
};

// Number formats of the matmuls and the gradient reductions.
struct PrecisionOptions {
  // bf16, fp8, int8 (TPU AQT) or fp4 (the nvfp4 recipe).
  hw::Dtype matmul = hw::Dtype::kBf16;
  // With fp8 or fp4: how the GEMM inputs are scaled (their cast cost and
  // GEMM speed, Fp8RecipeGemmFactor).
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  MfuBasis mfu_basis = MfuBasis::kBf16;
  // Data type of the gradient reductions (data-parallel all-reduce, FSDP /
  // ZeRO reduce-scatter): bf16, or fp32 where the engine keeps fp32 weights
  // or accumulates gradients in fp32 (MaxText's default weight_dtype).
  hw::Dtype grad_reduce = hw::Dtype::kBf16;
};

// What is kept, recomputed or moved off the chip.
// The most vocabulary chunks a loss may be computed in (EngineHabits::
// vocab_tiling; docs/units.md): no real vocabulary needs more.
inline constexpr int kMaxVocabTiling = 1 << 16;

struct MemoryPolicy {
  model::Remat remat = model::Remat::kNone;
  bool offload_optimizer = false;  // optimizer state in host memory
  // Parameters and gradients in host memory too (FSDP2's CPUOffloadPolicy,
  // DeepSpeed ZeRO-3 offload_param): each layer's shard streams in over
  // PCIe for every pass that needs it, its gradient shard streams out.
  // Implies offload_optimizer.
  bool offload_params = false;
  // The activations the remat policy saves for the backward pass live in
  // host memory (MaxText's offloaded remat policies: `minimal_offloaded`,
  // `custom` with `offload` tensors; Megatron-Core --cpu-offloading;
  // DeepSpeed cpu_checkpointing): each layer's saved tensors stream out
  // during its forward and back in before its backward, over the host link,
  // prefetched under the compute. On the device: two layers' worth (the one
  // in transit and the one in use).
  bool offload_activations = false;
  // Bytes per parameter the engine keeps on the device in realistic mode
  // (peak mode counts the book's bf16 weights and fp32 Adam moments, 2 + 8,
  // nothing else). The defaults are Megatron-LM's with --bf16: bf16
  // weights, fp32 main gradients, fp32 master weights and Adam moments.
  // Engine presets set them (estimate/presets.cc, each with its source).
  double weight_bytes = 2;  // the stored weights the matmuls read
  double grad_bytes = 4;    // the gradient buffer
  double master_bytes = 4;  // fp32 master copy (0: weights are fp32)
  double moment_bytes = 8;  // Adam's first and second moments
  // HBM the runtime keeps back: allocator reserve and fragmentation, the
  // CUDA context, communication buffers.
  double reserve_fraction = 0.05;
  // HBM the user keeps free on top (plan train --memory-headroom).
  double headroom_fraction = 0;
};

// How the engine runs the step: kernels, communication schemes and overlap,
// MoE routing. Engine presets (estimate/presets.h) set these by framework.
struct EngineHabits {
  // The attention kernel: today's fused kernel for the chip (FA3 / cuDNN on
  // Hopper, FA4 / cuDNN on Blackwell), FlashAttention-2 (Hopper before mid
  // 2024), or the pre-2022 kernels that materialise the S x S scores in HBM
  // (scale, mask, softmax, dropout as separate passes).
  AttentionKernel attention_kernel = AttentionKernel::kFused;
  // Vocabulary-parallel cross entropy as Megatron-LM runs it by default
  // (without --cross-entropy-loss-fusion): fp32 logits and separate
  // elementwise passes, 52 bytes of HBM traffic per logit instead of the
  // fused kernels' 12 (docs/model.md 5.2).
  bool unfused_cross_entropy = false;
  // The output layer and loss computed in this many chunks of the
  // vocabulary (MaxText's num_vocab_tiling): the logits held at once are
  // 1/vocab_tiling of them (time unchanged).
  int vocab_tiling = 1;  // 1 to kMaxVocabTiling
  CpComm cp_comm = CpComm::kRing;
  // Tensor-parallel all-gathers and reduce-scatters overlapped with the
  // adjacent GEMMs (Megatron --tp-comm-overlap, torchtitan async TP): a
  // fraction of them hides under the layer's GEMMs (TpOverlapFraction).
  bool tp_comm_overlap = false;
  // The fraction of the TP collectives the overlap can hide; < 0: the
  // structural default (TpOverlapFraction), else as given (0..1).
  double tp_overlap_fraction = -1;
  // The data-parallel gradient reduction runs under the last microbatch's
  // backward pass (bucketed, as Megatron and PyTorch DDP/FSDP do), or after
  // it (false): what MaxText's published multi-VM and multi-slice step times
  // show (docs/model.md 5.3).
  bool dp_overlap = true;
  // FSDP weight all-gathers issued inside a scanned layer loop (MaxText's
  // scan_layers, true by default in base.yml): a layer's gathers start with
  // that layer's loop iteration, not under the previous layer's compute, so
  // each iteration's first gather (forward and backward) sits on the
  // critical path (MaxText PR #4493) and the later ones, one in flight at a
  // time, hide under the iteration's compute before their use
  // (docs/model.md 5.3). false: prefetched one layer ahead, as PyTorch FSDP
  // and unrolled XLA programs do.
  bool fsdp_scan_exposed = false;
  // ZeRO-3 as DeepSpeed ran it before v0.5.5 (deepspeed/runtime/zero/
  // partition_parameters.py at v0.3.13, March 2021: _allgather_param calls
  // torch.cuda.synchronize() before each parameter's all-gather; PR #1188,
  // merged 2021-10-31, first in v0.5.5, removed it): one NCCL call per
  // weight tensor on the flat data-parallel group, each after the device
  // has drained, so no gather or gradient reduce-scatter overlaps compute;
  // the recompute's forward gathers again (its post-forward hook released
  // the weights). docs/model.md 5.3.
  bool fsdp_sync_per_tensor = false;
  // The fraction of what the data-parallel overlap could hide that it does
  // hide (1: all but the one layer's bucket Megatron/NeMo document as
  // exposed); --dp-overlap F.
  double dp_overlap_fraction = 1.0;
  // Expert dispatch that sends a token once per destination node and
  // forwards it over NVLink there (DeepEP): the network carries the distinct
  // nodes a token's experts sit on, not its top_k copies.
  bool ep_dedup = false;
  // The expert all-to-all of one microbatch runs under another microbatch's
  // compute (Megatron's --overlap-moe-expert-parallel-comm, DeepSeek's
  // DualPipe): only what exceeds that compute shows, plus the first
  // microbatch's, which has no partner.
  bool ep_overlap = false;
  // The fraction of the paired microbatch's compute the expert all-to-all
  // can hide under (1: all of it, DualPipe's claim); --ep-overlap F.
  double ep_overlap_fraction = 1.0;
  // MoE token dropping (GShard / MaxText's dense-matmul path): every expert
  // computes capacity_factor x its fair share of tokens, and tokens reach
  // their experts through one-hot dispatch and combine einsums. 0: dropless
  // (grouped GEMMs over the routed tokens, load_imbalance applies).
  double capacity_factor = 0;
  double load_imbalance = 1.0;  // MoE: busiest expert / mean
};

// The fraction of a tensor-parallel collective that async TP / TP comm
// overlap can hide at degree `tp` (docs/model.md 5.3 "Overlap as
// measured"): habits.tp_overlap_fraction when given, else (tp - 1) / tp.
// The GEMM is decomposed into tp chunks around a ring (Wang et al., ASPLOS
// 2023, "Overlap communication with dependent computation via
// decomposition"; PyTorch's async TP): one of the tp steps has no GEMM
// chunk beside it (the all-gather's first remote shard before any remote
// chunk can start, the reduce-scatter's last partial sum after the last
// chunk), so 1/tp of the collective stays exposed.
double TpOverlapFraction(const EngineHabits& h, int tp);

// Which projections of a layer carry LoRA adapters (an MoE layer's
// experts never do).
struct LoraTargets {
  bool qkv = true, proj = true, fc1 = true, fc2 = true;
  bool operator==(const LoraTargets&) const = default;
};
// "all", "attention" (qkv, proj), "mlp" (fc1, fc2), or a comma list of
// qkv, proj, fc1, fc2 (NeMo's attention_qkv, attention_dense, mlp_fc1,
// mlp_fc2 also read).
Result<LoraTargets> ParseLoraTargets(std::string_view text);
std::string LoraTargetsName(const LoraTargets& t);

struct TrainingConfig {
  Parallelism par;
  LayoutOptions layout;
  PrecisionOptions precision;
  MemoryPolicy memory;
  EngineHabits habits;
  // The workload and what is asked of the estimate.
  double batch_tokens = 0;  // global batch per step, tokens
  double seq = 0;           // sequence length
  Mode mode = Mode::kRealistic;
  double assume_mfu = 0;  // > 0: step time from model FLOPs at this MFU
  model::AttentionFlops attention = model::AttentionFlops::kCausal;
  // LoRA fine-tuning with adapters of this rank on every attention and
  // dense-MLP projection (0: full training). The base weights are frozen:
  // no weight-gradient GEMMs, gradients, optimizer state or gradient
  // reductions for them.
  int lora_rank = 0;
  // The projections LoRA adapts (NeMo's names): attention_qkv, attention
  // output (attention_dense), mlp_fc1 (gate and up), mlp_fc2 (down); all by
  // default (PEFT's *_proj, NeMo AutoModel, Megatron-Bridge); NeMo 1.x /
  // 2.0's megatron_gpt_finetuning_config.yaml adapted attention_qkv alone.
  LoraTargets lora_targets;
  // Multi-token-prediction modules trained with the model (Megatron's
  // --mtp-num-layers); -1: the model's own count (num_nextn_predict_layers,
  // 1 for DeepSeek-V3), 0: none.
  int mtp_layers = -1;
  double tokens = 0;               // total training tokens (0: not asked)
  double price_per_chip_hour = 0;  // 0: the catalog's price
};

struct CommItem {
  std::string kind;               // "all-gather", ...
  std::string parallelism;        // "tp", "fsdp", "dp", "ep", "cp", "pp"
  std::vector<std::string> axes;  // physical axes
  units::Bytes bytes;             // V of one call
  std::int64_t calls = 0;         // per step
  units::Seconds time;            // all calls, per step
  units::Seconds exposed;         // not hidden under compute
};

struct MemoryBreakdown {
  units::Bytes params, grads, optimizer, activations, other, total, capacity;
};

// The book's critical batch sizes for this system (tokens per chip unless
// stated), from the bandwidth each strategy's collectives get here.
struct CriticalBatches {
  double data_parallel = 0;  // B/X > C / W over the DP/FSDP axes
  double fsdp = 0;
  double tensor_parallel_max = 0;  // largest TP degree with F > Y C / W
  double fsdp_tp = 0;              // B/N > alpha^2 / (M_X M_Y F)
  // The FSDP degree that makes FSDP's and TP's communication equal for this
  // batch: X_opt = sqrt(B N W_fsdp / (F W_tp)), the book's
  // sqrt((B/F)(M_X/M_Y) N); TP takes N / X_opt. 0 where FSDP x TP has no
  // threshold.
  double fsdp_tp_x_opt = 0;
  double dcn_per_slice = 0;  // tokens per slice; 0 without DCN
};

// The book's memory floor: the fewest chips whose HBM holds the whole job,
// perfectly sharded: every parameter's bytes (weights, gradients, optimizer
// state) and the saved activations of the global batch in one pass (no
// gradient accumulation, which holds only the microbatches in flight).
struct MemoryFloor {
  double state_bytes = 0;       // parameters x bytes per parameter
  double activation_bytes = 0;  // batch tokens x layers x saved bytes
  double min_chips = 0;         // ceil(total / usable HBM per chip)
};
MemoryFloor MinChipsByMemory(double state_bytes,
                             double act_bytes_per_token_layer, double layers,
                             double batch_tokens, double usable_hbm_per_chip);

struct TrainingEstimate {
  bool feasible = true;
  std::string reason;
  units::Seconds step_time;
  units::Seconds compute, exposed_comm, bubble;
  units::Seconds other;  // the optimizer update (on the host when offloaded)
  std::vector<CommItem> comms;
  // Compute of one layer for one microbatch, forward + backward, by kind of
  // work (realistic mode; peak mode puts it all in matmul), and the output
  // layer and loss that the last pipeline stage adds per microbatch.
  struct LayerTimes {
    units::Seconds matmul, attention, elementwise, recompute, total;
    units::Seconds output_and_loss;
    int layers_per_stage = 0;       // on every stage but the last
    int last_stage_layers = 0;      // on the last
    int mtp_modules = 0;            // multi-token prediction, on the last
    bool last_stage_paces = false;  // the last stage is the slowest
  } per_layer;
  MemoryBreakdown memory;
  MemoryFloor memory_floor;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  // model FLOPs / (time x chips x peak); the peak is bf16's or the matmul
  // dtype's (precision.mfu_basis).
  double mfu = 0;
  double hfu = 0;  // with recompute
  double tokens_per_s = 0;
  double tokens_per_s_per_chip = 0;
  double model_flops_per_s_per_chip = 0;
  std::string bottleneck;  // compute, memory-bandwidth, communication, bubble,
                           // memory-capacity
  std::vector<std::string>
      notes;  // readable reasons with the book's thresholds
  CriticalBatches critical;
  int microbatches = 1;
  std::map<std::string, std::string> layout;  // parallelism -> "x.y (16)"
  // Degree of each parallelism inside the fast domain (TPU ICI slice, GPU
  // NVLink domain) and across it (DCN, scale-out network): MaxText's ici_*
  // and dcn_* parallelism.
  struct DomainSplit {
    int fast = 1;
    int slow = 1;
  };
  std::map<std::string, DomainSplit> layout_split;
  // With tokens: total time, chip-hours, cost (NaN without a price).
  double time_to_train_s = 0, chip_hours = 0, cost_usd = 0;
};

// The micro batch (sequences per replica per microbatch) that gives
// `microbatches` microbatches per step for this plan and batch: the CLI's
// --microbatches. Errors say which counts would split evenly.
Result<int> MicroBatchFor(const hw::System& sys, const TrainingConfig& cfg,
                          int microbatches);

// Why a plan cannot run, in the order the checks are made (the first
// fault found is reported). Allocation-free, so the plan search can filter
// its degree tuples with the same rules as EstimateTraining.
enum class PlanFault {
  kNone,
  kChipCount,           // degrees' product is not the chip count
  kTpHeads,             // tp does not divide the attention heads
  kLastStageWithoutPp,  // a last-stage layer count without pp >= 2
  kLastStageRange,      // ... that leaves another stage no layer
  kUlyssesHeads,        // a2a context parallelism: tp x cp vs heads
  kPpLayers,            // more stages than layers
  kEpDense,             // expert parallelism on a dense model
  kEpExperts,           // ep does not divide the experts
  kNoBatch,             // sequence or batch not positive
  kCpSeq,               // cp does not divide the sequence
  kPartialSequence,     // batch tokens not whole sequences
  kBatchReplicas,       // sequences do not split over dp x fsdp x ep
  kMicroBatch,          // micro batch does not divide a replica's batch
  kVirtualStages,       // pp x vpp more than the layers
  kNoMatrixRate,        // the chip has no rate at this precision
};
PlanFault FindPlanFault(const model::ModelSpec& model, const hw::System& system,
                        const TrainingConfig& config);

// True when the batch has fewer whole sequences than the plan has replicas
// (dp x fsdp x ep): each replica then holds a fraction of a sequence, as
// the book shards LLaMA-3 70B's 1,024 sequences of 4,096 tokens over 2,240
// FSDP replicas (its "sequence sharding"). Such a plan runs one microbatch
// of one sequence's share (micro batch 1).
bool SplitsSequences(const TrainingConfig& config);
// Tokens per microbatch per rank: micro_batch x seq / cp, or a replica's
// share of the batch, batch_tokens / (replicas x cp), when it splits
// sequences.
double MicrobatchTokens(const TrainingConfig& config);
// The same as one sentence naming the values (`where`: the input's name,
// "plan", "batch_tokens", ...); true when the plan can run.
Result<bool> CheckPlan(const model::ModelSpec& model, const hw::System& system,
                       const TrainingConfig& config);

// Errors (bad input): degrees whose product is not the chip count, more
// stages than layers, TP not dividing the heads, EP not dividing the
// experts, a batch that does not split over the replicas, unknown axes.
// Infeasible memory is a result with `feasible = false` and a reason.
Result<TrainingEstimate> EstimateTraining(const model::ModelSpec& model,
                                          const hw::System& system,
                                          const TrainingConfig& config);

// Multi-token-prediction modules the estimate trains: the config's count,
// or the model's own when it gives none; none under LoRA fine-tuning.
int MtpModules(const model::ModelSpec& m, const TrainingConfig& cfg);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_TRAINING_H_
