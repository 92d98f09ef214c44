#include "scalemodel/base/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace scalemodel {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(c));
  return out;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

namespace {

// The edit distance of two lower-case strings when it is at most `cap`,
// else cap + 1: the distance is at least the length difference and never
// below a row's minimum, so longer comparisons stop early.
int BoundedDistance(std::string_view la, std::string_view lb, int cap) {
  const size_t diff =
      la.size() > lb.size() ? la.size() - lb.size() : lb.size() - la.size();
  if (cap < 0 || diff > static_cast<size_t>(cap)) return cap + 1;
  std::vector<int> prev(lb.size() + 1), cur(lb.size() + 1);
  for (size_t j = 0; j <= lb.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= la.size(); ++i) {
    cur[0] = static_cast<int>(i);
    int row_min = cur[0];
    for (size_t j = 1; j <= lb.size(); ++j) {
      int sub = prev[j - 1] + (la[i - 1] == lb[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min > cap) return cap + 1;
    std::swap(prev, cur);
  }
  return std::min(prev[lb.size()], cap + 1);
}

}  // namespace

int EditDistance(std::string_view a, std::string_view b) {
  const std::string la = ToLower(a), lb = ToLower(b);
  return BoundedDistance(la, lb, static_cast<int>(la.size() + lb.size()));
}

// The first candidate nearest to `name` (a candidate that starts with it
// counts as distance 0, the shortest such one first), if within the limit.
// Only distances below the best so far and within the limit can change the
// answer, so each comparison is bounded by both.
std::string Suggest(std::string_view name,
                    const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 1 << 30;
  const std::string lname = ToLower(name);
  const int limit = std::max<int>(2, static_cast<int>(name.size()) / 3);
  for (const std::string& c : candidates) {
    const std::string lc = ToLower(c);
    int d = 0;
    bool prefix = false;
    if (!lname.empty() && lc.rfind(lname, 0) == 0) {
      prefix = true;  // "tpu-v5" -> "tpu-v5e" beats an equal-distance "tpu-v4"
    } else if (!lc.empty() && lname.rfind(lc, 0) == 0) {
      // A candidate the name extends ("h100" for "h100-pcei") is as far as
      // the characters added (its edit distance), so a near variant
      // ("h100-pcie") beats it.
      d = static_cast<int>(lname.size() - lc.size());
    } else {
      d = BoundedDistance(lname, lc, std::min(best_distance - 1, limit));
    }
    // Among names that extend the typed one, the shortest ("h10" ->
    // "h100", not "h100-96gb").
    if (d < best_distance ||
        (prefix && d == best_distance && c.size() < best.size())) {
      best_distance = d;
      best = c;
    }
  }
  if (best_distance <= limit) return best;
  return "";
}

std::string DidYouMean(std::string_view name,
                       const std::vector<std::string>& candidates) {
  std::string s = Suggest(name, candidates);
  if (s.empty()) return "";
  return " (did you mean '" + s + "'?)";
}

std::string FormatNumber(double value) {
  char buf[64];
  // Whole numbers up to 1e15 print exactly ("4194304"), others with 4
  // significant digits and a short exponent ("8.2e11", "1.5e-6").
  if (std::isfinite(value) && std::floor(value) == value &&
      std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "%.4g", value);
  std::string s = buf;
  size_t e = s.find('e');
  if (e != std::string::npos) {
    std::string mant = s.substr(0, e);
    int exp = std::atoi(s.c_str() + e + 1);
    s = mant + "e" + std::to_string(exp);
  }
  return s;
}

std::string Excerpt(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  size_t n = max_chars;
  // Do not cut a UTF-8 sequence in two.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "...";
}

}  // namespace scalemodel
