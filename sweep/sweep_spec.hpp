// Sweep files: a base scenario and the axes to vary, enumerated into points.
//
// File format (sweeps/NAME.json; unknown keys are errors, like every input file):
//   {"name": "...", "description": "...",
//    "base": "scenarios/x.json" | {inline scenario},
//    "axes": {
//      "gpus": [64, 256, ...],                 GPU counts (the cluster grows when it must)
//      "layouts": "all"                        every dp·tp·pp·cp = gpus with vpp 1
//               | {"tp": [..]|"all", "pp": [..]|"all", "dp": [..]|"all", "vpp": [..]|"all"}
//               | [{"dp": 64, "tp": 8, "pp": 2, "vpp": 1}, ...],
//      "micro_batch": [1, 2, 4], "global_batch": [..], "zero_stage": [0, 1, 2, 3],
//      "recompute": ["none", "selective", "full"], "sequence_parallel": [false, true],
//      "grad_dtype": ["bf16", "fp16", "fp8"], "compression": ["none", "onebit_adam", {..}],
//      "nics_per_node": [1, 8], "oversubscription": [1, 2],
//      "cluster": ["preset", "path/cluster.json", {inline cluster}, ...],  (axis_presets.hpp)
//      "model": ["preset", ...],
//      "gpu": ["h800-sxm", "path/gpu.json", {inline GPU}],  the cluster's GPU (the same)
//      "nvlink_GBps": [200, 450],              NVLink per GPU and direction, GB/s
//      "nic_Gbps": [400, 200],                 per-NIC InfiniBand/Ethernet line rate, Gb/s
//      "ep": [8, 16, 64],                      expert-parallel size (MoE models)
//      "moe_dispatcher": ["alltoall", "deepep"], "moe_expert_gemm": ["per_expert", "grouped"],
//      "moe_comm_overlap": [false, true],
//      "fp8_param_gather": [false, true],      FP8 parameters (precision fp8, zero_stage >= 1)
//      "fp8_recipe": ["current", "mxfp8"]},    FP8 scaling (precision fp8; mxfp8 on Blackwell)
//    "ranking": {"usd_per_gpu_hour": 2.0, "top": 10, "source": "where the price comes from"}}
// Without "usd_per_gpu_hour", the base scenario's cost.usd_per_gpu_hour is used if it has one;
// without either, cost is ranked in GPU-hours.
//
// A relative "base" path is looked up next to the sweep file first, then in the data directory
// (core/data_root.hpp data_root()). Axes absent from "axes" keep the base's value.
//
// Hardware what-ifs (hardware_axes.hpp): nics_per_node, oversubscription, gpu, nvlink_GBps and
// nic_Gbps change the cluster of the point (the base's or the "cluster" axis's). A value that
// differs from the cluster's cited one makes the point a what-if: its citation becomes
// "uncited (what-if): ...", and the results row says so (the "what_if" column, a warning, the
// summary). The shipped presets keep their citations; no preset copy is needed.
//
// Infeasible combinations (ep not dividing the experts or a pipeline stage's ranks, MoE knobs
// on a dense model, FP8 parameters without FP8 training or at ZeRO stage 0, ...) are points
// too: the loader's message makes them "invalid" rows.
// moe_comm_overlap false drops the base's moe_comm_sms (which applies with the overlap only).
//
// Layout rules: "all" for tp/pp/dp means every divisor of the GPU count (dp is always
// gpus / (tp·pp·cp); a dp list filters). "all" for vpp means 1 and every v > 1 with
// num_layers divisible by pp·v. vpp > 1 switches the schedule to "interleaved", vpp 1 from
// "interleaved" back to "1f1b"; a pp different from the base drops the base's
// layers_per_stage (so does a vpp different from the base's). Without "layouts", a gpus axis keeps
// the base's tp, pp, vpp and cp and sets dp = gpus / (tp·pp·cp).
//
// Points are enumerated in a fixed order (cluster, model, gpus, layouts by tp, pp, vpp, dp,
// then micro_batch, global_batch, zero_stage, recompute, sequence_parallel, grad_dtype,
// compression, nics_per_node, oversubscription, gpu, nvlink_GBps, nic_Gbps, ep,
// moe_dispatcher, moe_expert_gemm, moe_comm_overlap, fp8_param_gather, fp8_recipe; values in
// the order the file gives them).
// Labels name the varying values, e.g. "512 GPUs DP64 TP8 PP1 EP8 NIC 200Gb/s". Each point is the
// fully resolved scenario JSON: presets are inlined, so that its key (a hash of that canonical
// JSON) changes whenever anything that shapes the result changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_reader.hpp"

namespace clustersim::sweep {

// 64-bit FNV-1a (Fowler, Noll, Vo; IETF draft-eastlake-fnv) of `bytes`.
std::uint64_t fnv1a64(const std::string& bytes);
// The 16-digit lowercase hex spelling of fnv1a64(bytes).
std::string fnv1a64_hex(const std::string& bytes);

struct RankingOptions {
  double usd_per_gpu_hour = 0;  // 0: cost is ranked in GPU-hours only
  int top = 10;                 // rows per ranked table
  // The sweep file gives "top": a ranked sweep, whose points that cannot enter any table's
  // top are bounded, not simulated (sweep_runner.hpp).
  bool top_given = false;
};

struct SweepSpec {
  std::string file;  // the sweep file as given
  std::string name;
  std::string description;
  std::string base_file;             // where the base scenario came from ("" when inline)
  nlohmann::json base;               // the base scenario with presets inlined
  nlohmann::json axes;               // the "axes" object as validated
  std::vector<std::string> varying;  // axis names with more than one value, in point order
  RankingOptions ranking;
};

// One combination of axis values.
struct SweepPoint {
  std::size_t index = 0;      // position in the enumeration, from 0
  nlohmann::json scenario;    // resolved scenario (presets inlined, axes applied)
  std::string error;          // non-empty: the sweep itself could not form this point
  std::string label;          // e.g. "DP64 TP8 PP2 mb1 ZeRO-1" (the varying axes, layout first)
  std::string series;         // the label without the GPU count and dp (a plot series)
  nlohmann::json parameters;  // sweep_parameters() of the scenario
  std::vector<std::string> what_if;  // hardware changed from the cited preset (hardware_axes.hpp)
};

// Reads and validates a sweep file. Throws ConfigError (file and JSON pointer) on bad input,
// including a base scenario that does not load.
SweepSpec load_sweep_spec(const std::string& path);
SweepSpec parse_sweep_spec(const JsonDocument& document);

// Replaces preset names by the presets' contents (model, cluster, the cluster's GPU), so that
// the scenario is self-contained. Unknown names throw ConfigError at `where`.
nlohmann::json inline_presets(nlohmann::json scenario, const JsonNode& where);

// Every point of the sweep, in enumeration order. Deterministic.
std::vector<SweepPoint> enumerate_points(const SweepSpec& spec);

// The canonical text of a resolved scenario (sorted keys, compact), which keys hash.
std::string canonical_json(const nlohmann::json& scenario);

// The record key of a point: fnv1a64_hex over the evaluator name and the canonical scenario
// without what changes no evaluation (name, description, training.tokens_total, cost,
// checkpointing, campaign), so that a price or token edit reuses the results.
std::string point_key(const nlohmann::json& scenario, const std::string& evaluator);

// A point's parameters in a fixed set of fields (gpus, dp, tp, pp, vpp, cp, micro_batch,
// global_batch, zero_stage, recompute, sequence_parallel, grad_dtype, compression,
// nics_per_node, oversubscription, cluster, model), read from its resolved scenario.
nlohmann::json point_parameters(const nlohmann::json& scenario);

// A point's parameters as its results row has them: point_parameters() and, for each of
// nic_Gbps, nvlink_GBps, gpu, ep, moe_dispatcher, moe_expert_gemm, moe_comm_overlap,
// fp8_param_gather and fp8_recipe that the sweep file has
// as an axis, its value in force (nvlink_GBps: the cluster's, else its GPU's); with a hardware
// axis (nics_per_node, oversubscription, gpu, nvlink_GBps, nic_Gbps), "what_if": the
// `what_if` notes joined by "; " ("" when the point keeps the cited hardware).
nlohmann::json sweep_parameters(const SweepSpec& spec, const nlohmann::json& scenario,
                                const std::vector<std::string>& what_if = {});
// The optional keys of sweep_parameters(), in their column order (results.hpp).
const std::vector<std::string>& optional_parameter_names();

}  // namespace clustersim::sweep
