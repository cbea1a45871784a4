// Every environment variable of NCCL's user guide, "Environment Variables" page
// (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; its source is
// docs/userguide/source/env.rst in NVIDIA/nccl at tag v2.30.7-1, the version the cost model
// transcribes), with the value type the page documents and, for the variables the simulator does
// not model, why. See docs/nccl.md#environment-variables.
#pragma once

#include <span>
#include <string>

namespace clustersim {

// The value a variable takes, as far as the guide says: an integer (with a documented range or
// set of values), 0 or 1, or anything else (names, lists, paths), taken as text.
enum class NcclValueKind { text, integer, flag };

struct NcclVariable {
  const char* name;
  NcclValueKind kind = NcclValueKind::text;
  long min = 0;  // integer: the documented range, inclusive
  long max = 0;
  bool power_of_two = false;  // integer: only powers of two in the range (NCCL_NTHREADS)
  // Why the simulator gives it no modelled effect (nullptr for the variables it models, whose
  // values input/nccl_settings.cpp reads).
  const char* unmodelled_because = nullptr;
};

// The guide's variables, in its order.
std::span<const NcclVariable> documented_nccl_variables();
// The entry named `name` (exact, upper case as NCCL reads it), or nullptr.
const NcclVariable* find_nccl_variable(const std::string& name);

}  // namespace clustersim
