// The key tables of every object of a scenario file and of the model, GPU and cluster presets
// (input/key_spec.hpp says what an entry holds). The loaders accept exactly these keys, in
// this order, and read their bounds and names from here; `clustersim schema` prints them.
#pragma once

#include <string_view>
#include <vector>

#include "core/faults.hpp"
#include "input/key_spec.hpp"

namespace clustersim::input {

// Scenario and execution (input/scenario_loader.cpp, input/execution.cpp).
const ObjectSpec& scenario_keys();
const ObjectSpec& parallelism_keys();
const ObjectSpec& training_keys();
const ObjectSpec& tp_overlap_sms_keys();
const ObjectSpec& comm_keys();
const ObjectSpec& compression_keys();

// Presets (input/presets.cpp, input/model_blocks.cpp).
const ObjectSpec& model_keys();
const ObjectSpec& moe_keys();
const ObjectSpec& mla_keys();
const ObjectSpec& gpu_keys();
const ObjectSpec& peak_tflops_keys();
const ObjectSpec& cluster_keys();
const ObjectSpec& fabric_keys();

// Run sections (input/faults_section.cpp, input/run_sections.cpp).
const ObjectSpec& faults_keys();
const ObjectSpec& event_keys(FaultKind kind);
const ObjectSpec& failure_rates_keys();
const ObjectSpec& cause_keys();
const ObjectSpec& stragglers_keys();
// A straggler class acting on GPUs (speed_factor) or on links (bandwidth_factor).
const ObjectSpec& straggler_class_keys(bool link);
const ObjectSpec& loss_spikes_keys();
const ObjectSpec& sample_filter_keys();
const ObjectSpec& drift_keys();
const ObjectSpec& mitigations_keys();
const ObjectSpec& checkpointing_keys();
const ObjectSpec& restart_keys();
const ObjectSpec& cost_keys();
const ObjectSpec& campaign_keys();

// Every table above, scenario first.
std::vector<const ObjectSpec*> all_object_specs();
// The table named `name`, or nullptr.
const ObjectSpec* find_object_spec(std::string_view name);

}  // namespace clustersim::input
