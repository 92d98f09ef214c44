// scalemodel profile: a measured PyTorch or JAX/XLA trace op by op against
// the roofline, and against train's prediction for the same layout.
#include <cmath>
#include <cstdio>
#include <optional>

#include "commands.h"
#include "fmt/format.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/trace/profile.h"

namespace scalemodel::cli {

namespace {

std::string Percent(double f) {
  return f > 0 ? fmt::format("{:.1f}%", 100 * f) : "-";
}

std::string BusBandwidth(const trace::OpStats& s) {
  return s.op_class == "collective" && s.bus_bandwidth() > 0
             ? FormatBandwidth(units::BytesPerSecond(s.bus_bandwidth()))
             : "-";
}

Json StatsJson(const trace::OpStats& s, bool op) {
  Json j = {
      {op ? "op" : "class", s.name},
      {"count", s.count},
      {"measured_s", s.measured_s},
      {"roofline_s", s.roofline_s},
      {"measured_with_roofline_s", s.known_s},
      {"efficiency", s.known_s > 0 ? Json(s.efficiency()) : Json(nullptr)},
      {"bound", s.Bound()},
      {"flops", s.flops},
      {"bytes", s.bytes}};
  if (op) j["class"] = s.op_class;
  if (s.op_class == "collective") {
    j["bus_bandwidth_bytes_per_s"] =
        s.bus_bandwidth() > 0 ? Json(s.bus_bandwidth()) : Json(nullptr);
  }
  return j;
}

std::string StatsTable(const std::vector<trace::OpStats>& v, bool op) {
  std::vector<std::vector<std::string>> rows = {
      {op ? "op" : "class", "count", "measured", "roofline", "efficiency",
       "bound", "bus bw"}};
  for (const trace::OpStats& s : v) {
    rows.push_back(
        {op ? s.name : s.op_class, std::to_string(s.count),
         FormatSeconds(units::Seconds(s.measured_s)),
         s.known_s > 0 ? FormatSeconds(units::Seconds(s.roofline_s)) : "-",
         Percent(s.efficiency()), s.Bound(), BusBandwidth(s)});
  }
  return Table(rows);
}

double ClassTime(const trace::ProfileReport& r, const std::string& cls) {
  for (const trace::OpStats& s : r.classes) {
    if (s.op_class == cls) return s.measured_s;
  }
  return 0;
}

// Predicted against measured, per chip and step.
void Compare(const trace::ProfileReport& r, const estimate::TrainingEstimate& e,
             Output* out) {
  const double per = r.devices * std::max(1, r.steps);
  const auto& L = e.per_layer;
  const double layers = L.layers_per_stage * e.microbatches;
  double comm = 0;
  for (const estimate::CommItem& c : e.comms) comm += c.time.si();
  const double measured_step = r.steps > 0 ? r.step_s : r.span_s;
  struct Row {
    const char* part;
    double predicted, measured;
  };
  const Row rows[] = {
      {"step", e.step_time.si(), measured_step},
      {"matmul", L.matmul.si() * layers, ClassTime(r, "matmul") / per},
      {"attention", L.attention.si() * layers, ClassTime(r, "attention") / per},
      {"elementwise", L.elementwise.si() * layers,
       ClassTime(r, "elementwise") / per},
      {"collectives (all, hidden or not)", comm,
       ClassTime(r, "collective") / per},
  };
  std::vector<std::vector<std::string>> t = {{"per chip and step",
                                              "train predicts", "measured",
                                              "measured / predicted"}};
  Json j = Json::array();
  for (const Row& row : rows) {
    const double ratio = row.predicted > 0 ? row.measured / row.predicted : 0;
    t.push_back({row.part, FormatSeconds(units::Seconds(row.predicted)),
                 FormatSeconds(units::Seconds(row.measured)),
                 ratio > 0 ? fmt::format("{:.2f}", ratio) : "-"});
    j.push_back({{"part", row.part},
                 {"predicted_s", row.predicted},
                 {"measured_s", row.measured}});
  }
  out->json["prediction"] = {
      {"parts", j}, {"mfu", e.mfu}, {"microbatches", e.microbatches}};
  out->text += fmt::format(
      "\ncompared with train's prediction ({}; measured {}):\n{}",
      r.steps > 0 ? fmt::format("{} profiled steps", r.steps)
                  : "no step markers: the whole profiled window as one step",
      r.devices > 1
          ? fmt::format("summed over {} devices, divided by them", r.devices)
          : "one device",
      Table(t));
}

// The report's JSON and text.
Output ProfileOutput(const std::string& path, const hw::System& sys,
                     const trace::ProfileReport& r) {
  Output out;
  Json classes = Json::array(), ops = Json::array();
  for (const auto& s : r.classes) classes.push_back(StatsJson(s, false));
  for (const auto& s : r.ops) ops.push_back(StatsJson(s, true));
  out.json = Document({{"trace", path}, {"system", sys.id}},
                      {{"format", r.format},
                       {"events", r.events},
                       {"device_events", r.device_events},
                       {"devices", r.devices},
                       {"span_s", r.span_s},
                       {"busy_s", r.busy_s},
                       {"steps", r.steps},
                       {"step_s", r.step_s},
                       {"classes", classes},
                       {"ops", ops}});
  out.text = fmt::format(
      "{} trace {}: {} events, {} on {} device{} over {}{}; roofline on {} "
      "(peak rates, HBM bandwidth, the system's links)\n\nby class:\n{}\n"
      "top {} ops:\n{}",
      r.format == "xla" ? "JAX/XLA" : "PyTorch", path, r.events,
      r.device_events, r.devices, r.devices > 1 ? "s" : "",
      FormatSeconds(units::Seconds(r.span_s)),
      r.steps > 0 ? fmt::format(", {} steps of {} on average", r.steps,
                                FormatSeconds(units::Seconds(r.step_s)))
                  : "",
      sys.id, StatsTable(r.classes, false), r.ops.size(),
      StatsTable(r.ops, true));
  return out;
}

}  // namespace

Command AddProfileCommand(CLI::App& app) {
  Command c;
  auto path = std::make_shared<std::string>();
  auto top = std::make_shared<int>(15);
  c.app = app.add_subcommand(
      "profile",
      "Read a measured PyTorch profiler trace or JAX/XLA trace "
      "(.json or .json.gz) and set each op against its roofline on the "
      "system's chip: measured and roofline time, efficiency, bound, bus "
      "bandwidth of collectives; with --model/--plan/--batch-tokens, against "
      "train's prediction too.\n\nExamples:\n"
      "  scalemodel profile path/to/rank0.pt.trace.json --system h100:8x1\n"
      "  scalemodel profile path/to/host.trace.json.gz --system tpu-v5p:2x2x1 "
      "--json\n"
      "  scalemodel profile path/to/rank0.json --system h100:8x4 --model "
      "llama3-8b "
      "--plan fsdp=32 --batch-tokens 32x8192 --seq 8192");
  c.app->add_option("trace", *path, "The trace file (.json or .json.gz)")
      ->required();
  c.app->add_option("--top", *top, "How many ops to list")
      ->capture_default_str();
  TrainPredictor predict = AddPredictionOptions(c.app);
  c.action = [path, top,
              predict](const catalog::Catalog& cat) -> Result<Output> {
    auto sys = cat.FindSystem(predict.system());
    if (!sys) {
      return tl::unexpected(
          Error{sys.error().code, sys.error().message, "--system"});
    }
    if (*top < 1) {
      return InvalidArgument("expected at least 1, got " + std::to_string(*top),
                             "--top");
    }
    // train's prediction first: its bad input fails before a long read.
    std::optional<estimate::TrainingEstimate> predicted;
    if (predict.given()) {
      auto e = predict.run(cat);
      if (!e) return tl::unexpected(e.error());
      predicted = *e;
    }
    trace::ProfileOptions opt;
    opt.top = *top;
    bool shown = false;
    opt.progress = [&](long long done, long long total) {
      if (total < (32LL << 20)) return;
      std::fprintf(stderr, "\rreading %s: %3.0f%% of %.0f MB", path->c_str(),
                   100.0 * static_cast<double>(done) / total, total / 1e6);
      shown = true;
    };
    auto r = trace::ReadProfile(*path, *sys, opt);
    if (shown) std::fprintf(stderr, "\n");
    if (!r) {
      Error e = r.error();
      e.where = "trace";
      return tl::unexpected(e);
    }
    Output out = ProfileOutput(*path, *sys, *r);
    if (predicted) Compare(*r, *predicted, &out);
    return out;
  };
  return c;
}

}  // namespace scalemodel::cli
