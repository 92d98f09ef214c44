#include "scalemodel/net/topology.h"

#include <algorithm>

#include "scalemodel/base/check.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::net {

using units::Seconds;

std::string_view CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kPermute:
      return "permute";
  }
  return "?";
}

Result<Collective> ParseCollective(std::string_view text) {
  std::string t;
  for (char ch : ToLower(Trim(text))) {
    if (ch != '-' && ch != '_') t += ch;
  }
  struct Name {
    const char* text;
    Collective op;
  };
  static const Name kNames[] = {
      {"allgather", Collective::kAllGather},
      {"ag", Collective::kAllGather},
      {"reducescatter", Collective::kReduceScatter},
      {"rs", Collective::kReduceScatter},
      {"allreduce", Collective::kAllReduce},
      {"ar", Collective::kAllReduce},
      {"alltoall", Collective::kAllToAll},
      {"a2a", Collective::kAllToAll},
      {"permute", Collective::kPermute},
      {"collectivepermute", Collective::kPermute},
      {"sendrecv", Collective::kPermute},
  };
  for (const Name& n : kNames) {
    if (t == n.text) return n.op;
  }
  std::vector<std::string> names = {"all-gather", "reduce-scatter",
                                    "all-reduce", "all-to-all", "permute"};
  return InvalidArgument("unknown collective '" + std::string(text) + "'" +
                         DidYouMean(text, names) +
                         "; expected all-gather, reduce-scatter, all-reduce, "
                         "all-to-all or permute");
}

FabricEfficiency RealisticEfficiency(const hw::Chip& chip) {
  FabricEfficiency e;
  e.ici = 0.95;
  e.nvlink = 0.80;
  e.nvls = 0.61;
  e.scale_out = 0.92;
  e.dcn = 0.90;
  // The chip's catalog value (GPUs 10 us, TPUs 2 us); none for a chip built
  // outside the catalog, which fills every efficiency field.
  e.launch = chip.efficiency.collective_launch.value_or(units::Seconds(0));
  return e;
}

namespace {

// One hop: the book overlaps latency with the transfer; alpha-beta adds.
Seconds Hop(LinkModel model, Seconds latency, Seconds transfer) {
  return model == LinkModel::kBook ? units::Max(latency, transfer)
                                   : latency + transfer;
}

DimensionCost Steps(LinkModel model, int steps, Seconds latency,
                    Seconds transfer_per_step, std::string algorithm) {
  DimensionCost c;
  c.bandwidth_time = steps * transfer_per_step;
  c.latency_time = steps * latency;
  c.time = steps * Hop(model, latency, transfer_per_step);
  c.algorithm = std::move(algorithm);
  return c;
}

// A single transfer of `bw` seconds over `hops` hops of `latency` each.
DimensionCost Whole(LinkModel model, int hops, Seconds latency, Seconds bw,
                    std::string algorithm) {
  DimensionCost c;
  c.bandwidth_time = bw;
  c.latency_time = hops * latency;
  c.time = model == LinkModel::kBook ? units::Max(c.latency_time, bw)
                                     : c.latency_time + bw;
  c.algorithm = std::move(algorithm);
  return c;
}

DimensionCost Twice(DimensionCost c, const std::string& algorithm) {
  c.time = 2 * c.time;
  c.bandwidth_time = 2 * c.bandwidth_time;
  c.latency_time = 2 * c.latency_time;
  c.algorithm = algorithm;
  return c;
}

DimensionCost Free() {
  DimensionCost c;
  c.algorithm = "none (group of 1)";
  return c;
}

}  // namespace

// Ring or line of `group` chips; a group shorter than the axis is a segment of
// it and has no wraparound. Per hop each chip sends V/n bytes each way (ring)
// or one way (line): the book's T_hop = max(T_min, 2V/(n W_bidi)).
DimensionCost RingDimension::Cost(Collective op, units::Bytes bytes, int group,
                                  LinkModel model) const {
  SCALEMODEL_CHECK(group >= 1 && group <= size_);
  if (group == 1) return Free();
  const int n = group;
  const bool ring = wraparound_ && group == size_;
  const Seconds chunk = (bytes / static_cast<double>(n)) / link_;
  const std::string kind = ring ? "bidirectional ring" : "line (no wraparound)";
  const int hops = ring ? n / 2 : n - 1;
  switch (op) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return Steps(model, hops, hop_, chunk, kind);
    case Collective::kAllReduce:
      return Twice(Steps(model, hops, hop_, chunk, kind),
                   kind + ": reduce-scatter + all-gather");
    case Collective::kAllToAll: {
      // Exact ring forms (book, sharding chapter): a unidirectional ring moves
      // V(1-1/n)/2 per link; a bidirectional one a quarter of that again.
      double frac = (n - 1.0) / n;
      Seconds bw = ring ? frac * (bytes / (8.0 * link_))
                        : frac * (bytes / (2.0 * link_));
      return Whole(model, hops, hop_, bw, kind);
    }
    case Collective::kPermute:
      return Steps(model, 1, hop_, chunk, "neighbour shift");
  }
  return Free();
}

units::BytesPerSecond RingDimension::GatherBandwidth() const {
  return wraparound_ ? 2.0 * link_ : link_;
}

// Every GPU reaches every other through NVSwitch at its egress W. Ring
// all-gather: n-1 steps of V/n (the book's B(N-1)/(N W)); all-to-all:
// V(n-1)/(n^2 W) in one round; NVLS all-reduce: V/W (data goes up once and is
// multicast down).
DimensionCost SwitchDimension::Cost(Collective op, units::Bytes bytes,
                                    int group, LinkModel model) const {
  SCALEMODEL_CHECK(group >= 1 && group <= size_);
  if (group == 1) return Free();
  const int n = group;
  const Seconds chunk = (bytes / static_cast<double>(n)) / egress_;
  switch (op) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return Steps(model, n - 1, step_, chunk, "ring over NVSwitch");
    case Collective::kAllReduce: {
      DimensionCost ring =
          Twice(Steps(model, n - 1, step_, chunk, ""),
                "ring over NVSwitch: reduce-scatter + all-gather");
      // NCCL uses NVLS only above 4 GPUs (efficiency.md 4.1).
      if (nvls_ && n > 4) {
        DimensionCost sharp =
            Whole(model, 2, step_, bytes / nvls_bw_, "NVLink SHARP (NVLS)");
        if (sharp.time < ring.time) return sharp;
      }
      return ring;
    }
    case Collective::kAllToAll:
      return Whole(
          model, 1, step_,
          ((n - 1.0) / (n * static_cast<double>(n))) * (bytes / egress_),
          "all-to-all over NVSwitch");
    case Collective::kPermute:
      return Steps(model, 1, step_, chunk, "point-to-point");
  }
  return Free();
}

double FatTreeDimension::Oversubscription(int group) const {
  double o = 1.0;
  for (const hw::SwitchTier& t : tiers_) {
    if (group > t.group_size) o = std::max(o, t.oversubscription);
  }
  return o;
}

// Across NVLink domains each chip drives its own NIC share and rings run rail
// by rail, so neighbour traffic never contends for uplinks: rings see the NIC
// rate. All-to-all is bisection-bound: the share of traffic that leaves a
// full-bisection group is slowed by the tier's oversubscription.
DimensionCost FatTreeDimension::Cost(Collective op, units::Bytes bytes,
                                     int group, LinkModel model) const {
  SCALEMODEL_CHECK(group >= 1 && group <= size_);
  if (group == 1) return Free();
  const int m = group;
  const Seconds chunk = (bytes / static_cast<double>(m)) / nic_;
  switch (op) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return Steps(model, m - 1, step_, chunk, "ring across " + name_);
    case Collective::kAllReduce: {
      DimensionCost ring =
          Twice(Steps(model, m - 1, step_, chunk, ""),
                "ring across " + name_ + ": reduce-scatter + all-gather");
      if (sharp_) {
        DimensionCost sharp = Whole(model, 2, step_, bytes / nic_,
                                    "in-network reduction (SHARP)");
        if (sharp.time < ring.time) return sharp;
      }
      return ring;
    }
    case Collective::kAllToAll: {
      int inside = m;
      double o = Oversubscription(m);
      for (const hw::SwitchTier& t : tiers_) {
        if (m > t.group_size && t.oversubscription > 1) {
          inside = std::min(inside, t.group_size);
        }
      }
      double factor = (inside - 1.0) / m + (m - inside) * o / m;
      return Whole(model, 1, step_, factor * (bytes / (m * nic_)),
                   o > 1 ? "all-to-all across an oversubscribed tree"
                         : "all-to-all across " + name_);
    }
    case Collective::kPermute:
      return Steps(model, 1, step_, chunk, "point-to-point");
  }
  return Free();
}

std::vector<std::unique_ptr<Dimension>> BuildDimensions(
    const hw::System& system, const FabricEfficiency& eff) {
  std::vector<std::unique_ptr<Dimension>> dims;
  for (const hw::PhysicalAxis& a : system.axes) {
    switch (a.kind) {
      case hw::AxisKind::kIci:
        dims.push_back(std::make_unique<RingDimension>(
            a.name, a.size, a.wraparound, eff.ici * a.bandwidth,
            a.hop_latency));
        break;
      case hw::AxisKind::kNvlink:
        dims.push_back(std::make_unique<SwitchDimension>(
            a.name, a.size, eff.nvlink * a.bandwidth, eff.nvls * a.bandwidth,
            a.hop_latency, a.in_network_reduction));
        break;
      case hw::AxisKind::kScaleOut:
        dims.push_back(std::make_unique<FatTreeDimension>(
            a.name, a.size, eff.scale_out * a.bandwidth, a.hop_latency,
            a.in_network_reduction, a.tiers));
        break;
      case hw::AxisKind::kDcn:
        dims.push_back(std::make_unique<FatTreeDimension>(
            a.name, a.size, eff.dcn * a.bandwidth, a.hop_latency, false,
            a.tiers));
        break;
    }
  }
  return dims;
}

}  // namespace scalemodel::net
