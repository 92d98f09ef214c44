#include "scalemodel/trace/chrome.h"

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "fmt/format.h"

namespace scalemodel::trace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

// Nanoseconds since the start, so that every time is rounded once and a
// slice's end is its start plus its duration exactly.
long long Ns(double s) { return std::llround(s * 1e9); }
std::string Us(long long ns) {
  return fmt::format("{}.{:03d}", ns / 1000, static_cast<int>(ns % 1000));
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{:.6g}", v);
}

std::string SliceArgs(const timeline::Slice& s) {
  std::string a = "{";
  auto add = [&](const std::string& k, const std::string& v) {
    if (a.size() > 1) a += ",";
    a += JsonString(k) + ":" + v;
  };
  add("duration_s", Number(s.dur_s));
  if (s.flops > 0) add("flops", Number(s.flops));
  if (s.bytes > 0) add("bytes", Number(s.bytes));
  if (s.flops > 0 && s.bytes > 0) add("intensity", Number(s.flops / s.bytes));
  if (!s.bound.empty()) add("bound", JsonString(s.bound));
  for (const auto& [k, v] : s.args) add(k, JsonString(v));
  return a + "}";
}

}  // namespace

std::string ChromeTraceJson(const timeline::Timeline& t) {
  // Threads: one per (process, stream, lane), numbered in that order.
  std::map<std::tuple<int, int, int>, int> tid;
  for (const timeline::Slice& s : t.slices) {
    tid.emplace(std::make_tuple(s.process, s.stream, s.lane), 0);
  }
  int next = 1;
  for (auto& [key, id] : tid) id = next++;
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto event = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += e;
  };
  for (size_t p = 0; p < t.processes.size(); ++p) {
    event(fmt::format(
        R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})",
        p, JsonString(t.processes[p].name)));
    event(fmt::format(
        R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
        p, p));
  }
  for (const auto& [key, id] : tid) {
    const auto [p, s, lane] = key;
    std::string name = t.processes[p].streams[s];
    if (lane > 0) name += fmt::format(" ({})", lane + 1);
    event(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
        p, id, JsonString(name)));
    event(fmt::format(
        R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
        p, id, id));
  }
  for (const timeline::Slice& s : t.slices) {
    const long long a = Ns(s.start_s), b = Ns(s.end_s());
    event(fmt::format(
        R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
        JsonString(s.name), JsonString(s.category), s.process,
        tid[{s.process, s.stream, s.lane}], Us(a), Us(b - a), SliceArgs(s)));
  }
  for (size_t i = 0; i < t.flows.size(); ++i) {
    const timeline::Slice& from = t.slices[t.flows[i].from];
    const timeline::Slice& to = t.slices[t.flows[i].to];
    event(fmt::format(
        R"({{"ph":"s","id":{},"name":"pipeline send","cat":"send","pid":{},"tid":{},"ts":{}}})",
        i + 1, from.process, tid[{from.process, from.stream, from.lane}],
        Us(Ns(from.start_s))));
    event(fmt::format(
        R"({{"ph":"f","bp":"e","id":{},"name":"pipeline send","cat":"send","pid":{},"tid":{},"ts":{}}})",
        i + 1, to.process, tid[{to.process, to.stream, to.lane}],
        Us(Ns(to.start_s))));
  }
  out += "\n],\"otherData\":{";
  out += "\"title\":" + JsonString(t.title);
  out += ",\"length_s\":" + Number(t.length_s);
  out += ",\"reference_s\":" + Number(t.reference_s);
  for (const auto& [k, v] : t.metadata) {
    out += "," + JsonString(k) + ":" + JsonString(v);
  }
  out += "}}\n";
  return out;
}

Result<void> WriteChromeTrace(const timeline::Timeline& t,
                              const std::string& path) {
  const std::string text = ChromeTraceJson(t);
  const bool gz =
      path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb6");
    if (f == nullptr) {
      return IoError("cannot write '" + path + "'", "trace");
    }
    size_t done = 0;
    bool ok = true;
    while (ok && done < text.size()) {
      const unsigned n =
          static_cast<unsigned>(std::min<size_t>(text.size() - done, 1 << 20));
      ok = gzwrite(f, text.data() + done, n) == static_cast<int>(n);
      done += n;
    }
    if (gzclose(f) != Z_OK || !ok) {
      return IoError("cannot write '" + path + "'", "trace");
    }
    return {};
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return IoError("cannot write '" + path + "'", "trace");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) {
    return IoError("cannot write '" + path + "'", "trace");
  }
  return {};
}

}  // namespace scalemodel::trace
