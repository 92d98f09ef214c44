#include "scalemodel/search/serving.h"

#include <algorithm>

namespace scalemodel::search {

std::vector<int> ParetoFrontier(std::vector<ServePoint> points) {
  // Sort by TPOT, then by throughput descending; a point joins the frontier
  // when its throughput beats every faster point's.
  std::sort(points.begin(), points.end(),
            [](const ServePoint& a, const ServePoint& b) {
              if (a.tpot_s != b.tpot_s) return a.tpot_s < b.tpot_s;
              if (a.tokens_per_s_per_chip != b.tokens_per_s_per_chip) {
                return a.tokens_per_s_per_chip > b.tokens_per_s_per_chip;
              }
              return a.index < b.index;
            });
  std::vector<int> out;
  double best = -1;
  for (const ServePoint& p : points) {
    if (p.tokens_per_s_per_chip > best) {
      out.push_back(p.index);
      best = p.tokens_per_s_per_chip;
    }
  }
  return out;
}

}  // namespace scalemodel::search
