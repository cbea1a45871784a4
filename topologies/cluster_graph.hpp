// The cluster as a graph (Boost.Graph): GPUs, one NVSwitch per node, NICs, host/PCIe paths,
// and the leaf and spine switches of a two-level fat tree. No SimGrid here: sim/ builds its
// platform from this graph, fault injection names links by Link::name, reports group load by
// LinkClass.
//
// Vertices and links are numbered densely and deterministically (node-major build order), so
// ids are stable for a given (ClusterSpec, gpus). Links are full duplex: `bandwidth_Bps` is the
// capacity of EACH direction. A route is a list of directed hops (Hop), `up` meaning from the
// link's endpoint `a` to its endpoint `b`.
//
// Shape (built from ClusterSpec; only the first ceil(gpus / gpus_per_node) nodes are built):
//   GPU  --nvlink-->  node's NVSwitch                      ("node3/gpu5-nvlink")
//   Rails (nics_per_node == gpus_per_node) with GPUDirect RDMA:
//     GPU --pcie--> its own NIC (same PCIe switch)         ("node3/gpu5-pcie")
//   Otherwise (NICs shared by several GPUs, or no GPUDirect RDMA):
//     GPU --pcie--> node's host (CPU root complex)        ("node3/gpu5-pcie")
//     host --pcie--> NIC                                   ("node3/nic0-pcie")
//   NIC --nic--> leaf                                      ("node3/nic5-leaf")
//   leaf --leaf_uplink--> every spine                      ("leaf2-spine1")
// Leaves: rail-optimized, NIC r of the nodes of group g (nodes_per_leaf consecutive nodes)
// goes to leaf (rail r, group g); otherwise all NICs of a node go to its group's leaf.
// Each leaf's uplink capacity = its downlink capacity (nodes_per_leaf x NICs per node on that
// leaf x nic_Bps) / oversubscription, split evenly over one link to each spine. Spines exist
// only when there is more than one leaf.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/scenario.hpp"

namespace clustersim::topologies {

enum class VertexKind { gpu, nvswitch, host, nic, leaf, spine };
const char* to_string(VertexKind k);

// Link classes, for per-class utilisation reports.
enum class LinkClass {
  nvlink,       // GPU <-> NVSwitch
  pcie,         // GPU <-> NIC, GPU <-> host, host <-> NIC
  nic,          // NIC <-> leaf switch (the NIC's network port and cable)
  leaf_uplink,  // leaf <-> spine
};
const char* to_string(LinkClass c);
constexpr int kNumLinkClasses = 4;

struct Vertex {
  VertexKind kind = VertexKind::gpu;
  // "node3/gpu5", "node3/nvswitch", "node3/host", "node3/nic5", "leaf2", "spine1"
  std::string name;
  int node = -1;   // node index for gpu/nvswitch/host/nic, -1 for switches
  int local = 0;   // index inside the node (gpu, nic); 0 for nvswitch/host
  int index = 0;   // global index among vertices of the same kind (gpu 0..gpus-1, leaf id, ...)
  int rail = -1;   // leaves of a rail-optimized fabric: the rail; NICs: their rail (= local)
  int group = -1;  // leaves: node group (nodes / nodes_per_leaf)
};

struct Link {
  int id = 0;
  std::string name;  // stable and unique, e.g. "node3/gpu5-nvlink", "leaf2-spine1"
  LinkClass cls = LinkClass::nvlink;
  int a = 0;                 // vertex id of one end (the end nearer the GPU)
  int b = 0;                 // vertex id of the other end
  double bandwidth_Bps = 0;  // per direction
  double latency_s = 0;      // one traversal
};

enum class Direction : std::uint8_t { up, down };  // up: a -> b; down: b -> a

// One directed traversal of a link.
struct Hop {
  int link = 0;
  Direction dir = Direction::up;
  friend bool operator==(const Hop&, const Hop&) = default;
};

// Boost graph view: vertex property = vertex id, edge property = link id.
using BoostGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                          boost::property<boost::edge_index_t, int>>;

class ClusterGraph {
 public:
  // Builds the graph for the first `gpus` GPUs of `spec` (1 <= gpus <= spec.total_gpus()).
  // Throws std::invalid_argument naming the parameter when the spec cannot form a cluster
  // (gpus_per_node < 1, nics_per_node < 1 or > gpus_per_node, nodes_per_leaf < 1,
  // oversubscription <= 0, bandwidths <= 0, gpus out of range).
  static ClusterGraph build(const ClusterSpec& spec, int gpus);

  const ClusterSpec& spec() const { return spec_; }

  // Counts.
  int num_gpus() const { return num_gpus_; }
  int num_nodes() const { return num_nodes_; }
  int gpus_per_node() const { return spec_.gpus_per_node; }
  int nics_per_node() const { return spec_.nics_per_node; }
  int num_nics() const { return num_nics_; }
  int num_nvswitches() const { return num_nodes_; }
  int num_hosts() const;
  int num_leaves() const { return static_cast<int>(leaf_vertex_.size()); }
  int num_spines() const { return static_cast<int>(spine_vertex_.size()); }
  int num_vertices() const { return static_cast<int>(vertices_.size()); }
  int num_links() const { return static_cast<int>(links_.size()); }
  int num_links(LinkClass c) const;
  int num_rails() const;                         // nics_per_node when rail-optimized, else 1
  bool has_hosts() const { return has_hosts_; }  // GPU traffic to the NIC crosses the host

  const std::vector<Vertex>& vertices() const { return vertices_; }
  const std::vector<Link>& links() const { return links_; }
  const Vertex& vertex(int id) const { return vertices_.at(static_cast<std::size_t>(id)); }
  const Link& link(int id) const { return links_.at(static_cast<std::size_t>(id)); }
  const BoostGraph& graph() const { return graph_; }

  // Vertex ids by role. gpu: global GPU index 0..num_gpus()-1 (node-major: node * gpn + local).
  int gpu_vertex(int gpu) const;
  int nvswitch_vertex(int node) const;
  int nic_vertex(int nic) const;  // global NIC index: node * nics_per_node + local
  int leaf_vertex(int leaf) const;
  int spine_vertex(int spine) const;
  int node_of_gpu(int gpu) const;
  int local_of_gpu(int gpu) const;
  // The global NIC index GPU `gpu` sends through (rails: its own; shared: contiguous blocks,
  // local GPU i uses local NIC i * nics_per_node / gpus_per_node).
  int nic_of_gpu(int gpu) const;
  // The leaf index NIC `nic` is cabled to.
  int leaf_of_nic(int nic) const;

  // Link lookup by its stable name; nullopt when absent.
  std::optional<int> find_link(std::string_view name) const;
  // Vertex lookup by name; nullopt when absent.
  std::optional<int> find_vertex(std::string_view name) const;

  // The route from GPU `src` to GPU `dst` (global GPU indices) as directed hops, empty when
  // src == dst. Same node: GPU -> NVSwitch -> GPU. Different nodes: source GPU -> NIC ->
  // leaf -> [spine -> leaf] -> NIC -> destination GPU, on the destination GPU's rail; when the
  // source GPU's NIC is on another rail, the data first crosses NVLink to the source-node GPU
  // that owns a NIC on that rail (NCCL's PXN, src/graph/paths.cc, on by default). Spines are
  // crossed only when the two NICs sit on different leaves; the spine is chosen by a
  // deterministic ECMP hash of (src, dst). Precondition: 0 <= src, dst < num_gpus().
  std::vector<Hop> route(int src, int dst) const;
  // The spine index ECMP picks for the pair (deterministic; needs num_spines() > 0).
  int ecmp_spine(int src, int dst) const;
  // Sum of link latencies along a route, seconds.
  double route_latency_s(const std::vector<Hop>& hops) const;
  // Smallest link bandwidth along a route, bytes/s (+inf for an empty route).
  double route_bandwidth_Bps(const std::vector<Hop>& hops) const;

  // Inputs for NCCL's cost model: NVLink bandwidth per GPU (one direction) and network
  // bandwidth available per GPU (NICs of a node x nic_Bps / GPUs of a node), bytes/s.
  double nvlink_Bps_per_gpu() const { return spec_.nvlink_Bps; }
  double net_Bps_per_gpu() const;
  // Total capacity of a leaf's downlinks and uplinks (one direction), bytes/s.
  double leaf_downlink_Bps() const { return leaf_downlink_Bps_; }
  double leaf_uplink_Bps() const { return leaf_uplink_Bps_; }
  // Bisection bandwidth of the inter-node network (one direction): splitting the nodes into
  // first and second halves, the smaller of the halves' NIC capacity and (when the halves sit
  // on different leaves) the uplink capacity of one half's leaves. Bytes/s; 0 with one node.
  double bisection_Bps() const;

 private:
  struct Layout;
  ClusterGraph() = default;
  // Steps of build(), in order.
  Layout lay_out();
  void reserve(const Layout& layout);
  void add_switches(const Layout& layout);
  void add_node(const Layout& layout, int node);
  void add_nics(const Layout& layout, int node, int nics_here);
  void add_gpus(const Layout& layout, int node, int gpus_here, int nvswitch, int host);
  void add_nic_links(const Layout& layout, int node, int nics_here, int host);
  void add_uplinks(const Layout& layout);
  int add_vertex(Vertex v);
  int add_link(std::string name, LinkClass cls, int a, int b, double bandwidth_Bps,
               double latency_s);

  ClusterSpec spec_;
  int num_gpus_ = 0;
  int num_nodes_ = 0;
  int num_groups_ = 0;
  int num_nics_ = 0;
  bool has_hosts_ = false;
  double leaf_downlink_Bps_ = 0;
  double leaf_uplink_Bps_ = 0;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  BoostGraph graph_;
  std::vector<int> gpu_vertex_, nvswitch_vertex_, host_vertex_, nic_vertex_, leaf_vertex_,
      spine_vertex_;
  std::vector<int> gpu_nvlink_link_;  // per GPU: its NVLink
  std::vector<int> gpu_pcie_link_;    // per GPU: its PCIe link (to NIC or host)
  std::vector<int> nic_pcie_link_;    // per NIC: host <-> NIC link (-1 on direct rails)
  std::vector<int> nic_leaf_link_;    // per NIC: its link to the leaf
  std::vector<int> nic_leaf_;         // per NIC: leaf index
  std::vector<int> leaf_spine_base_;  // per leaf: id of its link to spine 0 (then consecutive)
  std::unordered_map<std::string, int> link_by_name_;
  std::unordered_map<std::string, int> vertex_by_name_;
};

// One named structural check and its outcome.
struct GraphCheck {
  std::string name;  // e.g. "connected", "every GPU reaches every other"
  bool passed = false;
  std::vector<std::string> problems;  // readable, empty when passed
};

// Structural checks: the graph is connected; routes between GPUs are contiguous walks from
// source to destination (all pairs inside a node and, across nodes, every GPU to a sample of
// peers covering every rail and leaf); no NIC is dangling (each has a GPU/host side and a leaf);
// link counts per class match the counts the spec implies.
std::vector<GraphCheck> check_graph(const ClusterGraph& g);
// True when every check passed.
bool all_passed(const std::vector<GraphCheck>& checks);

// Graphviz DOT text: one vertex per graph vertex (quoted name, shape/colour by kind) and one
// undirected edge per link, labelled with its name, class and bandwidth.
std::string to_dot(const ClusterGraph& g);

}  // namespace clustersim::topologies
