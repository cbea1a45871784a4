#include "tools/load.hpp"

#include "input/input_loader.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::cli {

InputBundle load_command_input(const std::string& path) {
  LoadOptions options;
  options.link_names = [](const ClusterSpec& cluster, int gpus) {
    const auto graph = topologies::ClusterGraph::build(cluster, gpus);
    std::vector<std::string> names;
    for (const auto& l : graph.links()) names.push_back(l.name);
    return names;
  };
  return load_input(path, options);
}

}  // namespace clustersim::cli
