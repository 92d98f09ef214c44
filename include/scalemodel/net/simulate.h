// A step-by-step reference simulation of ring collectives, used by property
// tests to check the closed forms in topology.h. Chunks move hop by hop: at
// each step every directed link carries at most one chunk, and a step lasts
// the time one chunk takes on one link under the chosen LinkModel.
#ifndef SCALEMODEL_NET_SIMULATE_H_
#define SCALEMODEL_NET_SIMULATE_H_

#include <vector>

#include "scalemodel/net/topology.h"
#include "scalemodel/units/quantity.h"

namespace scalemodel::net {

struct SimLink {
  units::BytesPerSecond one_way;
  units::Seconds latency;
};

// All-gather of n shards of bytes/n each on a ring (wraparound) or a line:
// every chip forwards newly received shards to its neighbours until every
// chip holds all of them. Returns the elapsed time.
units::Seconds SimulateRingAllGather(int n, bool wraparound, units::Bytes bytes,
                                     SimLink link, LinkModel model);

// Reduce-scatter: each chip starts with a full unreduced array of `bytes`;
// partial sums of each shard travel towards their owner, reduced on the way.
units::Seconds SimulateRingReduceScatter(int n, bool wraparound,
                                         units::Bytes bytes, SimLink link,
                                         LinkModel model);

// All-gather on a torus done axis by axis (x first, then y, ...), each axis
// phase a ring (or line) all-gather of the data gathered so far.
units::Seconds SimulateTorusAllGatherByAxes(const std::vector<int>& dims,
                                            const std::vector<bool>& wrap,
                                            units::Bytes bytes, SimLink link,
                                            LinkModel model);

}  // namespace scalemodel::net

#endif  // SCALEMODEL_NET_SIMULATE_H_
