#include "step/phase_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/errors.hpp"

namespace clustersim::step {

namespace {

// "0.5", "12.25": a number as a person writes it.
std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// The step ends with the last class-stage (or at the hang's detection); each class-stage's
// breakdown, the critical one's as the step's.
void critical_path(StepReport& r, const PreparedStep& p, Replay& run) {
  auto& css = run.class_stages();
  double step = 0;
  int crit = 0;
  for (std::size_t i = 0; i < css.size(); ++i) {
    if (css[i].end_s > step) {
      step = css[i].end_s;
      crit = static_cast<int>(i);
    }
  }
  r.hang = run.hang();
  r.completed = !r.hang.has_value();
  if (!r.completed) step = r.hang->detected_s;
  if (!(std::isfinite(step) && step > 0)) {
    const Scenario& s = *p.scenario;
    throw InternalError("scenario " + s.name + " (" + s.file + "): the simulated step took " +
                        std::to_string(step) + " s; a step has work and takes a finite time");
  }
  if (r.completed && run.messages_in_flight() > 0) {
    throw InternalError("scenario " + p.scenario->name + ": the step ended with " +
                        std::to_string(run.messages_in_flight()) +
                        " pipeline messages sent and never received");
  }
  r.step_time_s = step;
  for (auto& c : css) {
    if (c.finished) c.b.idle_s = std::max(0.0, step - c.end_s);
    RankClassReport rc;
    rc.replica_class = c.cls;
    rc.stage = c.stage;
    rc.replicas = run.classes()[static_cast<std::size_t>(c.cls)].replicas;
    rc.ranks = static_cast<int>(rc.replicas.size()) * p.workload.tp * p.workload.cp;
    rc.end_s = c.end_s;
    rc.slowest_speed = run.classes()[static_cast<std::size_t>(c.cls)]
                           .slowest_speed[static_cast<std::size_t>(c.stage)];
    rc.breakdown = c.b;
    r.ranks.push_back(std::move(rc));
  }
  r.critical_class = css[static_cast<std::size_t>(crit)].cls;
  r.critical_stage = css[static_cast<std::size_t>(crit)].stage;
  r.breakdown = css[static_cast<std::size_t>(crit)].b;
}

// FLOPs and utilisation (both conventions; `mfu`/`hfu` in the chosen one).
void utilisation(StepReport& r, const PreparedStep& p, const StepOptions& opt) {
  const Scenario& s = *p.scenario;
  const auto& meg = p.flops_megatron;
  const auto& palm = p.flops_palm;
  const auto& chosen = opt.convention == models::FlopConvention::megatron ? meg : palm;
  r.flop_convention = models::to_string(opt.convention);
  r.peak_flops_per_gpu = s.cluster.gpu.peak(s.training.precision);
  r.model_flops_per_step = chosen.model();
  r.hardware_flops_per_step = chosen.hardware();
  const double step = r.step_time_s;
  const double denom = step * s.gpus * r.peak_flops_per_gpu;
  if (r.completed && step > 0) {
    r.tokens_per_s = s.tokens_per_step() / step;
    r.mfu = chosen.model() / denom;
    r.hfu = chosen.hardware() / denom;
    r.mfu_megatron = meg.model() / denom;
    r.mfu_palm = palm.model() / denom;
    r.comm_fraction = r.breakdown.comm() / step;
    r.bubble_fraction = r.breakdown.bubble_s / step;
  }
}

// The bytes of the rails shortcut 4 left out: the simulated rail carries pipeline and gradient
// traffic, the next rail the same pipeline traffic only, so their difference is the gradient
// traffic each left-out rail would have carried. With shortcut 5 the next rail carries nothing
// and each left-out rail would have carried all the first one does.
std::array<double, topologies::kNumLinkClasses> left_out_rails(const sim::LinkUsageReport& usage,
                                                               const Replay& run,
                                                               const topologies::ClusterGraph& g) {
  std::array<double, topologies::kNumLinkClasses> rail_extra{};
  const auto& rails = run.symmetric_rails();
  if (rails.size() < 2) return rail_extra;
  std::array<double, topologies::kNumLinkClasses> on_first{}, on_second{};
  for (const auto& lu : usage.links) {
    const auto& link = g.link(lu.link);
    const auto& a = g.vertex(link.a);
    const int rail = a.kind == topologies::VertexKind::gpu ? a.local : a.rail;
    const auto k = static_cast<std::size_t>(lu.cls);
    if (rail == rails[0]) on_first[k] += lu.bytes_up + lu.bytes_down;
    if (rail == rails[1] && !run.pipeline_on_one_rail()) {
      on_second[k] += lu.bytes_up + lu.bytes_down;
    }
  }
  for (std::size_t k = 0; k < rail_extra.size(); ++k) {
    rail_extra[k] =
        static_cast<double>(rails.size() - 1) * std::max(0.0, on_first[k] - on_second[k]);
  }
  return rail_extra;
}

// Links: simulated flows, plus the NVLink bytes of TP collectives costed once, plus the bytes
// of the replicas and rails the shortcuts left out.
void links(StepReport& r, const StepOptions& opt, const Replay& run, const sim::Simulation& sim) {
  const sim::LinkUsageReport usage = sim.link_usage();
  const auto rail_extra = left_out_rails(usage, run, sim.graph());
  for (const auto& c : usage.classes) {
    LinkClassReport lc;
    lc.link_class = topologies::to_string(c.cls);
    lc.links = c.links;
    lc.bytes = c.bytes;
    lc.peak_link_utilisation = c.peak_link_utilisation;
    lc.peak_link = c.peak_link;
    if (c.cls == topologies::LinkClass::nvlink && !opt.exact) lc.bytes += run.tp_nvlink_bytes();
    lc.bytes += run.unsimulated_bytes(c.cls) + rail_extra[static_cast<std::size_t>(c.cls)];
    lc.utilisation =
        c.capacity_Bps > 0 && r.step_time_s > 0 ? lc.bytes / (c.capacity_Bps * r.step_time_s) : 0;
    r.links.push_back(std::move(lc));
  }
  const sim::Simulation::Totals totals = sim.totals();
  r.collectives = totals.collectives;
  r.flows = totals.flows;
  if (totals.analytic > 0) {
    r.notes.push_back(std::to_string(totals.analytic) + " of the " +
                      std::to_string(totals.collectives) +
                      " collectives and transfers ran while no flow was posted to SimGrid: "
                      "timed by the same max-min sharing, computed by the engine "
                      "(sim/README.md)");
  }
}

// The slowest GPU and the worst link of the faults, in words.
void faults_named(StepReport& r, const PreparedStep& p, const StepFaults& faults) {
  const Scenario& s = *p.scenario;
  if (!faults.slow_gpus.empty()) {
    const auto* worst = &faults.slow_gpus.front();
    for (const auto& g : faults.slow_gpus) {
      if (g.speed_factor < worst->speed_factor) worst = &g;
    }
    const int gpu = p.placement.gpu_of_rank[static_cast<std::size_t>(worst->rank)];
    r.slowest_rank = "rank " + std::to_string(worst->rank) + " (node " +
                     std::to_string(gpu / s.cluster.gpus_per_node) + ", GPU " +
                     std::to_string(gpu % s.cluster.gpus_per_node) + ") at " +
                     num(worst->speed_factor) + "x speed from " + num(worst->from_s) + " s" +
                     (worst->cause.empty() ? "" : " (" + worst->cause + ")");
  }
  if (!faults.links.empty()) {
    const auto* worst = &faults.links.front();
    for (const auto& l : faults.links) {
      const double f = l.down ? 0 : l.bandwidth_factor;
      const double wf = worst->down ? 0 : worst->bandwidth_factor;
      if (f < wf) worst = &l;
    }
    r.slowest_link =
        worst->link +
        (worst->down ? " down" : " at " + num(worst->bandwidth_factor) + "x bandwidth");
  }
}

// Share of the step lost to NCCL's SMs above which a scenario that raised NCCL's channel count
// is told so: a threshold for showing a note, not a modelled quantity.
constexpr double kNcclSmNoteShare = 0.05;

// NCCL_MIN_NCHANNELS (or NCCL_MIN_CTAS) raises the channels of every call, and a channel holds
// an SM for as long as its call runs beside compute (docs/sm-contention.md).
void nccl_sm_note(StepReport& r, const Scenario& s) {
  const NcclSettings& n = s.comm.nccl;
  if (n.min_channels == 0 || r.step_time_s <= 0) return;
  const double share = r.breakdown.nccl_sm_s / r.step_time_s;
  if (share < kNcclSmNoteShare) return;
  const char* name = n.given.count("NCCL_MIN_NCHANNELS") ? "NCCL_MIN_NCHANNELS" : "NCCL_MIN_CTAS";
  r.notes.push_back(std::string(name) + " raises every NCCL call to at least " +
                    std::to_string(n.min_channels) +
                    " channels, each holding an SM while the call overlaps compute: the "
                    "critical path lost " +
                    num(r.breakdown.nccl_sm_s) + " s of compute (" + num(100 * share) +
                    "% of the step) to them; run without it to compare (docs/sm-contention.md)");
}

// Megatron-Core MoE runs whose local experts' GEMMs are launched one by one, eagerly, went
// slower than simulated in every published case, before the host time per kernel was fitted by
// 19-58 %, after it (in-sample) by 0-30 % (docs/system-calibration.md, "The host time per
// kernel, fitted").
void moe_note(StepReport& r, const Scenario& s) {
  if (!s.model.moe || s.training.moe_expert_gemm != MoeExpertGemm::per_expert ||
      s.training.cuda_graphs != CudaGraphs::none)
    return;
  r.notes.push_back(
      "mixture-of-experts layers with each local expert's GEMMs launched on their own: the "
      "published Megatron-Core runs of this kind (Qwen3-30B-A3B and DeepSeek-V3: Megatron-Bridge "
      "25.11, Megatron-Core's GB200 guide) went up to 30 % slower than simulated with the "
      "fitted host time per kernel "
      "(docs/system-calibration.md#the-host-time-per-kernel-fitted, "
      "docs/moe.md#deepseek-v3-on-256-b200-a-validation-case); "
      "read this throughput as an upper bound");
}

// What the shortcuts and options did, for the reader of the report.
void notes(StepReport& r, const PreparedStep& p, const StepOptions& opt, const Replay& run) {
  const Scenario& s = *p.scenario;
  nccl_sm_note(r, s);
  moe_note(r, s);
  if (!opt.exact) {
    r.notes.push_back(
        "tensor/context-parallel collectives costed once on an idle node and reused "
        "(their NVLink bytes are added to the nvlink utilisation)");
    if (run.symmetric_rails().size() > 1) {
      r.notes.push_back("the " + std::to_string(run.symmetric_rails().size()) +
                        " tensor-parallel ranks' data-parallel groups" +
                        (run.pipeline_on_one_rail() ? " and pipeline transfers" : "") +
                        " run on separate rails: the first is simulated, the others' bytes are "
                        "added to the link statistics");
    }
    if (run.classes().size() < static_cast<std::size_t>(p.workload.dp)) {
      r.notes.push_back(std::string("data-parallel replicas without faults share one pipeline "
                                    "timeline; their gradient traffic is simulated in full, ") +
                        (opt.pp_all_replicas ? "and so is their pipeline traffic"
                                             : "their pipeline traffic by the first replica's"));
    }
  }
  if (opt.free_communication) r.notes.push_back("free communication: every transfer takes no time");
  if (!opt.exact && s.parallelism.tp * s.parallelism.cp > s.cluster.gpus_per_node) {
    r.notes.push_back(
        "tensor/context-parallel groups span nodes: their collectives are costed "
        "without the network traffic they would meet");
  }
}

}  // namespace

StepReport report_phase(const PreparedStep& p, const StepOptions& opt, Replay& run,
                        const sim::Simulation& sim) {
  StepReport r;
  r.scenario = p.scenario->name;
  r.gpus = p.scenario->gpus;
  r.notes = p.workload.notes;
  critical_path(r, p, run);
  utilisation(r, p, opt);
  links(r, opt, run, sim);
  faults_named(r, p, opt.faults);
  if (opt.record_trace) r.trace = std::move(run.trace());
  notes(r, p, opt, run);
  r.memory_per_gpu_bytes = p.memory.peak_bytes();
  r.memory_usable_bytes = p.memory.usable_bytes();
  r.memory_physical_bytes = p.memory.physical_bytes();
  r.fits_in_memory = p.memory.fits();
  return r;
}

}  // namespace clustersim::step
