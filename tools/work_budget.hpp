// --max-memory SIZE: the memory budget of the commands that simulate steps (run, campaign,
// validate, calibrate --runs). A step estimated above it (step/work_estimate.hpp) is refused
// with exit 2 before anything is simulated.
#pragma once

#include <cstdint>
#include <string>

#include "step/simulate_step.hpp"
#include "tools/cli.hpp"

namespace clustersim::cli {

// Without --max-memory, the budget is this fraction of the machine's physical memory: the other
// half is left to the system and to whatever else runs (sweeps and validations run several
// simulations at once, each with its own budget).
inline constexpr double kDefaultMemoryFraction = 0.5;

// The option, for each command's option list.
OptionSpec max_memory_option();

// The machine's physical memory in bytes (sysconf), 0 when it cannot be read.
double physical_memory_bytes();

// The budget --max-memory gives (a size as parse_size reads it: 512M, 4G, 1.5T), else the
// default fraction of physical memory (no limit when it cannot be read) shared by the `jobs`
// simulations a command runs at once; UsageError naming --max-memory for a bad size.
step::WorkBudget work_budget(const Args& args, int jobs = 1);

// work_budget(args, jobs) as the value of a child process's --max-memory (bytes), "" for none.
std::string child_max_memory(const Args& args, int jobs);

}  // namespace clustersim::cli
