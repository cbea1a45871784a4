#include "sweep/axis_presets.hpp"

#include <algorithm>
#include <filesystem>

#include "core/data_root.hpp"
#include "input/presets.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_path(const std::string& value) {
  const std::string suffix = ".json";
  return value.find('/') != std::string::npos ||
         (value.size() > suffix.size() &&
          value.compare(value.size() - suffix.size(), suffix.size(), suffix) == 0);
}

// A preset name, a file or an inline object, checked by `check` (the loader's rules).
template <typename Check>
json hardware_value(const JsonNode& v, const std::string& sweep_file, const char* folder,
                    const char* what, Check check) {
  if (v.is_string() && !is_path(v.as_string())) {
    return load_preset_json(folder, v.as_string(), what, v);
  }
  if (v.is_string()) {
    const std::string file =
        resolve_input_path(v.as_string(), sweep_file, v, std::string(what) + " file");
    const JsonDocument document = JsonDocument::load(file);
    check(document.root());
    return document.root().raw();
  }
  if (!v.is_object()) {
    v.fail(std::string("expected a ") + what + " preset name, a file path or an object, got " +
           v.describe());
  }
  check(v);
  return v.raw();
}

}  // namespace

std::string resolve_input_path(const std::string& path, const std::string& sweep_file,
                               const JsonNode& where, const std::string& what) {
  if (fs::path(path).is_absolute()) {
    if (!fs::exists(path)) where.fail(what + " \"" + path + "\" does not exist");
    return path;
  }
  const fs::path beside = fs::path(sweep_file).parent_path() / path;
  if (fs::exists(beside)) return beside.string();
  const fs::path in_data = fs::path(data_root()) / path;
  if (fs::exists(in_data)) return in_data.string();
  where.fail(what + " \"" + path + "\" is neither next to the sweep file (" + beside.string() +
             ") nor in the data directory (" + in_data.string() + ")");
}

json load_preset_json(const std::string& folder, const std::string& name, const char* what,
                      const JsonNode& where) {
  const auto names = preset_names(folder);
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string message = std::string("no ") + what + " preset named \"" + name + "\"";
    const std::string suggestion = nearest_name(name, names);
    message += suggestion.empty() ? "; available: " + join_names(names)
                                  : "; did you mean \"" + suggestion + "\"?";
    where.fail(message);
  }
  return JsonDocument::load(data_root() + "/" + folder + "/" + name + ".json").root().raw();
}

json inline_cluster(json cluster, const JsonNode& where) {
  if (cluster.is_string()) {
    cluster = load_preset_json("topologies/clusters", cluster.get<std::string>(), "cluster", where);
  }
  if (cluster.is_object() && cluster.contains("gpu") && cluster["gpu"].is_string()) {
    cluster["gpu"] =
        load_preset_json("topologies/gpus", cluster["gpu"].get<std::string>(), "GPU", where);
  }
  return cluster;
}

json cluster_value(const JsonNode& value, const std::string& sweep_file) {
  return inline_cluster(hardware_value(value, sweep_file, "topologies/clusters", "cluster",
                                       [](const JsonNode& n) { load_cluster(n); }),
                        value);
}

json gpu_value(const JsonNode& value, const std::string& sweep_file) {
  return hardware_value(value, sweep_file, "topologies/gpus", "GPU",
                        [](const JsonNode& n) { load_gpu(n); });
}

}  // namespace clustersim::sweep
