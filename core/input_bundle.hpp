// Everything a command reads from its input files, loaded and validated in one pass by the
// loader (input/input_loader.hpp): the scenario (model, system, execution) and the sections of
// the whole run. Plain structs; every layer may use them.
#pragma once

#include "core/faults.hpp"
#include "core/run_sections.hpp"
#include "core/scenario.hpp"

namespace clustersim {

struct InputBundle {
  Scenario scenario;
  FaultsConfig faults;             // defaults (no faults) without a "faults" section
  CheckpointConfig checkpointing;  // defaults (no checkpoints) without "checkpointing"
  CostConfig cost;                 // DeepSeek-V3's H800 price without "cost"
  CampaignSettings campaign;       // defaults without "campaign"
};

}  // namespace clustersim
