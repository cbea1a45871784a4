// System parameters (core/system_calibration.hpp) as the compute cost model applies them: each
// acts on exactly the kernels its definition names, and a calibration file's fitted block is
// read, range-checked and overridden by a GPU's override, or borrowed from another file
// (system_from). Expected values by hand.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "models/compute_cost.hpp"
#include "tests/workload/fixtures.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const std::string kCalibration =
    std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/compute_efficiency.json";

ComputeCostModel with(const SystemValues& values) {
  GpuSpec gpu = test::h100_like();
  gpu.system_override = values;
  return ComputeCostModel(gpu, test::nominal_calibration());
}

ComputeCalibration with_system_block(const std::string& block) {
  // The shipped file's own `system` block (if it has one) replaced by `block`, and its measured
  // element-wise share left out, so that the fitted element-wise fraction applies.
  nlohmann::json root = JsonDocument::load(kCalibration).root().raw();
  root["system"] = nlohmann::json::parse(block);
  root["memory"].erase("element_wise");
  return load_compute_calibration(JsonDocument::parse(root.dump(), "fitted.json"));
}

}  // namespace

TEST_CASE("The sustained tensor fraction divides GEMM and attention compute time, nothing else") {
  const ComputeCostModel nominal = with({});
  const ComputeCostModel sustained = with({{SystemParameterId::tensor_sustained_fraction, 0.8}});
  const GemmShape g{8192, 8192, 8192};
  CHECK(sustained.gemm(g, Dtype::bf16).compute_s ==
        Approx(nominal.gemm(g, Dtype::bf16).compute_s / 0.8));
  CHECK(sustained.attention(1e12, 1e9, Dtype::bf16, 4096).compute_s ==
        Approx(nominal.attention(1e12, 1e9, Dtype::bf16, 4096).compute_s / 0.8));
  CHECK(sustained.attention_backward(1e12, 1e9, Dtype::bf16, 4096).compute_s ==
        Approx(nominal.attention_backward(1e12, 1e9, Dtype::bf16, 4096).compute_s / 0.8));
  // An element-wise kernel is memory-bound: unchanged.
  CHECK(sustained.memory_op(1e9).time_s == Approx(nominal.memory_op(1e9).time_s));
}

TEST_CASE("The element-wise bandwidth fraction slows memory-bound kernels by its inverse") {
  const ComputeCostModel nominal = with({});
  const ComputeCostModel slow = with({{SystemParameterId::elementwise_hbm_fraction, 0.5}});
  // 1 GB at 3.35 TB/s x (3.04 / 3.35) achieved = 1 / 3.04e12 s; at half of that, twice as long.
  CHECK(nominal.memory_op(1e9).memory_s == Approx(1e9 / 3.04e12));
  CHECK(slow.memory_op(1e9).memory_s == Approx(2e9 / 3.04e12));
}

TEST_CASE(
    "PyTorch's own element-wise kernels run at the copy's rate whatever the fitted fraction") {
  const ComputeCostModel slow = with({{SystemParameterId::elementwise_hbm_fraction, 0.5}});
  // A framework kernel: 1 GB at half of 3.04 TB/s. PyTorch's copy, fill or add: at 3.04 TB/s
  // (torch.add ran at 1.05 times a copy on the H200, taken as the copy's rate).
  CHECK(slow.memory_op(1e9).memory_s == Approx(2e9 / 3.04e12));
  CHECK(slow.pytorch_op(1e9).memory_s == Approx(1e9 / 3.04e12));
  CHECK(slow.pytorch_op(1e9).time_s == Approx(1e9 / 3.04e12 + 4e-6));  // and one launch
  CHECK(slow.hbm_Bps(KernelSource::pytorch) == Approx(3.04e12));
  // A calibration whose HBM figure was measured on an element-wise kernel has one rate for both.
  ComputeCalibration kernel_measured = test::nominal_calibration();
  kernel_measured.hbm_measured = HbmMeasurement::element_wise_kernel;
  GpuSpec gpu = test::h100_like();
  gpu.system_override = {{SystemParameterId::elementwise_hbm_fraction, 0.5}};
  const ComputeCostModel b(gpu, kernel_measured);
  CHECK(b.memory_op(1e9).memory_s == Approx(1e9 / 3.04e12));
  CHECK(b.pytorch_op(1e9).memory_s == Approx(1e9 / 3.04e12));
}

TEST_CASE("A measured element-wise share replaces the fitted fraction for framework kernels") {
  // The Hopper file's own: F.layer_norm and F.rms_norm on an H200 at 2.419 and 2.668 TB/s against
  // a 4.177 TB/s copy, their midpoint 0.609 of it, carried to the H100's copy rate, 3.04 TB/s.
  const ComputeCalibration shipped = load_compute_calibration(kCalibration);
  REQUIRE(shipped.element_wise_share);
  CHECK(*shipped.element_wise_share == Approx((2.419 / 4.177 + 2.668 / 4.177) / 2).epsilon(1e-3));
  GpuSpec gpu = test::h100_like();
  gpu.system_override = {{SystemParameterId::elementwise_hbm_fraction, 0.5}};
  const ComputeCostModel m(gpu, shipped);
  // 1 GB of a framework kernel at 0.609 x 3.04 TB/s, whatever fraction a fit or override gives;
  // PyTorch's own kernels at the copy's rate.
  CHECK(m.memory_op(1e9).memory_s == Approx(1e9 / (0.609 * 3.04e12)));
  CHECK(m.pytorch_op(1e9).memory_s == Approx(1e9 / 3.04e12));
  // `run` and `check` say the fraction is not applied and name the measured share.
  const std::string line = describe_system_parameters(gpu, shipped);
  CHECK_THAT(line, Catch::Contains("elementwise_hbm_fraction 0.5 (not applied: element-wise "
                                   "kernels at the measured 0.609 of the copy's rate)"));
  CHECK_THAT(line, Catch::EndsWith("element-wise kernels at 0.609 of the stream copy's rate"));
}

TEST_CASE("A measured element-wise share is refused where it cannot be one") {
  const auto load_with = [](const nlohmann::json& memory) {
    nlohmann::json root = JsonDocument::load(kCalibration).root().raw();
    root["memory"] = memory;
    return load_compute_calibration(JsonDocument::parse(root.dump(), "share.json"));
  };
  nlohmann::json memory = JsonDocument::load(kCalibration).root().raw()["memory"];
  memory["element_wise"]["share_of_copy"] = 1.2;
  CHECK_THROWS_WITH(load_with(memory), Catch::Contains("/memory/element_wise/share_of_copy") &&
                                           Catch::Contains("at most 1"));
  // A share of a copy needs a copy: not beside an element-wise kernel's own rate.
  memory["element_wise"]["share_of_copy"] = 0.6;
  memory["hbm_efficiency"]["measured"] = "element_wise_kernel";
  CHECK_THROWS_WITH(load_with(memory),
                    Catch::Contains("/memory/element_wise") && Catch::Contains("stream copy"));
  memory["hbm_efficiency"].erase("measured");
  memory["element_wise"]["source"] = "";
  CHECK_THROWS_WITH(load_with(memory), Catch::Contains("citation"));
}

TEST_CASE("The kernel gap replaces the GPU's launch overhead once per kernel") {
  const ComputeCostModel nominal = with({});
  CHECK(nominal.kernel_gap_s() == Approx(4e-6));  // the preset's kernel_launch_us
  const ComputeCostModel gapped = with({{SystemParameterId::kernel_gap_us, 10.0}});
  CHECK(gapped.kernel_gap_s() == Approx(10e-6));
  // Three identical GEMMs: three launches of 10 us on top of their compute.
  const OpCost three = gapped.gemm({4096, 4096, 4096}, Dtype::bf16, 3);
  CHECK(three.kernels == Approx(3));
  CHECK(three.time_s - three.compute_s == Approx(30e-6));
  CHECK(gapped.launches(1536).time_s == Approx(1536 * 10e-6));
}

TEST_CASE("The host time per kernel replaces the measured default, and graphs still drop it") {
  const ComputeCostModel nominal = with({});
  CHECK(nominal.host_per_kernel_s() == Approx(kHostPerKernelS));
  const ComputeCostModel slow_host = with({{SystemParameterId::host_us_per_kernel, 40.0}});
  CHECK(slow_host.host_per_kernel_s() == Approx(40e-6));
  // Nothing else moves: a GEMM's time and the gap between queued kernels stay as they were.
  const GemmShape g{4096, 4096, 4096};
  CHECK(slow_host.gemm(g, Dtype::bf16).time_s == Approx(nominal.gemm(g, Dtype::bf16).time_s));
  CHECK(slow_host.kernel_gap_s() == Approx(nominal.kernel_gap_s()));
  // A step replayed from a CUDA graph has no host dispatch, fitted or not.
  CHECK(slow_host.replayed_from_cuda_graph().host_per_kernel_s() == 0);
  const std::string line = describe_system_parameters(
      [] {
        GpuSpec gpu = test::h100_like();
        gpu.system_override = SystemValues{{SystemParameterId::host_us_per_kernel, 40.0}};
        return gpu;
      }(),
      test::nominal_calibration());
  CHECK_THAT(line, Catch::Contains("host_us_per_kernel 40"));
  CHECK_THAT(line, !Catch::Contains("us of host time per kernel issued"));
}

TEST_CASE("A calibration file's fitted system block is read and a GPU override replaces it") {
  const ComputeCalibration cal = with_system_block(
      R"({"parameters": {"tensor_sustained_fraction": 0.9, "kernel_gap_us": 7},
          "fit": {"note": "test", "fitted_on": ["a", "b"], "in_sample_mape_pct": 3,
                  "cross_validated_mape_pct": 5,
                  "folds": [{"held_out_source": "s1", "held_out_cases": ["a"],
                             "parameters": {"tensor_sustained_fraction": 0.95}}]}})");
  CHECK(cal.system.find(SystemParameterId::tensor_sustained_fraction) == 0.9);
  CHECK(cal.system.values_without("s1").at(SystemParameterId::tensor_sustained_fraction) == 0.95);
  CHECK(cal.system.values_without("other").at(SystemParameterId::kernel_gap_us) == 7);
  const ComputeCostModel fitted(test::h100_like(), cal);
  CHECK(fitted.tensor_sustained_fraction() == Approx(0.9));
  CHECK(fitted.kernel_gap_s() == Approx(7e-6));
  GpuSpec gpu = test::h100_like();
  gpu.system_override = SystemValues{{SystemParameterId::tensor_sustained_fraction, 0.75}};
  const ComputeCostModel overridden(gpu, cal);
  CHECK(overridden.tensor_sustained_fraction() == Approx(0.75));
  CHECK(overridden.kernel_gap_s() == Approx(4e-6));  // the override holds no gap: the preset's
}

TEST_CASE("A fitted value outside its plausible range is refused at its JSON path") {
  try {
    with_system_block(R"({"parameters": {"tensor_sustained_fraction": 1.3}})");
    FAIL("accepted a tensor fraction of 1.3");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("/system/parameters/tensor_sustained_fraction"));
    CHECK_THAT(e.what(), Catch::Contains("plausible range"));
  }
  CHECK_THROWS_AS(with_system_block(R"({"parameters": {"clock_boost": 1}})"), ConfigError);
}

TEST_CASE("run and check name fitted system parameters as fitted") {
  const ComputeCalibration fitted = with_system_block(
      R"({"parameters": {"tensor_sustained_fraction": 0.9, "kernel_gap_us": 7},
          "fit": {"note": "test", "fitted_on": ["a", "b", "c"]}})");
  const std::string line = describe_system_parameters(test::h100_like(), fitted);
  CHECK_THAT(line, Catch::Contains("tensor_sustained_fraction 0.9, kernel_gap_us 7"));
  CHECK_THAT(line, Catch::Contains("FITTED to 3 published runs"));
  // The host's time per kernel is measured, not fitted (models/compute_cost.hpp).
  CHECK_THAT(line, Catch::EndsWith("measured: 22.8 us of host time per kernel issued"));
  const ComputeCalibration no_gap = with_system_block(
      R"({"parameters": {"tensor_sustained_fraction": 0.9},
          "fit": {"note": "test", "fitted_on": ["a"]}})");
  // Without a fitted gap the GPU preset's (4 us for this test GPU) is named as measured.
  CHECK_THAT(describe_system_parameters(test::h100_like(), no_gap),
             Catch::Contains("measured: 4 us between queued kernels, 22.8 us of host time"));
  // A fitted value at an end of its range (0.70-1.00, 0-20 us) says so.
  const ComputeCalibration bounded = with_system_block(
      R"({"parameters": {"tensor_sustained_fraction": 1.0, "kernel_gap_us": 0},
          "fit": {"note": "test", "fitted_on": ["a", "b", "c"]}})");
  CHECK_THAT(describe_system_parameters(test::h100_like(), bounded),
             Catch::Contains("tensor_sustained_fraction 1 (its upper bound), kernel_gap_us 0 "
                             "(its lower bound)"));
  GpuSpec gpu = test::h100_like();
  gpu.system_override = SystemValues{};
  CHECK_THAT(describe_system_parameters(gpu, fitted), Catch::StartsWith("nominal"));
}

TEST_CASE("The 500 W H100's kernel efficiencies are the 700 W part's, in a file of its own") {
  // Its own file only so that its system parameters are fitted apart: based on the 700 W file,
  // it holds no kernel figures of its own, and its fit is not the 700 W part's.
  const std::string path =
      std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/compute_efficiency-h100-500w.json";
  const auto part = JsonDocument::load(path);
  CHECK(part.root().raw().at("base").at("file") == "compute_efficiency.json");
  for (const char* section : {"gemm", "attention", "memory"}) {
    INFO(section);
    CHECK_FALSE(part.root().has(section));
  }
  const ComputeCalibration h500 = load_compute_calibration(path);
  const ComputeCalibration h700 = load_compute_calibration(kCalibration);
  CHECK(h500.attention.forward.at(Dtype::bf16).at(8192) ==
        h700.attention.forward.at(Dtype::bf16).at(8192));
  CHECK(h500.hbm_efficiency == h700.hbm_efficiency);
  CHECK(h500.element_wise_share == h700.element_wise_share);
  CHECK(h500.system.borrowed_from.empty());
  CHECK(h500.system.find(SystemParameterId::tensor_sustained_fraction) !=
        h700.system.find(SystemParameterId::tensor_sustained_fraction));
}

namespace {

// A directory of calibration files for the system_from tests, removed when it goes.
struct CalibrationDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("clustersim-system-from-" + std::to_string(::getpid()));
  CalibrationDir() { std::filesystem::create_directories(dir); }
  ~CalibrationDir() { std::filesystem::remove_all(dir); }
  // The shipped file's data sections with `extra` merged in, written as `name`.
  std::string write(const std::string& name, const std::string& extra) const {
    nlohmann::json root = JsonDocument::load(kCalibration).root().raw();
    root.erase("system");
    root.update(nlohmann::json::parse(extra));
    const std::string path = (dir / name).string();
    std::ofstream(path) << root.dump();
    return path;
  }
  // `text` as it is, written as `name`.
  std::string write_raw(const std::string& name, const std::string& text) const {
    const std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
};

const char* kFitted = R"({"system": {"parameters": {"tensor_sustained_fraction": 0.88,
    "kernel_gap_us": 12}, "fit": {"fitted_on": ["a", "b"]}}})";
const char* kBorrowing = R"({"system_from": {"file": "fitted.json", "why": "the same die"}})";

}  // namespace

TEST_CASE("A calibration without a fit of its own takes the fit its system_from names") {
  const CalibrationDir d;
  d.write("fitted.json", kFitted);
  const ComputeCalibration cal = load_compute_calibration(d.write("part.json", kBorrowing));
  CHECK(cal.system.find(SystemParameterId::tensor_sustained_fraction) == 0.88);
  CHECK(cal.system.find(SystemParameterId::kernel_gap_us) == 12);
  CHECK(cal.system.borrowed_from == "fitted.json");
  const ComputeCostModel model(test::h100_like(), cal);
  CHECK(model.kernel_gap_s() == Approx(12e-6));
  const std::string line = describe_system_parameters(test::h100_like(), cal);
  CHECK_THAT(line, Catch::Contains("FITTED to 2 published runs of another GPU"));
  CHECK_THAT(line, Catch::Contains("fitted.json"));
  // A fit of the file's own (what `calibrate --update` writes) wins over the borrowed one.
  const ComputeCalibration own = load_compute_calibration(
      d.write("own.json", R"({"system_from": {"file": "fitted.json", "why": "the same die"},
                     "system": {"parameters": {"kernel_gap_us": 3}}})"));
  CHECK(own.system.find(SystemParameterId::kernel_gap_us) == 3);
  CHECK(own.system.borrowed_from.empty());
}

TEST_CASE("A system_from that names no fit is refused at its JSON path") {
  const CalibrationDir d;
  d.write("unfitted.json", "{}");
  d.write("fitted.json", kFitted);
  d.write("borrowing.json", kBorrowing);
  const auto refused = [&](const std::string& extra, const std::string& why) {
    try {
      load_compute_calibration(d.write("part.json", extra));
      FAIL("accepted " << extra);
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("part.json"));
      CHECK_THAT(e.what(), Catch::Contains("/system_from"));
      CHECK_THAT(e.what(), Catch::Contains(why));
    }
  };
  refused(R"({"system_from": {"file": "missing.json", "why": "x"}})", "no such file");
  refused(R"({"system_from": {"file": "unfitted.json", "why": "x"}})", "no fitted system block");
  refused(R"({"system_from": {"file": "borrowing.json", "why": "x"}})", "borrows");
  refused(R"({"system_from": {"file": "fitted.json", "why": ""}})", "why");
}

TEST_CASE("The 500 W H100 has a fit of its own, cross-validated over its two sources") {
  // torchtitan's tables and torchao's float8 README measure this part: its fit is its own, on
  // their runs only, with each source held out in a fold.
  const ComputeCalibration part = load_compute_calibration(
      std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/compute_efficiency-h100-500w.json");
  CHECK(part.system.borrowed_from.empty());
  REQUIRE_FALSE(part.system.fitted_on.empty());
  for (const std::string& id : part.system.fitted_on)
    CHECK((id.rfind("torchtitan_", 0) == 0 || id.rfind("torchao_", 0) == 0));
  REQUIRE(part.system.folds.size() == 2);
  for (const auto& fold : part.system.folds) {
    CHECK((fold.held_out_source == "torchtitan" || fold.held_out_source == "torchao"));
    for (const std::string& id : fold.held_out_cases)
      CHECK(id.rfind(fold.held_out_source + "_", 0) == 0);
  }
}

TEST_CASE("A calibration based on another takes every section it leaves out from it") {
  const CalibrationDir d;
  d.write("fitted.json", kFitted);
  // Only the fused attention kernel measured apart: 500 of 1,000 TFLOPS at every length.
  const ComputeCalibration based = load_compute_calibration(d.write_raw("based.json", R"({
      "base": {"file": "fitted.json", "why": "the same die"},
      "attention": {"kernel": "k", "bf16": {"tflops": 500, "peak_tflops": 1000,
                                             "source": "a measurement"}}})"));
  const ComputeCalibration shipped = load_compute_calibration(kCalibration);
  const ComputeCostModel model(test::h100_like(), based);
  const ComputeCostModel hopper(test::h100_like(), shipped);
  CHECK(model.attention_efficiency(Dtype::bf16, 8192) == Approx(0.5));
  CHECK(hopper.attention_efficiency(Dtype::bf16, 8192) != Approx(0.5));
  // GEMM curves and memory are the base's (the shipped Hopper data).
  for (const Dtype dtype : {Dtype::bf16, Dtype::fp8}) {
    CHECK(model.gemm_efficiency({8192, 8192, 8192}, dtype) ==
          hopper.gemm_efficiency({8192, 8192, 8192}, dtype));
  }
  CHECK(model.memory_op(1e9).memory_s == Approx(hopper.memory_op(1e9).memory_s));
  // The base's other attention kernels stay, since the file names none of its own.
  ComputeCalibration selectable = based;
  CHECK(select_attention_kernel(selectable, "flash3"));
  // The system block is the base's fit, named as taken from it.
  CHECK(based.system.find(SystemParameterId::tensor_sustained_fraction) == 0.88);
  CHECK(based.system.borrowed_from == "fitted.json");
  CHECK(based.file == (d.dir / "based.json").string());
}

TEST_CASE("A base is refused at its JSON path when missing, based itself or unexplained") {
  const CalibrationDir d;
  d.write("fitted.json", kFitted);
  d.write_raw("based.json", R"({"base": {"file": "fitted.json", "why": "x"}})");
  const auto refused = [&](const std::string& text, const std::string& path,
                           const std::string& why) {
    try {
      load_compute_calibration(d.write_raw("part.json", text));
      FAIL("accepted " << text);
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("part.json"));
      CHECK_THAT(e.what(), Catch::Contains(path));
      CHECK_THAT(e.what(), Catch::Contains(why));
    }
  };
  refused(R"({"base": {"file": "missing.json", "why": "x"}})", "/base", "no such file");
  refused(R"({"base": {"file": "based.json", "why": "x"}})", "/base", "based on another");
  refused(R"({"base": {"file": "part.json", "why": "x"}})", "/base", "based on another");
  refused(R"({"base": {"file": "fitted.json", "why": ""}})", "/base", "why");
  // Without a base, every data section is required.
  refused(R"({"attention": {}, "memory": {}})", "/gemm", "gemm");
}
