#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/ingest/hf_config.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"
#include "scalemodel/validate/validate.h"

namespace scalemodel::cli {
namespace {

struct ModelOptionsCli {
  std::string name;
  std::string seq = "4096";
  std::string kv = "bf16";
  std::string attention = "causal";
};

}  // namespace

Command AddModelsCommand(CLI::App& app) {
  Command c;
  c.app = app.add_subcommand(
      "models",
      "List the models in the catalog with parameters and KV cache.\n"
      "Any HuggingFace config.json works as a model too (scalemodel model "
      "PATH).");
  c.action = [](const catalog::Catalog& cat) -> Result<Output> {
    Output out;
    Json list = Json::array();
    std::vector<std::vector<std::string>> rows = {
        {"model", "params", "active", "layers", "d_model", "heads/kv",
         "KV/token bf16", "name"}};
    std::vector<std::vector<std::string>> csv = {
        {"model", "params", "active_params", "layers", "d_model", "heads",
         "kv_heads", "kv_cache_bytes_per_token_bf16", "name"}};
    for (const std::string& id : ingest::ModelIds(cat)) {
      auto m = ingest::FindModel(cat, id);
      if (!m) return tl::unexpected(m.error());
      const model::ModelSpec& s = m->spec;
      model::ParamCounts p = model::CountParams(s);
      list.push_back(report::ToJson(s, 4096, hw::Dtype::kBf16,
                                    model::AttentionFlops::kCausal));
      rows.push_back(
          {s.id, units::FormatCount(p.total), units::FormatCount(p.active),
           std::to_string(s.num_layers), std::to_string(s.d_model),
           fmt::format("{}/{}", s.num_heads, s.num_kv_heads),
           FormatBytes(
               units::Bytes(model::KvCacheBytesPerToken(s, hw::Dtype::kBf16))),
           s.name});
      csv.push_back(
          {s.id, CsvNumber(p.total), CsvNumber(p.active),
           std::to_string(s.num_layers), std::to_string(s.d_model),
           std::to_string(s.num_heads), std::to_string(s.num_kv_heads),
           CsvNumber(model::KvCacheBytesPerToken(s, hw::Dtype::kBf16)),
           s.name});
    }
    out.json = Document(Json::object(), Json{{"models", list}});
    out.csv = Csv(csv);
    out.text = Table(rows);
    return out;
  };
  return c;
}

Command AddModelCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<ModelOptionsCli>();
  c.app = app.add_subcommand(
      "model",
      "Parameters by component, FLOPs per token, KV cache and activation "
      "memory of one model.\nNAME is a catalog model or a path to a "
      "HuggingFace config.json.\n\nExamples:\n"
      "  scalemodel model llama3-70b\n"
      "  scalemodel model deepseek-v3 --seq 32K --kv-dtype fp8\n"
      "  scalemodel model path/to/config.json --json");
  c.app->add_option("name", o->name, "Catalog model or config.json path")
      ->required();
  c.app
      ->add_option("--seq", o->seq,
                   "Sequence length for attention FLOPs and KV cache")
      ->capture_default_str();
  c.app->add_option("--kv-dtype", o->kv, "KV-cache dtype: bf16, fp8, int8")
      ->capture_default_str();
  c.app
      ->add_option("--attention", o->attention,
                   "Attention FLOP convention: causal (halved, as MaxText and "
                   "Megatron count) or full (as torchtitan and the book's "
                   "12BT^2NH)")
      ->capture_default_str();
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    auto imported = ingest::FindModel(cat, o->name);
    if (!imported) return tl::unexpected(imported.error());
    // How an alias or cached repo id resolved, first among the notes.
    if (!imported->resolution.empty()) {
      imported->notes.insert(imported->notes.begin(), imported->resolution);
    }
    auto seq = ParseOption<double>(
        "--seq", o->seq, [](auto& t) { return units::ParseLength(t); });
    if (!seq) return tl::unexpected(seq.error());
    seq = WholeUpTo("--seq", *seq, "tokens per sequence", kMaxSeqCap);
    if (!seq) return tl::unexpected(seq.error());
    auto kv = hw::ParseDtype(o->kv);
    if (!kv)
      return tl::unexpected(
          Error{kv.error().code, kv.error().message, "--kv-dtype"});
    model::AttentionFlops conv;
    if (o->attention == "causal") {
      conv = model::AttentionFlops::kCausal;
    } else if (o->attention == "full") {
      conv = model::AttentionFlops::kFull;
    } else {
      return InvalidArgument(
          "expected 'causal' or 'full', got '" + o->attention + "'",
          "--attention");
    }
    const model::ModelSpec& m = imported->spec;
    Output out;
    Json results = report::ToJson(m, *seq, *kv, conv);
    results["notes"] = imported->notes;
    out.json = Document({{"model", o->name},
                         {"seq", *seq},
                         {"kv_dtype", std::string(hw::DtypeName(*kv))},
                         {"attention", o->attention}},
                        results);
    model::ParamCounts p = model::CountParams(m);
    std::vector<std::vector<std::string>> rows = {
        {"component", "parameters"},
        {"embedding", units::FormatCount(p.embedding)},
        {"unembedding",
         m.tied_embeddings ? "tied" : units::FormatCount(p.unembedding)},
        {"attention", units::FormatCount(p.attention)},
        {"dense MLP", units::FormatCount(p.mlp)}};
    if (m.is_moe()) {
      rows.push_back({"routed experts", units::FormatCount(p.experts)});
      rows.push_back({"shared experts", units::FormatCount(p.shared_experts)});
      rows.push_back({"router", units::FormatCount(p.router)});
    }
    rows.push_back({"norms", units::FormatCount(p.norms)});
    rows.push_back({"total", units::FormatCount(p.total)});
    rows.push_back({"active per token", units::FormatCount(p.active)});
    std::vector<std::vector<std::string>> acts = {
        {"remat", "saved per token per layer", "recompute FLOPs/token"}};
    for (model::Remat r : model::kAllRemats) {
      model::ActivationCost a = model::Activations(m, r, *seq);
      acts.push_back(
          {std::string(model::RematName(r)),
           FormatBytes(units::Bytes(a.bytes_per_token_per_layer)),
           units::FormatFlops(units::Flops(a.recompute_flops_per_token))});
    }
    std::string notes;
    for (const std::string& n : imported->notes) notes += "note: " + n + "\n";
    out.text = fmt::format(
        "{} ({})\n\n{}\nFLOPs per token at seq {:.0f} (attention {}): "
        "forward {}, training {}\nKV cache ({}): {} per token, {} per "
        "sequence\n\nActivations (bf16):\n{}{}",
        m.name, m.id, Table(rows), *seq,
        conv == model::AttentionFlops::kCausal ? "causal, halved" : "full",
        units::FormatFlops(
            units::Flops(model::ForwardFlopsPerToken(m, *seq, conv))),
        units::FormatFlops(
            units::Flops(model::TrainFlopsPerToken(m, *seq, conv))),
        hw::DtypeName(*kv),
        FormatBytes(units::Bytes(model::KvCacheBytes(m, *seq, *kv) / *seq)),
        FormatBytes(units::Bytes(model::KvCacheBytes(m, *seq, *kv))),
        Table(acts), notes.empty() ? "" : "\n" + notes);
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli

namespace scalemodel::cli {
namespace {

struct ShardOptionsCli {
  std::string spec;
  std::string mesh;
  std::string dims;
  std::string dtype = "bf16";
  std::string system;
  std::string mode = "peak";
};

Json Collectives(const std::vector<sharding::CollectiveStep>& steps) {
  Json list = Json::array();
  for (const sharding::CollectiveStep& s : steps) {
    list.push_back({{"kind", std::string(net::CollectiveName(s.kind))},
                    {"array", s.array},
                    {"axes", s.axes},
                    {"bytes", s.bytes.si()},
                    {"time_s", s.time.si()},
                    {"overlappable", s.overlappable},
                    {"why", s.why}});
  }
  return list;
}

Json PlanJson(const sharding::MatmulPlan& p) {
  return {{"description", p.description},
          {"case", p.matmul_case},
          {"collectives", Collectives(p.collectives)},
          {"per_device_flops", p.per_device_flops},
          {"t_math_s", p.t_math.si()},
          {"t_comm_s", p.t_comm.si()},
          {"t_total_s", p.t_total.si()},
          {"output_sharding", p.output.ToString()},
          {"bound", p.bound}};
}

std::string PlanText(const sharding::MatmulPlan& p) {
  std::vector<std::vector<std::string>> rows = {
      {"collective", "array", "axes", "bytes (V)", "time", "overlap", "why"}};
  for (const sharding::CollectiveStep& s : p.collectives) {
    std::string axes;
    for (const std::string& a : s.axes) axes += a;
    rows.push_back({std::string(net::CollectiveName(s.kind)), s.array, axes,
                    FormatBytes(s.bytes), FormatSeconds(s.time),
                    s.overlappable ? "yes" : "no", s.why});
  }
  return fmt::format(
      "case {}: {}\n{}per device {} -> T_math {}, T_comm {}, total {} "
      "({}-bound); output {}\n",
      p.matmul_case, p.description,
      p.collectives.empty() ? "no collectives\n" : Table(rows),
      units::FormatFlops(units::Flops(p.per_device_flops)),
      FormatSeconds(p.t_math), FormatSeconds(p.t_comm),
      FormatSeconds(p.t_total), p.bound, p.output.ToString());
}

}  // namespace

Command AddShardCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<ShardOptionsCli>();
  c.app = app.add_subcommand(
      "shard",
      "Local shape and bytes of an array in the book's sharding notation.\n"
      "A[I_X, J_Y]: I split over mesh axis X, J over Y; A[I_XY, J]: I over "
      "X*Y; unmentioned axes replicate.\n\nExample:\n"
      "  scalemodel shard 'A[I_XY, J]' --mesh X=8,Y=2 --dims I=1024,J=4096 "
      "--dtype fp32");
  c.app->add_option("spec", o->spec, "Array, e.g. 'A[I_X, J_Y]'")->required();
  c.app->add_option("--mesh", o->mesh, "Mesh axes and sizes: X=4,Y=2")
      ->required();
  c.app->add_option("--dims", o->dims, "Global sizes: I=1024,J=512")
      ->required();
  c.app->add_option("--dtype", o->dtype, "Element type")->capture_default_str();
  c.action = [o](const catalog::Catalog&) -> Result<Output> {
    auto mesh = sharding::ParseMesh(o->mesh);
    if (!mesh) return tl::unexpected(mesh.error());
    for (int s : mesh->sizes) {
      if (s == 0) {
        return InvalidArgument("shard needs mesh sizes such as X=4,Y=2",
                               "--mesh");
      }
    }
    auto arr = sharding::ParseArray(o->spec, *mesh);
    if (!arr) return tl::unexpected(arr.error());
    auto dims = sharding::ParseDims(o->dims);
    if (!dims) return tl::unexpected(dims.error());
    auto dtype = hw::ParseDtype(o->dtype);
    if (!dtype) {
      return tl::unexpected(
          Error{dtype.error().code, dtype.error().message, "--dtype"});
    }
    auto l = sharding::Layout(*arr, *mesh, *dims);
    if (!l) return tl::unexpected(l.error());
    double bpe = hw::BytesPerElement(*dtype);
    double per_device = l->elements_per_device * bpe;
    Output out;
    Json mesh_json = Json::object();
    for (size_t i = 0; i < mesh->names.size(); ++i) {
      mesh_json[mesh->names[i]] = mesh->sizes[i];
    }
    out.json = Document({{"spec", arr->ToString()},
                         {"mesh", mesh_json},
                         {"dims", *dims},
                         {"dtype", std::string(hw::DtypeName(*dtype))}},
                        {{"local_shape", l->local_shape},
                         {"bytes_per_device", per_device},
                         {"total_bytes", per_device * mesh->num_devices()},
                         {"array_bytes", per_device * l->shards},
                         {"replicas", l->replicas},
                         {"devices", mesh->num_devices()}});
    std::string shape;
    for (double d : l->local_shape) {
      shape += (shape.empty() ? "" : ", ") + FormatNumber(d);
    }
    out.text = fmt::format(
        "{} on {} devices\n\nlocal shape       [{}]\nbytes per device  "
        "{}\ntotal bytes       {} (across all devices)\nreplicas          "
        "{:.0f} (devices holding each shard)\n",
        arr->ToString(), mesh->num_devices(), shape,
        FormatBytes(units::Bytes(per_device)),
        FormatBytes(units::Bytes(per_device * mesh->num_devices())),
        l->replicas);
    return out;
  };
  return c;
}

Command AddMatmulCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<ShardOptionsCli>();
  c.app = app.add_subcommand(
      "matmul",
      "Collectives, compute and communication time of a sharded matmul in "
      "the book's notation,\nwith cheaper alternatives.\n\nExamples:\n"
      "  scalemodel matmul 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]' --system "
      "tpu-v5e:4x4 --mesh X=4,Y=4 --dims I=4096,J=8192,K=8192\n"
      "  scalemodel matmul 'X[B_X, D_Y] @ W[D_Y, F]' --system tpu-v5p:4x4x4 "
      "--mesh X=16,Y=4 --dims B=65536,D=8192,F=32768\n"
      "  scalemodel matmul 'A[I, J_X] @ B[J_X, K]' --system h100:8x4 --mesh "
      "X=node,Y=net --dims I=8192,J=8192,K=8192");
  c.app->add_option("spec", o->spec, "'A[..] @ B[..] -> C[..]'")->required();
  c.app
      ->add_option("--system", o->system,
                   "Catalog system, CHIP:SHAPE or SYSTEM:SHAPE")
      ->required();
  c.app
      ->add_option("--mesh", o->mesh,
                   "Logical mesh: sizes laid onto physical axes in order "
                   "(X=4,Y=4) or explicit (X=x,Y=y.z)")
      ->required();
  c.app->add_option("--dims", o->dims, "Global sizes: I=..,J=..,K=..")
      ->required();
  c.app->add_option("--dtype", o->dtype, "Element and compute type")
      ->capture_default_str();
  c.app->add_option("--mode", o->mode, "peak or realistic collectives")
      ->capture_default_str();
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    auto sys = cat.FindSystem(o->system);
    if (!sys) {
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "--system"});
    }
    auto mesh = sharding::ParseMesh(o->mesh);
    if (!mesh) return tl::unexpected(mesh.error());
    auto layout = sharding::LayMesh(*mesh, *sys);
    if (!layout) return tl::unexpected(layout.error());
    auto spec = sharding::ParseMatmul(o->spec, *mesh);
    if (!spec) return tl::unexpected(spec.error());
    auto dims = sharding::ParseDims(o->dims);
    if (!dims) return tl::unexpected(dims.error());
    auto dtype = hw::ParseDtype(o->dtype);
    if (!dtype) {
      return tl::unexpected(
          Error{dtype.error().code, dtype.error().message, "--dtype"});
    }
    auto mode = ParseMode(o->mode, "--mode");
    if (!mode) return tl::unexpected(mode.error());
    auto res = sharding::AnalyzeShardedMatmul(*spec, *mesh, *layout, *sys,
                                              *dims, {*dtype, *mode});
    if (!res) return tl::unexpected(res.error());
    Output out;
    Json results = PlanJson(res->plan);
    results["contracting"] = res->contracting;
    results["mesh_layout"] = layout->Describe(*mesh, *sys);
    Json alts = Json::array();
    for (const sharding::MatmulPlan& p : res->alternatives) {
      alts.push_back(PlanJson(p));
    }
    results["alternatives"] = alts;
    out.json = Document({{"spec", o->spec},
                         {"system", sys->id},
                         {"mesh", o->mesh},
                         {"dims", *dims},
                         {"dtype", std::string(hw::DtypeName(*dtype))},
                         {"mode", o->mode}},
                        results);
    std::string alt_text;
    for (const sharding::MatmulPlan& p : res->alternatives) {
      alt_text += "\nCheaper alternative, " + FormatSeconds(p.t_total) +
                  " (saves " + FormatSeconds(res->plan.t_total - p.t_total) +
                  "):\n" + PlanText(p);
    }
    out.text = fmt::format("{} on {} (mesh {})\n\n{}{}", o->spec, sys->id,
                           layout->Describe(*mesh, *sys), PlanText(res->plan),
                           alt_text);
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli
