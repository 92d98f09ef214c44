#include "scalemodel/net/collective.h"

#include <algorithm>

#include "scalemodel/base/check.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::net {

using units::Bytes;
using units::Seconds;

namespace {

struct Level {
  Seconds bandwidth_time;
  Seconds latency_time;
  std::string algorithm;
};

Seconds Combine(LinkModel model, Seconds bw, Seconds lat) {
  return model == LinkModel::kBook ? units::Max(bw, lat) : bw + lat;
}

}  // namespace

CollectiveCost EstimateOnAxes(const hw::System& system, Collective op,
                              Bytes bytes, const std::vector<int>& axis_indices,
                              const std::vector<int>& sizes,
                              const CollectiveOptions& options) {
  SCALEMODEL_CHECK(axis_indices.size() == sizes.size());
  const bool peak = options.mode == Mode::kPeak;
  const LinkModel model = peak ? LinkModel::kBook : LinkModel::kAlphaBeta;
  FabricEfficiency eff =
      peak ? FabricEfficiency{} : RealisticEfficiency(system.chip);
  auto dims = BuildDimensions(system, eff);

  CollectiveCost out;
  out.op = op;
  out.bytes = bytes;
  out.group_size = 1;
  for (int s : sizes) out.group_size *= s;

  std::vector<Level> levels;
  // 1) All ICI axes at once: every link of every axis carries a share, so the
  //    bandwidths add (the book's multi-axis form) and the hop counts add.
  std::vector<size_t> ici, others;
  for (size_t k = 0; k < axis_indices.size(); ++k) {
    SCALEMODEL_CHECK(axis_indices[k] >= 0 &&
                     axis_indices[k] < static_cast<int>(dims.size()));
    if (system.axes[axis_indices[k]].kind == hw::AxisKind::kIci) {
      ici.push_back(k);
    } else {
      others.push_back(k);
    }
  }
  int inner_group = 1;
  if (!ici.empty()) {
    int n_total = 1;
    for (size_t k : ici) n_total *= sizes[k];
    // An all-to-all over ICI and outer axes exchanges, inside one ICI group,
    // only the part of the array that group holds: V n_ici / N. (Every
    // chip holds V / N; the ICI step moves that among its n_ici peers.)
    const Bytes ici_bytes =
        op == Collective::kAllToAll
            ? bytes * (static_cast<double>(n_total) / out.group_size)
            : bytes;
    std::vector<DimensionCost> costs;
    double inv_sum = 0;  // sum of 1/T_bw_i: bandwidths add
    Seconds a2a_bw, lat;
    for (size_t k : ici) {
      DimensionCost c =
          dims[axis_indices[k]]->Cost(op, ici_bytes, sizes[k], model);
      costs.push_back(c);
      if (c.bandwidth_time.si() > 0) inv_sum += 1.0 / c.bandwidth_time.si();
      lat += c.latency_time;
      // All-to-all on a torus: (V/N) max_i(n_i) / (4 W) = max_i (n_i/N) T_i.
      a2a_bw = units::Max(
          a2a_bw, (static_cast<double>(sizes[k]) / n_total) * c.bandwidth_time);
    }
    // A chip cannot receive faster than all its incoming ICI links: (N-1)/N
    // of V over 2 links per ring axis, 1 per line (the corner chip of a line
    // has one neighbour). The book's form V / sum(W) respects this on rings;
    // on lines the per-axis (n-1)/n factors would otherwise overshoot.
    double in_links = 0;
    for (size_t k : ici) {
      const hw::PhysicalAxis& ax = system.axes[axis_indices[k]];
      bool ring = ax.wraparound && sizes[k] == ax.size;
      in_links += (ring ? 2.0 : 1.0) * eff.ici * ax.bandwidth.si();
    }
    Seconds floor_bw(in_links > 0
                         ? ici_bytes.si() * (n_total - 1.0) / n_total / in_links
                         : 0.0);
    if (op == Collective::kAllReduce) floor_bw = 2 * floor_bw;
    Seconds bw;
    if (op == Collective::kAllToAll) {
      bw = a2a_bw;
    } else if (op == Collective::kPermute) {
      for (const DimensionCost& c : costs)
        bw = units::Max(bw, c.bandwidth_time);
    } else if (inv_sum > 0) {
      bw = units::Max(Seconds(1.0 / inv_sum), floor_bw);
    }
    std::string alg = costs.front().algorithm;
    if (ici.size() > 1) {
      std::string names;
      for (size_t k : ici) {
        names += (names.empty() ? "" : "+") + system.axes[axis_indices[k]].name;
      }
      alg = "ICI " + names + " together (links of all axes in parallel)";
    }
    levels.push_back({bw, lat, alg});
    for (size_t i = 0; i < ici.size(); ++i) {
      size_t k = ici[i];
      AxisCost a;
      a.axis = system.axes[axis_indices[k]].name;
      a.size = sizes[k];
      double share = inv_sum > 0 && costs[i].bandwidth_time.si() > 0
                         ? (1.0 / costs[i].bandwidth_time.si()) / inv_sum
                         : 1.0 / ici.size();
      a.bytes = op == Collective::kAllToAll || op == Collective::kPermute
                    ? ici_bytes
                    : share * bytes;
      a.bandwidth_time = bw;
      a.latency_time = costs[i].latency_time;
      a.time = Combine(model, bw, lat);
      a.algorithm = costs[i].algorithm;
      out.per_axis.push_back(a);
    }
    inner_group = n_total;
  }
  // 2) Other levels, inside out: each works on the data one chip holds after
  //    the inner levels, V / (inner group), and the levels pipeline.
  for (size_t k : others) {
    // An all-to-all level k exchanges each chip's V / N among its n_k peers
    // (an array of V n_k / N); the other collectives work on what one chip
    // holds after the inner levels, V / (inner group).
    Bytes level_bytes =
        op == Collective::kAllToAll
            ? bytes * (static_cast<double>(sizes[k]) / out.group_size)
            : bytes / static_cast<double>(inner_group);
    DimensionCost c =
        dims[axis_indices[k]]->Cost(op, level_bytes, sizes[k], model);
    levels.push_back({c.bandwidth_time, c.latency_time, c.algorithm});
    AxisCost a;
    a.axis = system.axes[axis_indices[k]].name;
    a.size = sizes[k];
    a.bytes = level_bytes;
    a.time = c.time;
    a.bandwidth_time = c.bandwidth_time;
    a.latency_time = c.latency_time;
    a.algorithm = c.algorithm;
    out.per_axis.push_back(a);
    inner_group *= sizes[k];
  }
  std::string alg;
  for (const Level& l : levels) {
    out.bandwidth_time = units::Max(out.bandwidth_time, l.bandwidth_time);
    out.latency_time += l.latency_time;
    alg += (alg.empty() ? "" : ", then ") + l.algorithm;
  }
  out.algorithm = alg.empty() ? "none" : alg;
  out.time = Combine(model, out.bandwidth_time, out.latency_time);
  if (!peak && out.group_size > 1) out.time += eff.launch;
  out.latency_bound = out.latency_time > out.bandwidth_time;
  return out;
}

Result<CollectiveCost> EstimateCollective(const hw::System& system,
                                          Collective op, Bytes bytes,
                                          const std::vector<std::string>& axes,
                                          const CollectiveOptions& options) {
  if (!(bytes.si() > 0)) {
    return InvalidArgument("expected a positive number of bytes", "bytes");
  }
  if (axes.empty()) {
    return InvalidArgument(
        "name at least one axis of " + system.id + " (it has " +
            [&] {
              std::string s;
              for (auto& n : system.AxisNames()) {
                s += (s.empty() ? "" : ", ") + n;
              }
              return s;
            }() +
            ")",
        "axes");
  }
  std::vector<int> idx, sizes;
  for (const std::string& raw : axes) {
    std::string name(Trim(raw));
    int found = -1;
    for (size_t i = 0; i < system.axes.size(); ++i) {
      if (system.axes[i].name == name) found = static_cast<int>(i);
    }
    if (found < 0) {
      std::string list;
      for (auto& n : system.AxisNames()) list += (list.empty() ? "" : ", ") + n;
      return InvalidArgument("unknown axis '" + name + "' for " + system.id +
                                 DidYouMean(name, system.AxisNames()) +
                                 "; its axes are " + list,
                             "axes");
    }
    if (std::find(idx.begin(), idx.end(), found) != idx.end()) {
      return InvalidArgument("axis '" + name + "' is named twice", "axes");
    }
    idx.push_back(found);
    sizes.push_back(system.axes[found].size);
  }
  return EstimateOnAxes(system, op, bytes, idx, sizes, options);
}

}  // namespace scalemodel::net
