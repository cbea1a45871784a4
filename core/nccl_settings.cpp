#include "core/nccl_settings.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/json_reader.hpp"

namespace clustersim {

const char* to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::ring: return "Ring";
    case NcclAlgo::tree: return "Tree";
    case NcclAlgo::nvls: return "NVLS";
    case NcclAlgo::nvls_tree: return "NVLSTree";
    case NcclAlgo::collnet_direct: return "CollNetDirect";
    case NcclAlgo::collnet_chain: return "CollNetChain";
    case NcclAlgo::pat: return "PAT";
  }
  return "?";
}

const char* to_string(NcclProto p) {
  switch (p) {
    case NcclProto::ll: return "LL";
    case NcclProto::ll128: return "LL128";
    case NcclProto::simple: return "Simple";
  }
  return "?";
}

const char* to_string(PathLevel l) {
  switch (l) {
    case PathLevel::loc: return "LOC";
    case PathLevel::nvl: return "NVL";
    case PathLevel::pix: return "PIX";
    case PathLevel::pxb: return "PXB";
    case PathLevel::phb: return "PHB";
    case PathLevel::sys: return "SYS";
  }
  return "?";
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

const std::vector<std::string>& known_nccl_variables() {
  static const std::vector<std::string> names = {"NCCL_ALGO",
                                                 "NCCL_PROTO",
                                                 "NCCL_MIN_NCHANNELS",
                                                 "NCCL_MAX_NCHANNELS",
                                                 "NCCL_MIN_CTAS",
                                                 "NCCL_MAX_CTAS",
                                                 "NCCL_NET_GDR_LEVEL",
                                                 "NCCL_NET_GDR_READ",
                                                 "NCCL_P2P_LEVEL",
                                                 "NCCL_P2P_DISABLE",
                                                 "NCCL_SHM_DISABLE",
                                                 "NCCL_BUFFSIZE",
                                                 "NCCL_NVLS_ENABLE",
                                                 "NCCL_IB_TIMEOUT",
                                                 "NCCL_IB_RETRY_CNT",
                                                 "NCCL_IB_SL",
                                                 "NCCL_IB_TC",
                                                 "NCCL_IB_HCA",
                                                 "NCCL_IB_QPS_PER_CONNECTION",
                                                 "NCCL_IB_DISABLE",
                                                 "NCCL_NSOCKS_PERTHREAD",
                                                 "NCCL_SOCKET_NTHREADS",
                                                 "NCCL_SOCKET_IFNAME",
                                                 "NCCL_CROSS_NIC",
                                                 "NCCL_DEBUG",
                                                 "NCCL_DEBUG_SUBSYS",
                                                 "NCCL_NTHREADS",
                                                 "NCCL_CHECKS_DISABLE",
                                                 "NCCL_LAUNCH_MODE"};
  return names;
}

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

// A value given as a JSON string or integer, as text.
std::string value_text(const JsonNode& node) {
  if (node.is_string()) return node.as_string();
  if (node.is_number()) return std::to_string(node.as_int());
  node.fail("expected a string or an integer (as the environment variable's value), got " +
            node.describe());
}

long parse_integer(const JsonNode& node, long min, long max) {
  const std::string text = value_text(node);
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    node.fail("\"" + text + "\" is not an integer");
  }
  if (used != text.size()) node.fail("\"" + text + "\" is not an integer");
  if (v < min || v > max) {
    node.fail(text + " is out of range; expected " + std::to_string(min) + " to " +
              std::to_string(max));
  }
  return v;
}

PathLevel parse_path_level(const JsonNode& node, bool allow_nvl) {
  const std::string text = upper(value_text(node));
  static const std::vector<std::pair<std::string, PathLevel>> names = {
      {"LOC", PathLevel::loc}, {"NVL", PathLevel::nvl}, {"PIX", PathLevel::pix},
      {"PXB", PathLevel::pxb}, {"PHB", PathLevel::phb}, {"SYS", PathLevel::sys}};
  for (const auto& [name, level] : names) {
    if (text == name && (allow_nvl || level != PathLevel::nvl)) return level;
  }
  // Legacy integers (env.rst): 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS (5 also means SYS).
  static const PathLevel legacy[] = {PathLevel::loc, PathLevel::pix, PathLevel::pxb,
                                     PathLevel::phb, PathLevel::sys, PathLevel::sys};
  if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
    const long v = parse_integer(node, 0, 5);
    return legacy[v];
  }
  node.fail("\"" + value_text(node) + "\" is not a path level; expected " +
            std::string(allow_nvl ? "LOC, NVL, PIX, PXB, PHB, SYS" : "LOC, PIX, PXB, PHB, SYS") +
            " or 0-5");
}

template <typename T>
std::vector<T> parse_name_list(const JsonNode& node,
                               const std::vector<std::pair<std::string, T>>& names,
                               const char* what) {
  // NCCL syntax: "ring,tree" enables those; "^tree" disables those. Per-collective forms
  // ("allreduce:tree;...") apply the list given for all-reduce to every collective here.
  std::string text = value_text(node);
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    std::string chosen;
    for (const auto& part : split(text, ';')) {
      const auto c = part.find(':');
      if (c == std::string::npos) node.fail("\"" + part + "\" lacks a \"collective:\" prefix");
      if (upper(part.substr(0, c)) == "ALLREDUCE" || chosen.empty()) chosen = part.substr(c + 1);
    }
    text = chosen;
  }
  bool negate = false;
  if (!text.empty() && text[0] == '^') {
    negate = true;
    text = text.substr(1);
  }
  std::vector<T> listed;
  std::vector<std::string> valid;
  for (const auto& [n, v] : names) valid.push_back(n);
  for (const auto& word : split(text, ',')) {
    bool found = false;
    for (const auto& [n, v] : names) {
      if (upper(word) == upper(n)) {
        listed.push_back(v);
        found = true;
      }
    }
    if (!found) {
      node.fail("\"" + word + "\" is not a known " + what + "; expected one of " +
                join_names(valid));
    }
  }
  if (!negate) return listed;
  std::vector<T> out;
  for (const auto& [n, v] : names) {
    if (std::find(listed.begin(), listed.end(), v) == listed.end()) out.push_back(v);
  }
  if (out.empty()) node.fail("disables every " + std::string(what));
  return out;
}

}  // namespace

NcclSettings parse_nccl_settings(const JsonNode& node) {
  node.require_object();
  NcclSettings s;
  const auto& known = known_nccl_variables();
  auto note = [&](const std::string& name, const std::string& value, bool modelled,
                  std::string why) {
    s.notes.push_back({name, value, modelled, std::move(why)});
  };
  for (const auto& [name, value] : node.members()) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string message = "unknown NCCL variable \"" + name + "\"";
      const std::string suggestion = nearest_name(name, known);
      if (!suggestion.empty()) message += "; did you mean \"" + suggestion + "\"?";
      value.fail(message);
    }
    const std::string text = value_text(value);
    s.given[name] = text;
    if (name == "NCCL_ALGO") {
      s.algos = parse_name_list<NcclAlgo>(value,
                                          {{"Ring", NcclAlgo::ring},
                                           {"Tree", NcclAlgo::tree},
                                           {"NVLS", NcclAlgo::nvls},
                                           {"NVLSTree", NcclAlgo::nvls_tree},
                                           {"CollnetDirect", NcclAlgo::collnet_direct},
                                           {"CollnetChain", NcclAlgo::collnet_chain},
                                           {"PAT", NcclAlgo::pat}},
                                          "NCCL algorithm");
      note(name, text, true, "restricts the algorithms the cost model may choose");
    } else if (name == "NCCL_PROTO") {
      s.protos = parse_name_list<NcclProto>(
          value,
          {{"LL", NcclProto::ll}, {"LL128", NcclProto::ll128}, {"Simple", NcclProto::simple}},
          "NCCL protocol");
      note(name, text, true, "restricts the protocols the cost model may choose");
    } else if (name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MIN_CTAS" ||
               name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MAX_CTAS") {
      const long v = parse_integer(value, 1, 1 << 20);
      const int capped = static_cast<int>(std::min<long>(v, kNcclMaxChannels));
      if (v > kNcclMaxChannels) {
        s.warnings.push_back(name + "=" + text + " exceeds NCCL's MAXCHANNELS (" +
                             std::to_string(kNcclMaxChannels) + "); NCCL caps it at " +
                             std::to_string(kNcclMaxChannels));
      }
      const bool is_min = name.find("MIN") != std::string::npos;
      (is_min ? s.min_channels : s.max_channels) = capped;
      note(name, text, true, "sets the channel count bounds of every collective");
    } else if (name == "NCCL_NET_GDR_LEVEL") {
      s.net_gdr_level = parse_path_level(value, false);
      note(name, text, true,
           "GPUDirect RDMA is used when the NIC is at most this far from the GPU; otherwise "
           "network traffic is staged through host memory over PCIe");
    } else if (name == "NCCL_P2P_LEVEL") {
      s.p2p_level = parse_path_level(value, true);
      note(name, text, true,
           "peer-to-peer transport inside a node is used up to this distance; NVL keeps it on "
           "NVLink");
    } else if (name == "NCCL_BUFFSIZE") {
      s.buffsize_bytes = static_cast<double>(parse_integer(value, 1024, 1L << 31));
      note(name, text, true, "sets the chunk size of pipelined collective steps");
    } else if (name == "NCCL_NVLS_ENABLE") {
      s.nvls_enable = parse_integer(value, 0, 2) == 1   ? std::optional<bool>(true)
                      : parse_integer(value, 0, 2) == 0 ? std::optional<bool>(false)
                                                        : std::nullopt;
      note(name, text, true, "enables or disables NVLink SHARP algorithms");
    } else if (name == "NCCL_IB_TIMEOUT") {
      s.ib_timeout = static_cast<int>(parse_integer(value, 0, 31));
      note(name, text, true,
           "one InfiniBand transport timeout is 4.096 us x 2^value; used by the fault model to "
           "time hang detection");
    } else if (name == "NCCL_IB_RETRY_CNT") {
      const long v = parse_integer(value, 0, 1 << 20);
      s.ib_retry_cnt_given = static_cast<int>(v);
      s.ib_retry_cnt = static_cast<int>(std::min<long>(v, 7));
      if (v > 7) {
        s.warnings.push_back("NCCL_IB_RETRY_CNT=" + text +
                             " exceeds the 3-bit retry counter of InfiniBand queue pairs; the "
                             "hardware uses at most 7");
      }
      note(name, text, true, "retries before a down link is reported; used by the fault model");
    } else if (name == "NCCL_NSOCKS_PERTHREAD" || name == "NCCL_SOCKET_NTHREADS") {
      parse_integer(value, 1, name == "NCCL_SOCKET_NTHREADS" ? 16 : 64);
      note(name, text, false,
           "affects only NCCL's socket (TCP) transport; an InfiniBand cluster uses the IB verbs "
           "transport, so it has no effect");
    } else if (name == "NCCL_IB_SL" || name == "NCCL_IB_TC") {
      parse_integer(value, 0, name == "NCCL_IB_SL" ? 15 : 255);
      note(name, text, false,
           "selects an InfiniBand service level / traffic class; it matters only when the fabric "
           "has QoS lanes separating competing traffic, which the cluster model does not have");
    } else if (name == "NCCL_IB_QPS_PER_CONNECTION") {
      parse_integer(value, 1, 128);
      note(name, text, false,
           "queue pairs per connection; flow-level sharing is not modelled "
           "per queue pair");
    } else {
      note(name, text, false, "has no effect on simulated time");
    }
  }
  if (s.min_channels && s.max_channels && s.min_channels > s.max_channels) {
    node.fail("NCCL_MIN_NCHANNELS (" + std::to_string(s.min_channels) +
              ") is larger than NCCL_MAX_NCHANNELS (" + std::to_string(s.max_channels) + ")");
  }
  if (const auto t = s.given.find("NCCL_IB_TIMEOUT"); t != s.given.end()) {
    if (s.ib_timeout == 0) s.warnings.push_back("NCCL_IB_TIMEOUT=0 disables the IB timeout");
  }
  return s;
}

}  // namespace clustersim
