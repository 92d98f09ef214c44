#include "scalemodel/sharding/matmul.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "scalemodel/base/check.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::sharding {

std::string MeshLayout::Describe(const Mesh& mesh,
                                 const hw::System& sys) const {
  std::string s;
  for (size_t i = 0; i < mesh.names.size(); ++i) {
    std::string p;
    for (size_t k = 0; k < physical[i].size(); ++k) {
      const hw::PhysicalAxis& a = sys.axes[physical[i][k]];
      p += (p.empty() ? "" : ".") + a.name +
           (sizes[i][k] < a.size ? "(" + std::to_string(sizes[i][k]) + "/" +
                                       std::to_string(a.size) + ")"
                                 : "");
    }
    s += (s.empty() ? "" : ", ") + mesh.names[i] + "=" +
         std::to_string(mesh.sizes[i]) + " on " + p;
  }
  return s;
}

Result<MeshLayout> LayMesh(Mesh& mesh, const hw::System& sys) {
  MeshLayout out;
  out.physical.resize(mesh.names.size());
  out.sizes.resize(mesh.names.size());
  bool explicit_axes = !mesh.physical.empty() && !mesh.physical[0].empty();
  if (explicit_axes) {
    std::set<int> used;
    for (size_t i = 0; i < mesh.names.size(); ++i) {
      int size = 1;
      for (const std::string& p : mesh.physical[i]) {
        const hw::PhysicalAxis* a = sys.FindAxis(p);
        if (!a) {
          return InvalidArgument("mesh axis " + mesh.names[i] +
                                     ": unknown physical axis '" + p + "' of " +
                                     sys.id + DidYouMean(p, sys.AxisNames()),
                                 "mesh");
        }
        int idx = static_cast<int>(a - sys.axes.data());
        if (!used.insert(idx).second) {
          return InvalidArgument(
              "physical axis '" + p + "' is given to two mesh axes", "mesh");
        }
        out.physical[i].push_back(idx);
        out.sizes[i].push_back(a->size);
        size *= a->size;
      }
      mesh.sizes[i] = size;
    }
    return out;
  }
  // In order: x, y, z, dcn (TPU) or node, net (GPU); axes of size 1 skipped.
  size_t cur = 0;
  int left = sys.axes.empty() ? 1 : sys.axes[0].size;
  auto advance = [&] {
    ++cur;
    left = cur < sys.axes.size() ? sys.axes[cur].size : 0;
  };
  for (size_t i = 0; i < mesh.names.size(); ++i) {
    int need = mesh.sizes[i];
    while (need > 1) {
      while (cur < sys.axes.size() && left <= 1) advance();
      if (cur >= sys.axes.size()) {
        return InvalidArgument("mesh of " + std::to_string(mesh.num_devices()) +
                                   " devices does not fit " + sys.id + " (" +
                                   std::to_string(sys.num_chips()) + " chips)",
                               "mesh");
      }
      if (left % need == 0) {
        out.physical[i].push_back(static_cast<int>(cur));
        out.sizes[i].push_back(need);
        left /= need;
        need = 1;
      } else if (need % left == 0) {
        out.physical[i].push_back(static_cast<int>(cur));
        out.sizes[i].push_back(left);
        need /= left;
        left = 1;
      } else {
        return InvalidArgument(
            "mesh axis " + mesh.names[i] + "=" + std::to_string(mesh.sizes[i]) +
                " cannot be laid onto " + sys.id + "'s axis " +
                sys.axes[cur].name + " (" + std::to_string(left) +
                " chips left on it); name the axes explicitly, e.g. " +
                mesh.names[i] + "=" + sys.axes[cur].name,
            "mesh");
      }
    }
  }
  return out;
}

namespace {

// Working state of one plan: the operands' shardings after its steps.
struct State {
  ArraySpec a, b;
  std::vector<CollectiveStep> steps;
  std::string description;
  int matmul_case = 1;
};

const DimSharding* FindDim(const ArraySpec& s, const std::string& dim) {
  for (const DimSharding& d : s.dims) {
    if (d.dim == dim) return &d;
  }
  return nullptr;
}
DimSharding* FindDim(ArraySpec& s, const std::string& dim) {
  for (DimSharding& d : s.dims) {
    if (d.dim == dim) return &d;
  }
  return nullptr;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class Analyzer {
 public:
  Analyzer(const MatmulSpec& spec, const Mesh& mesh, const MeshLayout& layout,
           const hw::System& sys, const std::map<std::string, double>& dims,
           const MatmulOptions& opt)
      : spec_(spec),
        mesh_(mesh),
        layout_(layout),
        sys_(sys),
        dims_(dims),
        opt_(opt) {}

  double GlobalBytes(const ArraySpec& s) const {
    double e = hw::BytesPerElement(opt_.dtype);
    for (const DimSharding& d : s.dims) e *= dims_.at(d.dim);
    return e;
  }
  double AxesSize(const std::vector<std::string>& axes) const {
    double n = 1;
    for (const std::string& a : axes) n *= mesh_.size(a);
    return n;
  }

  // A collective over logical `axes` on an array of V bytes.
  CollectiveStep Step(net::Collective kind, const std::string& array,
                      const std::vector<std::string>& axes, double v,
                      bool overlappable, const std::string& why) const {
    std::vector<int> idx, sizes;
    for (const std::string& ax : axes) {
      int i = mesh_.index(ax);
      for (size_t k = 0; k < layout_.physical[i].size(); ++k) {
        idx.push_back(layout_.physical[i][k]);
        sizes.push_back(layout_.sizes[i][k]);
      }
    }
    CollectiveStep s;
    s.kind = kind;
    s.array = array;
    s.axes = axes;
    s.bytes = units::Bytes(v);
    s.time = idx.empty() ? units::Seconds(0)
                         : net::EstimateOnAxes(sys_, kind, s.bytes, idx, sizes,
                                               {opt_.mode})
                               .time;
    s.overlappable = overlappable;
    s.why = why;
    return s;
  }

  // All-gathers `axes` away from one dimension of operand `which`.
  void Gather(State& st, bool on_a, const std::string& dim,
              const std::vector<std::string>& axes, const std::string& why) {
    ArraySpec& arr = on_a ? st.a : st.b;
    DimSharding* d = FindDim(arr, dim);
    // V: the array over one group = global bytes / other sharding axes.
    std::vector<std::string> others;
    for (const std::string& ax : arr.UsedAxes()) {
      if (!Contains(axes, ax)) others.push_back(ax);
    }
    double v = GlobalBytes(arr) / AxesSize(others);
    st.steps.push_back(
        Step(net::Collective::kAllGather, arr.name, axes, v, true, why));
    std::vector<std::string> keep;
    for (const std::string& ax : d->axes) {
      if (!Contains(axes, ax)) keep.push_back(ax);
    }
    d->axes = keep;
  }

  std::vector<std::string> Contracting() const {
    std::vector<std::string> c;
    for (const DimSharding& d : spec_.a.dims) {
      if (!FindDim(spec_.b, d.dim)) continue;
      if (spec_.out && FindDim(*spec_.out, d.dim)) continue;  // batch dim
      c.push_back(d.dim);
    }
    return c;
  }

  // Output of the local matmul once operands agree: free dims keep their
  // operand's axes; contracting axes become unreduced.
  ArraySpec NaturalOutput(const State& st,
                          const std::vector<std::string>& contracting) const {
    ArraySpec c;
    c.name = spec_.out ? spec_.out->name : "C";
    auto add = [&](const ArraySpec& s) {
      for (const DimSharding& d : s.dims) {
        if (Contains(contracting, d.dim) || FindDim(c, d.dim)) continue;
        DimSharding o = d;
        c.dims.push_back(o);
      }
    };
    add(st.a);
    add(st.b);
    for (const std::string& j : contracting) {
      for (const std::string& ax : FindDim(st.a, j)->axes)
        c.unreduced.push_back(ax);
    }
    if (spec_.out) {
      // Keep the requested dimension order.
      ArraySpec ordered;
      ordered.name = c.name;
      ordered.unreduced = c.unreduced;
      for (const DimSharding& d : spec_.out->dims) {
        ordered.dims.push_back(*FindDim(c, d.dim));
      }
      return ordered;
    }
    return c;
  }

  MatmulPlan Finish(State st, const std::vector<std::string>& contracting,
                    int rs_dim /* -1: all-reduce; else RS onto that dim */) {
    ArraySpec c = NaturalOutput(st, contracting);
    // FLOPs of the local matmul: every distinct dim once, divided by its
    // sharding in the (now consistent) operands.
    double flops = 2;
    std::set<std::string> seen;
    for (const ArraySpec* s : {&st.a, &st.b}) {
      for (const DimSharding& d : s->dims) {
        if (!seen.insert(d.dim).second) continue;
        flops *= dims_.at(d.dim) / AxesSize(d.axes);
      }
    }
    // Reduce the partial sums.
    std::vector<std::string> u = c.unreduced;
    if (!u.empty()) {
      std::vector<std::string> others = c.UsedAxes();
      double v = GlobalBytes(c) / AxesSize(others);
      if (spec_.out) {
        // Reduce-scatter onto output dims that ask for an unreduced axis.
        std::vector<std::string> scattered;
        for (const DimSharding& want : spec_.out->dims) {
          for (const std::string& ax : want.axes) {
            if (Contains(u, ax)) {
              scattered.push_back(ax);
              FindDim(c, want.dim)->axes.push_back(ax);
            }
          }
        }
        if (!scattered.empty()) {
          st.steps.push_back(Step(net::Collective::kReduceScatter, c.name,
                                  scattered, v, true,
                                  "sum partial results onto the requested "
                                  "output sharding"));
        }
        std::vector<std::string> rest;
        for (const std::string& ax : u) {
          if (!Contains(scattered, ax)) rest.push_back(ax);
        }
        if (!rest.empty()) {
          std::vector<std::string> others2 = c.UsedAxes();
          st.steps.push_back(Step(net::Collective::kAllReduce, c.name, rest,
                                  GlobalBytes(c) / AxesSize(others2), false,
                                  "sum partial results"));
        }
      } else if (rs_dim >= 0) {
        c.dims[rs_dim].axes.insert(c.dims[rs_dim].axes.end(), u.begin(),
                                   u.end());
        st.steps.push_back(Step(
            net::Collective::kReduceScatter, c.name, u, v, true,
            "sum partial results, leaving " + c.dims[rs_dim].dim + " sharded"));
      } else {
        st.steps.push_back(Step(net::Collective::kAllReduce, c.name, u, v,
                                false, "sum partial results"));
      }
      c.unreduced.clear();
    }
    // Requested output: gather away axes it does not want; slice (free) for
    // axes it wants that are not yet used.
    if (spec_.out) {
      for (const DimSharding& want : spec_.out->dims) {
        DimSharding* have = FindDim(c, want.dim);
        std::vector<std::string> drop;
        for (const std::string& ax : have->axes) {
          if (!Contains(want.axes, ax)) drop.push_back(ax);
        }
        if (!drop.empty()) {
          std::vector<std::string> others;
          for (const std::string& ax : c.UsedAxes()) {
            if (!Contains(drop, ax)) others.push_back(ax);
          }
          st.steps.push_back(Step(net::Collective::kAllGather, c.name, drop,
                                  GlobalBytes(c) / AxesSize(others), false,
                                  "gather the output to the requested "
                                  "sharding"));
        }
        have->axes = want.axes;  // extra axes are a local slice
      }
    }
    MatmulPlan p;
    p.description = st.description;
    p.matmul_case = st.matmul_case;
    p.collectives = st.steps;
    p.per_device_flops = flops;
    p.t_math = units::Flops(flops) / sys_.chip.Peak(opt_.dtype);
    units::Seconds hidden, exposed;
    for (const CollectiveStep& s : st.steps) {
      p.t_comm += s.time;
      (s.overlappable ? hidden : exposed) += s.time;
    }
    p.t_total = units::Max(p.t_math, hidden) + exposed;
    p.output = c;
    p.bound = p.t_math >= p.t_comm ? "compute" : "communication";
    return p;
  }

  Result<MatmulAnalysis> Run() {
    std::vector<std::string> contracting = Contracting();
    if (contracting.empty()) {
      return InvalidArgument(
          "no contracting dimension: every shared dimension also appears in "
          "the output");
    }
    // Sizes must exist for every dim.
    for (const ArraySpec* s : {&spec_.a, &spec_.b}) {
      auto l = Layout(*s, mesh_, dims_);
      if (!l) return tl::unexpected(l.error());
    }
    if (sys_.chip.Peak(opt_.dtype).si() <= 0) {
      return InvalidArgument(sys_.chip.id + " has no " +
                                 std::string(hw::DtypeName(opt_.dtype)) +
                                 " matrix rate",
                             "dtype");
    }
    std::vector<State> starts;
    // Case 4: an axis on free dims of both operands.
    std::vector<std::pair<std::string, std::string>> conflicts;  // axis, dim
    for (const DimSharding& da : spec_.a.dims) {
      if (Contains(contracting, da.dim)) continue;
      for (const DimSharding& db : spec_.b.dims) {
        if (Contains(contracting, db.dim)) continue;
        if (da.dim == db.dim) continue;  // batch dim: must match below
        for (const std::string& ax : da.axes) {
          if (Contains(db.axes, ax)) conflicts.emplace_back(ax, da.dim);
        }
      }
    }
    State base;
    base.a = spec_.a;
    base.b = spec_.b;
    starts.push_back(base);
    for (const auto& [ax, dim_a] : conflicts) {
      std::vector<State> next;
      for (const State& st : starts) {
        State ga = st;
        if (Contains(FindDim(ga.a, dim_a)->axes, ax)) {
          Gather(ga, true, dim_a, {ax},
                 "case 4: " + ax + " shards free dims of both operands");
          ga.matmul_case = 4;
          ga.description += "gather " + ga.a.name + " over " + ax + "; ";
          next.push_back(ga);
        }
        State gb = st;
        for (DimSharding& d : gb.b.dims) {
          if (Contains(d.axes, ax) && !Contains(contracting, d.dim)) {
            Gather(gb, false, d.dim, {ax},
                   "case 4: " + ax + " shards free dims of both operands");
            gb.matmul_case = 4;
            gb.description += "gather " + gb.b.name + " over " + ax + "; ";
            next.push_back(gb);
            break;
          }
        }
      }
      starts = next;
    }
    // Batch dims sharded differently: gather to the common axes.
    for (State& st : starts) {
      for (DimSharding& da : st.a.dims) {
        DimSharding* db = FindDim(st.b, da.dim);
        if (!db || Contains(contracting, da.dim) || da.axes == db->axes)
          continue;
        if (!da.axes.empty())
          Gather(st, true, da.dim, da.axes, "batch dims disagree");
        if (!db->axes.empty())
          Gather(st, false, da.dim, db->axes, "batch dims disagree");
      }
    }
    // Contracting dims: cases 1-3 and their alternatives.
    std::vector<MatmulPlan> plans;
    std::vector<int> plan_is_default;
    for (const State& st0 : starts) {
      std::vector<State> resolved;
      bool all_match = true, any_sharded = false;
      for (const std::string& j : contracting) {
        const DimSharding* ja = FindDim(st0.a, j);
        const DimSharding* jb = FindDim(st0.b, j);
        any_sharded |= !ja->axes.empty() || !jb->axes.empty();
        all_match &= ja->axes == jb->axes;
      }
      if (!any_sharded) {
        State s = st0;
        if (s.matmul_case != 4) s.matmul_case = 1;
        s.description += "local matmul, no communication for the contraction";
        resolved.push_back(s);
      } else if (all_match) {
        State s = st0;
        if (s.matmul_case != 4) s.matmul_case = 3;
        s.description += "local matmul on matching shards, then reduce";
        resolved.push_back(s);
      } else {
        // Case 2 (a): gather the sharded contracting dims away.
        State g = st0;
        if (g.matmul_case != 4) g.matmul_case = 2;
        for (const std::string& j : contracting) {
          DimSharding* ja = FindDim(g.a, j);
          DimSharding* jb = FindDim(g.b, j);
          if (ja->axes == jb->axes) continue;
          if (!ja->axes.empty()) {
            Gather(g, true, j, ja->axes,
                   "case 2: " + g.a.name + " is sharded on contracting " + j);
          }
          if (!jb->axes.empty()) {
            Gather(g, false, j, jb->axes,
                   "case 2: " + g.b.name + " is sharded on contracting " + j);
          }
        }
        g.description +=
            "all-gather the contracting shards, then a local matmul";
        resolved.push_back(g);
        // Case 2 (b): slice the replicated operand to match, reduce after.
        State sl = st0;
        if (sl.matmul_case != 4) sl.matmul_case = 2;
        bool ok = true;
        for (const std::string& j : contracting) {
          DimSharding* ja = FindDim(sl.a, j);
          DimSharding* jb = FindDim(sl.b, j);
          if (ja->axes == jb->axes) continue;
          if (jb->axes.empty()) {
            for (const std::string& ax : ja->axes) {
              ok &= !Contains(sl.b.UsedAxes(), ax);
            }
            if (ok) jb->axes = ja->axes;
          } else if (ja->axes.empty()) {
            for (const std::string& ax : jb->axes) {
              ok &= !Contains(sl.a.UsedAxes(), ax);
            }
            if (ok) ja->axes = jb->axes;
          } else {
            ok = false;
          }
        }
        if (ok) {
          sl.description +=
              "slice the other operand locally, matmul, then reduce partial "
              "sums";
          resolved.push_back(sl);
        }
      }
      for (size_t r = 0; r < resolved.size(); ++r) {
        const State& s = resolved[r];
        ArraySpec c = NaturalOutput(s, contracting);
        bool is_default = plans.empty() || (r == 0 && plan_is_default.empty());
        if (!c.unreduced.empty() && !spec_.out) {
          plans.push_back(Finish(s, contracting, -1));
          plan_is_default.push_back(plans.size() == 1);
          for (size_t d = 0; d < c.dims.size(); ++d) {
            // Reduce-scatter onto a free dim that divides evenly.
            double n = AxesSize(c.unreduced) * AxesSize(c.dims[d].axes);
            if (std::fmod(dims_.at(c.dims[d].dim), n) != 0) continue;
            plans.push_back(Finish(s, contracting, static_cast<int>(d)));
            plan_is_default.push_back(false);
          }
        } else {
          plans.push_back(Finish(s, contracting, -1));
          plan_is_default.push_back(is_default && plans.size() == 1);
        }
      }
    }
    SCALEMODEL_CHECK(!plans.empty());
    MatmulAnalysis out;
    out.contracting = contracting;
    out.plan = plans[0];
    for (size_t i = 1; i < plans.size(); ++i) {
      if (plans[i].t_total < out.plan.t_total)
        out.alternatives.push_back(plans[i]);
    }
    std::sort(out.alternatives.begin(), out.alternatives.end(),
              [](const MatmulPlan& x, const MatmulPlan& y) {
                return x.t_total < y.t_total;
              });
    return out;
  }

 private:
  const MatmulSpec& spec_;
  const Mesh& mesh_;
  const MeshLayout& layout_;
  const hw::System& sys_;
  const std::map<std::string, double>& dims_;
  MatmulOptions opt_;
};

}  // namespace

Result<MatmulAnalysis> AnalyzeShardedMatmul(
    const MatmulSpec& spec, const Mesh& mesh, const MeshLayout& layout,
    const hw::System& sys, const std::map<std::string, double>& dims,
    const MatmulOptions& options) {
  Analyzer a(spec, mesh, layout, sys, dims, options);
  return a.Run();
}

}  // namespace scalemodel::sharding
