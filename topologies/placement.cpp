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

  // Loops run over the other coordinates in Megatron order (fastest first), so the k-th group
  // created is the one *_group_of() numbers k.
  for (int pp = 0; pp < p.pp; ++pp) {
    for (int dp = 0; dp < p.dp; ++dp) {
      for (int cp = 0; cp < p.cp; ++cp) {
        std::vector<int> g;
        for (int tp = 0; tp < p.tp; ++tp) g.push_back(p.rank_of({tp, cp, dp, pp}));
        p.tp_groups.push_back(std::move(g));
      }
    }
  }
  for (int pp = 0; pp < p.pp; ++pp) {
    for (int dp = 0; dp < p.dp; ++dp) {
      for (int tp = 0; tp < p.tp; ++tp) {
        std::vector<int> g;
        for (int cp = 0; cp < p.cp; ++cp) g.push_back(p.rank_of({tp, cp, dp, pp}));
        p.cp_groups.push_back(std::move(g));
      }
    }
  }
  for (int pp = 0; pp < p.pp; ++pp) {
    for (int cp = 0; cp < p.cp; ++cp) {
      for (int tp = 0; tp < p.tp; ++tp) {
        std::vector<int> g;
        for (int dp = 0; dp < p.dp; ++dp) g.push_back(p.rank_of({tp, cp, dp, pp}));
        p.dp_groups.push_back(std::move(g));
      }
    }
  }
  for (int dp = 0; dp < p.dp; ++dp) {
    for (int cp = 0; cp < p.cp; ++cp) {
      for (int tp = 0; tp < p.tp; ++tp) {
        std::vector<int> g;
        for (int pp = 0; pp < p.pp; ++pp) g.push_back(p.rank_of({tp, cp, dp, pp}));
        p.pp_groups.push_back(std::move(g));
      }
    }
  }
  return p;
}

}  // namespace clustersim::topologies
