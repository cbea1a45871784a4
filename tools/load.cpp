#include "tools/load.hpp"

#include "input/input_loader.hpp"
#include "models/transformer.hpp"
#include "tools/step_inputs.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::cli {

CommandInput load_command_input(const std::string& path) {
  LoadOptions options;
  options.link_names = [](const ClusterSpec& cluster, int gpus) {
    const auto graph = topologies::ClusterGraph::build(cluster, gpus);
    std::vector<std::string> names;
    for (const auto& l : graph.links()) names.push_back(l.name);
    return names;
  };
  CommandInput input{load_input(path, options), {}};
  input.checkpointing =
      input.checkpointing.resolved_for(models::count_parameters(input.scenario.model).total());
  input.calibrations = load_step_calibrations(input.scenario);
  return input;
}

}  // namespace clustersim::cli
