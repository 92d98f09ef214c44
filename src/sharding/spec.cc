#include "scalemodel/sharding/spec.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "scalemodel/base/strings.h"
#include "scalemodel/units/parse.h"

namespace scalemodel::sharding {

int Mesh::size(std::string_view axis) const {
  int i = index(axis);
  return i < 0 ? 0 : sizes[i];
}

int Mesh::index(std::string_view axis) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == axis) return static_cast<int>(i);
  }
  return -1;
}

int Mesh::num_devices() const {
  int n = 1;
  for (int s : sizes) n *= s;
  return n;
}

Result<Mesh> ParseMesh(std::string_view text) {
  // Every size, and their product, fits the device cap (docs/units.md).
  constexpr long kMaxDevices = long{1} << 24;
  double devices = 1;
  Mesh mesh;
  bool by_size = false, by_name = false;
  for (const std::string& raw : Split(text, ',')) {
    std::string item(Trim(raw));
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      return InvalidArgument(
          "expected NAME=SIZE or NAME=PHYSICAL such as 'X=4,Y=2' or "
          "'X=x,Y=y.z', got '" +
              Excerpt(text) + "'",
          "mesh");
    }
    std::string name(Trim(item.substr(0, eq)));
    std::string value(Trim(item.substr(eq + 1)));
    if (mesh.index(name) >= 0) {
      return InvalidArgument("mesh axis '" + name + "' is named twice", "mesh");
    }
    if (std::isdigit(static_cast<unsigned char>(value[0]))) {
      char* end = nullptr;
      errno = 0;
      long v = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || v <= 0 || errno == ERANGE || v > kMaxDevices) {
        return InvalidArgument(
            "mesh axis " + name + ": expected a positive size of at most " +
                std::to_string(kMaxDevices) + ", got '" + Excerpt(value) + "'",
            "mesh");
      }
      devices *= static_cast<double>(v);
      mesh.names.push_back(name);
      mesh.sizes.push_back(static_cast<int>(v));
      mesh.physical.emplace_back();
      by_size = true;
    } else {
      mesh.names.push_back(name);
      mesh.sizes.push_back(0);  // filled when laid onto a system
      mesh.physical.push_back(Split(value, '.'));
      by_name = true;
    }
  }
  if (devices > kMaxDevices) {
    return InvalidArgument("expected a mesh of at most " +
                               std::to_string(kMaxDevices) + " devices, got " +
                               FormatNumber(devices) + " in '" + Excerpt(text) +
                               "'",
                           "mesh");
  }
  if (by_size && by_name) {
    return InvalidArgument(
        "give every mesh axis a size ('X=4,Y=2') or every one a physical "
        "axis ('X=x,Y=y'), not a mix",
        "mesh");
  }
  return mesh;
}

namespace {

// Builds "message\n  text\n  ^" with the caret under column `col`.
tl::unexpected<Error> CaretError(const std::string& message,
                                 std::string_view text, size_t col) {
  std::string caret(col, ' ');
  return InvalidArgument(message + "\n  " + std::string(text) + "\n  " + caret +
                         "^");
}

class Parser {
 public:
  Parser(std::string_view text, const Mesh& mesh) : text_(text), mesh_(mesh) {}

  void SkipSpace() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Done() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  size_t pos() const { return pos_; }
  std::string_view text() const { return text_; }

  std::string Ident() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])))) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  // Splits "XY" into mesh axis names, longest match first.
  Result<std::vector<std::string>> Axes(size_t col) {
    std::string s = Ident();
    if (s.empty())
      return CaretError("expected a mesh axis after '_'", text_, col);
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
      std::string best;
      for (const std::string& n : mesh_.names) {
        if (n.size() > best.size() && s.compare(i, n.size(), n) == 0) best = n;
      }
      if (best.empty()) {
        std::string list;
        for (const std::string& n : mesh_.names)
          list += (list.empty() ? "" : ", ") + n;
        return CaretError("unknown mesh axis '" + s.substr(i) +
                              "' (the mesh has " + list + ")",
                          text_, col + i);
      }
      out.push_back(best);
      i += best.size();
    }
    return out;
  }

  Result<ArraySpec> Array() {
    ArraySpec a;
    SkipSpace();
    size_t name_col = pos_;
    a.name = Ident();
    if (a.name.empty()) {
      return CaretError("expected an array name such as A[I_X, J]", text_,
                        name_col);
    }
    if (!Eat('[')) {
      return CaretError("expected '[' after the array name", text_, pos_);
    }
    std::set<std::string> seen_axes, seen_dims;
    while (true) {
      SkipSpace();
      DimSharding d;
      d.column = static_cast<int>(pos_);
      size_t start = pos_;
      while (pos_ < text_.size() &&
             std::isalnum(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      }
      d.dim = std::string(text_.substr(start, pos_ - start));
      if (d.dim.empty()) {
        return CaretError("expected a dimension name", text_, start);
      }
      if (!seen_dims.insert(d.dim).second) {
        return CaretError("dimension " + d.dim + " appears twice in " + a.name,
                          text_, start);
      }
      if (pos_ < text_.size() && text_[pos_] == '_') {
        ++pos_;
        size_t axes_col = pos_;
        auto axes = Axes(axes_col);
        if (!axes) return tl::unexpected(axes.error());
        size_t col = axes_col;
        for (const std::string& ax : *axes) {
          if (!seen_axes.insert(ax).second) {
            return CaretError("mesh axis " + ax + " is used twice in " +
                                  a.name + " (an axis may shard one dimension)",
                              text_, col);
          }
          col += ax.size();
        }
        d.axes = *axes;
      }
      a.dims.push_back(d);
      if (Eat(',')) continue;
      if (Eat(']')) break;
      return CaretError("expected ',' or ']'", text_, pos_);
    }
    if (Eat('{')) {
      while (true) {
        SkipSpace();
        size_t col = pos_;
        if (!(pos_ + 1 < text_.size() && text_[pos_] == 'U' &&
              text_[pos_ + 1] == '_')) {
          return CaretError("expected U_<axis> for unreduced partial sums",
                            text_, col);
        }
        pos_ += 2;
        auto axes = Axes(col + 2);
        if (!axes) return tl::unexpected(axes.error());
        for (const std::string& ax : *axes) {
          if (!seen_axes.insert(ax).second) {
            return CaretError("mesh axis " + ax + " is used twice in " + a.name,
                              text_, col + 2);
          }
          a.unreduced.push_back(ax);
        }
        if (Eat(',')) continue;
        if (Eat('}')) break;
        return CaretError("expected ',' or '}'", text_, pos_);
      }
    }
    return a;
  }

 private:
  std::string_view text_;
  const Mesh& mesh_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<std::string> ArraySpec::UsedAxes() const {
  std::vector<std::string> out;
  for (const DimSharding& d : dims)
    out.insert(out.end(), d.axes.begin(), d.axes.end());
  return out;
}

std::string ArraySpec::ToString() const {
  std::string s = name + "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i].dim;
    if (!dims[i].axes.empty()) {
      s += "_";
      for (const std::string& a : dims[i].axes) s += a;
    }
  }
  s += "]";
  if (!unreduced.empty()) {
    s += "{";
    for (size_t i = 0; i < unreduced.size(); ++i) {
      s += (i ? ", U_" : "U_") + unreduced[i];
    }
    s += "}";
  }
  return s;
}

Result<ArraySpec> ParseArray(std::string_view text, const Mesh& mesh) {
  Parser p(text, mesh);
  auto a = p.Array();
  if (!a) return a;
  if (!p.Done())
    return CaretError("unexpected text after the array", text, p.pos());
  return a;
}

Result<MatmulSpec> ParseMatmul(std::string_view text, const Mesh& mesh) {
  Parser p(text, mesh);
  MatmulSpec m;
  auto a = p.Array();
  if (!a) return tl::unexpected(a.error());
  m.a = *a;
  if (!(p.Eat('@') || p.Eat('*') || p.Eat('.'))) {
    return CaretError("expected '@' between the two operands", text, p.pos());
  }
  auto b = p.Array();
  if (!b) return tl::unexpected(b.error());
  m.b = *b;
  if (p.Eat('-')) {
    if (!p.Eat('>')) return CaretError("expected '->'", text, p.pos());
    auto c = p.Array();
    if (!c) return tl::unexpected(c.error());
    m.out = *c;
  }
  if (!p.Done())
    return CaretError("unexpected text after the matmul", text, p.pos());
  // Contracting dimensions must be sharded the same way or consistently
  // sized; here we check that every output dim comes from an input.
  if (m.out) {
    for (const DimSharding& d : m.out->dims) {
      bool found = false;
      for (const DimSharding& x : m.a.dims) found = found || x.dim == d.dim;
      for (const DimSharding& x : m.b.dims) found = found || x.dim == d.dim;
      if (!found) {
        return CaretError(
            "output dimension " + d.dim + " is in neither operand", text,
            static_cast<size_t>(d.column));
      }
    }
  }
  bool shared = false;
  for (const DimSharding& x : m.a.dims) {
    for (const DimSharding& y : m.b.dims) shared = shared || x.dim == y.dim;
  }
  if (!shared) {
    return InvalidArgument("the operands share no dimension to contract: " +
                           m.a.ToString() + " @ " + m.b.ToString());
  }
  return m;
}

Result<std::map<std::string, double>> ParseDims(std::string_view text) {
  std::map<std::string, double> dims;
  for (const std::string& raw : Split(text, ',')) {
    std::string item(Trim(raw));
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(
          "expected NAME=SIZE such as 'I=1024,J=512', got '" + Excerpt(text) +
              "'",
          "dims");
    }
    std::string name(Trim(item.substr(0, eq)));
    auto v = units::ParseCount(item.substr(eq + 1));
    if (!v) return InvalidArgument(name + ": " + v.error().message, "dims");
    if (std::floor(*v) != *v) {
      return InvalidArgument(
          name + ": expected a whole number, got '" + item.substr(eq + 1) + "'",
          "dims");
    }
    // No array dimension comes near 2^40 (docs/units.md, Limits); beyond it
    // element counts and bytes lose their meaning.
    if (*v > 1099511627776.0) {
      return InvalidArgument(name +
                                 ": expected a size of at most 2^40 "
                                 "(1099511627776), got '" +
                                 Excerpt(item.substr(eq + 1)) + "'",
                             "dims");
    }
    dims[name] = *v;
  }
  return dims;
}

Result<LocalLayout> Layout(const ArraySpec& a, const Mesh& mesh,
                           const std::map<std::string, double>& dims) {
  LocalLayout l;
  l.elements_per_device = 1;
  double used = 1;
  for (const DimSharding& d : a.dims) {
    auto it = dims.find(d.dim);
    if (it == dims.end()) {
      return InvalidArgument("dimension " + d.dim + " of " + a.name +
                                 " has no size; add " + d.dim + "=N",
                             "dims");
    }
    int split = 1;
    std::string axes;
    for (const std::string& ax : d.axes) {
      split *= mesh.size(ax);
      axes += (axes.empty() ? "" : "*") + ax;
    }
    double global = it->second;
    if (std::fmod(global, split) != 0) {
      return InvalidArgument(d.dim + "=" + FormatNumber(global) +
                                 " is not divisible by " + axes + "=" +
                                 std::to_string(split) + " in " + a.ToString(),
                             "dims");
    }
    l.local_shape.push_back(global / split);
    l.elements_per_device *= global / split;
    used *= split;
  }
  for (const std::string& ax : a.unreduced) used *= mesh.size(ax);
  l.shards = static_cast<int>(used);
  l.replicas = mesh.num_devices() / used;
  return l;
}

}  // namespace scalemodel::sharding
