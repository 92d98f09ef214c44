#include "commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "fmt/format.h"
#include "scalemodel/base/strings.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/io/hf_config.h"
#include "scalemodel/io/validate.h"
#include "scalemodel/model/transformer.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"
#include "scalemodel/search/parallelism.h"
#include "scalemodel/sharding/matmul.h"
#include "scalemodel/units/format.h"
#include "scalemodel/units/parse.h"

namespace scalemodel::cli {

using io::Json;
using units::FormatBandwidth;
using units::FormatBytes;
using units::FormatFlopRate;
using units::FormatSeconds;

io::Json Document(const Json& inputs, const Json& results) {
  Json j;
  j["schema_version"] = io::kSchemaVersion;
  j["inputs"] = inputs;
  for (auto it = results.begin(); it != results.end(); ++it) {
    j[it.key()] = it.value();
  }
  return j;
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) {
      width[i] = std::max(width[i], r[i].size());
    }
  }
  std::string out;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (size_t i = 0; i < rows[k].size(); ++i) {
      std::string cell = rows[k][i];
      if (i + 1 < rows[k].size()) cell.resize(width[i] + 2, ' ');
      line += cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

namespace {

std::string RateOrDash(units::FlopsPerSecond r) {
  return r.si() > 0 ? FormatFlopRate(r) : "-";
}

std::string ChipLinks(const hw::Chip& c) {
  if (c.ici) {
    return fmt::format("ICI {} x {} one-way", c.ici->links_per_chip,
                       FormatBandwidth(c.ici->link_bandwidth));
  }
  if (c.nvlink) {
    return fmt::format("NVLink {}/dir, domain {}",
                       FormatBandwidth(c.nvlink->bandwidth),
                       c.nvlink->domain_size);
  }
  return "-";
}

}  // namespace

Command AddChipsCommand(CLI::App& app) {
  Command c;
  c.app = app.add_subcommand(
      "chips",
      "List the chips in the catalog with their peak rates and memory.\n"
      "Example: scalemodel chips --json");
  c.action = [](const catalog::Catalog& cat) -> Result<Output> {
    Output out;
    Json list = Json::array();
    std::vector<std::vector<std::string>> rows = {
        {"chip", "name", "bf16", "fp8", "int8", "HBM", "HBM bw", "links",
         "$/chip-h"}};
    std::vector<const hw::Chip*> chips;
    for (const hw::Chip& chip : cat.chips()) chips.push_back(&chip);
    std::sort(chips.begin(), chips.end(),
              [](auto* a, auto* b) { return a->id < b->id; });
    for (const hw::Chip* chip : chips) {
      list.push_back(io::ToJson(*chip));
      rows.push_back(
          {chip->id, chip->name, RateOrDash(chip->Peak(hw::Dtype::kBf16)),
           RateOrDash(chip->Peak(hw::Dtype::kFp8)),
           RateOrDash(chip->Peak(hw::Dtype::kInt8)),
           FormatBytes(chip->hbm_capacity),
           FormatBandwidth(chip->hbm_bandwidth), ChipLinks(*chip),
           chip->price ? fmt::format("{:.2f}", chip->price->usd_per_chip_hour)
                       : "-"});
    }
    out.json = Document(Json::object(), Json{{"chips", list}});
    out.text = Table(rows) +
               "\nRates are dense (no sparsity) per chip; link bandwidths "
               "are per direction.\n`scalemodel chip NAME` shows every "
               "number with its source.\n";
    return out;
  };
  return c;
}

Command AddChipCommand(CLI::App& app) {
  Command c;
  auto name = std::make_shared<std::string>();
  c.app = app.add_subcommand(
      "chip",
      "Show one chip: every catalog number with its unit and source.\n"
      "Example: scalemodel chip tpu-v5p");
  c.app->add_option("name", *name, "Chip id or alias (e.g. h100, v5e)")
      ->required();
  c.action = [name](const catalog::Catalog& cat) -> Result<Output> {
    auto chip = cat.FindChip(*name);
    if (!chip) return tl::unexpected(chip.error());
    const hw::Chip& ch = **chip;
    Output out;
    out.json = Document(Json{{"name", *name}}, io::ToJson(ch));
    std::vector<std::vector<std::string>> rows = {
        {"quantity", "value", "source"}};
    auto src = [&](const std::string& key) {
      auto it = ch.sources.find(key);
      return it == ch.sources.end() ? std::string("-") : it->second;
    };
    for (hw::Dtype d : hw::kAllDtypes) {
      if (ch.Peak(d).si() <= 0) continue;
      std::string key(hw::DtypeName(d));
      rows.push_back({key + " peak (dense)", FormatFlopRate(ch.Peak(d)),
                      src("compute." + key)});
    }
    rows.push_back({"HBM capacity",
                    FormatBytes(ch.hbm_capacity) + " (" +
                        units::FormatBytesBinary(ch.hbm_capacity) + ")",
                    src("memory.hbm_capacity")});
    rows.push_back({"HBM bandwidth", FormatBandwidth(ch.hbm_bandwidth),
                    src("memory.hbm_bandwidth")});
    for (const hw::OnChipMemory& m : ch.on_chip) {
      rows.push_back(
          {m.name,
           FormatBytes(m.capacity) + (m.bandwidth.si() > 0
                                          ? ", " + FormatBandwidth(m.bandwidth)
                                          : std::string()),
           src("on_chip." + m.name)});
    }
    if (ch.ici) {
      rows.push_back(
          {"ICI link (one-way)",
           fmt::format(
               "{} x {}, {}D torus, max slice {}", ch.ici->links_per_chip,
               FormatBandwidth(ch.ici->link_bandwidth), ch.ici->torus_dims,
               fmt::format("{}", fmt::join(ch.ici->max_slice, "x"))),
           src("ici.link_bandwidth")});
      rows.push_back({"ICI hop latency", FormatSeconds(ch.ici->hop_latency),
                      src("ici.hop_latency")});
    }
    if (ch.nvlink) {
      rows.push_back(
          {"NVLink (per direction)",
           fmt::format("{}, domain of {}{}",
                       FormatBandwidth(ch.nvlink->bandwidth),
                       ch.nvlink->domain_size,
                       ch.nvlink->in_network_reduction ? ", NVLS" : ""),
           src("nvlink.bandwidth")});
    }
    if (ch.scale_out) {
      rows.push_back({ch.is_tpu() ? "DCN (per chip, per direction)"
                                  : "Scale-out NIC (per GPU, per direction)",
                      FormatBandwidth(ch.scale_out->bandwidth) + ", " +
                          ch.scale_out->fabric,
                      src("scale_out.bandwidth")});
    }
    rows.push_back({"Host link (per direction)",
                    FormatBandwidth(ch.pcie_bandwidth),
                    src("host.pcie_bandwidth")});
    if (ch.power_watts > 0) {
      rows.push_back(
          {"Power", fmt::format("{:.0f} W", ch.power_watts), src("power.tdp")});
    }
    rows.push_back({"Price",
                    ch.price ? fmt::format("${:.2f} per chip-hour",
                                           ch.price->usd_per_chip_hour)
                             : "not in catalog",
                    src("price.usd_per_chip_hour")});
    double bf16 = ch.Peak(hw::Dtype::kBf16).si();
    out.text = ch.name + " (" + ch.id + ")\n\n" + Table(rows) +
               fmt::format(
                   "\nCritical intensity (bf16 vs HBM): {:.0f} "
                   "FLOP/byte\n",
                   bf16 / ch.hbm_bandwidth.si());
    return out;
  };
  return c;
}

Command AddSystemsCommand(CLI::App& app) {
  Command c;
  c.app = app.add_subcommand(
      "systems",
      "List the named systems in the catalog. Any CHIP:SHAPE also works as a "
      "system:\n  TPU  tpu-v5e:16x16, tpu-v5p:16x20x28, tpu-v5p:16x16x16/4 "
      "(4 slices over DCN)\n  GPU  h100:8x128 (128 nodes of 8), gb200:72x8 "
      "(8 NVL72 racks)");
  c.action = [](const catalog::Catalog& cat) -> Result<Output> {
    Output out;
    Json list = Json::array();
    std::vector<std::vector<std::string>> rows = {
        {"system", "chips", "shape", "peak bf16", "name"}};
    for (const catalog::SystemEntry& e : cat.systems()) {
      auto sys = cat.FindSystem(e.id);
      if (!sys) return tl::unexpected(sys.error());
      Json j = io::ToJson(*sys);
      j["shape"] = e.shape;
      list.push_back(j);
      rows.push_back(
          {e.id, std::to_string(sys->num_chips()), e.chip + ":" + e.shape,
           FormatFlopRate(units::FlopsPerSecond(
               sys->num_chips() * sys->chip.Peak(hw::Dtype::kBf16).si())),
           e.name});
    }
    out.json = Document(Json::object(), Json{{"systems", list}});
    out.text = Table(rows) +
               "\nAny CHIP:SHAPE is a system too: tpu-v5e:16x16, "
               "tpu-v5p:16x16x16/4, h100:8x128, gb200:72x8.\n";
    return out;
  };
  return c;
}

Command AddSystemCommand(CLI::App& app) {
  Command c;
  auto name = std::make_shared<std::string>();
  c.app = app.add_subcommand(
      "system",
      "Show one system's physical axes, links and totals.\n"
      "Example: scalemodel system tpu-v5p:8x16x16   (or a catalog name)");
  c.app->add_option("name", *name, "Catalog system or CHIP:SHAPE")->required();
  c.action = [name](const catalog::Catalog& cat) -> Result<Output> {
    auto sys = cat.FindSystem(*name);
    if (!sys)
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "system"});
    Output out;
    out.json = Document(Json{{"system", *name}}, io::ToJson(*sys));
    std::vector<std::vector<std::string>> rows = {
        {"axis", "kind", "size", "bandwidth/chip/dir", "hop latency", "notes"}};
    for (const hw::PhysicalAxis& a : sys->axes) {
      std::string notes;
      if (a.kind == hw::AxisKind::kIci) {
        notes = a.wraparound ? "ring (wraparound)" : "no wraparound";
      }
      if (a.in_network_reduction) notes += "in-network reduction";
      for (const hw::SwitchTier& t : a.tiers) {
        notes += fmt::format(
            "{}{} of {}{}", notes.empty() ? "" : "; ", t.name, t.group_size,
            t.oversubscription > 1
                ? fmt::format(" ({:.0f}:1 oversubscribed)", t.oversubscription)
                : "");
      }
      rows.push_back({a.name, std::string(hw::AxisKindName(a.kind)),
                      std::to_string(a.size), FormatBandwidth(a.bandwidth),
                      FormatSeconds(a.hop_latency), notes});
    }
    out.text = fmt::format(
        "{} — {} chips\n\n{}\nPeak bf16 {}, HBM {}\n", sys->name,
        sys->num_chips(), Table(rows),
        FormatFlopRate(units::FlopsPerSecond(
            sys->num_chips() * sys->chip.Peak(hw::Dtype::kBf16).si())),
        FormatBytes(
            units::Bytes(sys->num_chips() * sys->chip.hbm_capacity.si())));
    return out;
  };
  return c;
}

namespace {

struct RooflineOptions {
  std::string chip;
  std::string matmul;
  std::string flops;
  std::string bytes;
  std::string dtype = "bf16";
  std::string weight_dtype;
  std::string compute_dtype;
  std::string level = "hbm";
};

Result<roofline::MatmulShape> ParseMatmul(const std::string& text) {
  std::vector<std::string> parts = Split(text, 'x');
  if (parts.size() != 3) {
    return InvalidArgument(
        "expected BxDxF such as 512x8192x8192, got '" + text + "'", "--matmul");
  }
  double v[3];
  for (int i = 0; i < 3; ++i) {
    auto n = units::ParseCount(parts[i]);
    if (!n) {
      return InvalidArgument("expected BxDxF such as 512x8192x8192, got '" +
                                 text + "' (" + n.error().message + ")",
                             "--matmul");
    }
    v[i] = *n;
  }
  return roofline::MatmulShape{v[0], v[1], v[2]};
}

}  // namespace

Command AddRooflineCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<RooflineOptions>();
  c.app = app.add_subcommand(
      "roofline",
      "Is an operation compute- or memory-bound on a chip, and how long does "
      "it take?\nA matmul X[B,D] . W[D,F] does 2BDF FLOPs and moves the "
      "bytes of X, W and the output.\n\nExamples:\n"
      "  scalemodel roofline --chip tpu-v5e --matmul 512x8192x8192\n"
      "  scalemodel roofline --chip tpu-v5e --matmul 128x8192x8192 "
      "--weight-dtype int8\n"
      "  scalemodel roofline --chip tpu-v5e --matmul 16x4096x16384 --dtype "
      "int8 --level vmem\n"
      "  scalemodel roofline --chip h100 --flops 1e12 --bytes 2GB");
  c.app->add_option("--chip", o->chip, "Chip id or alias")->required();
  c.app->add_option("--matmul", o->matmul,
                    "Matmul shape BxDxF: B tokens, D contracting, F output "
                    "features (suffixes OK: 4Kx8Kx8K)");
  c.app->add_option("--flops", o->flops,
                    "FLOPs of an arbitrary op (1e12, 1.5T)");
  c.app->add_option("--bytes", o->bytes,
                    "Bytes it moves (4096, 128MiB, 1.5GB)");
  c.app
      ->add_option("--dtype", o->dtype,
                   "Activation (and default compute) dtype: fp32, bf16, "
                   "fp16, fp8, int8, int4")
      ->capture_default_str();
  c.app->add_option("--weight-dtype", o->weight_dtype,
                    "Weight dtype (default: --dtype). int8 weights with bf16 "
                    "activations compute in bf16");
  c.app->add_option("--compute-dtype", o->compute_dtype,
                    "Override the dtype whose peak rate is used");
  c.app
      ->add_option("--level", o->level,
                   "Memory level: hbm, or onchip (VMEM / L2 where the catalog "
                   "has a bandwidth)")
      ->capture_default_str();
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    auto chip = cat.FindChip(o->chip);
    if (!chip) {
      return tl::unexpected(
          Error{chip.error().code, chip.error().message, "--chip"});
    }
    auto with_where = [](Error e, const char* where) {
      e.where = where;
      return tl::unexpected(e);
    };
    auto act = hw::ParseDtype(o->dtype);
    if (!act) return with_where(act.error(), "--dtype");
    roofline::MatmulDtypes dt;
    dt.activations = *act;
    dt.weights = *act;
    if (!o->weight_dtype.empty()) {
      auto w = hw::ParseDtype(o->weight_dtype);
      if (!w) return with_where(w.error(), "--weight-dtype");
      dt.weights = *w;
    }
    if (!o->compute_dtype.empty()) {
      auto cd = hw::ParseDtype(o->compute_dtype);
      if (!cd) return with_where(cd.error(), "--compute-dtype");
      dt.compute = *cd;
    }
    roofline::MemoryLevel level;
    std::string lvl = ToLower(o->level);
    if (lvl == "hbm") {
      level = roofline::MemoryLevel::kHbm;
    } else if (lvl == "onchip" || lvl == "vmem" || lvl == "l2" ||
               lvl == "smem") {
      level = roofline::MemoryLevel::kOnChip;
    } else {
      return InvalidArgument(
          "expected 'hbm' or 'onchip', got '" + o->level + "'", "--level");
    }
    bool matmul = !o->matmul.empty();
    bool raw = !o->flops.empty() || !o->bytes.empty();
    if (matmul == raw) {
      return InvalidArgument(
          "give either --matmul BxDxF or both --flops and --bytes", "roofline");
    }
    Json inputs = {{"chip", (*chip)->id},
                   {"dtype", std::string(hw::DtypeName(dt.activations))},
                   {"weight_dtype", std::string(hw::DtypeName(dt.weights))},
                   {"level", lvl}};
    Output out;
    const roofline::Roofline* r = nullptr;
    roofline::MatmulRoofline mm;
    roofline::Roofline op;
    std::string extra;
    if (matmul) {
      auto shape = ParseMatmul(o->matmul);
      if (!shape) return tl::unexpected(shape.error());
      auto res = roofline::AnalyzeMatmul(**chip, *shape, dt, level);
      if (!res) return tl::unexpected(res.error());
      mm = *res;
      r = &mm.roofline;
      inputs["matmul"] = {{"b", shape->b}, {"d", shape->d}, {"f", shape->f}};
      out.json = Document(inputs, io::ToJson(mm));
      extra = fmt::format(
          "Compute-bound above about {:.0f} tokens per matmul (the book's "
          "B >> crit rule: {:.0f}; compute in {}).\n",
          mm.critical_batch_exact, mm.critical_batch,
          hw::DtypeName(mm.compute_dtype));
    } else {
      if (o->flops.empty() || o->bytes.empty()) {
        return InvalidArgument("give both --flops and --bytes", "roofline");
      }
      auto f = ParseOption<units::Flops>(
          "--flops", o->flops, [](auto& t) { return units::ParseFlops(t); });
      if (!f) return tl::unexpected(f.error());
      auto b = ParseOption<units::Bytes>(
          "--bytes", o->bytes, [](auto& t) { return units::ParseBytes(t); });
      if (!b) return tl::unexpected(b.error());
      auto res = roofline::AnalyzeOp(**chip, *f, *b, roofline::ComputeDtype(dt),
                                     level);
      if (!res) return tl::unexpected(res.error());
      op = *res;
      r = &op;
      inputs["flops"] = f->si();
      inputs["bytes"] = b->si();
      out.json = Document(inputs, io::ToJson(op));
    }
    std::vector<std::vector<std::string>> rows = {
        {"FLOPs", units::FormatFlops(r->flops)},
        {"bytes", FormatBytes(r->bytes)},
        {"intensity", fmt::format("{:.4g} FLOP/byte", r->intensity)},
        {"critical intensity",
         fmt::format("{:.4g} FLOP/byte ({} / {})", r->critical_intensity,
                     FormatFlopRate(r->peak), FormatBandwidth(r->bandwidth))},
        {"T_math", FormatSeconds(r->t_math)},
        {"T_mem", FormatSeconds(r->t_mem)},
        {"lower bound", FormatSeconds(r->t_lower) + " (perfect overlap)"},
        {"upper bound", FormatSeconds(r->t_upper) + " (no overlap)"},
        {"achieved", FormatFlopRate(r->achieved)},
    };
    out.text = fmt::format("{} on {}: {}-bound\n\n{}\n{}",
                           matmul ? "matmul " + o->matmul : "op", (*chip)->id,
                           r->compute_bound ? "compute" : "memory", Table(rows),
                           extra);
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli

namespace scalemodel::cli {

namespace {
struct CollectiveOptionsCli {
  std::string kind;
  std::string system;
  std::string axes;
  std::string bytes;
  std::string mode = "peak";
};

Result<net::Mode> ParseMode(const std::string& text, const char* where) {
  std::string m = ToLower(text);
  if (m == "peak") return net::Mode::kPeak;
  if (m == "realistic") return net::Mode::kRealistic;
  return InvalidArgument("expected 'peak' or 'realistic', got '" + text + "'",
                         where);
}
}  // namespace

Command AddCollectiveCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<CollectiveOptionsCli>();
  c.app = app.add_subcommand(
      "collective",
      "How long does one collective take on a system's physical axes?\n"
      "--bytes is the whole (unsharded) array, as in the book: an all-gather "
      "of V bytes\nleaves every chip with all V bytes.\n\nExamples:\n"
      "  scalemodel collective all-gather --system tpu-v5p:4x4x4 --axes x "
      "--bytes 2MiB\n"
      "  scalemodel collective all-reduce --system h100:8x128 --axes node,net "
      "--bytes 1GB --mode realistic\n"
      "  scalemodel collective all-to-all --system tpu-v5e:16x16 --axes x,y "
      "--bytes 64MB");
  c.app
      ->add_option("kind", o->kind,
                   "all-gather, reduce-scatter, all-reduce, all-to-all or "
                   "permute")
      ->required();
  c.app->add_option("--system", o->system, "Catalog system or CHIP:SHAPE")
      ->required();
  c.app
      ->add_option("--axes", o->axes,
                   "Comma list of physical axes: x,y,z,dcn (TPU) or node,net "
                   "(GPU)")
      ->required();
  c.app
      ->add_option("--bytes", o->bytes,
                   "Size of the whole array (1GB, 128MiB, 4096)")
      ->required();
  c.app
      ->add_option("--mode", o->mode,
                   "peak: the book's bound (peak links, latency overlapped); "
                   "realistic: measured fabric efficiency, latency added, "
                   "launch cost")
      ->capture_default_str();
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    auto kind = net::ParseCollective(o->kind);
    if (!kind) {
      return tl::unexpected(
          Error{kind.error().code, kind.error().message, "collective"});
    }
    auto sys = cat.FindSystem(o->system);
    if (!sys) {
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "--system"});
    }
    auto bytes = ParseOption<units::Bytes>(
        "--bytes", o->bytes, [](auto& t) { return units::ParseBytes(t); });
    if (!bytes) return tl::unexpected(bytes.error());
    auto mode = ParseMode(o->mode, "--mode");
    if (!mode) return tl::unexpected(mode.error());
    std::vector<std::string> axes = Split(o->axes, ',');
    auto cost = net::EstimateCollective(*sys, *kind, *bytes, axes,
                                        net::CollectiveOptions{*mode});
    if (!cost) return tl::unexpected(cost.error());
    Output out;
    Json inputs = {{"kind", std::string(net::CollectiveName(*kind))},
                   {"system", sys->id},
                   {"axes", axes},
                   {"bytes", bytes->si()},
                   {"mode", *mode == net::Mode::kPeak ? "peak" : "realistic"}};
    out.json = Document(inputs, io::ToJson(*cost));
    std::vector<std::vector<std::string>> rows = {
        {"axis", "size", "bytes", "bandwidth", "latency", "time", "algorithm"}};
    for (const net::AxisCost& a : cost->per_axis) {
      rows.push_back({a.axis, std::to_string(a.size), FormatBytes(a.bytes),
                      FormatSeconds(a.bandwidth_time),
                      FormatSeconds(a.latency_time), FormatSeconds(a.time),
                      a.algorithm});
    }
    out.text = fmt::format(
        "{} of {} over {} ({} chips) on {}: {} ({}-bound)\n\n{}\n"
        "Algorithm: {}\n",
        net::CollectiveName(*kind), FormatBytes(*bytes), o->axes,
        cost->group_size, sys->id, FormatSeconds(cost->time),
        cost->latency_bound ? "latency" : "bandwidth", Table(rows),
        cost->algorithm);
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli

namespace scalemodel::cli {
namespace {

Json ModelJson(const model::ModelSpec& m, double seq, hw::Dtype kv,
               model::AttentionFlops conv) {
  model::ParamCounts p = model::CountParams(m);
  Json j;
  j["id"] = m.id;
  j["name"] = m.name;
  j["params"] = p.total;
  j["active_params"] = p.active;
  j["params_by_component"] = {
      {"embedding", p.embedding}, {"unembedding", p.unembedding},
      {"attention", p.attention}, {"mlp", p.mlp},
      {"experts", p.experts},     {"shared_experts", p.shared_experts},
      {"router", p.router},       {"norms", p.norms}};
  j["matmul_params_active"] = p.matmul_active;
  j["train_flops_per_token"] = model::TrainFlopsPerToken(m, seq, conv);
  j["forward_flops_per_token"] = model::ForwardFlopsPerToken(m, seq, conv);
  j["attention_flops_per_token"] = model::AttentionFlopsPerToken(m, seq, conv);
  j["attention_flops_convention"] =
      conv == model::AttentionFlops::kCausal ? "causal (halved)" : "full";
  j["kv_cache_bytes_per_token"] = model::KvCacheBytes(m, seq, kv) / seq;
  j["kv_cache_bytes_per_sequence"] = model::KvCacheBytes(m, seq, kv);
  j["weight_bytes"] = p.total * hw::BytesPerElement(m.weight_dtype);
  Json acts = Json::object();
  for (model::Remat r :
       {model::Remat::kNone, model::Remat::kSelective,
        model::Remat::kSaveMatmulOutputs, model::Remat::kFull}) {
    model::ActivationCost a = model::Activations(m, r, seq);
    acts[std::string(model::RematName(r))] = {
        {"bytes_per_token_per_layer", a.bytes_per_token_per_layer},
        {"recompute_flops_per_token", a.recompute_flops_per_token}};
  }
  j["activations_bf16"] = acts;
  Json arch;
  arch["num_layers"] = m.num_layers;
  arch["d_model"] = m.d_model;
  arch["ffn"] = m.ffn;
  arch["num_heads"] = m.num_heads;
  arch["num_kv_heads"] = m.num_kv_heads;
  arch["head_dim"] = m.head_dim;
  arch["vocab"] = m.vocab;
  arch["tied_embeddings"] = m.tied_embeddings;
  arch["gated_mlp"] = m.gated_mlp;
  arch["positions"] = m.learned_positions ? "learned" : "rotary";
  arch["weight_dtype"] = std::string(hw::DtypeName(m.weight_dtype));
  if (m.is_moe()) {
    arch["moe"] = {{"num_experts", m.moe.num_experts},
                   {"top_k", m.moe.top_k},
                   {"num_shared_experts", m.moe.num_shared_experts},
                   {"expert_ffn", m.moe.expert_ffn},
                   {"first_dense_layers", m.moe.first_dense_layers},
                   {"layer_freq", m.moe.layer_freq}};
  } else {
    arch["moe"] = nullptr;
  }
  if (m.mla) {
    arch["mla"] = {{"q_lora_rank", m.mla->q_lora_rank},
                   {"kv_lora_rank", m.mla->kv_lora_rank},
                   {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                   {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                   {"v_head_dim", m.mla->v_head_dim}};
  } else {
    arch["mla"] = nullptr;
  }
  int sliding = 0;
  for (int l = 0; l < m.num_layers; ++l) sliding += m.IsSlidingLayer(l);
  arch["sliding_window"] = m.sliding_window;
  arch["sliding_layers"] = sliding;
  j["architecture"] = arch;
  j["source"] = m.source;
  return j;
}

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
    for (const std::string& id : io::ModelIds(cat)) {
      auto m = io::FindModel(cat, id);
      if (!m) return tl::unexpected(m.error());
      const model::ModelSpec& s = m->spec;
      model::ParamCounts p = model::CountParams(s);
      list.push_back(
          ModelJson(s, 4096, hw::Dtype::kBf16, model::AttentionFlops::kCausal));
      rows.push_back(
          {s.id, units::FormatCount(p.total), units::FormatCount(p.active),
           std::to_string(s.num_layers), std::to_string(s.d_model),
           fmt::format("{}/{}", s.num_heads, s.num_kv_heads),
           FormatBytes(
               units::Bytes(model::KvCacheBytesPerToken(s, hw::Dtype::kBf16))),
           s.name});
    }
    out.json = Document(Json::object(), Json{{"models", list}});
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
      "  scalemodel model ./config.json --json");
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
    auto imported = io::FindModel(cat, o->name);
    if (!imported) return tl::unexpected(imported.error());
    auto seq = ParseOption<double>(
        "--seq", o->seq, [](auto& t) { return units::ParseCount(t); });
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
    Json results = ModelJson(m, *seq, *kv, conv);
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
    for (model::Remat r :
         {model::Remat::kNone, model::Remat::kSelective,
          model::Remat::kSaveMatmulOutputs, model::Remat::kFull}) {
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
  c.app->add_option("--system", o->system, "Catalog system or CHIP:SHAPE")
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

namespace scalemodel::cli {
namespace {

struct TrainOptionsCli {
  std::string model, system, plan = "dp=1", batch_tokens, seq = "4096", tokens,
                             remat = "none", mode = "realistic",
                             precision = "bf16", schedule = "1f1b",
                             attention = "causal";
  int micro_batch = 1;
  int vpp = 1;
  double assume_mfu = 0;
  double price = 0;
  double imbalance = 1.0;
  bool offload = false;
};

}  // namespace

// Shared by train and plan train: resolves model, system and config.
struct TrainInputs {
  io::ImportedModel model;
  hw::System system;
  estimate::TrainingConfig config;
  Json inputs;
};

static Result<TrainInputs> ResolveTrain(const catalog::Catalog& cat,
                                        const TrainOptionsCli& o,
                                        bool need_plan) {
  TrainInputs in;
  auto m = io::FindModel(cat, o.model);
  if (!m) return tl::unexpected(m.error());
  in.model = *m;
  auto sys = cat.FindSystem(o.system);
  if (!sys) {
    return tl::unexpected(
        Error{sys.error().code, sys.error().message, "--system"});
  }
  in.system = *sys;
  estimate::TrainingConfig& c = in.config;
  if (need_plan) {
    auto plan = estimate::ParsePlan(o.plan);
    if (!plan) return tl::unexpected(plan.error());
    c.par = *plan;
  }
  // Tokens ("4Mi") or the SEQUENCESxLENGTH shorthand ("1536x2048").
  Result<double> bt = tl::unexpected(Error{});
  if (o.batch_tokens.find('x') != std::string::npos) {
    auto parts = Split(o.batch_tokens, 'x');
    auto a =
        parts.size() == 2 ? units::ParseCount(parts[0]) : Result<double>(0.0);
    auto b =
        parts.size() == 2 ? units::ParseCount(parts[1]) : Result<double>(0.0);
    if (parts.size() != 2 || !a || !b) {
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
  auto seq = ParseOption<double>("--seq", o.seq,
                                 [](auto& t) { return units::ParseCount(t); });
  if (!seq) return tl::unexpected(seq.error());
  c.batch_tokens = *bt;
  c.seq = *seq;
  if (!o.tokens.empty()) {
    auto tok = ParseOption<double>(
        "--tokens", o.tokens, [](auto& t) { return units::ParseCount(t); });
    if (!tok) return tl::unexpected(tok.error());
    c.tokens = *tok;
  }
  auto remat = model::ParseRemat(o.remat);
  if (!remat) {
    return tl::unexpected(
        Error{remat.error().code, remat.error().message, "--remat"});
  }
  c.remat = *remat;
  auto mode = ParseMode(o.mode, "--mode");
  if (!mode) return tl::unexpected(mode.error());
  c.mode = *mode == net::Mode::kPeak ? estimate::Mode::kPeak
                                     : estimate::Mode::kRealistic;
  auto prec = hw::ParseDtype(o.precision);
  if (!prec || (*prec != hw::Dtype::kBf16 && *prec != hw::Dtype::kFp8)) {
    return InvalidArgument("expected bf16 or fp8, got '" + o.precision + "'",
                           "--precision");
  }
  c.precision = *prec;
  auto sched = estimate::ParseSchedule(o.schedule);
  if (!sched) return tl::unexpected(sched.error());
  c.schedule = *sched;
  if (o.vpp > 1 && o.schedule == "1f1b")
    c.schedule = estimate::Schedule::kInterleaved;
  c.vpp = o.vpp;
  if (o.micro_batch <= 0) {
    return InvalidArgument("expected a positive number of sequences",
                           "--micro-batch");
  }
  c.micro_batch = o.micro_batch;
  if (o.assume_mfu < 0 || o.assume_mfu > 1 || std::isnan(o.assume_mfu)) {
    return InvalidArgument("expected a fraction between 0 and 1, e.g. 0.4",
                           "--assume-mfu");
  }
  c.assume_mfu = o.assume_mfu;
  if (o.price < 0) {
    return InvalidArgument("expected a price >= 0", "--price-per-chip-hour");
  }
  c.price_per_chip_hour = o.price;
  if (o.imbalance < 1) {
    return InvalidArgument("expected a load-imbalance factor >= 1",
                           "--load-imbalance");
  }
  c.load_imbalance = o.imbalance;
  c.offload_optimizer = o.offload;
  if (o.attention == "full") {
    c.attention = model::AttentionFlops::kFull;
  } else if (o.attention != "causal") {
    return InvalidArgument(
        "expected 'causal' or 'full', got '" + o.attention + "'",
        "--attention");
  }
  in.inputs = {
      {"model", in.model.spec.id},
      {"system", in.system.id},
      {"chips", in.system.num_chips()},
      {"batch_tokens", c.batch_tokens},
      {"seq", c.seq},
      {"micro_batch", c.micro_batch},
      {"remat", std::string(model::RematName(c.remat))},
      {"schedule", std::string(estimate::ScheduleName(c.schedule))},
      {"vpp", c.vpp},
      {"precision", std::string(hw::DtypeName(c.precision))},
      {"mode", o.mode},
      {"attention_flops", o.attention},
      {"mfu_convention",
       "model FLOPs (no recompute) / (time x chips x dense bf16 peak)"}};
  if (c.tokens > 0) in.inputs["tokens"] = c.tokens;
  return in;
}

static void AddTrainOptions(CLI::App* app, TrainOptionsCli& o, bool plan) {
  app->add_option("--model", o.model, "Catalog model or config.json")
      ->required();
  app->add_option("--system", o.system, "Catalog system or CHIP:SHAPE")
      ->required();
  if (plan) {
    app->add_option(
           "--plan", o.plan,
           "Degrees dp,fsdp,tp,pp,ep,cp (product = chips) and zero=1|2, "
           "or physical axes: fsdp=x.y,tp=z")
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
  app->add_option("--remat", o.remat,
                  "none, selective, save-matmul-outputs or full")
      ->capture_default_str();
  app->add_option("--schedule", o.schedule, "gpipe, 1f1b or interleaved")
      ->capture_default_str();
  app->add_option("--vpp", o.vpp, "Virtual pipeline stages per device")
      ->capture_default_str();
  app->add_option("--precision", o.precision, "Matmul precision: bf16 or fp8")
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
  app->add_flag("--offload-optimizer", o.offload,
                "Keep optimizer state in host memory (over PCIe)");
  app->add_option("--attention", o.attention,
                  "Attention FLOPs in MFU: causal (halved) or full")
      ->capture_default_str();
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
  std::string out = fmt::format(
      "{}step time {} ({} microbatches; layout: {})\n"
      "  compute {}, exposed communication {}, bubble {}, other {}\n"
      "  MFU {:.1f}%, HFU {:.1f}%, {:.0f} tokens/s ({:.0f} per chip), "
      "{:.0f} TFLOP/s per chip\n  bottleneck: {}\n\n",
      e.feasible ? "" : "NOT FEASIBLE: " + e.reason + "\n",
      FormatSeconds(e.step_time), e.microbatches,
      layout.empty() ? "one chip" : layout, FormatSeconds(e.compute),
      FormatSeconds(e.exposed_comm), FormatSeconds(e.bubble),
      FormatSeconds(e.other), 100 * e.mfu, 100 * e.hfu, e.tokens_per_s,
      e.tokens_per_s_per_chip, e.model_flops_per_s_per_chip / 1e12,
      e.bottleneck);
  out += fmt::format(
      "memory per chip: {} of {} (params {}, grads {}, optimizer {}, "
      "activations {}, reserve {})\n\n",
      FormatBytes(m.total), FormatBytes(m.capacity), FormatBytes(m.params),
      FormatBytes(m.grads), FormatBytes(m.optimizer),
      FormatBytes(m.activations), FormatBytes(m.other));
  if (e.comms.size() > 0) out += Table(comm_rows) + "\n";
  for (const std::string& n : e.notes) out += "- " + n + "\n";
  if (e.time_to_train_s > 0) {
    out += fmt::format("\ntime to train {}, {:.3g} chip-hours, cost {}\n",
                       FormatSeconds(units::Seconds(e.time_to_train_s)),
                       e.chip_hours,
                       std::isnan(e.cost_usd)
                           ? std::string("unknown (no price for ") +
                                 sys.chip.id + "; pass --price-per-chip-hour)"
                           : fmt::format("${:.3g}", e.cost_usd));
  }
  return out;
}

Command AddTrainCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<TrainOptionsCli>();
  c.app = app.add_subcommand(
      "train",
      "Step time, memory per chip, MFU and cost of training a model on a "
      "system with a given layout.\n\nExamples:\n"
      "  scalemodel train --model llama3-70b --system tpu-v5p-pod --plan "
      "fsdp=2240,tp=4 --batch-tokens 4M --seq 4096 --tokens 15T\n"
      "  scalemodel train --model gpt3-175b --system a100:8x128 --plan "
      "dp=8,tp=8,pp=16 --batch-tokens 1536x2048 --seq 2048 --remat full\n"
      "  scalemodel train --model llama3-70b --system tpu-v5p-pod --plan "
      "fsdp=8960 --batch-tokens 4M --seq 4096 --mode peak --assume-mfu 0.4 "
      "--tokens 15T");
  AddTrainOptions(c.app, *o, true);
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    TrainOptionsCli opts = *o;
    auto in = ResolveTrain(cat, opts, true);
    if (!in) return tl::unexpected(in.error());
    auto est =
        estimate::EstimateTraining(in->model.spec, in->system, in->config);
    if (!est) return tl::unexpected(est.error());
    Output out;
    in->inputs["plan"] = est->layout.empty() ? in->config.par.ToString()
                                             : in->config.par.ToString();
    out.json = Document(in->inputs, io::ToJson(*est));
    out.text = fmt::format("{} on {} ({} chips), plan {}\n\n",
                           in->model.spec.name, in->system.id,
                           in->system.num_chips(), in->config.par.ToString()) +
               TrainText(*est, in->system);
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli

namespace scalemodel::cli {

Command AddValidateCommand(CLI::App& app) {
  Command c;
  auto markdown = std::make_shared<bool>(false);
  c.app = app.add_subcommand(
      "validate",
      "Compare predictions with the book's worked examples and the published "
      "runs shipped in data/validation.\n  scalemodel validate --markdown > "
      "docs/accuracy.md");
  c.app->add_flag("--markdown", *markdown,
                  "Print docs/accuracy.md (every case and the summary)");
  c.action = [markdown](const catalog::Catalog& cat) -> Result<Output> {
    auto rep = io::RunValidation(cat);
    if (!rep) return tl::unexpected(rep.error());
    Output out;
    Json cases = Json::array();
    for (const io::ValidationCase& v : rep->cases) {
      cases.push_back({{"id", v.id},
                       {"group", v.group},
                       {"metric", v.metric},
                       {"predicted", v.predicted},
                       {"expected", v.expected},
                       {"rel_error", v.rel_error},
                       {"detail", v.detail}});
    }
    Json summary = Json::array();
    std::vector<std::vector<std::string>> rows = {
        {"group", "cases", "median |err|", "p90 |err|", "max |err|"}};
    for (const io::GroupSummary& s : rep->summary) {
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
    out.json = Document(
        Json::object(),
        {{"cases", cases}, {"summary", summary}, {"skipped", rep->skipped}});
    if (*markdown) {
      out.text = io::AccuracyMarkdown(*rep);
    } else {
      std::vector<std::vector<std::string>> crow = {
          {"id", "metric", "predicted", "measured", "error"}};
      for (const io::ValidationCase& v : rep->cases) {
        crow.push_back({v.id, v.metric, fmt::format("{:.4g}", v.predicted),
                        fmt::format("{:.4g}", v.expected),
                        fmt::format("{:+.1f}%", 100 * v.rel_error)});
      }
      out.text = Table(crow) + "\n" + Table(rows) +
                 fmt::format("\n{} rows not compared (see --markdown)\n",
                             rep->skipped.size());
    }
    return out;
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
  int threads = 0;
};
}  // namespace

struct ServeSearchCli {
  std::string model, chip, prompt = "1024", output = "256", weights = "bf16",
                           kv = "bf16", mode = "realistic", tpot_max, ttft_max;
  int max_chips = 0;
  double price = 0;
};

struct ServeCli {
  std::string model, system, plan = "tp=1", batch = "1", prompt = "1024",
                             output = "256", weights = "bf16", kv = "bf16",
                             mode = "realistic";
  double price = 0;
};

static Result<estimate::ServeConfig> ParseServeCommon(
    const std::string& prompt, const std::string& output,
    const std::string& weights, const std::string& kv, const std::string& mode,
    double price) {
  estimate::ServeConfig c;
  auto p = ParseOption<double>("--prompt", prompt,
                               [](auto& t) { return units::ParseCount(t); });
  if (!p) return tl::unexpected(p.error());
  auto o = ParseOption<double>("--output", output,
                               [](auto& t) { return units::ParseCount(t); });
  if (!o) return tl::unexpected(o.error());
  c.prompt = *p;
  c.output = *o;
  auto w = hw::ParseDtype(weights);
  if (!w || (*w != hw::Dtype::kBf16 && *w != hw::Dtype::kFp8 &&
             *w != hw::Dtype::kInt8 && *w != hw::Dtype::kInt4 &&
             *w != hw::Dtype::kFp4)) {
    return InvalidArgument(
        "expected bf16, fp8, int8, int4 or fp4, got '" + weights + "'",
        "--weights");
  }
  auto k = hw::ParseDtype(kv);
  if (!k || (*k != hw::Dtype::kBf16 && *k != hw::Dtype::kFp8 &&
             *k != hw::Dtype::kInt8)) {
    return InvalidArgument("expected bf16, fp8 or int8, got '" + kv + "'",
                           "--kv");
  }
  c.weights = *w;
  c.kv = *k;
  auto md = ParseMode(mode, "--mode");
  if (!md) return tl::unexpected(md.error());
  c.mode = *md == net::Mode::kPeak ? estimate::Mode::kPeak
                                   : estimate::Mode::kRealistic;
  if (price < 0) {
    return InvalidArgument("expected a price >= 0", "--price-per-chip-hour");
  }
  c.price_per_chip_hour = price;
  return c;
}

static Json ServeJson(const estimate::ServeEstimate& e) {
  return {{"feasible", e.feasible},
          {"reason", e.reason},
          {"prefill_time_s", e.prefill_time.si()},
          {"ttft_s", e.ttft.si()},
          {"decode_step_time_s", e.decode_step.si()},
          {"request_latency_s", e.request_latency.si()},
          {"tokens_per_s", e.tokens_per_s},
          {"tokens_per_s_per_chip", e.tokens_per_s_per_chip},
          {"tokens_per_s_per_user", e.tokens_per_s_per_user},
          {"max_batch", e.max_batch},
          {"critical_batch", e.critical_batch},
          {"memory_per_chip",
           {{"weights_bytes", e.weights_bytes.si()},
            {"kv_cache_bytes", e.kv_cache_bytes.si()},
            {"total_bytes", e.total_bytes.si()},
            {"capacity_bytes", e.capacity_bytes.si()}}},
          {"decode_breakdown",
           {{"weights_s", e.weight_time.si()},
            {"kv_cache_s", e.kv_time.si()},
            {"compute_s", e.compute_time.si()},
            {"comm_s", e.comm_time.si()},
            {"overhead_s", e.overhead.si()}}},
          {"bound", e.bound},
          {"cost_per_million_tokens_usd",
           io::NumberOrNull(e.cost_per_million_tokens_usd)},
          {"notes", e.notes}};
}

static std::string ServeText(const estimate::ServeEstimate& e) {
  std::string s;
  if (!e.feasible) s += "NOT FEASIBLE: " + e.reason + "\n";
  s += fmt::format(
      "time per output token {} ({}-bound; weights {}, KV cache {}, compute "
      "{}, communication {}, fixed {})\nTTFT {} (prefill of the batch), "
      "request latency {}\nthroughput {:.0f} output tokens/s ({:.0f} per chip, "
      "{:.1f} per user)\nmemory per chip: {} of {} (weights {}, KV cache {}); "
      "max batch {:.0f}\ncost {}\n",
      FormatSeconds(e.decode_step), e.bound, FormatSeconds(e.weight_time),
      FormatSeconds(e.kv_time), FormatSeconds(e.compute_time),
      FormatSeconds(e.comm_time), FormatSeconds(e.overhead),
      FormatSeconds(e.ttft), FormatSeconds(e.request_latency), e.tokens_per_s,
      e.tokens_per_s_per_chip, e.tokens_per_s_per_user,
      FormatBytes(e.total_bytes), FormatBytes(e.capacity_bytes),
      FormatBytes(e.weights_bytes), FormatBytes(e.kv_cache_bytes), e.max_batch,
      std::isnan(e.cost_per_million_tokens_usd)
          ? std::string("unknown (no price; pass --price-per-chip-hour)")
          : fmt::format("${:.3f} per million output tokens",
                        e.cost_per_million_tokens_usd));
  for (const std::string& n : e.notes) s += "- " + n + "\n";
  return s;
}

// A system of `n` chips of `chip`: GPUs fill NVLink domains; TPUs take the
// most square slice (2D) or most cubic one (3D) with n chips.
static Result<hw::System> SystemOfChips(const catalog::Catalog& cat,
                                        const hw::Chip& chip, int n) {
  std::string shape;
  if (!chip.is_tpu()) {
    int d = chip.nvlink ? chip.nvlink->domain_size : 1;
    shape = n <= d ? std::to_string(n) + "x1"
                   : std::to_string(d) + "x" + std::to_string(n / d);
  } else if (chip.ici && chip.ici->torus_dims == 2) {
    int a = 1;
    while (a * a < n) a *= 2;
    int b = n / a;
    if (a * b != n)
      return InvalidArgument("no slice of " + std::to_string(n) + " chips");
    shape =
        std::to_string(std::min(a, b)) + "x" + std::to_string(std::max(a, b));
  } else {
    int x = 1, y = 1, z = 1;
    int left = n;
    while (left > 1) {
      if (x <= y && x <= z) {
        x *= 2;
      } else if (y <= z) {
        y *= 2;
      } else {
        z *= 2;
      }
      left /= 2;
    }
    shape =
        std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
  }
  return cat.FindSystem(chip.id + ":" + shape);
}

static Result<Output> RunServeSearch(const catalog::Catalog& cat,
                                     const ServeSearchCli& o) {
  auto m = io::FindModel(cat, o.model);
  if (!m) return tl::unexpected(m.error());
  auto chip = cat.FindChip(o.chip);
  if (!chip)
    return tl::unexpected(
        Error{chip.error().code, chip.error().message, "--chip"});
  auto base =
      ParseServeCommon(o.prompt, o.output, o.weights, o.kv, o.mode, o.price);
  if (!base) return tl::unexpected(base.error());
  double tpot_max = 0, ttft_max = 0;
  if (!o.tpot_max.empty()) {
    auto t = ParseOption<units::Seconds>("--tpot-max", o.tpot_max, [](auto& x) {
      return units::ParseDuration(x);
    });
    if (!t) return tl::unexpected(t.error());
    tpot_max = t->si();
  }
  if (!o.ttft_max.empty()) {
    auto t = ParseOption<units::Seconds>("--ttft-max", o.ttft_max, [](auto& x) {
      return units::ParseDuration(x);
    });
    if (!t) return tl::unexpected(t.error());
    ttft_max = t->si();
  }
  const model::ModelSpec& spec = m->spec;
  int max_chips =
      o.max_chips > 0
          ? o.max_chips
          : ((*chip)->is_tpu()
                 ? 256
                 : std::max(
                       8, (*chip)->nvlink ? (*chip)->nvlink->domain_size : 8) *
                       8);
  struct Point {
    int chips, tp, ep, dp;
    double batch;
    estimate::ServeEstimate e;
  };
  std::vector<Point> points;
  double evaluated = 0;
  auto start = std::chrono::steady_clock::now();
  for (int n = 1; n <= max_chips; n *= 2) {
    auto sys = SystemOfChips(cat, **chip, n);
    if (!sys) continue;
    for (int tp = 1; tp <= n; tp *= 2) {
      if (spec.num_heads % tp) continue;
      for (int ep = 1; tp * ep <= n; ep *= 2) {
        if (ep > 1 && (!spec.is_moe() || spec.moe.num_experts % ep)) continue;
        // One replica per serving group: every chip of the system serves it.
        if (tp * ep != n) continue;
        estimate::ServeConfig cfg = *base;
        cfg.tp = tp;
        cfg.ep = ep;
        cfg.dp = 1;
        cfg.batch = 1;
        auto probe = estimate::EstimateServing(spec, *sys, cfg);
        if (!probe) continue;
        double maxb = probe->max_batch;
        std::vector<double> batches;
        for (double b = 1; b <= maxb; b *= 2) batches.push_back(b);
        if (maxb >= 1 && (batches.empty() || batches.back() != maxb))
          batches.push_back(maxb);
        for (double b : batches) {
          cfg.batch = b;
          auto e = estimate::EstimateServing(spec, *sys, cfg);
          ++evaluated;
          if (!e || !e->feasible) continue;
          points.push_back({n, tp, ep, 1, b, *e});
        }
      }
    }
  }
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // Pareto frontier: lower time per token and higher throughput per chip.
  std::vector<const Point*> sorted;
  for (const Point& p : points) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const Point* a, const Point* b) {
    if (a->e.decode_step != b->e.decode_step)
      return a->e.decode_step < b->e.decode_step;
    return a->e.tokens_per_s_per_chip > b->e.tokens_per_s_per_chip;
  });
  std::vector<const Point*> frontier;
  double best_tput = -1;
  for (const Point* p : sorted) {
    if (p->e.tokens_per_s_per_chip > best_tput) {
      frontier.push_back(p);
      best_tput = p->e.tokens_per_s_per_chip;
    }
  }
  const Point* best = nullptr;
  for (const Point* p : frontier) {
    if (tpot_max > 0 && p->e.decode_step.si() > tpot_max) continue;
    if (ttft_max > 0 && p->e.ttft.si() > ttft_max) continue;
    if (!best || p->e.tokens_per_s_per_chip > best->e.tokens_per_s_per_chip)
      best = p;
  }
  auto plan_str = [](const Point& p) {
    std::string s = "tp=" + std::to_string(p.tp);
    if (p.ep > 1) s += ",ep=" + std::to_string(p.ep);
    return s;
  };
  Json fr = Json::array();
  std::vector<std::vector<std::string>> rows = {{"chips", "plan", "batch",
                                                 "TPOT", "TTFT", "tok/s/chip",
                                                 "$/M tok", "bound"}};
  for (const Point* p : frontier) {
    fr.push_back({{"plan", plan_str(*p)},
                  {"batch", p->batch},
                  {"chips", p->chips},
                  {"decode_step_time_s", p->e.decode_step.si()},
                  {"ttft_s", p->e.ttft.si()},
                  {"tokens_per_s_per_chip", p->e.tokens_per_s_per_chip},
                  {"cost_per_million_tokens_usd",
                   io::NumberOrNull(p->e.cost_per_million_tokens_usd)},
                  {"bound", p->e.bound}});
    rows.push_back(
        {std::to_string(p->chips), plan_str(*p), FormatNumber(p->batch),
         FormatSeconds(p->e.decode_step), FormatSeconds(p->e.ttft),
         fmt::format("{:.0f}", p->e.tokens_per_s_per_chip),
         std::isnan(p->e.cost_per_million_tokens_usd)
             ? "-"
             : fmt::format("{:.3f}", p->e.cost_per_million_tokens_usd),
         p->e.bound});
  }
  Json best_json = nullptr;
  std::string best_text = "\nNo plan on the frontier meets the constraints.\n";
  if (best) {
    // Disaggregation: prefill one request at a time on the same chips.
    auto sys = SystemOfChips(cat, **chip, best->chips);
    estimate::ServeConfig one = *base;
    one.tp = best->tp;
    one.ep = best->ep;
    one.batch = 1;
    double ratio = 0;
    if (sys) {
      auto pre = estimate::EstimateServing(spec, *sys, one);
      if (pre) {
        ratio = estimate::PrefillToDecodeRatio(
            pre->prefill_time.si(), best->batch, best->e.decode_step.si(),
            base->output);
      }
    }
    best_json = ServeJson(best->e);
    best_json["plan"] = plan_str(*best);
    best_json["batch"] = best->batch;
    best_json["chips"] = best->chips;
    best_json["prefill_to_decode_chips"] = ratio;
    best_text = fmt::format(
        "\nBest under the constraints: {} chips, {}, batch {}\n{}For "
        "disaggregated serving, {:.2f} prefill chips per decode chip "
        "(prefilling one request at a time on the same slice).\n",
        best->chips, plan_str(*best), FormatNumber(best->batch),
        ServeText(best->e), ratio);
  }
  Output out;
  out.json = Document({{"model", spec.id},
                       {"chip", (*chip)->id},
                       {"prompt", base->prompt},
                       {"output", base->output},
                       {"weights", std::string(hw::DtypeName(base->weights))},
                       {"kv", std::string(hw::DtypeName(base->kv))},
                       {"max_chips", max_chips},
                       {"tpot_max_s", io::NumberOrNull(tpot_max)},
                       {"ttft_max_s", io::NumberOrNull(ttft_max)},
                       {"mode", o.mode}},
                      {{"frontier", fr},
                       {"best", best_json},
                       {"configs_evaluated", evaluated},
                       {"search_time_s", elapsed}});
  out.text = fmt::format(
      "{} on {} chips, prompt {} + output {} tokens: {:.0f} "
      "configurations\n\nPareto frontier (time per output "
      "token vs throughput per chip):\n{}{}",
      spec.name, (*chip)->id, FormatNumber(base->prompt),
      FormatNumber(base->output), evaluated, Table(rows), best_text);
  return out;
}

static void AddServeSearchOptions(CLI::App* app, ServeSearchCli& o) {
  app->add_option("--model", o.model, "Catalog model or config.json")
      ->required();
  app->add_option("--chip", o.chip, "Chip id")->required();
  app->add_option("--prompt", o.prompt, "Prompt tokens")->capture_default_str();
  app->add_option("--output", o.output, "Output tokens")->capture_default_str();
  app->add_option(
      "--max-chips", o.max_chips,
      "Largest slice to consider (default 256 TPUs, 8 NVLink domains)");
  app->add_option("--tpot-max", o.tpot_max,
                  "Latency target per output token (50ms)");
  app->add_option("--ttft-max", o.ttft_max, "Time-to-first-token target (2s)");
  app->add_option("--weights", o.weights, "bf16, fp8, int8, int4 or fp4")
      ->capture_default_str();
  app->add_option("--kv", o.kv, "KV-cache dtype: bf16, fp8 or int8")
      ->capture_default_str();
  app->add_option("--mode", o.mode, "realistic or peak")->capture_default_str();
  app->add_option("--price-per-chip-hour", o.price, "USD per chip-hour");
}

Command AddServeCommand(CLI::App& app) {
  Command c;
  auto o = std::make_shared<ServeCli>();
  c.app = app.add_subcommand(
      "serve",
      "Prefill and decode time, TTFT, time per output token, throughput, "
      "memory "
      "and cost of\nserving a model with a given sharding and "
      "batch.\n\nExamples:\n"
      "  scalemodel serve --model llama3-70b --system h100:8x1 --plan tp=8 "
      "--batch 64 --prompt 2048 --output 512\n"
      "  scalemodel serve --model llama2-13b --system tpu-v5e:2x4 --plan tp=8 "
      "--batch 8 --prompt 8192 --output 1 --mode peak");
  c.app->add_option("--model", o->model, "Catalog model or config.json")
      ->required();
  c.app->add_option("--system", o->system, "Catalog system or CHIP:SHAPE")
      ->required();
  c.app
      ->add_option(
          "--plan", o->plan,
          "tp=N[,ep=N][,dp=N]: tensor and expert parallel per replica, "
          "replicas (product = chips)")
      ->capture_default_str();
  c.app->add_option("--batch", o->batch, "Concurrent sequences per replica")
      ->capture_default_str();
  c.app->add_option("--prompt", o->prompt, "Prompt tokens")
      ->capture_default_str();
  c.app->add_option("--output", o->output, "Output tokens")
      ->capture_default_str();
  c.app->add_option("--weights", o->weights, "bf16, fp8, int8, int4 or fp4")
      ->capture_default_str();
  c.app->add_option("--kv", o->kv, "KV-cache dtype: bf16, fp8 or int8")
      ->capture_default_str();
  c.app->add_option("--mode", o->mode, "realistic or peak (the book's formula)")
      ->capture_default_str();
  c.app->add_option("--price-per-chip-hour", o->price, "USD per chip-hour");
  c.action = [o](const catalog::Catalog& cat) -> Result<Output> {
    auto m = io::FindModel(cat, o->model);
    if (!m) return tl::unexpected(m.error());
    auto sys = cat.FindSystem(o->system);
    if (!sys)
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "--system"});
    auto cfg = ParseServeCommon(o->prompt, o->output, o->weights, o->kv,
                                o->mode, o->price);
    if (!cfg) return tl::unexpected(cfg.error());
    auto b = ParseOption<double>("--batch", o->batch,
                                 [](auto& t) { return units::ParseCount(t); });
    if (!b) return tl::unexpected(b.error());
    cfg->batch = *b;
    auto plan = estimate::ParsePlan(o->plan);
    if (!plan) return tl::unexpected(plan.error());
    if (plan->fsdp > 1 || plan->pp > 1 || plan->cp > 1 || !plan->axes.empty()) {
      return InvalidArgument("serving plans take tp, ep and dp degrees only",
                             "--plan");
    }
    cfg->tp = plan->tp;
    cfg->ep = plan->ep;
    cfg->dp = plan->dp;
    auto e = estimate::EstimateServing(m->spec, *sys, *cfg);
    if (!e) return tl::unexpected(e.error());
    Output out;
    out.json = Document({{"model", m->spec.id},
                         {"system", sys->id},
                         {"plan", o->plan},
                         {"batch", cfg->batch},
                         {"prompt", cfg->prompt},
                         {"output", cfg->output},
                         {"weights", std::string(hw::DtypeName(cfg->weights))},
                         {"kv", std::string(hw::DtypeName(cfg->kv))},
                         {"mode", o->mode}},
                        ServeJson(*e));
    out.text =
        fmt::format("{} on {} ({}), batch {}, prompt {} + output {}\n\n",
                    m->spec.name, sys->id, o->plan, FormatNumber(cfg->batch),
                    FormatNumber(cfg->prompt), FormatNumber(cfg->output)) +
        ServeText(*e);
    return out;
  };
  return c;
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
      "--batch-tokens 1536x2048 --seq 2048 --explain dp=8,tp=8,pp=16");
  auto o = std::make_shared<PlanOptionsCli>();
  AddTrainOptions(tr, o->train, false);
  tr->add_option("--top", o->top, "How many plans to show")
      ->capture_default_str();
  tr->add_option("--objective", o->objective,
                 "time (step time) or cost (dollars for --tokens; with a fixed "
                 "system it ranks like time)")
      ->capture_default_str();
  tr->add_option("--explain", o->explain,
                 "A plan (as for train --plan) to estimate and rank among the "
                 "plans found");
  tr->add_option("--threads", o->threads, "Worker threads (0: all cores)");
  CLI::App* sv = c.app->add_subcommand(
      "serve",
      "Search serving layouts for a model on one chip type: chip counts, "
      "tensor "
      "and expert\nparallelism, batch sizes. Prints the latency/throughput "
      "Pareto frontier, the best plan\nunder --tpot-max / --ttft-max, and the "
      "prefill:decode chip ratio for disaggregated serving.\n\nExample:\n"
      "  scalemodel plan serve --model llama3-70b --chip tpu-v5e --prompt 8192 "
      "--output 512 --tpot-max 50ms");
  auto so = std::make_shared<ServeSearchCli>();
  AddServeSearchOptions(sv, *so);
  c.action = [o, tr, sv, so](const catalog::Catalog& cat) -> Result<Output> {
    if (sv->parsed()) return RunServeSearch(cat, *so);
    if (!tr->parsed()) {
      return InvalidArgument("expected `scalemodel plan train ...`", "plan");
    }
    if (o->top <= 0)
      return InvalidArgument("expected a positive number", "--top");
    if (o->objective != "time" && o->objective != "cost") {
      return InvalidArgument(
          "expected 'time' or 'cost', got '" + o->objective + "'",
          "--objective");
    }
    TrainOptionsCli opts = o->train;
    auto in = ResolveTrain(cat, opts, false);
    if (!in) return tl::unexpected(in.error());
    search::SearchOptions so;
    so.base = in->config;
    so.top_k = o->top;
    so.objective = o->objective == "cost" ? search::Objective::kCost
                                          : search::Objective::kTime;
    so.threads = o->threads;
    auto start = std::chrono::steady_clock::now();
    bool printed = false;
    so.progress = [&](double fraction, double configs) {
      double el = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      if (el < 2) return;
      printed = true;
      std::fprintf(
          stderr,
          "\rsearching: %3.0f%% of layouts, %.3g configurations, %.1f s",
          100 * fraction, configs, el);
    };
    auto res = search::SearchTraining(in->model.spec, in->system, so);
    if (printed) std::fprintf(stderr, "\n");
    if (!res) return tl::unexpected(res.error());
    Output out;
    Json plans = Json::array();
    std::string text = fmt::format(
        "{} on {} ({} chips), batch {} tokens x seq {}: {:.4g} configurations "
        "({:.4g} scored, {:.4g} pruned by memory, {:.4g} over HBM) in {:.3f} s "
        "on {} threads\n\n",
        in->model.spec.name, in->system.id, in->system.num_chips(),
        FormatNumber(in->config.batch_tokens), FormatNumber(in->config.seq),
        res->configs_evaluated, res->configs_scored, res->configs_pruned,
        res->configs_infeasible, res->search_time_s, res->threads);
    if (res->plans.empty()) {
      text += "No plan fits: every layout needs more HBM per chip than the " +
              units::FormatBytes(in->system.chip.hbm_capacity) +
              " available. Try more chips, a shorter sequence, or FP8.\n";
    }
    std::vector<std::vector<std::string>> rows = {
        {"#", "plan", "step", "vs best", "MFU", "memory", "bottleneck"}};
    const double best = res->plans.empty() ? 0 : res->plans[0].step_time_s;
    int rank = 0;
    for (const search::PlanCandidate& p : res->plans) {
      ++rank;
      // Re-run the decorated estimator on the plan with the search's
      // placement order, so the detail is the plan that was ranked.
      estimate::TrainingConfig cfg = p.config;
      cfg.placement_order.assign(p.order.begin(), p.order.end());
      auto est = estimate::EstimateTraining(in->model.spec, in->system, cfg);
      Json j = est ? io::ToJson(*est) : Json::object();
      j["plan"] = cfg.par.ToString();
      j["key"] = p.Key();
      j["micro_batch"] = cfg.micro_batch;
      j["remat"] = std::string(model::RematName(cfg.remat));
      j["schedule"] = std::string(estimate::ScheduleName(cfg.schedule));
      j["vpp"] = cfg.vpp;
      j["offload_optimizer"] = cfg.offload_optimizer;
      j["search_step_time_s"] = p.step_time_s;
      j["behind_best"] = best > 0 ? p.step_time_s / best - 1 : 0;
      plans.push_back(j);
      rows.push_back({std::to_string(rank), p.Key(),
                      FormatSeconds(units::Seconds(p.step_time_s)),
                      fmt::format("+{:.1f}%", 100 * (p.step_time_s / best - 1)),
                      fmt::format("{:.1f}%", 100 * p.mfu),
                      FormatBytes(units::Bytes(p.memory_bytes)),
                      est ? est->bottleneck : "?"});
    }
    text += Table(rows);
    if (!res->plans.empty()) {
      estimate::TrainingConfig best_cfg = res->plans[0].config;
      best_cfg.placement_order.assign(res->plans[0].order.begin(),
                                      res->plans[0].order.end());
      auto est =
          estimate::EstimateTraining(in->model.spec, in->system, best_cfg);
      if (est) text += "\nBest plan in detail:\n" + TrainText(*est, in->system);
    }
    Json results = {{"plans", plans},
                    {"configs_evaluated", res->configs_evaluated},
                    {"configs_scored", res->configs_scored},
                    {"configs_pruned", res->configs_pruned},
                    {"configs_infeasible", res->configs_infeasible},
                    {"search_time_s", res->search_time_s},
                    {"threads", res->threads}};
    if (!o->explain.empty()) {
      estimate::TrainingConfig cfg = in->config;
      auto plan = estimate::ParsePlan(o->explain);
      if (!plan)
        return tl::unexpected(
            Error{plan.error().code, plan.error().message, "--explain"});
      cfg.par = *plan;
      auto est = estimate::EstimateTraining(in->model.spec, in->system, cfg);
      if (!est)
        return tl::unexpected(
            Error{est.error().code, est.error().message, "--explain"});
      int r = search::RankAmong(*res, est->step_time.si());
      std::string where =
          r > o->top ? "> " + std::to_string(o->top) : std::to_string(r);
      results["explain"] = {
          {"plan", o->explain},
          {"step_time_s", est->step_time.si()},
          {"feasible", est->feasible},
          {"rank", r},
          {"behind_best", best > 0 ? est->step_time.si() / best - 1 : 0}};
      text += fmt::format(
          "\n--explain {}: step {} ({}), rank {} among the plans found, "
          "{:+.1f}% vs "
          "the best\n",
          o->explain, FormatSeconds(est->step_time),
          est->feasible ? "fits" : "does not fit: " + est->reason, where,
          best > 0 ? 100 * (est->step_time.si() / best - 1) : 0.0);
    }
    out.json = Document(in->inputs, results);
    out.text = text;
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli
