#include "nccl/pacing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "nccl/fluid.hpp"
#include "nccl/patterns.hpp"

namespace clustersim::nccl {

namespace {

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

int ceil_div(double a, double b) {
  return std::max(1, static_cast<int>(std::ceil(a / b - 1e-9)));
}

double rate(double bytes, double t) {
  return t > 0 ? bytes / t : 0.0;
}

bool is_chain(RingKind kind) {
  return kind == RingKind::chain_forward || kind == RingKind::chain_reduce;
}

// NCCL's chunkSize for the plan's protocol and operation, bytes per channel.
double chunk_bytes(const CollectivePlan& p, double buffsize_bytes) {
  double chunk = buffsize_bytes / kNcclSteps * kRingChunkSteps;
  const bool chain_op = p.op == CollectiveOp::broadcast || p.op == CollectiveOp::reduce;
  if (p.protocol == NcclProto::simple && chain_op) {
    chunk = buffsize_bytes / kNcclSteps * kChainChunkSteps;
  }
  if (p.protocol == NcclProto::ll) chunk = kLLBuffsize / kNcclSteps * wire_efficiency(p.protocol);
  if (p.protocol == NcclProto::ll128) {
    chunk = kLL128Buffsize / kNcclSteps * wire_efficiency(p.protocol);
  }
  return chunk;
}

// Everything a collective sends per (src, dst), summed over patterns and phases.
class FlowSums {
 public:
  void add(int a, int b, double bytes) {
    if (a != b && bytes > 0) flows_[{a, b}] += bytes;
  }
  std::vector<BulkFlow> flows() const {
    std::vector<BulkFlow> out;
    out.reserve(flows_.size());
    for (const auto& [k, bytes] : flows_) out.push_back({k.first, k.second, bytes});
    return out;
  }

 private:
  std::map<std::pair<int, int>, double> flows_;
};

// Chunks and edge rate of a ring or chain; returns the chain's pipeline fill (1 for a ring).
// Each edge's payload rate is its bytes over the phase's bandwidth time, raised by the pipeline
// fill of the chunked steps ((chunks + depth - 1) / chunks: a chunk crosses `depth` edges one
// after the other), so that an uncontended step run also ends with NCCL's model time.
double pace_ring(RingPattern& rp, double bw_time_s, double chunk, FlowSums& sums) {
  const int k = static_cast<int>(rp.order.size());
  if (k < 2) return 1;
  const double per_edge = rp.kind == RingKind::all_reduce ? rp.payload * 2 * (k - 1) / k
                          : rp.kind == RingKind::reduce_scatter || rp.kind == RingKind::all_gather
                              ? rp.payload * (k - 1) / k
                              : rp.payload;
  const bool chain = is_chain(rp.kind);
  for (int i = 0; i < (chain ? k - 1 : k); ++i) {
    sums.add(rp.order[static_cast<std::size_t>(i)], rp.order[static_cast<std::size_t>((i + 1) % k)],
             per_edge);
  }
  rp.edge_rate_Bps = rate(per_edge, bw_time_s);
  if (!chain) {
    // NCCL's loop: nChannels * nRanks * chunkSize bytes per loop (all_reduce.h).
    rp.chunks = ceil_div(rp.payload, k * chunk);
    return 1;
  }
  rp.chunks = ceil_div(rp.payload, chunk);
  const double fill = static_cast<double>(rp.chunks + k - 2) / rp.chunks;
  rp.edge_rate_Bps *= fill;
  return fill;
}

// Tree Simple chunk shrinking (enqueue.cc) and the up+down pipeline fill.
void pace_tree(TreePattern& tp, double bw_time_s, double chunk, FlowSums& sums) {
  for (std::size_t v = 0; v < tp.nodes.size(); ++v) {
    const int pv = tp.parent[v];
    if (pv < 0) continue;
    sums.add(tp.nodes[v], tp.nodes[static_cast<std::size_t>(pv)], tp.payload);
    sums.add(tp.nodes[static_cast<std::size_t>(pv)], tp.nodes[v], tp.payload);
  }
  const int depth = std::max(1, tree_depth(tp.parent));
  double c = chunk;
  while (tp.payload / c < depth * kTreeChunksPerDepth && c / 2 >= kTreeMinChunkBytes) c /= 2;
  tp.chunks = ceil_div(tp.payload, c);
  tp.edge_rate_Bps = rate(tp.payload, bw_time_s) * (tp.chunks + 2 * depth - 1) / tp.chunks;
}

void pace_nvls(NvlsPattern& np, double bw_time_s, FlowSums& sums) {
  const double k = static_cast<double>(np.gpus.size());
  double up = np.payload, down = np.payload;
  // Per GPU: reduce-scatter sends its whole buffer through the switch's multimem loads and
  // gets its reduced shard back; all-gather stores its shard once and receives every shard.
  if (np.kind == NvlsKind::all_reduce) up = down = np.payload * (k + 1) / k;
  if (np.kind == NvlsKind::reduce_scatter) down = np.payload / k;
  if (np.kind == NvlsKind::all_gather) up = np.payload / k;
  for (int gpu : np.gpus) {
    sums.add(gpu, np.nvswitch, up);
    sums.add(np.nvswitch, gpu, down);
  }
  np.up_bytes = up;
  np.down_bytes = down;
  np.chunks = std::min(kNvlsMaxChunks, ceil_div(np.payload, kNvlsPipelineBytes));
  const double fill = static_cast<double>(np.chunks + 1) / np.chunks;
  np.up_rate_Bps = rate(up, bw_time_s) * fill;
  np.down_rate_Bps = rate(down, bw_time_s) * fill;
}

// A chain's chunks cross its k - 1 edges one after the other (store and forward): when the
// links, not NCCL's model, set the pace, the last chunk arrives after every hop's time for one
// chunk plus (chunks - 1) times the slowest hop. Returns the longest such pipeline, seconds.
double chain_pipeline_s(const Decomposition& d, const EndpointRouter& router) {
  const double eff = d.plan.wire_efficiency;
  double pipeline = 0;
  for (const Phase& ph : d.phases) {
    for (const RingPattern& rp : ph.rings) {
      const int k = static_cast<int>(rp.order.size());
      if (k < 2 || !is_chain(rp.kind)) continue;
      const double c = rp.payload / rp.chunks / eff;
      double sum = 0, slowest = 0;
      for (int i = 0; i + 1 < k; ++i) {
        const double b = std::min(
            router.graph().route_bandwidth_Bps(router.route(
                rp.order[static_cast<std::size_t>(i)], rp.order[static_cast<std::size_t>(i + 1)])),
            rp.edge_rate_Bps > 0 ? rp.edge_rate_Bps / eff
                                 : std::numeric_limits<double>::infinity());
        sum += c / b;
        slowest = std::max(slowest, c / b);
      }
      pipeline = std::max(pipeline, sum + (rp.chunks - 1) * slowest);
    }
  }
  return pipeline;
}

// The time the bulk flows take on idle links, shared max-min, with no rate caps.
double links_time_s(const Decomposition& d, const EndpointRouter& router) {
  std::vector<FluidFlow> ff;
  for (const auto& f : d.bulk_flows)
    ff.push_back({router.route(f.src, f.dst), f.payload / d.plan.wire_efficiency, 0});
  const auto& graph = router.graph();
  return fluid_makespan_s(ff, [&graph](int l) { return graph.link(l).bandwidth_Bps; });
}

}  // namespace

void pace(Decomposition& d, double buffsize_bytes, const EndpointRouter& router) {
  const CollectivePlan& p = d.plan;
  const double chunk = chunk_bytes(p, buffsize_bytes);
  d.chunk_bytes_per_channel = chunk;
  const int patterns = std::max<std::size_t>(
      1, d.phases.empty() ? 1
                          : std::max({d.phases.front().rings.size(), d.phases.front().trees.size(),
                                      std::size_t{1}}));
  d.channels_per_pattern = std::max(1, p.channels / patterns);
  const double pattern_chunk = chunk * d.channels_per_pattern;

  // Each phase pays its share of NCCL's latency once, at its start, in both granularities.
  double alpha_weight = 0;
  for (const Phase& ph : d.phases) alpha_weight += ph.bw_time_s;
  FlowSums sums;
  double bulk_time = 0;   // sum (sequential) or max (pipelined) of the phases' bandwidth times
  double chain_fill = 1;  // largest pipeline fill of a broadcast/reduce chain
  for (Phase& ph : d.phases) {
    if (ph.alpha_s <= 0 && !d.pipelined_phases) {
      ph.alpha_s = alpha_weight > 0 ? p.latency_s * ph.bw_time_s / alpha_weight
                                    : p.latency_s / static_cast<double>(d.phases.size());
    }
    for (RingPattern& rp : ph.rings) {
      chain_fill = std::max(chain_fill, pace_ring(rp, ph.bw_time_s, pattern_chunk, sums));
    }
    for (TreePattern& tp : ph.trees) pace_tree(tp, ph.bw_time_s, pattern_chunk, sums);
    for (NvlsPattern& np : ph.nvls) pace_nvls(np, ph.bw_time_s, sums);
    for (const DirectFlow& f : ph.direct) sums.add(f.src, f.dst, f.payload);
    bulk_time = d.pipelined_phases ? std::max(bulk_time, ph.bw_time_s) : bulk_time + ph.bw_time_s;
  }
  d.bulk_flows = sums.flows();
  d.bulk_bw_time_s = bulk_time;
  // Bulk flows have no chunks, so a collective with chains is paced to the longest chain
  // pipeline (or the links' shared time, if longer).
  if (chain_fill > 1 + 1e-9) {
    d.bulk_bw_time_s =
        std::max({d.bulk_bw_time_s, chain_pipeline_s(d, router), links_time_s(d, router)});
  }
}

}  // namespace clustersim::nccl
