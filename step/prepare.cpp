#include "step/prepare.hpp"

#include <string>

#include "core/errors.hpp"

namespace clustersim::step {

namespace {

// Link names in faults must exist and slowed ranks must be placed: ConfigError, not a crash
// deep in the engine.
void check_faults(const Scenario& s, const PreparedStep& p, const StepFaults& faults) {
  for (std::size_t i = 0; i < faults.links.size(); ++i) {
    const auto& l = faults.links[i];
    if (!p.graph.find_link(l.link)) {
      throw ConfigError(s.file, "/faults/links/" + std::to_string(i) + "/link",
                        "no link named \"" + l.link + "\" in the cluster graph");
    }
  }
  for (const auto& g : faults.slow_gpus) {
    if (g.rank < 0 || g.rank >= p.placement.num_ranks()) {
      throw ConfigError(s.file, "/faults",
                        "slowed GPU rank " + std::to_string(g.rank) + " is outside 0.." +
                            std::to_string(p.placement.num_ranks() - 1));
    }
    if (!(g.speed_factor > 0 && g.speed_factor <= 1)) {
      throw ConfigError(s.file, "/faults",
                        "rank " + std::to_string(g.rank) + " speed factor " +
                            std::to_string(g.speed_factor) + " is outside (0, 1]");
    }
  }
}

}  // namespace

PreparedStep prepare_step(const Scenario& s, const StepCalibrations& calibrations,
                          const StepFaults& faults, bool compressed_phase) {
  const models::ComputeCostModel compute(s.cluster.gpu, calibrations.compute);
  PreparedStep p{&s,
                 compressed_phase,
                 workload::build_workload(s, compute, {.compressed_phase = compressed_phase}),
                 topologies::ClusterGraph::build(s.cluster, s.gpus),
                 topologies::place_ranks(s.parallelism, s.gpus),
                 models::flops_per_step(s, models::FlopConvention::megatron),
                 models::flops_per_step(s, models::FlopConvention::palm),
                 models::estimate_memory(s),
                 calibrations.network};
  check_faults(s, p, faults);
  return p;
}

}  // namespace clustersim::step
