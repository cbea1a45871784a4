#include "validation/suite.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "core/svg_plot.hpp"
#include "input/scenario_loader.hpp"
#include "models/compute_cost.hpp"
#include "validation/family_errors.hpp"
#include "validation/nccl_tests_log.hpp"

namespace clustersim::validation {
namespace {

struct ConventionName {
  FlopConvention c;
  const char* name;
};
constexpr ConventionName kConventions[] = {
    {FlopConvention::megatron_eq3, "megatron_eq3"},
    {FlopConvention::korthikanti_model, "korthikanti_model"},
    {FlopConvention::korthikanti_hw_selective, "korthikanti_hw_selective"},
    {FlopConvention::megatron_core, "megatron_core"},
    {FlopConvention::megatron_core_v014, "megatron_core_v014"},
};

struct MetricName {
  Metric m;
  const char* name;
};
constexpr MetricName kMetrics[] = {{Metric::step_time_s, "step_time_s"},
                                   {Metric::tokens_per_s_per_gpu, "tokens_per_s_per_gpu"},
                                   {Metric::tflops_per_gpu, "tflops_per_gpu"},
                                   {Metric::mfu, "mfu"},
                                   {Metric::collective_time_us, "collective_time_us"}};

std::string resolve(const std::string& base_file, const std::string& relative) {
  const std::filesystem::path p(relative);
  if (p.is_absolute()) return relative;
  return (std::filesystem::path(base_file).parent_path() / p).lexically_normal().string();
}

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string pad(std::string s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

int digits_for(Metric m) {
  switch (m) {
    case Metric::step_time_s: return 3;
    case Metric::tokens_per_s_per_gpu: return 0;
    case Metric::tflops_per_gpu: return 1;
    case Metric::mfu: return 3;
    case Metric::collective_time_us: return 2;
  }
  return 3;
}

// MAPE over the cases that ran and `pick` accepts.
template <class Pick>
Mape mape_of(const std::vector<CaseResult>& cases, Pick pick) {
  Mape m;
  double sum = 0;
  for (const auto& c : cases)
    if (c.ok() && pick(c)) {
      sum += std::fabs(c.error_pct);
      ++m.ran;
    }
  m.pct = m.ran > 0 ? sum / m.ran : 0;
  return m;
}

}  // namespace

void summarise_suite(SuiteResult& r) {
  const Mape all = mape_of(r.cases, [](const CaseResult&) { return true; });
  r.mape_pct = all.pct;
  r.ran = all.ran;
  r.specified =
      mape_of(r.cases, [](const CaseResult& c) { return c.completion == Completion::specified; });
  r.by_rule =
      mape_of(r.cases, [](const CaseResult& c) { return c.completion == Completion::rule; });
  double in_sample = 0;
  for (const auto& c : r.cases)
    if (c.ok()) in_sample += std::fabs(c.cross_validated ? c.in_sample_error_pct : c.error_pct);
  r.in_sample_mape_pct = r.ran > 0 ? in_sample / r.ran : 0;
}

namespace {

// ", cross-validated (in-sample X%)" when some case was predicted with a fold's parameters.
std::string cross_validation_note(const SuiteResult& r) {
  const bool any = std::any_of(r.cases.begin(), r.cases.end(),
                               [](const CaseResult& c) { return c.ok() && c.cross_validated; });
  if (!any) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, ", cross-validated (in-sample %.2f%%)", r.in_sample_mape_pct);
  return buf;
}

std::vector<NotExpressible> read_not_expressible(const JsonNode& root) {
  std::vector<NotExpressible> out;
  if (const auto list = root.find("not_expressible"))
    for (const auto& n : list->items()) {
      n.only_keys({"id", "source", "reason"});
      out.push_back({n.string_at("id"), n.string_or("source", ""), n.string_at("reason")});
    }
  return out;
}

}  // namespace

const char* to_string(FlopConvention c) {
  for (const auto& e : kConventions)
    if (e.c == c) return e.name;
  return "?";
}

std::vector<std::string> flop_convention_names() {
  std::vector<std::string> out;
  for (const auto& e : kConventions) out.emplace_back(e.name);
  return out;
}

const char* to_string(Completion c) {
  return c == Completion::rule ? "rule" : "specified";
}

const char* to_string(Metric m) {
  for (const auto& e : kMetrics)
    if (e.m == m) return e.name;
  return "?";
}

namespace {

// FLOPs per token of Megatron-LM core_v0.14's num_floating_point_operations
// (megatron/training/training.py transformer_flops): every GEMM three times (forward, two
// backward) at two FLOPs per multiply-add. The multi-token prediction modules count as layers
// of the last layer's kind, with their 2h -> h projection and norms; the logits once per
// prediction head.
double megatron_core_v014_per_token(const ModelSpec& m, double s) {
  const double h = m.hidden, a = m.num_heads, mtp = m.mtp_layers;
  const double layers = m.num_layers + mtp;
  const bool last_is_moe = m.is_moe_layer(m.num_layers - 1);
  const double moe_layers = m.moe_layer_count() + (last_is_moe ? mtp : 0.0);
  const double dense_layers = layers - moe_layers;
  const double gated = m.ffn == FfnKind::swiglu ? 1.5 : 1.0;
  double routed = 0, shared = 0;
  if (m.moe) {
    routed = static_cast<double>(m.moe->expert_ffn_hidden) * m.moe->experts_per_token;
    shared = static_cast<double>(m.moe->shared_expert_ffn_hidden) * m.moe->shared_experts;
  }
  const double mlp =
      12.0 * h * gated * (m.ffn_hidden * dense_layers + (routed + shared) * moe_layers);
  double attention = 0;
  if (m.mla) {
    const MlaSpec& x = *m.mla;
    const double qk = x.qk_nope_head_dim, rope = x.qk_rope_head_dim, v = x.v_head_dim;
    const double q_term =
        x.q_lora_rank > 0 ? x.q_lora_rank * (h + a * (qk + rope) + 1) : h * a * (qk + rope);
    attention = 6.0 * layers *
                (q_term + x.kv_lora_rank * (h + a * (qk + v) + 1) + h * rope + a * v * h +
                 s * a * (qk + rope) / 2 + s * a * v / 2);
  } else {
    const double query_ratio = a * m.head_dim() / h;
    attention = 12.0 * layers * h * h * (1 + m.num_kv_heads / a + s / h / 2) * query_ratio;
  }
  const double mtp_extra = 6.0 * mtp * (3 * h + 2 * h * h);
  const double logits = 6.0 * h * m.vocab * (mtp + 1);
  return mlp + attention + mtp_extra + logits;
}

}  // namespace

double flops_per_step(FlopConvention convention, const ModelSpec& m, double global_batch,
                      double seq_len) {
  const double b = global_batch, s = seq_len, l = m.num_layers, h = m.hidden, v = m.vocab;
  switch (convention) {
    case FlopConvention::megatron_eq3:  // SC'21 eq. (3)
      return 96.0 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
    case FlopConvention::korthikanti_model:  // Korthikanti et al. eq. (7)
      return 72.0 * b * l * s * h * h * (1 + s / (6 * h) + v / (12 * h * l));
    case FlopConvention::korthikanti_hw_selective:  // eq. (8)
      return 72.0 * b * l * s * h * h * (1 + s / (3 * h) + v / (12 * h * l));
    case FlopConvention::megatron_core: {  // Megatron-LM num_floating_point_operations
      const double kv_ratio = static_cast<double>(m.num_kv_heads) / m.num_heads;
      const double query_ratio = static_cast<double>(m.num_heads) * m.head_dim() / h;
      const double gated = m.ffn == FfnKind::swiglu ? 1.5 : 1.0;
      return 12.0 * b * s * l * h * h *
             ((1 + kv_ratio + s / h) * query_ratio + (m.ffn_hidden / h) * gated + v / (2 * l * h));
    }
    case FlopConvention::megatron_core_v014: return b * s * megatron_core_v014_per_token(m, s);
  }
  return 0;
}

PublishedSuite load_published_suite(const std::string& path) {
  const JsonDocument doc = JsonDocument::load(path);
  const JsonNode root = doc.root();
  root.require_object();
  root.only_keys({"name", "description", "generated_by", "reference", "threshold_pct", "cases",
                  "not_expressible"});
  PublishedSuite suite;
  suite.file = path;
  suite.name = root.string_at("name");
  suite.threshold_pct = root.positive_or("threshold_pct", 10);
  std::vector<std::string> metric_names;
  for (const auto& e : kMetrics) metric_names.emplace_back(e.name);
  for (const auto& c : root.at("cases").items()) {
    c.only_keys({"id", "family", "source", "source_table", "scenario", "metric", "reported",
                 "flop_convention", "peak_tflops", "completion", "completion_rules", "assumptions",
                 "also_reported", "reported_memory_GiB"});
    PublishedCase pc;
    pc.id = c.string_at("id");
    pc.family = c.string_or("family", pc.id.substr(0, pc.id.find('_')));
    pc.completion = c.enum_or("completion", {"specified", "rule"}, "specified") == "rule"
                        ? Completion::rule
                        : Completion::specified;
    if (const auto rules = c.find("completion_rules"))
      for (const auto& n : rules->items()) pc.completion_rules.push_back(n.as_string());
    pc.source = c.string_or("source", "");
    pc.source_table = c.string_or("source_table", "");
    pc.scenario_path = resolve(path, c.string_at("scenario"));
    const std::string metric = c.enum_at("metric", metric_names);
    for (const auto& e : kMetrics)
      if (metric == e.name) pc.metric = e.m;
    pc.reported = c.positive_at("reported");
    const std::string conv = c.enum_at("flop_convention", flop_convention_names());
    for (const auto& e : kConventions)
      if (conv == e.name) pc.convention = e.c;
    if (pc.metric == Metric::mfu) pc.peak_tflops = c.positive_at("peak_tflops");
    if (c.has("reported_memory_GiB")) pc.reported_memory_GiB = c.positive_at("reported_memory_GiB");
    if (const auto a = c.find("assumptions"))
      for (const auto& s : a->items()) pc.assumptions.push_back(s.as_string());
    suite.cases.push_back(std::move(pc));
  }
  suite.not_expressible = read_not_expressible(root);
  return suite;
}

double predicted_metric(const PublishedCase& c, const Scenario& sc, double t) {
  const double n = sc.gpus;
  const double flops = flops_per_step(
      c.convention, sc.model, static_cast<double>(sc.training.global_batch), sc.training.seq_len);
  switch (c.metric) {
    case Metric::step_time_s: return t;
    case Metric::tokens_per_s_per_gpu: return sc.tokens_per_step() / t / n;
    case Metric::tflops_per_gpu: return flops / t / n / 1e12;
    case Metric::mfu: return flops / t / n / (c.peak_tflops * 1e12);
    case Metric::collective_time_us: break;  // microbench only
  }
  throw std::logic_error(std::string("a published run cannot be compared in ") +
                         to_string(c.metric));
}

double implied_step_time_s(const PublishedCase& c, const Scenario& sc) {
  const double n = sc.gpus;
  const double flops = flops_per_step(
      c.convention, sc.model, static_cast<double>(sc.training.global_batch), sc.training.seq_len);
  switch (c.metric) {
    case Metric::step_time_s: return c.reported;
    case Metric::tokens_per_s_per_gpu: return sc.tokens_per_step() / (c.reported * n);
    case Metric::tflops_per_gpu: return flops / (c.reported * 1e12 * n);
    case Metric::mfu: return flops / (c.reported * c.peak_tflops * 1e12 * n);
    case Metric::collective_time_us: break;  // microbench only
  }
  throw std::logic_error(std::string("a published run cannot be compared in ") +
                         to_string(c.metric));
}

std::vector<std::string> select_cases(PublishedSuite& suite, const std::vector<std::string>& ids) {
  std::vector<std::string> unmatched;
  for (const auto& id : ids) {
    const bool found = std::any_of(suite.cases.begin(), suite.cases.end(),
                                   [&](const PublishedCase& c) { return c.id == id; });
    if (!found) unmatched.push_back(id);
  }
  std::vector<PublishedCase> kept;
  for (auto& c : suite.cases)
    if (std::find(ids.begin(), ids.end(), c.id) != ids.end()) kept.push_back(std::move(c));
  suite.cases = std::move(kept);
  return unmatched;
}

MicrobenchSuite load_microbench_suite(const std::string& path) {
  const JsonDocument doc = JsonDocument::load(path);
  const JsonNode root = doc.root();
  root.require_object();
  root.only_keys({"name", "description", "threshold_pct", "cases", "not_expressible"});
  MicrobenchSuite suite;
  suite.file = path;
  suite.name = root.string_at("name");
  suite.threshold_pct = root.positive_or("threshold_pct", 10);
  for (const auto& c : root.at("cases").items()) {
    c.only_keys({"id", "log", "cluster", "description"});
    MicrobenchCase mc;
    mc.id = c.string_at("id");
    mc.log_path = resolve(path, c.string_at("log"));
    mc.cluster = c.string_at("cluster");
    mc.description = c.string_or("description", "");
    suite.cases.push_back(std::move(mc));
  }
  suite.not_expressible = read_not_expressible(root);
  return suite;
}

SuiteResult run_microbench_suite(const MicrobenchSuite& suite, const CollectivePredictor& predict) {
  SuiteResult r;
  r.suite = suite.name;
  r.threshold_pct = suite.threshold_pct;
  r.not_expressible = suite.not_expressible;
  for (const auto& c : suite.cases) {
    NcclTestsLog log;
    try {
      log = load_nccl_tests_log(c.log_path);
    } catch (const std::exception& e) {
      CaseResult cr;
      cr.id = c.id;
      cr.failure = e.what();
      r.cases.push_back(cr);
      continue;
    }
    for (const auto& t : log.tables) {
      std::vector<const NcclTestsRow*> rows;
      CollectiveQuery q{c.cluster, to_string(t.op), t.nranks, std::max(1, t.nodes), {}};
      for (const auto& row : t.rows)
        if (row.best().time_us && row.size_bytes > 0) {
          rows.push_back(&row);
          q.sizes_bytes.push_back(row.size_bytes);
        }
      std::vector<double> times;
      std::string failure;
      try {
        times = predict(q);
        if (times.size() != rows.size())
          throw std::runtime_error("the collective simulator returned " +
                                   std::to_string(times.size()) + " times for " +
                                   std::to_string(rows.size()) + " sizes");
      } catch (const std::exception& e) {
        failure = e.what();
      }
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const NcclTestsRow& row = *rows[i];
        CaseResult cr;
        cr.id = c.id + " " + to_string(t.op) + " " +
                std::to_string(static_cast<long long>(row.size_bytes)) + " B";
        cr.group = c.id;
        cr.source = c.description;
        cr.metric = Metric::collective_time_us;
        cr.convention = "nccl-tests time (us)";
        cr.reported = *row.best().time_us;
        if (!failure.empty()) {
          cr.failure = failure;
        } else {
          cr.predicted = times[i];
          cr.error_pct = 100.0 * (cr.predicted - cr.reported) / cr.reported;
          // busbw of both, for the plot: S·factor / t (GB/s).
          const double f = busbw_factor(t.op, t.nranks);
          cr.reported_mfu_ours = row.size_bytes * f / cr.reported / 1e3;
          cr.predicted_mfu = row.size_bytes * f / cr.predicted / 1e3;
        }
        r.cases.push_back(std::move(cr));
      }
    }
  }
  summarise_suite(r);
  return r;
}

namespace {

bool is_microbench(const SuiteResult& r) {
  return r.suite == "microbench";
}

std::string signed_pct(double v) {
  return (v >= 0 ? "+" : "") + fmt(v, 1) + "%";
}

// Share of the simulated step time, in percent.
std::string share(double part_s, double step_s) {
  return step_s > 0 ? fmt(100.0 * part_s / step_s, 1) : std::string("n/a");
}

// Over the usable HBM, but within what the CUDA context leaves: inside the memory model's
// allocator fragmentation reserve (models/memory.hpp MemoryEstimate::tight).
bool tight(const CaseResult& c) {
  return !c.fits_in_memory && c.memory_per_gpu_GiB <= c.memory_physical_GiB;
}

std::string memory_verdict(const CaseResult& c) {
  if (tight(c)) {
    return "the memory model puts it inside its allocator fragmentation reserve: " +
           fmt(c.memory_per_gpu_GiB, 1) + " GiB per GPU of " + fmt(c.memory_usable_GiB, 1) +
           " GiB usable, " + fmt(c.memory_physical_GiB, 1) + " without the reserve (tight)";
  }
  return "the memory model says it does not fit: " + fmt(c.memory_per_gpu_GiB, 1) +
         " GiB per GPU of " + fmt(c.memory_usable_GiB, 1) +
         " GiB usable (simulated anyway: the published run did fit)";
}

// "specified 4.1% over 30, completed by rule 8.2% over 25" (published runs).
std::string completion_split(const SuiteResult& r) {
  const auto one = [](const Mape& m) {
    return m.ran > 0 ? fmt(m.pct, 1) + "% over " + std::to_string(m.ran) : std::string("none");
  };
  return "fully specified " + one(r.specified) + ", completed by rule " + one(r.by_rule);
}

// MAPE per publication, in the order the groups first appear.
std::vector<std::pair<std::string, std::pair<double, int>>> mape_by_group(const SuiteResult& r) {
  std::vector<std::pair<std::string, std::pair<double, int>>> groups;
  for (const auto& c : r.cases) {
    if (!c.ok()) continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == c.group; });
    if (it == groups.end()) {
      groups.push_back({c.group, {0.0, 0}});
      it = groups.end() - 1;
    }
    it->second.first += std::fabs(c.error_pct);
    it->second.second += 1;
  }
  for (auto& g : groups) g.second.first /= g.second.second;
  return groups;
}

// The memory model against the peak memory the sources report (reported_memory_GiB): a
// table of the cases that have one, and how many the model keeps at or under it.
std::string memory_against_published(const SuiteResult& r) {
  std::vector<const CaseResult*> with;
  for (const auto& c : r.cases)
    if (c.ok() && c.reported_memory_GiB > 0) with.push_back(&c);
  if (with.empty()) return "";
  int under = 0;
  for (const auto* c : with) under += c->memory_per_gpu_GiB <= c->reported_memory_GiB ? 1 : 0;
  std::ostringstream out;
  out << "\nMemory per GPU against what the sources report (the largest stage's; reported: the "
         "caching allocator's peak reserved over GPUs, at or above what was allocated, so the "
         "simulated figure should not exceed it): at or under it in "
      << under << " of " << with.size() << ".\n\n"
      << "| case | simulated GiB | reported GiB | simulated / reported |\n"
      << "|---|---:|---:|---:|\n";
  for (const auto* c : with)
    out << "| " << c->id << " | " << fmt(c->memory_per_gpu_GiB, 1) << " | "
        << fmt(c->reported_memory_GiB, 1) << " | "
        << fmt(c->memory_per_gpu_GiB / c->reported_memory_GiB, 2) << " |\n";
  return out.str();
}

}  // namespace

std::string format_table(const SuiteResult& r) {
  std::ostringstream out;
  const bool micro = is_microbench(r);
  out << "suite " << r.suite << ": " << r.cases.size() << " cases, " << r.not_expressible.size()
      << " not expressible\n\n";
  out << pad("case", 44) << pad("metric", 22) << pad("reported", 11, true)
      << pad("predicted", 11, true) << pad("error", 9, true);
  if (!micro) out << pad("MFU sim", 9, true) << pad("MFU rep*", 9, true);
  out << "\n";
  for (const auto& c : r.cases) {
    out << pad(c.id, 44) << pad(to_string(c.metric), 22);
    if (!c.ok()) {
      out << "  not simulated: " << c.failure << "\n";
      continue;
    }
    const int d = digits_for(c.metric);
    out << pad(fmt(c.reported, d), 11, true) << pad(fmt(c.predicted, d), 11, true)
        << pad(signed_pct(c.error_pct), 9, true);
    if (!micro)
      out << pad(fmt(100 * c.predicted_mfu, 1) + "%", 9, true)
          << pad(fmt(100 * c.reported_mfu_ours, 1) + "%", 9, true);
    out << "\n";
  }
  if (!micro) {
    out << "(* the reported run's MFU in clustersim's FLOP convention: our model FLOPs over the "
           "step time the reported figure implies in the source's convention)\n\n"
        << "where the simulated step goes (% of the simulated step; step times in seconds):\n"
        << pad("case", 44) << pad("sim", 9, true) << pad("implied", 9, true)
        << pad("compute", 9, true) << pad("tp", 7, true) << pad("pp", 7, true) << pad("dp", 7, true)
        << pad("bubble", 8, true) << pad("optim", 7, true) << "\n";
    for (const auto& c : r.cases) {
      if (!c.ok()) continue;
      const auto& b = c.breakdown;
      const double t = c.predicted_step_time_s;
      out << pad(c.id, 44) << pad(fmt(t, 3), 9, true)
          << pad(fmt(c.reported_step_time_s, 3), 9, true) << pad(share(b.compute_s, t), 9, true)
          << pad(share(b.tp_s, t), 7, true) << pad(share(b.pp_s, t), 7, true)
          << pad(share(b.dp_s, t), 7, true) << pad(share(b.bubble_s, t), 8, true)
          << pad(share(b.optimizer_s, t), 7, true) << "\n";
    }
    for (const auto& c : r.cases)
      if (c.ok() && !c.fits_in_memory) out << "note: " << c.id << ": " << memory_verdict(c) << "\n";
  }
  if (!r.not_expressible.empty()) {
    out << "\nnot expressible as scenarios (" << r.not_expressible.size() << "):\n";
    for (const auto& n : r.not_expressible) out << "  " << pad(n.id, 44) << n.reason << "\n";
  }
  if (!micro && r.ran > 0) out << "\n" << family_errors_text(r);
  out << "\n"
      << r.suite << ": MAPE " << fmt(r.mape_pct, 2) << "% over " << r.ran << " simulated case"
      << (r.ran == 1 ? "" : "s") << cross_validation_note(r) << " (threshold "
      << fmt(r.threshold_pct, 1) << "%): " << (r.passed() ? "PASS" : "FAIL") << "\n";
  if (!micro) out << r.suite << ": MAPE " << completion_split(r) << "\n";
  return out.str();
}

std::string to_json_text(const std::vector<SuiteResult>& results, const std::string& date) {
  nlohmann::json j;
  j["date"] = date;
  j["suites"] = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json s;
    s["name"] = r.suite;
    s["mape_pct"] = r.mape_pct;
    s["in_sample_mape_pct"] = r.in_sample_mape_pct;
    s["simulated_cases"] = r.ran;
    s["threshold_pct"] = r.threshold_pct;
    s["passed"] = r.passed();
    if (!is_microbench(r))
      s["by_completion"] = {
          {"specified", {{"mape_pct", r.specified.pct}, {"cases", r.specified.ran}}},
          {"rule", {{"mape_pct", r.by_rule.pct}, {"cases", r.by_rule.ran}}}};
    s["cases"] = nlohmann::json::array();
    for (const auto& c : r.cases) {
      nlohmann::json cj = {{"id", c.id},
                           {"source", c.source},
                           {"metric", to_string(c.metric)},
                           {"flop_convention", c.convention},
                           {"reported", c.reported},
                           {"assumptions", c.assumptions}};
      if (c.ok()) {
        cj["predicted"] = c.predicted;
        cj["error_pct"] = c.error_pct;
        if (!is_microbench(r)) {
          const auto& b = c.breakdown;
          cj["family"] = c.family;
          cj["gpus"] = c.gpus;
          cj["cross_validated"] = c.cross_validated;
          if (c.cross_validated) {
            cj["in_sample_predicted"] = c.in_sample_predicted;
            cj["in_sample_error_pct"] = c.in_sample_error_pct;
          }
          cj["predicted_step_time_s"] = c.predicted_step_time_s;
          cj["reported_step_time_s"] = c.reported_step_time_s;
          cj["predicted_mfu"] = c.predicted_mfu;
          cj["reported_mfu_ours"] = c.reported_mfu_ours;
          cj["breakdown_s"] = {{"compute", b.compute_s}, {"tp", b.tp_s},
                               {"pp", b.pp_s},           {"dp", b.dp_s},
                               {"bubble", b.bubble_s},   {"optimizer", b.optimizer_s},
                               {"idle", b.idle_s}};
          cj["completion"] = to_string(c.completion);
          cj["fits_in_memory"] = c.fits_in_memory;
          cj["memory_per_gpu_GiB"] = c.memory_per_gpu_GiB;
          if (c.reported_memory_GiB > 0) cj["reported_memory_GiB"] = c.reported_memory_GiB;
          cj["memory_usable_GiB"] = c.memory_usable_GiB;
          cj["memory_physical_GiB"] = c.memory_physical_GiB;
        }
      } else {
        cj["failure"] = c.failure;
      }
      s["cases"].push_back(cj);
    }
    s["not_expressible"] = nlohmann::json::array();
    for (const auto& n : r.not_expressible)
      s["not_expressible"].push_back({{"id", n.id}, {"source", n.source}, {"reason", n.reason}});
    j["suites"].push_back(s);
  }
  return j.dump(2) + "\n";
}

std::string report_svg(const SuiteResult& r, const std::string& date) {
  svg::Axes axes;
  if (is_microbench(r)) {
    axes.title = "nccl-tests: simulated against measured bus bandwidth (" + date + ")";
    axes.x_label = "measured busbw (GB/s)";
    axes.y_label = "simulated busbw (GB/s)";
  } else {
    axes.title = "Published runs: simulated against reported MFU, clustersim's FLOP convention (" +
                 date + ")";
    axes.x_label = "reported MFU (%)";
    axes.y_label = "simulated MFU (%)";
  }
  // One series per family of cases ("sc21", "korthikanti", ...), in suite order.
  std::vector<svg::Series> series;
  for (const auto& c : r.cases) {
    if (!c.ok()) continue;
    const std::string family = is_microbench(r) ? c.group : c.family;
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const svg::Series& s) { return s.name == family; });
    if (it == series.end()) {
      svg::Series s;
      s.name = family;
      s.line = false;
      s.markers = true;
      series.push_back(s);
      it = series.end() - 1;
    }
    const double scale = is_microbench(r) ? 1.0 : 100.0;
    it->points.push_back({scale * c.reported_mfu_ours, scale * c.predicted_mfu, ""});
  }
  axes.y_min = 0;
  return svg::line_chart(axes, series, {}, true);
}

std::string extract_analysis(const std::string& previous_report) {
  const auto begin = previous_report.find(kAnalysisBegin);
  if (begin == std::string::npos) return "";
  const auto from = begin + std::string(kAnalysisBegin).size();
  const auto end = previous_report.find(kAnalysisEnd, from);
  if (end == std::string::npos) return "";
  std::string text = previous_report.substr(from, end - from);
  const auto first = text.find_first_not_of("\n");
  const auto last = text.find_last_not_of("\n");
  if (first == std::string::npos) return "";
  return text.substr(first, last - first + 1);
}

std::string report_markdown(const std::vector<SuiteResult>& results, const std::string& date,
                            const std::string& command,
                            const std::map<std::string, std::string>& svg_names,
                            const std::string& analysis) {
  std::ostringstream out;
  out << "# Validation report\n\n"
      << "Generated by `" << command << "` on " << date
      << ". Everything but the analysis section is rewritten when the command is rerun; the "
         "analysis between its markers is kept.\n\n"
      << "Each published run is simulated from its scenario in validation/suites/ and compared in "
         "the source's own metric and FLOP convention (validation/suite.hpp). No simulator "
         "constant is set from these figures.\n\n"
      << "## Summary\n\n| suite | publication or table | cases | MAPE |\n|---|---|---:|---:|\n";
  for (const auto& r : results) {
    for (const auto& [group, m] : mape_by_group(r))
      out << "| " << r.suite << " | " << group << " | " << m.second << " | " << fmt(m.first, 1)
          << "% |\n";
    // Two decimals: the suite's headline is read against a threshold (8 % in the fidelity target).
    out << "| **" << r.suite << "** | all | **" << r.ran << "** | **" << fmt(r.mape_pct, 2)
        << "%** |\n";
    if (!is_microbench(r))
      for (const auto& [label, m] :
           {std::pair{"fully specified", r.specified}, std::pair{"completed by rule", r.by_rule}})
        out << "| " << r.suite << " | all, " << label << " | " << m.ran << " | "
            << (m.ran > 0 ? fmt(m.pct, 1) + "%" : std::string("-")) << " |\n";
  }
  out << "\n";
  for (const auto& r : results) {
    const bool micro = is_microbench(r);
    out << "## Suite `" << r.suite << "`\n\n"
        << "**MAPE " << fmt(r.mape_pct, 2) << "%** over " << r.ran << " simulated case"
        << (r.ran == 1 ? "" : "s") << cross_validation_note(r) << " (threshold "
        << fmt(r.threshold_pct, 1) << "%: " << (r.passed() ? "pass" : "fail") << ")"
        << (micro ? std::string() : "; " + completion_split(r)) << ".\n\n";
    if (!micro && r.ran > 0) out << family_errors_markdown(r) << "\n";
    if (const auto it = svg_names.find(r.suite + "-signed"); it != svg_names.end())
      out << "![signed error against GPU count](" << it->second << ")\n\n";
    if (const auto it = svg_names.find(r.suite); it != svg_names.end())
      out << "![simulated against reported](" << it->second << ")\n\n";
    out << "| case | metric | convention | reported | simulated | error |"
        << (micro ? "" : " MFU sim | MFU rep (ours) | completion |") << "\n"
        << "|---|---|---|---:|---:|---:|" << (micro ? "" : "---:|---:|---|") << "\n";
    for (const auto& c : r.cases) {
      out << "| " << c.id << " | " << to_string(c.metric) << " | " << c.convention << " | ";
      if (!c.ok()) {
        out << fmt(c.reported, 3) << " | not simulated: " << c.failure << " | |"
            << (micro ? "" : " | | |") << "\n";
        continue;
      }
      const int d = digits_for(c.metric);
      out << fmt(c.reported, d) << " | " << fmt(c.predicted, d) << " | " << signed_pct(c.error_pct)
          << " |";
      if (!micro)
        out << " " << fmt(100 * c.predicted_mfu, 1) << "% | " << fmt(100 * c.reported_mfu_ours, 1)
            << "% | " << to_string(c.completion) << " |";
      out << "\n";
    }
    if (!micro) {
      out << "\n\"MFU rep (ours)\": the reported run's MFU in clustersim's convention (our model "
             "FLOPs over the step time the reported figure implies).\n\n"
          << "Where the simulated step goes (critical path, % of the simulated step; step times in "
             "seconds, \"implied\" = the step time the reported figure implies):\n\n"
          << "| case | simulated | implied | compute | exposed TP/CP | exposed PP | exposed DP | "
             "bubble | optimizer | memory model |\n"
          << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
      for (const auto& c : r.cases) {
        if (!c.ok()) continue;
        const auto& b = c.breakdown;
        const double t = c.predicted_step_time_s;
        out << "| " << c.id << " | " << fmt(t, 3) << " | " << fmt(c.reported_step_time_s, 3)
            << " | " << share(b.compute_s, t) << "% | " << share(b.tp_s, t) << "% | "
            << share(b.pp_s, t) << "% | " << share(b.dp_s, t) << "% | " << share(b.bubble_s, t)
            << "% | " << share(b.optimizer_s, t) << "% | "
            << (c.fits_in_memory ? std::string("fits")
                : tight(c)       ? "tight (" + fmt(c.memory_per_gpu_GiB, 0) + " of " +
                                 fmt(c.memory_usable_GiB, 0) + " GiB; " +
                                 fmt(c.memory_physical_GiB, 0) + " without the reserve)"
                           : "does not fit (" + fmt(c.memory_per_gpu_GiB, 0) + " of " +
                                 fmt(c.memory_usable_GiB, 0) + " GiB)")
            << " |\n";
      }
    }
    if (!micro) out << memory_against_published(r);
    std::vector<const CaseResult*> assumed;
    for (const auto& c : r.cases)
      if (!c.assumptions.empty()) assumed.push_back(&c);
    if (!assumed.empty()) {
      out << "\nAssumptions where the source is silent:\n\n";
      for (const auto* c : assumed) {
        out << "- " << c->id << ": ";
        for (std::size_t i = 0; i < c->assumptions.size(); ++i)
          out << (i ? "; " : "") << c->assumptions[i];
        out << "\n";
      }
    }
    if (!r.not_expressible.empty()) {
      out << "\nNot expressible as scenarios (" << r.not_expressible.size() << "):\n\n";
      for (const auto& n : r.not_expressible) out << "- " << n.id << ": " << n.reason << "\n";
    }
    out << "\n";
  }
  out << "## Analysis\n\n"
      << kAnalysisBegin << "\n\n"
      << (analysis.empty()
              ? std::string("(No analysis written yet: write it between these markers; "
                            "`clustersim validate --report` keeps it.)")
              : analysis)
      << "\n\n"
      << kAnalysisEnd << "\n";
  return out.str();
}

}  // namespace clustersim::validation
