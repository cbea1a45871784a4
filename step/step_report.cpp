#include "step/step_report.hpp"

#include <algorithm>
#include <cmath>

#include "topologies/placement.hpp"

namespace clustersim::step {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMicrosecondsPerSecond = 1e6;

nlohmann::json breakdown_json(const TimeBreakdown& b) {
  return {{"compute_s", b.compute_s},
          {"tp_s", b.tp_s},
          {"ep_s", b.ep_s},
          {"pp_s", b.pp_s},
          {"dp_s", b.dp_s},
          {"bubble_s", b.bubble_s},
          {"optimizer_s", b.optimizer_s},
          {"idle_s", b.idle_s},
          {"nccl_sm_s", b.nccl_sm_s},
          {"host_s", b.host_s},
          {"kernels", b.kernels}};
}

TimeBreakdown breakdown_from(const nlohmann::json& j) {
  TimeBreakdown b;
  b.compute_s = j.at("compute_s").get<double>();
  b.tp_s = j.at("tp_s").get<double>();
  b.ep_s = j.value("ep_s", 0.0);  // absent in reports of dense-only versions
  b.pp_s = j.at("pp_s").get<double>();
  b.dp_s = j.at("dp_s").get<double>();
  b.bubble_s = j.at("bubble_s").get<double>();
  b.optimizer_s = j.at("optimizer_s").get<double>();
  b.idle_s = j.at("idle_s").get<double>();
  b.nccl_sm_s = j.value("nccl_sm_s", 0.0);  // absent in reports before NCCL took SMs
  b.host_s = j.value("host_s", 0.0);        // absent in reports before the host's time was kept
  b.kernels = j.value("kernels", 0.0);      // absent in reports before kernels were counted
  return b;
}

// JSON has no NaN or infinity; clamp to something a reader can parse.
double finite(double x) {
  return std::isfinite(x) ? x : 0.0;
}

}  // namespace

nlohmann::json to_json(const StepReport& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["gpus"] = r.gpus;
  j["completed"] = r.completed;
  j["step_time_s"] = finite(r.step_time_s);
  j["tokens_per_s"] = finite(r.tokens_per_s);
  j["flop_convention"] = r.flop_convention;
  j["mfu"] = finite(r.mfu);
  j["hfu"] = finite(r.hfu);
  j["mfu_megatron"] = finite(r.mfu_megatron);
  j["mfu_palm"] = finite(r.mfu_palm);
  j["peak_tflops_per_gpu"] = r.peak_flops_per_gpu / 1e12;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["hardware_flops_per_step"] = r.hardware_flops_per_step;
  j["comm_fraction"] = finite(r.comm_fraction);
  j["bubble_fraction"] = finite(r.bubble_fraction);
  j["breakdown"] = breakdown_json(r.breakdown);
  j["critical"] = {{"replica_class", r.critical_class}, {"stage", r.critical_stage}};
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& c : r.ranks) {
    ranks.push_back({{"replica_class", c.replica_class},
                     {"stage", c.stage},
                     {"ranks", c.ranks},
                     {"replicas", c.replicas},
                     {"end_s", c.end_s},
                     {"slowest_speed", c.slowest_speed},
                     {"breakdown", breakdown_json(c.breakdown)}});
  }
  j["ranks"] = ranks;
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : r.links) {
    links.push_back({{"link_class", l.link_class},
                     {"links", l.links},
                     {"bytes", l.bytes},
                     {"utilisation", finite(l.utilisation)},
                     {"peak_link_utilisation", finite(l.peak_link_utilisation)},
                     {"peak_link", l.peak_link}});
  }
  j["links"] = links;
  j["memory_per_gpu_GiB"] = r.memory_per_gpu_bytes / kGiB;
  j["memory_usable_GiB"] = r.memory_usable_bytes / kGiB;
  j["memory_physical_GiB"] = r.memory_physical_bytes / kGiB;
  j["fits_in_memory"] = r.fits_in_memory;
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) {
    phases.push_back({{"name", p.name},
                      {"fraction_of_run", p.fraction_of_run},
                      {"step_time_s", finite(p.step_time_s)},
                      {"mfu", finite(p.mfu)},
                      {"completed", p.completed}});
  }
  j["phases"] = phases;
  if (r.hang) {
    j["hang"] = {
        {"cause", r.hang->cause},           {"link", r.hang->link},   {"node", r.hang->node},
        {"collective", r.hang->collective}, {"stage", r.hang->stage}, {"start_s", r.hang->start_s},
        {"detected_s", r.hang->detected_s}};
  } else {
    j["hang"] = nullptr;
  }
  j["slowest_rank"] = r.slowest_rank;
  j["slowest_link"] = r.slowest_link;
  j["wall_time_s"] = r.wall_time_s;
  j["flows"] = r.flows;
  j["collectives"] = r.collectives;
  j["notes"] = r.notes;
  return j;
}

StepReport step_report_from_json(const nlohmann::json& j) {
  StepReport r;
  r.scenario = j.at("scenario").get<std::string>();
  r.gpus = j.at("gpus").get<int>();
  r.completed = j.at("completed").get<bool>();
  r.step_time_s = j.at("step_time_s").get<double>();
  r.tokens_per_s = j.at("tokens_per_s").get<double>();
  r.flop_convention = j.at("flop_convention").get<std::string>();
  r.mfu = j.at("mfu").get<double>();
  r.hfu = j.at("hfu").get<double>();
  r.mfu_megatron = j.at("mfu_megatron").get<double>();
  r.mfu_palm = j.at("mfu_palm").get<double>();
  r.peak_flops_per_gpu = j.at("peak_tflops_per_gpu").get<double>() * 1e12;
  r.model_flops_per_step = j.at("model_flops_per_step").get<double>();
  r.hardware_flops_per_step = j.at("hardware_flops_per_step").get<double>();
  r.comm_fraction = j.at("comm_fraction").get<double>();
  r.bubble_fraction = j.at("bubble_fraction").get<double>();
  r.breakdown = breakdown_from(j.at("breakdown"));
  r.critical_class = j.at("critical").at("replica_class").get<int>();
  r.critical_stage = j.at("critical").at("stage").get<int>();
  for (const auto& c : j.at("ranks")) {
    RankClassReport rc;
    rc.replica_class = c.at("replica_class").get<int>();
    rc.stage = c.at("stage").get<int>();
    rc.ranks = c.at("ranks").get<int>();
    rc.replicas = c.at("replicas").get<std::vector<int>>();
    rc.end_s = c.at("end_s").get<double>();
    rc.slowest_speed = c.at("slowest_speed").get<double>();
    rc.breakdown = breakdown_from(c.at("breakdown"));
    r.ranks.push_back(std::move(rc));
  }
  for (const auto& l : j.at("links")) {
    LinkClassReport lc;
    lc.link_class = l.at("link_class").get<std::string>();
    lc.links = l.at("links").get<int>();
    lc.bytes = l.at("bytes").get<double>();
    lc.utilisation = l.at("utilisation").get<double>();
    lc.peak_link_utilisation = l.at("peak_link_utilisation").get<double>();
    lc.peak_link = l.at("peak_link").get<std::string>();
    r.links.push_back(std::move(lc));
  }
  r.memory_per_gpu_bytes = j.at("memory_per_gpu_GiB").get<double>() * kGiB;
  r.memory_usable_bytes = j.at("memory_usable_GiB").get<double>() * kGiB;
  r.memory_physical_bytes = j.at("memory_physical_GiB").get<double>() * kGiB;
  r.fits_in_memory = j.at("fits_in_memory").get<bool>();
  for (const auto& p : j.at("phases")) {
    PhaseReport ph;
    ph.name = p.at("name").get<std::string>();
    ph.fraction_of_run = p.at("fraction_of_run").get<double>();
    ph.step_time_s = p.at("step_time_s").get<double>();
    ph.mfu = p.at("mfu").get<double>();
    ph.completed = p.at("completed").get<bool>();
    r.phases.push_back(std::move(ph));
  }
  if (!j.at("hang").is_null()) {
    const auto& h = j.at("hang");
    HangReport hr;
    hr.cause = h.at("cause").get<std::string>();
    hr.link = h.at("link").get<std::string>();
    hr.node = h.at("node").get<int>();
    hr.collective = h.at("collective").get<std::string>();
    hr.stage = h.at("stage").get<int>();
    hr.start_s = h.at("start_s").get<double>();
    hr.detected_s = h.at("detected_s").get<double>();
    r.hang = hr;
  }
  r.slowest_rank = j.at("slowest_rank").get<std::string>();
  r.slowest_link = j.at("slowest_link").get<std::string>();
  r.wall_time_s = j.at("wall_time_s").get<double>();
  r.flows = j.at("flows").get<long long>();
  r.collectives = j.at("collectives").get<long long>();
  r.notes = j.at("notes").get<std::vector<std::string>>();
  return r;
}

namespace {

// A slice as the part of its trace event that is the same on every rank it is written for:
// `,"args":...,"cat":...,"dur":...,"name":...,"ts":...}`. Serialised once per slice, not once per
// rank: a 1024-rank trace writes each class-stage's slices hundreds of times.
std::string slice_event_tail(const TraceSlice& s) {
  nlohmann::json e = {{"name", s.name},
                      {"cat", s.category},
                      {"ts", s.start_s * kMicrosecondsPerSecond},
                      {"dur", std::max(0.0, s.end_s - s.start_s) * kMicrosecondsPerSecond}};
  if (s.args.is_object()) e["args"] = s.args;
  std::string text = e.dump();
  text[0] = ',';
  return text;
}

}  // namespace

// An upper bound on the text of one event's head (`,\n{"ph":"X","pid":N,"tid":N`) and of a
// rank's three metadata events, bytes: the reserve for the trace's text.
constexpr std::size_t kEventHeadBytes = 48;
constexpr std::size_t kMetadataBytesPerRank = 320;

std::string chrome_trace_json(const StepReport& report, const Scenario& scenario, int max_ranks) {
  const Parallelism& par = scenario.parallelism;
  const topologies::Placement pl = topologies::place_ranks(par, scenario.gpus);
  const int gpn = scenario.cluster.gpus_per_node;
  const bool all = scenario.gpus <= max_ranks;

  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":";
  out += nlohmann::json(report.scenario).dump();
  out += ",\"ranks_written\":";
  out += nlohmann::json(all ? "all" : "first replica of each replica class").dump();
  out += "},\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const nlohmann::json& e) {
    if (!first) out += ",\n";
    first = false;
    out += e.dump();
  };
  std::vector<std::string> tails;
  tails.reserve(report.trace.size());
  for (const auto& s : report.trace) tails.push_back(slice_event_tail(s));
  // Each class-stage's slices, and the stage-wide stream slices (replica_class -1), in recorded
  // order; the text's size, reserved so that it is built without copies.
  std::vector<std::vector<std::size_t>> slices_of(report.ranks.size());
  std::size_t size = out.size();
  for (std::size_t r = 0; r < report.ranks.size(); ++r) {
    const RankClassReport& rc = report.ranks[r];
    std::size_t rank_size = kMetadataBytesPerRank;
    for (std::size_t i = 0; i < report.trace.size(); ++i) {
      const TraceSlice& s = report.trace[i];
      if (s.stage != rc.stage) continue;
      if (s.replica_class != rc.replica_class && s.replica_class != -1) continue;
      slices_of[r].push_back(i);
      rank_size += kEventHeadBytes + tails[i].size();
    }
    const std::size_t replicas =
        all ? rc.replicas.size() : std::min<std::size_t>(1, rc.replicas.size());
    size += replicas * static_cast<std::size_t>(par.cp * par.tp) * rank_size;
  }
  out.reserve(size + 16);
  std::vector<bool> named_node(static_cast<std::size_t>(scenario.gpus / gpn + 1), false);
  for (std::size_t r = 0; r < report.ranks.size(); ++r) {
    const RankClassReport& rc = report.ranks[r];
    const std::vector<std::size_t>& mine = slices_of[r];
    std::vector<int> replicas = rc.replicas;
    if (!all && replicas.size() > 1) replicas.resize(1);
    for (int d : replicas) {
      for (int c = 0; c < par.cp; ++c) {
        for (int t = 0; t < par.tp; ++t) {
          const int rank = pl.rank_of({t, c, d, rc.stage});
          const int gpu = pl.gpu_of_rank[static_cast<std::size_t>(rank)];
          const int node = gpu / gpn;
          if (!named_node[static_cast<std::size_t>(node)]) {
            named_node[static_cast<std::size_t>(node)] = true;
            emit({{"ph", "M"},
                  {"name", "process_name"},
                  {"pid", node},
                  {"args", {{"name", "node " + std::to_string(node)}}}});
          }
          const std::string who = "rank " + std::to_string(rank) + " (dp " + std::to_string(d) +
                                  ", tp " + std::to_string(t) + ", pp " + std::to_string(rc.stage) +
                                  (par.cp > 1 ? ", cp " + std::to_string(c) : "") + ")";
          emit({{"ph", "M"},
                {"name", "thread_name"},
                {"pid", node},
                {"tid", 2 * rank},
                {"args", {{"name", who + " compute"}}}});
          emit({{"ph", "M"},
                {"name", "thread_name"},
                {"pid", node},
                {"tid", 2 * rank + 1},
                {"args", {{"name", who + " comm"}}}});
          const std::string pid = std::to_string(node);
          for (std::size_t i : mine) {
            out += ",\n{\"ph\":\"X\",\"pid\":";
            out += pid;
            out += ",\"tid\":";
            out += std::to_string(2 * rank + report.trace[i].track);
            out += tails[i];
          }
        }
      }
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace clustersim::step
