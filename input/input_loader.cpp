#include "input/input_loader.hpp"

#include <algorithm>

#include "core/units.hpp"
#include "input/faults_section.hpp"
#include "input/limits.hpp"
#include "input/read_helpers.hpp"
#include "input/run_sections.hpp"
#include "input/scenario_loader.hpp"
#include "input/table_check.hpp"

namespace clustersim {

namespace {

// Fails at `where` when one trial would produce more than kMaxRowsPerTrial of `what`.
void check_rows(const JsonNode& where, double rows, const std::string& what,
                const std::string& remedy) {
  if (rows <= input::kMaxRowsPerTrial) return;
  where.fail("about " + input::number_text(rows) + " " + what +
             " in one trial, above the limit of " + input::number_text(input::kMaxRowsPerTrial) +
             "; " + remedy);
}

double expected_failures_per_s(const InputBundle& b) {
  const Scenario& s = b.scenario;
  const int per_node = std::max(1, s.cluster.gpus_per_node);
  const double nodes = (s.gpus + per_node - 1) / per_node;
  double rate_per_hour = 0;
  for (const auto& c : b.faults.causes) {
    const double units = c.unit == FailureUnit::gpu    ? s.gpus
                         : c.unit == FailureUnit::node ? nodes
                         : c.unit == FailureUnit::nic ? nodes * std::max(1, s.cluster.nics_per_node)
                                                      : 1.0;
    rate_per_hour += c.rate_per_unit_hour * units;
  }
  return rate_per_hour / kSecondsPerHour;
}

// The events one trial of the campaign would hold, estimated from the sections before any
// step is simulated: checkpoints at a fixed interval, failures, stragglers and loss spikes.
void check_campaign_work(const JsonNode& root, const InputBundle& b) {
  const double wall_s = b.campaign.max_days * kSecondsPerDay;
  const std::string shorter = "shorten campaign.max_days or ";
  if (b.checkpointing.policy == IntervalPolicy::fixed) {
    check_rows(root.at("checkpointing").at("interval_min"),
               wall_s / b.checkpointing.fixed_interval_s, "checkpoints",
               shorter + "lengthen the interval");
  }
  if (const auto f = root.find("faults")) {
    if (const auto r = f->find("failure_rates")) {
      check_rows(*r, expected_failures_per_s(b) * wall_s, "failures", shorter + "lower the rates");
    }
    double straggler_per_gpu_hour = 0;
    for (const auto& c : b.faults.stragglers) straggler_per_gpu_hour += c.rate_per_gpu_hour;
    if (const auto st = f->find("stragglers")) {
      check_rows(*st, straggler_per_gpu_hour * b.scenario.gpus / kSecondsPerHour * wall_s,
                 "stragglers", shorter + "lower the rates");
    }
    if (const auto l = f->find("loss_spikes")) {
      check_rows(*l,
                 b.faults.loss_spikes.effective_rate_per_token() * b.scenario.training.tokens_total,
                 "loss spikes", "lower the rates");
    }
  }
}

void check_links(const InputBundle& b, const LoadOptions& options) {
  if (!options.link_names) return;
  const bool any = std::any_of(b.faults.events.begin(), b.faults.events.end(),
                               [](const ScriptedFault& e) { return !e.link.empty(); });
  if (any) {
    input::check_fault_links(b.faults, options.link_names(b.scenario.cluster, b.scenario.gpus));
  }
}

InputBundle load_bundle(const JsonDocument& document, const LoadOptions& options) {
  InputBundle b;
  b.scenario = input::parse_scenario(document);
  const JsonNode root = document.root();
  if (const auto c = root.find("campaign")) b.campaign = input::parse_campaign_settings(*c);
  if (const auto f = root.find("faults")) b.faults = input::parse_faults(*f, b.scenario);
  if (const auto c = root.find("checkpointing")) b.checkpointing = input::parse_checkpointing(*c);
  if (const auto c = root.find("cost")) b.cost = input::parse_cost(*c);
  check_campaign_work(root, b);
  check_links(b, options);
  return b;
}

}  // namespace

InputBundle load_input(const std::string& path, const LoadOptions& options) {
  return load_input(JsonDocument::load(path), options);
}

InputBundle load_input(const JsonDocument& document, const LoadOptions& options) {
  try {
    return load_bundle(document, options);
  } catch (const ConfigError& first) {
    input::rethrow_with_table_errors(first, document);
  }
}

Scenario load_scenario(const std::string& path) {
  return load_input(path).scenario;
}

Scenario load_scenario(const JsonDocument& document) {
  return load_input(document).scenario;
}

}  // namespace clustersim
