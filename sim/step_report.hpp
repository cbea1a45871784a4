// StepReport as JSON (for `clustersim run --json` and for passing a report out of a child
// process) and as a Chrome/Perfetto trace. No SimGrid here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/scenario.hpp"
#include "sim/step_simulator.hpp"

namespace clustersim::sim {

// Every field of the report except the trace. Times in seconds, memory in GiB (key names say so).
nlohmann::json to_json(const StepReport& report);
// The inverse of to_json (the trace stays empty). Throws nlohmann::json::exception on a
// malformed document.
StepReport step_report_from_json(const nlohmann::json& json);

// Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): one process per node, two threads
// per rank (compute stream, communication stream), slices as complete ("X") events in
// microseconds. Every rank of a class-stage gets its class's slices. When the scenario has more
// than `max_ranks` ranks, only the ranks of each class's first data-parallel replica are written
// (all its tensor-parallel and pipeline ranks); the trace metadata says so.
std::string chrome_trace_json(const StepReport& report, const Scenario& scenario, int max_ranks);

}  // namespace clustersim::sim
