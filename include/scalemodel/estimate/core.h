// The allocation-free core of the training estimator, shared by
// EstimateTraining (one plan, decorated with notes and a comms list) and the
// plan search (millions of plans). Everything that depends only on the
// layout is prepared once in LayoutCoefficients; EvaluateCore is arithmetic.
#ifndef SCALEMODEL_ESTIMATE_CORE_H_
#define SCALEMODEL_ESTIMATE_CORE_H_

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/estimate/training.h"

namespace scalemodel::estimate {

// A collective on fixed axes as a line in its bytes: bandwidth part
// `per_byte * V`, latency part `latency`; peak mode takes their max (the
// book's overlap), realistic mode their sum plus the launch cost.
struct CollCoef {
  double per_byte = 0;  // s / byte
  double latency = 0;   // s
  double launch = 0;    // s, realistic only
  bool active = false;
  double Time(double bytes, bool peak) const {
    if (!active || bytes <= 0) return 0;
    double bw = per_byte * bytes;
    return peak ? (bw > latency ? bw : latency) : bw + latency + launch;
  }
};

// Parallelisms in their default placement order, innermost first.
enum ParIndex { kTp, kCp, kEp, kFsdp, kDp, kPp, kNumPar };
const char* ParName(int index);
int& DegreeOf(Parallelism& p, int index);

// The collective slots of a training step: one per (network op,
// parallelism). A slot's index orders every per-collective array and the
// report's comms list; kCollSlots below says what each slot is.
enum CollIndex {
  kTpAg,
  kTpRs,
  kTpAr,
  kEpA2a,
  kCpPermute,
  kPpPermute,
  kFsdpAg,
  kFsdpRs,
  kDpAr,
  kDenseAr,
  // ZeRO-1/2 over dp (Megatron's distributed optimizer): the gradient
  // reduction is a reduce-scatter, and the updated shards come back in an
  // all-gather of the bf16 parameters.
  kDpRs,
  kDpAg,
  kDenseRs,
  kDenseAg,
  // Context parallelism by all-gather (K/V) and reduce-scatter (their
  // gradients), or by all-to-all (Ulysses).
  kCpAg,
  kCpRs,
  kCpA2a,
  kNumColl
};

// What a slot is: the network operation, the parallelism it serves (its
// label in the report), and the axes it runs on: the placement of one
// parallelism, widened by the expert-parallel axes for the dense
// parameters' reduction over dp x ep. Adding a collective is a CollIndex
// entry, a row here, and the phase of EvaluateCore that issues it.
struct CollSlot {
  CollIndex slot;
  net::Collective op;
  const char* label;  // "tp", "dp+ep", ...
  ParIndex placement;
  bool plus_ep_axes;
};
inline constexpr CollSlot kCollSlots[kNumColl] = {
    {kTpAg, net::Collective::kAllGather, "tp", kTp, false},
    {kTpRs, net::Collective::kReduceScatter, "tp", kTp, false},
    {kTpAr, net::Collective::kAllReduce, "tp", kTp, false},
    {kEpA2a, net::Collective::kAllToAll, "ep", kEp, false},
    {kCpPermute, net::Collective::kPermute, "cp", kCp, false},
    {kPpPermute, net::Collective::kPermute, "pp", kPp, false},
    {kFsdpAg, net::Collective::kAllGather, "fsdp", kFsdp, false},
    {kFsdpRs, net::Collective::kReduceScatter, "fsdp", kFsdp, false},
    {kDpAr, net::Collective::kAllReduce, "dp", kDp, false},
    {kDenseAr, net::Collective::kAllReduce, "dp+ep", kDp, true},
    {kDpRs, net::Collective::kReduceScatter, "dp", kDp, false},
    {kDpAg, net::Collective::kAllGather, "dp", kDp, false},
    {kDenseRs, net::Collective::kReduceScatter, "dp+ep", kDp, true},
    {kDenseAg, net::Collective::kAllGather, "dp+ep", kDp, true},
    {kCpAg, net::Collective::kAllGather, "cp", kCp, false},
    {kCpRs, net::Collective::kReduceScatter, "cp", kCp, false},
    {kCpA2a, net::Collective::kAllToAll, "cp", kCp, false},
};
constexpr bool CollSlotsInOrder() {
  for (int i = 0; i < kNumColl; ++i) {
    if (kCollSlots[i].slot != i) return false;
  }
  return true;
}
static_assert(CollSlotsInOrder(), "kCollSlots must list the slots in order");

// Per-layer forward times of an average layer at one (tp, ep, tokens).
struct LayerCompute {
  double gemm_fwd = 0;
  double attn_fwd = 0;
  double elem_fwd = 0;
  double logits_fwd = 0;
  // Softmax cross-entropy over the vocabulary, forward and backward: the
  // logits stream through HBM (memory-bound).
  double loss_total = 0;
  double mlp_in_fwd = 0;     // the MLP input projections (w1, w3) alone
  double attn_proj_fwd = 0;  // the attention projections (Q, K, V, O) alone
  // A multi-token-prediction module's projection of [h; emb] (2D -> D).
  double mtp_proj_fwd = 0;
  // LoRA: the adapters' own GEMMs (AdapterGemms), forward and backward.
  double adapter_fwd = 0;
  double adapter_bwd = 0;
};

// Training state per parameter and the share of HBM the runtime keeps back.
// Peak mode: the book's count (bf16 weights and fp32 Adam moments, 10 bytes;
// gradients and reserve not counted). Realistic: the engine's bytes from
// MemoryPolicy (default bf16 weights, fp32 gradients, fp32 master weights
// and moments, 2 + 4 + 12, and a 5% reserve); `optimizer` is the master
// copy and the moments. Frozen (LoRA) parameters hold the weights alone.
struct StateBytes {
  double weights = 2, grads = 4, optimizer = 12;
  double reserve_fraction = 0.05;
};
StateBytes TrainingStateBytes(Mode mode, const MemoryPolicy& policy = {});

// Model numbers that do not depend on the plan.
struct ModelConsts {
  double layers = 0, moe_frac = 0, d = 0, heads = 0, kv_heads = 0;
  double head_dim = 0, kv_per_token_layer = 0, top_k = 0, experts = 0;
  double topk_group = 0;  // node-limited routing (0: none)
  double dense_params = 0, expert_params = 0, total_params = 0;
  // Parameters with gradients and optimizer state: all of them, or the LoRA
  // adapters (counted as dense).
  bool lora = false;
  double adapter_params = 0;
  double grad_reduce_bytes = 2;  // per gradient element in reductions
  double vocab = 0;
  // Multi-token-prediction modules trained with the model (DeepSeek-V3's
  // one): each is a transformer layer, a 2D -> D projection and another pass
  // through the shared output layer and loss, on the last pipeline stage.
  double mtp = 0;
  double model_flops_per_token = 0;  // MTP modules included
  std::array<double, model::kNumRemat> recompute_flops_per_token{};  // /Remat
  std::array<double, model::kNumRemat> act_bytes_per_token_layer{};  // bf16
  double act_none_per_token_layer = 0;
  // Parameter tensors per layer as Megatron's GPT layer holds them: the
  // weight matrices (fused QKV, attention output, MLP in, MLP out) and the
  // small ones (biases, norm scales and shifts).
  double weight_tensors_per_layer = 4, small_tensors_per_layer = 2;
};
ModelConsts PrepareModel(const model::ModelSpec& m, const TrainingConfig& cfg);
// One projection LoRA may adapt: its base weight's in and out dims (whole,
// before tensor parallelism), whether it belongs to the MLP (dense layers
// only), whether tensor parallelism splits its input (row-parallel: the
// attention output and MLP down projections) and whether it is adapted.
struct LoraModule {
  double in = 0, out = 0;
  bool mlp = false, row_parallel = false, on = true;
};
// Q/K/V (one fused module), attention output, MLP in (gate and up), MLP out.
std::array<LoraModule, 4> LoraModules(const model::ModelSpec& m,
                                      const LoraTargets& targets);
// LoRA adapter parameters of this rank over the model.
double LoraAdapterParams(const model::ModelSpec& m, int rank,
                         const LoraTargets& targets = {});

// Memory-bound elementwise work per token and layer, forward, in bf16
// elements before any split over chips (docs/model.md 5.2): the two fused
// residual-add RMSNorms' reads and writes (10 D), rotary embedding and the
// KV-cache store (2 (N + K) H), and the gated activation's per_ffn elements
// per element of the token's active FFN width. Training and serving steps
// both count it.
struct ElementwiseTraffic {
  double norms = 0;
  double attention = 0;
  double per_ffn = 3;
};
ElementwiseTraffic ElementwisePerToken(const model::ModelSpec& m, double d);

// `tokens` per microbatch per rank (micro_batch x seq / cp); `cp` splits
// each sequence (the token-dropping dispatch works per sequence chunk).
LayerCompute ComputeLayer(const model::ModelSpec& m, const ModelConsts& mc,
                          const hw::Chip& chip, const ChipEfficiency& eff,
                          double tp, double ep, double cp, double tokens,
                          const TrainingConfig& cfg);

// Everything that is fixed once degrees and their placement are.
struct LayoutCoefficients {
  std::array<CollCoef, kNumColl> coll;
  // Expert-parallel ranks on scale-out / DCN axes (nodes the EP group
  // spans); 1 when expert parallelism stays inside a node.
  double ep_nodes = 1;
  // Share of the k copies of a token the expert all-to-all moves: 1, or
  // less with per-node dispatch (EngineHabits::ep_dedup).
  double ep_bytes_scale = 1;
  // The FSDP group: its ranks and the nodes (scale-out / DCN groups) they
  // span, for a flat NCCL ring's latency (EngineHabits::fsdp_sync_per_tensor).
  double fsdp_ranks = 1, fsdp_nodes = 1;
};

struct Placement {
  std::vector<int> axes;   // physical axis indices
  std::vector<int> sizes;  // group size on each
};
using Placements = std::array<Placement, kNumPar>;

// Lays the plan's degrees onto the system's physical axes: explicit axes when
// the plan names them, else innermost-first in `order` (default tp, cp, ep,
// fsdp, dp, pp). Fills degrees given by axes.
Result<Placements> PlaceParallelism(
    Parallelism& par, const hw::System& sys,
    const std::array<int, kNumPar>* order = nullptr);

// The axes a slot's collective runs on.
Placement SlotPlacement(const CollSlot& slot, const Placements& pl);

// One slot's coefficients by (mode, collective, axes, group sizes): the
// layouts of a plan search share most of their slots' groups, and a
// coefficient depends on nothing else (for one system).
using CollCoefCache = std::map<std::vector<int>, CollCoef>;

// Collective coefficients for a placement; with a cache, the slots already
// costed on the same system are looked up instead of estimated again.
LayoutCoefficients BuildCoefficients(const hw::System& sys,
                                     const Placements& pl, Mode mode,
                                     CollCoefCache* cache = nullptr);
// The same for training, with the model's terms that depend on the layout
// (the expert dispatch's share of bytes), computed once per layout.
LayoutCoefficients BuildCoefficients(const hw::System& sys,
                                     const Placements& pl,
                                     const TrainingConfig& cfg,
                                     const ModelConsts& mc,
                                     CollCoefCache* cache = nullptr);

// One plan's numbers (SI units as plain doubles: the hot path).
struct CoreResult {
  bool feasible = true;
  double step = 0, compute = 0, exposed = 0, bubble = 0, other = 0;
  double params = 0, grads = 0, optimizer = 0, activations = 0, reserve = 0;
  double total_mem = 0, capacity = 0;
  double headroom = 0;    // share of capacity kept free (MemoryPolicy)
  double elem_total = 0;  // memory-bound part of compute (for the verdict)
  double pcie_time = 0;   // host offload traffic per step (one direction)
  double act_offload_time = 0;  // saved activations' share of pcie_time
  // One layer, one microbatch, forward + backward (realistic mode; peak
  // mode puts the whole layer in matmul), and the last stage's output layer
  // and loss.
  double layer_matmul = 0, layer_attention = 0, layer_elem = 0,
         layer_recompute = 0, head = 0;
  // Layers on each pipeline stage but the last, and on the last; whether
  // the last (with the output layer, the loss and any MTP modules) is the
  // slowest stage.
  int stage_layers = 0, last_stage_layers = 0;
  bool last_stage_paces = false;
  // Per-collective totals per step (time, exposed) in CollIndex order.
  std::array<double, kNumColl> coll_time{}, coll_exposed{}, coll_bytes{};
  std::array<std::int64_t, kNumColl> coll_calls{};
};

// A stage's parameters per tensor/expert-parallel rank (before FSDP or
// ZeRO sharding), and of those the trained ones (LoRA: the adapters, split
// like the dense weights).
struct ParamShares {
  double stage_dense = 0, stage_expert = 0, stage = 0;
  double train_dense = 0, train_expert = 0, trained = 0;
  double grad_reduce_bytes = 2;  // per gradient element in reductions
};
ParamShares SharesOf(const ModelConsts& mc, const Parallelism& par);
// Ranks that share one optimizer state: fsdp, times dp x cp with ZeRO >= 1
// (the routed experts' state: their data-parallel group).
double OptimizerShards(const Parallelism& par);
// The dense parameters' state: with ZeRO >= 1 over the expert-parallel ranks
// too, which hold replicas of the dense weights (Megatron's data-parallel
// group is every rank with the same TP, PP and CP coordinates, expert ranks
// included; its distributed optimizer shards the dense state over it and
// the experts' over the expert-data-parallel group: Megatron Core
// parallel_state.py, DistributedOptimizer).
double DenseOptimizerShards(const Parallelism& par);
// Trained parameters whose optimizer state one chip holds and updates.
double OwnedOptimizerParams(const ParamShares& shares, const Parallelism& par);

// Weights, gradients and optimizer state per chip: bytes per parameter by
// mode (TrainingStateBytes), sharded by FSDP and the ZeRO level; with the
// parameters offloaded, the `stage_layers`-th part of a stage (the layer
// in use and the one prefetched) stays on the device. The plan search's
// memory lower bound calls this too.
struct StateMemory {
  double params = 0, grads = 0, optimizer = 0;
};
StateMemory StatePerChip(const ParamShares& shares, const Parallelism& par,
                         const StateBytes& bytes, bool peak,
                         bool offload_optimizer, bool offload_params,
                         double stage_layers);
// The HBM a plan may fill: capacity less the user's headroom
// (MemoryPolicy::headroom_fraction).
double UsableCapacity(const hw::Chip& chip, const MemoryPolicy& policy);
// Saved activations at their peak per chip: the microbatches in flight on
// the busiest stage at the remat policy's bytes, the full-remat layer's
// working set, materialised attention scores, and the logits.
double ActivationsPerChip(const ModelConsts& mc, const Parallelism& par,
                          const TrainingConfig& cfg, int microbatches);
// Memory per chip by component into r (params, grads, optimizer,
// activations, reserve, total, capacity, feasible).
void MemoryPerChip(const ModelConsts& mc, const Parallelism& par,
                   const TrainingConfig& cfg, const hw::Chip& chip,
                   int microbatches, CoreResult* r);

// One plan's step time and memory, in phases: the stage split and compute
// per microbatch, communication per parallelism family (tensor, expert,
// context, pipeline, FSDP, data), optimizer and offload, exposure under
// overlap, memory per chip.
// REQUIRES: the plan checked (CheckPlan) by the caller.
void EvaluateCore(const ModelConsts& mc, const LayerCompute& lc,
                  const LayoutCoefficients& lay, const Parallelism& par,
                  const TrainingConfig& cfg, const hw::Chip& chip,
                  const ChipEfficiency& eff, int microbatches, CoreResult* out,
                  bool detail = true);
// A lower bound of EvaluateCore's step for every remat policy, schedule,
// last-stage split, ZeRO level and offload choice of a plan's degrees and
// micro batch (realistic mode: the busiest stage computes at least a pp-th
// of the layers without recompute and the heads, m times; 0 in peak mode or
// with assume_mfu). The plan search skips micro batches whose bound is
// already slower than its k-th best plan.
double StepLowerBound(const ModelConsts& mc, const LayerCompute& lc,
                      const Parallelism& par, const TrainingConfig& cfg,
                      int microbatches);
// A lower bound of EvaluateCore's step for one plan on every placement of
// its degrees: the compute of its microbatches on the busiest stage and the
// pipeline's fill and drain at its remat and schedule, without the
// communication, which is what the placement changes (every exposed term,
// the bubble's collectives and the update add non-negative times; 0 with
// assume_mfu). The plan search skips a plan whose bound is already slower
// than its k-th best.
double StepComputeBound(const ModelConsts& mc, const LayerCompute& lc,
                        const Parallelism& par, const TrainingConfig& cfg,
                        const hw::Chip& chip, int microbatches);
// detail = false (the plan search): only the step, memory and feasibility
// are filled in; the per-collective arrays and per-layer split are not, and
// a plan over HBM gets its memory and feasible = false only (no step).

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_CORE_H_
