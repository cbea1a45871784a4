// `clustersim collective`: simulates one collective over a range of sizes the way nccl-tests
// measures it, and prints nccl-tests' own table (src/common.cu: preamble, header, one row per
// size with out-of-place and in-place columns, footer with the average bus bandwidth), so the
// output can be read by anything that reads nccl-tests logs (validation/nccl_tests_log.hpp).
//
// Each size is simulated alone on an idle cluster, one after the other in one SimGrid engine.
// Simulated in-place and out-of-place runs move the same bytes over the same links, so both
// column groups show the same numbers; the check column is "N/A" (nccl-tests -c 0: no data).
//
// Exit codes: 0 success, 2 bad input (nothing written).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "input/nccl_settings.hpp"
#include "input/scenario_loader.hpp"
#include "nccl/collectives.hpp"
#include "sim/simulation.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"
#include "topologies/cluster_graph.hpp"
#include "validation/calibration.hpp"

namespace clustersim::cli {

namespace {

constexpr const char* kDefaultCluster = "h800-128x8-rail";

const std::vector<OptionSpec>& collective_options() {
  static const std::vector<OptionSpec> specs = {
      {"op", "", true, false,
       "allreduce (default), allgather, reducescatter, broadcast, reduce, alltoall, sendrecv"},
      {"gpus", "g", true, false, "GPUs taking part: the first N of the cluster (default: all)"},
      {"cluster", "", true, false,
       std::string("cluster preset (topologies/clusters/NAME.json), default ") + kDefaultCluster},
      {"minbytes", "b", true, false, "smallest size, e.g. 8, 64K, 8M (default 8)"},
      {"maxbytes", "e", true, false, "largest size (default 8G)"},
      {"stepfactor", "f", true, false, "multiply the size by F between rows (default 2)"},
      {"stepbytes", "i", true, false, "add this many bytes between rows instead of -f"},
      {"datatype", "d", true, false, "float (default), half, bfloat16, fp8 (e4m3)"},
      {"root", "r", true, false, "root rank of broadcast and reduce (default 0)"},
      {"granularity", "", true, false, "bulk (default: one flow per GPU pair) or step"},
      {"algo", "", true, false,
       "force ring, tree, nvls, nvls_tree, pat or hierarchical (else NCCL's cost model)"},
      {"nccl", "", true, true, "NCCL setting NAME=VALUE, e.g. NCCL_ALGO=Ring (repeatable)"},
      {"json", "", true, false, "also write the rows, the plan and the settings as JSON to FILE"},
  };
  return specs;
}

struct Dtype_ {
  const char* name;  // as nccl-tests prints it
  Dtype dtype;
  double bytes;
};

// The most rows one table may have (nccl-tests' default sweep, 8 B to 8 GiB by 2, has 31).
constexpr std::size_t kMaxSweepSizes = 4096;

// nccl-tests' sizes from min to max bytes, times `factor` or plus `step` bytes between rows,
// each rounded down to whole `unit`s (at least one). A sweep of more than kMaxSweepSizes rows is
// refused before any is simulated: a factor barely above 1 or a 1-byte step cannot run forever.
std::vector<double> sweep_sizes(std::uint64_t min, std::uint64_t max, double factor,
                                std::uint64_t step, std::uint64_t unit) {
  std::vector<double> sizes;
  const double last = static_cast<double>(max) * (1 + 1e-12);
  // Sizes stay below 2^53 bytes (kMaxSizeBytes), where doubles count every byte.
  double s = static_cast<double>(min);
  for (std::size_t count = 0; s <= last; ++count) {
    if (count == kMaxSweepSizes) {
      throw UsageError("the sweep from -b " + std::to_string(min) + " to -e " +
                       std::to_string(max) + " has more than " + std::to_string(kMaxSweepSizes) +
                       " sizes; use a larger -f or -i");
    }
    const double u = static_cast<double>(unit);
    const double rounded = std::max(u, std::floor(s / u) * u);
    if (sizes.empty() || rounded != sizes.back()) sizes.push_back(rounded);
    s = step > 0 ? s + static_cast<double>(step) : s * factor;
  }
  return sizes;
}

Dtype_ parse_dtype(const std::string& s) {
  if (s == "float" || s == "f32" || s == "fp32") return {"float", Dtype::fp32, 4};
  if (s == "half" || s == "f16" || s == "fp16") return {"half", Dtype::fp16, 2};
  if (s == "bfloat16" || s == "bf16") return {"bfloat16", Dtype::bf16, 2};
  if (s == "fp8" || s == "f8e4m3" || s == "e4m3") return {"f8e4m3", Dtype::fp8, 1};
  throw UsageError("--datatype: \"" + s + "\" is not one of float, half, bfloat16, fp8");
}

// nccl-tests' number formatting (src/util.cu): 2 decimals, then 1, then 0, then exponent
// notation, whichever first fits in `width` characters.
std::string num(double v, int width) {
  char buf[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    if (static_cast<int>(std::string(buf).size()) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, "%.*e", std::max(0, width - 6), v);
  return buf;
}

std::string gnum(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string usage_collective() {
  std::ostringstream os;
  os << "usage: clustersim collective [--op OP] [--gpus N] [--cluster PRESET] [-b MIN] [-e MAX]\n"
        "                             [-f F | -i BYTES] [--granularity bulk|step]\n"
        "                             [--nccl NAME=VALUE ...] [--json FILE]\n\n"
        "Simulates one NCCL collective on the first N GPUs of a cluster, for each size from MIN\n"
        "to MAX, and prints the table in nccl-tests' own format. NCCL's cost model picks the\n"
        "algorithm, protocol and channels unless --algo or NCCL_ALGO/NCCL_PROTO say otherwise;\n"
        "the network is simulated with SimGrid (flows sharing links max-min fairly).\n\n"
        "Options:\n"
     << describe_options(collective_options());
  return os.str();
}

int cmd_collective(const std::vector<std::string>& argv) {
  const Args args(argv, collective_options(), 0);

  const std::string op_name = args.value_or("op", "allreduce");
  const auto op = nccl::parse_collective_op(op_name);
  if (!op) {
    std::string names;
    for (const auto& n : nccl::collective_op_names()) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("--op: \"" + op_name + "\" is not one of " + names);
  }
  const std::string cluster_name = args.value_or("cluster", kDefaultCluster);
  const ClusterSpec spec = load_cluster_preset(cluster_name);
  const long long gpus = args.int_or("gpus", spec.total_gpus());
  if (gpus < 1 || gpus > spec.total_gpus()) {
    throw UsageError("--gpus: " + std::to_string(gpus) + " is outside 1.." +
                     std::to_string(spec.total_gpus()) + " (cluster " + cluster_name + ")");
  }
  const std::uint64_t min_bytes = parse_size(args.value_or("minbytes", "8"));
  const std::uint64_t max_bytes = parse_size(args.value_or("maxbytes", "8G"));
  if (max_bytes < min_bytes) throw UsageError("-e must not be smaller than -b");
  const double factor = args.number_or("stepfactor", 2);
  const std::uint64_t step_bytes =
      args.value("stepbytes") ? parse_size(*args.value("stepbytes")) : 0;
  if (step_bytes == 0 && !(factor > 1)) throw UsageError("-f must be > 1");
  const Dtype_ dt = parse_dtype(args.value_or("datatype", "float"));
  const long long root = args.int_or("root", 0);
  if (root < 0 || root >= gpus)
    throw UsageError("--root must be a rank in 0.." + std::to_string(gpus - 1));
  const auto gran = nccl::parse_granularity(args.value_or("granularity", "bulk"));
  if (!gran) throw UsageError("--granularity must be bulk or step");
  std::optional<nccl::Algorithm> algo;
  if (auto a = args.value("algo")) {
    algo = nccl::parse_algorithm(*a);
    if (!algo || *algo == nccl::Algorithm::direct) {
      throw UsageError("--algo: \"" + *a +
                       "\" is not one of ring, tree, nvls, nvls_tree, pat, "
                       "hierarchical");
    }
  }

  // --nccl NAME=VALUE pairs go through the same parser as a scenario's comm.nccl object.
  nlohmann::json nccl_json = nlohmann::json::object();
  for (const std::string& kv : args.values("nccl")) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--nccl: \"" + kv + "\" is not NAME=VALUE");
    }
    nccl_json[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const JsonDocument nccl_doc = JsonDocument::parse(nccl_json.dump(), "--nccl");
  sim::SimulationOptions options;
  options.nccl = parse_nccl_settings(nccl_doc.root());
  options.granularity = *gran;
  options.network_calibration = validation::load_network_calibration(spec);
  for (const auto& w : options.nccl.warnings) std::cerr << "warning: " << w << "\n";

  const auto graph = topologies::ClusterGraph::build(spec, static_cast<int>(gpus));
  const int n = static_cast<int>(gpus);

  // Sizes as nccl-tests steps them; gathered/scattered sizes are whole elements per rank.
  const bool per_rank_count = *op == nccl::CollectiveOp::all_gather ||
                              *op == nccl::CollectiveOp::reduce_scatter ||
                              *op == nccl::CollectiveOp::all_to_all;
  const auto unit = static_cast<std::uint64_t>(per_rank_count ? dt.bytes * n : dt.bytes);
  const std::vector<double> sizes = sweep_sizes(min_bytes, max_bytes, factor, step_bytes, unit);

  std::vector<nccl::CollectiveRequest> requests;
  for (double s : sizes) {
    nccl::CollectiveRequest r;
    r.op = *op;
    r.gpus.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) r.gpus[static_cast<std::size_t>(i)] = i;
    r.bytes = s;
    r.root = static_cast<int>(root);
    r.dtype = dt.dtype;
    r.algorithm = algo;
    requests.push_back(std::move(r));
  }
  OutputFiles outputs;
  if (const auto path = args.value("json")) outputs.declare(*path);
  std::vector<nccl::CollectiveResult> results;
  try {
    results = sim::simulate_collectives(graph, requests, options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }

  // ---- nccl-tests text ----
  const bool has_root = *op == nccl::CollectiveOp::broadcast || *op == nccl::CollectiveOp::reduce;
  const bool has_redop = *op == nccl::CollectiveOp::all_reduce ||
                         *op == nccl::CollectiveOp::reduce_scatter ||
                         *op == nccl::CollectiveOp::reduce;
  std::ostringstream out;
  char line[512];
  std::string program = nccl::to_string(*op);
  out << "# Collective test starting: " << program << "_perf\n";
  std::snprintf(
      line, sizeof line,
      "# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: %s warmup iters: 0 iters: 1 "
      "agg iters: 1 validation: 0 graph: 0\n",
      n, static_cast<double>(min_bytes), static_cast<double>(max_bytes),
      step_bytes > 0 ? (gnum(static_cast<double>(step_bytes)) + "(bytes)").c_str()
                     : (gnum(factor) + "(factor)").c_str());
  out << line << "#\n# clustersim: simulated with " << to_string(*gran)
      << " granularity on cluster " << spec.name << "\n#\n# Using devices\n";
  for (int i = 0; i < n; ++i) {
    std::snprintf(line, sizeof line,
                  "#  Rank %2d Group  0 Pid      0 on %10s device %2d [sim] %s\n", i,
                  ("node" + std::to_string(graph.node_of_gpu(i))).c_str(), graph.local_of_gpu(i),
                  spec.gpu.name.c_str());
    out << line;
  }
  out << "#\n";
  out << "#                                                              out-of-place              "
         "   "
         "      in-place          \n";
  out << "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
         "time   algbw   busbw #wrong\n";
  out << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
         "(us)  (GB/s)  (GB/s)       \n";
  double busbw_sum = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& res = results[i];
    const double s = sizes[i];
    const long count = static_cast<long>(s / unit);
    const double t_us = res.time_s() * 1e6;
    const double algbw = res.alg_bw_Bps() / 1e9;
    const double busbw = res.bus_bw_Bps() / 1e9;
    busbw_sum += busbw;
    std::snprintf(line, sizeof line, "%12li  %12li  %8s  %6s  %6i", static_cast<long>(s), count,
                  dt.name, has_redop ? "sum" : "none", has_root ? static_cast<int>(root) : -1);
    out << line;
    for (int pass = 0; pass < 2; ++pass) {
      std::snprintf(line, sizeof line, "  %7s  %6s  %6s  %6s", num(t_us, 6).c_str(),
                    num(algbw, 6).c_str(), num(busbw, 6).c_str(), "N/A");
      out << line;
    }
    out << "\n";
    const auto& p = res.plan;
    nlohmann::json m = {{"time", t_us}, {"alg_bw", algbw}, {"bus_bw", busbw}, {"nwrong", nullptr}};
    rows.push_back({{"size", static_cast<long>(s)},
                    {"count", count},
                    {"type", dt.name},
                    {"redop", has_redop ? "sum" : "none"},
                    {"root", has_root ? static_cast<int>(root) : -1},
                    {"out_of_place", m},
                    {"in_place", m},
                    {"algorithm", nccl::to_string(p.algorithm)},
                    {"protocol", to_string(p.protocol)},
                    {"channels", p.channels},
                    {"paths", p.paths},
                    {"chosen_by", p.chosen_by},
                    {"model_time_us", p.model_time_s * 1e6},
                    {"latency_us", p.latency_s * 1e6},
                    {"flows", res.flows},
                    {"notes", p.notes}});
  }
  const double avg = results.empty() ? 0 : busbw_sum / static_cast<double>(results.size());
  out << "# Out of bounds values : 0 OK\n";
  std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g \n#\n", avg);
  out << line;
  for (const auto& note : options.nccl.notes) {
    out << "# clustersim: " << note.name << "=" << note.value << " "
        << (note.modelled ? "(modelled)" : "(not modelled)") << ": " << note.explanation << "\n";
  }
  std::cout << out.str();

  if (auto path = args.value("json")) {
    nlohmann::json nccl = nlohmann::json::object();
    for (const auto& [k, v] : options.nccl.given) nccl[k] = v;
    nlohmann::json doc = {
        {"tool", "clustersim collective"},
        {"collective", program},
        {"cluster", spec.name},
        {"gpus", n},
        {"nodes", graph.num_nodes()},
        {"datatype", dt.name},
        {"granularity", to_string(*gran)},
        {"network_model", "SimGrid CM02 (bandwidth factor " +
                              std::to_string(options.network.bandwidth_factor) + ")"},
        {"nccl", nccl},
        {"avg_bus_bandwidth_GBps", avg},
        {"results", rows}};
    outputs.set(*path, json_text(doc));
  }
  outputs.commit();
  return 0;
}

}  // namespace clustersim::cli
