// Planning and decomposition of collectives (no SimGrid here; see simulation.cpp for execution).
#include "sim/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/detail/planner.hpp"
#include "validation/calibration.hpp"

namespace clustersim::sim {

namespace {

// NCCL's line formats (src/include/device.h): an LL line (union ncclLLFifoLine, 16 bytes) holds
// 8 bytes of data and 8 of flags; an LL128 line of 128 bytes holds 120 bytes of data
// (NCCL_LL128_DATAELEMS 15 of NCCL_LL128_LINEELEMS 16 uint64_t); Simple sends data only.
constexpr double kLLWireEfficiency = 0.5;
constexpr double kLL128WireEfficiency = 120.0 / 128.0;
constexpr double kSimpleWireEfficiency = 1.0;

// Step sizes (src/include/device.h / collectives.h, NCCL 2.x):
//   NCCL_STEPS = 8 buffer slots per connection;
//   Simple: stepSize = NCCL_BUFFSIZE / NCCL_STEPS; ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS =
//   NCCL_STEPS/2 = 4, BROADCAST/REDUCE_CHUNKSTEPS = 1;
//   LL: DEFAULT_LL_BUFFSIZE = NCCL_LL_LINES_PER_THREAD(8) * NCCL_LL_MAX_NTHREADS(512) *
//       NCCL_STEPS * 16 B = 524288 B of lines, half of it data, chunkSteps 1;
//   LL128: DEFAULT_LL128_BUFFSIZE = NCCL_LL128_ELEMS_PER_THREAD(120) * NCCL_LL128_MAX_NTHREADS(640)
//       * NCCL_STEPS * 8 B = 4915200 B, 120/128 of it data, chunkSteps 1.
constexpr int kNcclSteps = 8;
constexpr int kRingChunkSteps = kNcclSteps / 2;
constexpr int kChainChunkSteps = 1;
constexpr double kLLBuffsize = 8.0 * 512 * kNcclSteps * 16;
constexpr double kLL128Buffsize = 120.0 * 640 * kNcclSteps * 8;
// Tree Simple chunk shrinking (src/enqueue.cc, computeColl, UNVERIFIED constants): halve the
// chunk while the message gives fewer than depth*8 chunks per channel, down to 128 KiB... we use
// the same floor for NVLS (UNVERIFIED: NCCL sizes NVLS chunks separately).
constexpr double kTreeMinChunkBytes = 128.0 * 1024;
constexpr int kTreeChunksPerDepth = 8;
// NVLS kernels reduce through the switch with multimem.ld_reduce and write back with
// multimem.st in the same warp, so loads and stores pipeline at a fine grain, not chunk by
// chunk. Our own modelling choice (no NCCL constant): step granularity cuts NVLS into 16 KiB
// pieces (a warp-unrolled 16-byte-per-thread working set), at most 64 per collective to bound
// the flow count; the pipeline fill (at most 1/64) is compensated in the rate caps.
constexpr double kNvlsPipelineBytes = 16.0 * 1024;
constexpr int kNvlsMaxChunks = 64;

// The ratio used to separate the model's latency from its bandwidth term numerically.
constexpr double kSlopeProbe = 1e-3;

int ceil_div(double a, double b) {
  return std::max(1, static_cast<int>(std::ceil(a / b - 1e-9)));
}

}  // namespace

const char* cli_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "allreduce";
    case CollectiveOp::reduce_scatter: return "reducescatter";
    case CollectiveOp::all_gather: return "allgather";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
    case CollectiveOp::all_to_all: return "alltoall";
    case CollectiveOp::send_recv: return "sendrecv";
  }
  return "?";
}

const std::vector<std::string>& collective_op_names() {
  static const std::vector<std::string> names = {
      "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv"};
  return names;
}

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter,
                          CollectiveOp::all_gather, CollectiveOp::broadcast, CollectiveOp::reduce,
                          CollectiveOp::all_to_all, CollectiveOp::send_recv}) {
    if (name == cli_name(op) || name == to_string(op)) return op;
  }
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveOp op, int n_ranks) {
  const double n = std::max(1, n_ranks);
  switch (op) {
    case CollectiveOp::all_reduce: return 2 * (n - 1) / n;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
    case CollectiveOp::all_to_all: return (n - 1) / n;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv: return 1;
  }
  return 1;
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::nvls_tree: return "nvls_tree";
    case Algorithm::pat: return "pat";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::direct: return "direct";
  }
  return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls, Algorithm::nvls_tree,
                      Algorithm::pat, Algorithm::hierarchical, Algorithm::direct}) {
    if (name == to_string(a)) return a;
  }
  return std::nullopt;
}

const char* to_string(Granularity g) {
  return g == Granularity::bulk ? "bulk" : "step";
}

std::optional<Granularity> parse_granularity(std::string_view name) {
  if (name == "bulk") return Granularity::bulk;
  if (name == "step") return Granularity::step;
  return std::nullopt;
}

double CollectiveResult::alg_bw_Bps() const {
  const double t = time_s();
  return t > 0 ? plan.bytes / t : 0;
}

double CollectiveResult::bus_bw_Bps() const {
  return alg_bw_Bps() * bus_bandwidth_factor(plan.op, plan.n_ranks);
}

namespace detail {

double wire_efficiency(NcclProto proto) {
  switch (proto) {
    case NcclProto::ll: return kLLWireEfficiency;
    case NcclProto::ll128: return kLL128WireEfficiency;
    case NcclProto::simple: return kSimpleWireEfficiency;
  }
  return 1;
}

// ---------------------------------------------------------------------------------------------
// Routing between endpoints

EndpointRouter::EndpointRouter(const topologies::ClusterGraph& graph, bool p2p_nvlink)
    : graph_(&graph), p2p_nvlink_(p2p_nvlink) {
  const int g = graph.num_gpus();
  nvlink_of_gpu_.assign(static_cast<std::size_t>(g), -1);
  pcie_of_gpu_.assign(static_cast<std::size_t>(g), -1);
  for (int i = 0; i < g; ++i) {
    const std::string prefix = graph.vertex(graph.gpu_vertex(i)).name;
    if (auto l = graph.find_link(prefix + "-nvlink"))
      nvlink_of_gpu_[static_cast<std::size_t>(i)] = *l;
    if (auto l = graph.find_link(prefix + "-pcie")) pcie_of_gpu_[static_cast<std::size_t>(i)] = *l;
    if (nvlink_of_gpu_[static_cast<std::size_t>(i)] < 0) {
      throw std::invalid_argument("EndpointRouter: the graph has no link \"" + prefix +
                                  "-nvlink\"");
    }
  }
  if (!p2p_nvlink_ && !graph.has_hosts()) {
    throw std::invalid_argument(
        "EndpointRouter: P2P through host memory needs a graph with host paths");
  }
}

int EndpointRouter::node_of(Endpoint e) const {
  return is_switch(e) ? e - graph_->num_gpus() : graph_->node_of_gpu(e);
}

std::string EndpointRouter::name(Endpoint e) const {
  if (is_switch(e)) return graph_->vertex(graph_->nvswitch_vertex(node_of(e))).name;
  return graph_->vertex(graph_->gpu_vertex(e)).name;
}

std::vector<topologies::Hop> EndpointRouter::route(Endpoint a, Endpoint b) const {
  using topologies::Direction;
  if (is_switch(a) && is_switch(b)) {
    throw std::invalid_argument("EndpointRouter: no route between two NVSwitches");
  }
  if (is_switch(b)) return {{nvlink_of_gpu_[static_cast<std::size_t>(a)], Direction::up}};
  if (is_switch(a)) return {{nvlink_of_gpu_[static_cast<std::size_t>(b)], Direction::down}};
  if (!p2p_nvlink_ && graph_->node_of_gpu(a) == graph_->node_of_gpu(b)) {
    // SHM transport: GPU -> host memory -> GPU over both PCIe links.
    return {{pcie_of_gpu_[static_cast<std::size_t>(a)], Direction::up},
            {pcie_of_gpu_[static_cast<std::size_t>(b)], Direction::down}};
  }
  return graph_->route(a, b);
}

// ---------------------------------------------------------------------------------------------
// Transport choices

TransportChoice choose_transport(const ClusterSpec& spec, const NcclSettings& settings) {
  TransportChoice t;
  // GPU-NIC distance as NCCL classifies it (src/graph/paths.cc): a NIC per GPU on the GPU's
  // PCIe switch is PIX; NICs shared by several GPUs hang off the CPU root complex: PHB.
  const bool nic_per_gpu = spec.nics_per_node == spec.gpus_per_node;
  const PathLevel distance = nic_per_gpu ? PathLevel::pix : PathLevel::phb;
  // NCCL_NET_GDR_LEVEL default PXB (paths.cc, docs/nccl.md#environment-variables).
  const PathLevel gdr_level = settings.net_gdr_level.value_or(PathLevel::pxb);
  t.gpudirect_rdma = spec.gpudirect_rdma && distance <= gdr_level;
  if (spec.gpudirect_rdma && !t.gpudirect_rdma) {
    t.notes.push_back(std::string("NCCL_NET_GDR_LEVEL=") + to_string(gdr_level) +
                      " is closer than the GPU-NIC distance " + to_string(distance) +
                      ": network traffic is staged through host memory over PCIe");
  }
  // NVLink peers are at distance NVL; NCCL_P2P_LEVEL default PXB (paths.cc).
  const PathLevel p2p_level = settings.p2p_level.value_or(PathLevel::pxb);
  t.p2p_nvlink = PathLevel::nvl <= p2p_level;
  if (!t.p2p_nvlink) {
    t.notes.push_back(std::string("NCCL_P2P_LEVEL=") + to_string(p2p_level) +
                      " forbids P2P over NVLink: peers in a node exchange through host memory");
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// Planner

struct Planner::Group {
  int n = 0;
  std::vector<int> nodes;                 // distinct nodes, in order of first appearance
  std::vector<std::vector<int>> members;  // per node: GPUs in ascending order
  int ppn_max = 0;
  bool uniform = true;  // every node holds the same number of members
  int model_nodes = 0;
  int model_ranks = 0;
};

Planner::Planner(const topologies::ClusterGraph& graph, NcclSettings settings, GpuArch arch,
                 CpuVendor cpu, const TransportChoice& transport)
    : graph_(&graph),
      settings_(std::move(settings)),
      arch_(arch),
      cpu_(cpu),
      transport_(transport),
      router_(graph, transport.p2p_nvlink) {
  if (!graph.spec().calibration.empty()) {
    calibration_ = std::make_shared<const validation::Calibration>(
        validation::load_calibration(graph.spec().calibration));
  }
}

Planner::~Planner() = default;

std::optional<Planner::Calibrated> Planner::calibrated(CollectiveOp op, int n_ranks, int n_nodes,
                                                       double bytes) const {
  if (!calibration_) return std::nullopt;
  // Point-to-point has no tuning table to replace: NCCL's estimate stays.
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv) return std::nullopt;
  // The nccl-tests operation of the same name (nccl_tests_log's table of spellings).
  const validation::NcclTestsOp tests_op = validation::nccl_tests_op_from_name(to_string(op));
  const auto* entry = calibration_->find(validation::link_class_for(n_nodes), tests_op, n_ranks);
  if (!entry || entry->regimes.empty()) return std::nullopt;
  const validation::AlphaBetaFit* regime = &entry->regimes.back();
  for (const auto& r : entry->regimes) {
    if (bytes <= r.max_bytes) {
      regime = &r;
      break;
    }
  }
  constexpr double kSecondsPerUs = 1e-6;
  const double factor = validation::busbw_factor(tests_op, n_ranks);
  Calibrated c;
  c.latency_s = regime->latency_us * kSecondsPerUs;
  c.bw_time_s = (regime->time_us(bytes, factor) - regime->latency_us) * kSecondsPerUs;
  c.source =
      entry->source + " (" + entry->link_class + ", " + std::to_string(entry->nranks) + " ranks)";
  return c;
}

void Planner::validate(const CollectiveRequest& r) const {
  const int g = graph_->num_gpus();
  if (r.gpus.empty()) throw std::invalid_argument("CollectiveRequest.gpus: empty group");
  std::set<int> seen;
  for (int x : r.gpus) {
    if (x < 0 || x >= g) {
      throw std::invalid_argument("CollectiveRequest.gpus: GPU " + std::to_string(x) +
                                  " is outside the cluster's 0.." + std::to_string(g - 1));
    }
    if (!seen.insert(x).second) {
      throw std::invalid_argument("CollectiveRequest.gpus: GPU " + std::to_string(x) +
                                  " appears twice");
    }
  }
  if (!(r.bytes >= 0) || !std::isfinite(r.bytes)) {
    throw std::invalid_argument("CollectiveRequest.bytes: must be finite and >= 0");
  }
  if (r.root < 0 || r.root >= static_cast<int>(r.gpus.size())) {
    throw std::invalid_argument("CollectiveRequest.root: member " + std::to_string(r.root) +
                                " is outside the group of " + std::to_string(r.gpus.size()));
  }
  if (r.op == CollectiveOp::send_recv && r.gpus.size() < 2) {
    throw std::invalid_argument("CollectiveRequest.gpus: send_recv needs at least 2 members");
  }
  if (r.channels && (*r.channels < 1 || *r.channels > kNcclMaxChannels)) {
    throw std::invalid_argument("CollectiveRequest.channels: must be 1.." +
                                std::to_string(kNcclMaxChannels));
  }
}

Planner::Group Planner::analyse(const CollectiveRequest& r) const {
  Group gr;
  gr.n = static_cast<int>(r.gpus.size());
  std::map<int, int> index;
  for (int x : r.gpus) {
    const int node = graph_->node_of_gpu(x);
    auto [it, fresh] = index.emplace(node, static_cast<int>(gr.nodes.size()));
    if (fresh) {
      gr.nodes.push_back(node);
      gr.members.emplace_back();
    }
    gr.members[static_cast<std::size_t>(it->second)].push_back(x);
  }
  for (auto& m : gr.members) {
    std::sort(m.begin(), m.end());
    gr.ppn_max = std::max(gr.ppn_max, static_cast<int>(m.size()));
  }
  for (auto& m : gr.members) gr.uniform = gr.uniform && static_cast<int>(m.size()) == gr.ppn_max;
  gr.model_nodes = static_cast<int>(gr.nodes.size());
  gr.model_ranks = gr.model_nodes * gr.ppn_max;
  return gr;
}

const NcclModel& Planner::model(int n_ranks, int n_nodes, std::optional<int> channels,
                                std::optional<NcclAlgo> algo,
                                std::optional<NcclProto> proto) const {
  const auto key = std::make_tuple(n_ranks, n_nodes, channels.value_or(0),
                                   algo ? static_cast<int>(*algo) + 1 : 0,
                                   proto ? static_cast<int>(*proto) + 1 : 0);
  auto it = models_.find(key);
  if (it != models_.end()) return *it->second;
  NcclSettings s = settings_;
  if (channels) {
    s.min_channels = *channels;
    s.max_channels = *channels;
  }
  if (algo) s.algos = {*algo};
  if (proto) s.protos = {*proto};
  NcclHardware hw;
  hw.arch = arch_;
  hw.cpu = cpu_;
  hw.nvlink_Bps_per_gpu = graph_->nvlink_Bps_per_gpu();
  hw.net_Bps_per_gpu = graph_->net_Bps_per_gpu();
  hw.nics_per_node = graph_->nics_per_node();
  hw.gpus_per_node = graph_->gpus_per_node();
  hw.nvswitch = graph_->gpus_per_node() > 1 && transport_.p2p_nvlink;
  hw.gpudirect_rdma = transport_.gpudirect_rdma;
  auto m = std::make_unique<NcclModel>(derive_comm_info(hw, n_ranks, n_nodes, s), s);
  return *models_.emplace(key, std::move(m)).first->second;
}

namespace {

std::optional<NcclAlgo> nccl_algo_of(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return NcclAlgo::ring;
    case Algorithm::tree: return NcclAlgo::tree;
    case Algorithm::nvls: return NcclAlgo::nvls;
    case Algorithm::nvls_tree: return NcclAlgo::nvls_tree;
    case Algorithm::pat: return NcclAlgo::pat;
    default: return std::nullopt;
  }
}

Algorithm algorithm_of(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::ring: return Algorithm::ring;
    case NcclAlgo::tree: return Algorithm::tree;
    case NcclAlgo::nvls: return Algorithm::nvls;
    case NcclAlgo::nvls_tree: return Algorithm::nvls_tree;
    case NcclAlgo::pat: return Algorithm::pat;
    default: return Algorithm::ring;
  }
}

// Latency and bandwidth term of the model's time at `bytes`, separated numerically: time(b) is
// alpha + b / bw(b) where bw only changes at powers of two (tree correction) and at the ring
// plateau threshold, so a small relative probe on the same side gives the slope.
std::pair<double, double> split_model_time(const NcclModel& m, CollectiveOp op, NcclAlgo a,
                                           NcclProto p, double bytes) {
  const double t = m.time_s(op, a, p, bytes, Dtype::bf16);
  if (t < 0) return {-1, -1};
  if (bytes <= 0) return {t, 0};
  double probe = bytes * (1 + kSlopeProbe);
  if (std::floor(std::log2(probe / 64)) != std::floor(std::log2(bytes / 64))) {
    probe = bytes * (1 - kSlopeProbe);
  }
  const double t2 = m.time_s(op, a, p, probe, Dtype::bf16);
  const double slope = (t2 - t) / (probe - bytes);
  const double bw_time = std::max(0.0, slope * bytes);
  return {std::max(0.0, t - bw_time), bw_time};
}

// ncclGetBtree (src/graph/trees.cc): binary tree over ranks 0..n-1 where a rank's parent and
// children follow from its lowest set bit. Returns the parent of each rank (-1 for the root).
std::vector<int> nccl_btree(int n) {
  std::vector<int> parent(static_cast<std::size_t>(n), -1);
  for (int rank = 1; rank < n; ++rank) {
    int bit = 1;
    while (bit < n && !(bit & rank)) bit <<= 1;
    int up = (rank ^ bit) | (bit << 1);
    if (up >= n) up = rank ^ bit;
    parent[static_cast<std::size_t>(rank)] = up;
  }
  return parent;
}

// ncclGetDtree (trees.cc): the second tree mirrors the first for an even count (rank r plays
// n-1-r) and shifts it by one for an odd count, so that no rank is interior in both.
std::vector<int> nccl_dtree_second(int n) {
  const std::vector<int> base = nccl_btree(n);
  std::vector<int> parent(static_cast<std::size_t>(n), -1);
  auto map = [n](int r) { return n % 2 == 0 ? n - 1 - r : (r + n - 1) % n; };
  auto unmap = [n](int v) { return n % 2 == 0 ? n - 1 - v : (v + 1) % n; };
  for (int r = 0; r < n; ++r) {
    const int p = base[static_cast<std::size_t>(map(r))];
    parent[static_cast<std::size_t>(r)] = p < 0 ? -1 : unmap(p);
  }
  return parent;
}

int tree_depth(const std::vector<int>& parent) {
  int depth = 0;
  for (std::size_t v = 0; v < parent.size(); ++v) {
    int d = 0;
    for (int u = static_cast<int>(v); parent[static_cast<std::size_t>(u)] >= 0;
         u = parent[static_cast<std::size_t>(u)]) {
      ++d;
    }
    depth = std::max(depth, d);
  }
  return depth;
}

std::vector<int> rotate(const std::vector<int>& v, int by) {
  std::vector<int> out(v.size());
  const int n = static_cast<int>(v.size());
  for (int i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((i + by) % n)];
  return out;
}

}  // namespace

CollectivePlan Planner::plan(const CollectiveRequest& request,
                             Granularity default_granularity) const {
  return decompose(request, default_granularity)->plan;
}

std::string Planner::shape_key(const CollectiveRequest& r) const {
  std::ostringstream k;
  k.precision(17);
  k << static_cast<int>(r.op) << '|' << r.bytes << '|' << r.root << '|' << r.one_way << '|'
    << (r.algorithm ? static_cast<int>(*r.algorithm) : -1) << '|'
    << (r.protocol ? static_cast<int>(*r.protocol) : -1) << '|' << r.channels.value_or(0) << '|'
    << static_cast<int>(r.dtype) << '|';
  // Nodes renumbered by first appearance; the leaf group boundary kept (nodes_per_leaf).
  std::map<int, int> rel;
  const int npl = std::max(1, graph_->spec().fabric.nodes_per_leaf);
  for (int x : r.gpus) {
    const int node = graph_->node_of_gpu(x);
    const int id = rel.emplace(node, static_cast<int>(rel.size())).first->second;
    k << id << ':' << graph_->local_of_gpu(x) << ':'
      << (node / npl - graph_->node_of_gpu(r.gpus[0]) / npl) << ',';
  }
  return k.str();
}

std::shared_ptr<const Decomposition> Planner::decompose(const CollectiveRequest& r,
                                                        Granularity default_granularity) const {
  validate(r);
  std::string key = shape_key(r);
  key += '|';
  key += std::to_string(static_cast<int>(r.granularity.value_or(default_granularity)));
  for (int g : r.gpus) {
    key += ',';
    key += std::to_string(g);
  }
  auto it = decompositions_.find(key);
  if (it != decompositions_.end()) return it->second;
  auto d = build(r, default_granularity);
  decompositions_.emplace(std::move(key), d);
  return d;
}

std::shared_ptr<const Decomposition> Planner::build(const CollectiveRequest& r,
                                                    Granularity default_granularity) const {
  validate(r);
  auto d = std::make_shared<Decomposition>();
  CollectivePlan& p = d->plan;
  const Group gr = analyse(r);
  p.op = r.op;
  p.n_ranks = gr.n;
  p.n_nodes = static_cast<int>(gr.nodes.size());
  p.bytes = r.bytes;
  p.granularity = r.granularity.value_or(default_granularity);
  p.gpudirect_rdma = transport_.gpudirect_rdma;
  p.p2p_nvlink = transport_.p2p_nvlink;
  p.notes = transport_.notes;
  if (!gr.uniform) {
    p.notes.push_back("nodes hold different numbers of members; NCCL's model is evaluated for " +
                      std::to_string(gr.model_ranks) + " ranks on " +
                      std::to_string(gr.model_nodes) + " nodes");
  }
  const int n = gr.n;
  const int G = graph_->num_gpus();
  const std::optional<NcclAlgo> forced_nccl =
      r.algorithm ? nccl_algo_of(*r.algorithm) : std::nullopt;

  if (n == 1 || r.bytes <= 0) {
    p.algorithm = r.op == CollectiveOp::all_to_all || r.op == CollectiveOp::send_recv
                      ? Algorithm::direct
                      : Algorithm::ring;
    p.channels = 0;
    p.chosen_by = n == 1 ? "single rank" : "empty message";
    if (n > 1) {
      // Still pay NCCL's latency for an empty message.
      if (p.algorithm == Algorithm::direct) {
        const NcclModel& m =
            model(gr.model_ranks, gr.model_nodes, r.channels, std::nullopt, std::nullopt);
        p.latency_s = m.decide(r.op, 0).time_s;
      } else {
        const NcclModel& m =
            model(gr.model_ranks, gr.model_nodes, r.channels, forced_nccl, r.protocol);
        const NcclDecision dec = m.decide(r.op, 0, r.dtype);
        p.algorithm = algorithm_of(dec.algo);
        p.protocol = dec.proto;
        p.channels = dec.n_channels;
        p.latency_s = dec.time_s;
      }
    }
    p.model_time_s = p.latency_s;
    return d;
  }

  // Which ring/tree instance carries which share: several NICs per node spread channels over
  // rails (one ring/tree per rail used); otherwise one path.
  const int rails_used =
      p.n_nodes > 1 && gr.ppn_max > 1 && graph_->nics_per_node() > 1
          ? std::clamp(gr.ppn_max * graph_->nics_per_node() / graph_->gpus_per_node(), 1,
                       std::min(gr.ppn_max, graph_->nics_per_node()))
          : 1;

  const bool p2p = r.op == CollectiveOp::all_to_all || r.op == CollectiveOp::send_recv;
  Algorithm algo = Algorithm::ring;
  if (p2p) {
    algo = Algorithm::direct;
    const NcclModel& m =
        model(gr.model_ranks, gr.model_nodes, r.channels, std::nullopt, std::nullopt);
    const NcclDecision dec = m.decide(r.op, r.bytes);
    p.protocol = NcclProto::simple;
    p.channels = dec.n_channels;
    p.model_time_s = dec.time_s;
    p.latency_s = m.decide(r.op, 0).time_s;
    p.chosen_by = "NCCL point-to-point (no tuning table)";
  } else if (r.algorithm && *r.algorithm == Algorithm::hierarchical) {
    algo = Algorithm::hierarchical;
    p.chosen_by = "request";
  } else if (r.algorithm && *r.algorithm == Algorithm::direct) {
    throw std::invalid_argument(
        "CollectiveRequest.algorithm: direct applies to all_to_all and send_recv only");
  } else {
    const NcclModel& m = model(gr.model_ranks, gr.model_nodes, r.channels, forced_nccl, r.protocol);
    const NcclDecision dec = m.decide(r.op, r.bytes, r.dtype);
    algo = algorithm_of(dec.algo);
    p.protocol = dec.proto;
    p.channels = dec.n_channels;
    p.chosen_by = r.algorithm || r.protocol ? "request"
                  : !settings_.algos.empty() || !settings_.protos.empty()
                      ? "NCCL cost model under NCCL_ALGO/NCCL_PROTO"
                      : "NCCL cost model";
    const auto [lat, bw] = split_model_time(m, r.op, dec.algo, dec.proto, r.bytes);
    p.latency_s = lat;
    p.model_bw_time_s = bw;
    // The cluster's own measurements, where it has them, instead of NCCL's cost model; the
    // algorithm NCCL picks still sets the data movement.
    if (const auto cal = calibrated(r.op, p.n_ranks, p.n_nodes, r.bytes)) {
      p.latency_s = cal->latency_s;
      p.model_bw_time_s = cal->bw_time_s;
      p.chosen_by += "; time from the cluster's calibration";
      p.notes.push_back("latency and bandwidth time from the calibration of " + cal->source);
    }
    p.model_time_s = p.latency_s + p.model_bw_time_s;
    if (dec.algo == NcclAlgo::collnet_direct || dec.algo == NcclAlgo::collnet_chain) {
      p.notes.push_back("CollNet is not simulated; its time is simulated with ring data movement");
    }
  }
  p.algorithm = algo;
  p.wire_efficiency = wire_efficiency(p.protocol);

  // Ring orders: nodes in order of first appearance, members of a node ascending, rotated by the
  // rail r so ring r enters each node at its r-th member and leaves from the one before it: its
  // node-to-node hops then land on rail r (with PXN on the sending side).
  auto ring_order = [&](int r_index) {
    std::vector<int> order;
    order.reserve(static_cast<std::size_t>(n));
    for (const auto& m : gr.members) {
      const int k = static_cast<int>(m.size());
      for (int i = 0; i < k; ++i) order.push_back(m[static_cast<std::size_t>((i + r_index) % k)]);
    }
    return order;
  };
  const int root_gpu = r.gpus[static_cast<std::size_t>(r.root)];
  auto add_rings = [&](Phase& ph, RingKind kind, double payload, int count) {
    for (int k = 0; k < count; ++k) {
      RingPattern rp;
      rp.kind = kind;
      rp.order = ring_order(k);
      rp.payload = payload / count;
      if (kind == RingKind::chain_forward || kind == RingKind::chain_reduce) {
        // Rotate the cycle so the chain starts (broadcast) or ends (reduce) at the root.
        const auto it = std::find(rp.order.begin(), rp.order.end(), root_gpu);
        const int pos = static_cast<int>(it - rp.order.begin());
        rp.order = rotate(rp.order, kind == RingKind::chain_forward ? pos : pos + 1);
      }
      ph.rings.push_back(std::move(rp));
    }
  };
  // Trees over nodes: two trees (ncclGetDtree) per rail used, intra-node chains from the head.
  auto add_trees = [&](Phase& ph, double payload, int rails,
                       const std::vector<std::vector<int>>& members) {
    const int nn = static_cast<int>(members.size());
    const std::vector<int> t0 = nccl_btree(nn);
    const std::vector<int> t1 = nn > 1 ? nccl_dtree_second(nn) : t0;
    const int trees = nn > 1 ? 2 : 1;
    for (int t = 0; t < trees; ++t) {
      const std::vector<int>& tp = t == 0 ? t0 : t1;
      for (int rail = 0; rail < rails; ++rail) {
        TreePattern pat;
        pat.payload = payload / (trees * rails);
        std::vector<int> head(static_cast<std::size_t>(nn));
        for (int k = 0; k < nn; ++k) {
          const auto& m = members[static_cast<std::size_t>(k)];
          const int ppn = static_cast<int>(m.size());
          const int base = static_cast<int>(pat.nodes.size());
          head[static_cast<std::size_t>(k)] = base;
          for (int i = 0; i < ppn; ++i) {
            pat.nodes.push_back(m[static_cast<std::size_t>((i + rail) % ppn)]);
            pat.parent.push_back(i == 0 ? -2 : base + i - 1);  // -2: resolved below
          }
        }
        for (int k = 0; k < nn; ++k) {
          const int pn = tp[static_cast<std::size_t>(k)];
          pat.parent[static_cast<std::size_t>(head[static_cast<std::size_t>(k)])] =
              pn < 0 ? -1 : head[static_cast<std::size_t>(pn)];
        }
        ph.trees.push_back(std::move(pat));
      }
    }
  };
  auto add_nvls = [&](Phase& ph, NvlsKind kind, double payload_per_node) {
    for (std::size_t k = 0; k < gr.nodes.size(); ++k) {
      NvlsPattern np;
      np.kind = kind;
      np.nvswitch = G + gr.nodes[k];
      np.gpus = gr.members[k];
      np.payload = payload_per_node;
      ph.nvls.push_back(std::move(np));
    }
  };

  const double S = r.bytes;
  int paths = 1;
  // NVLS needs NVLink P2P and NVSwitch; composite NVLS needs the same members on every node.
  if ((algo == Algorithm::nvls || algo == Algorithm::nvls_tree) &&
      (!transport_.p2p_nvlink || (p.n_nodes > 1 && !gr.uniform))) {
    p.notes.push_back("NVLS cannot be simulated for this group; ring data movement used");
    algo = Algorithm::ring;
  }
  switch (algo) {
    case Algorithm::ring:
    case Algorithm::pat: {
      if (algo == Algorithm::pat) p.notes.push_back("PAT simulated with ring data movement");
      Phase ph;
      ph.name = to_string(algo);
      RingKind kind = RingKind::all_reduce;
      if (r.op == CollectiveOp::reduce_scatter) kind = RingKind::reduce_scatter;
      if (r.op == CollectiveOp::all_gather) kind = RingKind::all_gather;
      if (r.op == CollectiveOp::broadcast) kind = RingKind::chain_forward;
      if (r.op == CollectiveOp::reduce) kind = RingKind::chain_reduce;
      paths = rails_used;
      add_rings(ph, kind, S, paths);
      ph.bw_time_s = p.model_bw_time_s;
      d->phases.push_back(std::move(ph));
      break;
    }
    case Algorithm::tree: {
      Phase ph;
      ph.name = "tree";
      add_trees(ph, S, rails_used, gr.members);
      paths = static_cast<int>(ph.trees.size());
      ph.bw_time_s = p.model_bw_time_s;
      d->phases.push_back(std::move(ph));
      break;
    }
    case Algorithm::nvls: {
      if (p.n_nodes == 1) {
        Phase ph;
        ph.name = "nvls";
        add_nvls(ph,
                 r.op == CollectiveOp::reduce_scatter ? NvlsKind::reduce_scatter
                 : r.op == CollectiveOp::all_gather   ? NvlsKind::all_gather
                                                      : NvlsKind::all_reduce,
                 S);
        ph.bw_time_s = p.model_bw_time_s;
        d->phases.push_back(std::move(ph));
        break;
      }
      [[fallthrough]];
    }
    case Algorithm::nvls_tree: {
      // NVLS reduce-scatter in every node, the shard all-reduced across nodes rail by rail
      // (tree for NVLSTree, ring for multi-node NVLS), NVLS all-gather. NCCL pipelines the three
      // chunk by chunk; both granularities run them at the same time, each paced to end with the
      // model's bandwidth time (step granularity keeps each part's own step structure but not
      // the chunk-level hand-over between parts).
      const int ppn = gr.ppn_max;
      Phase rs, inter, ag;
      rs.name = "nvls reduce-scatter";
      inter.name = algo == Algorithm::nvls_tree ? "inter-node tree" : "inter-node ring";
      ag.name = "nvls all-gather";
      add_nvls(rs, NvlsKind::reduce_scatter, S);
      add_nvls(ag, NvlsKind::all_gather, S);
      for (int lr = 0; lr < ppn; ++lr) {
        std::vector<std::vector<int>> per_node;
        for (const auto& m : gr.members) per_node.push_back({m[static_cast<std::size_t>(lr)]});
        if (algo == Algorithm::nvls_tree) {
          add_trees(inter, S / ppn, 1, per_node);
        } else {
          RingPattern rp;
          rp.kind = RingKind::all_reduce;
          for (const auto& m : per_node) rp.order.push_back(m[0]);
          rp.payload = S / ppn;
          inter.rings.push_back(std::move(rp));
        }
      }
      rs.bw_time_s = inter.bw_time_s = ag.bw_time_s = p.model_bw_time_s;
      rs.alpha_s = p.latency_s;
      d->pipelined_phases = true;
      paths = static_cast<int>(inter.rings.size() + inter.trees.size());
      d->phases.push_back(std::move(rs));
      d->phases.push_back(std::move(inter));
      d->phases.push_back(std::move(ag));
      break;
    }
    case Algorithm::hierarchical: {
      const int ppn = gr.ppn_max;
      if (r.op != CollectiveOp::all_reduce || !gr.uniform) {
        throw std::invalid_argument(
            "CollectiveRequest.algorithm: hierarchical needs an all_reduce over the same number "
            "of GPUs on every node");
      }
      double lat = 0, bw = 0;
      NcclProto proto_inter = NcclProto::simple;
      int channels = 0;
      auto sub = [&](int ranks, int nodes, CollectiveOp op, double bytes, Phase& ph) {
        const NcclModel& m = model(ranks, nodes, r.channels, NcclAlgo::ring, r.protocol);
        const NcclDecision dd = m.decide(op, bytes);
        const auto [l, b] = split_model_time(m, op, dd.algo, dd.proto, bytes);
        lat += l;
        bw += b;
        ph.bw_time_s = b;
        ph.alpha_s = l;
        channels = std::max(channels, dd.n_channels);
        if (nodes > 1) proto_inter = dd.proto;
      };
      if (ppn > 1) {
        Phase rs;
        rs.name = "intra-node reduce-scatter";
        for (const auto& m : gr.members) {
          RingPattern rp;
          rp.kind = RingKind::reduce_scatter;
          rp.order = m;
          rp.payload = S;
          rs.rings.push_back(std::move(rp));
        }
        sub(ppn, 1, CollectiveOp::reduce_scatter, S, rs);
        d->phases.push_back(std::move(rs));
      }
      if (p.n_nodes > 1) {
        Phase inter;
        inter.name = "inter-node all-reduce per rail";
        for (int lr = 0; lr < ppn; ++lr) {
          RingPattern rp;
          rp.kind = RingKind::all_reduce;
          for (const auto& m : gr.members) rp.order.push_back(m[static_cast<std::size_t>(lr)]);
          rp.payload = S / ppn;
          inter.rings.push_back(std::move(rp));
        }
        sub(p.n_nodes, p.n_nodes, CollectiveOp::all_reduce, S / ppn, inter);
        paths = ppn;
        d->phases.push_back(std::move(inter));
      }
      if (ppn > 1) {
        Phase ag;
        ag.name = "intra-node all-gather";
        for (const auto& m : gr.members) {
          RingPattern rp;
          rp.kind = RingKind::all_gather;
          rp.order = m;
          rp.payload = S;
          ag.rings.push_back(std::move(rp));
        }
        sub(ppn, 1, CollectiveOp::all_gather, S, ag);
        d->phases.push_back(std::move(ag));
      }
      p.protocol = proto_inter;
      p.channels = channels;
      p.latency_s = lat;
      p.model_bw_time_s = bw;
      p.model_time_s = lat + bw;
      p.wire_efficiency = wire_efficiency(p.protocol);
      break;
    }
    case Algorithm::direct: {
      Phase ph;
      ph.name = "point-to-point";
      if (r.op == CollectiveOp::all_to_all) {
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) {
            if (i != j) {
              ph.direct.push_back({r.gpus[static_cast<std::size_t>(i)],
                                   r.gpus[static_cast<std::size_t>(j)], S / n});
            }
          }
        }
      } else if (r.one_way) {
        ph.direct.push_back({r.gpus[0], r.gpus[1], S});
      } else {
        for (int i = 0; i < n; ++i) {
          ph.direct.push_back({r.gpus[static_cast<std::size_t>(i)],
                               r.gpus[static_cast<std::size_t>((i + 1) % n)], S});
        }
      }
      p.model_bw_time_s = std::max(0.0, p.model_time_s - p.latency_s);
      ph.bw_time_s = p.model_bw_time_s;
      d->phases.push_back(std::move(ph));
      break;
    }
  }
  p.algorithm = algo;
  p.paths = paths;

  // Step sizes.
  double chunk = settings_.buffsize_bytes / kNcclSteps * kRingChunkSteps;
  const bool chain_op = r.op == CollectiveOp::broadcast || r.op == CollectiveOp::reduce;
  if (p.protocol == NcclProto::simple && chain_op) {
    chunk = settings_.buffsize_bytes / kNcclSteps * kChainChunkSteps;
  }
  if (p.protocol == NcclProto::ll) chunk = kLLBuffsize / kNcclSteps * kLLWireEfficiency;
  if (p.protocol == NcclProto::ll128) chunk = kLL128Buffsize / kNcclSteps * kLL128WireEfficiency;
  d->chunk_bytes_per_channel = chunk;
  const int patterns = std::max<std::size_t>(
      1, d->phases.empty() ? 1
                           : std::max({d->phases.front().rings.size(),
                                       d->phases.front().trees.size(), std::size_t{1}}));
  d->channels_per_pattern = std::max(1, p.channels / patterns);

  // Bulk flows: everything a collective sends per (src, dst), summed over patterns and phases.
  // Step parameters per pattern: chunk counts and the payload rate cap of each edge: the edge's
  // bytes over the phase's bandwidth time, raised by the pipeline fill of the chunked steps
  // ((chunks + depth - 1) / chunks: a chunk crosses `depth` edges one after the other), so that
  // an uncontended step run also ends with NCCL's model time. Each phase pays its share of
  // NCCL's latency once, at its start, in both granularities.
  std::map<std::pair<int, int>, double> flows;
  auto add = [&](int a, int b, double bytes) {
    if (a != b && bytes > 0) flows[{a, b}] += bytes;
  };
  auto rate = [](double bytes, double t) { return t > 0 ? bytes / t : 0.0; };
  double alpha_weight = 0;
  for (const Phase& ph : d->phases) alpha_weight += ph.bw_time_s;
  double bulk_time = 0;   // sum (sequential) or max (pipelined) of the phases' bandwidth times
  double chain_fill = 1;  // largest pipeline fill of a broadcast/reduce chain
  for (Phase& ph : d->phases) {
    if (ph.alpha_s <= 0 && !d->pipelined_phases) {
      ph.alpha_s = alpha_weight > 0 ? p.latency_s * ph.bw_time_s / alpha_weight
                                    : p.latency_s / static_cast<double>(d->phases.size());
    }
    for (RingPattern& rp : ph.rings) {
      const int k = static_cast<int>(rp.order.size());
      if (k < 2) continue;
      const double per_edge =
          rp.kind == RingKind::all_reduce ? rp.payload * 2 * (k - 1) / k
          : rp.kind == RingKind::reduce_scatter || rp.kind == RingKind::all_gather
              ? rp.payload * (k - 1) / k
              : rp.payload;
      const bool chain = rp.kind == RingKind::chain_forward || rp.kind == RingKind::chain_reduce;
      for (int i = 0; i < (chain ? k - 1 : k); ++i) {
        add(rp.order[static_cast<std::size_t>(i)], rp.order[static_cast<std::size_t>((i + 1) % k)],
            per_edge);
      }
      const double c = chunk * d->channels_per_pattern;
      rp.edge_rate_Bps = rate(per_edge, ph.bw_time_s);
      if (chain) {
        rp.chunks = ceil_div(rp.payload, c);
        const double fill = static_cast<double>(rp.chunks + k - 2) / rp.chunks;
        rp.edge_rate_Bps *= fill;
        chain_fill = std::max(chain_fill, fill);
      } else {
        // NCCL's loop: nChannels * nRanks * chunkSize bytes per loop (all_reduce.h).
        rp.chunks = ceil_div(rp.payload, k * c);
      }
    }
    for (TreePattern& tp : ph.trees) {
      for (std::size_t v = 0; v < tp.nodes.size(); ++v) {
        const int pv = tp.parent[v];
        if (pv < 0) continue;
        add(tp.nodes[v], tp.nodes[static_cast<std::size_t>(pv)], tp.payload);
        add(tp.nodes[static_cast<std::size_t>(pv)], tp.nodes[v], tp.payload);
      }
      // Tree Simple chunk shrinking (enqueue.cc) and the up+down pipeline fill.
      const int depth = std::max(1, tree_depth(tp.parent));
      double c = chunk * d->channels_per_pattern;
      while (tp.payload / c < depth * kTreeChunksPerDepth && c / 2 >= kTreeMinChunkBytes) c /= 2;
      tp.chunks = ceil_div(tp.payload, c);
      tp.edge_rate_Bps = rate(tp.payload, ph.bw_time_s) * (tp.chunks + 2 * depth - 1) / tp.chunks;
    }
    for (NvlsPattern& np : ph.nvls) {
      const double k = static_cast<double>(np.gpus.size());
      double up = np.payload, down = np.payload;
      // Per GPU: reduce-scatter sends its whole buffer through the switch's multimem loads and
      // gets its reduced shard back; all-gather stores its shard once and receives every shard.
      if (np.kind == NvlsKind::all_reduce) up = down = np.payload * (k + 1) / k;
      if (np.kind == NvlsKind::reduce_scatter) down = np.payload / k;
      if (np.kind == NvlsKind::all_gather) up = np.payload / k;
      for (int gpu : np.gpus) {
        add(gpu, np.nvswitch, up);
        add(np.nvswitch, gpu, down);
      }
      np.up_bytes = up;
      np.down_bytes = down;
      np.chunks = std::min(kNvlsMaxChunks, ceil_div(np.payload, kNvlsPipelineBytes));
      const double fill = static_cast<double>(np.chunks + 1) / np.chunks;
      np.up_rate_Bps = rate(up, ph.bw_time_s) * fill;
      np.down_rate_Bps = rate(down, ph.bw_time_s) * fill;
    }
    for (const DirectFlow& f : ph.direct) add(f.src, f.dst, f.payload);
    bulk_time = d->pipelined_phases ? std::max(bulk_time, ph.bw_time_s) : bulk_time + ph.bw_time_s;
  }
  d->bulk_flows.reserve(flows.size());
  for (const auto& [k, bytes] : flows) d->bulk_flows.push_back({k.first, k.second, bytes});
  d->bulk_bw_time_s = bulk_time;
  // A chain's chunks cross its k - 1 edges one after the other (store and forward): when the
  // links, not NCCL's model, set the pace, the last chunk arrives after every hop's time for one
  // chunk plus (chunks - 1) times the slowest hop. Bulk flows have no chunks, so a collective
  // with chains is paced to the longest such pipeline (or the links' shared time, if longer).
  if (chain_fill > 1 + 1e-9) {
    double pipeline = 0;
    for (const Phase& ph : d->phases) {
      for (const RingPattern& rp : ph.rings) {
        const int k = static_cast<int>(rp.order.size());
        if (k < 2 || (rp.kind != RingKind::chain_forward && rp.kind != RingKind::chain_reduce))
          continue;
        const double c = rp.payload / rp.chunks / p.wire_efficiency;
        double sum = 0, slowest = 0;
        for (int i = 0; i + 1 < k; ++i) {
          const double b = std::min(
              graph_->route_bandwidth_Bps(router_.route(rp.order[static_cast<std::size_t>(i)],
                                                        rp.order[static_cast<std::size_t>(i + 1)])),
              rp.edge_rate_Bps > 0 ? rp.edge_rate_Bps / p.wire_efficiency
                                   : std::numeric_limits<double>::infinity());
          sum += c / b;
          slowest = std::max(slowest, c / b);
        }
        pipeline = std::max(pipeline, sum + (rp.chunks - 1) * slowest);
      }
    }
    std::vector<FluidFlow> ff;
    for (const auto& f : d->bulk_flows)
      ff.push_back({router_.route(f.src, f.dst), f.payload / p.wire_efficiency, 0});
    const double links_time =
        fluid_makespan_s(ff, [this](int l) { return graph_->link(l).bandwidth_Bps; });
    d->bulk_bw_time_s = std::max({d->bulk_bw_time_s, pipeline, links_time});
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Analytic max-min sharing

double fluid_makespan_s(const std::vector<FluidFlow>& flows,
                        const std::function<double(int link)>& capacity) {
  // Resources: (link, direction) -> index.
  std::map<std::pair<int, int>, int> res_index;
  std::vector<double> cap;
  std::vector<std::vector<int>> flow_res(flows.size());
  for (std::size_t f = 0; f < flows.size(); ++f) {
    for (const auto& h : flows[f].route) {
      auto [it, fresh] = res_index.emplace(std::make_pair(h.link, static_cast<int>(h.dir)),
                                           static_cast<int>(cap.size()));
      if (fresh) cap.push_back(capacity(h.link));
      flow_res[f].push_back(it->second);
    }
  }
  std::vector<double> remaining(flows.size());
  std::vector<char> active(flows.size(), 0);
  std::size_t n_active = 0;
  for (std::size_t f = 0; f < flows.size(); ++f) {
    remaining[f] = flows[f].wire_bytes;
    if (remaining[f] > 0) {
      active[f] = 1;
      ++n_active;
    }
  }
  double now = 0;
  std::vector<double> rate(flows.size());
  std::vector<double> left(cap.size());
  std::vector<int> users(cap.size());
  std::vector<char> fixed(flows.size());
  while (n_active > 0) {
    // Progressive filling: raise all unfixed rates together until a resource saturates or a
    // flow reaches its cap; fix those flows; repeat.
    std::fill(rate.begin(), rate.end(), 0.0);
    std::fill(fixed.begin(), fixed.end(), 0);
    left = cap;
    std::size_t unfixed = n_active;
    double level = 0;
    while (unfixed > 0) {
      std::fill(users.begin(), users.end(), 0);
      for (std::size_t f = 0; f < flows.size(); ++f) {
        if (active[f] && !fixed[f]) {
          for (int r : flow_res[f]) ++users[static_cast<std::size_t>(r)];
        }
      }
      double inc = std::numeric_limits<double>::infinity();
      for (std::size_t r = 0; r < cap.size(); ++r) {
        if (users[r] > 0) inc = std::min(inc, left[r] / users[r]);
      }
      for (std::size_t f = 0; f < flows.size(); ++f) {
        if (active[f] && !fixed[f] && flows[f].rate_cap_Bps > 0) {
          inc = std::min(inc, flows[f].rate_cap_Bps - level);
        }
      }
      if (!std::isfinite(inc)) inc = 0;
      level += inc;
      for (std::size_t r = 0; r < cap.size(); ++r) left[r] -= inc * users[r];
      for (std::size_t f = 0; f < flows.size(); ++f) {
        if (!active[f] || fixed[f]) continue;
        bool saturated = flows[f].rate_cap_Bps > 0 && level >= flows[f].rate_cap_Bps * (1 - 1e-12);
        for (int r : flow_res[f]) {
          saturated = saturated ||
                      left[static_cast<std::size_t>(r)] <= cap[static_cast<std::size_t>(r)] * 1e-12;
        }
        if (saturated || inc == 0) {
          fixed[f] = 1;
          rate[f] = level;
          --unfixed;
        }
      }
    }
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (active[f] && rate[f] > 0) dt = std::min(dt, remaining[f] / rate[f]);
    }
    if (!std::isfinite(dt)) return std::numeric_limits<double>::infinity();
    now += dt;
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (!active[f]) continue;
      remaining[f] -= rate[f] * dt;
      if (remaining[f] <= flows[f].wire_bytes * 1e-9) {
        active[f] = 0;
        --n_active;
      }
    }
  }
  return now;
}

}  // namespace detail
}  // namespace clustersim::sim
