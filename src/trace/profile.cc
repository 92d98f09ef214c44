#include "scalemodel/trace/profile.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "scalemodel/hw/dtype.h"
#include "scalemodel/net/collective.h"
#include "scalemodel/roofline/roofline.h"

namespace scalemodel::trace {

std::string OpStats::Bound() const {
  if (known_s <= 0) return "unknown";
  if (op_class == "collective") return "network";
  return compute_s >= memory_s ? "compute" : "memory";
}

namespace {

// The file as bytes through zlib (gzip or plain, by content), 1 MiB at a
// time, with an input iterator for nlohmann's SAX parser.
class Source {
 public:
  explicit Source(gzFile f, long long size,
                  std::function<void(long long, long long)> progress)
      : f_(f), size_(size), progress_(std::move(progress)), buf_(1 << 20) {
    Fill();
  }
  bool AtEnd() const { return pos_ >= len_; }
  char Get() const { return buf_[pos_]; }
  void Next() {
    if (++pos_ >= len_) Fill();
  }
  long long consumed() const { return base_ + static_cast<long long>(pos_); }
  bool failed() const { return failed_; }
  long long raw_offset() const { return gzoffset(f_); }

 private:
  void Fill() {
    base_ += static_cast<long long>(len_);
    pos_ = 0;
    len_ = 0;
    const int n = gzread(f_, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n < 0) {
      failed_ = true;
      return;
    }
    int errnum = 0;
    gzerror(f_, &errnum);
    if (errnum != Z_OK && errnum != Z_BUF_ERROR) failed_ = true;
    len_ = static_cast<size_t>(n);
    if (progress_ && (chunks_++ % 4 == 0 || n == 0)) {
      progress_(n == 0 ? size_ : gzoffset(f_), size_);
    }
  }
  gzFile f_;
  long long size_;
  std::function<void(long long, long long)> progress_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  long long base_ = 0;
  long long chunks_ = 0;
  bool failed_ = false;
};

class SourceIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;
  SourceIterator() = default;
  explicit SourceIterator(Source* s) : s_(s) {}
  char operator*() const { return s_->Get(); }
  SourceIterator& operator++() {
    s_->Next();
    return *this;
  }
  bool operator==(const SourceIterator& o) const { return Done() == o.Done(); }
  bool operator!=(const SourceIterator& o) const { return !(*this == o); }

 private:
  bool Done() const { return s_ == nullptr || s_->AtEnd(); }
  Source* s_ = nullptr;
};

// One trace event's fields that the analysis reads.
struct Event {
  std::string name, cat, ph, pid, tid;
  double ts = 0, dur = -1;
  bool bad_number = false;
  std::string bad_field;
  // args
  double ext_id = -1, flops = -1, bytes = -1;
  double in_nelems = -1, out_nelems = -1, group = -1;
  std::string long_name, coll, dtype, arg_name;
  bool hlo = false;
  std::vector<std::vector<double>> dims;
  std::vector<std::string> types;
  void Clear() {
    name.clear();
    cat.clear();
    ph.clear();
    pid.clear();
    tid.clear();
    ts = 0;
    dur = -1;
    bad_number = false;
    bad_field.clear();
    ext_id = flops = bytes = in_nelems = out_nelems = group = -1;
    long_name.clear();
    coll.clear();
    dtype.clear();
    arg_name.clear();
    hlo = false;
    dims.clear();
    types.clear();
  }
};

std::string Lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool Has(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

// Bytes per element of a PyTorch or XLA type name.
double ElementBytes(const std::string& type, hw::Dtype* dt) {
  const std::string t = Lower(type);
  *dt = hw::Dtype::kBf16;
  if (Has(t, "float8") || Has(t, "f8")) {
    *dt = hw::Dtype::kFp8;
    return 1;
  }
  if (Has(t, "bfloat16") || Has(t, "bf16")) return 2;
  if (Has(t, "half") || Has(t, "float16") || Has(t, "f16")) {
    *dt = hw::Dtype::kFp16;
    return 2;
  }
  if (Has(t, "double") || Has(t, "f64")) {
    *dt = hw::Dtype::kFp32;
    return 8;
  }
  if (Has(t, "float") || Has(t, "f32")) {
    *dt = hw::Dtype::kFp32;
    return 4;
  }
  if (Has(t, "int8") || Has(t, "char")) {
    *dt = hw::Dtype::kInt8;
    return 1;
  }
  return 2;
}

double Prod(const std::vector<double>& d, size_t from = 0, size_t to = ~0u) {
  double p = 1;
  for (size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

// FLOPs and bytes of a matmul or attention cpu_op from its input shapes;
// false when the op is neither or its shapes do not fit.
bool WorkFromShapes(const std::string& name, const Event& e, double es,
                    double* flops, double* bytes, std::string* cls) {
  const auto& d = e.dims;
  auto mm = [&](const std::vector<double>& a, const std::vector<double>& b,
                double extra) {
    if (a.size() < 2 || b.size() < 2) return false;
    const double rows = Prod(a, 0, a.size() - 1), k = a.back(), n = b.back();
    *flops = 2 * rows * k * n;
    *bytes = (Prod(a) + Prod(b) + rows * n + extra) * es;
    *cls = "matmul";
    return true;
  };
  if (name == "aten::mm" || name == "aten::bmm" || name == "aten::matmul") {
    return d.size() >= 2 && mm(d[0], d[1], 0);
  }
  if (name == "aten::addmm" || name == "aten::baddbmm") {
    return d.size() >= 3 && mm(d[1], d[2], Prod(d[0]));
  }
  if (name == "aten::linear") {
    if (d.size() < 2 || d[0].empty() || d[1].size() != 2) return false;
    const double rows = Prod(d[0], 0, d[0].size() - 1), k = d[0].back(),
                 n = d[1][0];
    *flops = 2 * rows * k * n;
    *bytes =
        (rows * k + n * k + rows * n + (d.size() > 2 ? Prod(d[2]) : 0)) * es;
    *cls = "matmul";
    return true;
  }
  const std::string l = Lower(name);
  if (Has(l, "scaled_dot_product") || Has(l, "flash_attention") ||
      Has(l, "efficient_attention") || Has(l, "cudnn_attention") ||
      Has(l, "flash_attn")) {
    *cls = "attention";
    if (d.size() < 3 || d[0].size() != 4 || d[1].size() != 4) return true;
    // q [b, h, s, d], k [b, h_kv, s_k, d]: 4 b h s s_k d (QK^T and PV, no
    // causal discount, as torch.utils.flop_counter counts it); backward
    // 2.5x.
    const double b = d[0][0], h = d[0][1], s = d[0][2], hd = d[0][3],
                 sk = d[1][2];
    const bool bwd = Has(l, "backward");
    *flops = 4 * b * h * s * sk * hd * (bwd ? 2.5 : 1.0);
    *bytes = (2 * Prod(d[0]) + Prod(d[1]) + Prod(d[2])) * es * (bwd ? 2 : 1);
    return true;
  }
  return false;
}

net::Collective CollectiveOf(const std::string& text, bool* known) {
  const std::string l = Lower(text);
  *known = true;
  if (Has(l, "allreduce") || Has(l, "all_reduce") || Has(l, "all-reduce")) {
    return net::Collective::kAllReduce;
  }
  if (Has(l, "allgather") || Has(l, "all_gather") || Has(l, "all-gather")) {
    return net::Collective::kAllGather;
  }
  if (Has(l, "reducescatter") || Has(l, "reduce_scatter") ||
      Has(l, "reduce-scatter")) {
    return net::Collective::kReduceScatter;
  }
  if (Has(l, "alltoall") || Has(l, "all_to_all") || Has(l, "all-to-all")) {
    return net::Collective::kAllToAll;
  }
  if (Has(l, "send") || Has(l, "recv") || Has(l, "permute")) {
    return net::Collective::kPermute;
  }
  *known = false;
  return net::Collective::kAllReduce;
}

// What one op instance costs at its roofline.
struct Work {
  std::string key, cls;
  double flops = -1, bytes = -1;
  hw::Dtype dtype = hw::Dtype::kBf16;
  // Collectives: the op, the whole array V (net's convention), the group.
  bool coll = false;
  net::Collective op = net::Collective::kAllReduce;
  double v = 0, group = 0, bus = 0;
};

struct Cost {
  bool known = false;
  double time = 0, compute = 0, memory = 0;
};

class Analyzer {
 public:
  Analyzer(const hw::System& sys, int top) : sys_(sys), top_(top) {}
  void Take(const Event& e);
  Result<ProfileReport> Finish(long long bytes_read);
  long long events() const { return events_; }

 private:
  struct Pending {
    double ext_id, dur;
    std::string key;  // kernel name, when the op is not one we keep
    std::string cls;
  };
  struct Kept {
    Work w;
    double dur = 0;
    long long kernels = 0;
  };
  Cost CostOf(const Work& w);
  void Add(const Work& w, double dur, long long count);
  void Device(const Event& e);
  void PyTorchCpu(const Event& e);
  void Kernel(const Event& e);
  void Xla(const Event& e);
  Work FromCollArgs(const Event& e, const std::string& key);
  void Evict();
  static constexpr size_t kKeepMax = 1 << 16;
  double max_ext_ = 0;
  size_t sweep_at_ = kKeepMax;

  const hw::System& sys_;
  int top_;
  std::string format_;
  long long events_ = 0, device_events_ = 0;
  double t_min_ = 1e300, t_max_ = -1e300, busy_ = 0;
  int steps_ = 0;
  double step_sum_ = 0;
  std::set<std::string> devices_;
  std::map<std::string, std::string> process_names_;  // pid -> name
  std::set<std::pair<std::string, std::string>> op_threads_, step_threads_;
  std::unordered_map<double, Kept> kept_;  // by External id
  std::vector<Pending> pending_;
  std::unordered_map<std::string, OpStats> ops_;
  std::map<std::string, Cost> cost_cache_;
};

Cost Analyzer::CostOf(const Work& w) {
  Cost c;
  if (w.coll) {
    if (w.v <= 0 || w.group < 2) return c;
    // The group over the system's axes, innermost first.
    std::vector<int> axes, sizes;
    double left = w.group;
    for (size_t i = 0; i < sys_.axes.size() && left > 1; ++i) {
      const int n = sys_.axes[i].size;
      if (n <= 1) continue;
      const int take = static_cast<int>(std::min<double>(n, left));
      axes.push_back(static_cast<int>(i));
      sizes.push_back(take);
      left = std::ceil(left / take);
    }
    if (axes.empty()) return c;
    net::CollectiveCost k = net::EstimateOnAxes(
        sys_, w.op, units::Bytes(w.v), axes, sizes, {net::Mode::kPeak});
    c.known = true;
    c.time = k.time.si();
    return c;
  }
  if (w.flops <= 0 && w.bytes <= 0) return c;
  double peak = sys_.chip.Peak(w.dtype).si();
  if (peak <= 0) peak = sys_.chip.Peak(hw::Dtype::kBf16).si();
  const double bw = sys_.chip.hbm_bandwidth.si();
  if (peak <= 0 || bw <= 0) return c;
  c.known = true;
  c.compute = std::max(0.0, w.flops) / peak;
  c.memory = std::max(0.0, w.bytes) / bw;
  c.time = std::max(c.compute, c.memory);
  return c;
}

void Analyzer::Add(const Work& w, double dur, long long count) {
  OpStats& s = ops_[w.key];
  if (s.count == 0) {
    s.name = w.key;
    s.op_class = w.cls;
  }
  s.count += count;
  s.measured_s += dur;
  const Cost c = CostOf(w);
  if (!c.known) return;
  s.known_s += dur;
  s.roofline_s += c.time;
  s.compute_s += c.compute;
  s.memory_s += c.memory;
  s.flops += std::max(0.0, w.flops);
  s.bytes += w.coll ? w.v : std::max(0.0, w.bytes);
  s.bus_bytes += w.bus;
}

void Analyzer::Device(const Event& e) {
  ++device_events_;
  const double a = e.ts * 1e-6, d = e.dur * 1e-6;
  t_min_ = std::min(t_min_, a);
  t_max_ = std::max(t_max_, a + d);
  busy_ += d;
  if (devices_.size() < 4096) devices_.insert(e.pid);
}

// A collective from its NCCL args (PyTorch 2.x puts them on the
// record_param_comms op and on the NCCL kernel).
Work Analyzer::FromCollArgs(const Event& e, const std::string& key) {
  Work w;
  w.key = key;
  w.cls = "collective";
  w.coll = true;
  bool known = false;
  w.op = CollectiveOf(e.coll.empty() ? e.name : e.coll, &known);
  hw::Dtype dt;
  const double es = ElementBytes(e.dtype, &dt);
  const double n = e.group;
  if (!known || n < 1 || e.in_nelems < 0) return w;
  w.group = n;
  const double in = e.in_nelems * es;
  const double out = std::max(0.0, e.out_nelems) * es;
  switch (w.op) {
    case net::Collective::kAllReduce:
      w.v = in;
      w.bus = in * 2 * (n - 1) / n;
      break;
    case net::Collective::kAllGather:
      w.v = out > 0 ? out : in * n;
      w.bus = w.v * (n - 1) / n;
      break;
    case net::Collective::kReduceScatter:
      w.v = in;
      w.bus = in * (n - 1) / n;
      break;
    case net::Collective::kAllToAll:
      w.v = in * n;
      w.bus = in * (n - 1) / n;
      break;
    case net::Collective::kPermute:
      w.v = in;
      w.bus = in;
      w.group = std::max(2.0, n);
      break;
  }
  return w;
}

void Analyzer::PyTorchCpu(const Event& e) {
  if (e.name.rfind("ProfilerStep#", 0) == 0 && e.dur > 0) {
    ++steps_;
    step_sum_ += e.dur * 1e-6;
    return;
  }
  if (e.ext_id < 0 || e.cat != "cpu_op") return;
  Work w;
  std::string shapes;
  for (const auto& t : e.dims) {
    shapes += shapes.empty() ? "[" : ", [";
    for (size_t i = 0; i < t.size(); ++i) {
      shapes += (i ? "," : "") + std::to_string(static_cast<long long>(t[i]));
    }
    shapes += "]";
  }
  const std::string key = e.name + (shapes.empty() ? "" : " " + shapes);
  if (!e.coll.empty() || e.name == "record_param_comms" ||
      e.name.rfind("c10d::", 0) == 0 || e.name.rfind("nccl:", 0) == 0) {
    w = FromCollArgs(e, e.coll.empty() ? e.name : "nccl:" + e.coll);
  } else {
    const double es = ElementBytes(e.types.empty() ? "" : e.types[0], &w.dtype);
    double f = -1, b = -1;
    std::string cls;
    const bool shaped = WorkFromShapes(e.name, e, es, &f, &b, &cls);
    if (!shaped && e.flops <= 0) return;  // not an op we keep
    w.key = key;
    w.cls = cls.empty() ? "matmul" : cls;
    w.flops = e.flops > 0 ? e.flops : f;
    w.bytes = b;
  }
  kept_[e.ext_id].w = std::move(w);
  max_ext_ = std::max(max_ext_, e.ext_id);
  if (kept_.size() > sweep_at_) {
    Evict();
    // Ops still waiting for kernels (a trace with every CPU op first) stay;
    // sweep again only once as many more have come.
    sweep_at_ = std::max(kKeepMax, 2 * kept_.size());
  }
}

// Bounded memory: ops whose kernels have been seen and that are far behind
// the newest op (External ids grow with time) are added up and dropped; a
// kernel of theirs that still came later counts by its own name.
void Analyzer::Evict() {
  const double before = max_ext_ - kKeepMax / 2.0;
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (it->second.kernels > 0 && it->first < before) {
      Add(it->second.w, it->second.dur, 1);
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

std::string KernelClass(const Event& e) {
  const std::string n = Lower(e.name), c = Lower(e.cat);
  if (Has(c, "memcpy") || Has(c, "memset")) return "memcpy";
  if (Has(n, "nccl")) return "collective";
  if (Has(n, "flash") || Has(n, "fmha") || Has(n, "attention") ||
      Has(n, "attn")) {
    return "attention";
  }
  if (Has(n, "gemm") || Has(n, "cutlass") || Has(n, "xmma") ||
      Has(n, "nvjet") || Has(n, "cublas") || Has(n, "matmul")) {
    return "matmul";
  }
  return "elementwise";
}

std::string ShortName(const std::string& n) {
  std::string s = n.substr(0, n.find('('));
  if (s.size() > 90) s = s.substr(0, 87) + "...";
  return s;
}

void Analyzer::Kernel(const Event& e) {
  Device(e);
  const double dur = e.dur * 1e-6;
  if (!e.coll.empty() && e.in_nelems >= 0) {
    Add(FromCollArgs(e, "nccl:" + e.coll), dur, 1);
    return;
  }
  if (e.ext_id >= 0) {
    auto it = kept_.find(e.ext_id);
    if (it != kept_.end()) {
      it->second.dur += dur;
      ++it->second.kernels;
      return;
    }
    pending_.push_back({e.ext_id, dur, ShortName(e.name), KernelClass(e)});
    return;
  }
  Work w;
  w.key = ShortName(e.name);
  w.cls = KernelClass(e);
  Add(w, dur, 1);
}

void Analyzer::Xla(const Event& e) {
  Device(e);
  Work w;
  w.key = e.name;
  const std::string n = Lower(e.name), l = Lower(e.long_name);
  bool coll = false;
  const net::Collective op = CollectiveOf(n, &coll);
  coll = coll && !Has(n, "fusion") && !Has(n, "-done");
  // The result's element type and count ("%x = bf16[8,4096]{1,0} ...").
  double elems = -1, es = 2;
  if (const size_t eq = e.long_name.find("= "); eq != std::string::npos) {
    const size_t open = e.long_name.find('[', eq);
    const size_t close = e.long_name.find(']', open);
    if (open != std::string::npos && close != std::string::npos) {
      es = ElementBytes(e.long_name.substr(eq + 2, open - eq - 2), &w.dtype);
      elems = 1;
      size_t p = open + 1;
      while (p < close) {
        elems *= std::strtod(e.long_name.c_str() + p, nullptr);
        p = e.long_name.find(',', p);
        p = p == std::string::npos || p > close ? close : p + 1;
      }
    }
  }
  if (coll) {
    w.cls = "collective";
    w.coll = true;
    w.op = op;
    // The group: the first of replica_groups={{0,1,2,3},...}.
    double n_group = -1;
    if (const size_t g = l.find("replica_groups={{"); g != std::string::npos) {
      const size_t end = l.find('}', g + 17);
      n_group = 1 + static_cast<double>(
                        std::count(l.begin() + static_cast<long>(g) + 17,
                                   l.begin() + static_cast<long>(end), ','));
    }
    if (n_group >= 2 && elems > 0) {
      const double r = elems * es;
      w.group = n_group;
      w.v = op == net::Collective::kReduceScatter ||
                    op == net::Collective::kAllToAll
                ? r * n_group
                : r;
      const double f = (n_group - 1) / n_group;
      w.bus = op == net::Collective::kAllReduce  ? 2 * f * w.v
              : op == net::Collective::kPermute  ? w.v
              : op == net::Collective::kAllToAll ? f * r
                                                 : f * w.v;
    }
  } else {
    w.cls = Has(n, "convolution") || Has(n, "dot") || Has(l, "convolution(") ||
                    Has(l, " dot(")
                ? "matmul"
            : Has(n, "attention") || Has(l, "flash") || Has(l, "attention")
                ? "attention"
            : Has(n, "copy") || Has(n, "dynamic-update-slice") ? "memcpy"
                                                               : "elementwise";
    w.flops = e.flops;
    w.bytes = e.bytes;
  }
  Add(w, e.dur * 1e-6, 1);
}

void Analyzer::Take(const Event& e) {
  ++events_;
  if (e.ph == "M") {
    if (e.name == "process_name") process_names_[e.pid] = e.arg_name;
    if (e.name == "thread_name") {
      if (Has(e.arg_name, "XLA Ops")) op_threads_.insert({e.pid, e.tid});
      if (e.arg_name == "Steps") step_threads_.insert({e.pid, e.tid});
    }
    return;
  }
  if (e.ph != "X" || e.dur < 0) return;
  const std::string c = Lower(e.cat);
  if (c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" ||
      c == "memcpy" || c == "memset") {
    format_ = "pytorch";
    Kernel(e);
    return;
  }
  if (c == "cpu_op" || c == "user_annotation") {
    if (format_.empty()) format_ = "pytorch";
    PyTorchCpu(e);
    return;
  }
  const auto pn = process_names_.find(e.pid);
  const bool device = pn != process_names_.end() && Has(pn->second, "/device:");
  if (step_threads_.count({e.pid, e.tid}) > 0) {
    ++steps_;
    step_sum_ += e.dur * 1e-6;
    return;
  }
  const bool threads_named = !op_threads_.empty();
  if ((threads_named && op_threads_.count({e.pid, e.tid}) > 0) ||
      (!threads_named && (e.hlo || (device && !e.long_name.empty())))) {
    if (format_.empty()) format_ = "xla";
    Xla(e);
  }
}

Result<ProfileReport> Analyzer::Finish(long long bytes_read) {
  // Kernels of the ops kept, and the kernels that came before their op.
  for (const Pending& p : pending_) {
    auto it = kept_.find(p.ext_id);
    if (it != kept_.end()) {
      it->second.dur += p.dur;
      ++it->second.kernels;
    } else {
      Work w;
      w.key = p.key;
      w.cls = p.cls;
      Add(w, p.dur, 1);
    }
  }
  for (auto& [id, k] : kept_) {
    if (k.kernels > 0) Add(k.w, k.dur, 1);
  }
  ProfileReport r;
  r.format = format_;
  r.events = events_;
  r.device_events = device_events_;
  if (device_events_ == 0) {
    return InvalidArgument(
        "found no GPU kernels and no XLA device ops in " +
            std::to_string(events_) +
            " events; expected a PyTorch profiler trace (kernel events) or "
            "a JAX/XLA trace (XLA Ops)",
        "trace");
  }
  r.devices = std::max<int>(1, static_cast<int>(devices_.size()));
  r.span_s = t_max_ - t_min_;
  r.busy_s = busy_;
  r.steps = steps_;
  r.step_s = steps_ > 0 ? step_sum_ / steps_ : 0;
  r.bytes_read = bytes_read;
  std::map<std::string, OpStats> classes;
  for (auto& [key, s] : ops_) {
    OpStats& c = classes[s.op_class];
    c.name = c.op_class = s.op_class;
    c.count += s.count;
    c.measured_s += s.measured_s;
    c.known_s += s.known_s;
    c.roofline_s += s.roofline_s;
    c.compute_s += s.compute_s;
    c.memory_s += s.memory_s;
    c.flops += s.flops;
    c.bytes += s.bytes;
    c.bus_bytes += s.bus_bytes;
    r.ops.push_back(s);
  }
  for (auto& [k, c] : classes) r.classes.push_back(c);
  auto by_time = [](const OpStats& a, const OpStats& b) {
    return a.measured_s != b.measured_s ? a.measured_s > b.measured_s
                                        : a.name < b.name;
  };
  std::sort(r.classes.begin(), r.classes.end(), by_time);
  std::sort(r.ops.begin(), r.ops.end(), by_time);
  if (static_cast<int>(r.ops.size()) > top_) r.ops.resize(top_);
  return r;
}

// nlohmann's SAX interface over the trace: finds the traceEvents array (or a
// top-level array of events) and hands each event to the Analyzer.
class Sax {
 public:
  explicit Sax(Analyzer* a) : a_(a) {}
  using json = nlohmann::json;
  bool null() { return true; }
  bool boolean(bool /*v*/) { return true; }
  bool number_integer(json::number_integer_t v) {
    return Number(static_cast<double>(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Number(static_cast<double>(v));
  }
  bool number_float(json::number_float_t v, const json::string_t& /*s*/) {
    return Number(v);
  }
  bool string(json::string_t& v);
  bool binary(json::binary_t& /*v*/) { return true; }
  bool start_object(std::size_t /*n*/);
  bool end_object();
  bool start_array(std::size_t /*n*/);
  bool end_array() {
    Pop();
    return true;
  }
  bool key(json::string_t& k) {
    keys_[depth_] = k;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string& /*token*/,
                   const nlohmann::detail::exception& ex) {
    error_pos_ = static_cast<long long>(pos);
    error_ = ex.what();
    return false;
  }

  bool found_events() const { return events_depth_ > 0; }
  long long error_pos_ = -1;
  std::string error_;
  std::string root_;  // "object", "array", or a scalar's kind

 private:
  void Push() {
    ++depth_;
    if (keys_.size() <= static_cast<size_t>(depth_)) keys_.resize(depth_ + 1);
    keys_[depth_].clear();
  }
  void Pop() { --depth_; }
  bool Number(double v);
  // Inside the event's args object, `rel` containers below the events
  // array (2: the args' own values).
  bool InArgs(int rel) const {
    return depth_ == events_depth_ + rel && keys_[events_depth_ + 1] == "args";
  }

  Analyzer* a_;
  int depth_ = 0;
  std::vector<std::string> keys_ = std::vector<std::string>(8);
  int events_depth_ = 0;  // depth of the events array (0: not found yet)
  bool in_event_ = false;
  Event e_;
};

bool Sax::start_object(std::size_t /*n*/) {
  if (depth_ == 0) root_ = "object";
  Push();
  if (events_depth_ > 0 && depth_ == events_depth_ + 1) {
    in_event_ = true;
    e_.Clear();
  }
  return true;
}

bool Sax::end_object() {
  if (in_event_ && depth_ == events_depth_ + 1) {
    in_event_ = false;
    if (e_.bad_number) {
      error_ = "event " + std::to_string(a_->events() + 1) + " (" + e_.name +
               "): expected a number for " + e_.bad_field;
      return false;
    }
    a_->Take(e_);
  }
  Pop();
  return true;
}

bool Sax::start_array(std::size_t /*n*/) {
  if (depth_ == 0) root_ = "array";
  Push();
  if (events_depth_ == 0 &&
      (depth_ == 1 || (depth_ == 2 && keys_[1] == "traceEvents"))) {
    events_depth_ = depth_;
  }
  if (in_event_ && InArgs(4) && keys_[events_depth_ + 2] == "Input Dims") {
    e_.dims.emplace_back();
  }
  return true;
}

bool Sax::Number(double v) {
  if (depth_ == 0) root_ = "number";
  if (!in_event_) return true;
  const int ev = events_depth_ + 1;
  if (depth_ == ev) {
    const std::string& k = keys_[ev];
    if (k == "ts") e_.ts = v;
    if (k == "dur") e_.dur = v;
    if (k == "pid") e_.pid = std::to_string(static_cast<long long>(v));
    if (k == "tid") e_.tid = std::to_string(static_cast<long long>(v));
    return true;
  }
  if (InArgs(2)) {
    const std::string& k = keys_[ev + 1];
    if (k == "External id") e_.ext_id = v;
    if (k == "flops" || k == "model_flops") e_.flops = v;
    if (k == "bytes_accessed" || k == "raw_bytes_accessed") e_.bytes = v;
    if (k == "In msg nelems" || k == "In msg size") e_.in_nelems = v;
    if (k == "Out msg nelems" || k == "Out msg size") e_.out_nelems = v;
    if (k == "Group size") e_.group = v;
    return true;
  }
  if (InArgs(4) && keys_[ev + 1] == "Input Dims" && !e_.dims.empty()) {
    e_.dims.back().push_back(v);
  }
  return true;
}

bool Sax::string(json::string_t& v) {
  if (depth_ == 0) root_ = "string";
  if (!in_event_) return true;
  const int ev = events_depth_ + 1;
  if (depth_ == ev) {
    const std::string& k = keys_[ev];
    if (k == "name") e_.name = v;
    if (k == "cat") e_.cat = v;
    if (k == "ph") e_.ph = v;
    if (k == "pid") e_.pid = v;
    if (k == "tid") e_.tid = v;
    if (k == "ts" || k == "dur") {
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0') {
        e_.bad_number = true;
        e_.bad_field = k + " (found \"" + v.substr(0, 20) + "\")";
      } else {
        (k == "ts" ? e_.ts : e_.dur) = d;
      }
    }
    return true;
  }
  if (InArgs(2)) {
    const std::string& k = keys_[ev + 1];
    if (k == "long_name") e_.long_name = v;
    if (k == "hlo_op" || k == "hlo_module") e_.hlo = true;
    if (k == "Collective name") e_.coll = v;
    if (k == "dtype") e_.dtype = v;
    if (k == "name") e_.arg_name = v;
    return true;
  }
  if (InArgs(3) && keys_[ev + 1] == "Input type") e_.types.push_back(v);
  return true;
}

}  // namespace

Result<ProfileReport> ReadProfile(const std::string& path,
                                  const hw::System& system,
                                  const ProfileOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return IoError("cannot open '" + path + "': no such file", "trace");
  }
  if (S_ISDIR(st.st_mode)) {
    return IoError("'" + path + "' is a directory; expected a trace file",
                   "trace");
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return IoError("cannot open '" + path + "'", "trace");
  gzbuffer(f, 1 << 18);
  Analyzer analyzer(system, options.top);
  Sax sax(&analyzer);
  Source src(f, static_cast<long long>(st.st_size), options.progress);
  bool ok = true;
  if (!src.failed()) {
    ok =
        nlohmann::json::sax_parse(SourceIterator(&src), SourceIterator(), &sax);
  }
  const bool corrupt = src.failed();
  const long long at = src.consumed();
  gzclose(f);
  if (corrupt) {
    return ParseError("'" + path +
                          "' is not a readable gzip file (corrupt "
                          "data after " +
                          std::to_string(at) + " bytes)",
                      "trace");
  }
  if (!ok) {
    if (sax.error_pos_ < 0) {
      return ParseError("'" + path + "': " + sax.error_, "trace");
    }
    return ParseError("'" + path + "' is not JSON: parse error at byte " +
                          std::to_string(sax.error_pos_) +
                          "; expected a Chrome trace-event file",
                      "trace");
  }
  if (!sax.found_events()) {
    return ParseError(
        "'" + path + "' has no traceEvents array (found a JSON " +
            (sax.root_.empty() ? std::string("value") : sax.root_) +
            "); expected a Chrome trace {\"traceEvents\": [...]} or an "
            "array of events",
        "trace");
  }
  return analyzer.Finish(static_cast<long long>(st.st_size));
}

}  // namespace scalemodel::trace
