#include "core/run_sections.hpp"

#include <sstream>

namespace clustersim {

const char* to_string(IntervalPolicy p) {
  return kIntervalPolicyNames.name(p);
}

const char* to_string(SaveMode m) {
  return kSaveModeNames.name(m);
}

namespace {

std::string number(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

}  // namespace

CheckpointConfig CheckpointConfig::resolved_for(double model_parameters) const {
  CheckpointConfig c = *this;
  if (!c.size_given) c.size_bytes = c.bytes_per_parameter * model_parameters;
  if (c.write_Bps > 0) c.save_s = c.size_bytes / c.write_Bps;
  if (c.read_Bps > 0) c.load_s = c.size_bytes / c.read_Bps;
  c.check_async_stall();
  return c;
}

void CheckpointConfig::check_async_stall() const {
  if (mode == SaveMode::async && async_stall_s > save_s) {
    stall_where.fail(number(async_stall_s) + " exceeds the full save time (" + number(save_s) +
                     " s); async saving stalls training for less");
  }
}

}  // namespace clustersim
