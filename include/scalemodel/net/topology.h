// A network as a stack of one-dimensional building blocks (ASTRA-sim's
// design): an ICI ring or line, an NVLink switch domain, a scale-out fat tree,
// a TPU DCN axis. Each block answers one question: how long does collective
// `op` over `group` members of this dimension take, when the array involved
// has `bytes` in total (the book's V: the full, gathered or unreduced array
// across the group)?
//
// Conventions (docs/model.md section 2):
//   - A ring with wraparound moves data both ways: the book's W_ici is the
//     bidirectional bandwidth, 2x the one-way per-link figure. A line (no
//     wraparound) gets one direction, so collectives take about 2x as long.
//   - GPU NVLink and NIC figures are per GPU, per direction.
//   - `LinkModel::kBook` charges each hop max(latency, bytes/bandwidth) (the
//     book's latency-aware form: latency overlaps the transfer);
//     `kAlphaBeta` charges latency + bytes/bandwidth (store-and-forward).
#ifndef SCALEMODEL_NET_TOPOLOGY_H_
#define SCALEMODEL_NET_TOPOLOGY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::net {

enum class Collective {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kPermute
};
std::string_view CollectiveName(Collective c);
// Parses "all-gather", "allgather", "AllGather", "ag", ...
Result<Collective> ParseCollective(std::string_view text);

enum class LinkModel { kBook, kAlphaBeta };

// Achieved-bandwidth factors for realistic mode: physical, per fabric, each
// from a published measurement (docs/model.md, section 2.5). Peak mode uses
// 1.0 everywhere and no fixed launch cost.
struct FabricEfficiency {
  double ici = 1.0;        // TPU ICI, fraction of link bandwidth achieved
  double nvlink = 1.0;     // NVLink ring collectives, of per-GPU egress
  double nvls = 1.0;       // NVLink SHARP all-reduce, of per-GPU egress
  double scale_out = 1.0;  // NIC, of line rate
  double dcn = 1.0;        // TPU DCN, of the per-chip share
  units::Seconds launch;   // fixed cost per collective call
};

// Measured factors (efficiency.md): ICI 0.95 (v5e 16-axis all-gather reaches
// ~95% of 4.5e10), NVLink ring 0.80 (H200 nccl-tests all-gather 361 of 450
// GB/s), NVLS 0.61 (8x H100/H200 NVLS all-reduce busbw 480 GB/s = algbw
// 480 x 8/14 = 274 GB/s = 0.61 of 450: the NVLS time is V / (0.61 W)), NIC 0.92
// (NDR ConnectX-7 reaches 46 of 50 GB/s), DCN 0.9 (assumption: no TPU DCN
// measurement is published). The launch cost is the chip's catalog value,
// efficiency.collective_launch: 10 us for GPUs (NCCL ring base latency
// 6.6-14 us) and 2 us for TPUs (assumption).
FabricEfficiency RealisticEfficiency(const hw::Chip& chip);

struct DimensionCost {
  units::Seconds time;
  units::Seconds bandwidth_time;  // the bytes/bandwidth part
  units::Seconds latency_time;    // the per-hop latency part
  std::string algorithm;          // "bidirectional ring", "nvls", ...
};

// One network dimension.
class Dimension {
 public:
  virtual ~Dimension() = default;
  // REQUIRES: 1 <= group <= size(); bytes >= 0.
  virtual DimensionCost Cost(Collective op, units::Bytes bytes, int group,
                             LinkModel model) const = 0;
  // Bandwidth a chip can push into this dimension for gather-like traffic,
  // per direction summed over the links it uses (a wraparound ring: 2 links).
  virtual units::BytesPerSecond GatherBandwidth() const = 0;
  virtual units::Seconds HopLatency() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
};

// A TPU ICI axis: a ring when `wraparound`, else a line.
class RingDimension : public Dimension {
 public:
  RingDimension(std::string name, int size, bool wraparound,
                units::BytesPerSecond link_one_way, units::Seconds hop_latency)
      : name_(std::move(name)),
        size_(size),
        wraparound_(wraparound),
        link_(link_one_way),
        hop_(hop_latency) {}
  DimensionCost Cost(Collective op, units::Bytes bytes, int group,
                     LinkModel model) const override;
  units::BytesPerSecond GatherBandwidth() const override;
  units::Seconds HopLatency() const override { return hop_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  bool wraparound() const { return wraparound_; }

 private:
  std::string name_;
  int size_;
  bool wraparound_;
  units::BytesPerSecond link_;
  units::Seconds hop_;
};

// An NVLink/NVSwitch domain: every GPU reaches every other through the
// switches at its own egress bandwidth; optional in-switch reduction (NVLS).
class SwitchDimension : public Dimension {
 public:
  // `nvls_bandwidth` is the egress an NVLS all-reduce achieves (it differs
  // from ring collectives in realistic mode).
  SwitchDimension(std::string name, int size, units::BytesPerSecond egress,
                  units::BytesPerSecond nvls_bandwidth,
                  units::Seconds step_latency, bool in_network_reduction)
      : name_(std::move(name)),
        size_(size),
        egress_(egress),
        nvls_bw_(nvls_bandwidth),
        step_(step_latency),
        nvls_(in_network_reduction) {}
  DimensionCost Cost(Collective op, units::Bytes bytes, int group,
                     LinkModel model) const override;
  units::BytesPerSecond GatherBandwidth() const override { return egress_; }
  units::Seconds HopLatency() const override { return step_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  int size_;
  units::BytesPerSecond egress_;
  units::BytesPerSecond nvls_bw_;
  units::Seconds step_;
  bool nvls_;
};

// The scale-out network across NVLink domains (or the DCN across TPU
// slices): each chip drives its own NIC share, rings run rail by rail. Fat
// tree tiers with oversubscription slow bisection-bound traffic (all-to-all)
// once a group spans more than a tier's group.
class FatTreeDimension : public Dimension {
 public:
  FatTreeDimension(std::string name, int size, units::BytesPerSecond nic,
                   units::Seconds step_latency, bool in_network_reduction,
                   std::vector<hw::SwitchTier> tiers)
      : name_(std::move(name)),
        size_(size),
        nic_(nic),
        step_(step_latency),
        sharp_(in_network_reduction),
        tiers_(std::move(tiers)) {}
  DimensionCost Cost(Collective op, units::Bytes bytes, int group,
                     LinkModel model) const override;
  units::BytesPerSecond GatherBandwidth() const override { return nic_; }
  units::Seconds HopLatency() const override { return step_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  // Oversubscription seen by traffic among `group` domains (1 = none).
  double Oversubscription(int group) const;

 private:
  std::string name_;
  int size_;
  units::BytesPerSecond nic_;
  units::Seconds step_;
  bool sharp_;
  std::vector<hw::SwitchTier> tiers_;
};

// Builds one Dimension per physical axis of `system`, with bandwidths scaled
// by `eff` (all 1.0 in peak mode).
std::vector<std::unique_ptr<Dimension>> BuildDimensions(
    const hw::System& system, const FabricEfficiency& eff);

}  // namespace scalemodel::net

#endif  // SCALEMODEL_NET_TOPOLOGY_H_
