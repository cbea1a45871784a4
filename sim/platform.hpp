// The SimGrid platform of one cluster, built in C++ from the cluster graph (no XML), behind an
// interface of project types only: nothing outside sim/ sees a SimGrid type.
//
// Mapping (ClusterGraph -> SimGrid 3.32):
//   - every GPU is a SimGrid host ("node3/gpu5"); every NVSwitch is a host too ("node3/nvswitch"),
//     because NVLS traffic ends there (multimem reductions happen in the switch);
//   - every graph link becomes TWO SimGrid links, one per direction ("<name>/up", "<name>/down"):
//     links are full duplex, `bandwidth_Bps` is each direction's capacity (split-duplex);
//   - routes are the graph's routes (ClusterGraph::route, NCCL PXN included), looked up lazily
//     through a custom routing zone and cached per (source, destination) pair, so a 16384-GPU
//     platform does not hold 16384^2 routes.
//
// Network model: SimGrid's CM02 (Casanova & Marchal 2002, SimGrid network/model:CM02), chosen on
// purpose: a flow's bandwidth share is the max-min fair share over the links it crosses, with no
// TCP-specific corrections, so an uncontended flow of S bytes over a bottleneck of B bytes/s takes
// exactly S / B and closed forms (alpha-beta ring formulas, nccl-tests busbw) hold. SimGrid's
// default LV08 multiplies latencies by 13.01 and bandwidths by 0.97 (fitted to TCP in 2008,
// docs/source/Configuring_SimGrid.rst); NVLink and RDMA are not TCP. The two factors stay as
// named, calibratable parameters (NetworkModelOptions). Cross-traffic (a 5% ACK flow on the reverse
// path, a TCP effect) is switched off for the same reason.
//
// Latency: SimGrid links carry NO latency. Every latency of an NCCL operation comes from NCCL's
// own cost model (nccl/nccl_model.hpp, tuning.cc hwLat/baseLat), which already includes the wire
// latency of each hop; adding the graph's physical latencies on top would count them twice. The
// graph's latencies remain available through ClusterGraph::route_latency_s.
//
// SimGrid 3.32 keeps global state (the simulated clock, the configuration) after its engine is
// destroyed, so ONE Platform (one Simulation) may exist per process, ever. A second construction
// throws std::logic_error. Run independent simulations in separate processes (see
// run_isolated in sim/isolated.hpp, or the `clustersim collective` command).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "topologies/cluster_graph.hpp"

namespace clustersim::sim {

// Parameters of SimGrid's network model. Defaults reproduce CM02 exactly.
struct NetworkModelOptions {
  // SimGrid network/bandwidth-factor: every flow gets at most this fraction of a link.
  // CM02 default 1 (SimGrid docs/source/Configuring_SimGrid.rst, "network/model"). LV08 uses 0.97.
  double bandwidth_factor = 1.0;
  // SimGrid network/latency-factor. CM02 default 1 (same source). Irrelevant while links carry
  // no latency (see above); kept so a calibration that puts latency on links can set it.
  double latency_factor = 1.0;
  // SimGrid network/weight-S: RTT-unfairness weight (bytes). CM02 default 0 = plain max-min.
  double weight_S = 0.0;
  // SimGrid maxmin/precision: numerical precision of the max-min solver (its default 1e-5).
  double maxmin_precision = 1e-5;
};

// SimGrid settings of the engine's actors (SimGrid calls them contexts). They are passed to the
// engine's constructor as --cfg= arguments: SimGrid 3.32 picks its context factory when the
// engine is created, and a contexts/factory set afterwards is silently ignored.
struct EngineOptions {
  // Stack of each rank actor, KiB (contexts/stack-size; SimGrid's default 8192, the Chord
  // 2-million-node runs used 16). The engine's helper actors have their own, smaller stacks.
  int actor_stack_KiB = 64;
  // One protected page below each actor stack (contexts/guard-size 1, SimGrid's default), which
  // turns a stack overflow into a crash instead of silent memory corruption. Off by default: a
  // guard page is one mmap'ed, mprotect'ed region per actor, and a large step creates and
  // destroys hundreds of thousands of short-lived actors (sim/README.md, "Speed"); Linux also
  // caps a process at 65536 mappings (vm.max_map_count). Results do not depend on it. On for
  // debugging a suspected overflow.
  bool stack_guard = false;
  // contexts/factory: how actors switch. "raw" (SimGrid's own assembly context switch, its
  // default on x86-64), "ucontext", "boost" or "thread" (one OS thread per actor).
  std::string context_factory = "raw";
};

// The arguments the SimGrid engine is created with: "--log=..." to keep SimGrid's informational
// messages out of our output, then one "--cfg=name:value" per network model and engine setting.
std::vector<std::string> engine_arguments(const NetworkModelOptions& network,
                                          const EngineOptions& engine);

// Bytes carried by one link, per direction, over the simulated time so far.
struct LinkUsage {
  int link = 0;  // ClusterGraph link id
  std::string name;
  topologies::LinkClass cls = topologies::LinkClass::nvlink;
  double bytes_up = 0;       // a -> b (towards the network)
  double bytes_down = 0;     // b -> a (towards the GPU)
  double bandwidth_Bps = 0;  // nominal, per direction
};

// Totals per link class.
struct LinkClassUsage {
  topologies::LinkClass cls = topologies::LinkClass::nvlink;
  int links = 0;            // links of this class in the graph
  double bytes = 0;         // both directions, all links of the class
  double capacity_Bps = 0;  // sum over links and both directions
  // bytes / (capacity_Bps * elapsed_s): the class's mean utilisation over the elapsed time.
  double utilisation = 0;
  // The busiest single direction of a link of this class: bytes / (bandwidth * elapsed_s).
  double peak_link_utilisation = 0;
  std::string peak_link;  // its name ("" when nothing moved)
};

struct LinkUsageReport {
  double elapsed_s = 0;                 // simulated time the utilisations refer to
  std::vector<LinkClassUsage> classes;  // one per LinkClass, in enum order
  std::vector<LinkUsage> links;         // only links that carried bytes, by link id
};

class Platform {
 public:
  // Builds the SimGrid engine (created with engine_arguments(options, engine)), hosts, links
  // and routing for `graph`. The graph is copied. p2p_nvlink = false routes traffic between
  // GPUs of a node through host memory (both PCIe links; needs a graph with host paths).
  // Throws std::logic_error when a Platform already exists or existed in this process
  // (SimGrid 3.32: one engine per process), std::invalid_argument on bad options.
  Platform(const topologies::ClusterGraph& graph, const NetworkModelOptions& options,
           bool p2p_nvlink = true, const EngineOptions& engine = {});
  ~Platform();
  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  // True once a Platform has been constructed in this process (even if since destroyed).
  static bool engine_used_in_this_process();

  const topologies::ClusterGraph& graph() const;
  const NetworkModelOptions& options() const;
  // "SimGrid 3.32, network model CM02 (bandwidth factor 1, latency factor 1, weight-S 0)".
  std::string describe() const;
  // The engine settings SimGrid holds now, read back from its configuration.
  EngineOptions engine_settings() const;

  // Current state of a link (ClusterGraph id): bandwidth factor applied and whether it is down.
  double link_bandwidth_factor(int link) const;
  bool link_is_down(int link) const;

  // Bytes accounting (fed by the simulation as flows complete).
  LinkUsageReport link_usage(double elapsed_s) const;

  // Implementation (SimGrid objects); defined only inside sim/.
  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace clustersim::sim
