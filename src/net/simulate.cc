#include "scalemodel/net/simulate.h"

#include <algorithm>
#include <array>
#include <deque>
#include <vector>

#include "scalemodel/base/check.h"

namespace scalemodel::net {
namespace {

units::Seconds StepTime(units::Bytes chunk, SimLink link, LinkModel model) {
  units::Seconds t = chunk / link.one_way;
  return model == LinkModel::kBook ? units::Max(link.latency, t)
                                   : link.latency + t;
}

}  // namespace

// Flooding all-gather. Each chip keeps one queue per outgoing direction; a
// shard received from the left is queued to go right and vice versa, so
// shards stream around the ring. One shard per directed link per step.
units::Seconds SimulateRingAllGather(int n, bool wraparound, units::Bytes bytes,
                                     SimLink link, LinkModel model) {
  SCALEMODEL_CHECK(n >= 1);
  if (n == 1) return units::Seconds(0);
  std::vector<std::vector<bool>> have(n, std::vector<bool>(n, false));
  // queue[i][0]: shards to send left; queue[i][1]: to send right.
  std::vector<std::array<std::deque<int>, 2>> queue(n);
  for (int i = 0; i < n; ++i) {
    have[i][i] = true;
    queue[i][0].push_back(i);
    queue[i][1].push_back(i);
  }
  auto neighbour = [&](int i, int dir) {
    int j = dir == 0 ? i - 1 : i + 1;
    if (wraparound) return (j + n) % n;
    return (j < 0 || j >= n) ? -1 : j;
  };
  // With only 2 chips a "ring" is one link pair; treat both directions alike.
  int steps = 0;
  auto complete = [&] {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (!have[i][j]) return false;
      }
    }
    return true;
  };
  while (!complete()) {
    SCALEMODEL_CHECK(steps <= 4 * n);
    struct Send {
      int to, shard, dir;
    };
    std::vector<Send> sends;
    for (int i = 0; i < n; ++i) {
      for (int dir = 0; dir < 2; ++dir) {
        int j = neighbour(i, dir);
        auto& q = queue[i][dir];
        // Skip shards the neighbour already holds (they arrived the other way).
        while (!q.empty() && j >= 0 && have[j][q.front()]) q.pop_front();
        if (j < 0 || q.empty()) continue;
        sends.push_back({j, q.front(), dir});
        q.pop_front();
      }
    }
    for (const Send& s : sends) {
      if (!have[s.to][s.shard]) {
        have[s.to][s.shard] = true;
        queue[s.to][s.dir].push_back(s.shard);
      }
    }
    ++steps;
  }
  return steps * StepTime(bytes / static_cast<double>(n), link, model);
}

// Reduce-scatter with reduction on the way: for each shard j, the partial sum
// starts at the chip farthest from j on each side and moves towards j, adding
// each chip's contribution as it passes. A directed link carries one partial
// per step; when several wait on the same link, the one with the most hops
// left goes first (critical path first).
units::Seconds SimulateRingReduceScatter(int n, bool wraparound,
                                         units::Bytes bytes, SimLink link,
                                         LinkModel model) {
  SCALEMODEL_CHECK(n >= 1);
  if (n == 1) return units::Seconds(0);
  struct Chain {
    int head;       // chip holding the partial
    int remaining;  // hops left to the owner
    int dir;        // +1 moving right, -1 moving left
  };
  std::vector<Chain> chains;
  for (int j = 0; j < n; ++j) {
    // Contributors on each side: a ring splits the n-1 others in two (the
    // antipode of an even ring joins the left side); a line has what it has.
    int left = wraparound ? n / 2 : j;
    int right = wraparound ? (n - 1) - n / 2 : n - 1 - j;
    if (left > 0) chains.push_back({((j - left) % n + n) % n, left, +1});
    if (right > 0) chains.push_back({(j + right) % n, right, -1});
  }
  int steps = 0;
  while (true) {
    bool pending = false;
    // Best chain per directed link (head chip, direction).
    std::vector<int> pick(2 * static_cast<size_t>(n), -1);
    for (size_t c = 0; c < chains.size(); ++c) {
      if (chains[c].remaining == 0) continue;
      pending = true;
      int slot = 2 * chains[c].head + (chains[c].dir > 0 ? 1 : 0);
      if (pick[slot] < 0 ||
          chains[c].remaining > chains[pick[slot]].remaining) {
        pick[slot] = static_cast<int>(c);
      }
    }
    if (!pending) break;
    for (int c : pick) {
      if (c < 0) continue;
      chains[c].head = ((chains[c].head + chains[c].dir) % n + n) % n;
      --chains[c].remaining;
    }
    ++steps;
    SCALEMODEL_CHECK(steps <= 4 * n);
  }
  return steps * StepTime(bytes / static_cast<double>(n), link, model);
}

units::Seconds SimulateTorusAllGatherByAxes(const std::vector<int>& dims,
                                            const std::vector<bool>& wrap,
                                            units::Bytes bytes, SimLink link,
                                            LinkModel model) {
  SCALEMODEL_CHECK(dims.size() == wrap.size());
  int n_total = 1;
  for (int d : dims) n_total *= d;
  // Phase a gathers along axis a; every line of the torus along that axis
  // runs the same ring concurrently on disjoint links, so one line's time is
  // the phase's time. Before phase a each chip holds V/N x prod(n_b, b < a).
  units::Seconds total;
  double held = 1;
  for (size_t a = 0; a < dims.size(); ++a) {
    held *= dims[a];
    units::Bytes phase_array = (held / n_total) * bytes;
    total += SimulateRingAllGather(dims[a], wrap[a], phase_array, link, model);
  }
  return total;
}

}  // namespace scalemodel::net
