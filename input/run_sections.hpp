// The scenario's "checkpointing", "cost" and "campaign" sections (structs in
// core/run_sections.hpp). Types, ranges (input/limits.hpp) and enum names checked, unknown keys
// rejected; errors name the file and JSON pointer.
//
// "checkpointing": {"interval": "fixed"|"young"|"daly"|"none", "interval_min" (fixed only),
//   "mode": "blocking"|"async", "size_GB" | "bytes_per_parameter": 14,
//   "write_GBps", "read_GBps" | "save_s", "load_s", "async_stall_s" (async only),
//   "restart": {"reschedule_s", "init_s"}}
// "cost": {"usd_per_gpu_hour", "source"}
// "campaign": {"trials": 1000, "seed": 1, "step_time_s", "mfu", "exposed_comm_share",
//   "max_days": 365, "monitor_interval_min": 10, "trace_trial": 0}
#pragma once

#include "core/json_reader.hpp"
#include "core/run_sections.hpp"

namespace clustersim::input {

CheckpointConfig parse_checkpointing(const JsonNode& node);
CostConfig parse_cost(const JsonNode& node);
CampaignSettings parse_campaign_settings(const JsonNode& node);

}  // namespace clustersim::input
