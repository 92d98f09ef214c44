// Benchmark of `scalemodel profile`'s reader (trace::ReadProfile): writes a
// synthetic PyTorch profiler trace of about N MB (cpu_ops with input shapes,
// their GEMM kernels, elementwise kernels, NCCL all-reduces with their
// message sizes, ProfilerStep markers), then reads it, and prints the wall
// time, the read rate and the process's peak RSS (getrusage).
//
//   profile_bench [MB=200] [--gz] [--keep PATH]
//
// docs/performance.md records the figures.
#include <sys/resource.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fmt/format.h"
#include "scalemodel/catalog/catalog.h"
#include "scalemodel/trace/profile.h"

namespace {

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double PeakRssMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

// Writes events until the file holds about `mb` MB; returns the events.
long long WriteTrace(const std::string& path, double mb, bool gz) {
  gzFile g = gz ? gzopen(path.c_str(), "wb1") : nullptr;
  std::FILE* f = gz ? nullptr : std::fopen(path.c_str(), "wb");
  if (g == nullptr && f == nullptr) return -1;
  std::string buf;
  double written = 0;
  auto flush = [&] {
    if (g != nullptr) {
      gzwrite(g, buf.data(), static_cast<unsigned>(buf.size()));
    } else {
      std::fwrite(buf.data(), 1, buf.size(), f);
    }
    written += static_cast<double>(buf.size());
    buf.clear();
  };
  buf = "{\"schemaVersion\":1,\"traceEvents\":[\n";
  long long events = 0, ext = 1;
  double ts = 0;
  for (int step = 0; written + static_cast<double>(buf.size()) < mb * 1e6;
       ++step) {
    const double step_start = ts;
    for (int op = 0; op < 2000; ++op, ++ext) {
      const int kind = op % 4;
      const char* name = kind == 0   ? "aten::mm"
                         : kind == 1 ? "aten::addmm"
                         : kind == 2 ? "aten::add"
                                     : "record_param_comms";
      const std::string args =
          kind == 0
              ? R"("Input Dims": [[4096, 8192], [8192, 8192]], "Input type": ["c10::BFloat16", "c10::BFloat16"])"
          : kind == 1
              ? R"("Input Dims": [[8192], [4096, 8192], [8192, 8192], [], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])"
          : kind == 2
              ? R"("Input Dims": [[4096, 8192], [4096, 8192], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"])"
              : R"("Collective name": "allreduce", "In msg nelems": 33554432, "Out msg nelems": 33554432, "Group size": 8, "dtype": "BFloat16")";
      buf += fmt::format(
          R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 12.5, "args": {{"External id": {}, "Record function id": 0, "Sequence number": {}, {}}}}},)"
          "\n",
          name, ts, ext, ext, args);
      const char* kernel =
          kind == 3 ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, "
                      "unsigned long, ncclWork*)"
          : kind == 2
              ? "void at::native::vectorized_elementwise_kernel<4, "
                "at::native::CUDAFunctor_add<c10::BFloat16> >(int, "
                "at::native::CUDAFunctor_add<c10::BFloat16>, "
                "at::detail::Array<char*, 3>)"
              : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_"
                "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas";
      const double dur = kind == 2 ? 140.0 : kind == 3 ? 480.0 : 900.0;
      buf += fmt::format(
          R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}, "args": {{"External id": {}, "device": 0, "stream": 7, "correlation": {}, "registers per thread": 168, "shared memory": 213504, "blocks per SM": 1.0, "warps per SM": 8.0, "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 13}}}},)"
          "\n",
          kernel, ts + 5, dur, ext, ext);
      ts += dur + 2;
      events += 2;
      if (buf.size() > (1 << 20)) flush();
    }
    buf += fmt::format(
        R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": {:.3f}, "args": {{}}}},)"
        "\n",
        step, step_start, ts - step_start);
    ++events;
  }
  buf +=
      R"({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}]})";
  buf += "\n";
  ++events;
  flush();
  if (g != nullptr) gzclose(g);
  if (f != nullptr) std::fclose(f);
  return events;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace scalemodel;
  double mb = 200;
  bool gz = false;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gz") {
      gz = true;
    } else if (a == "--keep" && i + 1 < argc) {
      keep = argv[++i];
    } else {
      mb = std::atof(a.c_str());
    }
  }
  if (mb <= 0) {
    std::fprintf(stderr,
                 "usage: profile_bench [MB=200] [--gz] [--keep PATH]\n");
    return 2;
  }
  const std::string path =
      keep.empty() ? fmt::format("/tmp/profile_bench_{}.json{}",
                                 static_cast<long>(getpid()), gz ? ".gz" : "")
                   : keep;
  auto cat = catalog::Catalog::Builtin();
  auto sys = cat->FindSystem("h100:8x1");
  if (!sys) return 1;
  auto t0 = std::chrono::steady_clock::now();
  const long long events = WriteTrace(path, mb, gz);
  if (events < 0) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  auto t1 = std::chrono::steady_clock::now();
  const double rss_before = PeakRssMb();
  const double cpu_before = CpuSeconds();
  auto r = trace::ReadProfile(path, *sys, {});
  auto t2 = std::chrono::steady_clock::now();
  const double read_cpu = CpuSeconds() - cpu_before;
  if (keep.empty()) std::remove(path.c_str());
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().ToString().c_str());
    return 1;
  }
  const double write_s = std::chrono::duration<double>(t1 - t0).count();
  const double read_s = std::chrono::duration<double>(t2 - t1).count();
  const double size_mb = static_cast<double>(r->bytes_read) / 1e6;
  fmt::print(
      "trace {} ({:.0f} MB on disk, {} events, {} device events) written in "
      "{:.1f} s\nread in {:.2f} s wall, {:.2f} s CPU ({:.0f} MB/s of file "
      "per CPU second); peak RSS {:.0f} MB (before reading {:.0f} MB)\n",
      gz ? "gzip" : "json", size_mb, events, r->device_events, write_s, read_s,
      read_cpu, size_mb / read_cpu, PeakRssMb(), rss_before);
  for (const trace::OpStats& c : r->classes) {
    fmt::print("  {:<12} {:>8.3f} s measured, efficiency {:.1f}%\n", c.op_class,
               c.measured_s, 100 * c.efficiency());
  }
  return 0;
}
