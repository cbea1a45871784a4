// `clustersim topo [SCENARIO] [--cluster NAME] [--gpus N] [--dot FILE] [--json FILE]`: builds
// the cluster graph of a scenario (or of a cluster preset), prints its counts, link classes,
// bisection bandwidth, the NCCL inputs it implies and the structural checks, and optionally
// writes it as Graphviz DOT and a JSON summary (both atomically).
//
// Exit code 0 when every check passes, 1 when one fails (the report says which), 2 for bad input
// (nothing is written).
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"
#include "input/scenario_loader.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/placement.hpp"

namespace clustersim::cli {

namespace {

using topologies::ClusterGraph;
using topologies::LinkClass;

const std::vector<OptionSpec>& topo_options() {
  static const std::vector<OptionSpec> specs = {
      {"cluster", "", true, false,
       "use the cluster preset NAME (topologies/clusters/NAME.json) instead of a scenario"},
      {"gpus", "", true, false,
       "build only the first N GPUs (default: the scenario's gpus, or the whole cluster)"},
      {"dot", "", true, false, "write the graph as Graphviz DOT to FILE"},
      {"json", "", true, false, "write the summary as JSON to FILE"},
  };
  return specs;
}

void row(std::ostream& os, const std::string& label, const std::string& value) {
  label_row(os, label + "  ", value, 32);
}

std::string gbps(double Bps) {
  return fixed(Bps / 1e9, 1) + " GB/s";
}

}  // namespace

std::string usage_topo() {
  return "usage: clustersim topo [SCENARIO] [--cluster NAME] [--gpus N] [--dot FILE] "
         "[--json FILE]\n\n"
         "Builds the cluster graph of SCENARIO (default: " +
         default_scenario_path() +
         ") or of the cluster preset NAME: GPUs, one NVSwitch per node, NICs, host/PCIe paths, "
         "leaf and spine switches of a two-level fat tree. Prints the counts, the links per "
         "class, the bisection bandwidth, the time to build the graph and the structural checks "
         "(connected, every GPU reaches every other, no dangling NIC, link counts). With a "
         "scenario it also places the ranks (Megatron order: tp, cp, dp, pp) and says whether "
         "TP groups stay inside nodes. Exit code 0 if every check passes, 1 if one fails, 2 for "
         "bad input (then nothing is written).\n\noptions:\n" +
         describe_options(topo_options());
}

namespace {

// What to build: the cluster and GPU count of a scenario or of a cluster preset.
struct TopoInput {
  ClusterSpec cluster;
  std::optional<Scenario> scenario;
  std::string source;
  int gpus = 0;
};

TopoInput topo_input(const Args& args) {
  const auto cluster_name = args.value("cluster");
  if (cluster_name && !args.positional().empty()) {
    throw UsageError("give either a SCENARIO or --cluster NAME, not both");
  }
  TopoInput in;
  if (cluster_name) {
    in.cluster = load_cluster_preset(*cluster_name);
    in.source = "cluster preset " + *cluster_name;
    in.gpus = in.cluster.total_gpus();
  } else {
    const std::string path =
        args.positional().empty() ? default_scenario_path() : args.positional()[0];
    in.scenario = load_scenario(path);
    in.cluster = in.scenario->cluster;
    in.source = path;
    in.gpus = in.scenario->gpus;
  }
  if (args.value("gpus")) {
    const long long n = args.int_or("gpus", 0);
    if (n < 1 || n > in.cluster.total_gpus()) {
      throw UsageError("--gpus must be between 1 and the cluster's " +
                       std::to_string(in.cluster.total_gpus()) + " GPUs, got " + std::to_string(n));
    }
    if (in.scenario && n != in.scenario->gpus) {
      throw UsageError("--gpus " + std::to_string(n) + " differs from the scenario's " +
                       std::to_string(in.scenario->gpus) +
                       " GPUs; use --cluster to build a subset");
    }
    in.gpus = static_cast<int>(n);
  }
  return in;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool tp_groups_inside_nodes(const ClusterGraph& g, const topologies::Placement& placement) {
  bool inside = true;
  for (const auto& group : placement.tp_groups) {
    for (int r : group) {
      if (g.node_of_gpu(placement.gpu_of_rank[static_cast<std::size_t>(r)]) !=
          g.node_of_gpu(placement.gpu_of_rank[static_cast<std::size_t>(group.front())])) {
        inside = false;
      }
    }
  }
  return inside;
}

// The graph's counts, link classes and capacities, one row each.
void describe_graph(std::ostream& os, const ClusterSpec& cluster, const ClusterGraph& g) {
  row(os, "cluster", cluster.name);
  row(os, "GPUs",
      std::to_string(g.num_gpus()) + " on " + std::to_string(g.num_nodes()) + " nodes (" +
          std::to_string(g.gpus_per_node()) + " per node)");
  row(os, "NVSwitches", std::to_string(g.num_nvswitches()));
  row(os, "NICs",
      std::to_string(g.num_nics()) + " (" + std::to_string(g.nics_per_node()) + " per node" +
          (cluster.rail_optimized ? ", rail-optimized" : "") + ")");
  if (g.has_hosts()) row(os, "host PCIe paths", std::to_string(g.num_hosts()));
  row(os, "leaf switches",
      std::to_string(g.num_leaves()) + " (" + std::to_string(g.num_rails()) + " rail" +
          (g.num_rails() > 1 ? "s" : "") + ")");
  row(os, "spine switches", std::to_string(g.num_spines()));
  row(os, "links", std::to_string(g.num_links()));
  for (int k = 0; k < topologies::kNumLinkClasses; ++k) {
    const auto cls = static_cast<LinkClass>(k);
    const int n = g.num_links(cls);
    if (n == 0) continue;
    double bw = 0;
    for (const auto& l : g.links()) {
      if (l.cls == cls) {
        bw = l.bandwidth_Bps;
        break;
      }
    }
    row(os, std::string("  ") + topologies::to_string(cls),
        std::to_string(n) + " x " + gbps(bw) + " per direction");
  }
  row(os, "leaf down / uplink",
      gbps(g.leaf_downlink_Bps()) + " / " + gbps(g.leaf_uplink_Bps()) + " (oversubscription " +
          fixed(cluster.fabric.oversubscription, 2) + ")");
  row(os, "bisection bandwidth", gbps(g.bisection_Bps()) + " per direction");
  row(os, "NVLink / network per GPU",
      gbps(g.nvlink_Bps_per_gpu()) + " / " + gbps(g.net_Bps_per_gpu()));
}

void describe_checks(std::ostream& os, const std::vector<topologies::GraphCheck>& checks, bool ok) {
  os << "Checks: " << (ok ? "all passed" : "FAILED") << "\n";
  for (const auto& c : checks) {
    row(os, c.name, c.passed ? "ok" : "FAILED");
    for (const auto& p : c.problems) os << "      " << p << "\n";
  }
}

nlohmann::json topo_json(const TopoInput& in, const ClusterGraph& g,
                         const std::vector<topologies::GraphCheck>& checks, bool ok,
                         double build_s) {
  nlohmann::json links = nlohmann::json::object();
  for (int k = 0; k < topologies::kNumLinkClasses; ++k) {
    const auto cls = static_cast<LinkClass>(k);
    links[topologies::to_string(cls)] = g.num_links(cls);
  }
  nlohmann::json check_list = nlohmann::json::array();
  for (const auto& c : checks) {
    check_list.push_back({{"name", c.name}, {"passed", c.passed}, {"problems", c.problems}});
  }
  return {
      {"source", in.source},
      {"cluster", in.cluster.name},
      {"gpus", g.num_gpus()},
      {"nodes", g.num_nodes()},
      {"nvswitches", g.num_nvswitches()},
      {"nics", g.num_nics()},
      {"hosts", g.num_hosts()},
      {"leaves", g.num_leaves()},
      {"spines", g.num_spines()},
      {"rails", g.num_rails()},
      {"links", g.num_links()},
      {"links_per_class", links},
      {"leaf_downlink_GBps", g.leaf_downlink_Bps() / 1e9},
      {"leaf_uplink_GBps", g.leaf_uplink_Bps() / 1e9},
      {"bisection_GBps", g.bisection_Bps() / 1e9},
      {"nvlink_GBps_per_gpu", g.nvlink_Bps_per_gpu() / 1e9},
      {"net_GBps_per_gpu", g.net_Bps_per_gpu() / 1e9},
      {"build_s", build_s},
      {"checks_passed", ok},
      {"checks", check_list},
  };
}

}  // namespace

int cmd_topo(const std::vector<std::string>& argv) {
  const Args args(argv, topo_options(), 1);
  const TopoInput in = topo_input(args);
  OutputFiles outputs;
  if (const auto dot = args.value("dot")) outputs.declare(*dot);
  if (const auto json_path = args.value("json")) outputs.declare(*json_path);

  const auto t0 = std::chrono::steady_clock::now();
  std::optional<ClusterGraph> built;
  try {
    built.emplace(ClusterGraph::build(in.cluster, in.gpus));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(in.scenario ? in.scenario->file : "", in.scenario ? "/cluster" : "",
                      e.what());
  }
  const ClusterGraph& g = *built;
  const double build_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  const auto checks = topologies::check_graph(g);
  const double check_s = seconds_since(t1);
  const bool ok = topologies::all_passed(checks);

  std::optional<topologies::Placement> placement;
  bool tp_in_node = true;
  if (in.scenario) {
    placement = topologies::place_ranks(in.scenario->parallelism, in.scenario->gpus);
    tp_in_node = tp_groups_inside_nodes(g, *placement);
  }

  std::ostringstream os;
  os << "Cluster graph of " << in.source << "\n";
  describe_graph(os, in.cluster, g);
  row(os, "built in", human_seconds(build_s) + " (checks " + human_seconds(check_s) + ")");
  if (placement) {
    const auto& p = *placement;
    row(os, "placement",
        "tp " + std::to_string(p.tp) + " x cp " + std::to_string(p.cp) + " x dp " +
            std::to_string(p.dp) + " x pp " + std::to_string(p.pp) + " (Megatron order)");
    row(os, "TP groups inside a node", tp_in_node ? "yes" : "no (TP crosses the network)");
  }
  describe_checks(os, checks, ok);
  std::cout << os.str();

  if (const auto dot = args.value("dot")) outputs.set(*dot, topologies::to_dot(g));
  if (const auto json_path = args.value("json")) {
    nlohmann::json out = topo_json(in, g, checks, ok, build_s);
    if (placement) out["tp_groups_inside_nodes"] = tp_in_node;
    outputs.set(*json_path, json_text(out));
  }
  outputs.commit();
  return ok ? 0 : 1;
}

}  // namespace clustersim::cli
