#include "sweep/hardware_axes.hpp"

#include <cstdio>

namespace clustersim::sweep {

namespace {

using nlohmann::json;

std::string value_text(const json& v) {
  if (v.is_null()) return "none";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v.get<double>());
    return buf;
  }
  return v.dump();
}

std::string cluster_name(const json& cluster) {
  const json name = cluster.value("name", json());
  return name.is_string() ? name.get<std::string>() : "the base cluster";
}

// The citation of `key` in `holder`'s "sources", "" when there is none.
std::string citation(const json& holder, const std::string& key) {
  const auto sources = holder.find("sources");
  if (sources == holder.end() || !sources->is_object()) return "";
  const auto it = sources->find(key);
  return (it != sources->end() && it->is_string()) ? it->get<std::string>() : "";
}

// What a swept value replaces: the value in force and where it is cited.
struct Replaced {
  json value;
  std::string cited;  // "" when uncited
};

// Sets holder[key] = value with its citation replaced by the what-if marker, when the value
// differs from `old`; returns the note ("" when it does not differ).
std::string set_what_if(json& holder, const std::string& key, const json& value,
                        const Replaced& old, const std::string& what, const std::string& unit,
                        const std::string& owner) {
  if (value == old.value) return "";
  holder[key] = value;
  const std::string old_text = value_text(old.value) + unit;
  std::string marker = std::string(kWhatIfPrefix) + ": " + value_text(value) + unit +
                       " set by a sweep axis; " + owner + " has " + old_text;
  if (!old.cited.empty()) marker += ", cited as: " + old.cited;
  if (!holder.contains("sources") || !holder["sources"].is_object()) {
    holder["sources"] = json::object();
  }
  holder["sources"][key] = marker;
  return (what.empty() ? "" : what + " ") + value_text(value) + unit + " in place of the " +
         (old.cited.empty() ? "" : "cited ") + old_text + " of " + owner;
}

// The cluster object of a resolved scenario; nullptr when it is not one (the loader says so).
json* cluster_of(json& scenario) {
  if (!scenario.is_object()) return nullptr;
  const auto it = scenario.find("cluster");
  return (it != scenario.end() && it->is_object()) ? &*it : nullptr;
}

Replaced current(const json& holder, const std::string& key) {
  return {holder.value(key, json()), citation(holder, key)};
}

}  // namespace

std::string set_nic_Gbps(json& scenario, const json& gbps) {
  json* c = cluster_of(scenario);
  if (!c) return "";
  return set_what_if(*c, "nic_Gbps", gbps, current(*c, "nic_Gbps"), "NIC", " Gb/s",
                     cluster_name(*c));
}

std::string set_nics_per_node(json& scenario, const json& nics) {
  json* c = cluster_of(scenario);
  if (!c) return "";
  const std::string owner = cluster_name(*c);
  std::string note = set_what_if(*c, "nics_per_node", nics, current(*c, "nics_per_node"),
                                 "NICs per node", "", owner);
  // A rail-optimized fabric has one NIC per GPU; other NIC counts are not rail-optimized.
  if (nics != c->value("gpus_per_node", json()) && c->value("rail_optimized", false)) {
    const std::string rail = set_what_if(*c, "rail_optimized", false, current(*c, "rail_optimized"),
                                         "rail-optimized", "", owner);
    note += (note.empty() ? "" : "; ") + rail;
  }
  return note;
}

std::string set_oversubscription(json& scenario, const json& ratio) {
  json* c = cluster_of(scenario);
  if (!c || !c->contains("fabric") || !(*c)["fabric"].is_object()) return "";
  json& fabric = (*c)["fabric"];
  // Without the key the loader takes a non-blocking fabric (1).
  Replaced old = current(fabric, "oversubscription");
  if (old.value.is_null()) old.value = 1;
  return set_what_if(fabric, "oversubscription", ratio, old, "oversubscription", ":1",
                     cluster_name(*c));
}

std::string set_nvlink_GBps(json& scenario, const json& gbps) {
  json* c = cluster_of(scenario);
  if (!c) return "";
  // The cluster's own figure, else its GPU's.
  Replaced old = current(*c, "nvlink_GBps");
  std::string owner = cluster_name(*c);
  if (old.value.is_null() && c->contains("gpu") && (*c)["gpu"].is_object()) {
    const json& gpu = (*c)["gpu"];
    old = current(gpu, "nvlink_GBps");
    owner = cluster_name(*c) + "'s GPU " + value_text(gpu.value("name", json()));
  }
  return set_what_if(*c, "nvlink_GBps", gbps, old, "NVLink", " GB/s", owner);
}

std::string set_gpu(json& scenario, const json& gpu) {
  json* c = cluster_of(scenario);
  if (!c) return "";
  const json old = c->contains("gpu") && (*c)["gpu"].is_object() ? (*c)["gpu"].value("name", json())
                                                                 : c->value("gpu", json());
  const json name = gpu.value("name", json());
  if (old == name) return "";
  (*c)["gpu"] = gpu;
  return "GPU " + value_text(name) + " in place of " + value_text(old) + " in " + cluster_name(*c);
}

void grow_cluster(json& scenario, int nodes) {
  json* c = cluster_of(scenario);
  if (!c) return;
  const Replaced old = current(*c, "nodes");
  if (old.value == nodes) return;
  (*c)["nodes"] = nodes;
  std::string note = std::to_string(nodes) + " nodes for the GPU count of a sweep point; " +
                     cluster_name(*c) + " has " + value_text(old.value);
  if (!old.cited.empty()) note += ", cited as: " + old.cited;
  if (!c->contains("sources") || !(*c)["sources"].is_object()) (*c)["sources"] = json::object();
  (*c)["sources"]["nodes"] = note;
}

}  // namespace clustersim::sweep
