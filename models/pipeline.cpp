#include "models/pipeline.hpp"

#include <algorithm>

namespace clustersim::models {

std::vector<int> layers_per_virtual_stage(const Scenario& s) {
  const Parallelism& par = s.parallelism;
  const int pp = par.pp;
  const int v = std::max(1, par.vpp);
  std::vector<int> out(static_cast<std::size_t>(pp * v));
  const int extra = par.layers_added_to_split();
  if (extra > 0) {
    std::fill(out.begin(), out.end(), (s.model.num_layers + extra) / (pp * v));
    if (par.embedding_in_pipeline_split) --out.front();
    if (par.loss_in_pipeline_split) --out.back();
    return out;
  }
  if (v > 1 && static_cast<int>(par.layers_per_stage.size()) == pp * v) {
    return par.layers_per_stage;  // given per virtual stage
  }
  const std::vector<int> per_rank = layers_per_stage(s);
  for (int vs = 0; vs < pp * v; ++vs) {
    out[static_cast<std::size_t>(vs)] = per_rank[static_cast<std::size_t>(vs % pp)] / v;
  }
  return out;
}

std::vector<int> layers_per_stage(const Scenario& s) {
  const int pp = s.parallelism.pp;
  const int v = std::max(1, s.parallelism.vpp);
  const std::vector<int>& given = s.parallelism.layers_per_stage;
  if (static_cast<int>(given.size()) == pp) return given;
  if ((v > 1 && static_cast<int>(given.size()) == pp * v) ||
      s.parallelism.layers_added_to_split() > 0) {
    const std::vector<int> chunks = layers_per_virtual_stage(s);
    std::vector<int> out(static_cast<std::size_t>(pp), 0);
    for (std::size_t vs = 0; vs < chunks.size(); ++vs)
      out[vs % static_cast<std::size_t>(pp)] += chunks[vs];
    return out;
  }
  // Even split; the loader requires pp x vpp to divide the layers when no split is given, but
  // spread any remainder over the first stages so that the function is total.
  std::vector<int> out(static_cast<std::size_t>(pp), s.model.num_layers / pp);
  for (int i = 0; i < s.model.num_layers % pp; ++i) ++out[static_cast<std::size_t>(i)];
  return out;
}

bool layer_recomputed(const Scenario& s, int index_in_chunk) {
  return s.training.recompute == Recompute::full &&
         (s.training.recompute_layers <= 0 || index_in_chunk < s.training.recompute_layers);
}

int recomputed_layers_on_stage(const Scenario& s, int stage) {
  const int v = std::max(1, s.parallelism.vpp);
  const int pp = s.parallelism.pp;
  const std::vector<int> chunks = layers_per_virtual_stage(s);
  int n = 0;
  for (int c = 0; c < v; ++c) {
    const int layers = chunks.at(static_cast<std::size_t>(c * pp + stage));
    for (int i = 0; i < layers; ++i) n += layer_recomputed(s, i);
  }
  return n;
}

int recomputed_layers(const Scenario& s) {
  int total = 0;
  for (int st = 0; st < s.parallelism.pp; ++st) total += recomputed_layers_on_stage(s, st);
  return total;
}

double bubble_over_ideal(int pp, int vpp, std::int64_t micro_batches, PipelineSchedule schedule) {
  if (pp <= 1 || micro_batches <= 0) return 0;
  const double v = schedule == PipelineSchedule::interleaved ? std::max(1, vpp) : 1;
  const double m = static_cast<double>(micro_batches);
  // DualPipe with T_F = T_B = T_W and F&B = F + B (no compute overlap within the pair):
  // (p/2 - 1)(F&B + B - 3W) = (p/2 - 1)(3 + 2 - 3) = p - 2, over m (F + B) = 3 m.
  if (schedule == PipelineSchedule::dualpipe) return (pp - 2) / (3 * m);
  // ZB-H1 with T_F = T_B = T_W: (p - 1)(T_F + T_B - T_W) / (m (T_F + T_B + T_W)).
  const double zb = schedule == PipelineSchedule::zb_h1 ? 3 : 1;
  return (pp - 1) / (zb * v * m);
}

double bubble_fraction_of_step(int pp, int vpp, std::int64_t micro_batches,
                               PipelineSchedule schedule) {
  const double b = bubble_over_ideal(pp, vpp, micro_batches, schedule);
  return b / (1 + b);
}

double micro_batches_in_flight(int stage, int pp, int vpp, std::int64_t micro_batches,
                               PipelineSchedule schedule) {
  const double m = static_cast<double>(std::max<std::int64_t>(1, micro_batches));
  if (pp <= 1) return 1;
  switch (schedule) {
    case PipelineSchedule::gpipe: return m;
    case PipelineSchedule::one_f_one_b: return std::min<double>(pp - stage, m);
    case PipelineSchedule::zb_h1: return std::min<double>(pp, m);
    case PipelineSchedule::dualpipe: return std::min<double>(pp + 1, m);
    case PipelineSchedule::interleaved: {
      const double v = std::max(1, vpp);
      const double chunks = (pp - stage - 1) * 2.0 + (v - 1) * pp + 1;
      return std::min(chunks, m * v) / v;
    }
  }
  return 1;
}

}  // namespace clustersim::models
