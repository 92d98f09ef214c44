#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

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

std::string RateOrDash(units::FlopsPerSecond r) {
  return r.si() > 0 ? FormatFlopRate(r) : "-";
}

std::string ChipLinks(const hw::Chip& c) {
  if (c.ici) {
    return fmt::format("ICI {}x{}", c.ici->links_per_chip,
                       FormatBandwidth(c.ici->link_bandwidth));
  }
  if (c.nvlink) {
    return fmt::format("{} {} x{}", c.nvlink->name,
                       FormatBandwidth(c.nvlink->bandwidth),
                       c.nvlink->domain_size);
  }
  return "-";
}

// Prices are list on-demand at one named cloud per chip, so that "cheapest
// chip" compares chips rather than contracts; the cloud and date say which.
std::string PriceTable(const std::vector<const hw::Chip*>& chips) {
  std::vector<std::vector<std::string>> rows = {
      {"chip", "$/chip-h", "cloud", "as of"}};
  std::vector<std::string> none;
  for (const hw::Chip* c : chips) {
    if (!c->price) {
      none.push_back(c->id);
      continue;
    }
    rows.push_back({c->id, fmt::format("{:.2f}", c->price->usd_per_chip_hour),
                    c->price->cloud, c->price->date});
  }
  std::string text =
      "\nList on-demand prices (one cloud per chip):\n" + Table(rows);
  if (!none.empty()) {
    text += fmt::format("No list price: {}; pass --price-per-chip-hour.\n",
                        fmt::join(none, ", "));
  }
  return text;
}

// --bytes of `roofline` and `collective`: a size in whole bytes ("1.5KB" is
// 1500 bytes; "1.5B" is refused).
Result<units::Bytes> ParseWholeBytes(const std::string& text) {
  auto b = ParseOption<units::Bytes>(
      "--bytes", text, [](auto& t) { return units::ParseBytes(t); });
  if (!b) return b;
  const double v = b->si();
  if (std::abs(v - std::round(v)) > 1e-9 * v) {
    return InvalidArgument("expected a whole number of bytes, got \"" +
                               Excerpt(text) + "\" (" + FormatNumber(v) +
                               " bytes); round it, e.g. to \"" +
                               FormatNumber(std::ceil(v)) + "B\"",
                           "--bytes");
  }
  return b;
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
        {"chip", "bf16", "fp8", "int8", "HBM", "HBM bw", "links", "$/h"}};
    std::vector<std::vector<std::string>> csv = {
        {"chip", "name", "bf16_flops_per_s", "fp8_flops_per_s",
         "int8_ops_per_s", "hbm_bytes", "hbm_bytes_per_s",
         "price_usd_per_chip_hour"}};
    auto number_or_empty = [](double v) {
      return v > 0 ? CsvNumber(v) : std::string();
    };
    std::vector<const hw::Chip*> chips;
    for (const hw::Chip& chip : cat.chips()) chips.push_back(&chip);
    std::sort(chips.begin(), chips.end(),
              [](auto* a, auto* b) { return a->id < b->id; });
    for (const hw::Chip* chip : chips) {
      list.push_back(report::ToJson(*chip));
      csv.push_back(
          {chip->id, chip->name,
           number_or_empty(chip->Peak(hw::Dtype::kBf16).si()),
           number_or_empty(chip->Peak(hw::Dtype::kFp8).si()),
           number_or_empty(chip->Peak(hw::Dtype::kInt8).si()),
           CsvNumber(chip->hbm_capacity.si()),
           CsvNumber(chip->hbm_bandwidth.si()),
           chip->price ? CsvNumber(chip->price->usd_per_chip_hour) : ""});
      rows.push_back({chip->id, RateOrDash(chip->Peak(hw::Dtype::kBf16)),
                      RateOrDash(chip->Peak(hw::Dtype::kFp8)),
                      RateOrDash(chip->Peak(hw::Dtype::kInt8)),
                      FormatBytes(chip->hbm_capacity),
                      FormatBandwidth(chip->hbm_bandwidth), ChipLinks(*chip),
                      chip->price
                          ? units::FormatUsd(chip->price->usd_per_chip_hour)
                          : "-"});
    }
    out.json = Document(Json::object(), Json{{"chips", list}});
    out.csv = Csv(csv);
    out.text =
        Table(rows) +
        "\nRates are dense (no sparsity) per chip; links: ICI links x "
        "bandwidth, or NVLink bandwidth x domain size, per direction; "
        "$/h: list price per chip-hour.\n`scalemodel chip NAME` shows the "
        "name and every number with its source.\n" +
        PriceTable(chips);
    return out;
  };
  return c;
}

// `chip NAME`'s second table: the constants the realistic mode reads
// (docs/model.md 5.6, 7.2) and the serving measurements in the chip's file,
// each with its source note (`cite` numbers a source's text along with the
// first table's notes, "-" for none; `src` cites the chip file's source of
// a key).
std::string RealisticModeTable(
    const hw::Chip& ch,
    const std::function<std::string(const std::string&)>& cite,
    const std::function<std::string(const std::string&)>& src) {
  std::vector<std::vector<std::string>> rows = {
      {"constant", "value", "source"}};
  auto eff_src = [&](const report::EfficiencyEntry& e) {
    return cite(e.source);
  };
  for (const report::EfficiencyEntry& e : report::EfficiencyEntries(ch)) {
    if (e.is_flag) {
      rows.push_back(
          {e.key,
           std::string(e.value != 0 ? "on" : "off") + " (" + e.unit + ")",
           eff_src(e)});
      continue;
    }
    if (e.key == "wave_units" && e.value == 0) {
      rows.push_back({e.key, "none (no wave quantization)", eff_src(e)});
      continue;
    }
    std::string v;
    if (e.is_time) {
      v = FormatSeconds(units::Seconds(e.value));
    } else {
      v = FormatNumber(e.value);
    }
    rows.push_back(
        {e.key, v + (e.unit.empty() ? "" : " " + e.unit), eff_src(e)});
  }
  for (const hw::MoeEngineFit& f : ch.moe_engine) {
    // A runner's own fit (catalog `kernel`) is named and cited apart from
    // the engine's default kernel's.
    rows.push_back({"fused MoE, " + f.engine +
                        (f.kernel.empty() ? "" : " " + f.kernel) + ", " +
                        f.dtype,
                    FormatSeconds(f.floor) + " + experts' weights at " +
                        FormatNumber(f.stream) + " of the HBM peak",
                    src(f.SourceKey())});
  }
  for (const hw::AllReduceInGraph& c : ch.allreduce_in_graph) {
    rows.push_back(
        {fmt::format("all-reduce, {} x{} (in graph)", c.engine, c.gpus),
         fmt::format("{} at {} ... {} at {} ({} sizes; {})",
                     FormatSeconds(units::Seconds(c.time_s.front())),
                     units::FormatBytesBinary(units::Bytes(c.bytes.front())),
                     FormatSeconds(units::Seconds(c.time_s.back())),
                     units::FormatBytesBinary(units::Bytes(c.bytes.back())),
                     c.bytes.size(), c.version),
         src("allreduce_in_graph." + c.engine + "." + std::to_string(c.gpus))});
  }
  if (!ch.allreduce_measured.empty()) {
    const hw::AllReducePoint &lo = ch.allreduce_measured.front(),
                             &hi = ch.allreduce_measured.back();
    rows.push_back(
        {fmt::format("all-reduce, NCCL/RCCL x{} (eager)", lo.gpus),
         fmt::format(
             "bus bandwidth {} at {} ... {} at {} ({} sizes)",
             FormatBandwidth(lo.busbw), units::FormatBytesBinary(lo.bytes),
             FormatBandwidth(hi.busbw), units::FormatBytesBinary(hi.bytes),
             ch.allreduce_measured.size()),
         src("allreduce_measured." + FormatNumber(lo.bytes.si()))});
  }
  return "\nRealistic mode (docs/model.md 5.6 and 7.2; --mode peak uses none "
         "of these):\n" +
         Table(rows);
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
    out.json = Document(Json{{"name", *name}}, report::ToJson(ch));
    std::vector<std::vector<std::string>> rows = {
        {"quantity", "value", "source"}};
    // Sources, often longer than a line, as numbered notes under the
    // table; a source several numbers share gets one number.
    std::vector<std::string> notes;
    auto cite = [&](const std::string& text) {
      if (text.empty()) return std::string("-");
      auto n = std::find(notes.begin(), notes.end(), text);
      if (n == notes.end()) n = notes.insert(notes.end(), text);
      return fmt::format("[{}]", n - notes.begin() + 1);
    };
    auto src = [&](const std::string& key) {
      auto it = ch.sources.find(key);
      return cite(it == ch.sources.end() ? std::string() : it->second);
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
    if (ch.hbm_device_total.si() > 0) {
      rows.push_back({"Device memory (driver's total)",
                      FormatBytes(ch.hbm_device_total) + " (" +
                          units::FormatBytesBinary(ch.hbm_device_total) + ")",
                      src("memory.hbm_device_total")});
    }
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
          {ch.nvlink->name + " (per direction)",
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
    if (ch.host_memory_bandwidth.si() > 0) {
      rows.push_back({"Host memory (the chip's share, peak)",
                      FormatBandwidth(ch.host_memory_bandwidth),
                      src("host.memory_bandwidth")});
    }
    if (ch.power_watts > 0) {
      rows.push_back(
          {"Power", fmt::format("{:.0f} W", ch.power_watts), src("power.tdp")});
    }
    rows.push_back({"Price (list on-demand)",
                    ch.price ? units::FormatUsd(ch.price->usd_per_chip_hour) +
                                   fmt::format(" per chip-hour, {} ({})",
                                               ch.price->cloud, ch.price->date)
                             : "not in catalog (--price-per-chip-hour)",
                    src("price.usd_per_chip_hour")});
    const std::string realistic = RealisticModeTable(ch, cite, src);
    double bf16 = ch.Peak(hw::Dtype::kBf16).si();
    std::string sources = "\nsources:\n";
    for (size_t i = 0; i < notes.size(); ++i) {
      sources += fmt::format("[{}] {}\n", i + 1, notes[i]);
    }
    out.text = ch.name + " (" + ch.id + ")\n\n" + Table(rows) +
               fmt::format(
                   "\nCritical intensity (bf16 vs HBM): {:.0f} "
                   "FLOP/byte\n",
                   bf16 / ch.hbm_bandwidth.si()) +
               realistic + sources;
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
    std::vector<std::vector<std::string>> csv = {
        {"system", "num_chips", "chip", "shape", "peak_bf16_flops_per_s",
         "name"}};
    for (const catalog::SystemEntry& e : cat.systems()) {
      auto sys = cat.FindSystem(e.id);
      if (!sys) return tl::unexpected(sys.error());
      Json j = report::ToJson(*sys);
      j["shape"] = e.shape;
      list.push_back(j);
      rows.push_back(
          {e.id, std::to_string(sys->num_chips()), e.chip + ":" + e.shape,
           FormatFlopRate(units::FlopsPerSecond(
               sys->num_chips() * sys->chip.Peak(hw::Dtype::kBf16).si())),
           e.name});
      csv.push_back(
          {e.id, std::to_string(sys->num_chips()), e.chip, e.shape,
           CsvNumber(sys->num_chips() * sys->chip.Peak(hw::Dtype::kBf16).si()),
           e.name});
    }
    out.json = Document(Json::object(), Json{{"systems", list}});
    out.csv = Csv(csv);
    out.text = Table(rows) +
               "\nAny CHIP:SHAPE is a system too: tpu-v5e:16x16, "
               "tpu-v5p:16x16x16/4, h100:8x128, gb200:72x8; SYSTEM:SHAPE "
               "resizes a catalog system with its fabric (gcp-a3-high:8x4).\n";
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
      "Examples (a chip in a shape; a catalog system resized):\n"
      "  scalemodel system tpu-v5p:8x16x16\n"
      "  scalemodel system gcp-a3-high:8x4");
  c.app->add_option("name", *name, "Catalog system, CHIP:SHAPE or SYSTEM:SHAPE")
      ->required();
  c.action = [name](const catalog::Catalog& cat) -> Result<Output> {
    auto sys = cat.FindSystem(*name);
    if (!sys)
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "system"});
    Output out;
    out.json = Document(Json{{"system", *name}}, report::ToJson(*sys));
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
        "expected BxDxF such as 512x8192x8192, got '" + Excerpt(text) + "'",
        "--matmul");
  }
  double v[3];
  for (int i = 0; i < 3; ++i) {
    auto n = units::ParseCount(parts[i]);
    if (!n) {
      return InvalidArgument("expected BxDxF such as 512x8192x8192, got '" +
                                 Excerpt(text) + "' (" + n.error().message +
                                 ")",
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
      out.json = Document(inputs, report::ToJson(mm));
      // With small D and F the weights never amortize: no threshold.
      extra = std::isfinite(mm.critical_batch_exact)
                  ? fmt::format(
                        "Compute-bound above about {:.0f} tokens per "
                        "matmul",
                        mm.critical_batch_exact)
                  : fmt::format(
                        "Memory-bound at any number of tokens with "
                        "D={} and F={}",
                        FormatNumber(shape->d), FormatNumber(shape->f));
      extra +=
          fmt::format(" (the book's B >> crit rule: {:.0f}; compute in {}).\n",
                      mm.critical_batch, hw::DtypeName(mm.compute_dtype));
    } else {
      if (o->flops.empty() || o->bytes.empty()) {
        return InvalidArgument("give both --flops and --bytes", "roofline");
      }
      auto f = ParseOption<units::Flops>(
          "--flops", o->flops, [](auto& t) { return units::ParseFlops(t); });
      if (!f) return tl::unexpected(f.error());
      auto b = ParseWholeBytes(o->bytes);
      if (!b) return tl::unexpected(b.error());
      auto res = roofline::AnalyzeOp(**chip, *f, *b, roofline::ComputeDtype(dt),
                                     level);
      if (!res) return tl::unexpected(res.error());
      op = *res;
      r = &op;
      inputs["flops"] = f->si();
      inputs["bytes"] = b->si();
      out.json = Document(inputs, report::ToJson(op));
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

namespace {
struct CollectiveOptionsCli {
  std::string kind;
  std::string system;
  std::string axes;
  std::string bytes;
  std::string mode = "peak";
};

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
  c.app
      ->add_option("--system", o->system,
                   "Catalog system, CHIP:SHAPE or SYSTEM:SHAPE")
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
    auto bytes = ParseWholeBytes(o->bytes);
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
    out.json = Document(inputs, report::ToJson(*cost));
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
