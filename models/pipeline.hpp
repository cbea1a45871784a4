// Closed-form pipeline-parallel quantities: layers per stage, the pipeline bubble and how many
// micro-batches' activations a stage holds at once. These are the analytical estimates that
// `clustersim check` prints; the step simulator (sim/) measures the real bubble.
#pragma once

#include <cstdint>
#include <vector>

#include "core/scenario.hpp"

namespace clustersim::models {

// Transformer layers on each pipeline stage (parallelism.layers_per_stage, summed over a
// stage's chunks when given per virtual stage, or an even split).
std::vector<int> layers_per_stage(const clustersim::Scenario& scenario);
// Transformer layers of each virtual stage vs = chunk x pp + stage (Megatron-LM's interleaved
// assignment), pp x vpp of them: parallelism.layers_per_stage when it gives one entry per
// virtual stage, the stage's layers split evenly over its chunks, or, with the
// embedding and/or loss counted in the split, (layers + 1 or 2) / (pp x vpp) each and one less
// on the first and/or last virtual stage.
std::vector<int> layers_per_virtual_stage(const clustersim::Scenario& scenario);

// Whether the layer at `index_in_chunk` (0 = the first layer of its pipeline chunk) has its
// forward pass recomputed: never without full recomputation; with it, when the index is below
// training.recompute_layers (every layer when that is 0).
bool layer_recomputed(const clustersim::Scenario& scenario, int index_in_chunk);
// Transformer layers of pipeline stage `stage` whose forward pass is recomputed (over the
// stage's vpp chunks).
int recomputed_layers_on_stage(const clustersim::Scenario& scenario, int stage);
// The same summed over all stages.
int recomputed_layers(const clustersim::Scenario& scenario);

// Idle time of the pipeline bubble divided by the ideal (bubble-free) compute time of a step
// (Narayanan et al. SC'21 §2.2): (p - 1) / m for GPipe and 1F1B, (p - 1) / (v m) for the
// interleaved schedule with v model chunks per rank. ZB-H1 (Qi et al. 2024, "Zero Bubble
// Pipeline Parallelism", section 3.1): (p - 1)(T_F + T_B - T_W) / (m (T_F + T_B + T_W)) with the
// backward split into input-gradient B and weight-gradient W passes; with the paper's
// T_F = T_B = T_W, (p - 1) / (3 m), a third of 1F1B's. DualPipe (DeepSeek-V3 technical report
// table 2): (p/2 - 1)(F&B + B - 3W) with B the full backward and F&B a forward and a backward
// run as a pair; with T_F = T_B = T_W and F&B = F + B, (p - 2) / (3 m). 0 when pp == 1.
double bubble_over_ideal(int pp, int vpp, std::int64_t micro_batches,
                         clustersim::PipelineSchedule schedule);

// The same bubble as a fraction of the whole step: b / (1 + b).
double bubble_fraction_of_step(int pp, int vpp, std::int64_t micro_batches,
                               clustersim::PipelineSchedule schedule);

// Micro-batches whose activations stage `stage` (0 = first) holds at its peak, in units of one
// micro-batch through all of the stage's layers.
//   GPipe: all m micro-batches (Huang et al. 2019: every forward before any backward).
//   1F1B: p - stage warm-up/in-flight micro-batches (Narayanan et al. SC'21 §2.2.1), at most m.
//   Interleaved: Megatron-LM's warm-up count (p - stage - 1) * 2 + (v - 1) * p, plus the one in
//   its steady state, in model chunks of 1/v of the stage (schedules.py,
//   forward_backward_pipelining_with_interleaving), at most m v chunks. For stage 0 this is
//   p (1 + (p - 1) / (p v)), the factor of Korthikanti et al. 2022 §4.2.3.
//   ZB-H1: p on every stage, at most m (Qi et al. 2024 section 3.1: each stage defers as many
//   weight-gradient passes as 1F1B lets it hold fewer micro-batches, so that every stage holds
//   the first stage's p). Counted whole: a micro-batch waiting for its W pass keeps only the
//   linear layers' inputs and output gradients, so this is an upper bound for stages > 0.
//   DualPipe: p + 1 on every rank, at most m (DeepSeek-V3 technical report table 2), in units of
//   one micro-batch through one of the rank's two stages (estimate_memory weighs them: p - s of
//   stage s, s + 1 of stage p - 1 - s, as deepseek-ai/DualPipe's dualpipe.py runs them).
double micro_batches_in_flight(int stage, int pp, int vpp, std::int64_t micro_batches,
                               clustersim::PipelineSchedule schedule);

}  // namespace clustersim::models
