#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "commands.h"
#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/core.h"
#include "scalemodel/estimate/efficiency.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/presets.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/launch/import.h"
#include "scalemodel/launch/launch.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/search/plan.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/timeline/timeline.h"
#include "scalemodel/trace/chrome.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"
#include "scalemodel/validate/crossval.h"
#include "scalemodel/validate/memory.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::cli {
namespace {

struct TrainOptionsCli {
  std::string model, system,
      plan = "dp=1", batch_tokens, seq = "4096", tokens, remat = "none",
      mode = "realistic", precision = "bf16", schedule = "1f1b",
      attention = "causal", emit, grad_reduce, attention_kernel = "fused",
      cross_entropy = "fused", fp8_recipe, cp_comm = "p2p", engine;
  // Whether --cross-entropy was given (its default is also a value).
  CLI::Option* cross_entropy_option = nullptr;
  int micro_batch = 1;
  int microbatches = 0;
  int lora = 0;
  std::string lora_targets;
  std::string weight_dtype;  // --weight-dtype: empty = the engine's
  int vocab_tiling = 1;
  int last_stage_layers = 0;
  int mtp_layers = -1;
  bool no_dp_overlap = false;
  bool ep_dedup = false;
  // --tp-overlap / --ep-overlap: empty when not given, "default" without a
  // value, else the fraction hidden as typed.
  std::string tp_overlap, ep_overlap;
  double dp_overlap = 1;
  std::string power_cap, mfu_basis = "bf16";
  int vpp = 1;
  double assume_mfu = 0;
  double price = 0;
  double imbalance = 1.0;
  double capacity = 0;
  bool offload = false;
  bool offload_params = false;
  std::string trace;  // train --trace FILE.json[.gz]
  bool offload_activations = false;
  // train --from ENGINE ARG...: the launch line or config to import, and
  // whether it set the loss kernel (which the preset would otherwise).
  std::vector<std::string> from;
  bool cross_entropy_set = false;
};

}  // namespace

// Shared by train and plan train: resolves model, system and config.
struct TrainInputs {
  ingest::ImportedModel model;
  hw::System system;
  estimate::TrainingConfig config;
  Json inputs;
  std::optional<launch::TrainEngine> engine;  // --emit
  // A --batch-tokens that was not whole sequences, rounded: the note saying
  // so, added to the estimates' notes.
  std::optional<std::string> batch_note;
};

// The inputs the hardware options set, only where they differ from the
// defaults (the goldens of runs without them stay as they were).
static void AddHardwareInputs(const hw::System& sys,
                              const estimate::TrainingConfig& c, Json* j) {
  if (sys.chip.power_limit_watts > 0) {
    (*j)["power_limit_w"] = sys.chip.power_limit_watts;
    (*j)["power_cap_factor"] = estimate::PowerCapFactor(sys.chip);
  }
  if (c.habits.tp_comm_overlap) {
    (*j)["tp_overlap_fraction"] =
        estimate::TpOverlapFraction(c.habits, c.par.tp);
  }
  if (c.habits.ep_overlap && c.habits.ep_overlap_fraction != 1) {
    (*j)["ep_overlap_fraction"] = c.habits.ep_overlap_fraction;
  }
  if (c.habits.dp_overlap_fraction != 1) {
    (*j)["dp_overlap_fraction"] = c.habits.dp_overlap_fraction;
  }
  if (c.precision.mfu_basis == estimate::MfuBasis::kDtype) {
    (*j)["mfu_basis"] = "dtype";
    (*j)["mfu_convention"] = "model FLOPs / (time x chips x dense " +
                             std::string(hw::DtypeName(c.precision.matmul)) +
                             " peak)";
  }
}

// --fp8-recipe: its name, and whether the chip runs it.
static Result<void> ApplyRecipe(const TrainOptionsCli& o, TrainInputs* in) {
  estimate::TrainingConfig& c = in->config;
  if (o.fp8_recipe.empty()) return {};
  if (c.precision.matmul != hw::Dtype::kFp8) {
    return InvalidArgument(
        "a scaling recipe applies to fp8 matmuls; add --precision fp8 or "
        "drop --fp8-recipe",
        "--fp8-recipe");
  }
  auto recipe = estimate::ParseFp8Recipe(o.fp8_recipe);
  if (!recipe) return tl::unexpected(recipe.error());
  c.precision.fp8_recipe = *recipe;
  const hw::Chip& chip = in->system.chip;
  if (estimate::Fp8RecipeGemmFactor(chip, *recipe) <= 0) {
    return InvalidArgument(
        std::string(estimate::Fp8RecipeName(*recipe)) +
            " needs Blackwell's block-scaled tensor cores (a chip with an "
            "fp4 rate); " +
            chip.id +
            " has none: use delayed, tensorwise, rowwise or "
            "blockwise",
        "--fp8-recipe");
  }
  // NVFP4: the GEMMs run at the fp4 rate.
  if (*recipe == estimate::Fp8Recipe::kNvfp4)
    c.precision.matmul = hw::Dtype::kFp4;
  return {};
}

// A fraction hidden given to an overlap flag, in [0, 1].
static Result<void> CheckFraction(double f, const char* flag) {
  if (!(f >= 0 && f <= 1)) {
    return InvalidArgument(
        fmt::format("expected the fraction of the communication hidden, "
                    "from 0 to 1 (such as 0.5), got {}",
                    FormatNumber(f)),
        flag);
  }
  return {};
}

// An overlap flag's value: `dflt` without one ("default"), else a fraction.
static Result<double> OverlapFraction(const std::string& text, double dflt,
                                      const char* flag) {
  if (text == "default") return dflt;
  char* end = nullptr;
  const double f = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    return InvalidArgument(
        "expected the fraction of the communication "
        "hidden, from 0 to 1 (such as 0.5), got '" +
            text + "'",
        flag);
  }
  if (auto ok = CheckFraction(f, flag); !ok) return tl::unexpected(ok.error());
  return f;
}

// --power-cap, --fp8-recipe, --mfu-basis and the overlap flags.
static Result<void> ApplyHardwareOptions(const TrainOptionsCli& o,
                                         TrainInputs* in) {
  if (auto p = ApplyPowerCap(o.power_cap, &in->system); !p) {
    return tl::unexpected(p.error());
  }
  if (auto r = ApplyRecipe(o, in); !r) return r;
  estimate::TrainingConfig& c = in->config;
  auto basis = estimate::ParseMfuBasis(o.mfu_basis);
  if (!basis) {
    return tl::unexpected(
        Error{basis.error().code, basis.error().message, "--mfu-basis"});
  }
  c.precision.mfu_basis = *basis;
  if (!o.tp_overlap.empty()) {
    auto f = OverlapFraction(o.tp_overlap, -1, "--tp-overlap");
    if (!f) return tl::unexpected(f.error());
    c.habits.tp_comm_overlap = true;
    c.habits.tp_overlap_fraction = *f;
  }
  if (!o.ep_overlap.empty()) {
    auto f = OverlapFraction(o.ep_overlap, 1, "--ep-overlap");
    if (!f) return tl::unexpected(f.error());
    c.habits.ep_overlap = true;
    c.habits.ep_overlap_fraction = *f;
  }
  if (auto f = CheckFraction(o.dp_overlap, "--dp-overlap"); !f) return f;
  c.habits.dp_overlap_fraction = o.dp_overlap;
  c.habits.dp_overlap = c.habits.dp_overlap && !o.no_dp_overlap;
  return {};
}

// --batch-tokens (tokens, or SEQUENCESxLENGTH), --seq and --tokens into
// `c`, each checked against its cap; the note when the batch was rounded to
// whole sequences.
static Result<std::optional<std::string>> ParseBatch(
    const TrainOptionsCli& o, estimate::TrainingConfig* c) {
  // Tokens ("4Mi") or the SEQUENCESxLENGTH shorthand ("1536x2048").
  Result<double> bt = tl::unexpected(Error{});
  if (o.batch_tokens.find('x') != std::string::npos) {
    auto parts = Split(o.batch_tokens, 'x');
    auto a =
        parts.size() == 2 ? units::ParseCount(parts[0]) : Result<double>(0.0);
    auto b =
        parts.size() == 2 ? units::ParseLength(parts[1]) : Result<double>(0.0);
    if (parts.size() != 2 || !a || !b || *a != std::floor(*a) ||
        *b != std::floor(*b)) {
      return InvalidArgument(
          "expected tokens (4Mi) or SEQUENCESxLENGTH "
          "(1536x2048), got '" +
              o.batch_tokens + "'",
          "--batch-tokens");
    }
    bt = *a * *b;
  } else {
    bt = ParseOption<double>("--batch-tokens", o.batch_tokens,
                             [](auto& t) { return units::ParseCount(t); });
  }
  if (!bt) return tl::unexpected(bt.error());
  bt = WholeUpTo("--batch-tokens", *bt, "tokens per batch", kMaxBatchTokensCap);
  if (!bt) return tl::unexpected(bt.error());
  // Lengths take k = 1024 ("4k" = 4096), as model cards mean.
  auto seq = ParseOption<double>("--seq", o.seq,
                                 [](auto& t) { return units::ParseLength(t); });
  if (!seq) return tl::unexpected(seq.error());
  seq = WholeUpTo("--seq", *seq, "tokens per sequence", kMaxSeqCap);
  if (!seq) return tl::unexpected(seq.error());
  c->batch_tokens = *bt;
  c->seq = *seq;
  // "4M" tokens, as papers write, to the nearest whole sequences.
  auto note = estimate::RoundBatchToSequences(c);
  if (c->batch_tokens / c->seq > kMaxSequencesCap.value) {
    return InvalidArgument(
        fmt::format("a batch of {} sequences is more than the {} one step "
                    "may hold",
                    c->batch_tokens / c->seq, kMaxSequencesCap.text),
        "--batch-tokens");
  }
  if (!o.tokens.empty()) {
    auto tok = ParseOption<double>(
        "--tokens", o.tokens, [](auto& t) { return units::ParseCount(t); });
    if (!tok) return tl::unexpected(tok.error());
    if (*tok > kMaxTrainingTokensCap.value) {
      return InvalidArgument(fmt::format("expected at most {} training "
                                         "tokens, got {}",
                                         kMaxTrainingTokensCap.text, *tok),
                             "--tokens");
    }
    c->tokens = *tok;
  }
  return note;
}

// Bytes per trained parameter of weights, gradients, master copy and
// moments, as the mode counts them (peak: the book's 2 + 8).
static double StateBytesPerParam(const estimate::TrainingConfig& c) {
  const estimate::StateBytes b = estimate::TrainingStateBytes(c.mode, c.memory);
  return b.weights + b.grads + b.optimizer;
}

// --weight-dtype and --vocab-tiling, after the engine's preset (which they
// override) and before --grad-reduce (which overrides the reduction dtype
// that --weight-dtype implies).
static Result<void> ApplyWeightOptions(const TrainOptionsCli& o,
                                       estimate::TrainingConfig* c) {
  if (!o.weight_dtype.empty()) {
    auto d = hw::ParseDtype(o.weight_dtype);
    if (!d || (*d != hw::Dtype::kBf16 && *d != hw::Dtype::kFp32)) {
      return InvalidArgument(
          "expected bf16 or fp32 (the dtype the weights are stored in), got '" +
              o.weight_dtype + "'",
          "--weight-dtype");
    }
    (void)estimate::ApplyWeightDtype(*d, *c);  // bf16 or fp32: checked above
  }
  if (o.vocab_tiling < 1 || o.vocab_tiling > estimate::kMaxVocabTiling) {
    return InvalidArgument(
        fmt::format("expected a number of vocabulary chunks from 1 to {}, "
                    "got {}",
                    estimate::kMaxVocabTiling, o.vocab_tiling),
        "--vocab-tiling");
  }
  c->habits.vocab_tiling = o.vocab_tiling;
  return {};
}

static Result<TrainInputs> ResolveTrain(const catalog::Catalog& cat,
                                        const TrainOptionsCli& o,
                                        bool need_plan) {
  TrainInputs in;
  auto m = ingest::FindModel(cat, o.model);
  if (!m) return tl::unexpected(m.error());
  in.model = *m;
  auto sys = cat.FindSystem(o.system);
  if (!sys) {
    return tl::unexpected(
        Error{sys.error().code, sys.error().message, "--system"});
  }
  in.system = *sys;
  estimate::TrainingConfig& c = in.config;
  // The engine's habits (--engine, or MaxText's with --emit maxtext) first;
  // the options given explicitly override them below.
  std::optional<estimate::Engine> preset;
  if (!o.engine.empty()) {
    auto engine = estimate::ParseEngine(o.engine);
    if (!engine) return tl::unexpected(engine.error());
    preset = *engine;
  } else if (auto emit = launch::ParseTrainEngine(o.emit);
             emit && *emit == launch::TrainEngine::kMaxText) {
    preset = estimate::Engine::kMaxText;
  }
  if (preset) estimate::ApplyEnginePreset(*preset, c);
  if (need_plan) {
    // The degrees first (--microbatches needs them); the key's other fields
    // are applied after the options, which they override.
    estimate::TrainingConfig probe;
    auto plan = estimate::ParsePlanKey(o.plan, &probe);
    if (!plan) return tl::unexpected(plan.error());
    c.par = probe.par;
  }
  auto batch = ParseBatch(o, &c);
  if (!batch) return tl::unexpected(batch.error());
  in.batch_note = *batch;
  auto remat = model::ParseRemat(o.remat);
  if (!remat) {
    return tl::unexpected(
        Error{remat.error().code, remat.error().message, "--remat"});
  }
  c.memory.remat = *remat;
  auto mode = ParseMode(o.mode, "--mode");
  if (!mode) return tl::unexpected(mode.error());
  c.mode = *mode == net::Mode::kPeak ? estimate::Mode::kPeak
                                     : estimate::Mode::kRealistic;
  auto prec = hw::ParseDtype(o.precision);
  if (!prec || (*prec != hw::Dtype::kBf16 && *prec != hw::Dtype::kFp8 &&
                *prec != hw::Dtype::kInt8)) {
    return InvalidArgument(
        "expected bf16, fp8 or int8 (TPU AQT), got '" + o.precision + "'",
        "--precision");
  }
  c.precision.matmul = *prec;
  auto sched = estimate::ParseSchedule(o.schedule);
  if (!sched) return tl::unexpected(sched.error());
  c.layout.schedule = *sched;
  if (o.vpp > 1 && o.schedule == "1f1b")
    c.layout.schedule = estimate::Schedule::kInterleaved;
  if (o.vpp < 1) {
    return InvalidArgument(
        "expected a positive number of virtual stages per device, got " +
            std::to_string(o.vpp),
        "--vpp");
  }
  c.layout.vpp = o.vpp;
  if (o.micro_batch <= 0) {
    return InvalidArgument("expected a positive number of sequences",
                           "--micro-batch");
  }
  c.layout.micro_batch = o.micro_batch;
  if (o.assume_mfu < 0 || o.assume_mfu > 1 || std::isnan(o.assume_mfu)) {
    return InvalidArgument("expected a fraction between 0 and 1, e.g. 0.4",
                           "--assume-mfu");
  }
  c.assume_mfu = o.assume_mfu;
  if (!(o.price >= 0) || !std::isfinite(o.price)) {
    return InvalidArgument(
        fmt::format("expected a price >= 0 in USD, got {}", o.price),
        "--price-per-chip-hour");
  }
  c.price_per_chip_hour = o.price;
  if (!(o.imbalance >= 1) || !std::isfinite(o.imbalance)) {
    return InvalidArgument(
        fmt::format("expected a load-imbalance factor >= 1 such as 1.1, got {}",
                    o.imbalance),
        "--load-imbalance");
  }
  c.habits.load_imbalance = o.imbalance;
  if (!(o.capacity >= 0) || !std::isfinite(o.capacity) ||
      (o.capacity > 0 && o.capacity < 1)) {
    return InvalidArgument(
        fmt::format("expected a capacity factor >= 1 such as 1.25 (0 = "
                    "dropless), got {}",
                    o.capacity),
        "--capacity-factor");
  }
  c.habits.capacity_factor = o.capacity;
  c.habits.ep_dedup = o.ep_dedup;
  if (o.last_stage_layers < 0) {
    return InvalidArgument("expected a layer count >= 1 (0: the default)",
                           "--last-stage-layers");
  }
  c.layout.last_stage_layers = o.last_stage_layers;
  if (c.layout.last_stage_layers >= in.model.spec.num_layers) {
    return InvalidArgument(
        "expected fewer layers on the last pipeline stage than the model's " +
            std::to_string(in.model.spec.num_layers) + ", got " +
            std::to_string(c.layout.last_stage_layers),
        "--last-stage-layers");
  }
  if (o.mtp_layers < -1) {
    return InvalidArgument(
        "expected a count of multi-token-prediction modules >= 0, got " +
            std::to_string(o.mtp_layers),
        "--mtp-layers");
  }
  c.mtp_layers = o.mtp_layers;
  auto kernel = estimate::ParseAttentionKernel(o.attention_kernel);
  if (!kernel) return tl::unexpected(kernel.error());
  c.habits.attention_kernel = *kernel;
  std::string ce = ToLower(Trim(o.cross_entropy));
  if (ce != "fused" && ce != "unfused") {
    return InvalidArgument("expected fused or unfused, got '" +
                               o.cross_entropy + "'" +
                               DidYouMean(ce, {"fused", "unfused"}),
                           "--cross-entropy");
  }
  if (!preset || o.cross_entropy_set ||
      (o.cross_entropy_option && o.cross_entropy_option->count())) {
    c.habits.unfused_cross_entropy = ce == "unfused";
  }
  auto cp_comm = estimate::ParseCpComm(o.cp_comm);
  if (!cp_comm) return tl::unexpected(cp_comm.error());
  c.habits.cp_comm = *cp_comm;
  if (auto hw = ApplyHardwareOptions(o, &in); !hw) {
    return tl::unexpected(hw.error());
  }
  c.memory.offload_params = o.offload_params;
  c.memory.offload_optimizer = o.offload || o.offload_params;
  c.memory.offload_activations = o.offload_activations;
  if (o.attention == "full") {
    c.attention = model::AttentionFlops::kFull;
  } else if (o.attention != "causal") {
    return InvalidArgument(
        "expected 'causal' or 'full', got '" + o.attention + "'",
        "--attention");
  }
  if (o.lora < 0) {
    return InvalidArgument(
        "expected a LoRA rank >= 1 (or 0 for full training), got " +
            std::to_string(o.lora),
        "--lora");
  }
  c.lora_rank = o.lora;
  if (!o.lora_targets.empty()) {
    if (o.lora <= 0) {
      return InvalidArgument(
          "names the adapted projections of a LoRA run, but --lora is not "
          "set; add --lora 16 (or drop --lora-targets)",
          "--lora-targets");
    }
    auto targets = estimate::ParseLoraTargets(o.lora_targets);
    if (!targets) return tl::unexpected(targets.error());
    c.lora_targets = *targets;
  }
  if (!o.emit.empty()) {
    auto engine = launch::ParseTrainEngine(o.emit);
    if (!engine) return tl::unexpected(EmitError(engine.error()));
    in.engine = *engine;
  }
  if (auto ok = ApplyWeightOptions(o, &c); !ok) {
    return tl::unexpected(ok.error());
  }
  if (!o.grad_reduce.empty()) {
    auto grd = hw::ParseDtype(o.grad_reduce);
    if (!grd || (*grd != hw::Dtype::kBf16 && *grd != hw::Dtype::kFp32)) {
      return InvalidArgument(
          "expected bf16 or fp32, got '" + o.grad_reduce + "'",
          "--grad-reduce");
    }
    c.precision.grad_reduce = *grd;
  }
  if (c.lora_rank > 0 && in.engine) {
    return InvalidArgument(
        "no launch line for LoRA fine-tuning: MaxText, Megatron-LM and "
        "torchtitan have no LoRA flags we can write; drop --emit or --lora",
        "--emit");
  }
  if (o.microbatches != 0) {
    if (o.micro_batch != 1) {
      return InvalidArgument(
          "give the micro batch (--micro-batch) or the number of "
          "microbatches (--microbatches), not both",
          "--microbatches");
    }
    auto mb = estimate::MicroBatchFor(in.system, c, o.microbatches);
    if (!mb) return tl::unexpected(mb.error());
    c.layout.micro_batch = *mb;
  }
  if (need_plan) {
    auto ok = estimate::ParsePlanKey(o.plan, &c);
    if (!ok) return tl::unexpected(ok.error());
    if (c.layout.vpp > 1 && c.par.pp < 2) {
      return InvalidArgument(
          o.vpp > 1 ? fmt::format("virtual stages need pipeline stages; "
                                  "with pp={} expected --vpp 1",
                                  c.par.pp)
                    : fmt::format("vpp={} needs pipeline stages (pp >= 2), "
                                  "got pp={}",
                                  c.layout.vpp, c.par.pp),
          o.vpp > 1 ? "--vpp" : "--plan");
    }
  }
  in.inputs = {
      {"model", in.model.spec.id},
      {"system", in.system.id},
      {"chips", in.system.num_chips()},
      {"batch_tokens", c.batch_tokens},
      {"seq", c.seq},
      {"micro_batch", c.layout.micro_batch},
      {"remat", std::string(model::RematName(c.memory.remat))},
      {"schedule", std::string(estimate::ScheduleName(c.layout.schedule))},
      {"vpp", c.layout.vpp},
      {"precision", std::string(hw::DtypeName(c.precision.matmul))},
      {"mode", o.mode},
      {"attention_flops", o.attention},
      {"grad_reduce", std::string(hw::DtypeName(c.precision.grad_reduce))},
      {"weight_bytes_per_param", StateBytesPerParam(c)},
      {"vocab_tiling", c.habits.vocab_tiling},
      {"dp_overlap", c.habits.dp_overlap},
      {"lora_rank", c.lora_rank},
      {"lora_targets", c.lora_rank > 0
                           ? Json(estimate::LoraTargetsName(c.lora_targets))
                           : Json(nullptr)},
      {"capacity_factor", c.habits.capacity_factor},
      {"ep_dedup", c.habits.ep_dedup},
      {"ep_overlap", c.habits.ep_overlap},
      {"tp_overlap", c.habits.tp_comm_overlap},
      {"last_stage_layers", c.layout.last_stage_layers},
      {"mtp_layers", estimate::MtpModules(in.model.spec, c)},
      {"attention_kernel",
       std::string(estimate::AttentionKernelName(c.habits.attention_kernel))},
      {"cross_entropy", c.habits.unfused_cross_entropy ? "unfused" : "fused"},
      {"fp8_recipe",
       std::string(estimate::Fp8RecipeName(c.precision.fp8_recipe))},
      {"cp_comm", std::string(estimate::CpCommName(c.habits.cp_comm))},
      {"mfu_convention",
       c.lora_rank > 0
           ? "model FLOPs (forward + input gradients; frozen weights have "
             "no weight gradients; no recompute) / (time x chips x dense "
             "bf16 peak)"
           : "model FLOPs (no recompute; multi-token-prediction modules "
             "included) / (time x chips x dense bf16 peak)"}};
  if (c.tokens > 0) in.inputs["tokens"] = c.tokens;
  AddHardwareInputs(in.system, c, &in.inputs);
  if (!o.engine.empty() && preset) {
    in.inputs["engine"] = std::string(estimate::EngineName(*preset));
  }
  return in;
}

static void AddTrainOptions(CLI::App* app, TrainOptionsCli& o, bool plan) {
  app->add_option("--model", o.model, "Catalog model or config.json")
      ->required();
  app->add_option("--system", o.system,
                  "Catalog system, CHIP:SHAPE or SYSTEM:SHAPE")
      ->required();
  if (plan) {
    app->add_option(
           "--plan", o.plan,
           "Degrees dp,fsdp,tp,pp,ep,cp (product = chips) and zero=1|2, "
           "or physical axes: fsdp=x.y,tp=z; or a whole plan as plan train "
           "prints it ('dp=2,fsdp=16,zero=2 mb=1 remat=none order=fsdp>dp'), "
           "whose fields override the options")
        ->required();
  }
  app->add_option("--batch-tokens", o.batch_tokens,
                  "Global batch per step in tokens (4M, 16M)")
      ->required();
  app->add_option("--seq", o.seq, "Sequence length")->capture_default_str();
  app->add_option(
      "--tokens", o.tokens,
      "Total training tokens: adds time to train, chip-hours, cost");
  app->add_option("--micro-batch", o.micro_batch,
                  "Sequences per replica per microbatch")
      ->capture_default_str();
  if (plan) {
    app->add_option("--microbatches", o.microbatches,
                    "Microbatches per step (gradient accumulation steps); "
                    "sets the micro batch instead of --micro-batch");
  }
  app->add_option(
         "--remat", o.remat,
         "none, selective, save-matmul-outputs, save-dot-except-mlp-in or full")
      ->capture_default_str();
  app->add_option("--last-stage-layers", o.last_stage_layers,
                  "Layers on the last pipeline stage, which also runs the "
                  "output layer and loss (Megatron "
                  "--decoder-last-pipeline-num-layers); 0: what the others, "
                  "ceil(L/pp) each, leave")
      ->capture_default_str();
  app->add_option("--mtp-layers", o.mtp_layers,
                  "Multi-token-prediction modules trained with the model, "
                  "on the last pipeline stage (Megatron --mtp-num-layers); "
                  "default: the model's own (DeepSeek-V3: 1), 0: none");
  app->add_option("--schedule", o.schedule, "gpipe, 1f1b or interleaved")
      ->capture_default_str();
  app->add_option("--vpp", o.vpp, "Virtual pipeline stages per device")
      ->capture_default_str();
  app->add_option("--precision", o.precision,
                  "Matmul precision: bf16, fp8 or int8 (TPU AQT)")
      ->capture_default_str();
  app->add_option("--power-cap", o.power_cap,
                  "GPU board power limit (500 W): sustained matrix throughput "
                  "x (cap / TDP)^0.329 (docs/model.md 5.6)");
  app->add_option("--mfu-basis", o.mfu_basis,
                  "MFU against the bf16 peak (bf16) or the matmul dtype's "
                  "peak (dtype)")
      ->capture_default_str();
  app->add_option("--dp-overlap", o.dp_overlap,
                  "Fraction of the data-parallel communication the overlap "
                  "hides of what it could (0 to 1)")
      ->capture_default_str();
  app->add_option("--mode", o.mode,
                  "realistic (what a run measures) or peak (the book's bound)")
      ->capture_default_str();
  app->add_option("--assume-mfu", o.assume_mfu,
                  "Step time from model FLOPs at this MFU (the book's 'how "
                  "long at 40%')");
  app->add_option("--price-per-chip-hour", o.price,
                  "USD per chip-hour (default: the catalog's list price)");
  app->add_option("--load-imbalance", o.imbalance,
                  "MoE: tokens on the busiest expert / mean")
      ->capture_default_str();
  app->add_option("--capacity-factor", o.capacity,
                  "MoE token dropping at this capacity factor (1.25): experts "
                  "padded to it, one-hot dispatch/combine einsums (GShard, "
                  "MaxText's dense path); 0 = dropless")
      ->capture_default_str();
  app->add_flag("--tp-overlap{default}", o.tp_overlap,
                "Tensor-parallel collectives overlapped with the adjacent "
                "GEMMs (Megatron --tp-comm-overlap, torchtitan async TP): "
                "(tp-1)/tp of them hide, at most the GEMMs' time; "
                "--tp-overlap=F hides the fraction F");
  app->add_flag("--ep-overlap{default}", o.ep_overlap,
                "MoE: the expert all-to-all of one microbatch runs under "
                "another's compute (Megatron "
                "--overlap-moe-expert-parallel-comm, DeepSeek's DualPipe); "
                "--ep-overlap=F: under the fraction F of it");
  app->add_flag("--ep-dedup", o.ep_dedup,
                "MoE dispatch sends a token once per destination node "
                "(DeepEP): the network carries distinct nodes, not top_k "
                "copies (capped by the model's topk_group)");
  app->add_flag("--offload-optimizer", o.offload,
                "Keep optimizer state in host memory (over PCIe)");
  app->add_flag("--offload-params", o.offload_params,
                "Keep parameters and gradients in host memory too (FSDP2 "
                "CPU offload, ZeRO-3 offload_param): each layer streams in "
                "over PCIe for every pass; implies --offload-optimizer");
  app->add_flag("--offload-activations", o.offload_activations,
                "Keep the activations the remat policy saves in host memory "
                "(MaxText's offloaded remat policies, Megatron-Core "
                "--cpu-offloading): out in the forward, back before the "
                "backward, over the host link; two layers stay on the chip");
  app->add_option("--weight-dtype", o.weight_dtype,
                  "bf16 or fp32: the weights stored in this dtype with no "
                  "master copy, gradients and Adam moments in it too "
                  "(MaxText weight_dtype; bf16 = 2 + 2 + 4 B per parameter, "
                  "fp32 = 4 + 4 + 8 B); default: the engine's");
  app->add_option("--vocab-tiling", o.vocab_tiling,
                  "The output layer and loss in this many vocabulary chunks "
                  "(MaxText num_vocab_tiling): 1/N of the logits held at "
                  "once, same FLOPs")
      ->capture_default_str();
  app->add_option("--grad-reduce", o.grad_reduce,
                  "Gradient reduction dtype: bf16 (default) or fp32 (default "
                  "with --emit maxtext, whose weights are fp32)");
  app->add_flag("--no-dp-overlap", o.no_dp_overlap,
                "The data-parallel gradient reduction runs after the backward "
                "pass, not under it (MaxText's measured behaviour; implied by "
                "--emit maxtext)");
  app->add_option("--lora", o.lora,
                  "LoRA fine-tuning at this adapter rank (e.g. 16): frozen "
                  "base weights, no weight gradients or optimizer state for "
                  "them")
      ->capture_default_str();
  app->add_option("--lora-targets", o.lora_targets,
                  "With --lora, the projections that carry adapters: all "
                  "(the default: q/k/v, attention output, MLP in and out, as "
                  "PEFT's *_proj and NeMo AutoModel), attention, mlp, or a "
                  "list of qkv,proj,fc1,fc2 (NeMo 1.x/2.0's default was qkv)");
  app->add_option("--attention-kernel", o.attention_kernel,
                  "fused (today's kernel for the chip: FA3/cuDNN on Hopper, "
                  "FA4/cuDNN on Blackwell), flash2 (FlashAttention-2) or "
                  "materialized (S x S scores in HBM, pre-2022)")
      ->capture_default_str();
  app->add_option("--cp-comm", o.cp_comm,
                  "Context parallelism: p2p (ring passes of K/V under the "
                  "attention), allgather (K/V gathered before it, Llama 3) or "
                  "a2a (Ulysses head split; tp x cp must divide the heads)")
      ->capture_default_str();
  app->add_option("--fp8-recipe", o.fp8_recipe,
                  "With --precision fp8, how inputs are scaled: delayed (the "
                  "default), tensorwise (current scaling: one more pass per "
                  "cast), rowwise, blockwise, mxfp8 or nvfp4 (fp4 GEMMs; "
                  "mxfp8 and nvfp4 on Blackwell)");
  o.cross_entropy_option =
      app->add_option(
             "--cross-entropy", o.cross_entropy,
             "Loss kernel: fused (one pass each way, 12 B per logit: "
             "TE, Megatron --cross-entropy-loss-fusion, XLA) or unfused "
             "(Megatron-LM's default, fp32 passes, 52 B per logit)")
          ->capture_default_str();
  app->add_option("--attention", o.attention,
                  "Attention FLOPs in MFU: causal (halved) or full")
      ->capture_default_str();
  app->add_option("--emit", o.emit,
                  std::string("Print the launch line for ") +
                      (plan ? "this plan" : "the best plan") +
                      " instead of the report, checked by the engine's "
                      "rules: maxtext, megatron or torchtitan, optionally "
                      "@VERSION (docs/launch.md; --json adds it as "
                      "\"launch\")");
  app->add_option("--engine", o.engine,
                  "Estimate as this framework runs by default: maxtext, "
                  "megatron (Megatron-LM), megatron-bridge (NeMo), "
                  "torchtitan or deepspeed; sets the gradient-reduction "
                  "dtype, DP overlap, loss kernel and FP8 recipe, which "
                  "explicit options override (--emit maxtext implies "
                  "maxtext)");
}

// --emit: the launch text replaces the report; JSON carries both.
static Result<bool> AddLaunch(const std::string& engine_name,
                              std::optional<launch::TrainEngine> engine,
                              const ingest::ImportedModel& m,
                              const hw::System& sys,
                              const estimate::TrainingConfig& cfg,
                              const estimate::TrainingEstimate& est,
                              Output& out) {
  if (!engine) return true;
  auto c = launch::EmitTrainingChecked(engine_name, m, sys, cfg, est);
  if (!c) return tl::unexpected(EmitError(c.error()));
  return PutCheckedLaunch(*c, out);
}

// Whether the step time is a prediction of what a run measures (realistic
// mode, no --assume-mfu), so that the published runs say how far to trust
// it.
static bool PredictsARun(const estimate::TrainingConfig& c) {
  return c.mode == estimate::Mode::kRealistic && c.assume_mfu <= 0;
}

static std::string TrainText(const estimate::TrainingEstimate& e,
                             const hw::System& sys) {
  std::string layout;
  for (const auto& [k, v] : e.layout) {
    layout += (layout.empty() ? "" : ", ") + k + " on " + v;
  }
  std::vector<std::vector<std::string>> comm_rows = {
      {"collective", "for", "axes", "bytes", "calls", "time", "exposed"}};
  for (const estimate::CommItem& c : e.comms) {
    std::string axes;
    for (const std::string& a : c.axes) axes += (axes.empty() ? "" : ".") + a;
    comm_rows.push_back({c.kind, c.parallelism, axes, FormatBytes(c.bytes),
                         std::to_string(c.calls), FormatSeconds(c.time),
                         FormatSeconds(c.exposed)});
  }
  const estimate::MemoryBreakdown& m = e.memory;
  const auto& L = e.per_layer;
  std::string per_layer =
      L.attention.si() > 0 || L.elementwise.si() > 0
          ? fmt::format(
                "  per layer and microbatch (forward + backward): {} = "
                "matmuls {} + attention {} + elementwise and norms {} + "
                "recompute {}; {} layers per stage, the last adds output "
                "layer and loss {}{}\n",
                FormatSeconds(L.total), FormatSeconds(L.matmul),
                FormatSeconds(L.attention), FormatSeconds(L.elementwise),
                FormatSeconds(L.recompute), L.layers_per_stage,
                FormatSeconds(L.output_and_loss),
                L.mtp_modules > 0
                    ? fmt::format(
                          " (multi-token prediction's included) and {} MTP "
                          "layer{}",
                          L.mtp_modules, L.mtp_modules > 1 ? "s" : "")
                    : "")
          : fmt::format(
                "  per layer and microbatch (forward + backward): {} at peak "
                "FLOP/s (peak mode does not split it); {} layers per "
                "stage\n",
                FormatSeconds(L.total), L.layers_per_stage);
  std::string out = fmt::format(
      "{}step time {} ({}; layout: {})\n"
      "  compute {}, exposed communication {}, bubble {}, optimizer update "
      "{}\n"
      "  MFU {:.1f}%, HFU {:.1f}%, {} tokens/s ({} per chip), "
      "{:.0f} TFLOP/s per chip\n{}  bottleneck: {}\n\n",
      e.feasible ? "" : "NOT FEASIBLE: " + e.reason + "\n",
      FormatSeconds(e.step_time),
      units::Plural(e.microbatches, "microbatch", "microbatches"),
      layout.empty() ? "one chip" : layout, FormatSeconds(e.compute),
      FormatSeconds(e.exposed_comm), FormatSeconds(e.bubble),
      FormatSeconds(e.other), 100 * e.mfu, 100 * e.hfu,
      units::FormatCount(e.tokens_per_s),
      units::FormatCount(e.tokens_per_s_per_chip),
      e.model_flops_per_s_per_chip / 1e12, per_layer, e.bottleneck);
  out += fmt::format(
      "memory per chip: {} of {} (params {}, grads {}, optimizer {}, "
      "activations {}, reserve {})\n\n",
      FormatBytes(m.total), FormatBytes(m.capacity), FormatBytes(m.params),
      FormatBytes(m.grads), FormatBytes(m.optimizer),
      FormatBytes(m.activations), FormatBytes(m.other));
  if (!e.comms.empty()) out += Table(comm_rows) + "\n";
  for (const std::string& n : e.notes) out += "- " + n + "\n";
  if (e.time_to_train_s > 0) {
    out += fmt::format("\ntime to train {}, {} chip-hours, cost {}\n",
                       FormatSeconds(units::Seconds(e.time_to_train_s)),
                       units::FormatCount(e.chip_hours),
                       std::isnan(e.cost_usd)
                           ? std::string("unknown (no price for ") +
                                 sys.chip.id + "; pass --price-per-chip-hour)"
                           : units::FormatUsd(e.cost_usd));
  }
  return out;
}

// `rows` (a header and one row per plan) as a table, each plan's row
// followed by "   plan: KEY".
static std::string TableWithKeys(
    const std::vector<std::vector<std::string>>& rows,
    const std::vector<std::string>& keys) {
  const std::vector<std::string> lines = Split(Table(rows), '\n');
  std::string out = lines[0] + "\n";
  for (size_t i = 1; i < lines.size() && i - 1 < keys.size(); ++i) {
    out += lines[i] + "\n   plan: " + keys[i - 1] + "\n";
  }
  return out;
}

// train --from ENGINE ARG...: the imported line becomes the options it
// decides (docs/cli.md "--from"); options that the line decides may not be
// given beside it. Returns the notes to print and the JSON input "from".
static Result<Json> ApplyFrom(const catalog::Catalog& cat, const CLI::App& app,
                              TrainOptionsCli* o,
                              std::vector<std::string>* notes) {
  for (const char* f :
       {"--plan",           "--batch-tokens",  "--seq",
        "--micro-batch",    "--microbatches",  "--remat",
        "--schedule",       "--vpp",           "--precision",
        "--fp8-recipe",     "--grad-reduce",   "--tp-overlap",
        "--ep-overlap",     "--ep-dedup",      "--offload-optimizer",
        "--offload-params", "--no-dp-overlap", "--cross-entropy",
        "--cp-comm",        "--engine",        "--last-stage-layers",
        "--mtp-layers",     "--weight-dtype",  "--vocab-tiling"}) {
    if (app.get_option_no_throw(f) != nullptr && app.count(f) > 0) {
      return InvalidArgument(
          std::string("the launch line given to --from sets this; change it "
                      "in the line (or drop --from)"),
          f);
    }
  }
  auto engine = launch::ParseTrainEngine(o->from[0]);
  if (!engine)
    return tl::unexpected(
        Error{engine.error().code, engine.error().message, "--from"});
  auto sys = cat.FindSystem(o->system);
  if (!sys)
    return tl::unexpected(
        Error{sys.error().code, sys.error().message, "--system"});
  const std::vector<std::string> args(o->from.begin() + 1, o->from.end());
  auto r = launch::ImportTraining(*engine, args, cat, *sys, o->model);
  if (!r)
    return tl::unexpected(Error{r.error().code, r.error().message, "--from"});
  const estimate::TrainingConfig& c = r->config;
  o->model = r->model_name;
  o->plan = launch::PlanKeyOf(c);
  o->batch_tokens = fmt::format("{}", c.batch_tokens);
  o->seq = fmt::format("{}", c.seq);
  o->remat = model::RematName(c.memory.remat);
  o->precision = hw::DtypeName(c.precision.matmul);
  o->fp8_recipe =
      c.precision.matmul == hw::Dtype::kFp8
          ? std::string(estimate::Fp8RecipeName(c.precision.fp8_recipe))
          : "";
  o->engine = estimate::EngineName(r->preset);
  o->grad_reduce = hw::DtypeName(c.precision.grad_reduce);
  o->tp_overlap = c.habits.tp_comm_overlap ? "default" : "";
  o->ep_overlap = c.habits.ep_overlap ? "default" : "";
  o->ep_dedup = c.habits.ep_dedup;
  o->no_dp_overlap = !c.habits.dp_overlap;
  o->cross_entropy = c.habits.unfused_cross_entropy ? "unfused" : "fused";
  o->cross_entropy_set = true;
  o->cp_comm = estimate::CpCommName(c.habits.cp_comm);
  o->mtp_layers = c.mtp_layers;
  o->vocab_tiling = c.habits.vocab_tiling;
  if (estimate::StoresBf16Weights(c.memory)) {
    o->weight_dtype = "bf16";  // MaxText weight_dtype bfloat16
  }
  if (app.count("--capacity-factor") == 0)
    o->capacity = c.habits.capacity_factor;
  if (!r->model.resolution.empty()) notes->push_back(r->model.resolution);
  notes->insert(notes->end(), r->notes.begin(), r->notes.end());
  std::string ignored;
  for (const std::string& a : r->ignored)
    ignored += (ignored.empty() ? "" : ", ") + a;
  if (!ignored.empty()) {
    notes->push_back(
        "read from the " + o->from[0] +
        " line and ignored (no effect on the estimate): " + ignored);
  }
  Json from = {{"engine", o->from[0]}, {"plan", o->plan}};
  from["ignored"] = r->ignored;
  return from;
}

// --from ENGINE ARG...: with it, --model, --plan and --batch-tokens are
// not required (the line gives them).
static void AddFromOption(CLI::App* app, TrainOptionsCli& o) {
  app->add_option("--from", o.from,
                  "Estimate the run an engine's launch line or config "
                  "describes: megatron \"ARGS\" (or a script), maxtext "
                  "CONFIG.yml [key=value ...], torchtitan CONFIG.toml "
                  "[\"--section.key value ...\"]; --model overrides the "
                  "model it names (docs/cli.md)")
      ->expected(1, -1)
      ->each([app](const std::string&) {
        for (const char* f : {"--model", "--plan", "--batch-tokens"}) {
          app->get_option(f)->required(false);
        }
      });
}

Command AddTrainCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<TrainOptionsCli>();
  c.app = app.add_subcommand(
      "train",
      "Step time, memory per chip, MFU and cost of training a model on a "
      "system with a given layout.\n\nExamples:\n"
      "  scalemodel train --model llama3-70b --system tpu-v5p-pod --plan "
      "fsdp=2240,tp=4 --batch-tokens 2240x4096 --seq 4096 --tokens 15T\n"
      "  scalemodel train --model gpt3-175b --system a100:8x128 --plan "
      "dp=8,tp=8,pp=16 --batch-tokens 1536x2048 --seq 2048 --remat full\n"
      "  scalemodel train --model llama3-70b --system tpu-v5p-pod --plan "
      "fsdp=2240,tp=4 --batch-tokens 2240x4096 --seq 4096 --mode peak "
      "--assume-mfu 0.4 "
      "--tokens 15T\n"
      "  scalemodel train --model llama3-70b --system h100:8x64 --plan "
      "dp=16,tp=8,pp=4,zero=1 --batch-tokens 1024x4096 --seq 4096 --remat "
      "selective --emit megatron\n"
      "  scalemodel train --model deepseek-v3 --system b200:8x32 --plan "
      "pp=8,ep=32,zero=1 --batch-tokens 4096x4096 --seq 4096 --schedule "
      "interleaved --vpp 2 --precision fp8 --fp8-recipe mxfp8 --ep-dedup "
      "--ep-overlap --remat full\n"
      "  scalemodel train --model llama3-8b --system h100:8x4 --plan "
      "'fsdp=32 mb=1 remat=none order=fsdp' --batch-tokens 1Mi --seq 8192");
  AddTrainOptions(c.app, *o, true);
  AddFromOption(c.app, *o);
  c.action = [o, app = c.app](const catalog::Catalog& cat) -> Result<Output> {
    TrainOptionsCli opts = *o;
    std::vector<std::string> from_notes;
    std::optional<Json> from_json;
    if (!opts.from.empty()) {
      auto f = ApplyFrom(cat, *app, &opts, &from_notes);
      if (!f) return tl::unexpected(f.error());
      from_json = *f;
    } else if (opts.model.empty() || app->count("--plan") == 0 ||
               opts.batch_tokens.empty()) {
      return InvalidArgument(
          "--model, --plan and --batch-tokens are required (or --from)",
          "train");
    }
    auto in = ResolveTrain(cat, opts, true);
    if (!in) return tl::unexpected(in.error());
    auto est =
        estimate::EstimateTraining(in->model.spec, in->system, in->config);
    if (!est) return tl::unexpected(est.error());
    if (in->batch_note) est->notes.insert(est->notes.begin(), *in->batch_note);
    if (!in->model.resolution.empty() && !from_json) {
      from_notes.push_back(in->model.resolution);
    }
    est->notes.insert(est->notes.begin(), from_notes.begin(), from_notes.end());
    Output out;
    in->inputs["plan"] = in->config.par.ToString();
    if (from_json) in->inputs["from"] = *from_json;
    Json result = report::ToJson(*est);
    auto [trust, trust_json] =
        TrustOnChip(cat, in->system.chip, true, PredictsARun(in->config));
    result["accuracy"] = trust_json;
    out.json = Document(in->inputs, result);
    out.text = fmt::format("{} on {} ({} chips), plan {}\n\n",
                           in->model.spec.name, in->system.id,
                           in->system.num_chips(), in->config.par.ToString()) +
               TrainText(*est, in->system) + trust;
    auto launch = AddLaunch(opts.emit, in->engine, in->model, in->system,
                            in->config, *est, out);
    if (!launch) return tl::unexpected(launch.error());
    if (!opts.trace.empty()) {
      const timeline::Timeline t =
          timeline::TrainingTimeline(*est, in->config, in->system);
      auto put = PutTrace(t, opts.trace, "step", out);
      if (!put) return tl::unexpected(put.error());
    }
    return out;
  };
  c.app->add_option("--trace", o->trace,
                    "Write the step's timeline as a Chrome trace-event file "
                    "(FILE.json, or FILE.json.gz compressed) for Perfetto or "
                    "chrome://tracing: a process per pipeline stage, a "
                    "thread per stream (docs/trace.md)");
  return c;
}

TrainPredictor AddPredictionOptions(CLI::App* app) {
  auto o = std::make_shared<TrainOptionsCli>();
  AddTrainOptions(app, *o, true);
  for (const char* name : {"--model", "--plan", "--batch-tokens"}) {
    app->get_option(name)->required(false);
  }
  TrainPredictor p;
  p.system = [o] { return o->system; };
  p.given = [o, app] { return app->count("--model") > 0; };
  p.run =
      [o,
       app](const catalog::Catalog& cat) -> Result<estimate::TrainingEstimate> {
    for (const char* name : {"--plan", "--batch-tokens"}) {
      if (app->count(name) == 0) {
        return InvalidArgument(
            std::string("give ") + name +
                " with --model to compare the profile with train's "
                "prediction",
            name);
      }
    }
    auto in = ResolveTrain(cat, *o, true);
    if (!in) return tl::unexpected(in.error());
    return estimate::EstimateTraining(in->model.spec, in->system, in->config);
  };
  return p;
}

}  // namespace scalemodel::cli

namespace scalemodel::cli {

// Serving points per metric, or per engine and metric (issue #15), as JSON
// and as a table.
static std::pair<Json, std::string> ServingSummaries(
    const std::vector<validate::GroupSummary>& groups, const char* head) {
  Json j = Json::array();
  std::vector<std::vector<std::string>> t = {
      {head, "points", "median |err|", "p90 |err|", "median err"}};
  for (const validate::GroupSummary& s : groups) {
    j.push_back({{"group", s.group},
                 {"count", s.count},
                 {"median_abs_rel_error", s.median_abs_rel_error},
                 {"p90_abs_rel_error", s.p90_abs_rel_error},
                 {"median_rel_error", s.median_rel_error}});
    t.push_back({s.group, std::to_string(s.count),
                 fmt::format("{:.1f}%", 100 * s.median_abs_rel_error),
                 fmt::format("{:.1f}%", 100 * s.p90_abs_rel_error),
                 fmt::format("{:+.1f}%", 100 * s.median_rel_error)});
  }
  return {j, Table(t)};
}

namespace {

Json SummaryJson(const std::vector<validate::GroupSummary>& v) {
  Json out = Json::array();
  for (const validate::GroupSummary& s : v) {
    out.push_back({{"group", s.group},
                   {"count", s.count},
                   {"median_abs_rel_error", s.median_abs_rel_error},
                   {"p90_abs_rel_error", s.p90_abs_rel_error},
                   {"max_abs_rel_error", s.max_abs_rel_error}});
  }
  return out;
}

Json FitJson(const std::vector<validate::FitParameter>& params,
             const validate::FitResult& fit) {
  Json values = Json::object();
  for (size_t p = 0; p < params.size(); ++p) {
    values[params[p].name] = {{"value", fit.values[p]},
                              {"fitted", static_cast<bool>(fit.fitted[p])}};
  }
  return {{"rows", fit.rows},
          {"rms_log_error", fit.rms_log_error},
          {"values", values}};
}

// `validate --cv MODE`: the out-of-source summary first, in-sample and as
// shipped beside it, then each fold's fitted values.
Result<Output> CrossValidateOutput(const catalog::Catalog& cat,
                                   const std::string& mode_text) {
  auto mode = validate::ParseCvMode(mode_text);
  if (!mode) return tl::unexpected(mode.error());
  auto cvs = validate::CrossValidate(cat, {*mode});
  const validate::CrossValidation* cv = &cvs.front();
  Json folds = Json::array();
  for (const validate::FoldFit& f : cv->folds) {
    Json j = FitJson(cv->params, f.fit);
    j["held_out"] = f.held_out;
    j["rows_held_out"] = f.rows_held_out;
    folds.push_back(j);
  }
  Json cases = Json::array();
  for (size_t i = 0; i < cv->out_of_sample.size(); ++i) {
    cases.push_back({{"id", cv->out_of_sample[i].id},
                     {"fold", cv->fold_of[i]},
                     {"expected", cv->out_of_sample[i].expected},
                     {"out_of_sample", cv->out_of_sample[i].predicted},
                     {"in_sample", cv->in_sample[i].predicted},
                     {"shipped", cv->shipped[i].predicted}});
  }
  Output out;
  out.json =
      Document({{"cv", std::string(validate::CvModeName(*mode))}},
               {{"out_of_sample", SummaryJson(cv->out_of_sample_summary)},
                {"in_sample", SummaryJson(cv->in_sample_summary)},
                {"shipped", SummaryJson(cv->shipped_summary)},
                {"all_rows_fit", FitJson(cv->params, cv->all_rows)},
                {"folds", folds},
                {"cases", cases}});
  out.text = validate::CrossValidationText(*cv);
  return out;
}

// `validate --fit`: the fit over every training row.
Result<Output> FitOutput(const catalog::Catalog& cat) {
  validate::ModelFit f = validate::FitModelConstants(cat);
  Output out;
  out.json = Document(Json::object(), FitJson(f.params, f.fit));
  std::vector<std::vector<std::string>> rows = {
      {"parameter", "assumed before the fit", "fitted", "bounds"}};
  for (size_t p = 0; p < f.params.size(); ++p) {
    rows.push_back(
        {f.params[p].name, fmt::format("{:.3f}", f.params[p].start),
         f.fit.fitted[p] ? fmt::format("{:.3f}", f.fit.values[p]) : "(no rows)",
         fmt::format("{:.2f}-{:.2f}", f.params[p].lo, f.params[p].hi)});
  }
  out.text = fmt::format(
                 "Least squares on log(predicted / measured) over the {} of "
                 "{} training rows the constants affect (rms log error "
                 "{:.3f}):\n\n",
                 f.fit.rows, f.training_rows, f.fit.rms_log_error) +
             Table(rows);
  return out;
}

// Keeps the cases whose id or setup mentions `filter` (all when empty) and
// summarises them again; an error when none does.
Result<bool> FilterCases(validate::ValidationReport& rep,
                         const std::string& filter) {
  if (filter.empty()) return true;
  const std::string want = ToLower(filter);
  auto has = [&](const std::string& text) {
    return ToLower(text).find(want) != std::string::npos;
  };
  std::erase_if(rep.cases, [&](const validate::ValidationCase& v) {
    return !(has(v.id) || has(v.detail) || ToLower(v.chip) == want);
  });
  if (rep.cases.empty()) {
    return InvalidArgument("no validation case mentions '" + filter +
                               "' (try a chip such as b200, a model such as "
                               "qwen3, or a source such as maxtext)",
                           "--filter");
  }
  validate::Summarize(rep);
  return true;
}

// `validate` without --cv or --fit: every case, or those --filter picks.
Result<Output> ValidateOutput(const catalog::Catalog& cat, bool markdown,
                              const std::string& filter) {
  auto cached = validate::CachedValidation(cat);
  if (!cached) return tl::unexpected(cached.error());
  // A copy: --filter narrows it.
  auto rep = std::make_unique<validate::ValidationReport>(**cached);
  if (auto kept = FilterCases(*rep, filter); !kept) {
    return tl::unexpected(kept.error());
  }
  Output out;
  Json cases = Json::array();
  for (const validate::ValidationCase& v : rep->cases) {
    cases.push_back({{"id", v.id},
                     {"group", v.group},
                     {"metric", v.metric},
                     {"predicted", v.predicted},
                     {"expected", v.expected},
                     {"rel_error", v.rel_error},
                     {"detail", v.detail}});
    if (!v.metric_class.empty()) {
      cases.back()["engine"] = v.engine;
      cases.back()["metric_class"] = v.metric_class;
    }
  }
  Json summary = Json::array();
  std::vector<std::vector<std::string>> rows = {
      {"group", "cases", "median |err|", "p90 |err|", "max |err|"}};
  for (const validate::GroupSummary& s : rep->summary) {
    summary.push_back({{"group", s.group},
                       {"count", s.count},
                       {"median_abs_rel_error", s.median_abs_rel_error},
                       {"p90_abs_rel_error", s.p90_abs_rel_error},
                       {"max_abs_rel_error", s.max_abs_rel_error}});
    rows.push_back({s.group, std::to_string(s.count),
                    fmt::format("{:.1f}%", 100 * s.median_abs_rel_error),
                    fmt::format("{:.1f}%", 100 * s.p90_abs_rel_error),
                    fmt::format("{:.1f}%", 100 * s.max_abs_rel_error)});
  }
  Json by_chip = Json::array();
  std::vector<std::vector<std::string>> chip_rows = {
      {"chip", "training runs", "median |err|", "p90 |err|"}};
  for (const validate::GroupSummary& s : rep->by_chip) {
    by_chip.push_back({{"chip", s.group},
                       {"count", s.count},
                       {"median_abs_rel_error", s.median_abs_rel_error},
                       {"p90_abs_rel_error", s.p90_abs_rel_error}});
    chip_rows.push_back({s.group, std::to_string(s.count),
                         fmt::format("{:.1f}%", 100 * s.median_abs_rel_error),
                         fmt::format("{:.1f}%", 100 * s.p90_abs_rel_error)});
  }
  auto mem = validate::RunMemoryValidation(cat);
  if (!mem) return tl::unexpected(mem.error());
  Json memory = {{"median_abs_rel_error", mem->median_abs_rel_error},
                 {"p90_abs_rel_error", mem->p90_abs_rel_error},
                 {"max_abs_rel_error", mem->max_abs_rel_error},
                 {"cases", Json::array()}};
  for (const validate::MemoryCase& m : mem->cases) {
    memory["cases"].push_back({{"id", m.id},
                               {"kind", m.kind},
                               {"engine", m.engine},
                               {"predicted_bytes", m.predicted_bytes},
                               {"published_bytes", m.measured_bytes},
                               {"rel_error", m.rel_error}});
  }
  auto [by_metric, metric_table] =
      ServingSummaries(rep->serving_by_metric, "serving metric");
  auto [by_engine, engine_table] =
      ServingSummaries(rep->serving_by_engine, "serving engine: metric");
  out.json = Document(Json::object(), {{"cases", cases},
                                       {"summary", summary},
                                       {"by_chip", by_chip},
                                       {"serving_by_metric", by_metric},
                                       {"serving_by_engine", by_engine},
                                       {"memory", memory},
                                       {"skipped", rep->skipped}});
  if (markdown) {
    // The whole file: the cross-validation first (unfiltered only).
    std::string headline;
    if (filter.empty()) {
      headline = validate::CrossValidationMarkdown(validate::CrossValidate(
          cat, {validate::CvMode::kSource, validate::CvMode::kEngine,
                validate::CvMode::kFamily}));
    }
    out.text = validate::AccuracyMarkdown(*rep, headline) +
               validate::MemoryMarkdown(*mem);
    out.verbatim = true;
  } else {
    std::vector<std::vector<std::string>> crow = {
        {"id", "metric", "predicted", "measured", "error"}};
    std::vector<std::vector<std::string>> csv = {
        {"id", "group", "metric", "predicted", "expected", "rel_error"}};
    for (const validate::ValidationCase& v : rep->cases) {
      crow.push_back({v.id, v.metric, units::FormatCount(v.predicted, 4),
                      units::FormatCount(v.expected, 4),
                      fmt::format("{:+.1f}%", 100 * v.rel_error)});
      csv.push_back({v.id, v.group, v.metric, CsvNumber(v.predicted),
                     CsvNumber(v.expected), CsvNumber(v.rel_error)});
    }
    out.csv = Csv(csv);
    out.text = Table(crow) + "\n" + Table(rows) + "\n" + Table(chip_rows) +
               "\n" + metric_table + "\n" + engine_table + "\n" +
               validate::MemoryText(*mem) +
               fmt::format("\n{} rows not compared (see --markdown)\n",
                           rep->skipped.size());
  }
  return out;
}

}  // namespace

Command AddValidateCommand(CLI::App& app) {
  Command c;
  auto markdown = std::make_shared<bool>(false);
  auto filter = std::make_shared<std::string>();
  auto cv = std::make_shared<std::string>();
  auto fit = std::make_shared<bool>(false);
  c.app = app.add_subcommand(
      "validate",
      "Compare predictions with the book's worked examples and the published "
      "runs shipped in data/validation.\n  scalemodel validate --markdown > "
      "docs/accuracy.md\n  scalemodel validate --filter b200\n  scalemodel "
      "validate --cv source");
  c.app->add_flag("--markdown", *markdown,
                  "Print docs/accuracy.md (every case and the summary)");
  c.app->add_option("--filter", *filter,
                    "Only the cases whose id or setup contains this text "
                    "(b200, qwen3, maxtext, nemo, fsdp...), with their own "
                    "summary");
  c.app->add_option("--cv", *cv,
                    "Cross-validate the training runs, leaving out one "
                    "source, engine or (chip) family at a time: the "
                    "unmeasured constants are fitted on the other rows "
                    "(docs/accuracy.md)");
  c.app->add_flag("--fit", *fit,
                  "Fit the unmeasured constants over every training row and "
                  "print the values (docs/accuracy.md, What is fitted)");
  c.action = [markdown, filter, cv,
              fit](const catalog::Catalog& cat) -> Result<Output> {
    if ((!cv->empty() || *fit) && (*markdown || !filter->empty())) {
      return InvalidArgument(
          std::string(*fit ? "--fit" : "--cv") +
              " runs on every training row and prints its own table; drop "
              "--markdown and --filter (docs/accuracy.md has both)",
          *fit ? "--fit" : "--cv");
    }
    if (!cv->empty() && *fit) {
      return InvalidArgument(
          "give --cv or --fit, not both (--cv prints the all-rows fit too)",
          "--fit");
    }
    if (!cv->empty()) return CrossValidateOutput(cat, *cv);
    if (*fit) return FitOutput(cat);
    return ValidateOutput(cat, *markdown, *filter);
  };
  return c;
}

}  // namespace scalemodel::cli

namespace scalemodel::cli {

namespace {
struct PlanOptionsCli {
  TrainOptionsCli train;
  int top = 5;
  std::string objective = "time";
  std::string explain;
  std::string chips;
  int threads = 0;
  // Constraints (0 / -1 / empty: searched).
  std::array<int, estimate::kNumPar> degrees{};
  int zero = -1;
  std::string offload, headroom;
};

// "10%" or "0.1" as a fraction of HBM kept free, in [0, 0.9].
Result<double> ParseHeadroom(const std::string& text) {
  std::string t(Trim(text));
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const double f = percent ? v / 100 : v;
  if (t.empty() || end != t.c_str() + t.size() || !(f >= 0) || f > 0.9) {
    return InvalidArgument(
        "expected a share of HBM to keep free from 0% to "
        "90%, such as 10% or 0.1, got '" +
            text + "'",
        "--memory-headroom");
  }
  return f;
}

// The constraints plan train was given, into `fixed` and the base config's
// headroom.
Result<void> ReadConstraints(CLI::App* tr, const PlanOptionsCli& o,
                             const estimate::TrainingConfig& base,
                             search::PlanConstraints* fixed,
                             estimate::TrainingConfig* config) {
  for (int i = 0; i < estimate::kNumPar; ++i) {
    if (o.degrees[i] < 0) {
      return InvalidArgument(
          "expected a positive degree, got " + std::to_string(o.degrees[i]),
          "--" + std::string(estimate::ParName(i)));
    }
    fixed->degrees[i] = o.degrees[i];
  }
  if (o.zero < -1) {
    return InvalidArgument("expected a ZeRO level 0, 1 or 2", "--zero");
  }
  fixed->zero = o.zero;
  if (tr->get_option("--remat")->count() > 0) fixed->remat = base.memory.remat;
  if (tr->get_option("--schedule")->count() > 0)
    fixed->schedule = base.layout.schedule;
  if (tr->get_option("--micro-batch")->count() > 0)
    fixed->micro_batch = base.layout.micro_batch;
  if (tr->get_option("--vpp")->count() > 0) {
    fixed->vpp = base.layout.vpp;
    if (base.layout.vpp > 1 && !fixed->schedule)
      fixed->schedule = estimate::Schedule::kInterleaved;
  }
  if (base.memory.offload_params) {
    fixed->offload = 2;
  } else if (base.memory.offload_optimizer) {
    fixed->offload = 1;
  }
  if (!o.offload.empty()) {
    const std::string t = ToLower(Trim(o.offload));
    const int level = t == "none"        ? 0
                      : t == "optimizer" ? 1
                      : t == "params"    ? 2
                                         : -1;
    if (level < 0) {
      return InvalidArgument("expected none, optimizer or params, got '" +
                                 o.offload + "'" +
                                 DidYouMean(t, {"none", "optimizer", "params"}),
                             "--offload");
    }
    fixed->offload = level;
  }
  if (!o.headroom.empty()) {
    auto h = ParseHeadroom(o.headroom);
    if (!h) return tl::unexpected(h.error());
    config->memory.headroom_fraction = *h;
  }
  return {};
}
}  // namespace

// Why a search found nothing: no split of the chips divides the batch, the
// constraints leave no plan that fits, or every layout needs more HBM.
static std::string NoPlanSentence(const TrainInputs& in,
                                  const search::SearchResult& counts,
                                  const search::PlanConstraints& fixed) {
  const double seqs = in.config.batch_tokens / in.config.seq;
  if (counts.degree_splits > 0 &&
      counts.splits_batch_unsplit == counts.degree_splits) {
    const double r = counts.fewest_unsplit_replicas;
    const double up = std::ceil(seqs / r) * r;
    return "No layout divides " + FormatNumber(seqs) +
           " sequences over the replicas (dp x fsdp x ep) of " +
           FormatNumber(in.system.num_chips()) + " chips" +
           (fixed.any() ? " with the fixed degrees" : "") +
           " (the fewest replicas a split has is " + FormatNumber(r) +
           "). Try a batch of " + FormatNumber(up) + " sequences (" +
           FormatNumber(up * in.config.seq) +
           " tokens), fewer chips (--chips), or `train --mode peak --plan` "
           "for the book's sequence sharding, where a chip holds a "
           "fraction of a sequence.\n";
  }
  const std::string hbm =
      units::FormatBytes(units::Bytes(
          estimate::UsableCapacity(in.system.chip, in.config.memory))) +
      (in.config.memory.headroom_fraction > 0 ? " left by the headroom"
                                              : " available");
  if (fixed.any()) {
    return "No plan that keeps to the given constraints (degrees, --remat, "
           "--schedule, --micro-batch, --vpp, --zero, --offload) fits in the " +
           hbm + " per chip. Drop a constraint to search it.\n";
  }
  return "No plan fits: every layout needs more HBM per chip than the " + hbm +
         ". Try more chips, a shorter sequence, or FP8" +
         (in.config.lora_rank > 0
              ? std::string(".\n")
              : std::string("; to fine-tune, --lora 16 trains adapters "
                            "over frozen weights.\n"));
}

Command AddPlanCommand(CLI::App& app) {
  Command c;
  c.app = app.add_subcommand(
      "plan", "Search plans. `scalemodel plan train --help` for training.");
  c.app->require_subcommand(1);
  CLI::App* tr = c.app->add_subcommand(
      "train",
      "Search every valid training plan (degrees of dp, fsdp with ZeRO "
      "level, tp, pp, ep, cp;\ntheir placement on the physical axes; micro "
      "batch; remat; schedule and virtual stages;\noptimizer offload), "
      "evaluate each with the realistic (or peak) model, show the best.\n\n"
      "Examples:\n"
      "  scalemodel plan train --model llama3-70b --system tpu-v5p:8x16x16 "
      "--batch-tokens 4Mi --seq 4096 --tokens 15T\n"
      "  scalemodel plan train --model gpt3-175b --system a100:8x128 "
      "--batch-tokens 1536x2048 --seq 2048 --explain dp=8,tp=8,pp=16\n"
      "  scalemodel plan train --model llama3-8b --system tpu-v5e:16x16 "
      "--batch-tokens 1Mi --seq 8192 --emit maxtext");
  auto o = std::make_shared<PlanOptionsCli>();
  AddTrainOptions(tr, o->train, false);
  tr->add_option("--top", o->top, "How many plans to show (1 to 10000)")
      ->capture_default_str();
  tr->add_option("--objective", o->objective,
                 "time (step time), cost (dollars for --tokens; with a fixed "
                 "system it ranks like time) or chips (fewest chips of "
                 "--chips first, then step time)")
      ->capture_default_str();
  tr->add_option("--explain", o->explain,
                 "A plan (as for train --plan) to estimate and rank among the "
                 "plans found");
  tr->add_option("--threads", o->threads, "Worker threads (0: all cores)");
  for (int i = 0; i < estimate::kNumPar; ++i) {
    const std::string name = estimate::ParName(i);
    tr->add_option("--" + name, o->degrees[i],
                   "Keep the " + name + " degree at this value");
  }
  tr->add_option("--zero", o->zero,
                 "Keep the data-parallel replicas at this ZeRO level (0-2)");
  tr->add_option("--offload", o->offload,
                 "Keep to one offload choice: none, optimizer or params "
                 "(default: all searched)");
  tr->add_option("--memory-headroom", o->headroom,
                 "Share of HBM each plan leaves free, such as 10%");
  tr->add_option("--chips", o->chips,
                 "Plan on fewer chips than the system has: one count or a "
                 "list (256,512,1024) searched together; rank the sizes with "
                 "--objective cost");
  CLI::App* sv = c.app->add_subcommand(
      "serve",
      "Search serving layouts for a model on one chip type: chip counts, "
      "tensor "
      "and expert\nparallelism, batch sizes. Prints the latency/throughput "
      "Pareto frontier, the best plan\nunder --tpot-max / --ttft-max, and the "
      "prefill:decode chip ratio for disaggregated serving.\nWith --rate: the "
      "cheapest plan (aggregated or disaggregated, pool ratio, batch caps, "
      "chunk size)\nwhose simulated TTFT and TPOT p99 meet --slo-ttft and "
      "--slo-tpot, or the closest one.\n\nExamples:\n"
      "  scalemodel plan serve --model llama3-70b --system tpu-v5e --prompt "
      "8192 "
      "--output 512 --tpot-max 50ms\n"
      "  scalemodel plan serve --model llama3-70b --system h100 --rate 8 "
      "--prompt 2048 --output 512 --slo-ttft 2s --slo-tpot 50ms");
  auto so = std::make_shared<ServeSearchCli>();
  AddServeSearchOptions(sv, *so);
  c.action = [o, tr, sv, so](const catalog::Catalog& cat) -> Result<Output> {
    if (sv->parsed()) return RunServeSearch(cat, *so);
    if (!tr->parsed()) {
      return InvalidArgument("expected `scalemodel plan train ...`", "plan");
    }
    if (auto ok = search::CheckPlanCount(o->top); !ok) {
      return InvalidArgument(ok.error().message, "--top");
    }
    auto objective = search::ParseObjective(o->objective);
    if (!objective) return tl::unexpected(objective.error());
    TrainOptionsCli opts = o->train;
    auto in = ResolveTrain(cat, opts, false);
    if (!in) return tl::unexpected(in.error());
    search::PlanConstraints fixed;
    if (auto ok = ReadConstraints(tr, *o, in->config, &fixed, &in->config);
        !ok) {
      return tl::unexpected(ok.error());
    }
    const std::optional<launch::TrainEngine> engine = in->engine;
    if (engine) {
      auto ok = launch::CheckTrainEngine(*engine, in->system);
      if (!ok) return tl::unexpected(EmitError(ok.error()));
    }
    search::PlanRequest req;
    req.base = in->config;
    req.top = o->top;
    req.objective = *objective;
    if (o->threads < 0 || o->threads > kMaxThreadsCap.value) {
      return InvalidArgument(
          fmt::format("expected a number of worker threads from 0 (all "
                      "cores) to {}, got {}",
                      kMaxThreadsCap.text, o->threads),
          "--threads");
    }
    req.threads = o->threads;
    req.fixed = fixed;
    // Only plans the engine can launch: its ZeRO levels and remat policies,
    // then its validator (launch/rules.h) on each candidate.
    if (engine) {
      req.launchable_by = launch::PresetOf(*engine);
      req.launchable = [&, emit = opts.emit](
                           const hw::System& sys,
                           const estimate::TrainingConfig& cfg) {
        return launch::CanLaunchTraining(emit, in->model, sys, cfg);
      };
    }
    for (const std::string& count :
         o->chips.empty() ? std::vector<std::string>{} : Split(o->chips, ',')) {
      auto n = units::ParseCount(count);
      if (!n || std::floor(*n) != *n) {
        return InvalidArgument("expected chip counts such as 256,512, got '" +
                                   Excerpt(o->chips) + "'",
                               "--chips");
      }
      if (*n > kMaxChipsCap.value) {
        return InvalidArgument(fmt::format("expected at most {} chips, got {}",
                                           kMaxChipsCap.text, *n),
                               "--chips");
      }
      req.chip_counts.push_back(static_cast<int>(*n));
    }
    if (!o->explain.empty()) {
      // The whole plan key; its fields override the options.
      estimate::TrainingConfig own = in->config;
      auto ok = estimate::ParsePlanKey(o->explain, &own);
      if (!ok)
        return tl::unexpected(
            Error{ok.error().code, ok.error().message, "--explain"});
      req.explain = std::move(own);
    }
    auto start = std::chrono::steady_clock::now();
    bool printed = false;
    req.progress = [&](double fraction, double configs) {
      double el = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      if (el < 2) return;
      printed = true;
      std::fprintf(stderr,
                   "\rsearching: %3.0f%% of layouts, %s configurations, %.1f s",
                   100 * fraction, units::FormatCount(configs).c_str(), el);
    };
    req.cancelled = Interrupted;
    auto res = search::PlanTraining(in->model.spec, in->system, req);
    if (printed) std::fprintf(stderr, "\n");
    if (!res) return tl::unexpected(res.error());
    if (in->batch_note) {
      for (search::RankedPlan& r : res->plans) {
        if (r.estimate) {
          r.estimate->notes.insert(r.estimate->notes.begin(), *in->batch_note);
        }
      }
      if (res->explain) {
        auto& notes = res->explain->estimate.notes;
        notes.insert(notes.begin(), *in->batch_note);
      }
    }
    const search::SearchResult& counts = res->counts;
    Output out;
    Json plans = Json::array();
    std::string text = fmt::format(
        "{} on {} ({} chips), batch {} tokens x seq {}: {} configurations "
        "({} scored, {} pruned, {} over HBM) in {:.3g} s on {}\n\n",
        in->model.spec.name, in->system.id,
        o->chips.empty()
            ? std::to_string(in->system.num_chips())
            : o->chips + " of " + std::to_string(in->system.num_chips()),
        FormatNumber(in->config.batch_tokens), FormatNumber(in->config.seq),
        units::FormatCount(counts.configs_evaluated),
        units::FormatCount(counts.configs_scored),
        units::FormatCount(counts.configs_pruned),
        units::FormatCount(counts.configs_infeasible), counts.search_time_s,
        units::Plural(counts.threads, "thread", "threads"));
    if (res->plans.empty()) text += NoPlanSentence(*in, counts, fixed);
    // The plan key, often 60+ characters, goes on its own line under its
    // row so that the table fits 100 columns and the key copies whole.
    std::vector<std::vector<std::string>> rows = {
        {"#", "chips", "step", "vs best", "MFU", "memory", "bottleneck"}};
    std::vector<std::string> keys;
    std::vector<std::vector<std::string>> csv = {
        {"rank", "chips", "system", "plan", "step_time_s", "behind_best", "mfu",
         "memory_bytes", "bottleneck"}};
    int rank = 0;
    for (const search::RankedPlan& r : res->plans) {
      const search::PlanCandidate& p = r.candidate;
      const estimate::TrainingConfig& cfg = r.config;
      ++rank;
      Json j = r.estimate ? report::ToJson(*r.estimate) : Json::object();
      j["chips"] = r.system.num_chips();
      j["system"] = r.system.id;
      j["plan"] = cfg.par.ToString();
      j["key"] = p.Key();
      j["micro_batch"] = cfg.layout.micro_batch;
      j["remat"] = std::string(model::RematName(cfg.memory.remat));
      j["schedule"] = std::string(estimate::ScheduleName(cfg.layout.schedule));
      j["vpp"] = cfg.layout.vpp;
      j["last_stage_layers"] = cfg.layout.last_stage_layers;
      j["offload_optimizer"] = cfg.memory.offload_optimizer;
      j["offload_params"] = cfg.memory.offload_params;
      j["offload_activations"] = cfg.memory.offload_activations;
      j["search_step_time_s"] = p.step_time_s;
      j["behind_best"] = r.behind_best;
      plans.push_back(j);
      keys.push_back(p.Key());
      csv.push_back({std::to_string(rank), std::to_string(r.system.num_chips()),
                     r.system.id, p.Key(), CsvNumber(p.step_time_s),
                     CsvNumber(r.behind_best), CsvNumber(p.mfu),
                     CsvNumber(p.memory_bytes),
                     r.estimate ? r.estimate->bottleneck : ""});
      rows.push_back({std::to_string(rank),
                      std::to_string(r.system.num_chips()),
                      FormatSeconds(units::Seconds(p.step_time_s)),
                      fmt::format("{:+.1f}%", 100 * r.behind_best),
                      fmt::format("{:.1f}%", 100 * p.mfu),
                      FormatBytes(units::Bytes(p.memory_bytes)),
                      r.estimate ? r.estimate->bottleneck : "?"});
    }
    if (!keys.empty()) text += TableWithKeys(rows, keys);
    out.csv = Csv(csv);
    // The top-ranked plan in detail, and for --emit.
    const search::RankedPlan* best_plan =
        !res->plans.empty() && res->plans[0].estimate ? &res->plans[0]
                                                      : nullptr;
    Json trust_json = nullptr;
    if (best_plan) {
      auto [trust, tj] = TrustOnChip(cat, best_plan->system.chip, true,
                                     PredictsARun(in->config));
      trust_json = tj;
      text += "\nBest plan in detail (" + best_plan->system.id + "):\n" +
              TrainText(*best_plan->estimate, best_plan->system) + trust;
    }
    Json results = {{"plans", plans},
                    {"accuracy", trust_json},
                    {"configs_evaluated", counts.configs_evaluated},
                    {"configs_scored", counts.configs_scored},
                    {"configs_pruned", counts.configs_pruned},
                    {"configs_infeasible", counts.configs_infeasible},
                    {"search_time_s", counts.search_time_s},
                    {"threads", counts.threads}};
    if (res->explain) {
      const search::ExplainedPlan& e = *res->explain;
      const estimate::TrainingEstimate& est = e.estimate;
      std::string where = e.rank > o->top ? "> " + std::to_string(o->top)
                                          : std::to_string(e.rank);
      results["explain"] = {{"plan", o->explain},
                            {"step_time_s", est.step_time.si()},
                            {"feasible", est.feasible},
                            {"rank", e.rank},
                            {"behind_best", e.behind_best}};
      text += fmt::format(
          "\n--explain {}: step {} ({}), rank {} among the plans found, "
          "{:+.1f}% vs "
          "the best\n",
          o->explain, FormatSeconds(est.step_time),
          est.feasible ? "fits" : "does not fit: " + est.reason, where,
          100 * e.behind_best);
    }
    out.json = Document(in->inputs, results);
    out.text = text;
    if (best_plan) {
      auto launch =
          AddLaunch(o->train.emit, engine, in->model, best_plan->system,
                    best_plan->config, *best_plan->estimate, out);
      if (!launch) return tl::unexpected(launch.error());
    } else if (engine) {
      return InvalidArgument(
          "no feasible plan that " + o->train.emit +
              " can launch was found, so there is nothing to emit",
          "--emit");
    }
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli
