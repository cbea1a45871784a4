#include "nccl/patterns.hpp"

#include <algorithm>
#include <map>

namespace clustersim::nccl {

namespace {

std::vector<int> rotate(const std::vector<int>& v, int by) {
  std::vector<int> out(v.size());
  const int n = static_cast<int>(v.size());
  for (int i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((i + by) % n)];
  return out;
}

// One tree over nodes (`node_parent`: the parent of each node, -1 for the root), each node a
// chain of its members starting at the member at index `rail`.
TreePattern tree_over_nodes(const std::vector<int>& node_parent, int rail, double payload,
                            const std::vector<std::vector<int>>& members) {
  const int nn = static_cast<int>(members.size());
  TreePattern pat;
  pat.payload = payload;
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
    const int pn = node_parent[static_cast<std::size_t>(k)];
    pat.parent[static_cast<std::size_t>(head[static_cast<std::size_t>(k)])] =
        pn < 0 ? -1 : head[static_cast<std::size_t>(pn)];
  }
  return pat;
}

}  // namespace

GroupShape analyse_group(const topologies::ClusterGraph& graph, const std::vector<int>& gpus) {
  GroupShape gr;
  gr.n = static_cast<int>(gpus.size());
  std::map<int, int> index;
  for (int x : gpus) {
    const int node = graph.node_of_gpu(x);
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

std::vector<int> ring_order(const GroupShape& group, int rail) {
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(group.n));
  for (const auto& m : group.members) {
    const int k = static_cast<int>(m.size());
    for (int i = 0; i < k; ++i) order.push_back(m[static_cast<std::size_t>((i + rail) % k)]);
  }
  return order;
}

void add_rings(Phase& phase, const GroupShape& group, RingKind kind, double payload, int count,
               int root_gpu) {
  for (int k = 0; k < count; ++k) {
    RingPattern rp;
    rp.kind = kind;
    rp.order = ring_order(group, k);
    rp.payload = payload / count;
    if (kind == RingKind::chain_forward || kind == RingKind::chain_reduce) {
      // Rotate the cycle so the chain starts (broadcast) or ends (reduce) at the root.
      const auto it = std::find(rp.order.begin(), rp.order.end(), root_gpu);
      const int pos = static_cast<int>(it - rp.order.begin());
      rp.order = rotate(rp.order, kind == RingKind::chain_forward ? pos : pos + 1);
    }
    phase.rings.push_back(std::move(rp));
  }
}

void add_trees(Phase& phase, double payload, int rails,
               const std::vector<std::vector<int>>& members) {
  const int nn = static_cast<int>(members.size());
  const std::vector<int> t0 = nccl_btree(nn);
  const std::vector<int> t1 = nn > 1 ? nccl_dtree_second(nn) : t0;
  const int trees = nn > 1 ? 2 : 1;
  for (int t = 0; t < trees; ++t) {
    for (int rail = 0; rail < rails; ++rail) {
      phase.trees.push_back(
          tree_over_nodes(t == 0 ? t0 : t1, rail, payload / (trees * rails), members));
    }
  }
}

void add_nvls(Phase& phase, const GroupShape& group, int num_gpus, NvlsKind kind,
              double payload_per_node) {
  for (std::size_t k = 0; k < group.nodes.size(); ++k) {
    NvlsPattern np;
    np.kind = kind;
    np.nvswitch = num_gpus + group.nodes[k];
    np.gpus = group.members[k];
    np.payload = payload_per_node;
    phase.nvls.push_back(std::move(np));
  }
}

}  // namespace clustersim::nccl
