// Reading a measured profile (issue #20): a PyTorch profiler trace (Chrome
// JSON from torch.profiler's export_chrome_trace or Kineto: GPU kernels,
// the cpu_ops that launched them with "Input Dims", NCCL kernels with their
// message and group sizes) or a JAX/XLA trace (*.trace.json.gz from the
// TensorBoard profiler: XLA ops with flops and bytes_accessed), each op set
// against its roofline on the system's chip (docs/trace.md).
//
// The file is streamed: a SAX parse over a 1 MiB buffer (gzip or plain, by
// content), so memory grows with the distinct op names and the matmul,
// attention and collective ops kept for their kernels, not with the file.
//
// Example:
//   auto r = trace::ReadProfile("rank0.json", h100_system, {});
//   for (const trace::OpStats& c : r->classes) ...  // c.efficiency()
#ifndef SCALEMODEL_TRACE_PROFILE_H_
#define SCALEMODEL_TRACE_PROFILE_H_

#include <functional>
#include <string>
#include <vector>

#include "scalemodel/base/error.h"
#include "scalemodel/hw/system.h"

namespace scalemodel::trace {

// Measured and roofline time of one op (or one class of ops) over the
// trace. The roofline is known for the events with FLOPs or bytes (from the
// trace's own fields, else from the shapes of matmuls and attention) and
// for collectives with a message and group size; efficiency compares the
// two over those events only.
struct OpStats {
  std::string name;
  // matmul, attention, collective, elementwise, memcpy, other
  std::string op_class;
  long long count = 0;
  double measured_s = 0;  // device time, all events
  double known_s = 0;     // device time of the events with a roofline
  double roofline_s = 0;  // their roofline time
  double flops = 0, bytes = 0;
  // Collectives: bytes as nccl-tests count bus traffic (all-reduce
  // 2(n-1)/n of the message, all-gather, reduce-scatter, all-to-all
  // (n-1)/n, send/recv 1x).
  double bus_bytes = 0;
  double compute_s = 0, memory_s = 0;  // roofline parts, for the bound
  double efficiency() const { return known_s > 0 ? roofline_s / known_s : 0; }
  double bus_bandwidth() const { return known_s > 0 ? bus_bytes / known_s : 0; }
  // compute, memory, network, or unknown (no roofline).
  std::string Bound() const;
};

struct ProfileReport {
  std::string format;  // "pytorch" or "xla"
  long long events = 0;
  long long device_events = 0;
  int devices = 0;    // distinct GPUs / TPU cores with device events
  double span_s = 0;  // first device event's start to the last one's end
  double busy_s = 0;  // device time, summed over devices
  int steps = 0;      // step markers (ProfilerStep#N, XLA "Steps")
  double step_s = 0;  // their mean duration
  std::vector<OpStats> classes;  // per class, most time first
  std::vector<OpStats> ops;      // the top ops, most time first
  long long bytes_read = 0;      // of the file (compressed size for .gz)
};

struct ProfileOptions {
  int top = 15;  // ops kept in ProfileReport::ops
  // Called as the file is read (bytes of the file consumed, its size),
  // about every 4 MiB; empty: no progress.
  std::function<void(long long done, long long total)> progress;
};

// Errors ("trace", one sentence): the file cannot be opened, corrupt gzip,
// JSON that does not parse (with the byte offset), no traceEvents array,
// an event whose ts or dur is not a number, a trace with neither GPU
// kernels nor XLA device ops.
Result<ProfileReport> ReadProfile(const std::string& path,
                                  const hw::System& system,
                                  const ProfileOptions& options = {});

}  // namespace scalemodel::trace

#endif  // SCALEMODEL_TRACE_PROFILE_H_
