#include "scalemodel/hw/system.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "scalemodel/base/strings.h"

namespace scalemodel::hw {

std::string_view AxisKindName(AxisKind k) {
  switch (k) {
    case AxisKind::kIci:
      return "ici";
    case AxisKind::kDcn:
      return "dcn";
    case AxisKind::kNvlink:
      return "nvlink";
    case AxisKind::kScaleOut:
      return "scale-out";
  }
  return "?";
}

int System::num_chips() const {
  int n = 1;
  for (const PhysicalAxis& a : axes) n *= a.size;
  return n;
}

const PhysicalAxis* System::FindAxis(std::string_view axis_name) const {
  for (const PhysicalAxis& a : axes) {
    if (a.name == axis_name) return &a;
  }
  return nullptr;
}

std::vector<std::string> System::AxisNames() const {
  std::vector<std::string> names;
  for (const PhysicalAxis& a : axes) names.push_back(a.name);
  return names;
}

bool HasWraparound(const IciLinks& ici, int size) {
  // A ring of one or two chips gains nothing from a wraparound link.
  if (size <= 2) return false;
  switch (ici.wraparound) {
    case WraparoundRule::kNone:
      return false;
    case WraparoundRule::kFullAxis:
      return size == ici.wrap_unit;
    case WraparoundRule::kCubeMultiple:
      return size % ici.wrap_unit == 0;
  }
  return false;
}

namespace {

// Parses "16x20x28" into {16, 20, 28}. Each piece must be a positive integer.
Result<std::vector<int>> ParseDims(std::string_view text,
                                   std::string_view whole) {
  std::vector<int> dims;
  for (const std::string& piece : Split(text, 'x')) {
    std::string p(Trim(piece));
    char* end = nullptr;
    long v = p.empty() ? 0 : std::strtol(p.c_str(), &end, 10);
    if (p.empty() || *end != '\0' || v <= 0 || v > 1000000) {
      return InvalidArgument(
          "expected a shape of positive integers such as "
          "'16x16' or '8x128', got '" +
          std::string(whole) + "'");
    }
    dims.push_back(static_cast<int>(v));
  }
  return dims;
}

std::string JoinDims(const std::vector<int>& dims) {
  std::string s;
  for (int d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

Result<System> BuildTpu(const Chip& chip, std::string_view shape) {
  const IciLinks& ici = *chip.ici;
  std::string_view slice_part = shape;
  int num_slices = 1;
  size_t slash = shape.find('/');
  if (slash != std::string_view::npos) {
    slice_part = shape.substr(0, slash);
    std::string n(Trim(shape.substr(slash + 1)));
    char* end = nullptr;
    long v = n.empty() ? 0 : std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v <= 0 || v > 100000) {
      return InvalidArgument(
          "expected a slice count after '/' such as "
          "'16x16x16/4', got '" +
          std::string(shape) + "'");
    }
    num_slices = static_cast<int>(v);
  }
  auto dims = ParseDims(slice_part, shape);
  if (!dims) return tl::unexpected(dims.error());
  if (static_cast<int>(dims->size()) != ici.torus_dims) {
    return InvalidArgument(
        chip.id + " is a " + std::to_string(ici.torus_dims) +
        "D torus: expected " + std::to_string(ici.torus_dims) +
        " dimensions such as '" + JoinDims(ici.max_slice) + "', got " +
        std::to_string(dims->size()) + " in '" + std::string(shape) + "'");
  }
  long slice_chips = 1;
  long max_chips = 1;
  int max_axis = 0;
  for (int d : *dims) slice_chips *= d;
  for (int d : ici.max_slice) {
    max_chips *= d;
    max_axis = std::max(max_axis, d);
  }
  for (int d : *dims) {
    if (d > max_axis) {
      return InvalidArgument(
          "slice axis of " + std::to_string(d) + " chips is longer than " +
          chip.id + "'s largest pod axis (" + std::to_string(max_axis) +
          ", pod " + JoinDims(ici.max_slice) +
          "); use '/N' for several "
          "slices over DCN");
    }
  }
  if (slice_chips > max_chips) {
    return InvalidArgument("slice " + JoinDims(*dims) + " has " +
                           std::to_string(slice_chips) + " chips, more than " +
                           chip.id + "'s pod of " + std::to_string(max_chips) +
                           " (" + JoinDims(ici.max_slice) + ")");
  }
  if (num_slices > 1 && !chip.scale_out) {
    return InvalidArgument(chip.id +
                           " has no DCN bandwidth in the catalog, so it "
                           "cannot be used across slices");
  }
  // v4/v5p: wraparound needs the slice to be built of whole 4x4x4 cubes.
  bool whole_cubes = true;
  if (ici.wraparound == WraparoundRule::kCubeMultiple) {
    for (int d : *dims) whole_cubes = whole_cubes && d % ici.wrap_unit == 0;
  }
  System sys;
  sys.chip = chip;
  sys.id = chip.id + ":" + std::string(Trim(shape));
  static const char* kNames[] = {"x", "y", "z"};
  for (size_t i = 0; i < dims->size(); ++i) {
    PhysicalAxis a;
    a.name = kNames[i];
    a.kind = AxisKind::kIci;
    a.size = (*dims)[i];
    a.wraparound = whole_cubes && HasWraparound(ici, a.size);
    a.bandwidth = ici.link_bandwidth;
    a.hop_latency = ici.hop_latency;
    sys.axes.push_back(a);
  }
  if (chip.scale_out) {
    PhysicalAxis a;
    a.name = "dcn";
    a.kind = AxisKind::kDcn;
    a.size = num_slices;
    a.bandwidth = chip.scale_out->bandwidth;
    a.hop_latency = chip.scale_out->latency;
    sys.axes.push_back(a);
  }
  sys.name = chip.name + ", " +
             (num_slices > 1 ? std::to_string(num_slices) + " slices of "
                             : std::string("one slice of ")) +
             JoinDims(*dims);
  return sys;
}

Result<System> BuildGpu(const Chip& chip, std::string_view shape) {
  auto dims = ParseDims(shape, shape);
  if (!dims) return tl::unexpected(dims.error());
  if (dims->size() > 2) {
    return InvalidArgument(
        "expected a GPU shape GPUS_PER_DOMAIN x DOMAINS such as '8x128', "
        "got '" +
        std::string(shape) + "'");
  }
  int per_domain = (*dims)[0];
  int domains = dims->size() == 2 ? (*dims)[1] : 1;
  int domain_size = chip.nvlink ? chip.nvlink->domain_size : 1;
  if (per_domain > domain_size) {
    return InvalidArgument(
        std::to_string(per_domain) + " GPUs per NVLink domain is more than " +
        chip.id + "'s domain of " + std::to_string(domain_size) +
        " (expected e.g. '" + std::to_string(domain_size) + "x" +
        std::to_string(std::max(1, per_domain / domain_size)) + "')");
  }
  if (domains > 1 && !chip.scale_out) {
    return InvalidArgument(chip.id +
                           " has no scale-out network in the catalog, so it "
                           "cannot span several NVLink domains");
  }
  System sys;
  sys.chip = chip;
  sys.id = chip.id + ":" + std::string(Trim(shape));
  PhysicalAxis node;
  node.name = "node";
  node.kind = AxisKind::kNvlink;
  node.size = per_domain;
  if (chip.nvlink) {
    node.bandwidth = chip.nvlink->bandwidth;
    node.hop_latency = chip.nvlink->hop_latency;
    node.in_network_reduction = chip.nvlink->in_network_reduction;
  }
  sys.axes.push_back(node);
  PhysicalAxis net;
  net.name = "net";
  net.kind = AxisKind::kScaleOut;
  net.size = domains;
  if (chip.scale_out) {
    net.bandwidth = chip.scale_out->bandwidth;
    net.hop_latency = chip.scale_out->latency;
    net.in_network_reduction = chip.scale_out->in_network_reduction;
  }
  sys.axes.push_back(net);
  sys.name = chip.name + ", " + std::to_string(domains) + " x " +
             std::to_string(per_domain) + "-GPU NVLink domains";
  return sys;
}

}  // namespace

Result<System> SubSystem(const System& sys, int chips) {
  const int total = sys.num_chips();
  if (chips <= 0 || chips > total) {
    return InvalidArgument("cannot take " + std::to_string(chips) +
                               " chips out of " + sys.id + " (" +
                               std::to_string(total) + " chips)",
                           "chips");
  }
  std::string shape;
  if (!sys.chip.is_tpu()) {
    const PhysicalAxis* node = sys.FindAxis("node");
    int d = node ? node->size : 1;
    int per = std::min(d, chips);
    if (chips % per != 0) {
      return InvalidArgument(std::to_string(chips) +
                                 " chips do not fill whole " +
                                 std::to_string(d) + "-GPU NVLink domains",
                             "chips");
    }
    shape = std::to_string(per) + "x" + std::to_string(chips / per);
  } else {
    // Keep the slice count; shrink the slice to chips / slices chips.
    const PhysicalAxis* dcn = sys.FindAxis("dcn");
    int slices = dcn ? dcn->size : 1;
    int per_slice = chips % slices == 0 ? chips / slices : 0;
    if (per_slice == 0) slices = 1, per_slice = chips;
    std::vector<int> dims;
    for (const PhysicalAxis& a : sys.axes) {
      if (a.kind == AxisKind::kIci) dims.push_back(a.size);
    }
    // The most cubic shape with per-slice chips whose axes fit the original.
    std::vector<int> best;
    double best_score = -1;
    std::vector<int> cur(dims.size(), 1);
    std::function<void(size_t, int)> rec = [&](size_t i, int left) {
      if (i + 1 == dims.size()) {
        if (left > dims[i]) return;
        cur[i] = left;
        int mx = *std::max_element(cur.begin(), cur.end());
        int mn = *std::min_element(cur.begin(), cur.end());
        double score = static_cast<double>(mn) / mx;
        if (score > best_score) {
          best_score = score;
          best = cur;
        }
        return;
      }
      for (int v = 1; v <= dims[i] && v <= left; ++v) {
        if (left % v) continue;
        cur[i] = v;
        rec(i + 1, left / v);
      }
    };
    if (!dims.empty()) rec(0, per_slice);
    if (best.empty()) {
      return InvalidArgument("no " + sys.chip.id + " slice of " +
                                 std::to_string(per_slice) +
                                 " chips fits inside " + sys.id,
                             "chips");
    }
    for (int v : best) shape += (shape.empty() ? "" : "x") + std::to_string(v);
    if (slices > 1) shape += "/" + std::to_string(slices);
  }
  auto sub = BuildSystem(sys.chip, shape);
  if (!sub) return sub;
  // Keep named-system detail on the scale-out axes.
  for (PhysicalAxis& a : sub->axes) {
    const PhysicalAxis* orig = sys.FindAxis(a.name);
    if (orig && (a.kind == AxisKind::kScaleOut || a.kind == AxisKind::kDcn)) {
      a.bandwidth = orig->bandwidth;
      a.tiers = orig->tiers;
      a.in_network_reduction = orig->in_network_reduction;
    }
  }
  return sub;
}

Result<System> BuildSystem(const Chip& chip, std::string_view shape) {
  if (Trim(shape).empty()) {
    return InvalidArgument(
        "expected a shape after '" + chip.id + ":' such as '" +
        std::string(chip.is_tpu() ? "16x16" : "8x128") + "'");
  }
  if (chip.is_tpu()) {
    if (!chip.ici) {
      return InvalidArgument(chip.id + " has no ICI links in the catalog");
    }
    return BuildTpu(chip, shape);
  }
  return BuildGpu(chip, shape);
}

}  // namespace scalemodel::hw
