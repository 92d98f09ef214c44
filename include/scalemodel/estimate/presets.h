// Named engine presets: the habits a training framework has by default that
// change the estimate (gradient-reduction dtype, whether the data-parallel
// reduction overlaps the backward pass, the loss kernel, the FP8 scaling
// recipe), so that "as Megatron-LM runs it" is one call rather than a list
// of fields. Each habit's source is next to it in presets.cc.
//
// Example:
//   estimate::TrainingConfig cfg;
//   estimate::ApplyEnginePreset(estimate::Engine::kMaxText, cfg);
//   // cfg.precision.grad_reduce == fp32, cfg.habits.dp_overlap == false
#ifndef SCALEMODEL_ESTIMATE_PRESETS_H_
#define SCALEMODEL_ESTIMATE_PRESETS_H_

#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/estimate/training.h"

namespace scalemodel::estimate {

enum class Engine {
  kMaxText,         // MaxText (JAX/XLA)
  kMegatron,        // Megatron-LM's own scripts (pretrain_gpt.py flags)
  kMegatronBridge,  // NeMo 2 / Megatron-Bridge recipes (Megatron Core under)
  kTorchtitan,      // torchtitan (FSDP2, torch.compile)
  kDeepSpeed,       // DeepSpeed ZeRO-1/2
};

// "maxtext", "megatron" (alias "megatron-lm"), "megatron-bridge" (alias
// "nemo"), "torchtitan" or "deepspeed", case-insensitive. Errors name the
// value and suggest the closest; `where` is "engine".
Result<Engine> ParseEngine(std::string_view text);
std::string_view EngineName(Engine engine);

// Sets the fields of `config` that `engine` decides by default:
// grad_reduce, dp_overlap, fsdp_scan_exposed, unfused_cross_entropy,
// fp8_recipe (used only with fp8 precision) and tp_comm_overlap. Every other
// field (layout, batch, precision, remat, ...) is left as it is; callers
// apply the user's explicit choices after the preset.
void ApplyEnginePreset(Engine engine, TrainingConfig& config);

// The memory part of the preset (ApplyEnginePreset calls it): bytes per
// parameter of the stored weights, the gradient buffer, the master copy and
// the optimizer moments, and the runtime's reserve, as the engine keeps them
// by default (sources in presets.cc). Offload, remat and the headroom are
// left as they are.
void ApplyEngineMemory(Engine engine, MemoryPolicy& memory);

// The weights stored in `dtype` with no separate master copy, their
// gradients in the same dtype and the Adam moments too (MaxText's
// weight_dtype with optax's mu_dtype unset; FSDP2's sharded parameter
// dtype): bf16 is 2 + 2 + 4 B per parameter, fp32 4 + 4 + 8 B. bf16 also
// reduces the gradients in bf16. Only bf16 and fp32; errors name the value
// (`where` is "weight dtype").
Result<void> ApplyWeightDtype(hw::Dtype dtype, TrainingConfig& config);

// Whether `memory` keeps bf16 weights with no master copy, as
// ApplyWeightDtype(bf16) sets it (MaxText weight_dtype bfloat16).
bool StoresBf16Weights(const MemoryPolicy& memory);

// What `engine` can launch, for a plan search that keeps to it: the highest
// ZeRO level for data-parallel replicas (MaxText and torchtitan: 0, their
// data parallelism is FSDP or plain replicas; Megatron and DeepSpeed: 2) and
// the remat policies it expresses exactly (MaxText none
// (minimal_with_context), save-matmul-outputs (minimal),
// save-dot-except-mlp-in, full; Megatron none, selective, full; torchtitan
// none, save-matmul-outputs (op-level selective checkpointing), full;
// DeepSpeed none, full).
int MaxZeroLevel(Engine engine);
std::vector<model::Remat> ExactRemats(Engine engine);

}  // namespace scalemodel::estimate

#endif  // SCALEMODEL_ESTIMATE_PRESETS_H_
