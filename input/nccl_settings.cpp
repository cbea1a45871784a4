#include "input/nccl_settings.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>

#include "input/nccl_variables.hpp"

namespace clustersim {

const std::vector<std::string>& known_nccl_variables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& v : documented_nccl_variables()) out.emplace_back(v.name);
    return out;
  }();
  return names;
}

namespace {

// The largest retry count an InfiniBand queue pair holds (a 3-bit counter).
constexpr int kIbMaxRetryCount = 7;

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
    node.fail(text + " is out of range; expected " +
              (max == std::numeric_limits<long>::max()
                   ? "at least " + std::to_string(min)
                   : std::to_string(min) + " to " + std::to_string(max)));
  }
  return v;
}

PathLevel parse_path_level(const JsonNode& node, bool allow_nvl) {
  const std::string text = upper(value_text(node));
  const auto level = kPathLevelNames.find(text);
  if (level && (allow_nvl || *level != PathLevel::nvl)) return *level;
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

// NCCL's per-collective form ("allreduce:tree;broadcast:ring") reduced to the list given for
// all-reduce (else the first), which the simulator applies to every collective.
std::string all_reduce_list(const JsonNode& node, std::string text) {
  if (text.find(':') == std::string::npos) return text;
  std::string chosen;
  for (const auto& part : split(text, ';')) {
    const auto c = part.find(':');
    if (c == std::string::npos) node.fail("\"" + part + "\" lacks a \"collective:\" prefix");
    if (upper(part.substr(0, c)) == "ALLREDUCE" || chosen.empty()) chosen = part.substr(c + 1);
  }
  return chosen;
}

// NCCL syntax: "ring,tree" enables those; "^tree" disables those.
template <typename T>
std::vector<T> parse_name_list(const JsonNode& node, const NameTable<T>& table, const char* what) {
  std::string text = all_reduce_list(node, value_text(node));
  const bool negate = !text.empty() && text[0] == '^';
  if (negate) text = text.substr(1);
  const std::vector<std::string> valid = table.names();
  std::vector<T> listed;
  for (const auto& word : split(text, ',')) {
    const auto it = std::find_if(valid.begin(), valid.end(),
                                 [&](const std::string& n) { return upper(word) == upper(n); });
    if (it == valid.end()) {
      node.fail("\"" + word + "\" is not a known " + what + "; expected one of " +
                join_names(valid));
    }
    listed.push_back(table.value(*it));
  }
  if (!negate) return listed;
  std::vector<T> out;
  for (const auto& n : valid) {
    const T v = table.value(n);
    if (std::find(listed.begin(), listed.end(), v) == listed.end()) out.push_back(v);
  }
  if (out.empty()) node.fail("disables every " + std::string(what));
  return out;
}

// One variable's effect on the settings; returns whether it is modelled and why (for notes).
struct Effect {
  bool modelled = false;
  std::string explanation;
};
using Handler = std::function<Effect(const std::string& name, const JsonNode& value,
                                     const std::string& text, NcclSettings& s)>;

Effect channels(const std::string& name, const JsonNode& value, const std::string& text,
                NcclSettings& s) {
  const long v = parse_integer(value, 1, 1 << 20);
  const int capped = static_cast<int>(std::min<long>(v, kNcclMaxChannels));
  if (v > kNcclMaxChannels) {
    s.warnings.push_back(name + "=" + text + " exceeds NCCL's MAXCHANNELS (" +
                         std::to_string(kNcclMaxChannels) + "); NCCL caps it at " +
                         std::to_string(kNcclMaxChannels));
  }
  const bool is_min = name.find("MIN") != std::string::npos;
  (is_min ? s.min_channels : s.max_channels) = capped;
  return {true, "sets the channel count bounds of every collective"};
}

Effect nvls_enable(const JsonNode& value, NcclSettings& s) {
  const long v = parse_integer(value, 0, 2);
  s.nvls_enable = v == 1   ? std::optional<bool>(true)
                  : v == 0 ? std::optional<bool>(false)
                           : std::nullopt;
  return {true, "enables or disables NVLink SHARP algorithms"};
}

Effect ib_retry_count(const JsonNode& value, const std::string& text, NcclSettings& s) {
  const long v = parse_integer(value, 0, 1 << 20);
  s.ib_retry_cnt_given = static_cast<int>(v);
  s.ib_retry_cnt = static_cast<int>(std::min<long>(v, kIbMaxRetryCount));
  if (v > kIbMaxRetryCount) {
    s.warnings.push_back("NCCL_IB_RETRY_CNT=" + text +
                         " exceeds the 3-bit retry counter of InfiniBand queue pairs; the "
                         "hardware uses at most 7");
  }
  return {true, "retries before a down link is reported; used by the fault model"};
}

// The variables whose values change what is simulated.
const std::map<std::string, Handler>& modelled_handlers() {
  static const std::map<std::string, Handler> handlers = {
      {"NCCL_ALGO",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) {
         s.algos = parse_name_list(v, kNcclAlgoNames, "NCCL algorithm");
         return Effect{true, "restricts the algorithms the cost model may choose"};
       }},
      {"NCCL_PROTO",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) {
         s.protos = parse_name_list(v, kNcclProtoNames, "NCCL protocol");
         return Effect{true, "restricts the protocols the cost model may choose"};
       }},
      {"NCCL_MIN_NCHANNELS", channels},
      {"NCCL_MIN_CTAS", channels},
      {"NCCL_MAX_NCHANNELS", channels},
      {"NCCL_MAX_CTAS", channels},
      {"NCCL_NET_GDR_LEVEL",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) {
         s.net_gdr_level = parse_path_level(v, false);
         return Effect{true,
                       "GPUDirect RDMA is used when the NIC is at most this far from the GPU; "
                       "otherwise network traffic is staged through host memory over PCIe"};
       }},
      {"NCCL_P2P_LEVEL",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) {
         s.p2p_level = parse_path_level(v, true);
         return Effect{true,
                       "peer-to-peer transport inside a node is used up to this distance; NVL "
                       "keeps it on NVLink"};
       }},
      {"NCCL_BUFFSIZE",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) {
         s.buffsize_bytes = static_cast<double>(parse_integer(v, 1024, 1L << 31));
         return Effect{true, "sets the chunk size of pipelined collective steps"};
       }},
      {"NCCL_NVLS_ENABLE",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) { return nvls_enable(v, s); }},
      {"NCCL_IB_TIMEOUT",
       [](auto&, const JsonNode& v, auto&, NcclSettings& s) {
         s.ib_timeout = static_cast<int>(parse_integer(v, 0, 31));
         return Effect{true,
                       "one InfiniBand transport timeout is 4.096 us x 2^value; used by the "
                       "fault model to time hang detection"};
       }},
      {"NCCL_IB_RETRY_CNT", [](auto&, const JsonNode& v, const std::string& text,
                               NcclSettings& s) { return ib_retry_count(v, text, s); }},
  };
  return handlers;
}

// A documented variable without a modelled effect: its value is checked where the guide gives a
// type (input/nccl_variables.cpp), and the note says why it does not change the simulation.
Effect unmodelled(const NcclVariable& variable, const JsonNode& value) {
  if (variable.kind == NcclValueKind::flag) {
    const std::string text = value_text(value);
    if (text != "0" && text != "1") value.fail("\"" + text + "\" is not 0 or 1");
  } else if (variable.kind == NcclValueKind::integer) {
    const long v = parse_integer(value, variable.min, variable.max);
    if (variable.power_of_two && (v & (v - 1)) != 0)
      value.fail(std::to_string(v) + " is not a power of two");
  }
  return {false,
          variable.unmodelled_because ? variable.unmodelled_because : "has no modelled effect"};
}

const NcclVariable& require_known(const std::string& name, const JsonNode& value) {
  if (const NcclVariable* known = find_nccl_variable(name)) return *known;
  const auto& known = known_nccl_variables();
  std::string message = "unknown NCCL variable \"" + name + "\"";
  const std::string suggestion = nearest_name(name, known);
  if (!suggestion.empty()) message += "; did you mean \"" + suggestion + "\"?";
  value.fail(message);
}

void check_settings(const JsonNode& node, NcclSettings& s) {
  if (s.min_channels && s.max_channels && s.min_channels > s.max_channels) {
    node.fail("NCCL_MIN_NCHANNELS (" + std::to_string(s.min_channels) +
              ") is larger than NCCL_MAX_NCHANNELS (" + std::to_string(s.max_channels) + ")");
  }
  if (s.given.count("NCCL_IB_TIMEOUT") && s.ib_timeout == 0) {
    s.warnings.push_back("NCCL_IB_TIMEOUT=0 disables the IB timeout");
  }
}

}  // namespace

NcclSettings parse_nccl_settings(const JsonNode& node) {
  node.require_object();
  NcclSettings s;
  for (const auto& [name, value] : node.members()) {
    const NcclVariable& variable = require_known(name, value);
    const std::string text = value_text(value);
    s.given[name] = text;
    const auto& handlers = modelled_handlers();
    const auto handler = handlers.find(name);
    const Effect effect = handler != handlers.end() ? handler->second(name, value, text, s)
                                                    : unmodelled(variable, value);
    s.notes.push_back({name, text, effect.modelled, effect.explanation});
  }
  check_settings(node, s);
  return s;
}

}  // namespace clustersim
