// The step's work counted from its programs, extrapolated along the micro-batches when they are
// many, and its peak memory from the bytes per stored op, per pass, per gather, per GPU and per
// actor.
#include "step/work_estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "sim/platform.hpp"
#include "workload/workload.hpp"

namespace clustersim::step {

namespace {

// Ops of one replica class's programs.
struct OpCounts {
  double ops = 0;
  double stored_ops = 0;
  double passes = 0;
  double transfers = 0;
  double launches = 0;
  double gathers = 0;

  // a + (b - a) f, count by count.
  static OpCounts along(const OpCounts& a, const OpCounts& b, double f) {
    auto at = [f](double x, double y) { return x + (y - x) * f; };
    return {at(a.ops, b.ops),           at(a.stored_ops, b.stored_ops),
            at(a.passes, b.passes),     at(a.transfers, b.transfers),
            at(a.launches, b.launches), at(a.gathers, b.gathers)};
  }
};

OpCounts count_ops(const workload::Workload& w) {
  using workload::OpKind;
  OpCounts c;
  for (const auto& prog : w.stages) {
    c.ops += static_cast<double>(prog.ops.size());
    c.stored_ops += static_cast<double>(prog.ops.stored_ops());
    c.passes += static_cast<double>(prog.ops.passes());
    for (const auto& op : prog.ops) {
      c.transfers += op.kind == OpKind::send ? 1 : 0;
      c.launches += op.kind == OpKind::grad_ready || op.kind == OpKind::gather_issue;
      c.gathers += op.kind == OpKind::gather_issue ? 1 : 0;
    }
  }
  return c;
}

// The programs of `s` with `micro_batches` per step (the global batch rescaled).
OpCounts count_ops_at(const Scenario& s, const models::ComputeCostModel& compute, bool compressed,
                      std::int64_t micro_batches) {
  Scenario copy = s;
  copy.training.global_batch =
      micro_batches * std::int64_t(s.parallelism.dp) * s.training.micro_batch;
  return count_ops(workload::build_workload(copy, compute, {.compressed_phase = compressed}));
}

// Counts at the scenario's own micro-batch count m: built directly up to 4 pp, else built at
// m1 = 2 pp and m2 = 4 pp (multiples of pp as the interleaved schedule needs, even and at least
// 2 pp as DualPipe needs) and extrapolated: c(m) = c(m1) + (c(m2) - c(m1)) (m - m1) / (m2 - m1).
OpCounts count_step_ops(const Scenario& s, const StepCalibrations& calibrations, bool compressed) {
  const models::ComputeCostModel compute(s.cluster.gpu, calibrations.compute);
  const std::int64_t m = s.micro_batches();
  const std::int64_t m1 = 2 * std::int64_t(s.parallelism.pp);
  const std::int64_t m2 = 2 * m1;
  if (m <= m2) return count_ops_at(s, compute, compressed, m);
  const OpCounts a = count_ops_at(s, compute, compressed, m1);
  const OpCounts b = count_ops_at(s, compute, compressed, m2);
  return OpCounts::along(a, b, static_cast<double>(m - m1) / static_cast<double>(m2 - m1));
}

// Replica classes the replay will make (step/replica_classes.cpp): every replica in exact mode,
// else one shared class plus at most one per replica a slowed GPU or a lost node touches.
int replica_classes(const Scenario& s, const StepOptions& options) {
  const int dp = s.parallelism.dp;
  if (options.exact) return dp;
  const std::size_t touched =
      options.faults.slow_gpus.size() +
      options.faults.lost_nodes.size() * static_cast<std::size_t>(s.cluster.gpus_per_node);
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(dp), 1 + touched));
}

// "24.5 GiB", "110 MiB".
std::string size_text(double bytes) {
  char buf[32];
  if (bytes >= kGiB) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / kGiB);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f MiB", bytes / kMiB);
  }
  return buf;
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", x);
  return buf;
}

// The events and bytes of a trace that will be written (options.trace_ranks > 0): each
// class-stage's slices, written for every rank, or for each class's first replica when there are
// more ranks than trace_ranks.
void estimate_trace(const Scenario& s, const StepOptions& options, WorkEstimate& e) {
  if (options.trace_ranks <= 0) return;
  const double slices = kTraceSlicesPerOp * e.ops;
  const Parallelism& par = s.parallelism;
  const bool every_rank = s.gpus <= options.trace_ranks;
  const double ranks_written =
      every_rank ? s.gpus : static_cast<double>(e.replica_classes) * par.tp * par.cp * par.pp;
  const double slices_per_class_stage = slices / (e.stages * e.replica_classes);
  e.trace_events = ranks_written * slices_per_class_stage;
  e.trace_bytes = slices * kBytesPerTraceSlice + e.trace_events * kBytesPerTraceEvent;
}

void name_main_term(const Scenario& s, WorkEstimate& e) {
  const std::string per_step = " from " + std::to_string(s.micro_batches()) + " micro-batches";
  if (e.trace_bytes >= std::max({e.program_bytes, e.gpu_bytes, e.gather_bytes})) {
    e.main_term = sci(e.trace_events) + " trace events (--trace; --trace-ranks writes fewer ranks)";
    e.main_pointer = "/gpus";
  } else if (e.program_bytes >= std::max(e.gpu_bytes, e.gather_bytes)) {
    e.main_term = sci(e.passes) + " passes" + per_step + " x " + std::to_string(e.stages) +
                  (e.stages == 1 ? " stage" : " stages");
    e.main_pointer = "/training/global_batch";
  } else if (e.gather_bytes >= e.gpu_bytes) {
    e.main_term = sci(e.gathers) + " ZeRO parameter gathers" + per_step;
    e.main_pointer = "/training/global_batch";
  } else {
    e.main_term = std::to_string(e.gpus) + " GPUs";
    e.main_pointer = "/gpus";
  }
}

}  // namespace

WorkEstimate estimate_step_work(const Scenario& s, const StepCalibrations& calibrations,
                                const StepOptions& options) {
  const OpCounts c = count_step_ops(s, calibrations, options.compressed_phase);
  WorkEstimate e;
  e.micro_batches = static_cast<double>(s.micro_batches());
  e.stages = s.parallelism.pp;
  e.replica_classes = replica_classes(s, options);
  e.gpus = s.gpus;
  e.ops = c.ops * e.replica_classes;
  e.stored_ops = c.stored_ops;  // the programs are shared by the replica classes
  e.passes = c.passes;
  e.transfers = c.transfers * e.replica_classes;
  e.launches = c.launches;
  e.gathers = c.gathers;
  e.actors = e.stages * e.replica_classes;
  e.program_bytes = e.stored_ops * kBytesPerStoredOp + e.passes * kBytesPerPass;
  e.gpu_bytes = e.gpus * kBytesPerGpu;
  e.gather_bytes = e.gathers * kBytesPerGather;
  e.actor_bytes = e.actors * sim::EngineOptions{}.actor_stack_KiB * kKiB;
  estimate_trace(s, options, e);
  e.bytes = kStepBaseBytes + e.program_bytes + e.gather_bytes + e.gpu_bytes + e.actor_bytes +
            e.trace_bytes;
  name_main_term(s, e);
  return e;
}

std::string describe(const WorkEstimate& e) {
  return size_text(e.bytes) + " (main term: " + e.main_term + ")";
}

void enforce_work_budget(const Scenario& s, const WorkEstimate& e, const WorkBudget& budget) {
  if (!(budget.bytes > 0) || e.bytes <= budget.bytes) return;
  throw ConfigError(s.file, e.main_pointer,
                    "simulating this step is estimated to need " + describe(e) +
                        ", above the memory budget of " + size_text(budget.bytes) +
                        (budget.origin.empty() ? "" : " (" + budget.origin + ")") +
                        "; nothing was simulated");
}

}  // namespace clustersim::step
