// The subcommands of `clustersim`. Each takes its arguments (after the subcommand name) and
// returns the process exit code: 0 success, 1 a negative verdict (e.g. a regression or a
// validation error above threshold), 2 bad input or usage. ConfigError and cli::UsageError
// escaping a command are turned into exit code 2 by main().
#pragma once

#include <string>
#include <vector>

namespace clustersim::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
  std::string (*usage)();
};

int cmd_check(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_collective(const std::vector<std::string>& args);
int cmd_topo(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_campaign(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);
int cmd_regress(const std::vector<std::string>& args);
int cmd_version(const std::vector<std::string>& args);
int cmd_schema(const std::vector<std::string>& args);
int cmd_init(const std::vector<std::string>& args);

std::string usage_check();
std::string usage_run();
std::string usage_collective();
std::string usage_topo();
std::string usage_calibrate();
std::string usage_validate();
std::string usage_campaign();
std::string usage_sweep();
std::string usage_regress();
std::string usage_version();
std::string usage_schema();
std::string usage_init();
// `calibrate --runs`: the system-parameter fit (tools/cmd_calibrate_runs.cpp).
int calibrate_runs(const std::vector<std::string>& args);
std::string usage_calibrate_runs();

const std::vector<Command>& commands();

// The scenario run when none is given: the seed's optimized 1024-GPU layout.
std::string default_scenario_path();

}  // namespace clustersim::cli
