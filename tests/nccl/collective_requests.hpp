// Collective requests the tests of nccl/ and sim/ build by hand.
#pragma once

#include <utility>
#include <vector>

#include "nccl/collectives.hpp"

namespace clustersim::test {

// An all-reduce of `bytes` per GPU over `gpus`, every other field at its default.
inline nccl::CollectiveRequest allreduce(std::vector<int> gpus, double bytes) {
  nccl::CollectiveRequest r;
  r.op = nccl::CollectiveOp::all_reduce;
  r.gpus = std::move(gpus);
  r.bytes = bytes;
  return r;
}

}  // namespace clustersim::test
