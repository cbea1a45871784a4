// Loading a command's input: the loader (input/input_loader.hpp) with the cluster graph's link
// names, which the loader cannot build itself, so that a fault naming a link the cluster does
// not have is refused at its JSON pointer before anything runs.
#pragma once

#include <string>

#include "core/input_bundle.hpp"

namespace clustersim::cli {

InputBundle load_command_input(const std::string& path);

}  // namespace clustersim::cli
