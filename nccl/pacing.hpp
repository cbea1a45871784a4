// How fast the patterns of a decomposition move data: NCCL's chunk (step) sizes, the chunk count
// and per-edge payload rate cap of every pattern, and the bulk flows (everything sent per
// endpoint pair) with the time they take. Rates are set so that an uncontended run of either
// granularity ends with the plan's bandwidth time. No SimGrid type.
#pragma once

#include "nccl/decomposition.hpp"
#include "nccl/endpoint_router.hpp"

namespace clustersim::nccl {

// Fills d.chunk_bytes_per_channel, d.channels_per_pattern, every pattern's step parameters,
// each sequential phase's share of the latency, d.bulk_flows and d.bulk_bw_time_s, from d.plan
// and d.phases. buffsize_bytes: NCCL_BUFFSIZE (Simple protocol).
void pace(Decomposition& d, double buffsize_bytes, const EndpointRouter& router);

}  // namespace clustersim::nccl
