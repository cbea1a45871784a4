// Where the shipped data lives (presets, scenarios, calibration files).
#pragma once

#include <string>

namespace clustersim {

// Root of the shipped data: $CLUSTERSIM_DATA_DIR if set, else the source tree the binary was
// built from.
std::string data_root();

// A data file named in an input file: `path` if absolute, else data_root()/path.
std::string resolve_data_path(const std::string& path);

}  // namespace clustersim
