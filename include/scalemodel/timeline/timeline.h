// Timelines of what the estimators predict (issue #20): one training step
// laid out per pipeline stage and stream (compute, ICI/NVLink collectives,
// DCN/scale-out collectives, pipeline sends, host offload) under the
// schedule (GPipe, 1F1B, interleaved); a serving request's prefill and decode
// iterations; the continuous-batching simulator's requests over time.
// trace/chrome.h writes a Timeline as a Chrome trace-event file that
// Perfetto and chrome://tracing open (docs/trace.md).
//
// Example:
//   auto est = estimate::EstimateTraining(model, sys, cfg);
//   timeline::Timeline t = timeline::TrainingTimeline(*est, cfg, sys);
//   // t.length_s is the simulated step; t.reference_s the estimate's.
#ifndef SCALEMODEL_TIMELINE_TIMELINE_H_
#define SCALEMODEL_TIMELINE_TIMELINE_H_

#include <string>
#include <utility>
#include <vector>

#include "scalemodel/estimate/batching.h"
#include "scalemodel/estimate/inference.h"
#include "scalemodel/estimate/training.h"
#include "scalemodel/hw/system.h"
#include "scalemodel/model/transformer.h"

namespace scalemodel::timeline {

// One interval of work on one stream of one process (seconds from the
// timeline's start). flops and bytes are per chip; 0 where not known.
struct Slice {
  int process = 0;
  int stream = 0;
  int lane = 0;  // set by AssignLanes: slices of a lane never overlap
  std::string name;
  std::string category;  // forward, backward, collective, send, optimizer,
                         // offload, prefill, decode, request
  double start_s = 0;
  double dur_s = 0;
  double flops = 0;
  double bytes = 0;
  // compute, memory, network, host, or "" when it does not apply.
  std::string bound;
  // Further arguments shown with the slice (name -> value as text).
  std::vector<std::pair<std::string, std::string>> args;
  double end_s() const { return start_s + dur_s; }
};

// A dependency drawn as an arrow: a pipeline send to the slice it feeds.
struct Flow {
  int from = 0;  // index into Timeline::slices
  int to = 0;
};

struct Process {
  std::string name;                  // "stage 0", "replica 0"
  std::vector<std::string> streams;  // "compute", "ICI", ...
};

struct Timeline {
  std::string title;
  std::vector<Process> processes;
  std::vector<Slice> slices;
  std::vector<Flow> flows;
  // The end of the last slice, and what the estimator says the same span
  // takes (train's step time, serve's request latency, the simulation's
  // duration).
  double length_s = 0;
  double reference_s = 0;
  std::vector<std::pair<std::string, std::string>> metadata;

  int AddSlice(Slice s);
  // Gives every slice a lane of its (process, stream) such that the slices
  // of a lane do not overlap (greedy, by start time); sets length_s.
  void AssignLanes();
  // Lanes used by each (process, stream) after AssignLanes.
  int Lanes(int process, int stream) const;
};

// One training step of a plan as `estimate::EstimateTraining` evaluated it:
// every stage's forward and backward chunks of every microbatch in the
// schedule's order (dependencies simulated: a chunk starts when its stage is
// free and its input has arrived over the pipeline send), each collective's
// hidden part under the compute it overlaps and its exposed part as a gap
// in the compute, the ZeRO/FSDP gathers before and the gradient reductions
// after, host offload and the optimizer update. Bubbles are gaps. With
// --assume-mfu the step is set by the MFU and the timeline is scaled to it.
Timeline TrainingTimeline(const estimate::TrainingEstimate& est,
                          const estimate::TrainingConfig& cfg,
                          const hw::System& sys);

// One request of a static batch: the prefill, then `output` decode
// iterations of the mean decode step, each split into its parts (matmuls,
// attention, exposed communication, fixed overhead).
Timeline ServingTimeline(const estimate::ServeEstimate& est,
                         const estimate::ServeConfig& cfg,
                         const model::ModelSpec& model, const hw::System& sys);

// The simulator's requests over time, a process per replica: each request's
// wait and prefill (arrival to first token) and its decode (first token to
// last).
Timeline SimulationTimeline(const estimate::SimulationResult& sim);

}  // namespace scalemodel::timeline

#endif  // SCALEMODEL_TIMELINE_TIMELINE_H_
