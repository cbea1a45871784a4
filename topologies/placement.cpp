#include "topologies/placement.hpp"

#include <stdexcept>
#include <string>

namespace clustersim::topologies {

RankCoords Placement::coords(int rank) const {
  if (rank < 0 || rank >= num_ranks()) {
    throw std::out_of_range("Placement::coords: rank " + std::to_string(rank) + " out of range");
  }
  RankCoords c;
  c.tp = rank % tp;
  rank /= tp;
  c.cp = rank % cp;
  rank /= cp;
  c.dp = rank % dp;
  c.pp = rank / dp;
  return c;
}

int Placement::rank_of(const RankCoords& c) const {
  return c.tp + tp * (c.cp + cp * (c.dp + dp * c.pp));
}

// Group indices follow the order in which place_ranks() creates the groups: the group of a
// dimension is numbered by the other coordinates, in Megatron order, fastest first.
int Placement::tp_group_of(int rank) const {
  const RankCoords c = coords(rank);
  return c.cp + cp * (c.dp + dp * c.pp);
}
int Placement::cp_group_of(int rank) const {
  const RankCoords c = coords(rank);
  return c.tp + tp * (c.dp + dp * c.pp);
}
int Placement::dp_group_of(int rank) const {
  const RankCoords c = coords(rank);
  return c.tp + tp * (c.cp + cp * c.pp);
}
int Placement::pp_group_of(int rank) const {
  const RankCoords c = coords(rank);
  return c.tp + tp * (c.cp + cp * c.dp);
}

namespace {

// The groups of ranks that differ only in coordinate `axis` (0 tp, 1 cp, 2 dp, 3 pp), each in
// ascending order of that coordinate. The loops run over the other coordinates in Megatron
// order (fastest first), so the k-th group created is the one *_group_of() numbers k.
std::vector<std::vector<int>> groups_along(const Placement& p, int axis) {
  const int size[4] = {p.tp, p.cp, p.dp, p.pp};
  int others[3];
  for (int a = 0, k = 0; a < 4; ++a) {
    if (a != axis) others[k++] = a;  // fastest first
  }
  std::vector<std::vector<int>> groups;
  int c[4] = {0, 0, 0, 0};
  for (c[others[2]] = 0; c[others[2]] < size[others[2]]; ++c[others[2]]) {
    for (c[others[1]] = 0; c[others[1]] < size[others[1]]; ++c[others[1]]) {
      for (c[others[0]] = 0; c[others[0]] < size[others[0]]; ++c[others[0]]) {
        std::vector<int> g;
        for (c[axis] = 0; c[axis] < size[axis]; ++c[axis]) {
          g.push_back(p.rank_of({c[0], c[1], c[2], c[3]}));
        }
        groups.push_back(std::move(g));
      }
    }
  }
  return groups;
}

}  // namespace

Placement place_ranks(const Parallelism& par, int gpus) {
  const auto require_degree = [](int v, const char* name) {
    if (v < 1) {
      throw std::invalid_argument(std::string("place_ranks: parallelism.") + name +
                                  " must be >= 1, got " + std::to_string(v));
    }
  };
  require_degree(par.tp, "tp");
  require_degree(par.cp, "cp");
  require_degree(par.dp, "dp");
  require_degree(par.pp, "pp");
  const long long product = 1LL * par.tp * par.cp * par.dp * par.pp;
  if (product != gpus) {
    throw std::invalid_argument("place_ranks: dp*tp*cp*pp = " + std::to_string(product) +
                                " does not equal gpus = " + std::to_string(gpus));
  }
  Placement p;
  p.tp = par.tp;
  p.cp = par.cp;
  p.dp = par.dp;
  p.pp = par.pp;
  p.gpu_of_rank.resize(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) p.gpu_of_rank[static_cast<std::size_t>(r)] = r;
  p.tp_groups = groups_along(p, 0);
  p.cp_groups = groups_along(p, 1);
  p.dp_groups = groups_along(p, 2);
  p.pp_groups = groups_along(p, 3);
  return p;
}

std::vector<int> expert_group_of(const Placement& p, int rank, int ep, int etp) {
  const int stage_ranks = p.tp * p.cp * p.dp;
  const int base = rank / stage_ranks * stage_ranks;
  const int local = rank % stage_ranks;
  const int t = local % etp;
  const int e = local / etp / ep;
  std::vector<int> group;
  for (int k = 0; k < ep; ++k) group.push_back(base + t + etp * (k + ep * e));
  return group;
}

ExpertGroups place_experts(const Placement& p, int ep, int etp) {
  const int stage_ranks = p.tp * p.cp * p.dp;
  if (ep < 1 || etp < 1 || stage_ranks % (ep * etp) != 0) {
    throw std::invalid_argument("place_experts: etp*ep = " + std::to_string(etp) + "*" +
                                std::to_string(ep) +
                                " does not divide tp*cp*dp = " + std::to_string(stage_ranks));
  }
  ExpertGroups g;
  g.ep = ep;
  g.etp = etp;
  g.edp = stage_ranks / (ep * etp);
  for (int stage = 0; stage < p.pp; ++stage) {
    const int base = stage * stage_ranks;
    for (int e = 0; e < g.edp; ++e) {
      for (int t = 0; t < etp; ++t) {
        g.ep_groups.push_back(expert_group_of(p, base + t + etp * ep * e, ep, etp));
      }
    }
    for (int k = 0; k < ep; ++k) {
      for (int t = 0; t < etp; ++t) {
        std::vector<int> group;
        for (int e = 0; e < g.edp; ++e) group.push_back(base + t + etp * (k + ep * e));
        g.edp_groups.push_back(std::move(group));
      }
    }
  }
  return g;
}

}  // namespace clustersim::topologies
