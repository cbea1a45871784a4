// Pipeline bubble and in-flight micro-batches against Narayanan et al. SC'21 §2.2,
// Korthikanti et al. §4.2.3 and Qi et al. 2024 §3.1 (ZB-H1).
#include <catch2/catch.hpp>

#include "models/pipeline.hpp"

using namespace clustersim;
using namespace clustersim::models;

TEST_CASE("the 1F1B and GPipe bubble is (p - 1) / m of the ideal time") {
  CHECK(bubble_over_ideal(2, 1, 16, PipelineSchedule::one_f_one_b) == Approx(1.0 / 16));
  CHECK(bubble_over_ideal(8, 1, 64, PipelineSchedule::gpipe) == Approx(7.0 / 64));
  CHECK(bubble_fraction_of_step(2, 1, 16, PipelineSchedule::one_f_one_b) == Approx(1.0 / 17));
  CHECK(bubble_over_ideal(1, 1, 16, PipelineSchedule::one_f_one_b) == 0);
}

TEST_CASE("interleaving v chunks per rank divides the bubble by v") {
  CHECK(bubble_over_ideal(8, 3, 64, PipelineSchedule::interleaved) == Approx(7.0 / (3 * 64)));
}

TEST_CASE("the ZB-H1 bubble is a third of 1F1B's with equal F, B and W passes") {
  // Qi et al. 2024 section 3.1: (p - 1)(T_F + T_B - T_W) / (m (T_F + T_B + T_W)) = (p - 1) / 3m.
  CHECK(bubble_over_ideal(4, 1, 8, PipelineSchedule::zb_h1) == Approx(3.0 / 24));
  CHECK(bubble_fraction_of_step(4, 1, 8, PipelineSchedule::zb_h1) == Approx(3.0 / 27));
}

TEST_CASE("ZB-H1 holds p micro-batches on every stage, at most m") {
  for (int i = 0; i < 4; ++i) {
    CHECK(micro_batches_in_flight(i, 4, 1, 16, PipelineSchedule::zb_h1) == 4);
  }
  CHECK(micro_batches_in_flight(3, 8, 1, 3, PipelineSchedule::zb_h1) == 3);
}

TEST_CASE("1F1B holds p - i micro-batches on stage i, at most m") {
  for (int i = 0; i < 4; ++i) {
    CHECK(micro_batches_in_flight(i, 4, 1, 16, PipelineSchedule::one_f_one_b) == 4 - i);
  }
  CHECK(micro_batches_in_flight(0, 8, 1, 3, PipelineSchedule::one_f_one_b) == 3);
  CHECK(micro_batches_in_flight(0, 1, 1, 16, PipelineSchedule::one_f_one_b) == 1);
}

TEST_CASE("GPipe holds every micro-batch of the step") {
  CHECK(micro_batches_in_flight(0, 4, 1, 16, PipelineSchedule::gpipe) == 16);
}

TEST_CASE("the interleaved first stage holds p (1 + (p - 1)/(p v)) micro-batches") {
  // Korthikanti et al. §4.2.3: the first stage's activation memory grows by 1 + (p-1)/(p m_v).
  const double p = 8, v = 3;
  CHECK(micro_batches_in_flight(0, 8, 3, 64, PipelineSchedule::interleaved) ==
        Approx(p * (1 + (p - 1) / (p * v))));
  // The last stage warms up (v - 1) p chunks plus one: (v - 1) + 1/v micro-batches' worth.
  CHECK(micro_batches_in_flight(7, 8, 3, 64, PipelineSchedule::interleaved) ==
        Approx(((v - 1) * p + 1) / v));
}

TEST_CASE("counting the embedding and the loss in the split takes a layer from each end") {
  // Megatron-Core get_num_layers_to_build: Llama 3.1 405B's 126 layers + embedding + loss = 128
  // over pp 8 x vpp 8 = 64 virtual stages, 2 each; the first virtual stage (rank 0, chunk 0)
  // and the last (rank 7, chunk 7) build one Transformer layer fewer.
  Scenario s;
  s.model.num_layers = 126;
  s.parallelism.pp = 8;
  s.parallelism.vpp = 8;
  s.parallelism.embedding_in_pipeline_split = true;
  s.parallelism.loss_in_pipeline_split = true;
  const std::vector<int> chunks = layers_per_virtual_stage(s);
  REQUIRE(chunks.size() == 64);
  CHECK(chunks.front() == 1);
  CHECK(chunks.back() == 1);
  for (std::size_t vs = 1; vs + 1 < chunks.size(); ++vs) CHECK(chunks[vs] == 2);
  // Rank r holds virtual stages r, r + 8, ..., r + 56.
  CHECK(layers_per_stage(s) == std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15});
  // Full recomputation of the first layer of each chunk: one per chunk, 8 per rank.
  s.training.recompute = Recompute::full;
  s.training.recompute_layers = 1;
  for (int st = 0; st < 8; ++st) CHECK(recomputed_layers_on_stage(s, st) == 8);
  // Only the embedding counted: 127 layers over 127 + 1 = 128 -> the first loses one.
  s.model.num_layers = 127;
  s.parallelism.loss_in_pipeline_split = false;
  CHECK(layers_per_stage(s) == std::vector<int>{15, 16, 16, 16, 16, 16, 16, 16});
}

TEST_CASE("layers_per_stage with one entry per virtual stage is a pipeline layout") {
  // Megatron-Bridge's DeepSeek-V3 layout for pp 4, vpp 4 (recipes/deepseek/deepseek_v3.py):
  // embedding + 4 layers, 14 virtual stages of 4, then 1 layer + MTP + loss: 4 + 56 + 1 = 61.
  Scenario s;
  s.model.num_layers = 61;
  s.parallelism.pp = 4;
  s.parallelism.vpp = 4;
  s.parallelism.layers_per_stage = std::vector<int>(16, 4);
  s.parallelism.layers_per_stage.back() = 1;
  CHECK(layers_per_virtual_stage(s) == s.parallelism.layers_per_stage);
  // Rank r holds virtual stages r, r + 4, r + 8, r + 12; rank 3 ends with the 1-layer stage.
  CHECK(layers_per_stage(s) == std::vector<int>{16, 16, 16, 13});
  // Full recomputation of the first 2 layers of each chunk: 2 x 4 chunks, but 1 on the last.
  s.training.recompute = Recompute::full;
  s.training.recompute_layers = 2;
  CHECK(recomputed_layers_on_stage(s, 0) == 8);
  CHECK(recomputed_layers_on_stage(s, 3) == 7);
}
