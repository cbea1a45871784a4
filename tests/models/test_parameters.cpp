// Parameter counts against hand calculations and published totals.
#include <catch2/catch.hpp>

#include "input/scenario_loader.hpp"
#include "models/transformer.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {
// Relative tolerance for comparisons with published totals, which are rounded to 4 digits.
constexpr double kPublishedTolerance = 0.005;
}  // namespace

TEST_CASE("Llama-2-70B has 68.98 billion parameters, component by component") {
  const ModelSpec m = load_model_preset("llama2-70b");
  const ParameterCounts p = count_parameters(m);
  // Hand calculation: h = 8192, 8 KV heads of 128 -> K/V width 1024, SwiGLU f = 28672.
  const double h = 8192, kv = 1024, f = 28672, V = 32000;
  CHECK(p.embedding == V * h);
  CHECK(p.position_embedding == 0);
  CHECK(p.attention_per_layer == 2 * h * h + 2 * h * kv);
  CHECK(p.mlp_per_layer == 3 * h * f);
  CHECK(p.norms_per_layer == 2 * h);  // two RMSNorm gains
  CHECK(p.final_norm == h);
  CHECK(p.lm_head == V * h);  // untied
  CHECK(p.total() == 80 * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + 2 * V * h + h);
  // Meta's model card: 70B; the exact count of the released checkpoint is 68,976,648,192.
  CHECK(p.total() == Approx(68.98e9).epsilon(kPublishedTolerance));
  CHECK(p.total() == 68976648192.0);
}

TEST_CASE("GPT-3 175B has 174.6 billion parameters with biases, LayerNorm and tied embeddings") {
  const ParameterCounts p = count_parameters(load_model_preset("gpt3-175b"));
  const double h = 12288, V = 50257, s = 2048;
  CHECK(p.attention_per_layer == 4 * h * h + 4 * h);
  CHECK(p.mlp_per_layer == 8 * h * h + 4 * h + h);
  CHECK(p.norms_per_layer == 4 * h);
  CHECK(p.position_embedding == s * h);
  CHECK(p.lm_head == 0);
  CHECK(p.total() == 96 * (12 * h * h + 13 * h) + V * h + s * h + 2 * h);
  // Narayanan et al. SC'21 Table 2 name the GPT-3 shape "174.6B".
  CHECK(p.total() == Approx(174.6e9).epsilon(kPublishedTolerance));
}

TEST_CASE("Llama-3-405B has 405.8 billion parameters") {
  const ParameterCounts p = count_parameters(load_model_preset("llama3-405b"));
  const double h = 16384, kv = 8 * 128, f = 53248, V = 128256;
  CHECK(p.total() == 126 * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + 2 * V * h + h);
  // Llama 3 paper: 405B; the released checkpoint has 405.85e9.
  CHECK(p.total() == Approx(405.8e9).epsilon(kPublishedTolerance));
}

TEST_CASE("Llama 3 8B and 70B land on their published sizes") {
  // Hugging Face model cards of meta-llama/Meta-Llama-3-8B and -70B: 8.03B and 70.6B parameters
  // (safetensors totals 8,030,261,248 and 70,553,706,496).
  CHECK(count_parameters(load_model_preset("llama3-8b")).total() ==
        Approx(8.03e9).epsilon(kPublishedTolerance));
  CHECK(count_parameters(load_model_preset("llama3-70b")).total() ==
        Approx(70.55e9).epsilon(kPublishedTolerance));
}

TEST_CASE("Llama 3.1 presets hold exactly the parameters of the released weights") {
  // Per layer: attention 2h² + 2h·1024 (8 KV heads of 128), SwiGLU 3hf, two RMSNorm gains 2h;
  // untied embedding and output 2Vh (V = 128,256) and the final norm h. By hand:
  //   8B    32·(2·4096² + 2·4096·1024 + 3·4096·14336 + 2·4096) + 2·128256·4096 + 4096
  //         = 32·218,112,000 + 1,050,673,152 + 4,096 = 8,030,261,248
  //   70B   80·855,654,400 + 2,101,346,304 + 8,192 = 70,553,706,496
  //   405B  126·3,187,703,808 + 4,202,692,608 + 16,384 = 405,853,388,800
  // the safetensors totals of meta-llama/Llama-3.1-8B, -70B and -405B.
  CHECK(count_parameters(load_model_preset("llama31-8b")).total() == 8030261248.0);
  CHECK(count_parameters(load_model_preset("llama31-70b")).total() == 70553706496.0);
  CHECK(count_parameters(load_model_preset("llama31-405b")).total() == 405853388800.0);
  // The same architectures as the 8K-context Llama 3 presets.
  CHECK(count_parameters(load_model_preset("llama31-8b")).total() ==
        count_parameters(load_model_preset("llama3-8b")).total());
  CHECK(load_model_preset("llama31-405b").max_seq_len == 131072);
}

TEST_CASE("BLOOM-176B has the released 176,247,271,424 parameters with its embedding LayerNorm") {
  const ParameterCounts p = count_parameters(load_model_preset("bloom-176b"));
  // h = 14336, 70 layers of 12h² + 13h (biases, two LayerNorms), the tied embedding padded to
  // V = 250,880 (--pad-vocab-size-to), ALiBi (no position parameters), the final LayerNorm 2h:
  //   70·2,466,437,120 + 3,596,615,680 + 28,672 = 176,247,242,752.
  const double h = 14336, V = 250880;
  CHECK(p.position_embedding == 0);
  CHECK(p.lm_head == 0);
  CHECK(p.total() == 70 * (12 * h * h + 13 * h) + V * h + 2 * h);
  CHECK(p.total() == 176247242752.0);
  // The BigScience model card's total also holds the embedding LayerNorm (2h) the preset leaves
  // out.
  CHECK(p.total() + 2 * h == 176247271424.0);
}

TEST_CASE("the SC'21 GPT family follows Narayanan et al.'s parameter formula") {
  // SC'21 eq. (2): P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), V = 51200, s = 2048.
  struct Row {
    const char* preset;
    double l, h, published;
  };
  const Row rows[] = {
      {"gpt-1.7b-sc21", 24, 2304, 1.7e9},       {"gpt-3.6b-sc21", 30, 3072, 3.6e9},
      {"gpt-7.5b-sc21", 36, 4096, 7.5e9},       {"gpt-18.4b-sc21", 40, 6144, 18.4e9},
      {"gpt-39.1b-sc21", 48, 8192, 39.1e9},     {"gpt-76.1b-sc21", 60, 10240, 76.1e9},
      {"gpt-145.6b-sc21", 80, 12288, 145.6e9},  {"gpt-310.1b-sc21", 96, 16384, 310.1e9},
      {"gpt-529.6b-sc21", 105, 20480, 529.6e9}, {"gpt-1008b-sc21", 128, 25600, 1008.0e9}};
  for (const Row& r : rows) {
    INFO(r.preset);
    const double V = 51200, s = 2048;
    const double eq2 = 12 * r.l * r.h * r.h * (1 + 13 / (12 * r.h) + (V + s) / (12 * r.l * r.h));
    const double counted = count_parameters(load_model_preset(r.preset)).total();
    // Eq. (2) leaves out the final LayerNorm (2h parameters).
    CHECK(counted == Approx(eq2 + 2 * r.h).epsilon(1e-12));
    // Table 1's labels are rounded to 2-4 significant digits; from 7.5B up they are within 0.5%
    // (the 1.7B and 3.6B labels are 3% and 1% above eq. (2), a rounding of the paper's own).
    if (r.published >= 7.5e9) CHECK(counted == Approx(r.published).epsilon(kPublishedTolerance));
  }
}

TEST_CASE("a tensor-parallel rank holds 1/tp of the layer's matrices and the replicated parts") {
  SECTION("Llama-2-70B at tp 8: one KV head per rank, norms replicated") {
    const ModelSpec m = load_model_preset("llama2-70b");
    const double h = 8192, f = 28672, d = 128;
    CHECK(layer_parameters_per_tp_rank(m, 8) ==
          Approx(h * h / 8 + 2 * h * d + h * h / 8 + 3 * h * f / 8 + 2 * h));
    CHECK(layer_parameters_per_tp_rank(m, 1) == Approx(count_parameters(m).per_layer()));
  }
  SECTION("GPT-3 at tp 8: row-parallel biases replicated") {
    const ModelSpec m = load_model_preset("gpt3-175b");
    const double h = 12288;
    // Q,K,V,O weights 4h^2/8; QKV biases 3h/8; O bias h; MLP 8h^2/8; FFN-in bias 4h/8; out h;
    // two LayerNorms 4h.
    CHECK(layer_parameters_per_tp_rank(m, 8) ==
          Approx(4 * h * h / 8 + 3 * h / 8 + h + 8 * h * h / 8 + 4 * h / 8 + h + 4 * h));
  }
  SECTION("GQA with more ranks than KV heads replicates one KV head per rank") {
    const ModelSpec m = load_model_preset("llama3-8b");  // 8 KV heads
    const double h = 4096, d = 128, f = 14336;
    CHECK(layer_parameters_per_tp_rank(m, 16) ==
          Approx(2 * h * h / 16 + 2 * h * d + 3 * h * f / 16 + 2 * h));
  }
}
