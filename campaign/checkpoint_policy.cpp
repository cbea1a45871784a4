#include "campaign/checkpoint_policy.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace clustersim::campaign {

namespace {
void require_positive(double save_s, double mtbf_s, const char* who) {
  if (!(save_s > 0) || !std::isfinite(save_s)) {
    throw std::invalid_argument(std::string(who) + ": save_s must be > 0 and finite");
  }
  if (!(mtbf_s > 0)) throw std::invalid_argument(std::string(who) + ": mtbf_s must be > 0");
}
}  // namespace

double young_interval_s(double save_s, double mtbf_s) {
  require_positive(save_s, mtbf_s, "young_interval_s");
  return std::sqrt(2.0 * save_s * mtbf_s);
}

double daly_interval_s(double save_s, double mtbf_s) {
  require_positive(save_s, mtbf_s, "daly_interval_s");
  if (save_s >= 2.0 * mtbf_s) return mtbf_s;
  const double ratio = save_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * save_s * mtbf_s) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) - save_s;
}

double first_order_goodput(double interval_s, double save_s, double restart_s, double mtbf_s) {
  const double waste = save_s / interval_s + (interval_s / 2.0 + restart_s) / mtbf_s;
  return std::max(0.0, 1.0 - waste);
}

}  // namespace clustersim::campaign
