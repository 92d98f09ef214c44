// `scalemodel profile`'s reader on traces the test writes: ops that run at
// known fractions of their roofline must be reported at those fractions
// (within 2%), in the PyTorch profiler's format and in JAX/XLA's, plain and
// gzip; malformed files give one sentence.
#include "scalemodel/trace/profile.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../testing/catalog.h"
#include "fmt/format.h"
#include "scalemodel/net/collective.h"

namespace scalemodel::trace {
namespace {

using scalemodel::testing::System;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/scalemodel_profile_" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  if (path.size() > 3 && path.substr(path.size() - 3) == ".gz") {
    gzFile g = gzopen(path.c_str(), "wb");
    ASSERT_NE(g, nullptr);
    gzwrite(g, text.data(), static_cast<unsigned>(text.size()));
    gzclose(g);
    return;
  }
  std::ofstream(path, std::ios::binary) << text;
}

const OpStats* Find(const std::vector<OpStats>& v, const std::string& name) {
  for (const OpStats& s : v) {
    if (s.name == name || s.op_class == name) return &s;
  }
  return nullptr;
}

void ExpectFraction(const OpStats* s, double want, const std::string& what) {
  ASSERT_NE(s, nullptr) << what << " missing";
  EXPECT_NEAR(s->efficiency(), want, 0.02 * want)
      << what << ": roofline " << s->roofline_s << " s of " << s->known_s;
}

// A PyTorch trace: cpu_ops with input shapes and their kernels at known
// fractions of the chip's roofline; `kernels_first` puts every GPU event
// before the CPU ones (ops resolved at the end).
struct TorchTrace {
  double peak, hbm;  // bf16 FLOP/s, bytes/s
  double ar_roofline;
  std::vector<std::string> cpu, gpu;
  long long ext = 1;
  double ts = 0;

  void Op(const std::string& name, const std::string& args,
          const std::vector<double>& kernel_us, const std::string& kernel) {
    cpu.push_back(fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"{}","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"External id":{},{}}}}})",
        name, ts, ext, args));
    for (double d : kernel_us) {
      gpu.push_back(fmt::format(
          R"({{"ph":"X","cat":"kernel","name":"{}","pid":0,"tid":7,"ts":{},"dur":{:.6f},"args":{{"External id":{},"device":0,"stream":7}}}})",
          kernel, ts + 1, d, ext));
      ts += d + 1;
    }
    ++ext;
  }
  // An op whose roofline is max(flops / peak, bytes / hbm), at `fraction`,
  // split over `kernels` kernels.
  void Timed(const std::string& name, const std::string& args, double flops,
             double bytes, double fraction, int kernels = 1) {
    const double t = std::max(flops / peak, bytes / hbm) / fraction * 1e6;
    Op(name, args, std::vector<double>(kernels, t / kernels),
       "sm90_xmma_gemm_bf16bf16_bf16f32");
  }
  std::string Text(bool kernels_first) const {
    std::vector<std::string> all = kernels_first ? gpu : cpu;
    const auto& rest = kernels_first ? cpu : gpu;
    all.insert(all.end(), rest.begin(), rest.end());
    all.push_back(
        R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":0,"dur":1000})");
    all.push_back(
        R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":3000})");
    std::string s =
        R"({"schemaVersion":1,"deviceProperties":[],"traceEvents":[)";
    for (size_t i = 0; i < all.size(); ++i) s += (i ? ",\n" : "\n") + all[i];
    return s + "\n]}\n";
  }
};

TorchTrace MakeTorch(const hw::System& sys) {
  TorchTrace t;
  t.peak = sys.chip.Peak(hw::Dtype::kBf16).si();
  t.hbm = sys.chip.hbm_bandwidth.si();
  const std::string bf = R"("c10::BFloat16")";
  // mm 8192^3 at 60%, in two kernels.
  const double n = 8192;
  t.Timed("aten::mm",
          R"("Input Dims":[[8192,8192],[8192,8192]],"Input type":[)" + bf +
              "," + bf + "]",
          2 * n * n * n, 3 * n * n * 2, 0.60, 2);
  // linear over [4, 2048, 4096] x [11008, 4096]^T + bias at 45%.
  t.Timed(
      "aten::linear",
      R"("Input Dims":[[4,2048,4096],[11008,4096],[11008]],"Input type":[)" +
          bf + "," + bf + "," + bf + "]",
      2.0 * 8192 * 4096 * 11008,
      (8192.0 * 4096 + 11008.0 * 4096 + 8192.0 * 11008 + 11008) * 2, 0.45);
  // SDPA forward, q k v [2, 32, 4096, 128], at 50%.
  const double q = 2.0 * 32 * 4096 * 128;
  t.Timed(
      "aten::_scaled_dot_product_flash_attention",
      R"("Input Dims":[[2,32,4096,128],[2,32,4096,128],[2,32,4096,128]],"Input type":[)" +
          bf + "," + bf + "," + bf + "]",
      4.0 * 2 * 32 * 4096 * 4096 * 128, 4 * q * 2, 0.50);
  // The trace's own FLOPs (with_flops=True) on an op of unknown shape rule.
  t.Timed("aten::convolution",
          R"("Input Dims":[[8,64,56,56]],"Input type":[)" + bf +
              R"(],"flops":5e11)",
          5e11, 0, 0.30);
  // NCCL all-reduce of 512 MiB bf16 over the node's 8 GPUs at 70%.
  const double v = 268435456.0 * 2;
  auto c = net::EstimateCollective(sys, net::Collective::kAllReduce,
                                   units::Bytes(v), {sys.axes[0].name});
  EXPECT_TRUE(c.has_value());
  t.ar_roofline = c->time.si();
  t.Op(
      "record_param_comms",
      R"("Collective name":"allreduce","In msg nelems":268435456,"Out msg nelems":268435456,"Group size":8,"dtype":"BFloat16")",
      {t.ar_roofline / 0.7 * 1e6},
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned "
      "long, ncclWork*)");
  // Elementwise kernels: measured, no roofline.
  t.Op("aten::add", R"("Input Dims":[[4096],[4096]])", {20, 30},
       "void at::native::vectorized_elementwise_kernel<4>(int)");
  return t;
}

class PyTorchProfile : public ::testing::TestWithParam<int> {};

TEST_P(PyTorchProfile, ReportsKnownFractionsOfPeak) {
  const hw::System sys = System("h100:8x1");
  const TorchTrace t = MakeTorch(sys);
  const bool kernels_first = GetParam() & 1, gz = GetParam() & 2;
  const std::string path =
      TempPath(fmt::format("torch{}.json{}", GetParam(), gz ? ".gz" : ""));
  WriteFile(path, t.Text(kernels_first));
  auto r = ReadProfile(path, sys, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->format, "pytorch");
  EXPECT_EQ(r->steps, 2);
  EXPECT_NEAR(r->step_s, 2e-3, 1e-9);
  EXPECT_EQ(r->devices, 1);
  EXPECT_EQ(r->device_events, 8);
  ExpectFraction(Find(r->ops, "aten::mm [8192,8192], [8192,8192]"), 0.60, "mm");
  ExpectFraction(
      Find(r->ops, "aten::linear [4,2048,4096], [11008,4096], [11008]"), 0.45,
      "linear");
  ExpectFraction(Find(r->classes, "attention"), 0.50, "attention");
  ExpectFraction(Find(r->ops, "aten::convolution [8,64,56,56]"), 0.30,
                 "trace's own flops");
  const OpStats* ar = Find(r->classes, "collective");
  ExpectFraction(ar, 0.70, "all-reduce");
  // nccl-tests' bus bandwidth: 2 (n - 1) / n of the message per second.
  const double v = 268435456.0 * 2;
  EXPECT_NEAR(ar->bus_bandwidth(), 2 * 7.0 / 8 * v / (t.ar_roofline / 0.7),
              1e-6 * ar->bus_bandwidth());
  EXPECT_EQ(ar->Bound(), "network");
  EXPECT_EQ(Find(r->ops, "aten::mm [8192,8192], [8192,8192]")->Bound(),
            "compute");
  const OpStats* elem = Find(r->classes, "elementwise");
  ASSERT_NE(elem, nullptr);
  EXPECT_NEAR(elem->measured_s, 50e-6, 1e-12);
  EXPECT_EQ(elem->Bound(), "unknown");
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Orders, PyTorchProfile, ::testing::Values(0, 1, 2, 3));

// More ops than the reader keeps at once (64Ki): the ones whose kernels
// came are added up and dropped on the way, none lost or counted twice.
TEST(PyTorchProfileMemory, ManyOpsStreamThrough) {
  const hw::System sys = System("h100:8x1");
  TorchTrace t;
  t.peak = sys.chip.Peak(hw::Dtype::kBf16).si();
  t.hbm = sys.chip.hbm_bandwidth.si();
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    t.Timed(
        "aten::mm",
        R"("Input Dims":[[1024,1024],[1024,1024]],"Input type":["c10::BFloat16","c10::BFloat16"])",
        2.0 * 1024 * 1024 * 1024, 3.0 * 1024 * 1024 * 2, 0.4);
  }
  const std::string path = TempPath("many.json");
  WriteFile(path, t.Text(false));
  auto r = ReadProfile(path, sys, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const OpStats* mm = Find(r->ops, "aten::mm [1024,1024], [1024,1024]");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->count, n);
  ExpectFraction(mm, 0.4, "mm");
  std::remove(path.c_str());
}

TEST(XlaProfile, ReportsKnownFractionsOfPeak) {
  const hw::System sys = System("tpu-v5p:2x2x1");
  const double peak = sys.chip.Peak(hw::Dtype::kBf16).si();
  const double hbm = sys.chip.hbm_bandwidth.si();
  const double n = 8192, f = 2 * n * n * n, b = 3 * n * n * 2;
  const double conv_us = std::max(f / peak, b / hbm) / 0.8 * 1e6;
  const double copy_us = 1e9 / hbm / 0.5 * 1e6;
  const double v = 4096.0 * 8192 * 2;
  auto c = net::EstimateCollective(sys, net::Collective::kAllReduce,
                                   units::Bytes(v), {"x", "y"});
  ASSERT_TRUE(c.has_value());
  const double ar_us = c->time.si() / 0.6 * 1e6;
  std::string s = R"J({"displayTimeUnit":"ns","traceEvents":[
{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:TPU:0"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"Steps"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"XLA Ops"}},
{"ph":"M","pid":1,"tid":3,"name":"thread_name","args":{"name":"XLA Modules"}},
{"ph":"M","pid":9,"name":"process_name","args":{"name":"/host:CPU"}},
{"ph":"X","pid":9,"tid":1,"name":"PjitFunction(train_step)","ts":0,"dur":99999},
{"ph":"X","pid":1,"tid":3,"name":"jit_train_step(1)","ts":0,"dur":50000},
{"ph":"X","pid":1,"tid":1,"name":"0","ts":0,"dur":50000},
{"ph":"X","pid":1,"tid":1,"name":"1","ts":50000,"dur":50000},
)J";
  s += fmt::format(
      R"J({{"ph":"X","pid":1,"tid":2,"name":"convolution.5","ts":10,"dur":{:.6f},"args":{{"long_name":"%convolution.5 = bf16[8192,8192]{{1,0}} convolution(%a, %b), dim_labels=bf_io->bf","flops":{},"bytes_accessed":{}}}}},
{{"ph":"X","pid":1,"tid":2,"name":"copy.2","ts":20000,"dur":{:.6f},"args":{{"long_name":"%copy.2 = f32[16384,16384]{{0,1}} copy(%c)","flops":0,"bytes_accessed":1e9}}}},
{{"ph":"X","pid":1,"tid":2,"name":"all-reduce.3","ts":30000,"dur":{:.6f},"args":{{"long_name":"%all-reduce.3 = bf16[4096,8192]{{1,0}} all-reduce(%x), channel_id=1, replica_groups={{{{0,1,2,3}}}}, to_apply=%add"}}}}
]}}
)J",
      conv_us, f, b, copy_us, ar_us);
  const std::string path = TempPath("xla.trace.json.gz");
  WriteFile(path, s);
  auto r = ReadProfile(path, sys, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->format, "xla");
  EXPECT_EQ(r->device_events, 3);
  EXPECT_EQ(r->steps, 2);
  ExpectFraction(Find(r->classes, "matmul"), 0.8, "convolution");
  ExpectFraction(Find(r->ops, "copy.2"), 0.5, "copy");
  EXPECT_EQ(Find(r->ops, "copy.2")->Bound(), "memory");
  ExpectFraction(Find(r->classes, "collective"), 0.6, "all-reduce");
  std::remove(path.c_str());
}

struct Bad {
  const char* name;
  const char* text;  // written as the file (".gz" names: as gzip)
  const char* message;
};

class MalformedProfile : public ::testing::TestWithParam<Bad> {};

TEST_P(MalformedProfile, OneSentence) {
  const Bad& b = GetParam();
  const std::string path = TempPath(b.name);
  const bool raw_gz = std::string(b.name) == "corrupt.json.gz";
  if (raw_gz) {
    // A gzip header and then garbage.
    std::ofstream(path, std::ios::binary)
        << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10)
        << "not deflate data at all, not at all";
  } else {
    WriteFile(path, b.text);
  }
  auto r = ReadProfile(path, System("h100:8x1"), {});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().code, ErrorCode::kInternal);
  EXPECT_EQ(r.error().where, "trace");
  std::string msg = r.error().message;
  const size_t at = msg.find(path);
  if (at != std::string::npos) msg.replace(at, path.size(), "FILE");
  EXPECT_EQ(msg, b.message);
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Files, MalformedProfile,
    ::testing::Values(
        Bad{"text.json", "hello, profiler",
            "'FILE' is not JSON: parse error at byte 1; expected a Chrome "
            "trace-event file"},
        Bad{"truncated.json",
            R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2},{"ph":)",
            "'FILE' is not JSON: parse error at byte 75; expected a Chrome "
            "trace-event file"},
        Bad{"object.json", R"({"events":[]})",
            "'FILE' has no traceEvents array (found a JSON object); expected "
            "a Chrome trace {\"traceEvents\": [...]} or an array of events"},
        Bad{"number.json", "42",
            "'FILE' has no traceEvents array (found a JSON number); expected "
            "a Chrome trace {\"traceEvents\": [...]} or an array of events"},
        Bad{"empty.json", R"({"traceEvents":[]})",
            "found no GPU kernels and no XLA device ops in 0 events; expected "
            "a PyTorch profiler trace (kernel events) or a JAX/XLA trace (XLA "
            "Ops)"},
        Bad{"cpu_only.json",
            R"([{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":1,"dur":2}])",
            "found no GPU kernels and no XLA device ops in 1 events; expected "
            "a PyTorch profiler trace (kernel events) or a JAX/XLA trace (XLA "
            "Ops)"},
        Bad{"bad_ts.json",
            R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"gemm","ts":"soon","dur":2}]})",
            "'FILE': event 1 (gemm): expected a number for ts (found "
            "\"soon\")"},
        Bad{"corrupt.json.gz", "",
            "'FILE' is not a readable gzip file (corrupt data after 0 bytes)"}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& c : n) {
        if (c == '.') c = '_';
      }
      return n;
    });

TEST(MissingProfile, CannotOpen) {
  auto r = ReadProfile("/no/such/trace.json", System("h100:8x1"), {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "cannot open '/no/such/trace.json': no such file");
}

}  // namespace
}  // namespace scalemodel::trace
