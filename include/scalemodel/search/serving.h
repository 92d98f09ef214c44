// The latency/throughput Pareto frontier of serving plans (issue 8):
// lower time per output token is better, higher throughput per chip is
// better; a point is on the frontier when no evaluated point is at least as
// good in both and better in one.
#ifndef SCALEMODEL_SEARCH_SERVING_H_
#define SCALEMODEL_SEARCH_SERVING_H_

#include <vector>

namespace scalemodel::search {

struct ServePoint {
  double tpot_s = 0;                 // time per output token
  double tokens_per_s_per_chip = 0;  // throughput per chip
  int index = 0;                     // caller's handle
};

// Indices (ServePoint::index) of the frontier, fastest TPOT first.
std::vector<int> ParetoFrontier(std::vector<ServePoint> points);

}  // namespace scalemodel::search

#endif  // SCALEMODEL_SEARCH_SERVING_H_
