#include "nccl/planner.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "nccl/pacing.hpp"

namespace clustersim::nccl {

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

// The nccl-tests binary that measures the operation (point-to-point has none here).
NcclTestsOp nccl_tests_op(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return NcclTestsOp::all_reduce;
    case CollectiveOp::reduce_scatter: return NcclTestsOp::reduce_scatter;
    case CollectiveOp::all_gather: return NcclTestsOp::all_gather;
    case CollectiveOp::broadcast: return NcclTestsOp::broadcast;
    case CollectiveOp::reduce: return NcclTestsOp::reduce;
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv: break;
  }
  return NcclTestsOp::unknown;
}

bool is_p2p(CollectiveOp op) {
  return op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv;
}

}  // namespace

Planner::Planner(const topologies::ClusterGraph& graph, NcclSettings settings, GpuArch arch,
                 CpuVendor cpu, const TransportChoice& transport,
                 std::vector<NetworkCalibration> calibration)
    : graph_(&graph),
      settings_(std::move(settings)),
      arch_(arch),
      cpu_(cpu),
      transport_(transport),
      router_(graph, transport.p2p_nvlink),
      calibration_(std::move(calibration)) {}

Planner::~Planner() = default;

std::optional<Planner::Calibrated> Planner::calibrated(CollectiveOp op, int n_ranks, int n_nodes,
                                                       double bytes) const {
  if (calibration_.empty()) return std::nullopt;
  // Point-to-point has no tuning table to replace: NCCL's estimate stays.
  if (is_p2p(op)) return std::nullopt;
  const NcclTestsOp tests_op = nccl_tests_op(op);
  const auto* entry =
      find_network_calibration(calibration_, link_class_for(n_nodes), tests_op, n_ranks);
  const AlphaBetaFit* regime = entry ? entry->regime_for(bytes) : nullptr;
  if (!regime) return std::nullopt;
  constexpr double kSecondsPerUs = 1e-6;
  const double factor = busbw_factor(tests_op, n_ranks);
  Calibrated c;
  c.latency_s = regime->latency_us * kSecondsPerUs;
  c.bw_time_s = (regime->time_us(bytes, factor) - regime->latency_us) * kSecondsPerUs;
  c.source =
      entry->source + " (" + entry->link_class + ", " + std::to_string(entry->nranks) + " ranks)";
  return c;
}

std::size_t Planner::GpusHash::operator()(const std::vector<int>& gpus) const {
  std::size_t h = gpus.size();
  for (int x : gpus) h = h * 1000003u ^ static_cast<std::size_t>(x);  // exact equality decides
  return h;
}

void Planner::validate_group(const std::vector<int>& gpus) const {
  const int g = graph_->num_gpus();
  if (gpus.empty()) throw std::invalid_argument("CollectiveRequest.gpus: empty group");
  std::vector<char> seen(static_cast<std::size_t>(g), 0);
  for (int x : gpus) {
    if (x < 0 || x >= g) {
      throw std::invalid_argument("CollectiveRequest.gpus: GPU " + std::to_string(x) +
                                  " is outside the cluster's 0.." + std::to_string(g - 1));
    }
    if (seen[static_cast<std::size_t>(x)]++) {
      throw std::invalid_argument("CollectiveRequest.gpus: GPU " + std::to_string(x) +
                                  " appears twice");
    }
  }
}

const Planner::Group& Planner::group(const std::vector<int>& gpus) const {
  auto it = groups_.find(gpus);
  if (it != groups_.end()) return it->second;
  validate_group(gpus);
  Group grp;
  grp.id = static_cast<int>(groups_.size());
  // Nodes renumbered by first appearance; the leaf group boundary kept (nodes_per_leaf).
  std::ostringstream k;
  std::map<int, int> rel;
  const int npl = std::max(1, graph_->spec().fabric.nodes_per_leaf);
  for (int x : gpus) {
    const int node = graph_->node_of_gpu(x);
    const int id = rel.emplace(node, static_cast<int>(rel.size())).first->second;
    k << id << ':' << graph_->local_of_gpu(x) << ':'
      << (node / npl - graph_->node_of_gpu(gpus[0]) / npl) << ',';
  }
  grp.shape = k.str();
  return groups_.emplace(gpus, std::move(grp)).first->second;
}

void Planner::validate(const CollectiveRequest& r) const {
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

CollectivePlan Planner::plan(const CollectiveRequest& request,
                             Granularity default_granularity) const {
  return decompose(request, default_granularity)->plan;
}

std::string Planner::shape_key(const CollectiveRequest& r) const {
  const Group& grp = group(r.gpus);
  std::ostringstream k;
  k.precision(17);
  k << static_cast<int>(r.op) << '|' << r.bytes << '|' << r.root << '|' << r.one_way << '|'
    << (r.algorithm ? static_cast<int>(*r.algorithm) : -1) << '|'
    << (r.protocol ? static_cast<int>(*r.protocol) : -1) << '|' << r.channels.value_or(0) << '|'
    << static_cast<int>(r.dtype) << '|' << grp.shape;
  return k.str();
}

std::shared_ptr<const Decomposition> Planner::decompose(const CollectiveRequest& r,
                                                        Granularity default_granularity) const {
  const Group& grp = group(r.gpus);
  validate(r);
  const DecompositionKey key{grp.id,
                             static_cast<int>(r.op),
                             r.bytes,
                             r.root,
                             static_cast<int>(r.dtype),
                             r.one_way,
                             r.algorithm ? static_cast<int>(*r.algorithm) : -1,
                             r.protocol ? static_cast<int>(*r.protocol) : -1,
                             r.channels.value_or(0),
                             static_cast<int>(r.granularity.value_or(default_granularity))};
  auto it = decompositions_.find(key);
  if (it != decompositions_.end()) return it->second;
  auto d = build(r, default_granularity);
  decompositions_.emplace(key, d);
  return d;
}

void Planner::start_plan(CollectivePlan& p, const CollectiveRequest& r, const GroupShape& gr,
                         Granularity default_granularity) const {
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
}

void Planner::plan_without_data(CollectivePlan& p, const CollectiveRequest& r,
                                const GroupShape& gr) const {
  const int n = gr.n;
  p.algorithm = is_p2p(r.op) ? Algorithm::direct : Algorithm::ring;
  p.channels = 0;
  p.chosen_by = n == 1 ? "single rank" : "empty message";
  if (n > 1) {
    // Still pay NCCL's latency for an empty message.
    if (p.algorithm == Algorithm::direct) {
      const NcclModel& m =
          model(gr.model_ranks, gr.model_nodes, r.channels, std::nullopt, std::nullopt);
      p.latency_s = m.decide(r.op, 0).time_s;
    } else {
      const std::optional<NcclAlgo> forced =
          r.algorithm ? nccl_algo_of(*r.algorithm) : std::nullopt;
      const NcclModel& m = model(gr.model_ranks, gr.model_nodes, r.channels, forced, r.protocol);
      const NcclDecision dec = m.decide(r.op, 0, r.dtype);
      p.algorithm = algorithm_of(dec.algo);
      p.protocol = dec.proto;
      p.channels = dec.n_channels;
      p.latency_s = dec.time_s;
    }
  }
  p.model_time_s = p.latency_s;
}

// Which ring/tree instance carries which share: several NICs per node spread channels over
// rails (one ring/tree per rail used); otherwise one path.
int Planner::rails_used(const CollectivePlan& p, const GroupShape& gr) const {
  return p.n_nodes > 1 && gr.ppn_max > 1 && graph_->nics_per_node() > 1
             ? std::clamp(gr.ppn_max * graph_->nics_per_node() / graph_->gpus_per_node(), 1,
                          std::min(gr.ppn_max, graph_->nics_per_node()))
             : 1;
}

// NCCL's cost model (under NCCL_ALGO/NCCL_PROTO and the request's overrides) picks the
// algorithm and protocol; the cluster's calibration, where it measured the collective,
// replaces the model's time.
void Planner::plan_nccl_choice(CollectivePlan& p, const CollectiveRequest& r, const GroupShape& gr,
                               Algorithm* algo) const {
  const std::optional<NcclAlgo> forced = r.algorithm ? nccl_algo_of(*r.algorithm) : std::nullopt;
  const NcclModel& m = model(gr.model_ranks, gr.model_nodes, r.channels, forced, r.protocol);
  const NcclDecision dec = m.decide(r.op, r.bytes, r.dtype);
  *algo = algorithm_of(dec.algo);
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

Algorithm Planner::choose_algorithm(CollectivePlan& p, const CollectiveRequest& r,
                                    const GroupShape& gr) const {
  Algorithm algo = Algorithm::ring;
  if (is_p2p(r.op)) {
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
    plan_nccl_choice(p, r, gr, &algo);
  }
  p.algorithm = algo;
  p.wire_efficiency = wire_efficiency(p.protocol);
  // NVLS needs NVLink P2P and NVSwitch; composite NVLS needs the same members on every node.
  if ((algo == Algorithm::nvls || algo == Algorithm::nvls_tree) &&
      (!transport_.p2p_nvlink || (p.n_nodes > 1 && !gr.uniform))) {
    p.notes.push_back("NVLS cannot be simulated for this group; ring data movement used");
    algo = Algorithm::ring;
  }
  return algo;
}

std::shared_ptr<const Decomposition> Planner::build(const CollectiveRequest& r,
                                                    Granularity default_granularity) const {
  auto d = std::make_shared<Decomposition>();
  CollectivePlan& p = d->plan;
  const GroupShape gr = analyse_group(*graph_, r.gpus);
  start_plan(p, r, gr, default_granularity);
  if (gr.n == 1 || r.bytes <= 0) {
    plan_without_data(p, r, gr);
    return d;
  }
  const Algorithm algo = choose_algorithm(p, r, gr);
  const AlgorithmContext context{r, gr, graph_->num_gpus(), rails_used(p, gr),
                                 [this, &r](int ranks, int nodes) -> const NcclModel& {
                                   return model(ranks, nodes, r.channels, NcclAlgo::ring,
                                                r.protocol);
                                 }};
  p.paths = decomposition_for(algo)(context, *d);
  p.algorithm = algo;
  pace(*d, settings_.buffsize_bytes, router_);
  return d;
}

}  // namespace clustersim::nccl
