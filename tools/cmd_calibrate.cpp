// `clustersim calibrate`: fits network and compute parameters to nccl-tests logs and GEMM sweep
// results, and writes a calibration file that cluster presets reference
// (ClusterSpec::calibration).
#include <iostream>
#include <map>

#include "core/atomic_file.hpp"
#include "input/scenario_loader.hpp"
#include "models/compute_cost.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"
#include "tools/output.hpp"
#include "validation/calibration.hpp"
#include "validation/compute_efficiency.hpp"

namespace clustersim::cli {
namespace {

const std::vector<OptionSpec>& calibrate_options() {
  static const std::vector<OptionSpec> specs = {
      {"nccl", "", true, true, "nccl-tests logs (text output or -J JSON), one or more"},
      {"gemm", "", true, true,
       "GEMM/attention sweep JSON files (validation/microbench), one or more"},
      {"output", "o", true, false, "calibration file to write (atomically)"},
      {"compute-out", "", true, false,
       "also write the GEMM (and attention) efficiencies as a compute-efficiency file in the "
       "format of validation/data/compute_efficiency.json (models/compute_cost), for the step "
       "simulator to use instead of the published defaults; needs --gemm and the peaks"},
      {"compute-base", "", true, false,
       "compute-efficiency file whose sections the measurements do not cover are copied "
       "(default: validation/data/compute_efficiency.json)"},
      {"name", "", true, false, "name recorded in the file (default: the output file name)"},
      {"description", "", true, false, "free text recorded in the file"},
      {"gpu", "", true, false, "GPU preset whose dense peaks turn GEMM TFLOP/s into efficiency"},
      {"peak-tflops", "", true, true, "DTYPE=TFLOPS dense peak, e.g. bf16=989 (overrides --gpu)"},
      {"created", "", true, false, "creation date to record (default: now, UTC)"},
      {"ranks", "", true, false,
       "ranks of the nccl-tests run, when the log's \"#  Rank\" lines are missing (default: "
       "the device list, else inferred from busbw/algbw)"},
      {"nodes", "", true, false,
       "hosts of the nccl-tests run, when the log's \"#  Rank\" lines are missing"},
  };
  return specs;
}

// --ranks / --nodes: a whole number >= 1.
int positive_count(const Args& args, const std::string& name) {
  const std::string text = *args.value(name);
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1 || v > (1 << 24))
    throw UsageError("--" + name + ": not a whole number from 1 to 16777216: " + text);
  return static_cast<int>(v);
}

}  // namespace

std::string usage_calibrate() {
  return "usage: clustersim calibrate [--nccl LOG...] [--gemm FILE...] [-o calib.json]\n"
         "                            [--compute-out efficiency.json [--compute-base FILE]]\n"
         "                            [--gpu NAME | --peak-tflops DTYPE=V...] [--name N]\n\n"
         "Fits, per nccl-tests table, latency and bus bandwidth per message-size regime\n"
         "(time = latency + size * busbw_factor / busbw) and the bandwidth efficiency curve;\n"
         "and, per dtype, a GEMM model (time = launch + flops/throughput + bytes/bandwidth)\n"
         "with the efficiency of every measured shape. Prints R^2 and the worst residuals.\n"
         "--compute-out writes the GEMM efficiencies in the format the step simulator reads\n"
         "(validation/data/compute_efficiency.json): one point per smallest GEMM dimension.\n"
         "A network fit that cannot be trusted (rank or node count unknown, a negative or\n"
         "infinite latency or bandwidth, R^2 below " +
         fixed(validation::kMinNetworkFitR2, 2) +
         ") is refused: exit 1 with the reason, nothing written.\n\n" +
         describe_options(calibrate_options()) + "\n" + usage_calibrate_runs();
}

int cmd_calibrate(const std::vector<std::string>& argv) {
  for (const auto& a : argv)
    if (a == "--runs" || a.rfind("--runs=", 0) == 0) return calibrate_runs(argv);
  const Args args(argv, calibrate_options(), 0);
  const auto output = args.value("output");
  const auto compute_out = args.value("compute-out");
  if (!output && !compute_out) throw UsageError("-o FILE (or --compute-out FILE) is required");
  const auto nccl_files = args.values("nccl");
  const auto gemm_files = args.values("gemm");
  if (nccl_files.empty() && gemm_files.empty())
    throw UsageError("give at least one --nccl LOG or --gemm FILE");
  if (compute_out && gemm_files.empty()) throw UsageError("--compute-out needs --gemm FILE");
  if (args.value("compute-base") && !compute_out)
    throw UsageError("--compute-base is used only with --compute-out");

  std::map<Dtype, double> peaks;
  if (const auto gpu = args.value("gpu")) {
    const GpuSpec spec = load_gpu(JsonDocument::parse("\"" + *gpu + "\"", "--gpu").root());
    for (const auto& [dtype, flops] : spec.peak_flops) peaks[dtype] = flops / 1e12;
  }
  for (const auto& entry : args.values("peak-tflops")) {
    const auto eq = entry.find('=');
    bool ok = false;
    const Dtype dtype = eq == std::string::npos
                            ? Dtype::bf16
                            : validation::dtype_from_name(entry.substr(0, eq), &ok);
    if (!ok)
      throw UsageError("--peak-tflops wants DTYPE=TFLOPS (fp32, tf32, bf16, fp16, fp8), got " +
                       entry);
    char* end = nullptr;
    const double v = std::strtod(entry.c_str() + eq + 1, &end);
    if (*end != '\0' || !(v > 0))
      throw UsageError("--peak-tflops: not a positive number: " + entry);
    peaks[dtype] = v;
  }

  OutputFiles outputs;
  if (output) outputs.declare(*output);
  if (compute_out) outputs.declare(*compute_out);

  std::vector<validation::NcclTestsLog> nccl_logs;
  for (const auto& f : nccl_files) nccl_logs.push_back(validation::load_nccl_tests_log(f));
  std::vector<validation::GemmLog> gemm_logs;
  for (const auto& f : gemm_files) gemm_logs.push_back(validation::load_gemm_log(f));

  validation::RankOverride counts;
  if (args.value("ranks")) counts.nranks = positive_count(args, "ranks");
  if (args.value("nodes")) counts.nodes = positive_count(args, "nodes");
  if ((counts.nranks || counts.nodes) && nccl_files.empty())
    throw UsageError("--ranks and --nodes describe an nccl-tests log: give --nccl LOG");

  validation::Calibration cal = validation::calibrate(nccl_logs, gemm_logs, peaks, counts);
  std::string name = args.value_or("name", output.value_or(compute_out.value_or("")));
  if (const auto slash = name.find_last_of('/'); slash != std::string::npos && !args.value("name"))
    name = name.substr(slash + 1);
  cal.name = name;
  cal.description = args.value_or("description", "");
  cal.created = args.value_or("created", utc_now("%Y-%m-%dT%H:%M:%SZ"));

  // The compute-efficiency file is built and checked with the simulator's own loader before
  // anything is written: bad input leaves no file behind.
  std::string compute_text;
  validation::ComputeEfficiencyResult efficiency;
  if (compute_out) {
    validation::ComputeEfficiencyInputs in;
    in.logs = gemm_logs;
    in.peaks_tflops = peaks;
    // Cited by the name the user gave, or by its place in the source tree.
    const auto base = args.value("compute-base");
    in.base_file = base.value_or("validation/data/compute_efficiency.json");
    in.base =
        JsonDocument::load(base.value_or(models::default_compute_calibration_path())).root().raw();
    in.created = cal.created;
    efficiency = validation::compute_efficiency_from_gemm(in);
    compute_text = efficiency.document.dump(2) + "\n";
    models::load_compute_calibration(JsonDocument::parse(compute_text, *compute_out));
  }

  for (const auto& log : nccl_logs)
    for (const auto& w : log.warnings) std::cerr << "warning: " << log.file << ": " << w << "\n";
  std::cout << "calibration from " << nccl_logs.size() << " nccl-tests log(s) and "
            << gemm_logs.size() << " GEMM file(s)\n"
            << "measured on: "
            << (cal.measured.hardware.empty() ? std::string("(not stated)")
                                              : join_names(cal.measured.hardware))
            << "; NCCL " << (cal.measured.nccl_version.empty() ? "?" : cal.measured.nccl_version)
            << ", CUDA " << (cal.measured.cuda_version.empty() ? "?" : cal.measured.cuda_version)
            << ", driver "
            << (cal.measured.driver_version.empty() ? "?" : cal.measured.driver_version) << "\n\n"
            << validation::describe_fit_quality(cal);
  for (const auto& note : cal.notes) std::cout << "note: " << note << "\n";
  if (!cal.refusals.empty()) {
    std::cerr << "calibrate: refused, nothing written:\n";
    for (const auto& r : cal.refusals) std::cerr << "  " << r << "\n";
    return kExitNegativeVerdict;
  }
  if (output) outputs.set(*output, json_text(validation::to_json(cal)));
  if (compute_out) outputs.set(*compute_out, compute_text);
  outputs.commit();
  if (output) std::cout << "\nwrote " << *output << "\n";
  if (compute_out) {
    std::cout << "\nwrote " << *compute_out << " (compute efficiencies; measured: ";
    for (std::size_t i = 0; i < efficiency.measured_parts.size(); ++i)
      std::cout << (i ? ", " : "") << efficiency.measured_parts[i];
    std::cout << "; copied from the base file: ";
    for (std::size_t i = 0; i < efficiency.kept_parts.size(); ++i)
      std::cout << (i ? ", " : "") << efficiency.kept_parts[i];
    std::cout << ")\n";
  }
  return 0;
}

}  // namespace clustersim::cli
