// Chrome trace-event files (the JSON format Perfetto and chrome://tracing
// read; docs/trace.md): a timeline::Timeline written as one process per
// pipeline stage or replica, one thread per stream (and per lane where
// slices of a stream overlap), "X" slices whose args carry FLOPs, bytes,
// arithmetic intensity and the bound, and "s"/"f" flow events for pipeline
// sends. A path ending in ".gz" is written gzip-compressed (zlib).
//
// Example:
//   auto ok = trace::WriteChromeTrace(t, "step.json.gz");
#ifndef SCALEMODEL_TRACE_CHROME_H_
#define SCALEMODEL_TRACE_CHROME_H_

#include <string>

#include "scalemodel/base/error.h"
#include "scalemodel/timeline/timeline.h"

namespace scalemodel::trace {

// The trace as JSON text ({"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {...}}); timestamps in microseconds, rounded to nanoseconds.
std::string ChromeTraceJson(const timeline::Timeline& t);

// Writes ChromeTraceJson to `path` (gzip when it ends in ".gz"). Errors: the
// file cannot be written ("trace").
Result<void> WriteChromeTrace(const timeline::Timeline& t,
                              const std::string& path);

// JSON string escaping (quotes included): "a\"b".
std::string JsonString(const std::string& s);

}  // namespace scalemodel::trace

#endif  // SCALEMODEL_TRACE_CHROME_H_
