#include "tools/commands.hpp"

#include "tools/cli.hpp"

namespace clustersim::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"run", "simulate one training step: step time, MFU, where the time goes", cmd_run,
       usage_run},
      {"check", "validate a scenario; parameters, FLOPs and the memory verdict", cmd_check,
       usage_check},
      {"collective", "simulate a collective like nccl-tests and print its table", cmd_collective,
       usage_collective},
      {"topo", "build the cluster graph; check it and draw it (--dot)", cmd_topo, usage_topo},
      {"campaign", "the whole training run with faults: days, failures, goodput, cost",
       cmd_campaign, usage_campaign},
      {"sweep", "run many scenarios over layouts and cluster sizes; rank them", cmd_sweep,
       usage_sweep},
      {"regress", "compare predicted MFU and step time with a stored baseline", cmd_regress,
       usage_regress},
      {"calibrate", "fit network and compute parameters to nccl-tests and GEMM logs", cmd_calibrate,
       usage_calibrate},
      {"validate", "compare predictions with published training runs and microbenchmarks",
       cmd_validate, usage_validate},
      {"schema", "print the JSON Schema of scenarios and presets, from the loader's tables",
       cmd_schema, usage_schema},
      {"init", "write a starting scenario with every defaulted key at its default", cmd_init,
       usage_init},
      {"version", "the clustersim version, its git commit and the SimGrid it runs on", cmd_version,
       usage_version},
  };
  return table;
}

std::string default_scenario_path() {
  return data_path("scenarios/seed-optimized-1024.json");
}

}  // namespace clustersim::cli
