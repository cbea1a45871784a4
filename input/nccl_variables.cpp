#include "input/nccl_variables.hpp"

#include <algorithm>
#include <limits>

namespace clustersim {
namespace {

constexpr long kAny = std::numeric_limits<long>::max();
constexpr long kAnyNegative = std::numeric_limits<long>::min();

// Why a variable has no modelled effect, by what it acts on.
constexpr const char* kSocket =
    "tunes NCCL's socket (TCP) transport or bootstrap; the simulated cluster's traffic uses the "
    "InfiniBand verbs transport";
constexpr const char* kInit =
    "acts while communicators are created or connected, which the simulated step does not include";
constexpr const char* kLogging = "controls NCCL's log output, not the time data takes";
constexpr const char* kChecks =
    "argument checks on each call add host-side time the simulator does not model";
constexpr const char* kPlugin =
    "selects a plugin or configuration file; the simulator models NCCL's built-in network, tuner "
    "and settings";
constexpr const char* kDevices =
    "selects or groups network devices, interfaces or topology files; the simulator takes devices "
    "and topology from the cluster preset";
constexpr const char* kIbDetail =
    "an InfiniBand verbs detail (addressing, queue pairs, ordering, routing, traffic class) below "
    "the simulator's flow-level network model";
constexpr const char* kMemory =
    "changes how NCCL allocates, shares or registers buffers; the simulator moves payload bytes "
    "as flows and does not model copies or registration";
constexpr const char* kKernel =
    "changes the threads, blocks or memory domain of NCCL's kernels; their effect on compute or "
    "link time is not modelled";
constexpr const char* kLaunch =
    "changes how kernels are launched, ordered or captured in CUDA graphs; kernel launch is not "
    "modelled";
constexpr const char* kPointToPoint =
    "point-to-point transfers are simulated as whole flows with the Simple protocol; their "
    "network chunking and LL buffers are not modelled";
constexpr const char* kPxn =
    "the simulator always lets traffic reach a peer's NIC through PXN or NVLink forwarding "
    "(NCCL's default); restricting it is not modelled";
constexpr const char* kCollNet =
    "CollNet (SHARP) needs a network plugin the simulated cluster does not have; CollNet "
    "algorithms are never chosen";
constexpr const char* kMnnvl =
    "multi-node NVLink setup; the simulator takes NVLink domains from the cluster preset";
constexpr const char* kRemoved =
    "removed from NCCL before the modelled version; the guide keeps it for older releases";

constexpr NcclVariable modelled(const char* name) {
  return {name};
}
constexpr NcclVariable text(const char* name, const char* why) {
  return {name, NcclValueKind::text, 0, 0, false, why};
}
constexpr NcclVariable flag(const char* name, const char* why) {
  return {name, NcclValueKind::flag, 0, 1, false, why};
}
constexpr NcclVariable integer(const char* name, long min, long max, const char* why) {
  return {name, NcclValueKind::integer, min, max, false, why};
}

// The guide's variables, in its order.
// Types and ranges from each variable's "Values accepted" paragraph: "positive" is read as
// >= 1, a size in bytes as >= 0 (a chunk as >= 1), a value documented only by a numeric
// default as an integer of any value. The IB service level (4 bits) and traffic class
// (8 bits) ranges are those of the InfiniBand fields.
constexpr NcclVariable kDocumented[] = {
    // System configuration
    text("NCCL_SOCKET_IFNAME", kDevices),
    text("NCCL_SOCKET_FAMILY", kSocket),
    text("NCCL_SOCKET_MAGIC", kSocket),  // decimal or 0x hex, strtoull(..., 0)
    integer("NCCL_SOCKET_RETRY_CNT", 1, kAny, kSocket),
    integer("NCCL_SOCKET_RETRY_SLEEP_MSEC", 1, kAny, kSocket),
    integer("NCCL_SOCKET_POLL_TIMEOUT_MSEC", 0, kAny, kSocket),
    integer("NCCL_SOCKET_NTHREADS", 1, 16, kSocket),
    integer("NCCL_NSOCKS_PERTHREAD", 1, 64, kSocket),  // threads x sockets <= 64
    integer("NCCL_CROSS_NIC", 0, 2, kDevices),
    text("NCCL_IB_HCA", kDevices),
    modelled("NCCL_IB_TIMEOUT"),
    modelled("NCCL_IB_RETRY_CNT"),
    integer("NCCL_IB_GID_INDEX", kAnyNegative, kAny, kIbDetail),
    text("NCCL_IB_ADDR_FAMILY", kIbDetail),
    text("NCCL_IB_ADDR_RANGE", kIbDetail),
    integer("NCCL_IB_ROCE_VERSION_NUM", kAnyNegative, kAny, kIbDetail),
    integer("NCCL_IB_SL", 0, 15, kIbDetail),
    integer("NCCL_IB_TC", 0, 255, kIbDetail),
    integer("NCCL_IB_FIFO_TC", 0, 255, kIbDetail),
    flag("NCCL_IB_RETURN_ASYNC_EVENTS", kIbDetail),
    flag("NCCL_OOB_NET_ENABLE", kInit),
    text("NCCL_OOB_NET_IFNAME", kInit),
    integer("NCCL_UID_STAGGER_THRESHOLD", 1, kAny, kInit),
    integer("NCCL_UID_STAGGER_RATE", 1, kAny, kInit),
    text("NCCL_NET", kPlugin),
    text("NCCL_NET_PLUGIN", kPlugin),
    text("NCCL_TUNER_PLUGIN", kPlugin),
    text("NCCL_PROFILER_PLUGIN", kPlugin),
    text("NCCL_ENV_PLUGIN", kPlugin),
    flag("NCCL_IGNORE_CPU_AFFINITY", kInit),
    text("NCCL_CONF_FILE", kPlugin),
    text("NCCL_DEBUG", kLogging),
    text("NCCL_DEBUG_FILE", kLogging),
    text("NCCL_DEBUG_SUBSYS", kLogging),
    text("NCCL_DEBUG_TIMESTAMP_FORMAT", kLogging),
    text("NCCL_DEBUG_TIMESTAMP_LEVELS", kLogging),
    flag("NCCL_COLLNET_ENABLE", kCollNet),
    integer("NCCL_COLLNET_NODE_THRESHOLD", kAnyNegative, kAny, kCollNet),
    text("NCCL_CTA_POLICY", kKernel),  // DEFAULT, EFFICIENCY, ZERO (or 0-2), joined by |
    text("NCCL_NETDEVS_POLICY", kDevices),
    flag("NCCL_MULTI_RANK_GPU_ENABLE", kInit),
    text("NCCL_TOPO_FILE", kDevices),
    text("NCCL_TOPO_DUMP_FILE", kLogging),
    flag("NCCL_SET_THREAD_NAME", kLogging),
    // Debugging
    flag("NCCL_P2P_DISABLE",
         "disabling the P2P transport this way is not modelled; NCCL_P2P_LEVEL=LOC has the "
         "same meaning and is"),
    modelled("NCCL_P2P_LEVEL"),
    flag("NCCL_P2P_DIRECT_DISABLE", kMemory),
    flag("NCCL_SHM_DISABLE",
         "the shared-memory transport is not modelled; traffic inside a node uses P2P"),
    modelled("NCCL_BUFFSIZE"),
    {"NCCL_NTHREADS", NcclValueKind::integer, 64, 512, true, kKernel},
    modelled("NCCL_MAX_NCHANNELS"),
    modelled("NCCL_MIN_NCHANNELS"),
    flag("NCCL_CHECKS_DISABLE", kChecks),
    flag("NCCL_CHECK_POINTERS", kChecks),
    text("NCCL_CHECK_MODE", kChecks),
    text("NCCL_LAUNCH_MODE", kLaunch),
    flag("NCCL_IB_DISABLE", "falling back to TCP sockets is not modelled"),
    integer("NCCL_IB_AR_THRESHOLD", 0, kAny, kIbDetail),
    flag("NCCL_IB_OOO_RQ", kIbDetail),
    integer("NCCL_IB_QPS_PER_CONNECTION", 1, 128, kIbDetail),
    flag("NCCL_IB_SPLIT_DATA_ON_QPS", kIbDetail),
    flag("NCCL_IB_CUDA_SUPPORT", kRemoved),
    integer("NCCL_IB_PCI_RELAXED_ORDERING", 0, 2, kIbDetail),
    flag("NCCL_IB_ADAPTIVE_ROUTING", kIbDetail),
    flag("NCCL_IB_ECE_ENABLE", kIbDetail),
    flag("NCCL_MEM_SYNC_DOMAIN", kKernel),
    flag("NCCL_CUMEM_ENABLE", kMemory),
    flag("NCCL_CUMEM_HOST_ENABLE", kMemory),
    modelled("NCCL_NET_GDR_LEVEL"),
    flag("NCCL_NET_GDR_C2C", "GPU Direct RDMA through a C2C-attached CPU is not modelled"),
    flag("NCCL_NET_GDR_READ",
         "the simulator decides GPU Direct RDMA by NCCL_NET_GDR_LEVEL alone; the send "
         "direction is not modelled apart"),
    flag("NCCL_NET_SHARED_BUFFERS", kMemory),
    flag("NCCL_NET_SHARED_COMMS", kIbDetail),
    flag("NCCL_IGNORE_NET_MISMATCH", kInit),
    flag("NCCL_IGNORE_COLLNET_MISMATCH", kInit),
    integer("NCCL_SINGLE_RING_THRESHOLD", 0, kAny, kRemoved),
    integer("NCCL_LL_THRESHOLD", 0, kAny, kRemoved),
    integer("NCCL_TREE_THRESHOLD", 0, kAny, kRemoved),
    modelled("NCCL_ALGO"),
    modelled("NCCL_PROTO"),
    flag("NCCL_NVB_DISABLE", kPxn),
    flag("NCCL_PXN_DISABLE", kPxn),
    integer("NCCL_P2P_PXN_LEVEL", 0, 2, kPxn),
    flag("NCCL_PXN_C2C", kPxn),
    flag("NCCL_RUNTIME_CONNECT", kInit),
    flag("NCCL_GRAPH_REGISTER", kMemory),
    flag("NCCL_LOCAL_REGISTER", kMemory),
    flag("NCCL_LEGACY_CUDA_REGISTER", kMemory),
    flag("NCCL_WIN_ENABLE", kMemory),
    flag("NCCL_SET_STACK_SIZE", kLaunch),
    flag("NCCL_GRAPH_MIXING_SUPPORT", kLaunch),
    flag("NCCL_GRAPH_STREAM_ORDERING", kLaunch),
    flag("NCCL_DMABUF_ENABLE", kMemory),
    integer("NCCL_P2P_NET_CHUNKSIZE", 1, kAny, kPointToPoint),
    integer("NCCL_P2P_LL_THRESHOLD", 0, kAny, kPointToPoint),
    flag("NCCL_ALLOC_P2P_NET_LL_BUFFERS", kPointToPoint),
    flag("NCCL_COMM_BLOCKING", kLaunch),
    integer("NCCL_CGA_CLUSTER_SIZE", 0, 8, kKernel),
    modelled("NCCL_MAX_CTAS"),
    modelled("NCCL_MIN_CTAS"),
    modelled("NCCL_NVLS_ENABLE"),
    flag("NCCL_IB_MERGE_NICS", kDevices),
    text("NCCL_NET_MERGE_POLICY", kDevices),
    integer("NCCL_MNNVL_ENABLE", 0, 2, kMnnvl),
    integer("NCCL_MNNVL_UUID", kAnyNegative, kAny, kMnnvl),
    integer("NCCL_MNNVL_CLIQUE_ID", kAnyNegative, kAny, kMnnvl),
    flag("NCCL_RAS_ENABLE", kInit),
    text("NCCL_RAS_ADDR", kInit),
    integer("NCCL_RAS_TIMEOUT_FACTOR", 1, kAny, kInit),
    flag("NCCL_LAUNCH_ORDER_IMPLICIT", kLaunch),
    flag("NCCL_LAUNCH_RACE_FATAL", kLaunch),
    flag("NCCL_IPC_USE_ABSTRACT_SOCKET", kInit),
    flag("NCCL_SYM_GIN_KERNELS_ENABLE", kKernel),
};

}  // namespace

std::span<const NcclVariable> documented_nccl_variables() {
  return kDocumented;
}

const NcclVariable* find_nccl_variable(const std::string& name) {
  const auto table = documented_nccl_variables();
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const NcclVariable& v) { return name == v.name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace clustersim
