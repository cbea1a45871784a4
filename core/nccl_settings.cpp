#include "core/nccl_settings.hpp"

#include <cmath>
#include <limits>

namespace clustersim {

const char* to_string(NcclAlgo a) {
  return kNcclAlgoNames.name(a);
}

const char* to_string(NcclProto p) {
  return kNcclProtoNames.name(p);
}

const char* to_string(PathLevel l) {
  return kPathLevelNames.name(l);
}

double NcclSettings::ib_timeout_s() const {
  // env.rst: "The timeout is computed as 4.096 µs * 2 ^ timeout"; 0 disables it.
  constexpr double kIbTimeoutUnit_s = 4.096e-6;
  if (ib_timeout <= 0 || ib_timeout >= 32) return std::numeric_limits<double>::infinity();
  return kIbTimeoutUnit_s * std::ldexp(1.0, ib_timeout);
}

double NcclSettings::ib_hang_detection_s() const {
  // The queue pair gives up after the first attempt and NCCL_IB_RETRY_CNT retries, each waiting
  // one transport timeout (InfiniBand spec, "Local ACK Timeout"; docs/faults.md#timeouts).
  return ib_timeout_s() * (1 + ib_retry_cnt);
}

}  // namespace clustersim
