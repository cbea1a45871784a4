#include "topologies/cluster_graph.hpp"

#include <algorithm>
#include <boost/graph/connected_components.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace clustersim::topologies {

const char* to_string(VertexKind k) {
  switch (k) {
    case VertexKind::gpu: return "gpu";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::host: return "host";
    case VertexKind::nic: return "nic";
    case VertexKind::leaf: return "leaf";
    case VertexKind::spine: return "spine";
  }
  return "?";
}

const char* to_string(LinkClass c) {
  switch (c) {
    case LinkClass::nvlink: return "nvlink";
    case LinkClass::pcie: return "pcie";
    case LinkClass::nic: return "nic";
    case LinkClass::leaf_uplink: return "leaf_uplink";
  }
  return "?";
}

namespace {

void require(bool ok, const std::string& parameter, const std::string& what) {
  if (!ok) throw std::invalid_argument("ClusterGraph::build: " + parameter + " " + what);
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// splitmix64 finaliser (Steele, Lea, Flood 2014): a fixed, platform-independent hash so that
// ECMP choices are the same on every run and machine.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string node_prefix(int node) {
  return "node" + std::to_string(node) + "/";
}

}  // namespace

int ClusterGraph::add_vertex(Vertex v) {
  const int id = static_cast<int>(vertices_.size());
  vertex_by_name_.emplace(v.name, id);
  vertices_.push_back(std::move(v));
  return id;
}

int ClusterGraph::add_link(std::string name, LinkClass cls, int a, int b, double bandwidth_Bps,
                           double latency_s) {
  const int id = static_cast<int>(links_.size());
  link_by_name_.emplace(name, id);
  links_.push_back(Link{id, std::move(name), cls, a, b, bandwidth_Bps, latency_s});
  return id;
}

namespace {

// Throws std::invalid_argument naming the first parameter that cannot form a cluster.
void check_spec(const ClusterSpec& spec, int gpus) {
  require(spec.gpus_per_node >= 1, "gpus_per_node", "must be >= 1, got " + num(spec.gpus_per_node));
  require(spec.nodes >= 1, "nodes", "must be >= 1, got " + num(spec.nodes));
  require(
      gpus >= 1 && gpus <= spec.total_gpus(), "gpus",
      "must be between 1 and the cluster's " + num(spec.total_gpus()) + " GPUs, got " + num(gpus));
  require(spec.nics_per_node >= 1 && spec.nics_per_node <= spec.gpus_per_node, "nics_per_node",
          "must be between 1 and gpus_per_node (" + num(spec.gpus_per_node) + "), got " +
              num(spec.nics_per_node));
  require(spec.fabric.nodes_per_leaf >= 1, "fabric.nodes_per_leaf",
          "must be >= 1, got " + num(spec.fabric.nodes_per_leaf));
  require(spec.fabric.oversubscription > 0, "fabric.oversubscription",
          "must be > 0, got " + num(spec.fabric.oversubscription));
  require(spec.nvlink_Bps > 0, "nvlink_Bps", "must be > 0, got " + num(spec.nvlink_Bps));
  require(spec.nic_Bps > 0, "nic_Bps", "must be > 0, got " + num(spec.nic_Bps));
  require(spec.gpu.pcie_Bps > 0, "gpu.pcie_Bps", "must be > 0, got " + num(spec.gpu.pcie_Bps));
  require(spec.nvlink_latency_s >= 0, "nvlink_latency_s", "must be >= 0");
}

}  // namespace

// The shape build() lays out: counts and per-hop latencies derived from the spec.
struct ClusterGraph::Layout {
  int gpn = 1;  // GPUs per node
  int npn = 1;  // NICs per node
  bool rails = false;
  int num_rails = 1;
  int num_leaves = 0;
  int num_spines = 0;
  double nvlink_hop_s = 0, nic_hop_s = 0, uplink_hop_s = 0, pcie_hop_s = 0;
};

ClusterGraph ClusterGraph::build(const ClusterSpec& spec, int gpus) {
  check_spec(spec, gpus);
  ClusterGraph g;
  g.spec_ = spec;
  g.num_gpus_ = gpus;
  const Layout layout = g.lay_out();
  g.reserve(layout);
  g.add_switches(layout);
  for (int node = 0; node < g.num_nodes_; ++node) g.add_node(layout, node);
  g.add_uplinks(layout);
  g.graph_ = BoostGraph(g.vertices_.size());
  for (const Link& l : g.links_) {
    boost::add_edge(static_cast<std::size_t>(l.a), static_cast<std::size_t>(l.b), l.id, g.graph_);
  }
  return g;
}

// Sets the node, group and capacity members from spec_ and num_gpus_.
ClusterGraph::Layout ClusterGraph::lay_out() {
  const ClusterSpec& spec = spec_;
  Layout layout;
  layout.gpn = spec.gpus_per_node;
  layout.npn = spec.nics_per_node;
  num_nodes_ = (num_gpus_ + layout.gpn - 1) / layout.gpn;
  layout.rails = spec.rail_optimized;
  layout.num_rails = layout.rails ? layout.npn : 1;
  num_groups_ = (num_nodes_ + spec.fabric.nodes_per_leaf - 1) / spec.fabric.nodes_per_leaf;
  // A GPU with its own NIC behind the same PCIe switch reaches it directly with GPUDirect RDMA;
  // otherwise the data is staged through the host (the CPU root complex and host memory).
  has_hosts_ = !(layout.npn == layout.gpn && spec.gpudirect_rdma);

  // Latency split. nvlink_latency_s is GPU-to-GPU through the NVSwitch: half on each link.
  // Network links carry none: NCCL's cost model, which times every operation, counts the
  // network's latency in its NET hardware latencies (the loader refuses fabric latencies).
  layout.nvlink_hop_s = spec.nvlink_latency_s / 2;
  layout.nic_hop_s = 0;
  layout.uplink_hop_s = 0;
  layout.pcie_hop_s = 0;

  // Leaf capacities (design values: a full leaf of nodes_per_leaf nodes).
  const int nics_per_node_on_leaf = layout.rails ? 1 : layout.npn;
  const int down_ports = spec.fabric.nodes_per_leaf * nics_per_node_on_leaf;
  leaf_downlink_Bps_ = down_ports * spec.nic_Bps;
  leaf_uplink_Bps_ = leaf_downlink_Bps_ / spec.fabric.oversubscription;
  layout.num_leaves = num_groups_ * layout.num_rails;
  // One uplink port per oversubscribed downlink port (rounded up), each carrying an equal
  // share of the leaf's uplink capacity; one spine per uplink port.
  layout.num_spines =
      layout.num_leaves > 1
          ? std::max(1,
                     static_cast<int>(std::ceil(down_ports / spec.fabric.oversubscription - 1e-9)))
          : 0;
  return layout;
}

void ClusterGraph::reserve(const Layout& layout) {
  const int gpus = num_gpus_;
  const int nodes = num_nodes_;
  const int npn = layout.npn;
  const std::size_t expected_vertices = static_cast<std::size_t>(gpus) + 2u * nodes +
                                        static_cast<std::size_t>(nodes) * npn + layout.num_leaves +
                                        layout.num_spines;
  vertices_.reserve(expected_vertices);
  vertex_by_name_.reserve(expected_vertices);
  links_.reserve(static_cast<std::size_t>(gpus) * 2 + static_cast<std::size_t>(nodes) * npn * 2 +
                 static_cast<std::size_t>(layout.num_leaves) * layout.num_spines);
  link_by_name_.reserve(links_.capacity());
  nic_vertex_.assign(static_cast<std::size_t>(nodes) * npn, -1);
  nic_pcie_link_.assign(nic_vertex_.size(), -1);
  nic_leaf_link_.assign(nic_vertex_.size(), -1);
  nic_leaf_.assign(nic_vertex_.size(), -1);
  gpu_vertex_.reserve(static_cast<std::size_t>(gpus));
  gpu_nvlink_link_.reserve(static_cast<std::size_t>(gpus));
  gpu_pcie_link_.reserve(static_cast<std::size_t>(gpus));
}

// Switch vertices first so that links can name them.
void ClusterGraph::add_switches(const Layout& layout) {
  for (int l = 0; l < layout.num_leaves; ++l) {
    Vertex v;
    v.kind = VertexKind::leaf;
    v.name = "leaf" + std::to_string(l);
    v.index = l;
    v.group = l / layout.num_rails;
    v.rail = layout.rails ? l % layout.num_rails : -1;
    leaf_vertex_.push_back(add_vertex(std::move(v)));
  }
  for (int s = 0; s < layout.num_spines; ++s) {
    Vertex v;
    v.kind = VertexKind::spine;
    v.name = "spine" + std::to_string(s);
    v.index = s;
    spine_vertex_.push_back(add_vertex(std::move(v)));
  }
}

// One node: its NVSwitch, host (when GPU traffic crosses it), NICs and GPUs, then the links.
void ClusterGraph::add_node(const Layout& layout, int node) {
  const std::string prefix = node_prefix(node);
  const int gpus_here = std::min(layout.gpn, num_gpus_ - node * layout.gpn);

  Vertex sw;
  sw.kind = VertexKind::nvswitch;
  sw.name = prefix + "nvswitch";
  sw.node = node;
  sw.index = node;
  const int nvs = add_vertex(std::move(sw));
  nvswitch_vertex_.push_back(nvs);

  int host = -1;
  if (has_hosts_) {
    Vertex h;
    h.kind = VertexKind::host;
    h.name = prefix + "host";
    h.node = node;
    h.index = node;
    host = add_vertex(std::move(h));
    host_vertex_.push_back(host);
  }

  // NICs: with direct rails only those of GPUs that exist (a NIC without its GPU would dangle).
  const int nics_here = has_hosts_ ? layout.npn : gpus_here;
  add_nics(layout, node, nics_here);
  add_gpus(layout, node, gpus_here, nvs, host);
  add_nic_links(layout, node, nics_here, host);
}

void ClusterGraph::add_nics(const Layout& layout, int node, int nics_here) {
  const int group = node / spec_.fabric.nodes_per_leaf;
  for (int j = 0; j < nics_here; ++j) {
    const int nic = node * layout.npn + j;
    Vertex v;
    v.kind = VertexKind::nic;
    v.name = node_prefix(node) + "nic" + std::to_string(j);
    v.node = node;
    v.local = j;
    v.index = nic;
    v.rail = layout.rails ? j : -1;
    const int nv = add_vertex(std::move(v));
    nic_vertex_[static_cast<std::size_t>(nic)] = nv;
    ++num_nics_;
    nic_leaf_[static_cast<std::size_t>(nic)] = group * layout.num_rails + (layout.rails ? j : 0);
  }
}

// The node's GPUs with their NVLink (to the NVSwitch) and PCIe link (to the host, or to the
// GPU's own NIC on direct rails).
void ClusterGraph::add_gpus(const Layout& layout, int node, int gpus_here, int nvswitch, int host) {
  const std::string prefix = node_prefix(node);
  for (int i = 0; i < gpus_here; ++i) {
    const int gpu = node * layout.gpn + i;
    Vertex v;
    v.kind = VertexKind::gpu;
    v.name = prefix + "gpu" + std::to_string(i);
    v.node = node;
    v.local = i;
    v.index = gpu;
    const int gv = add_vertex(std::move(v));
    gpu_vertex_.push_back(gv);
    gpu_nvlink_link_.push_back(add_link(prefix + "gpu" + std::to_string(i) + "-nvlink",
                                        LinkClass::nvlink, gv, nvswitch, spec_.nvlink_Bps,
                                        layout.nvlink_hop_s));
    const int pcie_peer =
        has_hosts_ ? host : nic_vertex_[static_cast<std::size_t>(node * layout.npn + i)];
    gpu_pcie_link_.push_back(add_link(prefix + "gpu" + std::to_string(i) + "-pcie", LinkClass::pcie,
                                      gv, pcie_peer, spec_.gpu.pcie_Bps, layout.pcie_hop_s));
  }
}

// Each NIC's PCIe link to the host (when there is one) and its cable to its leaf.
void ClusterGraph::add_nic_links(const Layout& layout, int node, int nics_here, int host) {
  const std::string prefix = node_prefix(node);
  for (int j = 0; j < nics_here; ++j) {
    const auto nic = static_cast<std::size_t>(node * layout.npn + j);
    const int nv = nic_vertex_[nic];
    if (has_hosts_) {
      nic_pcie_link_[nic] = add_link(prefix + "nic" + std::to_string(j) + "-pcie", LinkClass::pcie,
                                     host, nv, spec_.gpu.pcie_Bps, layout.pcie_hop_s);
    }
    nic_leaf_link_[nic] = add_link(prefix + "nic" + std::to_string(j) + "-leaf", LinkClass::nic, nv,
                                   leaf_vertex_[static_cast<std::size_t>(nic_leaf_[nic])],
                                   spec_.nic_Bps, layout.nic_hop_s);
  }
}

// Leaf-spine links: every leaf to every spine, consecutive ids per leaf.
void ClusterGraph::add_uplinks(const Layout& layout) {
  if (layout.num_spines == 0) return;
  const double per_link_Bps = leaf_uplink_Bps_ / layout.num_spines;
  for (int l = 0; l < layout.num_leaves; ++l) {
    leaf_spine_base_.push_back(static_cast<int>(links_.size()));
    for (int s = 0; s < layout.num_spines; ++s) {
      add_link("leaf" + std::to_string(l) + "-spine" + std::to_string(s), LinkClass::leaf_uplink,
               leaf_vertex_[static_cast<std::size_t>(l)],
               spine_vertex_[static_cast<std::size_t>(s)], per_link_Bps, layout.uplink_hop_s);
    }
  }
}

int ClusterGraph::num_hosts() const {
  return static_cast<int>(host_vertex_.size());
}

int ClusterGraph::num_links(LinkClass c) const {
  return static_cast<int>(
      std::count_if(links_.begin(), links_.end(), [c](const Link& l) { return l.cls == c; }));
}

int ClusterGraph::num_rails() const {
  return spec_.rail_optimized ? spec_.nics_per_node : 1;
}

int ClusterGraph::gpu_vertex(int gpu) const {
  return gpu_vertex_.at(static_cast<std::size_t>(gpu));
}
int ClusterGraph::nvswitch_vertex(int node) const {
  return nvswitch_vertex_.at(static_cast<std::size_t>(node));
}
int ClusterGraph::nic_vertex(int nic) const {
  return nic_vertex_.at(static_cast<std::size_t>(nic));
}
int ClusterGraph::leaf_vertex(int leaf) const {
  return leaf_vertex_.at(static_cast<std::size_t>(leaf));
}
int ClusterGraph::spine_vertex(int spine) const {
  return spine_vertex_.at(static_cast<std::size_t>(spine));
}
int ClusterGraph::node_of_gpu(int gpu) const {
  return gpu / spec_.gpus_per_node;
}
int ClusterGraph::local_of_gpu(int gpu) const {
  return gpu % spec_.gpus_per_node;
}

int ClusterGraph::nic_of_gpu(int gpu) const {
  const int local = local_of_gpu(gpu);
  return node_of_gpu(gpu) * spec_.nics_per_node + local * spec_.nics_per_node / spec_.gpus_per_node;
}

int ClusterGraph::leaf_of_nic(int nic) const {
  return nic_leaf_.at(static_cast<std::size_t>(nic));
}

std::optional<int> ClusterGraph::find_link(std::string_view name) const {
  const auto it = link_by_name_.find(std::string(name));
  if (it == link_by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> ClusterGraph::find_vertex(std::string_view name) const {
  const auto it = vertex_by_name_.find(std::string(name));
  if (it == vertex_by_name_.end()) return std::nullopt;
  return it->second;
}

int ClusterGraph::ecmp_spine(int src, int dst) const {
  if (spine_vertex_.empty()) throw std::logic_error("ecmp_spine: the fabric has no spines");
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) |
                            static_cast<std::uint32_t>(dst);
  return static_cast<int>(mix64(key) % spine_vertex_.size());
}

std::vector<Hop> ClusterGraph::route(int src, int dst) const {
  if (src < 0 || src >= num_gpus_ || dst < 0 || dst >= num_gpus_) {
    throw std::out_of_range("ClusterGraph::route: GPU index out of range (" + std::to_string(src) +
                            " -> " + std::to_string(dst) + ")");
  }
  std::vector<Hop> hops;
  if (src == dst) return hops;
  const auto at = [](const std::vector<int>& v, int i) { return v[static_cast<std::size_t>(i)]; };
  const int src_node = node_of_gpu(src);
  const int dst_node = node_of_gpu(dst);
  if (src_node == dst_node) {
    hops.push_back({at(gpu_nvlink_link_, src), Direction::up});
    hops.push_back({at(gpu_nvlink_link_, dst), Direction::down});
    return hops;
  }
  hops.reserve(10);
  const int npn = spec_.nics_per_node;
  const int dst_nic = nic_of_gpu(dst);
  // Source-side NIC: on the destination's rail when the fabric has rails, else the source's own.
  int src_nic = nic_of_gpu(src);
  if (spec_.rail_optimized) {
    src_nic = src_node * npn + dst_nic % npn;
    // A partly filled last node may lack the GPU (and NIC) of that rail: then leave through
    // the source's own NIC and cross rails at the spine.
    if (at(nic_vertex_, src_nic) < 0) src_nic = nic_of_gpu(src);
  }

  if (has_hosts_) {
    hops.push_back({at(gpu_pcie_link_, src), Direction::up});
    hops.push_back({at(nic_pcie_link_, src_nic), Direction::up});
  } else {
    // Direct rails: NIC j belongs to GPU j. Another rail's NIC is reached through the GPU that
    // owns it, over NVLink (PXN).
    const int proxy = src_node * spec_.gpus_per_node + src_nic % npn;
    if (proxy != src) {
      hops.push_back({at(gpu_nvlink_link_, src), Direction::up});
      hops.push_back({at(gpu_nvlink_link_, proxy), Direction::down});
    }
    hops.push_back({at(gpu_pcie_link_, proxy), Direction::up});
  }
  hops.push_back({at(nic_leaf_link_, src_nic), Direction::up});
  const int src_leaf = at(nic_leaf_, src_nic);
  const int dst_leaf = at(nic_leaf_, dst_nic);
  if (src_leaf != dst_leaf) {
    const int spine = ecmp_spine(src, dst);
    hops.push_back({at(leaf_spine_base_, src_leaf) + spine, Direction::up});
    hops.push_back({at(leaf_spine_base_, dst_leaf) + spine, Direction::down});
  }
  hops.push_back({at(nic_leaf_link_, dst_nic), Direction::down});
  if (has_hosts_) {
    hops.push_back({at(nic_pcie_link_, dst_nic), Direction::down});
  }
  hops.push_back({at(gpu_pcie_link_, dst), Direction::down});
  return hops;
}

double ClusterGraph::route_latency_s(const std::vector<Hop>& hops) const {
  double sum = 0;
  for (const Hop& h : hops) sum += link(h.link).latency_s;
  return sum;
}

double ClusterGraph::route_bandwidth_Bps(const std::vector<Hop>& hops) const {
  double bw = std::numeric_limits<double>::infinity();
  for (const Hop& h : hops) bw = std::min(bw, link(h.link).bandwidth_Bps);
  return bw;
}

double ClusterGraph::net_Bps_per_gpu() const {
  return spec_.nics_per_node * spec_.nic_Bps / spec_.gpus_per_node;
}

double ClusterGraph::bisection_Bps() const {
  if (num_nodes_ < 2) return 0;
  const int half = num_nodes_ / 2;
  const double nic_side_Bps = static_cast<double>(half) * spec_.nics_per_node * spec_.nic_Bps;
  if (num_groups_ < 2) return nic_side_Bps;  // one leaf per rail: a non-blocking crossbar
  const double uplink_side_Bps =
      static_cast<double>(num_groups_ / 2) * num_rails() * leaf_uplink_Bps_;
  return std::min(nic_side_Bps, uplink_side_Bps);
}

// ---------------------------------------------------------------------------------------------
// Checks

namespace {

// Walks `hops` from vertex `from`; returns the vertex reached or -1 when a hop does not start
// where the previous one ended.
int walk(const ClusterGraph& g, int from, const std::vector<Hop>& hops) {
  int at = from;
  for (const Hop& h : hops) {
    const Link& l = g.link(h.link);
    const int tail = h.dir == Direction::up ? l.a : l.b;
    if (tail != at) return -1;
    at = h.dir == Direction::up ? l.b : l.a;
  }
  return at;
}

constexpr std::size_t kMaxProblemsPerCheck = 20;

void note(GraphCheck& c, const std::string& problem) {
  if (c.problems.size() < kMaxProblemsPerCheck) c.problems.push_back(problem);
}

}  // namespace

namespace {

// The graph is one connected component.
GraphCheck check_connected(const ClusterGraph& g) {
  GraphCheck c{"connected", true, {}};
  std::vector<int> component(static_cast<std::size_t>(g.num_vertices()));
  const int n =
      g.num_vertices() == 0 ? 0 : boost::connected_components(g.graph(), component.data());
  if (n != 1) {
    note(c, "the graph has " + std::to_string(n) + " connected components, expected 1");
    for (int v = 0; v < g.num_vertices(); ++v) {
      if (component[static_cast<std::size_t>(v)] != component[0]) {
        note(c, g.vertex(v).name + " is not connected to " + g.vertex(0).name);
      }
    }
  }
  c.passed = c.problems.empty();
  return c;
}

// Routes are walks from source to destination: every pair inside a node and, across nodes,
// each GPU to a sample of peers covering every rail and leaf.
GraphCheck check_routes(const ClusterGraph& g) {
  GraphCheck c{"every GPU reaches every other", true, {}};
  const auto check_pair = [&](int s, int d) {
    const int end = walk(g, g.gpu_vertex(s), g.route(s, d));
    if (end != g.gpu_vertex(d)) {
      note(c, "route " + g.vertex(g.gpu_vertex(s)).name + " -> " + g.vertex(g.gpu_vertex(d)).name +
                  " is not a walk between them");
    }
  };
  const int gpn = g.gpus_per_node();
  const int n = g.num_gpus();
  // Every pair inside every node.
  for (int node = 0; node < g.num_nodes(); ++node) {
    const int first = node * gpn;
    const int last = std::min(n, first + gpn);
    for (int s = first; s < last; ++s) {
      for (int d = first; d < last; ++d) check_pair(s, d);
    }
  }
  // Across nodes: each GPU to the same local GPU of the next node (same rail), to the next
  // local GPU of the next node (another rail), and to a GPU half the cluster away (another
  // leaf group), covering every rail, leaf and spine choice pattern.
  if (g.num_nodes() > 1) {
    for (int s = 0; s < n; ++s) {
      const int node = g.node_of_gpu(s);
      const int local = g.local_of_gpu(s);
      const int next = (node + 1) % g.num_nodes();
      const int far = (node + std::max(1, g.num_nodes() / 2)) % g.num_nodes();
      for (int d : {next * gpn + local, next * gpn + (local + 1) % gpn, far * gpn + local}) {
        if (d < n && d != s) check_pair(s, d);
      }
    }
  }
  c.passed = c.problems.empty();
  return c;
}

// Every NIC has a PCIe side (a GPU or the host) and a link to a leaf.
GraphCheck check_nics(const ClusterGraph& g) {
  GraphCheck c{"no dangling NIC", true, {}};
  for (int vid = 0; vid < g.num_vertices(); ++vid) {
    const Vertex& v = g.vertex(vid);
    if (v.kind != VertexKind::nic) continue;
    const auto id = static_cast<std::size_t>(vid);
    bool inner = false;
    bool leaf = false;
    for (auto [e, end] = boost::out_edges(id, g.graph()); e != end; ++e) {
      const Link& l = g.link(boost::get(boost::edge_index, g.graph(), *e));
      if (l.cls == LinkClass::pcie) inner = true;
      if (l.cls == LinkClass::nic) leaf = true;
    }
    if (!inner) note(c, v.name + " has no PCIe link to a GPU or host");
    if (!leaf) note(c, v.name + " has no link to a leaf switch");
  }
  c.passed = c.problems.empty();
  return c;
}

// Link counts per class match the counts the spec implies; every link has a bandwidth.
GraphCheck check_link_counts(const ClusterGraph& g) {
  GraphCheck c{"link counts", true, {}};
  const int gpus = g.num_gpus();
  const int nics = g.num_nics();
  const int expected[kNumLinkClasses] = {
      gpus,                                                       // nvlink: one per GPU
      gpus + (g.has_hosts() ? nics : 0),                          // pcie: per GPU, plus host-NIC
      nics,                                                       // nic: one per NIC
      g.num_leaves() > 1 ? g.num_leaves() * g.num_spines() : 0};  // leaf x spine
  for (int k = 0; k < kNumLinkClasses; ++k) {
    const auto cls = static_cast<LinkClass>(k);
    const int got = g.num_links(cls);
    if (got != expected[k]) {
      note(c, std::string(to_string(cls)) + " links: " + std::to_string(got) + ", expected " +
                  std::to_string(expected[k]));
    }
  }
  const int expected_nics_full = g.num_nodes() * g.nics_per_node();
  if (g.has_hosts() && nics != expected_nics_full) {
    note(c, "NICs: " + std::to_string(nics) + ", expected " + std::to_string(expected_nics_full));
  }
  for (const Link& l : g.links()) {
    if (!(l.bandwidth_Bps > 0)) note(c, l.name + " has no bandwidth");
  }
  c.passed = c.problems.empty();
  return c;
}

}  // namespace

std::vector<GraphCheck> check_graph(const ClusterGraph& g) {
  return {check_connected(g), check_routes(g), check_nics(g), check_link_counts(g)};
}

bool all_passed(const std::vector<GraphCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const GraphCheck& c) { return c.passed; });
}

// ---------------------------------------------------------------------------------------------
// DOT

std::string to_dot(const ClusterGraph& g) {
  std::string out;
  out.reserve(static_cast<std::size_t>(g.num_vertices()) * 64 +
              static_cast<std::size_t>(g.num_links()) * 110);
  out += "graph \"";
  out += g.spec().name.empty() ? "cluster" : g.spec().name;
  out += "\" {\n  graph [overlap=false, splines=true];\n";
  for (const Vertex& v : g.vertices()) {
    const char* shape = "box";
    const char* colour = "black";
    switch (v.kind) {
      case VertexKind::gpu:
        shape = "box";
        colour = "darkgreen";
        break;
      case VertexKind::nvswitch:
        shape = "hexagon";
        colour = "purple";
        break;
      case VertexKind::host:
        shape = "box3d";
        colour = "gray40";
        break;
      case VertexKind::nic:
        shape = "ellipse";
        colour = "blue";
        break;
      case VertexKind::leaf:
        shape = "diamond";
        colour = "orange";
        break;
      case VertexKind::spine:
        shape = "doubleoctagon";
        colour = "red";
        break;
    }
    out += "  \"" + v.name + "\" [kind=\"" + to_string(v.kind) + "\", shape=" + shape +
           ", color=" + colour + "];\n";
  }
  char bw[32];
  for (const Link& l : g.links()) {
    std::snprintf(bw, sizeof bw, "%.4g", l.bandwidth_Bps / 1e9);
    out += "  \"" + g.vertex(l.a).name + "\" -- \"" + g.vertex(l.b).name + "\" [label=\"" + l.name +
           "\", class=\"" + to_string(l.cls) + "\", bandwidth_GBps=" + bw + "];\n";
  }
  out += "}\n";
  return out;
}

}  // namespace clustersim::topologies
