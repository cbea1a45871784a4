#include "sweep/ranking.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

namespace clustersim::sweep {

namespace {

using nlohmann::json;

// A second component is named too when it costs at least this fraction of the first.
constexpr double kSecondReasonShare = 0.5;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  // Width in characters, counting UTF-8 continuation bytes as nothing.
  std::size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars < width) s.append(width - chars, ' ');
  return s;
}

double tokens_per_step(const SweepRecord& r) {
  if (r.has_metric("tokens_per_s") && r.has_metric("step_time_s")) {
    return r.metric("tokens_per_s") * r.metric("step_time_s");
  }
  return 1;
}

double gpus_of(const SweepRecord& r) {
  const auto it = r.parameters.find("gpus");
  return (it != r.parameters.end() && it->is_number()) ? it->get<double>() : 1;
}

}  // namespace

std::string component_label(const std::string& component) {
  // The step simulator's breakdown (step/step_report.hpp TimeBreakdown): the blocking parts
  // of communication, not the overlapped ones.
  static const std::map<std::string, std::string> known = {
      {"compute_s", "compute"},         {"tp_s", "exposed TP comm"},
      {"pp_s", "PP transfer wait"},     {"dp_s", "exposed DP comm"},
      {"bubble_s", "pipeline bubble"},  {"optimizer_s", "optimizer"},
      {"idle_s", "idle (slowest rank)"}};
  if (const auto it = known.find(component); it != known.end()) return it->second;
  std::string name = component;
  for (const char* suffix : {"_s", "_seconds"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      name.erase(name.size() - s.size());
    }
  }
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('_', start);
    if (end == std::string::npos) end = name.size();
    std::string word = name.substr(start, end - start);
    static const std::set<std::string> upper = {"dp",  "tp",   "pp",   "cp",  "ep",  "sp", "mlp",
                                                "ffn", "gemm", "zero", "hbm", "nic", "ib"};
    if (upper.count(word)) {
      std::transform(word.begin(), word.end(), word.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    }
    if (!word.empty()) out += (out.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out;
}

namespace {

// A breakdown component the runner-up spends more on than the winner.
struct Delta {
  std::string name;
  double per_token = 0;  // GPU-seconds per token more than the winner
  double step_s = 0;     // seconds per step more than the winner
};

double component(const SweepRecord& r, const std::string& name) {
  const auto it = r.breakdown.find(name);
  return (it != r.breakdown.end() && it->is_number()) ? it->get<double>() : 0.0;
}

// The components the runner-up spends more GPU-time per token on, largest first.
std::vector<Delta> component_deltas(const SweepRecord& runner_up, const SweepRecord& winner,
                                    double scale_r, double scale_w) {
  std::set<std::string> names;
  for (const auto& [k, v] : runner_up.breakdown.items()) names.insert(k);
  for (const auto& [k, v] : winner.breakdown.items()) names.insert(k);
  std::vector<Delta> deltas;
  for (const auto& name : names) {
    const double vr = component(runner_up, name);
    const double vw = component(winner, name);
    const double d = vr * scale_r - vw * scale_w;
    if (d > 0) deltas.push_back({name, d, vr - vw});
  }
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const Delta& a, const Delta& b) { return a.per_token > b.per_token; });
  return deltas;
}

// The first parameter behind a component that differs from the winner's, as " (p a vs b)":
// more compute comes from recomputation or the GEMM shapes (micro-batch, tp); exposed DP from
// ZeRO's extra traffic, the gradient dtype, the DP degree (which also decides how much
// memory a rank needs) or the network; exposed TP from the TP degree or NVLink; exposed EP from
// the EP degree, the dispatcher, its overlap or the links; the bubble from pp, vpp and the
// number of micro-batches.
std::string parameter_behind(const std::string& component_name, const SweepRecord& runner_up,
                             const SweepRecord& winner) {
  static const std::map<std::string, std::vector<const char*>> causes = {
      {"compute_s", {"recompute", "micro_batch", "tp", "gpu", "moe_expert_gemm", "fp8_recipe"}},
      {"dp_s",
       {"zero_stage", "grad_dtype", "fp8_param_gather", "compression", "dp", "nic_Gbps",
        "nics_per_node", "oversubscription"}},
      {"tp_s", {"tp", "sequence_parallel", "nvlink_GBps"}},
      {"ep_s", {"ep", "moe_dispatcher", "moe_comm_overlap", "nic_Gbps", "nvlink_GBps"}},
      {"pp_s", {"pp", "vpp", "micro_batch"}},
      {"bubble_s", {"pp", "vpp", "micro_batch"}},
      {"optimizer_s", {"zero_stage", "compression"}}};
  const auto it = causes.find(component_name);
  if (it == causes.end()) return "";
  const auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const char* p : it->second) {
    const json a = runner_up.parameters.value(p, json());
    const json b = winner.parameters.value(p, json());
    if (a != b && !a.is_null() && !b.is_null()) {
      return std::string(" (") + p + " " + text(a) + " vs " + text(b) + ")";
    }
  }
  return "";
}

}  // namespace

std::string loss_reason(const SweepRecord& runner_up, const SweepRecord& winner) {
  if (runner_up.breakdown.empty() || winner.breakdown.empty()) return "";
  const double scale_r = gpus_of(runner_up) / tokens_per_step(runner_up);
  const double scale_w = gpus_of(winner) / tokens_per_step(winner);
  double winner_total = 0;
  if (winner.has_metric("step_time_s")) {
    winner_total = winner.metric("step_time_s") * scale_w;
  } else {
    for (const auto& [k, v] : winner.breakdown.items()) {
      if (v.is_number()) winner_total += v.get<double>() * scale_w;
    }
  }
  const std::vector<Delta> deltas = component_deltas(runner_up, winner, scale_r, scale_w);
  if (deltas.empty()) return "";
  // With the same GPU count and batch, seconds per step compare directly; otherwise only the
  // GPU-time per token does.
  const bool same_shape = gpus_of(runner_up) == gpus_of(winner) &&
                          std::fabs(tokens_per_step(runner_up) - tokens_per_step(winner)) <=
                              1e-9 * tokens_per_step(winner);
  auto describe = [&](const Delta& d) {
    const std::string share =
        winner_total > 0 ? fmt("%+.1f", 100 * d.per_token / winner_total) + "%" : "";
    if (same_shape) {
      std::string s = component_label(d.name) + " " + fmt("%+.3f", d.step_s) + " s/step";
      return share.empty() ? s : s + " (" + share + ")";
    }
    return component_label(d.name) + " " + (share.empty() ? "more" : share) + " GPU-time per token";
  };
  std::string out = describe(deltas[0]) + parameter_behind(deltas[0].name, runner_up, winner);
  if (deltas.size() > 1 && deltas[1].per_token >= kSecondReasonShare * deltas[0].per_token) {
    out += ", " + describe(deltas[1]);
  }
  if (gpus_of(runner_up) != gpus_of(winner)) {
    out += "; " + fmt("%.0f", gpus_of(runner_up)) + " vs " + fmt("%.0f", gpus_of(winner)) + " GPUs";
  }
  return out;
}

std::vector<RankedMetric> ranked_metrics(const std::vector<const SweepRecord*>& ok) {
  auto any = [&](const char* metric) {
    return std::any_of(ok.begin(), ok.end(),
                       [&](const SweepRecord* r) { return r->has_metric(metric); });
  };
  std::vector<RankedMetric> out;
  if (any("mfu")) out.push_back({"best MFU", "mfu", true});
  if (any("time_to_train_days")) {
    out.push_back({"best time to train", "time_to_train_days", false});
  } else if (any("tokens_per_s")) {
    out.push_back({"best throughput", "tokens_per_s", true});
  }
  if (any("cost_usd")) {
    out.push_back({"best cost", "cost_usd", false});
  } else if (any("gpu_hours")) {
    out.push_back({"best cost (GPU-hours)", "gpu_hours", false});
  }
  if (!any("mfu") && any("memory_per_gpu_GiB")) {
    out.push_back({"lowest memory per GPU", "memory_per_gpu_GiB", false});
  }
  return out;
}

std::vector<Ranking> rank_records(const std::vector<SweepRecord>& records, int top) {
  std::vector<const SweepRecord*> ok;
  for (const auto& r : records) {
    if (r.status == kStatusOk) ok.push_back(&r);
  }
  std::vector<Ranking> out;
  auto add = [&](const std::string& title, const std::string& metric, bool higher) {
    Ranking ranking;
    ranking.title = title;
    ranking.metric = metric;
    ranking.higher_is_better = higher;
    std::vector<const SweepRecord*> rows;
    for (const auto* r : ok) {
      if (r->has_metric(metric)) rows.push_back(r);
    }
    std::stable_sort(rows.begin(), rows.end(), [&](const SweepRecord* a, const SweepRecord* b) {
      const double va = a->metric(metric);
      const double vb = b->metric(metric);
      if (va != vb) return higher ? va > vb : va < vb;
      return a->index < b->index;
    });
    if (static_cast<int>(rows.size()) > top) rows.resize(static_cast<std::size_t>(top));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      RankedRow row;
      row.record = rows[i];
      row.value = rows[i]->metric(metric);
      if (i > 0) row.why_behind = loss_reason(*rows[i], *rows[0]);
      ranking.rows.push_back(std::move(row));
    }
    out.push_back(std::move(ranking));
  };
  for (const auto& m : ranked_metrics(ok)) add(m.title, m.metric, m.higher_is_better);
  return out;
}

namespace {

// At most this many distinct what-if notes are listed; the rest are counted.
constexpr std::size_t kMaxWhatIfNotes = 6;

// The points whose hardware a sweep axis changed from the cited preset (their "what_if"
// parameter, sweep_spec.hpp), with the distinct changes; "" when there is none.
std::string what_if_lines(const std::vector<SweepRecord>& records) {
  std::size_t points = 0;
  std::vector<std::string> notes;
  for (const auto& r : records) {
    const auto it = r.parameters.find("what_if");
    if (it == r.parameters.end() || !it->is_string() || it->get<std::string>().empty()) continue;
    ++points;
    const std::string text = it->get<std::string>();
    for (std::size_t start = 0; start <= text.size();) {
      std::size_t end = text.find("; ", start);
      if (end == std::string::npos) end = text.size();
      const std::string note = text.substr(start, end - start);
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
      start = end + 2;
    }
  }
  if (points == 0) return "";
  std::string out = "uncited (what-if) hardware in " + std::to_string(points) + " of " +
                    std::to_string(records.size()) +
                    " points (set by the sweep, not cited by a preset):\n";
  for (std::size_t i = 0; i < notes.size() && i < kMaxWhatIfNotes; ++i) {
    out += "  " + notes[i] + "\n";
  }
  if (notes.size() > kMaxWhatIfNotes) {
    out += "  and " + std::to_string(notes.size() - kMaxWhatIfNotes) + " more\n";
  }
  return out;
}

bool same_order(const Ranking& a, const Ranking& b) {
  return a.rows.size() == b.rows.size() &&
         std::equal(a.rows.begin(), a.rows.end(), b.rows.begin(),
                    [](const RankedRow& x, const RankedRow& y) { return x.record == y.record; });
}
}  // namespace

std::string format_reference(const std::vector<SweepRecord>& records, const json& parameters,
                             const std::string& what) {
  const auto it = std::find_if(records.begin(), records.end(),
                               [&](const SweepRecord& r) { return r.parameters == parameters; });
  if (it == records.end()) return what + ": its parameters are not a point of this sweep\n";
  const SweepRecord& ref = *it;
  std::string out = what + " is point #" + std::to_string(ref.index) + " " + ref.label;
  if (ref.status != kStatusOk) return out + ": " + ref.status + " (" + ref.reason + ")\n";
  out += ":\n";
  // One line per distinct standing; rankings that place it alike share the line.
  std::vector<std::pair<std::string, std::string>> lines;  // titles, standing
  for (const auto& ranking : rank_records(records, std::numeric_limits<int>::max())) {
    const auto& rows = ranking.rows;
    const auto pos = std::find_if(rows.begin(), rows.end(),
                                  [&](const RankedRow& row) { return row.record == &ref; });
    if (pos == rows.end()) continue;
    const std::size_t rank = static_cast<std::size_t>(pos - rows.begin()) + 1;
    std::string standing = "rank " + std::to_string(rank) + " of " + std::to_string(rows.size());
    if (rank > 1) {
      standing += "; " + std::to_string(rank - 1) + " point" + (rank > 2 ? "s" : "") +
                  " beat it; #1 " + rows.front().record->label + " because " +
                  (pos->why_behind.empty() ? std::string("(no breakdown)") : pos->why_behind);
    }
    const auto same = std::find_if(lines.begin(), lines.end(),
                                   [&](const auto& line) { return line.second == standing; });
    if (same != lines.end()) {
      same->first += ", " + ranking.title;
    } else {
      lines.emplace_back(ranking.title, standing);
    }
  }
  for (const auto& [titles, standing] : lines) out += "  " + titles + ": " + standing + "\n";
  return out;
}

std::string format_summary(const std::vector<SweepRecord>& records, int top,
                           const json* reference) {
  std::map<std::string, std::size_t> counts;
  for (const auto& r : records) ++counts[r.status];
  std::string out =
      std::to_string(records.size()) + " points: " + std::to_string(counts[kStatusOk]) + " ok, " +
      std::to_string(counts[kStatusInvalid]) + " invalid, " +
      std::to_string(counts[kStatusInfeasible]) + " infeasible (memory), " +
      std::to_string(counts[kStatusFailed]) + " failed" +
      (counts[kStatusBounded] > 0
           ? ", " + std::to_string(counts[kStatusBounded]) + " bounded (not simulated)"
           : std::string()) +
      "\n";
  for (const auto& r : records) {
    if (r.status == kStatusFailed) {
      out += "  failed: #" + std::to_string(r.index) + " " + r.label + ": " + r.reason + "\n";
    }
  }
  out += what_if_lines(records);
  const auto rankings = rank_records(records, top);
  if (rankings.empty()) {
    out += "nothing to rank (no point evaluated ok)\n";
    return out;
  }
  std::size_t label_width = 6;
  for (const auto& ranking : rankings) {
    for (const auto& row : ranking.rows)
      label_width = std::max(label_width, row.record->label.size());
  }
  for (std::size_t k = 0; k < rankings.size(); ++k) {
    const Ranking& ranking = rankings[k];
    // Same GPU count and batch everywhere: time to train and cost order the points as MFU does.
    const auto same =
        std::find_if(rankings.begin(), rankings.begin() + static_cast<long>(k),
                     [&](const Ranking& earlier) { return same_order(earlier, ranking); });
    if (same != rankings.begin() + static_cast<long>(k)) {
      out += "\n" + ranking.title + ": the same points in the same order as " + same->title + "\n";
      continue;
    }
    out += "\n" + ranking.title + ":\n";
    out += "  " + pad("#", 4) + pad("point", label_width + 2) + pad("MFU", 8) + pad("step", 10) +
           pad("train", 10) + pad("GPU-h", 11) + pad("cost", 11) + pad("mem/GPU", 10) +
           "behind #1 because\n";
    int rank = 1;
    for (const auto& row : ranking.rows) {
      const SweepRecord& r = *row.record;
      auto metric_or_dash = [&](const char* name, const char* format, double scale) {
        return r.has_metric(name) ? fmt(format, r.metric(name) * scale) : std::string("-");
      };
      out += "  " + pad(std::to_string(rank++), 4) + pad(r.label, label_width + 2) +
             pad(metric_or_dash("mfu", "%.1f%%", 100), 8) +
             pad(metric_or_dash("step_time_s", "%.3f s", 1), 10) +
             pad(metric_or_dash("time_to_train_days", "%.1f d", 1), 10) +
             pad(metric_or_dash("gpu_hours", "%.3g", 1), 11) +
             pad(metric_or_dash("cost_usd", "$%.3g", 1), 11) +
             pad(metric_or_dash("memory_per_gpu_GiB", "%.1f GiB", 1), 10) + row.why_behind + "\n";
    }
  }
  if (reference) out += "\n" + format_reference(records, *reference, "The base scenario");
  return out;
}

}  // namespace clustersim::sweep
