// The scenario's "checkpointing", "cost" and "campaign" sections, loaded and validated
// (input/run_sections.hpp). Times in seconds, sizes in bytes, rates in bytes per second.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/name_table.hpp"
#include "core/source_ref.hpp"

namespace clustersim {

// Mixed-precision Adam state saved per parameter: BF16 weights 2 + FP32 master weights 4 +
// Adam moments 4 + 4 bytes (ZeRO, Rajbhandari et al. 2020, §3.1: 16 bytes with the FP16
// gradients, which a checkpoint does not keep).
inline constexpr double kCheckpointBytesPerParameter = 14;
// Defaults for restarts. Meta RSC's ETTR model assumes 5-minute restart overheads
// [S, docs/faults.md#failure-statistics]; MegaScale brought initialisation under 30 s at >10k
// GPUs [S, docs/faults.md#checkpoint-and-restart].
inline constexpr double kDefaultReschedule_s = 300;
inline constexpr double kDefaultInit_s = 30;
// DeepSeek-V3 Technical Report (arXiv 2412.19437), Table 1: "assuming the rental price of the
// H800 GPU is $2 per GPU hour".
inline constexpr double kDefaultUsdPerGpuHour = 2.0;
inline constexpr const char* kDefaultPriceSource =
    "DeepSeek-V3 Technical Report (arXiv 2412.19437) Table 1: H800 rental at $2 per GPU hour";

// Rows and events one campaign trial may produce (monitoring rows, checkpoints, failures,
// stragglers, loss spikes): the loader refuses input that asks for more, and the campaign a
// computed checkpoint interval that would. 10^7 monitoring rows are about 1 GB of CSV.
inline constexpr double kMaxEventsPerTrial = 1e7;

enum class IntervalPolicy { fixed, young, daly, none };
enum class SaveMode { blocking, async };
inline const NameTable<IntervalPolicy> kIntervalPolicyNames = {{IntervalPolicy::fixed, "fixed"},
                                                               {IntervalPolicy::young, "young"},
                                                               {IntervalPolicy::daly, "daly"},
                                                               {IntervalPolicy::none, "none"}};
inline const NameTable<SaveMode> kSaveModeNames = {{SaveMode::blocking, "blocking"},
                                                   {SaveMode::async, "async"}};
const char* to_string(IntervalPolicy p);
const char* to_string(SaveMode m);

// Checkpointing as given (defaults without the section: no checkpoints, the default restart).
// The size may be per parameter and the save and load times storage rates; resolved_for()
// turns them into bytes and seconds for one model.
struct CheckpointConfig {
  IntervalPolicy policy = IntervalPolicy::none;
  double fixed_interval_s = 0;
  SaveMode mode = SaveMode::blocking;
  double size_bytes = 0;  // the checkpoint's size once resolved (or as given)
  bool size_given = false;
  double bytes_per_parameter = kCheckpointBytesPerParameter;  // when the size is not given
  double save_s = 0;                                          // time to write one checkpoint
  double load_s = 0;                                          // time to read it back at a restart
  double write_Bps = 0;      // storage write rate, when save_s is not given (0 = given)
  double read_Bps = 0;       // storage read rate, when load_s is not given (0 = given)
  double async_stall_s = 0;  // async: training stops only for this (GPU -> host staging)
  double reschedule_s = kDefaultReschedule_s;  // replacing a failed node, relaunching the job
  double init_s = kDefaultInit_s;  // process groups and NCCL communicators at this scale
  SourceRef where;                 // the section
  SourceRef stall_where;           // where async_stall_s was given

  // Size and times for a model of `model_parameters` parameters. Throws ConfigError at
  // async_stall_s when the stall exceeds the full save time.
  CheckpointConfig resolved_for(double model_parameters) const;
  // Throws ConfigError at async_stall_s when, saving asynchronously, the stall exceeds save_s.
  void check_async_stall() const;
};

struct CostConfig {
  double usd_per_gpu_hour = kDefaultUsdPerGpuHour;
  std::string source = kDefaultPriceSource;
};

struct CampaignSettings {
  int trials = 1000;
  std::uint64_t seed = 1;
  std::optional<double> step_time_s;  // given step time (fallback when not simulated)
  std::optional<double> mfu;
  double exposed_comm_share = 0;
  double max_days = 365;
  double monitor_interval_s = 600;
  int trace_trial = 0;
};

}  // namespace clustersim
