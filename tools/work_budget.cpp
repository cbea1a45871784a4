#include "tools/work_budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tools/output.hpp"

namespace clustersim::cli {

namespace {

std::string default_share() {
  return std::to_string(static_cast<int>(std::lround(100 * kDefaultMemoryFraction))) + "%";
}

}  // namespace

OptionSpec max_memory_option() {
  return {"max-memory", "", true, false,
          "refuse (exit 2) a step whose simulation is estimated to need more memory than SIZE "
          "(e.g. 512M, 4G; default: " +
              default_share() + " of the machine's physical memory)"};
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page_size);
}

step::WorkBudget work_budget(const Args& args, int jobs) {
  step::WorkBudget b;
  if (const auto text = args.value("max-memory")) {
    try {
      b.bytes = static_cast<double>(parse_size(*text));
    } catch (const UsageError& e) {
      throw UsageError(std::string("--max-memory: ") + e.what());
    }
    b.origin = "--max-memory " + *text + "; a larger --max-memory raises it";
    return b;
  }
  const double ram = physical_memory_bytes();
  const int share = std::max(jobs, 1);
  b.bytes = kDefaultMemoryFraction * ram / share;
  b.origin = "the default, " + default_share() + " of this machine's " + human_bytes(ram) +
             (share > 1 ? " shared by " + std::to_string(share) + " simulations at a time" : "") +
             "; --max-memory SIZE raises it";
  return b;
}

std::string child_max_memory(const Args& args, int jobs) {
  const step::WorkBudget budget = work_budget(args, jobs);
  if (!(budget.bytes > 0)) return "";
  return std::to_string(static_cast<std::uint64_t>(std::max(1.0, budget.bytes)));
}

}  // namespace clustersim::cli
