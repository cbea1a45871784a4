#include "sweep/sweep_spec.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include "input/execution.hpp"
#include "input/scenario_loader.hpp"
#include "sweep/axis_presets.hpp"
#include "sweep/hardware_axes.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// FNV-1a 64-bit parameters (draft-eastlake-fnv, section 5).
constexpr std::uint64_t kFnvOffsetBasis = 14695981039346656037ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

// Enumerations larger than this are almost certainly a mistake in the sweep file, and every
// point is held in memory (a resolved scenario is a few kB).
constexpr std::size_t kMaxPoints = 50000;

// clang-format off
const std::vector<std::string> kAxisNames = {
    "gpus", "layouts", "micro_batch", "global_batch", "zero_stage", "recompute",
    "sequence_parallel", "grad_dtype", "compression", "nics_per_node", "oversubscription",
    "cluster", "model", "gpu", "nvlink_GBps", "nic_Gbps", "ep", "moe_dispatcher",
    "moe_expert_gemm", "moe_comm_overlap", "fp8_param_gather", "fp8_recipe"};
// clang-format on

// Parameters of a point that a results row has only when their axis is in the sweep file.
const std::vector<std::string> kOptionalParameters = {"nic_Gbps",
                                                      "nvlink_GBps",
                                                      "gpu",
                                                      "ep",
                                                      "moe_dispatcher",
                                                      "moe_expert_gemm",
                                                      "moe_comm_overlap",
                                                      "fp8_param_gather",
                                                      "fp8_recipe",
                                                      "what_if"};

// Axes that change the cluster's cited hardware: with any of them, a row says whether the
// point is a what-if (hardware_axes.hpp).
const std::vector<std::string> kHardwareAxes = {"nics_per_node", "oversubscription", "gpu",
                                                "nvlink_GBps", "nic_Gbps"};

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The value at `pointer`, or null when any part of the path is absent.
json get_or_null(const json& doc, const std::string& pointer) {
  const json::json_pointer p(pointer);
  return doc.contains(p) ? doc.at(p) : json();
}

int int_or(const json& doc, const std::string& pointer, int fallback) {
  const json v = get_or_null(doc, pointer);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

// A non-empty array without repeated values.
std::vector<JsonNode> axis_values(const JsonNode& node) {
  if (!node.is_array()) node.fail("expected an array of values, got " + node.describe());
  std::vector<JsonNode> items = node.items();
  if (items.empty()) node.fail("an axis needs at least one value");
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (items[i].raw() == items[j].raw()) {
        items[i].fail(items[i].describe() + " is listed twice");
      }
    }
  }
  return items;
}

// A list of positive integers, or "all" (returned as an empty vector).
std::vector<int> int_list_or_all(const JsonNode& node, int max) {
  if (node.is_string()) {
    node.as_enum({"all"});
    return {};
  }
  std::vector<int> out;
  for (const auto& item : axis_values(node)) {
    out.push_back(static_cast<int>(item.as_int_in(1, max)));
  }
  return out;
}

// "layouts": "all", an object of dp/tp/pp/vpp lists (or "all"), or a list of layouts.
void validate_layouts(const JsonNode& n) {
  if (n.is_string()) {
    n.as_enum({"all"});
  } else if (n.is_object()) {
    n.only_keys({"dp", "tp", "pp", "vpp"});
    for (const char* k : {"dp", "tp", "pp", "vpp"}) {
      if (const auto list = n.find(k)) int_list_or_all(*list, 1 << 20);
    }
  } else if (n.is_array()) {
    for (const auto& item : axis_values(n)) {
      item.require_object();
      item.only_keys({"dp", "tp", "pp", "vpp", "cp"});
      item.int_at("tp", 1, 1 << 12);
      item.int_at("pp", 1, 1 << 12);
      item.int_or("dp", 1, 1, 1 << 20);
      item.int_or("vpp", 1, 1, 1 << 10);
      item.int_or("cp", 1, 1, 1 << 12);
    }
  } else {
    n.fail("expected \"all\", an object of dp/tp/pp/vpp lists or a list of layouts, got " +
           n.describe());
  }
}

// Line rates and bandwidths in the units the cluster presets use (Gb/s per NIC, GB/s of NVLink
// per GPU and direction); the loader checks each point's range.
void validate_hardware_and_moe_axes(const JsonNode& axes) {
  for (const char* k : {"nic_Gbps", "nvlink_GBps"}) {
    if (const auto n = axes.find(k)) {
      for (const auto& v : axis_values(*n)) v.as_positive();
    }
  }
  if (const auto n = axes.find("gpu")) {
    for (const auto& v : axis_values(*n)) gpu_value(v, axes.file());
  }
  if (const auto n = axes.find("ep")) {
    for (const auto& v : axis_values(*n)) v.as_int_in(1, 1 << 16);
  }
  if (const auto n = axes.find("moe_dispatcher")) {
    for (const auto& v : axis_values(*n)) v.as_enum(kMoeDispatcherNames.names());
  }
  if (const auto n = axes.find("moe_expert_gemm")) {
    for (const auto& v : axis_values(*n)) v.as_enum(kMoeExpertGemmNames.names());
  }
  if (const auto n = axes.find("fp8_recipe")) {
    for (const auto& v : axis_values(*n)) v.as_enum(kFp8RecipeNames.names());
  }
  for (const char* k : {"moe_comm_overlap", "fp8_param_gather"}) {
    if (const auto n = axes.find(k)) {
      for (const auto& v : axis_values(*n)) v.as_bool();
    }
  }
}

void validate_axes(const JsonNode& axes) {
  axes.require_object();
  axes.only_keys(kAxisNames);
  if (const auto n = axes.find("gpus")) {
    for (const auto& v : axis_values(*n)) v.as_int_in(1, 1 << 24);
  }
  if (const auto n = axes.find("layouts")) validate_layouts(*n);
  for (const char* k : {"micro_batch", "global_batch"}) {
    if (const auto n = axes.find(k)) {
      for (const auto& v : axis_values(*n)) v.as_int_in(1, std::int64_t(1) << 40);
    }
  }
  if (const auto n = axes.find("zero_stage")) {
    for (const auto& v : axis_values(*n)) v.as_int_in(0, 3);
  }
  if (const auto n = axes.find("recompute")) {
    for (const auto& v : axis_values(*n)) v.as_enum({"none", "selective", "full"});
  }
  if (const auto n = axes.find("sequence_parallel")) {
    for (const auto& v : axis_values(*n)) v.as_bool();
  }
  if (const auto n = axes.find("grad_dtype")) {
    for (const auto& v : axis_values(*n)) v.as_enum({"fp32", "bf16", "fp16", "fp8"});
  }
  if (const auto n = axes.find("compression")) {
    for (const auto& v : axis_values(*n)) {
      if (v.is_string()) {
        v.as_enum({"none", "onebit_adam"});
      } else if (!v.is_object()) {
        v.fail("expected a compression name or object, got " + v.describe());
      }  // objects are checked by the scenario loader, point by point
    }
  }
  if (const auto n = axes.find("nics_per_node")) {
    for (const auto& v : axis_values(*n)) v.as_int_in(1, 1024);
  }
  if (const auto n = axes.find("oversubscription")) {
    for (const auto& v : axis_values(*n)) {
      if (v.as_number() < 1) v.fail(v.describe() + " must be at least 1 (1 = non-blocking)");
    }
  }
  if (const auto n = axes.find("cluster")) {
    for (const auto& v : axis_values(*n)) cluster_value(v, axes.file());
  }
  validate_hardware_and_moe_axes(axes);
  if (const auto n = axes.find("model")) {
    for (const auto& v : axis_values(*n)) {
      load_preset_json("models/presets", v.as_string(), "model", v);
    }
  }
}

struct Variant {
  json scenario;
  std::string error;
  std::vector<std::string> what_if;  // hardware_axes.hpp notes
};

using Expand = std::function<std::vector<Variant>(const Variant&)>;

// One value per variant: sets `pointer` to each value of the axis.
Expand set_each(const std::string& pointer, const json& values,
                std::function<void(json&, const json&)> also = {}) {
  return [pointer, values, also](const Variant& in) {
    std::vector<Variant> out;
    for (const auto& v : values) {
      Variant next = in;
      next.scenario[json::json_pointer(pointer)] = v;
      if (also) also(next.scenario, v);
      out.push_back(std::move(next));
    }
    return out;
  };
}

void apply_layout(json& s, int dp, int tp, int pp, int vpp, std::optional<int> cp, const json& base,
                  bool sp_axis) {
  json& par = s["parallelism"];
  par["dp"] = dp;
  par["tp"] = tp;
  par["pp"] = pp;
  par["vpp"] = vpp;
  if (cp) par["cp"] = *cp;
  const json base_schedule = get_or_null(base, "/parallelism/schedule");
  if (vpp > 1) {
    par["schedule"] = "interleaved";
  } else if (base_schedule == "interleaved") {
    par["schedule"] = "1f1b";
  }
  if (pp != int_or(base, "/parallelism/pp", 1) || vpp != int_or(base, "/parallelism/vpp", 1)) {
    par.erase("layers_per_stage");  // given per stage, or per virtual stage
  }
  // Sequence parallelism is a TP feature; at tp 1 it is off unless the sweep varies it.
  if (!sp_axis && tp == 1 && par.contains("sequence_parallel")) par["sequence_parallel"] = false;
}

Expand expand_layouts(const json& layouts, const json& base, bool sp_axis) {
  return [layouts, base, sp_axis](const Variant& in) {
    std::vector<Variant> out;
    const int gpus = int_or(in.scenario, "/gpus", 1);
    const int cp = int_or(in.scenario, "/parallelism/cp", 1);
    if (layouts.is_array()) {
      for (const auto& l : layouts) {
        Variant next = in;
        const int tp = l.at("tp").get<int>();
        const int pp = l.at("pp").get<int>();
        const int lcp = l.value("cp", cp);
        const int dp = l.contains("dp") ? l.at("dp").get<int>()
                                        : std::max(1, gpus / std::max(1, tp * pp * lcp));
        apply_layout(next.scenario, dp, tp, pp, l.value("vpp", 1),
                     l.contains("cp") ? std::optional<int>(lcp) : std::nullopt, base, sp_axis);
        out.push_back(std::move(next));
      }
      return out;
    }
    auto list = [&](const char* key, const std::vector<int>& fallback) -> std::vector<int> {
      if (!layouts.is_object() || !layouts.contains(key)) return fallback;
      const json& v = layouts.at(key);
      if (v.is_string()) return {};  // "all"
      return v.get<std::vector<int>>();
    };
    const std::vector<int> tps = list("tp", {});
    const std::vector<int> pps = list("pp", {});
    const std::vector<int> dps = list("dp", {});
    const bool vpp_all =
        layouts.is_object() && layouts.contains("vpp") && layouts.at("vpp").is_string();
    const std::vector<int> vpps = vpp_all ? std::vector<int>{} : list("vpp", {1});
    const int layers = int_or(in.scenario, "/model/num_layers", 1);
    if (gpus % cp != 0) return out;
    for (int tp : tps.empty() ? divisors(gpus / cp) : tps) {
      if ((gpus / cp) % tp != 0) continue;
      for (int pp : pps.empty() ? divisors(gpus / cp / tp) : pps) {
        if ((gpus / cp / tp) % pp != 0) continue;
        const int dp = gpus / cp / tp / pp;
        if (!dps.empty() && std::find(dps.begin(), dps.end(), dp) == dps.end()) continue;
        std::vector<int> vs = vpps;
        if (vpp_all) {
          vs = {1};
          for (int v = 2; pp > 1 && v <= layers; ++v) {
            if (layers % (pp * v) == 0) vs.push_back(v);
          }
        }
        for (int vpp : vs) {
          Variant next = in;
          apply_layout(next.scenario, dp, tp, pp, vpp, std::nullopt, base, sp_axis);
          out.push_back(std::move(next));
        }
      }
    }
    return out;
  };
}

// A label fragment for one parameter, e.g. "TP8", "mb2", "ZeRO-1".
std::string fragment(const std::string& key, const json& v) {
  auto text = [](const json& x) { return x.is_string() ? x.get<std::string>() : x.dump(); };
  if (key == "gpus") return text(v) + " GPUs";
  if (key == "dp") return "DP" + text(v);
  if (key == "tp") return "TP" + text(v);
  if (key == "pp") return "PP" + text(v);
  if (key == "vpp") return "VPP" + text(v);
  if (key == "cp") return "CP" + text(v);
  if (key == "micro_batch") return "mb" + text(v);
  if (key == "global_batch") return "gb" + text(v);
  if (key == "zero_stage") return "ZeRO-" + text(v);
  if (key == "recompute") return "recompute:" + text(v);
  if (key == "sequence_parallel") return v == true ? "SP" : "no-SP";
  if (key == "grad_dtype") return "grad:" + text(v);
  if (key == "compression") return v == "none" ? "no-compression" : text(v);
  if (key == "nics_per_node") return text(v) + "NIC";
  if (key == "oversubscription") return "oversub:" + text(v);
  if (key == "nic_Gbps") return "NIC " + text(v) + "Gb/s";
  if (key == "nvlink_GBps") return "NVLink " + text(v) + "GB/s";
  if (key == "ep") return "EP" + text(v);
  if (key == "moe_dispatcher") return "dispatch:" + text(v);
  if (key == "moe_expert_gemm") return "experts:" + text(v);
  if (key == "moe_comm_overlap") return v == true ? "EP-overlap" : "no-EP-overlap";
  if (key == "fp8_param_gather") return v == true ? "FP8-params" : "16-bit-params";
  if (key == "fp8_recipe") return "FP8-" + text(v);
  return text(v);  // cluster, model, gpu
}

void assign_labels(std::vector<SweepPoint>& points) {
  std::vector<json> params;
  params.reserve(points.size());
  for (const auto& p : points) {
    json q = p.parameters;
    q.erase("what_if");  // a note, not a label
    params.push_back(std::move(q));
  }
  // Which parameters vary across the sweep; dp, tp and pp always show (they name a layout), and
  // vpp, cp and ep wherever a point uses them (a label without them reads as a plainer layout).
  std::set<std::string> varying = {"dp", "tp", "pp"};
  for (const char* key : {"vpp", "cp", "ep"}) {
    for (const auto& q : params) {
      if (q.contains(key) && q.at(key) != json(1)) varying.insert(key);
    }
  }
  for (const auto& [key, value] : params.front().items()) {
    for (const auto& q : params) {
      if (q.at(key) != value) {
        varying.insert(key);
        break;
      }
    }
  }
  const std::vector<std::string> order = {"gpus",
                                          "dp",
                                          "tp",
                                          "pp",
                                          "vpp",
                                          "cp",
                                          "ep",
                                          "micro_batch",
                                          "global_batch",
                                          "zero_stage",
                                          "recompute",
                                          "sequence_parallel",
                                          "grad_dtype",
                                          "fp8_param_gather",
                                          "fp8_recipe",
                                          "compression",
                                          "moe_dispatcher",
                                          "moe_expert_gemm",
                                          "moe_comm_overlap",
                                          "nics_per_node",
                                          "nic_Gbps",
                                          "oversubscription",
                                          "nvlink_GBps",
                                          "gpu",
                                          "cluster",
                                          "model"};
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::string label;
    std::string series;
    for (const auto& key : order) {
      if (!varying.count(key) || !params[i].contains(key)) continue;
      const std::string f = fragment(key, params[i].at(key));
      label += (label.empty() ? "" : " ") + f;
      if (key != "gpus" && key != "dp") series += (series.empty() ? "" : " ") + f;
    }
    points[i].label = label;
    points[i].series = series;
  }
}

}  // namespace

std::uint64_t fnv1a64(const std::string& bytes) {
  std::uint64_t h = kFnvOffsetBasis;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}

std::string fnv1a64_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::uint64_t h = fnv1a64(bytes);
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = digits[h & 0xf];
    h >>= 4;
  }
  return out;
}

json inline_presets(json scenario, const JsonNode& where) {
  if (!scenario.is_object()) return scenario;
  if (scenario.contains("model") && scenario["model"].is_string()) {
    scenario["model"] =
        load_preset_json("models/presets", scenario["model"].get<std::string>(), "model", where);
  }
  if (scenario.contains("cluster"))
    scenario["cluster"] = inline_cluster(scenario["cluster"], where);
  return scenario;
}

SweepSpec load_sweep_spec(const std::string& path) {
  return parse_sweep_spec(JsonDocument::load(path));
}

SweepSpec parse_sweep_spec(const JsonDocument& document) {
  const JsonNode root = document.root();
  root.require_object();
  root.only_keys({"name", "description", "base", "axes", "ranking"});
  SweepSpec spec;
  spec.file = document.file();
  spec.name = root.string_or("name", fs::path(document.file()).stem().string());
  spec.description = root.string_or("description", "");

  const JsonNode base = root.at("base");
  json raw;
  if (base.is_string()) {
    spec.base_file = resolve_input_path(base.as_string(), spec.file, base, "base scenario");
    // Loading the file itself first reports a broken base at its own file and pointer.
    load_scenario(spec.base_file);
    raw = JsonDocument::load(spec.base_file).root().raw();
  } else if (base.is_object()) {
    raw = base.raw();
  } else {
    base.fail("expected a scenario path or an inline scenario, got " + base.describe());
  }
  spec.base = inline_presets(raw, base);
  {
    const std::string name = spec.base_file.empty() ? spec.file + ":/base" : spec.base_file;
    load_scenario(JsonDocument::parse(spec.base.dump(), name));
  }

  if (const auto axes = root.find("axes")) {
    validate_axes(*axes);
    spec.axes = axes->raw();
  } else {
    spec.axes = json::object();
  }
  for (const auto& name : kAxisNames) {
    if (!spec.axes.contains(name)) continue;
    const json& v = spec.axes.at(name);
    if (name == "layouts" || (v.is_array() && v.size() > 1)) spec.varying.push_back(name);
  }
  if (const auto r = root.find("ranking")) {
    r->only_keys({"usd_per_gpu_hour", "top", "source"});
    spec.ranking.usd_per_gpu_hour = r->non_negative_or("usd_per_gpu_hour", 0.0);
    spec.ranking.top = static_cast<int>(r->int_or("top", 10, 1, 1000));
    spec.ranking.top_given = r->find("top").has_value();
    r->string_or("source", "");
  }
  // Without a price in the sweep file, the base scenario's cost section may give one.
  if (spec.ranking.usd_per_gpu_hour == 0) {
    const json price = get_or_null(spec.base, "/cost/usd_per_gpu_hour");
    if (price.is_number() && price.get<double>() > 0) {
      spec.ranking.usd_per_gpu_hour = price.get<double>();
    }
  }
  // Enumerate once so that an empty or oversized sweep is a ConfigError here, not later.
  enumerate_points(spec);
  return spec;
}

namespace {

// The values of the "cluster" or "model" axis, inlined (axis_presets.hpp), as one expansion.
Expand preset_axis(const SweepSpec& spec, const char* axis) {
  json values = json::array();
  const JsonDocument doc = JsonDocument::parse(spec.axes.dump(), spec.file + ":/axes");
  for (const auto& v : doc.root().at(axis).items()) {
    if (std::string(axis) == "cluster") {
      values.push_back(cluster_value(v, spec.file));
    } else {
      values.push_back(load_preset_json("models/presets", v.as_string(), "model", v));
    }
  }
  return set_each(std::string("/") + axis, values);
}

// The GPU counts; the cluster grows (whole nodes) when the preset is too small for one.
// Without a layouts axis the base's tp, pp and cp stay and dp = gpus / (tp pp cp).
Expand gpus_axis(const json& values, bool has_layouts) {
  return [values, has_layouts](const Variant& in) {
    std::vector<Variant> out;
    for (const auto& v : values) {
      Variant next = in;
      json& s = next.scenario;
      const int gpus = v.get<int>();
      s["gpus"] = gpus;
      const int per_node = std::max(1, int_or(s, "/cluster/gpus_per_node", 1));
      const int nodes = int_or(s, "/cluster/nodes", 1);
      if (std::int64_t(nodes) * per_node < gpus) {
        grow_cluster(s, (gpus + per_node - 1) / per_node);
      }
      if (!has_layouts) {
        const int tp = int_or(s, "/parallelism/tp", 1);
        const int pp = int_or(s, "/parallelism/pp", 1);
        const int cp = int_or(s, "/parallelism/cp", 1);
        if (gpus % (tp * pp * cp) == 0) {
          s["parallelism"]["dp"] = gpus / (tp * pp * cp);
        } else {
          next.error = std::to_string(gpus) + " GPUs are not divisible by the base layout's " +
                       "tp x pp x cp = " + std::to_string(tp * pp * cp);
        }
      }
      out.push_back(std::move(next));
    }
    return out;
  };
}

// One value per variant, set by a hardware setter (hardware_axes.hpp), which notes a what-if.
Expand hardware_axis(const json& values, std::string (*set)(json&, const json&)) {
  return [values, set](const Variant& in) {
    std::vector<Variant> out;
    for (const auto& v : values) {
      Variant next = in;
      const std::string note = set(next.scenario, v);
      if (!note.empty()) next.what_if.push_back(note);
      out.push_back(std::move(next));
    }
    return out;
  };
}

// The values of the "gpu" axis, inlined (axis_presets.hpp).
json gpu_presets(const SweepSpec& spec) {
  json values = json::array();
  const JsonDocument doc = JsonDocument::parse(spec.axes.dump(), spec.file + ":/axes");
  for (const auto& v : doc.root().at("gpu").items()) {
    values.push_back(gpu_value(v, spec.file));
  }
  return values;
}

// The axes after "compression", in the enumeration order of sweep_spec.hpp.
void add_hardware_and_moe_axes(const SweepSpec& spec, std::vector<Expand>& dims) {
  const json& axes = spec.axes;
  if (axes.contains("nics_per_node")) {
    dims.push_back(hardware_axis(axes.at("nics_per_node"), set_nics_per_node));
  }
  if (axes.contains("oversubscription")) {
    dims.push_back(hardware_axis(axes.at("oversubscription"), set_oversubscription));
  }
  if (axes.contains("gpu")) dims.push_back(hardware_axis(gpu_presets(spec), set_gpu));
  if (axes.contains("nvlink_GBps")) {
    dims.push_back(hardware_axis(axes.at("nvlink_GBps"), set_nvlink_GBps));
  }
  if (axes.contains("nic_Gbps")) dims.push_back(hardware_axis(axes.at("nic_Gbps"), set_nic_Gbps));
  if (axes.contains("ep")) dims.push_back(set_each("/parallelism/ep", axes.at("ep")));
  if (axes.contains("moe_dispatcher")) {
    dims.push_back(set_each("/training/moe_dispatcher", axes.at("moe_dispatcher")));
  }
  if (axes.contains("moe_expert_gemm")) {
    dims.push_back(set_each("/training/moe_expert_gemm", axes.at("moe_expert_gemm")));
  }
  if (axes.contains("moe_comm_overlap")) {
    // The SMs set aside for overlapped exchanges apply with the overlap only.
    dims.push_back(set_each("/training/moe_comm_overlap", axes.at("moe_comm_overlap"),
                            [](json& s, const json& v) {
                              if (v == false && s.contains("training")) {
                                s["training"].erase("moe_comm_sms");
                              }
                            }));
  }
  if (axes.contains("fp8_param_gather")) {
    dims.push_back(set_each("/training/fp8_param_gather", axes.at("fp8_param_gather")));
  }
  if (axes.contains("fp8_recipe")) {
    dims.push_back(set_each("/training/fp8_recipe", axes.at("fp8_recipe")));
  }
}

// One expansion per axis present, in the enumeration order of sweep_spec.hpp.
std::vector<Expand> axis_expansions(const SweepSpec& spec) {
  const json& axes = spec.axes;
  std::vector<Expand> dims;
  if (axes.contains("cluster")) dims.push_back(preset_axis(spec, "cluster"));
  if (axes.contains("model")) dims.push_back(preset_axis(spec, "model"));
  if (axes.contains("gpus")) dims.push_back(gpus_axis(axes.at("gpus"), axes.contains("layouts")));
  if (axes.contains("layouts")) {
    dims.push_back(
        expand_layouts(axes.at("layouts"), spec.base, axes.contains("sequence_parallel")));
  }
  const std::vector<std::pair<const char*, const char*>> scalar = {
      {"micro_batch", "/training/micro_batch"},
      {"global_batch", "/training/global_batch"},
      {"zero_stage", "/parallelism/zero_stage"},
      {"recompute", "/training/recompute"},
      {"sequence_parallel", "/parallelism/sequence_parallel"},
      {"grad_dtype", "/comm/grad_dtype"},
      {"compression", "/comm/compression"},
  };
  for (const auto& [axis, pointer] : scalar) {
    if (axes.contains(axis)) dims.push_back(set_each(pointer, axes.at(axis)));
  }
  add_hardware_and_moe_axes(spec, dims);
  return dims;
}

// The cross product of the expansions applied to the base, at most kMaxPoints.
std::vector<Variant> cross(const SweepSpec& spec, const std::vector<Expand>& dims) {
  std::vector<Variant> current = {{spec.base, "", {}}};
  for (const auto& expand : dims) {
    std::vector<Variant> next;
    for (const auto& v : current) {
      for (auto& e : expand(v)) {
        next.push_back(std::move(e));
        if (next.size() > kMaxPoints) {
          throw ConfigError(spec.file, "/axes",
                            "the axes give more than " + std::to_string(kMaxPoints) +
                                " points; split the sweep into several files");
        }
      }
    }
    current = std::move(next);
  }
  if (current.empty()) {
    throw ConfigError(spec.file, "/axes",
                      "the axes give no point (no layout multiplies to the "
                      "GPU count?)");
  }
  return current;
}

}  // namespace

std::vector<SweepPoint> enumerate_points(const SweepSpec& spec) {
  std::vector<Variant> variants = cross(spec, axis_expansions(spec));
  std::vector<SweepPoint> points;
  points.reserve(variants.size());
  for (std::size_t i = 0; i < variants.size(); ++i) {
    SweepPoint p;
    p.index = i;
    p.scenario = std::move(variants[i].scenario);
    p.error = std::move(variants[i].error);
    p.what_if = std::move(variants[i].what_if);
    p.parameters = sweep_parameters(spec, p.scenario, p.what_if);
    points.push_back(std::move(p));
  }
  assign_labels(points);
  return points;
}

const std::vector<std::string>& optional_parameter_names() {
  return kOptionalParameters;
}

json sweep_parameters(const SweepSpec& spec, const json& s,
                      const std::vector<std::string>& what_if) {
  json p = point_parameters(s);
  auto value_or = [&](const char* pointer, json fallback) {
    json v = get_or_null(s, pointer);
    return v.is_null() ? fallback : v;
  };
  const json gpu = get_or_null(s, "/cluster/gpu");
  const json optional = {
      {"nic_Gbps", get_or_null(s, "/cluster/nic_Gbps")},
      {"nvlink_GBps", value_or("/cluster/nvlink_GBps", get_or_null(s, "/cluster/gpu/nvlink_GBps"))},
      {"gpu", gpu.is_object() ? gpu.value("name", json("")) : gpu},
      {"ep", value_or("/parallelism/ep", 1)},
      {"moe_dispatcher", value_or("/training/moe_dispatcher", "alltoall")},
      {"moe_expert_gemm", value_or("/training/moe_expert_gemm", "per_expert")},
      {"moe_comm_overlap", value_or("/training/moe_comm_overlap", false)},
      {"fp8_param_gather", value_or("/training/fp8_param_gather", false)},
      {"fp8_recipe", value_or("/training/fp8_recipe", "delayed")}};
  for (const auto& [name, value] : optional.items()) {
    if (spec.axes.contains(name)) p[name] = value;
  }
  const bool hardware = std::any_of(kHardwareAxes.begin(), kHardwareAxes.end(),
                                    [&](const std::string& a) { return spec.axes.contains(a); });
  if (hardware) {
    std::string notes;
    for (const auto& n : what_if) notes += (notes.empty() ? "" : "; ") + n;
    p["what_if"] = notes;
  }
  return p;
}

std::string canonical_json(const json& scenario) {
  return scenario.dump();
}

namespace {

// The scenario without what changes no evaluation: its name and description, the tokens to
// train on, the price, and the checkpointing and campaign sections (a step and the memory check
// read none of them; the sweep derives time to train and cost from them afterwards).
json step_relevant(json scenario) {
  for (const char* key : {"name", "description", "cost", "checkpointing", "campaign"}) {
    scenario.erase(key);
  }
  if (auto t = scenario.find("training"); t != scenario.end() && t->is_object()) {
    t->erase("tokens_total");
  }
  return scenario;
}

}  // namespace

std::string point_key(const json& scenario, const std::string& evaluator) {
  return fnv1a64_hex("clustersim-sweep-point v2\n" + evaluator + "\n" +
                     canonical_json(step_relevant(scenario)));
}

json point_parameters(const json& s) {
  auto or_default = [&](const char* pointer, json fallback) {
    json v = get_or_null(s, pointer);
    return v.is_null() ? fallback : v;
  };
  json compression = or_default("/comm/compression", "none");
  if (compression.is_object()) compression = compression.value("kind", json("none"));
  json cluster = get_or_null(s, "/cluster");
  json model = get_or_null(s, "/model");
  json p = json::object();
  p["gpus"] = or_default("/gpus", 0);
  p["dp"] = or_default("/parallelism/dp", 1);
  p["tp"] = or_default("/parallelism/tp", 1);
  p["pp"] = or_default("/parallelism/pp", 1);
  p["vpp"] = or_default("/parallelism/vpp", 1);
  p["cp"] = or_default("/parallelism/cp", 1);
  p["micro_batch"] = or_default("/training/micro_batch", 1);
  p["global_batch"] = or_default("/training/global_batch", 0);
  p["zero_stage"] = or_default("/parallelism/zero_stage", 0);
  p["recompute"] = or_default("/training/recompute", "none");
  p["sequence_parallel"] = or_default("/parallelism/sequence_parallel", false);
  const json precision = or_default("/training/precision", "bf16");
  const auto dtype = precision.is_string() ? kDtypeNames.find(precision.get<std::string>())
                                           : std::optional<Dtype>{};
  p["grad_dtype"] = or_default("/comm/grad_dtype",
                               to_string(input::default_grad_dtype(dtype.value_or(Dtype::bf16))));
  p["compression"] = compression;
  p["nics_per_node"] = or_default("/cluster/nics_per_node", 0);
  p["oversubscription"] = or_default("/cluster/fabric/oversubscription", 1);
  p["cluster"] = cluster.is_object() ? cluster.value("name", json("")) : cluster;
  p["model"] = model.is_object() ? model.value("name", json("")) : model;
  return p;
}

}  // namespace clustersim::sweep
