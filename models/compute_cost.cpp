#include "models/compute_cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "core/data_root.hpp"

namespace clustersim::models {

double GemmShape::min_dim() const {
  return std::min({m, n, k});
}

double GemmShape::cube_side() const {
  return std::cbrt(m * n * k);
}

namespace {

// Efficiency at x from points sorted by strictly increasing x_of(point): linear in log2(x) (the
// benchmarks double their sizes, so this is the natural axis), clamped at both ends.
template <typename Point, typename X>
double interpolate_log2(const std::vector<Point>& points, X x_of, double x) {
  if (points.empty()) throw std::logic_error("efficiency curve without points");
  if (x <= x_of(points.front())) return points.front().efficiency;
  if (x >= x_of(points.back())) return points.back().efficiency;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (x <= x_of(points[i])) {
      const double x0 = std::log2(x_of(points[i - 1]));
      const double x1 = std::log2(x_of(points[i]));
      const double t = (std::log2(x) - x0) / (x1 - x0);
      return points[i - 1].efficiency + t * (points[i].efficiency - points[i - 1].efficiency);
    }
  }
  return points.back().efficiency;
}

}  // namespace

double GemmEfficiencyCurve::at(double min_dim) const {
  const double e = interpolate_log2(
      points, [](const EfficiencyPoint& p) { return p.min_dim; }, min_dim);
  return std::min(e, best_shape_efficiency);
}

double GemmEfficiencyCurve::of(const GemmShape& shape) const {
  return at(axis == GemmCurveAxis::cube_side ? shape.cube_side() : shape.min_dim());
}

double AttentionEfficiencyCurve::at(double seq_len) const {
  return interpolate_log2(
      points, [](const AttentionEfficiencyPoint& p) { return p.seq_len; }, seq_len);
}

OpCost& OpCost::operator+=(const OpCost& other) {
  time_s += other.time_s;
  compute_s += other.compute_s;
  memory_s += other.memory_s;
  launch_s += other.launch_s;
  host_s += other.host_s;
  kernels += other.kernels;
  flops += other.flops;
  bytes += other.bytes;
  return *this;
}

OpCost& OpCost::operator-=(const OpCost& other) {
  time_s -= other.time_s;
  compute_s -= other.compute_s;
  memory_s -= other.memory_s;
  launch_s -= other.launch_s;
  host_s -= other.host_s;
  kernels -= other.kernels;
  flops -= other.flops;
  bytes -= other.bytes;
  return *this;
}

namespace {

const std::vector<std::string> kGemmDtypes = {"bf16", "fp16", "fp8"};
const std::vector<std::string> kAttentionDtypes = {"bf16", "fp16"};
// The training.attention names whose figures attention.other_kernels may hold.
const std::vector<std::string> kOtherAttentionKernels = {"flash2", "flash3"};

Dtype dtype_named(const std::string& name) {
  if (name == "bf16") return Dtype::bf16;
  if (name == "fp16") return Dtype::fp16;
  if (name == "fp8") return Dtype::fp8;
  if (name == "fp32") return Dtype::fp32;
  return Dtype::tf32;
}

// {"tflops", "peak_tflops", "source"} -> efficiency in (0, 1].
double measured_efficiency(const JsonNode& node, std::vector<std::string> extra_keys = {}) {
  node.require_object();
  std::vector<std::string> keys = {"tflops", "peak_tflops", "source"};
  keys.insert(keys.end(), extra_keys.begin(), extra_keys.end());
  node.only_keys(keys);
  const double tflops = node.positive_at("tflops");
  const double peak = node.positive_at("peak_tflops");
  if (node.string_at("source").empty()) node.fail_at("source", "a citation is required");
  if (tflops > peak) {
    node.fail_at("tflops", "measured " + std::to_string(tflops) + " TFLOPS exceeds the peak " +
                               std::to_string(peak));
  }
  return tflops / peak;
}

// A non-empty array of measured points, each {x_key, "tflops", "peak_tflops", "source"}, in
// strictly increasing x_key; `x` is the member that holds it.
template <typename Point>
std::vector<Point> load_points(const JsonNode& points, const std::string& x_key, double Point::*x) {
  if (!points.is_array() || points.items().empty()) {
    points.fail("expected a non-empty array of calibration points");
  }
  std::vector<Point> out;
  for (const JsonNode& p : points.items()) {
    Point point;
    point.*x = p.positive_at(x_key);
    point.efficiency = measured_efficiency(p, {x_key});
    point.source = p.string_at("source");
    if (!out.empty() && point.*x <= out.back().*x) {
      p.fail_at(x_key, "points must have strictly increasing " + x_key + ", got " +
                           std::to_string(point.*x) + " after " + std::to_string(out.back().*x));
    }
    out.push_back(point);
  }
  return out;
}

GemmEfficiencyCurve load_curve(const JsonNode& node) {
  node.require_object();
  node.only_keys({"series", "read_at", "best_shape", "points", "not_used"});
  GemmEfficiencyCurve curve;
  curve.series = node.string_at("series");
  if (node.has("read_at")) {
    curve.axis = kGemmCurveAxisNames.value(node.enum_at("read_at", kGemmCurveAxisNames.names()));
  }
  curve.best_shape_efficiency = measured_efficiency(node.at("best_shape"));
  curve.points = load_points(node.at("points"), "min_dim", &EfficiencyPoint::min_dim);
  return curve;
}

// An attention figure: one measurement {"tflops", "peak_tflops", "source"} (the same at every
// sequence length), or a sweep {"series", "points": [{"seq_len", "tflops", ...}, ...]}.
AttentionEfficiencyCurve load_attention_curve(const JsonNode& node) {
  node.require_object();
  AttentionEfficiencyCurve curve;
  if (!node.has("points")) {
    curve.points.push_back({1, measured_efficiency(node), node.string_at("source")});
    return curve;
  }
  node.only_keys({"series", "points"});
  if (node.string_at("series").empty()) node.fail_at("series", "say what was measured");
  curve.points = load_points(node.at("points"), "seq_len", &AttentionEfficiencyPoint::seq_len);
  return curve;
}

// {"kernel": "...", "bf16": curve, "fp16": curve, "backward": {"bf16": curve, ...}}; the
// caller checks the object's other keys.
AttentionFigures load_attention_figures(const JsonNode& node) {
  AttentionFigures figures;
  figures.kernel = node.string_at("kernel");
  for (const auto& name : kAttentionDtypes) {
    if (const auto curve = node.find(name)) {
      figures.forward[dtype_named(name)] = load_attention_curve(*curve);
    }
  }
  if (const auto backward = node.find("backward")) {
    backward->require_object();
    backward->only_keys(kAttentionDtypes);
    for (const auto& [name, curve] : backward->members()) {
      figures.backward[dtype_named(name)] = load_attention_curve(curve);
    }
  }
  if (!node.has("bf16")) node.fail_at("bf16", "missing required attention figure");
  return figures;
}

// {"tensor_sustained_fraction": 0.9, ...}: each name known, each value inside its range.
SystemValues load_system_values(const JsonNode& node) {
  node.require_object();
  SystemValues values;
  for (const auto& [name, value] : node.members()) {
    const auto id = parse_system_parameter(name);
    if (!id)
      node.fail_at(name, "unknown system parameter (known: " + system_parameter_names() + ")");
    const SystemParameterSpec& spec = system_parameter(*id);
    const double v = value.as_number();
    if (!(v >= spec.low && v <= spec.high)) {
      value.fail(std::to_string(v) + " is outside the plausible range [" +
                 std::to_string(spec.low) + ", " + std::to_string(spec.high) + "] of " + spec.name +
                 " (" + spec.unit + ")");
    }
    values[*id] = v;
  }
  return values;
}

std::vector<std::string> load_string_list(const JsonNode& node) {
  std::vector<std::string> out;
  for (const JsonNode& item : node.items()) out.push_back(item.as_string());
  return out;
}

// The `system` block: fitted parameters and the record of their cross-validated fit.
SystemCalibration load_system(const JsonNode& node) {
  node.require_object();
  node.only_keys({"description", "parameters", "fit"});
  SystemCalibration sys;
  sys.values = load_system_values(node.at("parameters"));
  const auto fit = node.find("fit");
  if (!fit) return sys;
  fit->only_keys({"note", "fitted_on", "in_sample_mape_pct", "cross_validated_mape_pct", "folds"});
  sys.note = fit->string_or("note", "");
  if (const auto on = fit->find("fitted_on")) sys.fitted_on = load_string_list(*on);
  if (fit->has("in_sample_mape_pct"))
    sys.in_sample_mape_pct = fit->non_negative_or("in_sample_mape_pct", 0);
  if (fit->has("cross_validated_mape_pct"))
    sys.cross_validated_mape_pct = fit->non_negative_or("cross_validated_mape_pct", 0);
  if (const auto folds = fit->find("folds")) {
    for (const JsonNode& f : folds->items()) {
      f.only_keys({"held_out_source", "held_out_cases", "parameters"});
      SystemFold fold;
      fold.held_out_source = f.string_at("held_out_source");
      if (const auto cases = f.find("held_out_cases"))
        fold.held_out_cases = load_string_list(*cases);
      fold.values = load_system_values(f.at("parameters"));
      sys.folds.push_back(std::move(fold));
    }
  }
  return sys;
}

// {"file", "why"}: another calibration file, named relative to the directory of `file`, loaded;
// `why` must say why its figures carry over (`why_missing` when it does not).
JsonDocument named_calibration(const JsonNode& node, const std::string& file,
                               const std::string& why_missing) {
  node.require_object();
  node.only_keys({"file", "why"});
  const std::string name = node.string_at("file");
  if (node.string_at("why").empty()) node.fail_at("why", why_missing);
  const std::string path = (std::filesystem::path(file).parent_path() / name).string();
  if (!std::filesystem::is_regular_file(path)) node.fail_at("file", "no such file: " + path);
  return JsonDocument::load(path);
}

// `system_from`: {"file", "why"}. A GPU whose runs no other source measured (its calibration
// holds no fit of its own) takes the fitted block of another calibration file, named relative
// to its own: the same die and kernels fitted on other runs. The named file must hold a
// `system` block itself (no chains).
SystemCalibration borrowed_system(const JsonNode& node, const std::string& file) {
  const JsonDocument document = named_calibration(node, file, "say why the fit carries over");
  const std::string name = node.string_at("file");
  const JsonNode other = document.root();
  other.require_object();
  if (other.has("system_from")) {
    node.fail_at("file", name +
                             " borrows its own system block (system_from); name the file "
                             "that holds the fit");
  }
  const auto system = other.find("system");
  if (!system) node.fail_at("file", name + " holds no fitted system block");
  SystemCalibration sys = load_system(*system);
  sys.borrowed_from = name;
  return sys;
}

// The GEMM curves by dtype; a later section replaces an earlier one whole.
void load_gemm_section(ComputeCalibration& cal, const JsonNode& gemm) {
  gemm.require_object();
  gemm.only_keys(kGemmDtypes);
  cal.gemm.clear();
  for (const auto& [name, node] : gemm.members()) {
    cal.gemm[dtype_named(name)] = load_curve(node);
  }
  // FP8 is optional: a GPU without FP8 tensor cores (A100) has no FP8 curve, and a scenario
  // asking for FP8 GEMMs on it fails in gemm_efficiency() naming the file.
  if (!gemm.has("bf16")) gemm.fail_at("bf16", "missing required GEMM curve");
}

// The fused attention kernel's figures; other_kernels, when given, replace the earlier ones
// (a based file that measured only the calibration's own kernel keeps its base's others).
void load_attention_section(ComputeCalibration& cal, const JsonNode& attention) {
  attention.require_object();
  attention.only_keys(
      {"kernel", "bf16", "fp16", "backward", "other_kernels", "fp8_training", "not_used"});
  cal.attention = load_attention_figures(attention);
  if (const auto others = attention.find("other_kernels")) {
    others->require_object();
    others->only_keys(kOtherAttentionKernels);
    cal.other_attention.clear();
    for (const auto& [name, node] : others->members()) {
      node.require_object();
      node.only_keys({"kernel", "bf16", "fp16", "backward"});
      cal.other_attention[name] = load_attention_figures(node);
    }
  }
}

void load_memory_section(ComputeCalibration& cal, const JsonNode& memory) {
  memory.require_object();
  memory.only_keys({"hbm_efficiency", "element_wise"});
  const JsonNode hbm = memory.at("hbm_efficiency");
  hbm.require_object();
  hbm.only_keys({"achieved_TBps", "peak_TBps", "source", "measured"});
  const double achieved = hbm.positive_at("achieved_TBps");
  const double peak = hbm.positive_at("peak_TBps");
  if (achieved > peak) hbm.fail_at("achieved_TBps", "exceeds peak_TBps");
  if (hbm.string_at("source").empty()) hbm.fail_at("source", "a citation is required");
  cal.hbm_efficiency = achieved / peak;
  cal.hbm_measured = HbmMeasurement::stream_copy;
  if (hbm.has("measured")) {
    cal.hbm_measured =
        kHbmMeasurementNames.value(hbm.enum_at("measured", kHbmMeasurementNames.names()));
  }
  // {"share_of_copy": 0.61, "source": "..."}: measured element-wise kernels over the copy.
  cal.element_wise_share.reset();
  if (const auto ew = memory.find("element_wise")) {
    ew->require_object();
    ew->only_keys({"share_of_copy", "source"});
    if (cal.hbm_measured != HbmMeasurement::stream_copy)
      ew->fail("a share of a stream copy's rate needs hbm_efficiency measured by a stream copy");
    const double share = ew->positive_at("share_of_copy");
    if (share > 1) ew->fail_at("share_of_copy", "must be at most 1 (a share of the copy's rate)");
    if (ew->string_at("source").empty()) ew->fail_at("source", "a citation is required");
    cal.element_wise_share = share;
  }
}

// `base`: {"file", "why"}. A GPU measured only in part (a variant of another GPU's die) takes
// every section its own file leaves out from the calibration file named, relative to its own:
// GEMM curves, attention figures, memory, and the system block (its base's own fit, or the one
// its base borrows). The named file must not be based on another (no chains).
ComputeCalibration base_calibration(const JsonNode& node, const std::string& file) {
  const JsonDocument document =
      named_calibration(node, file, "say why the base's figures carry over");
  const std::string name = node.string_at("file");
  if (document.root().has("base")) {
    node.fail_at("file", name + " is based on another file itself; name the file it is based on");
  }
  ComputeCalibration cal = load_compute_calibration(document);
  if (cal.system.borrowed_from.empty() && !cal.system.values.empty()) {
    cal.system.borrowed_from = name;
  }
  return cal;
}

}  // namespace

ComputeCalibration load_compute_calibration(const JsonDocument& document) {
  const JsonNode root = document.root();
  root.require_object();
  root.only_keys({"description", "base", "gemm", "attention", "memory", "system", "system_from"});
  const auto base = root.find("base");
  ComputeCalibration cal = base ? base_calibration(*base, document.file()) : ComputeCalibration{};
  cal.file = document.file();
  // Without a base every section is required (root.at names the missing one).
  const auto section = [&](std::string_view key) -> std::optional<JsonNode> {
    if (base) return root.find(key);
    return root.at(key);
  };
  if (const auto gemm = section("gemm")) load_gemm_section(cal, *gemm);
  if (const auto attention = section("attention")) load_attention_section(cal, *attention);
  if (const auto memory = section("memory")) load_memory_section(cal, *memory);
  if (const auto system = root.find("system")) {
    cal.system = load_system(*system);
  } else if (const auto from = root.find("system_from")) {
    cal.system = borrowed_system(*from, document.file());
  }
  return cal;
}

ComputeCalibration load_compute_calibration(const std::string& path) {
  return load_compute_calibration(JsonDocument::load(path));
}

bool select_attention_kernel(ComputeCalibration& cal, const std::string& kernel) {
  if (kernel == "flash") return true;
  const auto it = cal.other_attention.find(kernel);
  if (it == cal.other_attention.end()) return false;
  cal.attention = it->second;
  return true;
}

std::string default_compute_calibration_path() {
  return data_root() + "/validation/data/compute_efficiency.json";
}

std::string compute_calibration_path(const GpuSpec& gpu) {
  return gpu.compute_calibration.empty() ? default_compute_calibration_path()
                                         : gpu.compute_calibration;
}

namespace {
// Three significant digits: 0.912, 6.31, 12.4.
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
}  // namespace

std::string describe_system_parameters(const GpuSpec& gpu, const ComputeCalibration& calibration) {
  const SystemCalibration& sys = calibration.system;
  const SystemValues& values = gpu.system_override ? *gpu.system_override : sys.values;
  if (values.empty())
    return "nominal: microbenchmark rates, " + format_number(gpu.kernel_launch_s * 1e6) +
           " us per kernel (no system fit in the compute calibration)";
  std::string out;
  for (const auto& [id, value] : values) {
    const SystemParameterSpec& spec = system_parameter(id);
    out += (out.empty() ? "" : ", ") + std::string(spec.name) + " " + format_number(value);
    // A fitted value pressed against its range: the runs wanted more than the range allows.
    if (!gpu.system_override && value >= spec.high) out += " (its upper bound)";
    if (!gpu.system_override && value <= spec.low) out += " (its lower bound)";
    // ComputeCostModel::hbm_Bps does not scale a kernel-measured HBM figure by it.
    if (id == SystemParameterId::elementwise_hbm_fraction &&
        calibration.hbm_measured == HbmMeasurement::element_wise_kernel)
      out += " (not applied: this GPU's HBM figure is an element-wise kernel's)";
    if (id == SystemParameterId::elementwise_hbm_fraction && calibration.element_wise_share)
      out += " (not applied: element-wise kernels at the measured " +
             format_number(*calibration.element_wise_share) + " of the copy's rate)";
  }
  // What the fit leaves to measurements: the gap between queued kernels (when not fitted) and
  // the host's time per kernel (docs/system-calibration.md#host-dispatch).
  std::vector<std::string> items;
  if (values.find(SystemParameterId::kernel_gap_us) == values.end())
    items.push_back(format_number(gpu.kernel_launch_s * 1e6) + " us between queued kernels");
  if (values.find(SystemParameterId::host_us_per_kernel) == values.end())
    items.push_back(format_number(host_per_kernel_s(gpu) * 1e6) +
                    " us of host time per kernel issued");
  if (calibration.element_wise_share)
    items.push_back("element-wise kernels at " + format_number(*calibration.element_wise_share) +
                    " of the stream copy's rate");
  std::string measured;
  for (const std::string& item : items)
    measured += (measured.empty() ? "; measured: " : ", ") + item;
  if (gpu.system_override) return out + " (set for this run)" + measured;
  const std::string runs = std::to_string(sys.fitted_on.size()) + " published runs";
  if (!sys.borrowed_from.empty())
    return out + " (FITTED to " + runs + " of another GPU, taken from " + sys.borrowed_from +
           " by this GPU's calibration; values, not measurements)" + measured;
  return out + " (FITTED to " + runs +
         ", leave-one-source-out cross-validated; values, not measurements)" + measured;
}

double host_per_kernel_s(const GpuSpec& gpu) {
  return gpu.host_per_kernel_s >= 0 ? gpu.host_per_kernel_s : kHostPerKernelS;
}

std::string describe_cuda_graph_launch() {
  return "replayed from a CUDA graph: " + format_number(kCudaGraphKernelS * 1e6) +
         " us per kernel (measured on an H200), in place of the gap between queued kernels; "
         "no pass waits for the host";
}

ComputeCostModel::ComputeCostModel(GpuSpec gpu, ComputeCalibration calibration)
    : gpu_(std::move(gpu)), calibration_(std::move(calibration)) {
  if (!(gpu_.hbm_Bps > 0)) {
    throw std::invalid_argument("ComputeCostModel: GPU " + gpu_.name + " has no HBM bandwidth");
  }
  if (calibration_.gemm.empty() || calibration_.attention.forward.empty()) {
    throw std::invalid_argument("ComputeCostModel: calibration has no GEMM or attention data");
  }
  const SystemValues& values =
      gpu_.system_override ? *gpu_.system_override : calibration_.system.values;
  const auto value_or = [&](SystemParameterId id, double fallback) {
    const auto it = values.find(id);
    return it == values.end() ? fallback : it->second;
  };
  tensor_fraction_ = value_or(SystemParameterId::tensor_sustained_fraction, 1.0);
  elementwise_fraction_ = value_or(SystemParameterId::elementwise_hbm_fraction, 1.0);
  kernel_gap_s_ = value_or(SystemParameterId::kernel_gap_us, gpu_.kernel_launch_s * 1e6) * 1e-6;
  host_per_kernel_s_ =
      value_or(SystemParameterId::host_us_per_kernel, models::host_per_kernel_s(gpu_) * 1e6) * 1e-6;
  if (!(tensor_fraction_ > 0) || !(elementwise_fraction_ > 0) || !(kernel_gap_s_ >= 0) ||
      !(host_per_kernel_s_ >= 0)) {
    throw std::invalid_argument("ComputeCostModel: system parameters out of range");
  }
}

ComputeCostModel ComputeCostModel::replayed_from_cuda_graph() const {
  ComputeCostModel out = *this;
  out.kernel_gap_s_ = kCudaGraphKernelS;
  out.host_per_kernel_s_ = 0;
  return out;
}

double ComputeCostModel::gemm_efficiency(const GemmShape& shape, Dtype dtype) const {
  const auto it = calibration_.gemm.find(dtype);
  if (it == calibration_.gemm.end()) {
    throw std::invalid_argument(std::string("no GEMM calibration for dtype ") + to_string(dtype) +
                                " in " + calibration_.file);
  }
  return it->second.of(shape);
}

Dtype ComputeCostModel::attention_dtype(Dtype training_precision) {
  // Transformer Engine runs dot-product attention in BF16 under FP8 recipes (fp8_dpa = False).
  return training_precision == Dtype::fp8 ? Dtype::bf16 : training_precision;
}

double ComputeCostModel::attention_efficiency(Dtype dtype, double seq_len) const {
  const Dtype d = attention_dtype(dtype);
  const auto& forward = calibration_.attention.forward;
  if (const auto it = forward.find(d); it != forward.end()) return it->second.at(seq_len);
  // FP16 and BF16 share the tensor-core rate on Hopper (H100 datasheet).
  return forward.at(Dtype::bf16).at(seq_len);
}

double ComputeCostModel::attention_backward_efficiency(Dtype dtype, double seq_len) const {
  const Dtype d = attention_dtype(dtype);
  const auto& backward = calibration_.attention.backward;
  if (const auto it = backward.find(d); it != backward.end()) return it->second.at(seq_len);
  if (const auto it = backward.find(Dtype::bf16); it != backward.end()) {
    return it->second.at(seq_len);
  }
  return attention_efficiency(dtype, seq_len);
}

double ComputeCostModel::hbm_Bps(KernelSource source) const {
  // Framework kernels take a share of a stream copy's bandwidth: the calibration's measured one,
  // else the fitted element-wise fraction; PyTorch's own run at the copy's rate. A rate measured
  // on an element-wise kernel already is what the share scales a copy down to, and the only rate
  // there is for both.
  double share = source == KernelSource::pytorch
                     ? kPyTorchElementwiseOverCopy
                     : calibration_.element_wise_share.value_or(elementwise_fraction_);
  if (calibration_.hbm_measured == HbmMeasurement::element_wise_kernel) share = 1.0;
  return gpu_.hbm_Bps * calibration_.hbm_efficiency * share;
}

OpCost ComputeCostModel::roofline(double flops, double flops_per_s, double bytes) const {
  return roofline(flops, flops_per_s, bytes, hbm_Bps());
}

OpCost ComputeCostModel::roofline(double flops, double flops_per_s, double bytes,
                                  double hbm_Bps) const {
  OpCost c;
  c.flops = flops;
  c.bytes = bytes;
  c.compute_s = flops > 0 ? flops / flops_per_s : 0.0;
  c.memory_s = bytes > 0 ? bytes / hbm_Bps : 0.0;
  c.kernels = 1;
  c.launch_s = kernel_gap_s_;
  c.time_s = std::max(c.compute_s, c.memory_s) + c.launch_s;
  return c;
}

OpCost ComputeCostModel::launches(double kernels) const {
  OpCost c;
  c.kernels = kernels;
  c.launch_s = kernels * kernel_gap_s_;
  c.time_s = c.launch_s;
  return c;
}

OpCost ComputeCostModel::gemm(const GemmShape& shape, Dtype dtype, double count) const {
  const double in_bytes = bytes_per_element(dtype);
  const double out_bytes = dtype == Dtype::fp8 ? bytes_per_element(Dtype::bf16) : in_bytes;
  const double bytes =
      (shape.m * shape.k + shape.k * shape.n) * in_bytes + shape.m * shape.n * out_bytes;
  const double rate = gpu_.peak(dtype) * gemm_efficiency(shape, dtype) * tensor_fraction_;
  OpCost one = roofline(shape.flops(), rate, bytes);
  OpCost total;
  total.time_s = one.time_s * count;
  total.compute_s = one.compute_s * count;
  total.memory_s = one.memory_s * count;
  total.launch_s = one.launch_s * count;
  total.kernels = one.kernels * count;
  total.flops = one.flops * count;
  total.bytes = one.bytes * count;
  return total;
}

OpCost ComputeCostModel::batched_gemm(const GemmShape& shape, Dtype dtype, double batch) const {
  const double in_bytes = bytes_per_element(dtype);
  const double bytes =
      batch * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n) * in_bytes;
  return roofline(batch * shape.flops(),
                  gpu_.peak(dtype) * gemm_efficiency(shape, dtype) * tensor_fraction_, bytes);
}

OpCost ComputeCostModel::attention(double flops, double bytes, Dtype dtype, double seq_len) const {
  const Dtype d = attention_dtype(dtype);
  return roofline(flops, gpu_.peak(d) * attention_efficiency(d, seq_len) * tensor_fraction_, bytes);
}

OpCost ComputeCostModel::attention_backward(double flops, double bytes, Dtype dtype,
                                            double seq_len) const {
  const Dtype d = attention_dtype(dtype);
  return roofline(
      flops, gpu_.peak(d) * attention_backward_efficiency(d, seq_len) * tensor_fraction_, bytes);
}

OpCost ComputeCostModel::memory_op(double bytes, double flops, KernelSource source) const {
  // Element-wise FLOPs run on the CUDA cores far below the tensor-core peak; they never bind
  // before HBM for the kernels modelled here, so they are counted but not timed.
  OpCost c = roofline(0, 1, bytes, hbm_Bps(source));
  c.flops = flops;
  return c;
}

}  // namespace clustersim::models
