#include "scalemodel/catalog/catalog.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>

#include "scalemodel/base/strings.h"
#include "toml_reader_internal.h"

namespace scalemodel::catalog {
namespace {

// Adapts a typed unit parser to the reader's Result<double> (SI value).
template <auto Parse>
Result<double> AsSi(std::string_view t) {
  auto v = Parse(t, units::ParseOptions{});
  if (!v) return tl::unexpected(v.error());
  return v->si();
}
constexpr auto AsBytes = AsSi<units::ParseBytes>;
constexpr auto AsBandwidth = AsSi<units::ParseBandwidth>;
constexpr auto AsFlopRate = AsSi<units::ParseFlopRate>;
constexpr auto AsDuration = AsSi<units::ParseDuration>;
Result<double> AsWatts(std::string_view t) { return units::ParseWatts(t); }

Result<toml::table> ParseToml(std::string_view contents,
                              const std::string& path) {
  try {
    return toml::parse(contents, path);
  } catch (const toml::parse_error& e) {
    // toml++'s description, lower-cased and cut short, inside our sentence.
    std::string why(e.description());
    if (why.rfind("Error while ", 0) == 0) why = "e" + why.substr(1);
    return tl::unexpected(Error{
        ErrorCode::kParse, "expected valid TOML (" + Excerpt(why, 100) + ")",
        path + ":" + std::to_string(e.source().begin.line)});
  } catch (const std::exception&) {
    return tl::unexpected(
        Error{ErrorCode::kParse, "expected valid TOML", path});
  }
}

// Reads a section with its required `source` and `date`, then calls `body`
// with a reader and the "source (date)" string to record against each number.
template <typename Body>
Result<bool> ReadSection(TableReader& parent, const std::string& key,
                         bool required, const std::string& file,
                         const Body& body) {
  const toml::table* t = parent.Table(key, required);
  if (!t) return true;
  TableReader r(*t, file, key);
  auto source = r.String("source", true);
  auto date = r.String("date", true);
  std::string cite = source.value_or("") + " (" + date.value_or("") + ")";
  body(r, cite);
  return r.Finish();
}

// Records `value` under `path` with `cite` unless a per-value source exists.
void Cite(hw::Chip& chip, const std::string& path, const std::string& cite,
          const std::string& own) {
  chip.sources[path] = own.empty() ? cite : own;
}

// Reads an optional fraction in (0, 1] of `of` under `key`, with its source.
void ReadOptionalFraction(TableReader& r, const char* key, const char* of,
                          const std::string& cite, std::optional<double>* field,
                          std::map<std::string, std::string>* sources) {
  std::string own;
  const toml::node* n = r.Sourced(key, false, &own);
  if (!n) return;
  const double v = n->value<double>().value_or(0);
  if ((!n->is_integer() && !n->is_floating_point()) || !(v > 0 && v <= 1)) {
    r.Fail(key, std::string("expected a fraction of ") + of +
                    " greater than 0 and at most 1, such as 0.5");
    return;
  }
  *field = v;
  (*sources)[key] = own.empty() ? cite : own;
}

// Reads an optional duration with its unit (greater than 0, at most 1 s)
// under `key`, with its source.
void ReadOptionalDuration(TableReader& r, const char* key,
                          const std::string& cite,
                          std::optional<units::Seconds>* field,
                          std::map<std::string, std::string>* sources) {
  std::string own;
  const toml::node* n = r.Sourced(key, false, &own);
  if (!n) return;
  std::optional<units::Seconds> v;
  if (n->is_string()) {
    auto parsed = units::ParseDuration(*n->value<std::string>());
    if (parsed) v = *parsed;
  }
  if (!v || !(v->si() > 0 && v->si() <= 1)) {
    r.Fail(key,
           "expected a duration with its unit, greater than 0 and at most "
           "1 s, such as \"2.4 us\"");
    return;
  }
  *field = *v;
  (*sources)[key] = own.empty() ? cite : own;
}

// Reads [efficiency]: fractions of peak as plain numbers in (0, 1], tile
// sizes and wave units as integers, durations with their unit, the ramp as a
// boolean; each may carry its own source.
void ReadEfficiency(TableReader& r, const std::string& cite,
                    hw::ChipEfficiencyData* e) {
  e->defaults_from = r.String("defaults_from", false).value_or("");
  hw::ForEachEfficiencyField(*e, [&](const char* key, auto& field) {
    std::string own;
    const toml::node* n = r.Sourced(key, false, &own);
    if (!n) return;
    using T = typename std::decay_t<decltype(field)>::value_type;
    if constexpr (std::is_same_v<T, double>) {
      if (!n->is_integer() && !n->is_floating_point()) {
        r.Fail(key,
               "expected a fraction of peak as a plain number such as 0.8");
        return;
      }
      double v = *n->value<double>();
      if (!(v > 0 && v <= 1)) {
        r.Fail(key,
               "expected a fraction of peak greater than 0 and at most "
               "1, got " +
                   FormatNumber(v));
        return;
      }
      field = v;
    } else if constexpr (std::is_same_v<T, int>) {
      const bool zero_ok = std::string_view(key) == "wave_units";
      long v = n->is_integer() ? static_cast<long>(*n->value<int64_t>()) : -1;
      if (!n->is_integer() || v < (zero_ok ? 0 : 1) || v > 1000000) {
        r.Fail(key, zero_ok ? "expected a whole number such as 132, or 0 for "
                              "no wave quantization"
                            : "expected a positive whole number such as 128");
        return;
      }
      field = static_cast<int>(v);
    } else if constexpr (std::is_same_v<T, units::Seconds>) {
      if (!n->is_string()) {
        r.Fail(key, "expected a duration with its unit, such as \"5 us\"");
        return;
      }
      auto v = units::ParseDuration(*n->value<std::string>());
      if (!v) {
        r.Fail(key, v.error().message);
        return;
      }
      field = *v;
    } else {
      if (!n->is_boolean()) {
        r.Fail(key, "expected true or false");
        return;
      }
      field = *n->value<bool>();
    }
    e->sources[key] = own.empty() ? cite : own;
  });
  // Optional keys, read apart (never borrowed; docs/catalog-format.md).
  ReadOptionalFraction(r, "gemm_max_fp4", "the fp4 peak", cite,
                       &e->gemm_max_fp4, &e->sources);
  ReadOptionalFraction(r, "gather", "the streaming (hbm) rate", cite,
                       &e->gather, &e->sources);
  ReadOptionalFraction(r, "gemm_stream", "the HBM peak", cite, &e->gemm_stream,
                       &e->sources);
  ReadOptionalDuration(r, "kernel_launch", cite, &e->kernel_launch,
                       &e->sources);
  ReadOptionalDuration(r, "attention_decode_head", cite,
                       &e->attention_decode_head, &e->sources);
  ReadOptionalDuration(r, "mla_fp8_kv_token", cite, &e->mla_fp8_kv_token,
                       &e->sources);
  ReadOptionalDuration(r, "block_fp8_k_step", cite, &e->block_fp8_k_step,
                       &e->sources);
  // The fused-MoE fit's two terms come as a pair (one fit).
  auto moe_pair = [&](const char* floor_key, const char* stream_key,
                      std::optional<units::Seconds>* floor,
                      std::optional<double>* stream) {
    ReadOptionalDuration(r, floor_key, cite, floor, &e->sources);
    ReadOptionalFraction(r, stream_key, "the HBM peak", cite, stream,
                         &e->sources);
    if (floor->has_value() != stream->has_value()) {
      const char* given = floor->has_value() ? floor_key : stream_key;
      const char* missing = floor->has_value() ? stream_key : floor_key;
      r.Fail(given, std::string("expected together with ") + missing +
                        " (the two terms of one fused-MoE fit)");
    }
  };
  moe_pair("moe_floor", "moe_stream", &e->moe_floor, &e->moe_stream);
  moe_pair("moe_floor_fp8", "moe_stream_fp8", &e->moe_floor_fp8,
           &e->moe_stream_fp8);
  // The prefill fit's two terms, also a pair.
  auto prefill_pair = [&](const char* compute_key, const char* act_key,
                          std::optional<double>* compute,
                          std::optional<double>* act) {
    ReadOptionalFraction(r, compute_key, "the dense peak", cite, compute,
                         &e->sources);
    ReadOptionalFraction(r, act_key, "the HBM peak", cite, act, &e->sources);
    if (compute->has_value() != act->has_value()) {
      const char* given = compute->has_value() ? compute_key : act_key;
      const char* missing = compute->has_value() ? act_key : compute_key;
      r.Fail(given, std::string("expected together with ") + missing +
                        " (the two terms of one fused-MoE prefill fit)");
    }
  };
  prefill_pair("moe_prefill", "moe_prefill_act", &e->moe_prefill,
               &e->moe_prefill_act);
  prefill_pair("moe_prefill_fp8", "moe_prefill_act_fp8", &e->moe_prefill_fp8,
               &e->moe_prefill_act_fp8);
}

// The chip whose [efficiency] table fills the keys a chip file of this
// family leaves out, unless it names another with `defaults_from`.
std::string FamilyReferenceChip(hw::ChipFamily f) {
  return f == hw::ChipFamily::kTpu ? "tpu-v5p" : "h100";
}

// The keys of `e` that are unset, comma-separated.
std::string UnsetEfficiencyKeys(const hw::ChipEfficiencyData& e) {
  std::string out;
  hw::ForEachEfficiencyField(e, [&](const char* key, const auto& field) {
    if (!field) out += (out.empty() ? "" : ", ") + std::string(key);
  });
  return out;
}

// Fills the fields of `e` that are unset from `from` (a complete table) and
// records that they were borrowed.
void BorrowEfficiency(hw::ChipEfficiencyData& e, const hw::Chip& from) {
  const hw::ChipEfficiencyData& src = from.efficiency;
  hw::ForEachEfficiencyField(e, [&](const char* key, auto& field) {
    if (field) return;
    hw::ForEachEfficiencyField(src, [&](const char* k, const auto& value) {
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>,
                                   std::decay_t<decltype(value)>>) {
        if (std::string_view(k) == key) field = value;
      }
    });
    auto s = src.sources.find(key);
    e.sources[key] = "borrowed from " + from.id +
                     (s == src.sources.end() ? "" : ": " + s->second);
    e.borrowed.emplace_back(key);
  });
  if (!e.borrowed.empty()) e.borrowed_from = from.id;
}

// Calls `read` on each table of the array of tables `n` ([[name]]) with
// its reader and its citation, "source (date)" (both required); stops at
// the first error.
template <typename Read>
Result<bool> ForEachSourcedTable(const toml::node& n, const std::string& path,
                                 const std::string& name, Read read) {
  const toml::array* arr = n.as_array();
  if (!arr || !arr->is_array_of_tables()) {
    return ParseError(name + ": expected [[" + name + "]] tables", path);
  }
  for (const toml::node& e : *arr) {
    TableReader r(*e.as_table(), path, name);
    const std::string cite = r.String("source", true).value_or("") + " (" +
                             r.String("date", true).value_or("") + ")";
    auto ok = read(r, cite);
    if (!ok) return ok;
  }
  return true;
}

// Reads [[moe_engine]] tables (engine, optional kernel, dtype, floor,
// stream, source, date) into chip->moe_engine: one per engine, kernel and
// expert dtype.
Result<bool> ReadMoeEngineFits(const toml::node& n, const std::string& path,
                               hw::Chip* chip) {
  return ForEachSourcedTable(
      n, path, "moe_engine",
      [&](TableReader& r, const std::string& cite) -> Result<bool> {
        hw::MoeEngineFit f;
        f.engine = r.String("engine", true).value_or("");
        f.dtype = r.String("dtype", true).value_or("");
        f.kernel = r.String("kernel", false).value_or("");
        if (f.engine != "vllm" && f.engine != "sglang") {
          r.Fail("engine", "expected vllm or sglang, got '" + f.engine + "'" +
                               DidYouMean(f.engine, {"vllm", "sglang"}));
        }
        const std::vector<std::string> dtypes = {"bf16", "fp8", "fp4", "int4",
                                                 "nvfp4"};
        if (std::find(dtypes.begin(), dtypes.end(), f.dtype) == dtypes.end()) {
          r.Fail("dtype", "expected bf16, fp8, fp4, int4 or nvfp4, got '" +
                              f.dtype + "'" + DidYouMean(f.dtype, dtypes));
        }
        if (f.dtype == "nvfp4" && f.kernel.empty()) {
          r.Fail("dtype",
                 "an nvfp4 (W4A4) fit is a named runner's: expected a kernel "
                 "such as \"flashinfer_trtllm\"");
        }
        // The table's own source and date cite both terms; a per-value
        // source in the inline form is accepted and not kept apart.
        std::optional<units::Seconds> floor;
        std::optional<double> stream;
        std::map<std::string, std::string> per_value;
        ReadOptionalDuration(r, "floor", cite, &floor, &per_value);
        ReadOptionalFraction(r, "stream", "the HBM peak", cite, &stream,
                             &per_value);
        if (!floor) {
          r.Fail("floor", "expected the op's fixed time, such as \"35 us\"");
        }
        if (!stream) {
          r.Fail("stream",
                 "expected the expert weights' streaming fraction of the HBM "
                 "peak, such as 0.8");
        }
        for (const hw::MoeEngineFit& g : chip->moe_engine) {
          if (g.engine == f.engine && g.kernel == f.kernel &&
              g.dtype == f.dtype) {
            r.Fail("dtype", "a second " + f.engine + " " +
                                (f.kernel.empty() ? "" : f.kernel + " ") +
                                f.dtype +
                                " fit (expected one per engine, kernel and "
                                "dtype)");
          }
        }
        auto done = r.Finish();
        if (!done) return tl::unexpected(done.error());
        f.floor = *floor;
        f.stream = *stream;
        chip->sources[f.SourceKey()] = cite;
        chip->moe_engine.push_back(std::move(f));
        return true;
      });
}

// Reads [[allreduce_in_graph]] tables (engine, version, gpus, bytes[],
// time[], source, date) into chip->allreduce_in_graph. A curve needs two or
// more points, sizes strictly ascending, one time per size; each time
// becomes the least of it and every larger message's (a smaller message
// can always run as a larger one), which removes the benchmarks' noise.
Result<bool> ReadInGraphAllReduces(const toml::node& n, const std::string& path,
                                   hw::Chip* chip) {
  return ForEachSourcedTable(
      n, path, "allreduce_in_graph",
      [&](TableReader& r, const std::string& cite) -> Result<bool> {
        hw::AllReduceInGraph c;
        c.engine = r.String("engine", true).value_or("");
        c.version = r.String("version", true).value_or("");
        c.gpus = static_cast<int>(r.Integer("gpus", true).value_or(8));
        if (c.gpus < 2) r.Fail("gpus", "expected at least 2 GPUs");
        if (c.engine != "vllm" && c.engine != "sglang" &&
            c.engine != "trtllm") {
          r.Fail("engine",
                 "expected vllm, sglang or trtllm, got '" + c.engine + "'" +
                     DidYouMean(c.engine, {"vllm", "sglang", "trtllm"}));
        }
        const std::vector<std::string> sizes = r.StringArray("bytes");
        const std::vector<std::string> times = r.StringArray("time");
        if (sizes.size() < 2 || sizes.size() != times.size()) {
          r.Fail("time",
                 "expected one time per size in bytes, two or more (got " +
                     std::to_string(sizes.size()) + " sizes and " +
                     std::to_string(times.size()) + " times)");
        }
        for (size_t i = 0; i < sizes.size() && i < times.size(); ++i) {
          auto b = AsBytes(sizes[i]);
          auto t = AsDuration(times[i]);
          if (!b || !(*b > 0) || !std::isfinite(*b)) {
            r.Fail("bytes",
                   "expected a size such as \"8 KiB\", got '" + sizes[i] + "'");
            break;
          }
          if (!t || !(*t > 0) || !std::isfinite(*t)) {
            r.Fail("time", "expected a time such as \"5.1 us\", got '" +
                               times[i] + "'");
            break;
          }
          if (!c.bytes.empty() && !(*b > c.bytes.back())) {
            r.Fail("bytes", "expected sizes in ascending order, got '" +
                                sizes[i] + "' after '" + sizes[i - 1] + "'");
            break;
          }
          c.bytes.push_back(*b);
          c.time_s.push_back(*t);
        }
        auto done = r.Finish();
        if (!done) return tl::unexpected(done.error());
        for (size_t i = c.time_s.size(); i-- > 1;) {
          c.time_s[i - 1] = std::min(c.time_s[i - 1], c.time_s[i]);
        }
        chip->sources["allreduce_in_graph." + c.engine + "." +
                      std::to_string(c.gpus)] = cite;
        chip->allreduce_in_graph.push_back(std::move(c));
        return true;
      });
}

// Reads [[allreduce_measured]] tables (bytes, busbw, gpus, source, date)
// into chip->allreduce_measured, sorted by size.
Result<bool> ReadAllReduceCurve(const toml::node& n, const std::string& path,
                                hw::Chip* chip) {
  auto ok = ForEachSourcedTable(
      n, path, "allreduce_measured",
      [&](TableReader& r, const std::string& cite) -> Result<bool> {
        hw::AllReducePoint p;
        std::string own;
        if (auto v = r.Quantity("bytes", true, AsBytes, &own)) {
          p.bytes = units::Bytes(*v);
        }
        if (auto v = r.Quantity("busbw", true, AsBandwidth, &own)) {
          p.busbw = units::BytesPerSecond(*v);
        }
        p.gpus = static_cast<int>(r.Integer("gpus", true).value_or(8));
        if (p.gpus < 2) r.Fail("gpus", "expected at least 2 GPUs");
        auto done = r.Finish();
        if (!done) return tl::unexpected(done.error());
        chip->sources["allreduce_measured." + FormatNumber(p.bytes.si())] =
            cite;
        chip->allreduce_measured.push_back(p);
        return true;
      });
  if (!ok) return ok;
  std::sort(chip->allreduce_measured.begin(), chip->allreduce_measured.end(),
            [](const hw::AllReducePoint& a, const hw::AllReducePoint& b) {
              return a.bytes.si() < b.bytes.si();
            });
  return true;
}

Result<hw::Chip> ParseChipFile(std::string_view contents,
                               const std::string& path,
                               std::string* defaults_where) {
  auto doc = ParseToml(contents, path);
  if (!doc) return tl::unexpected(doc.error());
  hw::Chip chip;
  TableReader root(*doc, path, "");
  chip.id = root.String("id", true).value_or("");
  chip.name = root.String("name", true).value_or("");
  root.String("notes", false);
  chip.aliases = root.StringArray("aliases");
  if (auto fam = root.String("family", true)) {
    if (*fam == "tpu") {
      chip.family = hw::ChipFamily::kTpu;
    } else if (*fam == "gpu") {
      chip.family = hw::ChipFamily::kGpu;
    } else {
      root.Fail("family", "expected \"tpu\" or \"gpu\", got \"" + *fam + "\"");
    }
  }

  auto quantity =
      [&chip](TableReader& r, const std::string& key, bool required,
              const std::string& cite,
              const std::function<Result<double>(std::string_view)>& parse)
      -> std::optional<double> {
    std::string own;
    auto v = r.Quantity(key, required, parse, &own);
    if (v) Cite(chip, r.Path(key), cite, own);
    return v;
  };

  std::vector<Result<bool>> sections;
  sections.push_back(ReadSection(
      root, "compute", true, path, [&](TableReader& r, const std::string& c) {
        for (hw::Dtype d : hw::kAllDtypes) {
          std::string key(hw::DtypeName(d));
          bool required = d == hw::Dtype::kBf16;
          if (auto v = quantity(r, key, required, c, AsFlopRate)) {
            chip.peak[static_cast<int>(d)] = units::FlopsPerSecond(*v);
          }
        }
        if (auto v = quantity(r, "vector_fp32", false, c, AsFlopRate)) {
          chip.vector_fp32 = units::FlopsPerSecond(*v);
        }
        if (auto v = quantity(
                r, "base_clock", false, c,
                [](std::string_view t) { return units::ParseFrequency(t); })) {
          chip.base_clock_hz = *v;
        }
        if (auto v = quantity(
                r, "boost_clock", false, c,
                [](std::string_view t) { return units::ParseFrequency(t); })) {
          chip.boost_clock_hz = *v;
        }
      }));
  sections.push_back(ReadSection(
      root, "memory", true, path, [&](TableReader& r, const std::string& c) {
        if (auto v = quantity(r, "hbm_capacity", true, c, AsBytes)) {
          chip.hbm_capacity = units::Bytes(*v);
        }
        if (auto v = quantity(r, "hbm_device_total", false, c, AsBytes)) {
          chip.hbm_device_total = units::Bytes(*v);
        }
        if (auto v = quantity(r, "hbm_bandwidth", true, c, AsBandwidth)) {
          chip.hbm_bandwidth = units::BytesPerSecond(*v);
        }
      }));
  // [[on_chip]]: zero or more on-chip memories.
  root.MarkKnown("on_chip");
  if (const toml::node* n = doc->get("on_chip")) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables()) {
      root.Fail("on_chip", "expected [[on_chip]] tables");
    } else {
      for (const toml::node& e : *arr) {
        TableReader r(*e.as_table(), path, "on_chip");
        auto source = r.String("source", true);
        auto date = r.String("date", true);
        std::string c = source.value_or("") + " (" + date.value_or("") + ")";
        hw::OnChipMemory m;
        m.name = r.String("name", true).value_or("");
        std::string own;
        if (auto v = r.Quantity("capacity", true, AsBytes, &own)) {
          m.capacity = units::Bytes(*v);
        }
        if (auto v = r.Quantity("bandwidth", false, AsBandwidth, &own)) {
          m.bandwidth = units::BytesPerSecond(*v);
        }
        chip.sources["on_chip." + m.name] = own.empty() ? c : own;
        auto done = r.Finish();
        if (!done) return tl::unexpected(done.error());
        chip.on_chip.push_back(m);
      }
    }
  }
  // [[allreduce_in_graph]]: zero or more engines' in-graph curves.
  root.MarkKnown("allreduce_in_graph");
  if (const toml::node* n = doc->get("allreduce_in_graph")) {
    auto ok = ReadInGraphAllReduces(*n, path, &chip);
    if (!ok) return tl::unexpected(ok.error());
  }
  // [[moe_engine]]: zero or more engines' fused-MoE fits.
  root.MarkKnown("moe_engine");
  if (const toml::node* n = doc->get("moe_engine")) {
    auto ok = ReadMoeEngineFits(*n, path, &chip);
    if (!ok) return tl::unexpected(ok.error());
  }
  // [[allreduce_measured]]: zero or more measured all-reduce points.
  root.MarkKnown("allreduce_measured");
  if (const toml::node* n = doc->get("allreduce_measured")) {
    auto ok = ReadAllReduceCurve(*n, path, &chip);
    if (!ok) return tl::unexpected(ok.error());
  }
  sections.push_back(ReadSection(
      root, "ici", false, path, [&](TableReader& r, const std::string& c) {
        hw::IciLinks ici;
        ici.links_per_chip =
            static_cast<int>(r.Integer("links_per_chip", true).value_or(0));
        if (auto v = quantity(r, "link_bandwidth", true, c, AsBandwidth)) {
          ici.link_bandwidth = units::BytesPerSecond(*v);
        }
        if (auto v = quantity(r, "hop_latency", true, c, AsDuration)) {
          ici.hop_latency = units::Seconds(*v);
        }
        ici.torus_dims =
            static_cast<int>(r.Integer("torus_dims", true).value_or(0));
        if (ici.torus_dims != 0 && ici.torus_dims != 2 && ici.torus_dims != 3) {
          r.Fail("torus_dims",
                 "expected 2 or 3, got " + std::to_string(ici.torus_dims));
        }
        if (auto w = r.String("wraparound", true)) {
          if (*w == "none") {
            ici.wraparound = hw::WraparoundRule::kNone;
          } else if (*w == "full-axis") {
            ici.wraparound = hw::WraparoundRule::kFullAxis;
          } else if (*w == "cube-multiple") {
            ici.wraparound = hw::WraparoundRule::kCubeMultiple;
          } else {
            r.Fail("wraparound",
                   "expected \"none\", \"full-axis\" or \"cube-multiple\", "
                   "got \"" +
                       *w + "\"");
          }
        }
        ici.wrap_unit =
            static_cast<int>(r.Integer("wrap_unit", true).value_or(0));
        if (auto s = r.String("max_slice", true)) {
          for (const std::string& p : Split(*s, 'x')) {
            long v = 0;
            auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
            if (ec != std::errc() || end != p.data() + p.size() || v <= 0 ||
                v > (long{1} << 24)) {
              r.Fail("max_slice",
                     "expected a shape such as \"16x20x28\" of positive "
                     "sizes of at most 16777216, got \"" +
                         Excerpt(*s) + "\"");
              break;
            }
            ici.max_slice.push_back(static_cast<int>(v));
          }
          if (ici.torus_dims > 0 &&
              static_cast<int>(ici.max_slice.size()) != ici.torus_dims) {
            r.Fail("max_slice", "has " + std::to_string(ici.max_slice.size()) +
                                    " dimensions but torus_dims is " +
                                    std::to_string(ici.torus_dims));
          }
        }
        ici.chips_per_host =
            static_cast<int>(r.Integer("chips_per_host", true).value_or(0));
        ici.cores_per_chip =
            static_cast<int>(r.Integer("cores_per_chip", true).value_or(1));
        chip.ici = ici;
      }));
  sections.push_back(ReadSection(
      root, "nvlink", false, path, [&](TableReader& r, const std::string& c) {
        hw::NvLinks nv;
        nv.name = r.String("name", false).value_or("NVLink");
        if (auto v = quantity(r, "bandwidth", true, c, AsBandwidth)) {
          nv.bandwidth = units::BytesPerSecond(*v);
        }
        nv.domain_size =
            static_cast<int>(r.Integer("domain_size", true).value_or(0));
        if (auto v = quantity(r, "hop_latency", true, c, AsDuration)) {
          nv.hop_latency = units::Seconds(*v);
        }
        nv.in_network_reduction =
            r.Bool("in_network_reduction", false).value_or(false);
        chip.nvlink = nv;
      }));
  sections.push_back(ReadSection(
      root, "scale_out", false, path,
      [&](TableReader& r, const std::string& c) {
        hw::ScaleOut so;
        if (auto v = quantity(r, "bandwidth", true, c, AsBandwidth)) {
          so.bandwidth = units::BytesPerSecond(*v);
        }
        if (auto v = quantity(r, "latency", true, c, AsDuration)) {
          so.latency = units::Seconds(*v);
        }
        so.fabric = r.String("fabric", true).value_or("");
        so.in_network_reduction =
            r.Bool("in_network_reduction", false).value_or(false);
        chip.scale_out = so;
      }));
  sections.push_back(ReadSection(
      root, "host", true, path, [&](TableReader& r, const std::string& c) {
        if (auto v = quantity(r, "pcie_bandwidth", true, c, AsBandwidth)) {
          chip.pcie_bandwidth = units::BytesPerSecond(*v);
        }
        if (auto v = quantity(r, "memory_bandwidth", false, c, AsBandwidth)) {
          chip.host_memory_bandwidth = units::BytesPerSecond(*v);
        }
      }));
  sections.push_back(ReadSection(root, "efficiency", false, path,
                                 [&](TableReader& r, const std::string& c) {
                                   ReadEfficiency(r, c, &chip.efficiency);
                                   if (defaults_where)
                                     *defaults_where = r.Where("defaults_from");
                                 }));
  sections.push_back(ReadSection(
      root, "power", false, path, [&](TableReader& r, const std::string& c) {
        if (auto v = quantity(r, "tdp", true, c, AsWatts))
          chip.power_watts = *v;
        if (auto v = quantity(r, "limit", false, c, AsWatts)) {
          if (*v <= 0 || *v > chip.power_watts) {
            r.Fail("limit", "expected a power limit above 0 W and at most tdp");
          } else {
            chip.power_limit_watts = *v;
          }
        }
      }));
  sections.push_back(ReadSection(
      root, "price", false, path, [&](TableReader& r, const std::string& c) {
        hw::Price p;
        p.usd_per_chip_hour = r.Number("usd_per_chip_hour", true).value_or(0);
        if (p.usd_per_chip_hour <= 0 && r.Number("usd_per_chip_hour", false)) {
          r.Fail("usd_per_chip_hour", "expected a price greater than 0");
        }
        p.cloud = r.String("cloud", false).value_or("unstated");
        p.date = r.String("date", false).value_or("");
        p.source = c;
        chip.sources["price.usd_per_chip_hour"] = c;
        chip.price = p;
      }));
  for (auto& s : sections) {
    if (!s) return tl::unexpected(s.error());
  }
  auto done = root.Finish();
  if (!done) return tl::unexpected(done.error());
  if (chip.is_tpu() && !chip.ici) {
    return ParseError("a TPU chip needs an [ici] section", path);
  }
  if (!chip.is_tpu() && !chip.nvlink) {
    return ParseError("a GPU chip needs an [nvlink] section", path);
  }
  if (defaults_where && defaults_where->empty()) *defaults_where = path;
  return chip;
}

}  // namespace

Result<hw::Chip> Catalog::ParseChip(std::string_view contents,
                                    const std::string& path) {
  return ParseChipFile(contents, path, nullptr);
}

Result<SystemEntry> Catalog::ParseSystem(std::string_view contents,
                                         const std::string& path) {
  auto doc = ParseToml(contents, path);
  if (!doc) return tl::unexpected(doc.error());
  SystemEntry e;
  TableReader root(*doc, path, "");
  e.id = root.String("id", true).value_or("");
  e.name = root.String("name", true).value_or("");
  e.chip = root.String("chip", true).value_or("");
  e.shape = root.String("shape", true).value_or("");
  e.source = root.String("source", true).value_or("");
  root.String("date", true);
  root.String("notes", false);
  e.aliases = root.StringArray("aliases");
  if (const toml::table* net = root.Table("scale_out", false)) {
    TableReader r(*net, path, "scale_out");
    std::string own;
    if (auto v = r.Quantity("bandwidth", false, AsBandwidth, &own)) {
      e.scale_out_bandwidth = units::BytesPerSecond(*v);
    }
    if (auto b = r.Bool("in_network_reduction", false)) {
      e.has_in_network_reduction = true;
      e.in_network_reduction = *b;
    }
    r.MarkKnown("tiers");
    if (const toml::node* tiers = net->get("tiers")) {
      const toml::array* arr = tiers->as_array();
      if (!arr || !arr->is_array_of_tables()) {
        r.Fail("tiers", "expected [[scale_out.tiers]] tables");
      } else {
        for (const toml::node& t : *arr) {
          TableReader tr(*t.as_table(), path, "scale_out.tiers");
          hw::SwitchTier tier;
          tier.name = tr.String("name", true).value_or("");
          tier.group_size =
              static_cast<int>(tr.Integer("group_size", true).value_or(0));
          tier.oversubscription =
              tr.Number("oversubscription", false).value_or(1.0);
          if (tier.oversubscription < 1.0) {
            tr.Fail("oversubscription",
                    "expected a ratio of at least 1 (1 = full bisection)");
          }
          auto done = tr.Finish();
          if (!done) return tl::unexpected(done.error());
          e.tiers.push_back(tier);
        }
      }
    }
    auto done = r.Finish();
    if (!done) return tl::unexpected(done.error());
  }
  auto done = root.Finish();
  if (!done) return tl::unexpected(done.error());
  return e;
}

Result<bool> Catalog::AddFiles(const std::vector<DataFile>& files) {
  // boost's hash_combine, over std::hash of each path and contents.
  auto mix = [this](std::string_view s) {
    fingerprint_ ^= std::hash<std::string_view>{}(s) + 0x9e3779b97f4a7c15ULL +
                    (fingerprint_ << 6) + (fingerprint_ >> 2);
  };
  for (const DataFile& f : files) {
    mix(f.path);
    mix(f.contents);
  }
  auto replace_by_id = [](auto& vec, auto item) {
    for (auto& existing : vec) {
      if (existing.id == item.id) {
        existing = std::move(item);
        return;
      }
    }
    vec.push_back(std::move(item));
  };
  struct NewChip {
    hw::Chip chip;
    std::string where;  // "file:line" of efficiency.defaults_from, or file
    int state = 0;      // efficiency: 0 unresolved, 1 resolving, 2 resolved
  };
  std::vector<NewChip> batch;
  for (const DataFile& f : files) {
    if (f.path.rfind("chips/", 0) == 0) {
      NewChip n;
      auto chip = ParseChipFile(f.contents, f.path, &n.where);
      if (!chip) return tl::unexpected(chip.error());
      n.chip = std::move(*chip);
      batch.push_back(std::move(n));
    } else if (f.path.rfind("systems/", 0) == 0) {
      auto sys = ParseSystem(f.contents, f.path);
      if (!sys) return tl::unexpected(sys.error());
      replace_by_id(systems_, std::move(*sys));
    } else if (f.path.rfind("validation/", 0) == 0) {
      validation_files_.push_back(f);
    } else if (f.path.rfind("models/", 0) == 0) {
      // Models are parsed by the model reader; keep the latest file per name.
      std::string stem = std::filesystem::path(f.path).stem().string();
      bool replaced = false;
      for (DataFile& m : model_files_) {
        if (std::filesystem::path(m.path).stem().string() == stem) {
          m = f;
          replaced = true;
        }
      }
      if (!replaced) model_files_.push_back(f);
    } else {
      return IoError(
          "catalog files must live under chips/, systems/, models/ or "
          "validation/",
          f.path);
    }
  }
  // Efficiency constants a chip file leaves out come from its
  // `defaults_from` chip, else its family's reference chip: one of this
  // batch (the last file with that id), else one already in the catalog. A
  // file that replaces its own source (a user's h100.toml) borrows from the
  // chip it replaces.
  auto matches = [](const hw::Chip& c, const std::string& name) {
    if (ToLower(c.id) == name) return true;
    for (const std::string& a : c.aliases) {
      if (ToLower(a) == name) return true;
    }
    return false;
  };
  std::function<Result<bool>(size_t)> resolve = [&](size_t i) -> Result<bool> {
    NewChip& n = batch[i];
    if (n.state == 2) return true;
    hw::ChipEfficiencyData& e = n.chip.efficiency;
    if (n.state == 1) {
      return ParseError(
          "efficiency.defaults_from: chips borrow constants from "
          "each other in a cycle through '" +
              n.chip.id + "'",
          n.where);
    }
    const std::string unset = UnsetEfficiencyKeys(e);
    if (unset.empty() && e.defaults_from.empty()) {
      n.state = 2;
      return true;
    }
    n.state = 1;
    const std::string name = ToLower(
        Trim(e.defaults_from.empty() ? FamilyReferenceChip(n.chip.family)
                                     : e.defaults_from));
    const std::string family = n.chip.is_tpu() ? "TPU" : "GPU";
    const hw::Chip* from = nullptr;
    if (!matches(n.chip, name)) {
      for (size_t j = batch.size(); j-- > 0 && !from;) {
        if (!matches(batch[j].chip, name)) continue;
        auto ok = resolve(j);
        if (!ok) return ok;
        from = &batch[j].chip;
      }
    }
    for (const hw::Chip& c : chips_) {
      if (!from && matches(c, name)) from = &c;
    }
    if (!from && !e.defaults_from.empty()) {
      std::vector<std::string> ids;
      ids.reserve(batch.size() + chips_.size());
      for (const NewChip& b : batch) ids.push_back(b.chip.id);
      for (const hw::Chip& c : chips_) ids.push_back(c.id);
      return ParseError("efficiency.defaults_from: unknown chip '" +
                            e.defaults_from + "'" +
                            DidYouMean(e.defaults_from, ids) +
                            "; name a chip of the catalog to borrow the "
                            "constants this file leaves out from",
                        n.where);
    }
    if (!from && matches(n.chip, name)) {
      return ParseError(
          n.chip.id + " is the reference chip other " + family +
              " chips borrow efficiency constants from, so its [efficiency] "
              "table must set every key; missing: " +
              unset,
          n.where);
    }
    if (!from) {
      return ParseError("efficiency: the file sets no " + unset + ", and the " +
                            family + " reference chip '" + name +
                            "' to borrow them from is not in the catalog; "
                            "add them, or name a chip with defaults_from",
                        n.where);
    }
    BorrowEfficiency(e, *from);
    n.state = 2;
    return true;
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    auto ok = resolve(i);
    if (!ok) return ok;
  }
  for (NewChip& n : batch) replace_by_id(chips_, std::move(n.chip));
  // Every system must name a known chip.
  for (const SystemEntry& s : systems_) {
    auto chip = FindChip(s.chip);
    if (!chip) {
      return ParseError("system '" + s.id + "': " + chip.error().message,
                        "systems/" + s.id + ".toml");
    }
  }
  return true;
}

Result<bool> Catalog::AddDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return IoError(
        "catalog directory '" + dir + "' does not exist or is not a directory",
        "catalog");
  }
  std::vector<DataFile> files;
  for (const char* sub : {"chips", "systems", "models"}) {
    fs::path p = fs::path(dir) / sub;
    if (!fs::is_directory(p, ec)) continue;
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(p, ec)) {
      std::string ext = entry.path().extension().string();
      if (ext == ".toml" || ext == ".json") paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const fs::path& fp : paths) {
      // No catalog file comes near this; a bigger one is not read at all.
      constexpr uintmax_t kMaxFileBytes = uintmax_t{16} << 20;
      if (const uintmax_t bytes = fs::file_size(fp, ec);
          !ec && bytes > kMaxFileBytes) {
        return IoError("expected a catalog file of at most 16 MiB, got " +
                           FormatNumber(static_cast<double>(bytes) /
                                        static_cast<double>(1 << 20)) +
                           " MiB",
                       std::string(sub) + "/" + fp.filename().string());
      }
      std::ifstream in(fp);
      if (!in) return IoError("cannot read file", fp.string());
      std::stringstream ss;
      ss << in.rdbuf();
      files.push_back(
          {std::string(sub) + "/" + fp.filename().string(), ss.str()});
    }
  }
  if (files.empty()) {
    return IoError("catalog directory '" + dir +
                       "' has no chips/, systems/ or models/ files",
                   "catalog");
  }
  return AddFiles(files);
}

Result<Catalog> Catalog::Builtin() {
  // The files are compiled in, so they are parsed once per process (every
  // RunCli call starts from this catalog); each caller gets its own copy.
  static const Result<Catalog> parsed = []() -> Result<Catalog> {
    Catalog c;
    auto ok = c.AddFiles(BuiltinDataFiles());
    if (!ok) return tl::unexpected(ok.error());
    return c;
  }();
  return parsed;
}

Result<const hw::Chip*> Catalog::FindChip(std::string_view name) const {
  std::string lname = ToLower(Trim(name));
  std::vector<std::string> names;
  for (const hw::Chip& c : chips_) {
    if (ToLower(c.id) == lname) return &c;
    names.push_back(c.id);
  }
  for (const hw::Chip& c : chips_) {
    for (const std::string& a : c.aliases) {
      if (ToLower(a) == lname) return &c;
    }
  }
  std::vector<std::string> all = names;
  for (const hw::Chip& c : chips_) {
    all.insert(all.end(), c.aliases.begin(), c.aliases.end());
  }
  std::string suggestion = Suggest(lname, all);
  // Point an alias suggestion at its chip id.
  for (const hw::Chip& c : chips_) {
    for (const std::string& a : c.aliases) {
      if (a == suggestion) suggestion = c.id;
    }
  }
  return NotFound(
      "unknown chip '" + std::string(name) + "'" +
      (suggestion.empty() ? "" : " (did you mean '" + suggestion + "'?)") +
      "; `scalemodel chips` lists all " + std::to_string(chips_.size()));
}

namespace {

// Builds a catalog system's fabric on `shape`: its chip, with the system's
// scale-out overrides (NIC rate, switch tiers, in-network reduction).
Result<hw::System> BuildEntry(const SystemEntry& e, const hw::Chip& chip,
                              const std::string& shape) {
  auto sys = hw::BuildSystem(chip, shape);
  if (!sys) return sys;
  sys->id = e.id;
  sys->name = e.name;
  sys->source = e.source;
  for (hw::PhysicalAxis& a : sys->axes) {
    if (a.kind != hw::AxisKind::kScaleOut && a.kind != hw::AxisKind::kDcn) {
      continue;
    }
    a.tiers = e.tiers;
    if (e.scale_out_bandwidth.si() > 0) a.bandwidth = e.scale_out_bandwidth;
    if (e.has_in_network_reduction) {
      a.in_network_reduction = e.in_network_reduction;
    }
  }
  return sys;
}

}  // namespace

const SystemEntry* Catalog::FindSystemEntry(std::string_view name) const {
  std::string ls = ToLower(std::string(Trim(name)));
  for (const SystemEntry& e : systems_) {
    bool match = ToLower(e.id) == ls;
    for (const std::string& a : e.aliases) match = match || ToLower(a) == ls;
    if (match) return &e;
  }
  return nullptr;
}

Result<hw::System> Catalog::FindSystem(std::string_view spec) const {
  std::string s(Trim(spec));
  if (s.empty()) {
    return InvalidArgument(
        "expected a system such as 'tpu-v5p:16x20x28' or 'h100:8x128'");
  }
  size_t colon = s.find(':');
  if (colon != std::string::npos) {
    std::string head = s.substr(0, colon), shape = s.substr(colon + 1);
    // SYSTEM:SHAPE resizes a catalog system and keeps its fabric.
    if (const SystemEntry* e = FindSystemEntry(head)) {
      auto chip = FindChip(e->chip);
      if (!chip) return tl::unexpected(chip.error());
      auto sys = BuildEntry(*e, **chip, shape);
      if (!sys) return sys;
      sys->id = e->id + ":" + shape;
      sys->name = e->name + ", resized to " + shape;
      return sys;
    }
    auto chip = FindChip(head);
    if (!chip) {
      // Neither: suggest the closest chip or catalog system.
      std::vector<std::string> all;
      for (const hw::Chip& c : chips_) all.push_back(c.id);
      for (const SystemEntry& e : systems_) all.push_back(e.id);
      return NotFound(
          "unknown chip or system '" + head + "' before ':" + shape + "'" +
          DidYouMean(head, all) +
          "; `scalemodel chips` and `scalemodel systems` list them");
    }
    return hw::BuildSystem(**chip, shape);
  }
  std::vector<std::string> names;
  for (const SystemEntry& e : systems_) names.push_back(e.id);
  if (const SystemEntry* e = FindSystemEntry(s)) {
    auto chip = FindChip(e->chip);
    if (!chip) return tl::unexpected(chip.error());
    auto sys = BuildEntry(*e, **chip, e->shape);
    if (!sys) {
      return tl::unexpected(Error{
          sys.error().code, "system '" + e->id + "': " + sys.error().message,
          "systems/" + e->id + ".toml"});
    }
    return sys;
  }
  // A bare chip name is a common slip: say how to give a shape.
  if (FindChip(s)) {
    return InvalidArgument(
        "'" + s + "' is a chip, not a system; give a shape such as '" + s +
        ":" + ((*FindChip(s))->is_tpu() ? "16x16" : "8x16") +
        "' or a catalog system (`scalemodel systems`)");
  }
  return NotFound("unknown system '" + s + "'" + DidYouMean(s, names) +
                  "; use a catalog system (`scalemodel systems`) or "
                  "CHIP:SHAPE such as 'tpu-v5e:16x16'");
}

}  // namespace scalemodel::catalog
