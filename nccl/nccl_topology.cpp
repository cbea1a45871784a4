// NCCL's topology search, approximated from the cluster hardware (src/graph/search.cc,
// connect.cc, v2.30.7-1): channels and per-channel bandwidth of the ring, tree and NVLS graphs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "nccl/nccl_model.hpp"
#include "nccl/tuning_tables.hpp"

namespace clustersim::nccl {

using namespace tuning;

namespace {

struct Speeds {
  const double* values;
  std::size_t count;
};

Speeds speeds_for(GpuArch arch, bool inter) {
  switch (arch) {
    case GpuArch::blackwell:
      return inter ? Speeds{kSm100SpeedInter, std::size(kSm100SpeedInter)}
                   : Speeds{kSm100SpeedIntra, std::size(kSm100SpeedIntra)};
    case GpuArch::hopper:
      return inter ? Speeds{kSm90SpeedInter, std::size(kSm90SpeedInter)}
                   : Speeds{kSm90SpeedIntra, std::size(kSm90SpeedIntra)};
    default:
      return inter ? Speeds{kSpeedInter, std::size(kSpeedInter)}
                   : Speeds{kSpeedIntra, std::size(kSpeedIntra)};
  }
}

// The (channels, speed) pair of the speed array that carries the most total bandwidth within
// the per-GPU NVLink budget (each channel crosses every GPU's NVLink once) and, across nodes,
// within the NICs (each channel leaves through one NIC). Ties keep the faster speed, as the
// search tries speeds from the top.
std::pair<int, double> search_channels(Speeds speeds, int max_channels, double nvlink_GBps,
                                       bool use_nvlink, double nic_GBps, int nics) {
  int best_c = 0;
  double best_s = 0;
  for (std::size_t i = 0; i < speeds.count; ++i) {
    const double s = speeds.values[i];
    long c = max_channels;
    if (use_nvlink) c = std::min<long>(c, static_cast<long>(std::floor(nvlink_GBps / s + 1e-9)));
    if (nics > 0) c = std::min<long>(c, nics * static_cast<long>(std::floor(nic_GBps / s + 1e-9)));
    if (c >= 1 && c * s > best_c * best_s + 1e-9) {
      best_c = static_cast<int>(c);
      best_s = s;
    }
  }
  if (best_c == 0) {  // slower than the slowest speed: one channel at the smallest speed
    best_c = 1;
    best_s = speeds.values[speeds.count - 1];
  }
  return {best_c, best_s};
}

// What the search sees of the communicator's hardware, in NCCL's units.
struct SearchInputs {
  GpuArch arch = GpuArch::hopper;
  int ppn = 1;
  bool multi_node = false;
  double nvlink_GBps = 0;  // per GPU, one direction
  double nic_GBps = 0;     // per NIC
  int nics_usable = 0;     // NICs of a node next to the communicator's ranks (0 on one node)
  bool nvswitch = true;
  bool sm90_plus() const { return arch == GpuArch::hopper || arch == GpuArch::blackwell; }
};

void check_hardware(const NcclHardware& hw, int n_ranks, int n_nodes) {
  if (n_ranks < 1) throw std::invalid_argument("derive_comm_info: n_ranks must be >= 1");
  if (n_nodes < 1 || n_nodes > n_ranks || n_ranks % n_nodes != 0) {
    throw std::invalid_argument("derive_comm_info: n_nodes must divide n_ranks (" +
                                std::to_string(n_ranks) + " ranks on " + std::to_string(n_nodes) +
                                " nodes)");
  }
  if (!(hw.nvlink_Bps_per_gpu > 0)) {
    throw std::invalid_argument("derive_comm_info: nvlink_Bps_per_gpu must be > 0");
  }
  if (n_nodes > 1 && !(hw.net_Bps_per_gpu > 0)) {
    throw std::invalid_argument("derive_comm_info: net_Bps_per_gpu must be > 0");
  }
  if (hw.nics_per_node < 1 || hw.gpus_per_node < 1) {
    throw std::invalid_argument("derive_comm_info: nics_per_node and gpus_per_node must be >= 1");
  }
}

SearchInputs search_inputs(const NcclHardware& hw, int n_ranks, int n_nodes) {
  SearchInputs in;
  in.arch = hw.arch;
  in.ppn = n_ranks / n_nodes;
  in.multi_node = n_nodes > 1;
  in.nvlink_GBps = hw.nvlink_Bps_per_gpu / kBytesPerGB;
  in.nic_GBps = hw.net_Bps_per_gpu * hw.gpus_per_node / hw.nics_per_node / kBytesPerGB;
  // NICs of a node the communicator's ranks sit next to (one rank per node uses one NIC).
  in.nics_usable =
      in.multi_node
          ? std::clamp((in.ppn * hw.nics_per_node + hw.gpus_per_node - 1) / hw.gpus_per_node, 1,
                       hw.nics_per_node)
          : 0;
  in.nvswitch = hw.nvswitch;
  return in;
}

// Ring graph (init.cc: ringGraph->maxChannels = MAXCHANNELS / 2), then ncclTopoDupChannels.
NcclGraphInfo ring_graph(const SearchInputs& in, int nics_per_node) {
  const int ring_max = kMaxChannels / 2;
  auto [c, s] = search_channels(speeds_for(in.arch, in.multi_node), ring_max, in.nvlink_GBps,
                                in.ppn > 1, in.nic_GBps, in.nics_usable);
  if (s >= kDupMinBw_GBps &&
      !(in.sm90_plus() && s < kDupSm90MaxBw_GBps && c > kDupSm90MaxChannels)) {
    const int dup = std::min(2 * c, ring_max);
    s /= (dup + c - 1) / c;
    c = dup;
  }
  NcclGraphInfo g;
  g.n_channels = c;
  g.bw_intra_GBps = s;
  g.bw_inter_GBps = s;
  g.intra_nvlink = in.nvswitch;
  g.same_channels = !in.multi_node || nics_per_node == 1;
  return g;
}

// NVLS graph: one channel per GPU head (maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs), one node
// forces minChannels = maxChannels), never duplicated. Patterns other than Ring get the NVLink
// budget scaled by ndevs / (ndevs - 1) (search.cc ncclTopoCompute: "algo other than RING do
// not need to close to the starting NET"). Pass 2 then raises bwInter one speed at a time
// while it is below 2 x bwIntra (search.cc, NVLS branch), as far as the NICs allow.
NcclGraphInfo nvls_graph(const SearchInputs& in) {
  const int nvls_c = std::min(kMaxNvlsArity, in.ppn);
  const Speeds nvls_speeds = speeds_for(in.arch, in.multi_node);
  const double nvls_budget_GBps =
      in.ppn > 1 ? in.nvlink_GBps * in.ppn / (in.ppn - 1) : in.nvlink_GBps;
  const double nvls_nic_GBps =
      in.multi_node ? in.nic_GBps * in.nics_usable / nvls_c : std::numeric_limits<double>::max();
  std::size_t nvls_i = nvls_speeds.count;
  for (std::size_t i = 0; i < nvls_speeds.count; ++i) {
    const double sp = nvls_speeds.values[i];
    if (sp * nvls_c <= nvls_budget_GBps + 1e-9 && sp <= nvls_nic_GBps + 1e-9) {
      nvls_i = i;
      break;
    }
  }
  const double nvls_s = nvls_i < nvls_speeds.count ? nvls_speeds.values[nvls_i] : 0;
  double nvls_inter = nvls_s;
  for (std::size_t i = nvls_i; nvls_s > 0 && i > 0 && nvls_inter < 2 * nvls_s;) {
    --i;
    if (nvls_speeds.values[i] > nvls_nic_GBps + 1e-9) break;
    nvls_inter = nvls_speeds.values[i];
  }
  NcclGraphInfo g;
  g.n_channels = nvls_c;
  g.bw_intra_GBps = nvls_s;
  g.bw_inter_GBps = nvls_inter;
  g.intra_nvlink = in.nvswitch;
  return g;
}

// comm->nChannels (connect.cc ncclTopoPostset): rings duplicated once more, doubled again on
// Hopper+ multi-node fast rings, then NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS.
int comm_channels(const SearchInputs& in, const NcclGraphInfo& ring, const NcclSettings& settings) {
  int comm_c = std::min(kMaxChannels, 2 * ring.n_channels);
  if (in.sm90_plus() && in.multi_node && ring.bw_intra_GBps > kPostsetDoubleMinBw_GBps &&
      comm_c < kPostsetDoubleMaxChannels) {
    comm_c = std::min(kMaxChannels, 2 * comm_c);
  }
  if (settings.max_channels > 0) comm_c = std::min(comm_c, settings.max_channels);
  if (settings.min_channels > 0)
    comm_c = std::max(comm_c, std::min(settings.min_channels, kMaxChannels));
  return comm_c;
}

}  // namespace

NcclCommInfo derive_comm_info(const NcclHardware& hw, int n_ranks, int n_nodes,
                              const NcclSettings& settings) {
  check_hardware(hw, n_ranks, n_nodes);
  const SearchInputs in = search_inputs(hw, n_ranks, n_nodes);
  NcclCommInfo ci;
  ci.n_ranks = n_ranks;
  ci.n_nodes = n_nodes;
  ci.arch = hw.arch;
  ci.cpu = hw.cpu;
  ci.nvlink_GBps_per_gpu = in.nvlink_GBps;
  ci.net_GBps_per_gpu = hw.net_Bps_per_gpu / kBytesPerGB;
  ci.ring = ring_graph(in, hw.nics_per_node);
  // Tree graph: init.cc treeGraph min/maxChannels = ringGraph->nChannels; same speeds.
  ci.tree = ci.ring;
  ci.nvls = nvls_graph(in);
  ci.nvls_supported = in.sm90_plus() && hw.nvswitch && ci.nvls.n_channels >= 2 &&
                      ci.nvls.bw_intra_GBps > 0 && settings.nvls_enable.value_or(true);
  ci.nvls_channels = hw.arch == GpuArch::blackwell
                         ? (in.multi_node ? kNvlsChannelsSm100 : kNvlsChannelsSm100Nvl)
                         : kNvlsChannelsSm90;
  ci.comm_channels = comm_channels(in, ci.ring, settings);
  // LL128 default: typeIntra <= PATH_NVB (NVLink) and typeInter <= PATH_PXN on Hopper+
  // (<= PATH_PXB before): a NIC reached without GPUDirect RDMA goes through the CPU (PATH_PHB).
  ci.ll128_paths_ok = hw.nvswitch && (!in.multi_node || hw.gpudirect_rdma);
  return ci;
}

}  // namespace clustersim::nccl
