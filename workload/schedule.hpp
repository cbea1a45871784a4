// Pipeline schedules: the order in which one pipeline rank runs the forward and backward passes
// of its micro-batches, and which passes on other ranks each pass waits for.
//
// Virtual stages: with vpp = v model chunks per rank (interleaved schedule), chunk c of pipeline
// rank s holds virtual stage c * p + s (Narayanan et al. 2021, "Efficient Large-Scale Language
// Model Training on GPU Clusters Using Megatron-LM", section 2.2.2). With v = 1 the virtual stage
// is the pipeline rank.
#pragma once

#include <vector>

#include "core/scenario.hpp"

namespace clustersim::workload {

enum class PassKind : unsigned char { forward, backward };
const char* to_string(PassKind k);

// One pass of one micro-batch through one model chunk of a pipeline rank.
struct PassSlot {
  PassKind kind = PassKind::forward;
  int micro_batch = 0;  // 0 .. m-1
  int chunk = 0;        // 0 .. v-1 (model chunk on this rank)
  friend bool operator==(const PassSlot&, const PassSlot&) = default;
};

// The passes pipeline rank `stage` (0 .. p-1) runs in order, m micro-batches, v chunks.
//   GPipe (Huang et al. 2019): all m forwards, then all m backwards.
//   1F1B (PipeDream-Flush, Narayanan et al. 2021 section 2.2.1): min(p - s - 1, m) warm-up
//     forwards, then alternating one forward / one backward, then the remaining backwards.
//   Interleaved 1F1B (Narayanan et al. 2021 section 2.2.2, Megatron-LM
//     forward_backward_pipelining_with_interleaving): (p - s - 1) * 2 + (v - 1) * p warm-up
//     forwards (all m * v when m == p), chunk of virtual micro-batch k = (k mod (p v)) / p
//     (reversed for backward), micro-batch = (k / (p v)) * p + k mod p. Needs m % p == 0.
// Throws std::invalid_argument when p, m or v < 1, stage is out of range, v > 1 without the
// interleaved schedule, or interleaving with m % p != 0.
std::vector<PassSlot> pipeline_order(PipelineSchedule schedule, int p, int stage, int m, int v);

// The virtual stage a chunk of a pipeline rank holds: chunk * p + stage.
inline int virtual_stage(int p, int stage, int chunk) {
  return chunk * p + stage;
}

}  // namespace clustersim::workload
