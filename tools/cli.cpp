#include "tools/cli.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <sstream>

#include "core/data_root.hpp"

namespace clustersim::cli {

namespace {
const OptionSpec* find_spec(const std::vector<OptionSpec>& specs, const std::string& token) {
  for (const auto& s : specs) {
    if (token == "--" + s.name || (!s.short_name.empty() && token == "-" + s.short_name)) {
      return &s;
    }
  }
  return nullptr;
}
}  // namespace

Args::Args(const std::vector<std::string>& argv, const std::vector<OptionSpec>& specs,
           int max_positional) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string token = argv[i];
    std::optional<std::string> inline_value;
    if (token.rfind("--", 0) == 0) {
      if (const auto eq = token.find('='); eq != std::string::npos) {
        inline_value = token.substr(eq + 1);
        token = token.substr(0, eq);
      }
    }
    if (token.size() > 1 && token[0] == '-' &&
        !(std::isdigit(static_cast<unsigned char>(token[1])))) {
      const OptionSpec* spec = find_spec(specs, token);
      if (!spec) throw UsageError("unknown option " + token);
      auto& slot = values_[spec->name];
      if (!spec->repeatable && !slot.empty()) throw UsageError(token + " given twice");
      if (!spec->takes_value) {
        if (inline_value) throw UsageError(token + " takes no value");
        slot.push_back("1");
        continue;
      }
      if (inline_value) {
        slot.push_back(*inline_value);
        continue;
      }
      if (i + 1 >= argv.size()) throw UsageError(token + " needs a value");
      slot.push_back(argv[++i]);
      // Repeatable options take every following value up to the next option.
      while (spec->repeatable && i + 1 < argv.size() && argv[i + 1].rfind("-", 0) != 0) {
        slot.push_back(argv[++i]);
      }
      continue;
    }
    positional_.push_back(argv[i]);
  }
  if (max_positional >= 0 && static_cast<int>(positional_.size()) > max_positional) {
    throw UsageError("unexpected argument " + positional_[max_positional]);
  }
}

bool Args::flag(const std::string& name) const {
  return values_.count(name) != 0;
}

std::optional<std::string> Args::value(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::value_or(const std::string& name, const std::string& fallback) const {
  return value(name).value_or(fallback);
}

long long Args::int_or(const std::string& name, long long fallback) const {
  const auto v = value(name);
  if (!v) return fallback;
  std::size_t used = 0;
  long long out = 0;
  try {
    out = std::stoll(*v, &used);
  } catch (const std::exception&) {
    throw UsageError("--" + name + ": \"" + *v + "\" is not an integer");
  }
  if (used != v->size()) throw UsageError("--" + name + ": \"" + *v + "\" is not an integer");
  return out;
}

double Args::number_or(const std::string& name, double fallback) const {
  const auto v = value(name);
  if (!v) return fallback;
  std::size_t used = 0;
  double out = 0;
  try {
    out = std::stod(*v, &used);
  } catch (const std::exception&) {
    throw UsageError("--" + name + ": \"" + *v + "\" is not a number");
  }
  if (used != v->size() || !std::isfinite(out)) {
    throw UsageError("--" + name + ": \"" + *v + "\" is not a number");
  }
  return out;
}

std::uint64_t parse_size(const std::string& text) {
  const std::string usage = "\"" + text + "\" is not a size (e.g. 8, 64K, 8M, 1G)";
  if (text.empty()) throw UsageError("empty size");
  double scale = 1;
  std::string digits = text;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K': scale = 1024.0; break;
    case 'M': scale = 1024.0 * 1024; break;
    case 'G': scale = 1024.0 * 1024 * 1024; break;
    case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  if (scale > 1) digits.pop_back();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(digits, &used);
  } catch (const std::exception&) {
    throw UsageError(usage);
  }
  if (used != digits.size() || !std::isfinite(v)) throw UsageError(usage);
  const double bytes = std::floor(v * scale);
  if (!(bytes >= 1) || bytes > static_cast<double>(kMaxSizeBytes)) {
    throw UsageError("\"" + text + "\" is outside 1 byte .. 1T (" + std::to_string(kMaxSizeBytes) +
                     " bytes)");
  }
  return static_cast<std::uint64_t>(bytes);
}

std::string describe_options(const std::vector<OptionSpec>& specs) {
  std::ostringstream os;
  for (const auto& s : specs) {
    std::string left = "  ";
    if (!s.short_name.empty()) left += "-" + s.short_name + ", ";
    left += "--" + s.name;
    if (s.takes_value) left += " VALUE";
    if (left.size() < 26) left.resize(26, ' ');
    os << left << " " << s.help << "\n";
  }
  return os.str();
}

std::string data_path(const std::string& relative) {
  return data_root() + "/" + relative;
}

std::string utc_now(const char* strftime_format) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, strftime_format, &tm);
  return buf;
}

}  // namespace clustersim::cli
