#include "nccl/algorithms.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace clustersim::nccl {

namespace {

// The ratio used to separate the model's latency from its bandwidth term numerically.
constexpr double kSlopeProbe = 1e-3;

RingKind ring_kind(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::reduce_scatter: return RingKind::reduce_scatter;
    case CollectiveOp::all_gather: return RingKind::all_gather;
    case CollectiveOp::broadcast: return RingKind::chain_forward;
    case CollectiveOp::reduce: return RingKind::chain_reduce;
    default: return RingKind::all_reduce;
  }
}

NvlsKind nvls_kind(CollectiveOp op) {
  return op == CollectiveOp::reduce_scatter ? NvlsKind::reduce_scatter
         : op == CollectiveOp::all_gather   ? NvlsKind::all_gather
                                            : NvlsKind::all_reduce;
}

// Rings in NCCL's order (one per rail used) over the whole group, as one phase named `name`.
int ring_phase(const AlgorithmContext& c, Decomposition& d, const char* name) {
  const CollectiveRequest& r = c.request;
  Phase ph;
  ph.name = name;
  add_rings(ph, c.group, ring_kind(r.op), r.bytes, c.rails_used,
            r.gpus[static_cast<std::size_t>(r.root)]);
  ph.bw_time_s = d.plan.model_bw_time_s;
  d.phases.push_back(std::move(ph));
  return c.rails_used;
}

// NVLS reduce-scatter in every node, the shard all-reduced across nodes rail by rail (tree for
// NVLSTree, ring for multi-node NVLS), NVLS all-gather. NCCL pipelines the three chunk by chunk;
// both granularities run them at the same time, each paced to end with the model's bandwidth
// time (step granularity keeps each part's own step structure but not the chunk-level
// hand-over between parts).
int nvls_across_nodes(const AlgorithmContext& c, Decomposition& d, bool tree) {
  const GroupShape& gr = c.group;
  const CollectivePlan& p = d.plan;
  const double S = c.request.bytes;
  const int ppn = gr.ppn_max;
  Phase rs, inter, ag;
  rs.name = "nvls reduce-scatter";
  inter.name = tree ? "inter-node tree" : "inter-node ring";
  ag.name = "nvls all-gather";
  add_nvls(rs, gr, c.num_gpus, NvlsKind::reduce_scatter, S);
  add_nvls(ag, gr, c.num_gpus, NvlsKind::all_gather, S);
  for (int lr = 0; lr < ppn; ++lr) {
    std::vector<std::vector<int>> per_node;
    for (const auto& m : gr.members) per_node.push_back({m[static_cast<std::size_t>(lr)]});
    if (tree) {
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
  d.pipelined_phases = true;
  const int paths = static_cast<int>(inter.rings.size() + inter.trees.size());
  d.phases.push_back(std::move(rs));
  d.phases.push_back(std::move(inter));
  d.phases.push_back(std::move(ag));
  return paths;
}

// The parts of the hierarchical all-reduce and what each costs by NCCL's Ring model of its own
// sub-communicator; the plan's latency and bandwidth time are their sums.
struct HierarchicalCost {
  double latency_s = 0;
  double bw_time_s = 0;
  NcclProto inter_protocol = NcclProto::simple;
  int channels = 0;
};

void cost_part(const AlgorithmContext& c, HierarchicalCost& cost, int ranks, int nodes,
               CollectiveOp op, double bytes, Phase& ph) {
  const NcclModel& m = c.ring_model(ranks, nodes);
  const NcclDecision dd = m.decide(op, bytes);
  const auto [l, b] = split_model_time(m, op, dd.algo, dd.proto, bytes);
  cost.latency_s += l;
  cost.bw_time_s += b;
  ph.bw_time_s = b;
  ph.alpha_s = l;
  cost.channels = std::max(cost.channels, dd.n_channels);
  if (nodes > 1) cost.inter_protocol = dd.proto;
}

// One ring of `kind` per node over that node's members.
Phase intra_node_rings(const GroupShape& gr, RingKind kind, double payload, const char* name) {
  Phase ph;
  ph.name = name;
  for (const auto& m : gr.members) {
    RingPattern rp;
    rp.kind = kind;
    rp.order = m;
    rp.payload = payload;
    ph.rings.push_back(std::move(rp));
  }
  return ph;
}

}  // namespace

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

int decompose_ring(const AlgorithmContext& c, Decomposition& d) {
  return ring_phase(c, d, "ring");
}

int decompose_pat(const AlgorithmContext& c, Decomposition& d) {
  d.plan.notes.push_back("PAT simulated with ring data movement");
  return ring_phase(c, d, "pat");
}

int decompose_tree(const AlgorithmContext& c, Decomposition& d) {
  Phase ph;
  ph.name = "tree";
  add_trees(ph, c.request.bytes, c.rails_used, c.group.members);
  const int paths = static_cast<int>(ph.trees.size());
  ph.bw_time_s = d.plan.model_bw_time_s;
  d.phases.push_back(std::move(ph));
  return paths;
}

int decompose_nvls(const AlgorithmContext& c, Decomposition& d) {
  if (d.plan.n_nodes > 1) return nvls_across_nodes(c, d, false);
  Phase ph;
  ph.name = "nvls";
  add_nvls(ph, c.group, c.num_gpus, nvls_kind(c.request.op), c.request.bytes);
  ph.bw_time_s = d.plan.model_bw_time_s;
  d.phases.push_back(std::move(ph));
  return 1;
}

int decompose_nvls_tree(const AlgorithmContext& c, Decomposition& d) {
  return nvls_across_nodes(c, d, true);
}

int decompose_hierarchical(const AlgorithmContext& c, Decomposition& d) {
  const GroupShape& gr = c.group;
  CollectivePlan& p = d.plan;
  const double S = c.request.bytes;
  const int ppn = gr.ppn_max;
  if (c.request.op != CollectiveOp::all_reduce || !gr.uniform) {
    throw std::invalid_argument(
        "CollectiveRequest.algorithm: hierarchical needs an all_reduce over the same number "
        "of GPUs on every node");
  }
  HierarchicalCost cost;
  int paths = 1;
  if (ppn > 1) {
    Phase rs = intra_node_rings(gr, RingKind::reduce_scatter, S, "intra-node reduce-scatter");
    cost_part(c, cost, ppn, 1, CollectiveOp::reduce_scatter, S, rs);
    d.phases.push_back(std::move(rs));
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
    cost_part(c, cost, p.n_nodes, p.n_nodes, CollectiveOp::all_reduce, S / ppn, inter);
    paths = ppn;
    d.phases.push_back(std::move(inter));
  }
  if (ppn > 1) {
    Phase ag = intra_node_rings(gr, RingKind::all_gather, S, "intra-node all-gather");
    cost_part(c, cost, ppn, 1, CollectiveOp::all_gather, S, ag);
    d.phases.push_back(std::move(ag));
  }
  p.protocol = cost.inter_protocol;
  p.channels = cost.channels;
  p.latency_s = cost.latency_s;
  p.model_bw_time_s = cost.bw_time_s;
  p.model_time_s = cost.latency_s + cost.bw_time_s;
  p.wire_efficiency = wire_efficiency(p.protocol);
  return paths;
}

int decompose_direct(const AlgorithmContext& c, Decomposition& d) {
  const CollectiveRequest& r = c.request;
  CollectivePlan& p = d.plan;
  const int n = c.group.n;
  const double S = r.bytes;
  Phase ph;
  ph.name = "point-to-point";
  if (r.op == CollectiveOp::all_to_all) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i != j) {
          ph.direct.push_back(
              {r.gpus[static_cast<std::size_t>(i)], r.gpus[static_cast<std::size_t>(j)], S / n});
        }
      }
    }
  } else if (r.one_way) {
    ph.direct.push_back({r.gpus[0], r.gpus[1], S});
  } else {
    for (int i = 0; i < n; ++i) {
      ph.direct.push_back(
          {r.gpus[static_cast<std::size_t>(i)], r.gpus[static_cast<std::size_t>((i + 1) % n)], S});
    }
  }
  p.model_bw_time_s = std::max(0.0, p.model_time_s - p.latency_s);
  ph.bw_time_s = p.model_bw_time_s;
  d.phases.push_back(std::move(ph));
  return 1;
}

DecomposeFn decomposition_for(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return decompose_ring;
    case Algorithm::pat: return decompose_pat;
    case Algorithm::tree: return decompose_tree;
    case Algorithm::nvls: return decompose_nvls;
    case Algorithm::nvls_tree: return decompose_nvls_tree;
    case Algorithm::hierarchical: return decompose_hierarchical;
    case Algorithm::direct: return decompose_direct;
  }
  return decompose_ring;
}

}  // namespace clustersim::nccl
