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

// What the command line asks for, every value checked.
struct CollectiveArgs {
  nccl::CollectiveOp op{};
  ClusterSpec spec;
  int gpus = 0;
  std::uint64_t min_bytes = 0, max_bytes = 0, step_bytes = 0;
  double factor = 2;
  Dtype_ dt{};
  int root = 0;
  nccl::Granularity granularity{};
  std::optional<nccl::Algorithm> algo;

  bool has_root() const {
    return op == nccl::CollectiveOp::broadcast || op == nccl::CollectiveOp::reduce;
  }
  bool has_redop() const {
    return op == nccl::CollectiveOp::all_reduce || op == nccl::CollectiveOp::reduce_scatter ||
           op == nccl::CollectiveOp::reduce;
  }
  // Gathered/scattered sizes are whole elements per rank.
  std::uint64_t size_unit() const {
    const bool per_rank = op == nccl::CollectiveOp::all_gather ||
                          op == nccl::CollectiveOp::reduce_scatter ||
                          op == nccl::CollectiveOp::all_to_all;
    return static_cast<std::uint64_t>(per_rank ? dt.bytes * gpus : dt.bytes);
  }
};

CollectiveArgs parse_collective_args(const Args& args) {
  CollectiveArgs a;
  const std::string op_name = args.value_or("op", "allreduce");
  const auto op = nccl::parse_collective_op(op_name);
  if (!op) {
    std::string names;
    for (const auto& n : nccl::collective_op_names()) names += (names.empty() ? "" : ", ") + n;
    throw UsageError("--op: \"" + op_name + "\" is not one of " + names);
  }
  a.op = *op;
  const std::string cluster_name = args.value_or("cluster", kDefaultCluster);
  a.spec = load_cluster_preset(cluster_name);
  const long long gpus = args.int_or("gpus", a.spec.total_gpus());
  if (gpus < 1 || gpus > a.spec.total_gpus()) {
    throw UsageError("--gpus: " + std::to_string(gpus) + " is outside 1.." +
                     std::to_string(a.spec.total_gpus()) + " (cluster " + cluster_name + ")");
  }
  a.gpus = static_cast<int>(gpus);
  a.min_bytes = parse_size(args.value_or("minbytes", "8"));
  a.max_bytes = parse_size(args.value_or("maxbytes", "8G"));
  if (a.max_bytes < a.min_bytes) throw UsageError("-e must not be smaller than -b");
  a.factor = args.number_or("stepfactor", 2);
  a.step_bytes = args.value("stepbytes") ? parse_size(*args.value("stepbytes")) : 0;
  if (a.step_bytes == 0 && !(a.factor > 1)) throw UsageError("-f must be > 1");
  a.dt = parse_dtype(args.value_or("datatype", "float"));
  const long long root = args.int_or("root", 0);
  if (root < 0 || root >= gpus)
    throw UsageError("--root must be a rank in 0.." + std::to_string(gpus - 1));
  a.root = static_cast<int>(root);
  const auto gran = nccl::parse_granularity(args.value_or("granularity", "bulk"));
  if (!gran) throw UsageError("--granularity must be bulk or step");
  a.granularity = *gran;
  if (auto name = args.value("algo")) {
    a.algo = nccl::parse_algorithm(*name);
    if (!a.algo || *a.algo == nccl::Algorithm::direct) {
      throw UsageError("--algo: \"" + *name +
                       "\" is not one of ring, tree, nvls, nvls_tree, pat, hierarchical");
    }
  }
  return a;
}

// --nccl NAME=VALUE pairs go through the same parser as a scenario's comm.nccl object.
sim::SimulationOptions simulation_options(const Args& args, const CollectiveArgs& a) {
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
  options.granularity = a.granularity;
  options.network_calibration = validation::load_network_calibration(a.spec);
  return options;
}

std::vector<nccl::CollectiveRequest> sweep_requests(const CollectiveArgs& a,
                                                    const std::vector<double>& sizes) {
  std::vector<nccl::CollectiveRequest> requests;
  for (double s : sizes) {
    nccl::CollectiveRequest r;
    r.op = a.op;
    r.gpus.resize(static_cast<std::size_t>(a.gpus));
    for (int i = 0; i < a.gpus; ++i) r.gpus[static_cast<std::size_t>(i)] = i;
    r.bytes = s;
    r.root = a.root;
    r.dtype = a.dt.dtype;
    r.algorithm = a.algo;
    requests.push_back(std::move(r));
  }
  return requests;
}

// nccl-tests' banner, device list and column heads.
std::string table_header(const CollectiveArgs& a, const topologies::ClusterGraph& graph) {
  std::ostringstream out;
  char line[512];
  out << "# Collective test starting: " << nccl::to_string(a.op) << "_perf\n";
  std::snprintf(
      line, sizeof line,
      "# nThread 1 nGpus %d minBytes %.0f maxBytes %.0f step: %s warmup iters: 0 iters: 1 "
      "agg iters: 1 validation: 0 graph: 0\n",
      a.gpus, static_cast<double>(a.min_bytes), static_cast<double>(a.max_bytes),
      a.step_bytes > 0 ? (gnum(static_cast<double>(a.step_bytes)) + "(bytes)").c_str()
                       : (gnum(a.factor) + "(factor)").c_str());
  out << line << "#\n# clustersim: simulated with " << to_string(a.granularity)
      << " granularity on cluster " << a.spec.name << "\n#\n# Using devices\n";
  for (int i = 0; i < a.gpus; ++i) {
    std::snprintf(line, sizeof line,
                  "#  Rank %2d Group  0 Pid      0 on %10s device %2d [sim] %s\n", i,
                  ("node" + std::to_string(graph.node_of_gpu(i))).c_str(), graph.local_of_gpu(i),
                  a.spec.gpu.name.c_str());
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
  return out.str();
}

// One simulated size: its nccl-tests text row and its JSON row with the plan.
std::string table_row(const CollectiveArgs& a, double size, const nccl::CollectiveResult& res,
                      nlohmann::json& rows) {
  const long count = static_cast<long>(size / static_cast<double>(a.size_unit()));
  const double t_us = res.time_s() * 1e6;
  const double algbw = res.alg_bw_Bps() / 1e9;
  const double busbw = res.bus_bw_Bps() / 1e9;
  const char* redop = a.has_redop() ? "sum" : "none";
  const int root = a.has_root() ? a.root : -1;
  char line[512];
  std::snprintf(line, sizeof line, "%12li  %12li  %8s  %6s  %6i", static_cast<long>(size), count,
                a.dt.name, redop, root);
  std::string out = line;
  for (int pass = 0; pass < 2; ++pass) {
    std::snprintf(line, sizeof line, "  %7s  %6s  %6s  %6s", num(t_us, 6).c_str(),
                  num(algbw, 6).c_str(), num(busbw, 6).c_str(), "N/A");
    out += line;
  }
  const auto& p = res.plan;
  nlohmann::json m = {{"time", t_us}, {"alg_bw", algbw}, {"bus_bw", busbw}, {"nwrong", nullptr}};
  rows.push_back({{"size", static_cast<long>(size)},
                  {"count", count},
                  {"type", a.dt.name},
                  {"redop", redop},
                  {"root", root},
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
  return out + "\n";
}

std::string table_footer(double avg_busbw, const sim::SimulationOptions& options) {
  std::ostringstream out;
  char line[128];
  out << "# Out of bounds values : 0 OK\n";
  std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g \n#\n", avg_busbw);
  out << line;
  for (const auto& note : options.nccl.notes) {
    out << "# clustersim: " << note.name << "=" << note.value << " "
        << (note.modelled ? "(modelled)" : "(no modelled effect)") << ": " << note.explanation
        << "\n";
  }
  return out.str();
}

nlohmann::json json_document(const CollectiveArgs& a, const topologies::ClusterGraph& graph,
                             const sim::SimulationOptions& options, double avg_busbw,
                             nlohmann::json rows) {
  nlohmann::json nccl = nlohmann::json::object();
  for (const auto& [k, v] : options.nccl.given) nccl[k] = v;
  return {{"tool", "clustersim collective"},
          {"collective", nccl::to_string(a.op)},
          {"cluster", a.spec.name},
          {"gpus", a.gpus},
          {"nodes", graph.num_nodes()},
          {"datatype", a.dt.name},
          {"granularity", to_string(a.granularity)},
          {"network_model", "SimGrid CM02 (bandwidth factor " +
                                std::to_string(options.network.bandwidth_factor) + ")"},
          {"nccl", nccl},
          {"avg_bus_bandwidth_GBps", avg_busbw},
          {"results", std::move(rows)}};
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
  const CollectiveArgs a = parse_collective_args(args);
  const sim::SimulationOptions options = simulation_options(args, a);
  for (const auto& w : options.nccl.warnings) std::cerr << "warning: " << w << "\n";
  const auto graph = topologies::ClusterGraph::build(a.spec, a.gpus);
  // Sizes as nccl-tests steps them.
  const std::vector<double> sizes =
      sweep_sizes(a.min_bytes, a.max_bytes, a.factor, a.step_bytes, a.size_unit());
  OutputFiles outputs;
  if (const auto path = args.value("json")) outputs.declare(*path);
  std::vector<nccl::CollectiveResult> results;
  try {
    results = sim::simulate_collectives(graph, sweep_requests(a, sizes), options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }

  std::string text = table_header(a, graph);
  double busbw_sum = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    text += table_row(a, sizes[i], results[i], rows);
    busbw_sum += results[i].bus_bw_Bps() / 1e9;
  }
  const double avg = results.empty() ? 0 : busbw_sum / static_cast<double>(results.size());
  std::cout << text << table_footer(avg, options);
  if (const auto path = args.value("json")) {
    outputs.set(*path, json_text(json_document(a, graph, options, avg, std::move(rows))));
  }
  outputs.commit();
  return 0;
}

}  // namespace clustersim::cli
