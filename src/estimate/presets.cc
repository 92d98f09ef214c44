#include "scalemodel/estimate/presets.h"

#include <string>

#include "scalemodel/base/strings.h"

namespace scalemodel::estimate {

Result<Engine> ParseEngine(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "maxtext") return Engine::kMaxText;
  if (t == "megatron" || t == "megatron-lm") return Engine::kMegatron;
  if (t == "megatron-bridge" || t == "nemo") return Engine::kMegatronBridge;
  if (t == "torchtitan") return Engine::kTorchtitan;
  if (t == "deepspeed") return Engine::kDeepSpeed;
  return InvalidArgument(
      "unknown engine '" + std::string(text) + "'" +
          DidYouMean(t,
                     {"maxtext", "megatron", "megatron-lm", "megatron-bridge",
                      "nemo", "torchtitan", "deepspeed"}) +
          "; expected maxtext, megatron, megatron-bridge, torchtitan or "
          "deepspeed",
      "engine");
}

std::string_view EngineName(Engine engine) {
  switch (engine) {
    case Engine::kMaxText:
      return "maxtext";
    case Engine::kMegatron:
      return "megatron";
    case Engine::kMegatronBridge:
      return "megatron-bridge";
    case Engine::kTorchtitan:
      return "torchtitan";
    case Engine::kDeepSpeed:
      return "deepspeed";
  }
  return "megatron";
}

void ApplyEngineMemory(Engine engine, MemoryPolicy& m) {
  // Start from the estimator's defaults (Megatron-LM's, below), then set
  // what the engine keeps differently. Bytes per parameter on the device;
  // the Adam moments are fp32 (8 B) in every engine's default.
  const MemoryPolicy defaults;
  m.weight_bytes = defaults.weight_bytes;
  m.grad_bytes = defaults.grad_bytes;
  m.master_bytes = defaults.master_bytes;
  m.moment_bytes = defaults.moment_bytes;
  m.reserve_fraction = defaults.reserve_fraction;
  switch (engine) {
    case Engine::kMaxText:
      // weight_dtype: float32 (MaxText base.yml): the weights are stored in
      // fp32 and cast to bf16 inside the step, so there is no separate
      // master copy; the gradients have the weights' dtype and sharding,
      // and optax's Adam moments (mu_dtype defaults to the weights') are
      // fp32: 4 + 4 + 8 = 16 B per parameter.
      m.weight_bytes = 4;
      m.grad_bytes = 4;
      m.master_bytes = 0;
      break;
    case Engine::kMegatron:
      // --bf16 keeps bf16 weights, fp32 main gradients
      // (accumulate_allreduce_grads_in_fp32) and fp32 master weights and
      // moments in the (distributed) optimizer: 2 + 4 + 12 = 18 B, or
      // 6 + 12/d with the distributed optimizer (Megatron Core's
      // distributed-optimizer guide, docs/source/api-guide/dist_optimizer.md,
      // bytes-per-parameter table, "bf16 param, fp32 grads").
      break;
    case Engine::kMegatronBridge:
      // The performance recipes set grad_reduce_in_fp32 False: the
      // gradient buffer is bf16 (2 B); the optimizer keeps fp32 master
      // weights, an fp32 copy of the main gradients and the moments, all
      // sharded by the distributed optimizer: 2 + 2 + 16/d (the same
      // guide's "fp16 parameters, fp16 gradients" row, 20 or 4 + 16/d).
      m.grad_bytes = 2;
      m.master_bytes = 8;
      break;
    case Engine::kTorchtitan:
      // FSDP2 keeps the sharded parameters in fp32 and casts the gathered
      // copies to bf16 (MixedPrecisionPolicy param_dtype bf16,
      // reduce_dtype fp32; torchtitan/config/job_config.py): the fp32 shard
      // is the master copy. Gradients fp32 and sharded like the weights,
      // AdamW moments fp32: 4 + 4 + 8 = 16 B per parameter, all over fsdp.
      m.weight_bytes = 4;
      m.grad_bytes = 4;
      m.master_bytes = 0;
      break;
    case Engine::kDeepSpeed:
      // Mixed-precision Adam as the ZeRO paper counts it (Rajbhandari et
      // al. 2020, section 3.1: 2 + 2 + 12 = 16 bytes per parameter): fp16/
      // bf16 weights and gradients, fp32 master weights, momentum and
      // variance; ZeRO-1/2/3 shard the last, the gradients, the weights.
      m.grad_bytes = 2;
      break;
  }
}

Result<void> ApplyWeightDtype(hw::Dtype dtype, TrainingConfig& c) {
  MemoryPolicy& m = c.memory;
  // MaxText keeps the weights in weight_dtype and casts them to the matmul
  // dtype inside the step (no master copy); the gradients have the weights'
  // dtype, and optax's Adam moments follow the parameters' dtype when
  // mu_dtype is unset (MaxText base.yml weight_dtype, mu_dtype;
  // docs/model.md 5.4, memory per chip).
  if (dtype != hw::Dtype::kBf16 && dtype != hw::Dtype::kFp32) {
    return InvalidArgument("expected bf16 or fp32 weights, got " +
                               std::string(hw::DtypeName(dtype)) +
                               " (quantized training keeps its weights in "
                               "bf16 or fp32: see --precision)",
                           "weight dtype");
  }
  const double bytes = hw::BytesPerElement(dtype);  // 2 or 4
  m.weight_bytes = bytes;
  m.grad_bytes = bytes;
  m.master_bytes = 0;
  m.moment_bytes = 2 * bytes;  // Adam's m and v
  c.precision.grad_reduce = dtype;
  return {};
}

bool StoresBf16Weights(const MemoryPolicy& m) {
  return m.weight_bytes == 2 && m.master_bytes == 0;
}

void ApplyEnginePreset(Engine engine, TrainingConfig& c) {
  ApplyEngineMemory(engine, c.memory);
  // Start from the estimator's defaults (bf16 reductions overlapped with the
  // backward pass, fused loss, delayed FP8 scaling, no TP overlap), then set
  // what the engine does differently.
  const TrainingConfig defaults;
  c.precision.grad_reduce = defaults.precision.grad_reduce;
  c.habits.dp_overlap = defaults.habits.dp_overlap;
  c.habits.unfused_cross_entropy = defaults.habits.unfused_cross_entropy;
  c.precision.fp8_recipe = defaults.precision.fp8_recipe;
  c.habits.tp_comm_overlap = defaults.habits.tp_comm_overlap;
  c.habits.fsdp_scan_exposed = defaults.habits.fsdp_scan_exposed;
  switch (engine) {
    case Engine::kMaxText:
      // base.yml weight_dtype: float32, so gradients and their reductions
      // are fp32 (tools/dev/import_runs.py sets grad_reduce "fp32" on every
      // MaxText row of data/validation).
      c.precision.grad_reduce = hw::Dtype::kFp32;
      // The cross-VM / cross-slice gradient reduction shows in full in
      // MaxText's published step times (docs/model.md 5.3; import_runs.py
      // sets dp_overlap false on MaxText rows). XLA fuses the loss.
      c.habits.dp_overlap = false;
      // scan_layers: true (base.yml): the decoder layers run as one
      // jax.lax.scan, and each layer's FSDP all-gathers start inside its
      // own iteration instead of under the previous layer ("parameter
      // All-Gather collectives lie exposed on the critical execution path
      // before every layer's forward computation", MaxText PR #4493, which
      // adds the missing prefetch); the first shows, the later ones hide
      // under the iteration's compute (core.cc, ScanIterationExposed).
      c.habits.fsdp_scan_exposed = true;
      break;
    case Engine::kMegatron:
      // --cross-entropy-loss-fusion is off by default (and did not exist
      // before 2024): the vocabulary-parallel loss runs unfused in fp32
      // (import_runs.py: cross_entropy "unfused" on Megatron-LM's rows).
      c.habits.unfused_cross_entropy = true;
      // With --bf16, Megatron-LM accumulates and reduces gradients in fp32
      // unless --grad-reduce-in-bf16 (megatron/training/arguments.py; the
      // launch line writer, src/launch/launch.cc, relies on the same default).
      c.precision.grad_reduce = hw::Dtype::kFp32;
      // --fp8-recipe defaults to "delayed" (the estimator's default).
      break;
    case Engine::kMegatronBridge:
      // The performance recipes turn on the fused loss
      // (cross_entropy_loss_fusion) and reduce gradients in bf16; the
      // Megatron-Bridge rows of data/validation are predicted so.
      // FP8 runs use current (per-tensor) scaling, fp8_recipe "cs" in
      // scripts/performance/configs/* (import_runs.py: fp8_recipe
      // "tensorwise" when a Megatron-Bridge row states no recipe).
      c.precision.fp8_recipe = Fp8Recipe::kTensorwise;
      break;
    case Engine::kTorchtitan:
      // FSDP2's MixedPrecisionPolicy reduce_dtype comes from
      // training.mixed_precision_reduce, "float32" by default
      // (torchtitan/config/job_config.py).
      c.precision.grad_reduce = hw::Dtype::kFp32;
      // Float8 training through torchao scales each tensor as it is cast
      // (dynamic tensorwise scaling, torchtitan's default float8 recipe;
      // the torchtitan launch line in src/launch/launch.cc says the same).
      c.precision.fp8_recipe = Fp8Recipe::kTensorwise;
      break;
    case Engine::kDeepSpeed:
      // zero_optimization.overlap_comm defaults to false for ZeRO stages 1
      // and 2 (DeepSpeed configuration docs): the gradient reduction runs
      // after the backward pass.
      c.habits.dp_overlap = false;
      break;
  }
}

int MaxZeroLevel(Engine engine) {
  switch (engine) {
    case Engine::kMaxText:
    case Engine::kTorchtitan:
      return 0;
    case Engine::kMegatron:
    case Engine::kMegatronBridge:
    case Engine::kDeepSpeed:
      return 2;
  }
  return 2;
}

std::vector<model::Remat> ExactRemats(Engine engine) {
  using model::Remat;
  switch (engine) {
    case Engine::kMaxText:
      return {Remat::kNone, Remat::kSaveMatmulOutputs,
              Remat::kSaveDotExceptMlpIn, Remat::kFull};
    case Engine::kMegatron:
    case Engine::kMegatronBridge:
      return {Remat::kNone, Remat::kSelective, Remat::kFull};
    case Engine::kTorchtitan:
      return {Remat::kNone, Remat::kSaveMatmulOutputs, Remat::kFull};
    case Engine::kDeepSpeed:
      // deepspeed.checkpointing wraps whole layers.
      return {Remat::kNone, Remat::kFull};
  }
  return {model::kAllRemats.begin(), model::kAllRemats.end()};
}

}  // namespace scalemodel::estimate
