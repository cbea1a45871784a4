// Collective names, nccl-tests' bus-bandwidth factors, results and protocol wire formats.
#include "nccl/collectives.hpp"

#include <algorithm>

namespace clustersim::nccl {

namespace {

// NCCL's line formats (src/include/device.h): an LL line (union ncclLLFifoLine, 16 bytes) holds
// 8 bytes of data and 8 of flags; an LL128 line of 128 bytes holds 120 bytes of data
// (NCCL_LL128_DATAELEMS 15 of NCCL_LL128_LINEELEMS 16 uint64_t); Simple sends data only.
constexpr double kLLWireEfficiency = 0.5;
constexpr double kLL128WireEfficiency = 120.0 / 128.0;
constexpr double kSimpleWireEfficiency = 1.0;

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

double wire_efficiency(NcclProto proto) {
  switch (proto) {
    case NcclProto::ll: return kLLWireEfficiency;
    case NcclProto::ll128: return kLL128WireEfficiency;
    case NcclProto::simple: return kSimpleWireEfficiency;
  }
  return 1;
}

}  // namespace clustersim::nccl
