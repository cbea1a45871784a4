// What simulating a step will create, and the memory it will take at its peak, estimated from
// the scenario before any engine exists, so that a step too large for the machine is refused in
// a fraction of a second instead of failing with std::bad_alloc after minutes.
//
// The programs' ops are counted, not guessed: the workload is built (workload/workload.hpp) at
// the scenario's own micro-batch count when it is small, else at two small counts, and the
// counts are extrapolated along the micro-batches (every count is affine in them: each
// micro-batch adds the same passes to a stage, the schedule only reorders them). What the
// replay keeps is not what it walks: a program stores each distinct pass once
// (workload/op_sequence.hpp), and pipeline messages, gradient reductions and collectives are
// dropped once done, so the memory grows with the passes and the ZeRO gathers, not with the
// ops. The bytes per stored op, per pass, per gather, per GPU and per actor are measured or
// counted constants (step/README.md#work-limits).
#pragma once

#include <string>

#include "core/scenario.hpp"
#include "step/prepare.hpp"
#include "step/simulate_step.hpp"

namespace clustersim::step {

// The terms of the estimate, each measured as peak resident set size (/usr/bin/time -v) of
// `clustersim run` on scenarios of different shapes (the table in step/README.md#work-limits).
// Peak memory of a step with nothing to speak of: the executable, SimGrid, the presets and
// calibrations read. Measured 43.1 MB on an 8-GPU Llama 3 8B step of 4 micro-batches (2,384
// ops); rounded up.
inline constexpr double kStepBaseBytes = 48e6;
// Per op stored (the ops of each distinct pass shape of each stage program, OpSequence), bytes:
// 64 (sizeof(workload::Op)) in a std::vector whose capacity libstdc++ doubles. Counted, not
// fitted: a program stores a few thousand ops at most.
inline constexpr double kBytesPerStoredOp = 128;
// Per pass of a stage program, bytes: 12 (OpSequence's record of its shape and micro-batches) in
// a vector whose capacity doubles, plus 16 (workload::PassSlot) for the schedule's order while
// its stage is built. Measured 12 B per pass (the seed's DP 64 x TP 8 x PP 2 layout, 10,000 ->
// 100,000 micro-batches); the bound is 40.
inline constexpr double kBytesPerPass = 40;
// Per simulated GPU, bytes: cluster graph, routes, placement, SimGrid hosts and links, and the
// flows of the data-parallel collectives in flight. The largest slope measured, 61 kB per GPU
// (the seed's pure data parallelism with ZeRO-3, 64 -> 1024 GPUs), rounded up; layouts with
// tensor or pipeline parallelism measured 15-35 kB per GPU, so the term overestimates them.
inline constexpr double kBytesPerGpu = 64e3;
// Per ZeRO parameter gather launched, bytes: its instance on the gather stream, kept until the
// step ends (a gather may be issued again for the same pass; gradient reductions, which are
// not, are dropped once every class-stage passed them). Measured 314 B on the seed's ZeRO-3
// pure data parallelism, DP 64, 16 -> 64 micro-batches (7,872 more gathers); rounded up.
inline constexpr double kBytesPerGather = 400;

// A trace (`run --trace`): the slices the replay records per class-stage, per op it walks. Measured
// 0.88 on the seed's DP 64 x TP 8 x PP 2 layout, the most of the shipped scenarios (0.15 on its
// ZeRO-3 pure data parallelism, 0.12 on DeepSeek-V3); rounded up.
inline constexpr double kTraceSlicesPerOp = 1.0;
// Per slice recorded, bytes: step::TraceSlice with its name and args (a JSON object), and the
// slice's event text serialised once for every rank it is written for. Measured 555 B on the
// seed layout with 160 micro-batches (209 thousand slices, one rank per class-stage written:
// 391 MB more than without the trace, of which 276 MB text); rounded up.
inline constexpr double kBytesPerTraceSlice = 768;
// Per event written, bytes: the trace's text, held whole until it is written atomically. Measured
// 166 B per event on the seed layout (10.9 million events, 1.80 GB, peak resident 1.83 GB) with
// --trace-ranks 1024; rounded up.
inline constexpr double kBytesPerTraceEvent = 192;

// What simulating one step of a scenario creates.
struct WorkEstimate {
  double micro_batches = 0;  // per step
  int stages = 0;            // pipeline ranks, each with its program
  int replica_classes = 1;   // data-parallel replicas simulated apart (faults, exact mode)
  int gpus = 0;
  double ops = 0;            // program ops the replay walks: sum over stages, times replica classes
  double stored_ops = 0;     // program ops kept in memory (distinct pass shapes), sum over stages
  double passes = 0;         // passes of the programs, sum over stages
  double transfers = 0;      // pipeline messages (sends), times replica classes
  double launches = 0;       // data-parallel reductions and ZeRO gathers launched
  double gathers = 0;        // of which ZeRO gathers
  int actors = 0;            // SimGrid actors of the class-stages
  double bytes = 0;          // estimated peak resident memory of the simulating process
  double program_bytes = 0;  // the terms of `bytes`: stored ops and passes
  double gather_bytes = 0;
  double gpu_bytes = 0;
  double actor_bytes = 0;
  double trace_events = 0;  // events a requested trace writes (0 without one)
  double trace_bytes = 0;   // its recorded slices and its text
  // The largest variable term in words, e.g. "4e+10 passes from 10000000000 micro-batches x 2
  // stages", and the JSON pointer of the scenario key that drives it.
  std::string main_term;
  std::string main_pointer;
};

// Counts the step's work and estimates its peak memory. `options`: its faults and exact mode
// (replica classes). Preconditions: `scenario` passed validation; calibrations as for
// prepare_step. Cost: at most two workload builds of at most 4 x pp micro-batches.
WorkEstimate estimate_step_work(const Scenario& scenario, const StepCalibrations& calibrations,
                                const StepOptions& options = {});

// Throws ConfigError (file: the scenario's; pointer: the main term's key) when `estimate.bytes`
// exceeds `budget.bytes` (> 0), naming the estimate, its main term, the budget, where the budget
// came from and how to raise it (`budget.origin`). No-op when budget.bytes is 0.
void enforce_work_budget(const Scenario& scenario, const WorkEstimate& estimate,
                         const WorkBudget& budget);

// "12.3 GiB (main term: 4e+10 passes from 10000000000 micro-batches x 2 stages)" for messages
// and `check`.
std::string describe(const WorkEstimate& estimate);

}  // namespace clustersim::step
