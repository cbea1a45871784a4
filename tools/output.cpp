#include "tools/output.hpp"

#include <cmath>
#include <cstdio>

#include "core/atomic_file.hpp"

namespace clustersim::cli {

std::string json_text(const nlohmann::json& value) {
  return value.dump(2) + "\n";
}

void write_json_file(const std::string& path, const nlohmann::json& value) {
  write_file_atomically(path, json_text(value));
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return fixed(v, u == 0 ? 0 : 2) + " " + units[u];
}

std::string human_seconds(double s) {
  if (!std::isfinite(s)) return "inf";
  if (std::fabs(s) >= 1) return fixed(s, 3) + " s";
  if (std::fabs(s) >= 1e-3) return fixed(s * 1e3, 3) + " ms";
  return fixed(s * 1e6, 2) + " us";
}

void label_row(std::ostream& os, const std::string& label, const std::string& value,
               std::size_t width) {
  std::string l = "  " + label;
  if (l.size() < width) l.resize(width, ' ');
  os << l << value << "\n";
}

void system_rows(std::ostream& os, const Scenario& s, const models::ComputeCalibration& compute,
                 std::size_t width) {
  label_row(os, "system", models::describe_system_parameters(s.cluster.gpu, compute), width);
  if (s.training.cuda_graphs == CudaGraphs::full_iteration) {
    label_row(os, "kernel launches", models::describe_cuda_graph_launch(), width);
  }
}

}  // namespace clustersim::cli
