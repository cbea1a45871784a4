// Pipeline schedules: the order in which one pipeline rank runs the forward and backward passes
// of its micro-batches, and which passes on other ranks each pass waits for.
//
// Virtual stages: the places in a micro-batch's chain of model chunks (StageChain below).
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
  int chunk = 0;        // 0 .. v-1 (model chunk on this rank; DualPipe: 0 or 1, the direction)
  // A backward that computes the input gradient only: its weight gradients are a later
  // weight_grad slot of the same micro-batch and chunk (every backward of ZB-H1, some of
  // DualPipe's).
  bool weight_deferred = false;
  // A forward run as a pair with the backward that follows it (DualPipe's overlapped
  // forward-backward chunks): both inputs are received before the pair, both outputs sent after.
  bool paired = false;
  friend bool operator==(const PassSlot&, const PassSlot&) = default;
};

// The chain of virtual stages a micro-batch passes through, and which pipeline rank holds each.
//   1F1B, GPipe, ZB-H1: virtual stage = pipeline rank, p of them.
//   Interleaved: chunk c of rank s holds virtual stage c p + s (Narayanan et al. 2021 section
//     2.2.2), p v of them in one chain.
//   DualPipe (DeepSeek-V3 technical report section 3.2.1): two chains of p virtual stages, one
//     per direction. Chunk 0 of rank s holds model stage s of the downward chain (virtual stage
//     s); chunk 1 holds model stage p - 1 - s of the upward chain (virtual stage 2p - 1 - s), so
//     that rank s keeps a copy of stages s and p - 1 - s and the upward chain runs from rank
//     p - 1 to rank 0. The first half of the micro-batches goes down, the second half up.
struct StageChain {
  int p = 1;
  int v = 1;
  bool dual = false;

  static StageChain of(PipelineSchedule schedule, int p, int v) {
    return {p, schedule == PipelineSchedule::dualpipe ? 1 : v,
            schedule == PipelineSchedule::dualpipe};
  }
  // Model chunks per rank.
  int chunks() const { return dual ? 2 : v; }
  int virtual_stages() const { return dual ? 2 * p : p * v; }
  // Distinct model stages (entries of models::layers_per_virtual_stage): p v, or p for DualPipe.
  int model_stages() const { return p * v; }
  int virtual_stage(int rank, int chunk) const {
    return dual && chunk == 1 ? 2 * p - 1 - rank : chunk * p + rank;
  }
  int rank_of(int vs) const { return dual && vs >= p ? 2 * p - 1 - vs : vs % p; }
  // The model stage (embedding at 0, output head at model_stages() - 1) a virtual stage runs.
  int model_stage(int vs) const { return dual ? vs % p : vs; }
  // Whether a virtual stage starts a chain (receives no activation) or ends one (sends none).
  bool chain_start(int vs) const { return model_stage(vs) == 0; }
  bool chain_end(int vs) const { return model_stage(vs) == model_stages() - 1; }
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
//     Every backward slot is the input gradient only (weight_deferred).
//   DualPipe (DeepSeek-V3 technical report section 3.2.1, figure 5; the eight steps of the
//     reference implementation, deepseek-ai/DualPipe dualpipe.py): with h = min(s, p - 1 - s)
//     and the chunks of the ranks in the second half swapped, (p/2 - h - 1) x 2 forwards of
//     chunk 0; (h + 1) x F0 F1; (p/2 - h - 1) x B1 W F1 with B1 split; (m/2 - p + h + 1) x
//     F0 B1 F1 B0 (two forward-backward pairs); (p/2 - h - 1) x B1 F1 B0 (F1 B0 a pair);
//     (h + 1) x B1 B0, the second half of them split; (p/2 - h - 1) x W B0 with B0 split; the
//     remaining (h + 1) W. Each chunk's passes run its micro-batches in order; W passes run
//     the deferred weight gradients first in, first out. Needs p and m even and m >= 2p.
// Throws std::invalid_argument when p, m or v < 1, stage is out of range, v > 1 without the
// interleaved schedule, interleaving with m % p != 0, or DualPipe's conditions do not hold.
std::vector<PassSlot> pipeline_order(PipelineSchedule schedule, int p, int stage, int m, int v);

// Whether the schedule splits some backwards into an input-gradient pass and a separate
// weight-gradient pass (PassKind::weight_grad), so that the split passes must be built.
inline bool splits_backward(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::zb_h1 || schedule == PipelineSchedule::dualpipe;
}

}  // namespace clustersim::workload
