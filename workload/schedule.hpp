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

// A layer's backward is one pass, or, in the zero-bubble schedules (Qi et al. 2024, "Zero Bubble
// Pipeline Parallelism", section 2), two: `backward` then computes only the input gradient (B),
// which the previous stage waits for, and `weight_grad` (W) the weight gradients, which only the
// data-parallel reduction and the optimizer wait for.
enum class PassKind : unsigned char { forward, backward, weight_grad };
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
//   ZB-H1 (Qi et al. 2024 section 3.1, figure 3): 1F1B's forwards and input-gradient passes B,
//     with the weight-gradient passes W split off: in the steady state stage s runs W of its
//     i-th micro-batch only after the B of its (i + s)-th, so that it holds p micro-batches
//     like the first stage does under 1F1B; in the cool-down each B is followed by the oldest
//     pending W, and the remaining Ws end the step. Step time with uniform stages and m >= p:
//     m (T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W) while T_W <= T_F.
//   Splits the backward (split_backward): each backward slot is the input gradient only.
// Throws std::invalid_argument when p, m or v < 1, stage is out of range, v > 1 without the
// interleaved schedule, or interleaving with m % p != 0.
std::vector<PassSlot> pipeline_order(PipelineSchedule schedule, int p, int stage, int m, int v);

// Whether the schedule runs each backward as an input-gradient pass and a separate
// weight-gradient pass (PassKind::weight_grad).
inline bool split_backward(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::zb_h1;
}

// The virtual stage a chunk of a pipeline rank holds: chunk * p + stage.
inline int virtual_stage(int p, int stage, int chunk) {
  return chunk * p + stage;
}

}  // namespace clustersim::workload
