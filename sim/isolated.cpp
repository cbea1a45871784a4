#include "sim/isolated.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "core/errors.hpp"

namespace clustersim::sim {

namespace {

// The child's answer: one tag byte, then the payload.
//   'V' value: the bytes `work` returned
//   'C' ConfigError: three length-prefixed strings (file, pointer, message)
//   'I' std::invalid_argument: its message
//   'E' any other exception: its message
constexpr char kValue = 'V';
constexpr char kConfigError = 'C';
constexpr char kInvalidArgument = 'I';
constexpr char kOtherError = 'E';

// Exit codes of the child (they only tell a clean answer from a failed write).
constexpr int kChildAnswered = 0;
constexpr int kChildWriteFailed = 3;

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

void put_string(std::string& out, const std::string& s) {
  const std::uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += s;
}

bool get_string(const std::string& in, std::size_t& pos, std::string* s) {
  std::uint64_t n = 0;
  if (in.size() - pos < sizeof n) return false;
  std::memcpy(&n, in.data() + pos, sizeof n);
  pos += sizeof n;
  if (in.size() - pos < n) return false;
  *s = in.substr(pos, n);
  pos += n;
  return true;
}

// Runs `work` and encodes its outcome.
std::string answer(const std::function<std::string()>& work) {
  try {
    return kValue + work();
  } catch (const ConfigError& e) {
    std::string out(1, kConfigError);
    put_string(out, e.file());
    put_string(out, e.pointer());
    put_string(out, e.message());
    return out;
  } catch (const std::invalid_argument& e) {
    return kInvalidArgument + std::string(e.what());
  } catch (const std::exception& e) {
    return kOtherError + std::string(e.what());
  } catch (...) {
    return kOtherError + std::string("unknown exception");
  }
}

[[noreturn]] void run_child(int fd, const std::function<std::string()>& work) {
  const std::string message = answer(work);
  const bool ok = write_all(fd, message.data(), message.size());
  ::close(fd);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(ok ? kChildAnswered : kChildWriteFailed);
}

[[noreturn]] void crashed(int status) {
  std::string how = "the child process failed (";
  if (WIFSIGNALED(status)) {
    how += "killed by signal " + std::to_string(WTERMSIG(status));
  } else if (WIFEXITED(status)) {
    how += "exit status " + std::to_string(WEXITSTATUS(status)) + " without an answer";
  } else {
    how += "wait status " + std::to_string(status);
  }
  throw IsolatedRunError(IsolatedRunError::Kind::crashed, how + ")", status);
}

// Decodes the child's message: returns the value or throws the error it carries.
std::string decode(const std::string& msg, int status) {
  if (msg.empty()) crashed(status);
  const std::string body = msg.substr(1);
  switch (msg[0]) {
    case kValue:
      if (!WIFEXITED(status) || WEXITSTATUS(status) != kChildAnswered) crashed(status);
      return body;
    case kConfigError: {
      std::size_t pos = 1;
      std::string file, pointer, message;
      if (!get_string(msg, pos, &file) || !get_string(msg, pos, &pointer) ||
          !get_string(msg, pos, &message)) {
        crashed(status);
      }
      throw ConfigError(file, pointer, message);
    }
    case kInvalidArgument: throw std::invalid_argument(body);
    case kOtherError: throw IsolatedRunError(IsolatedRunError::Kind::failed, body, status);
    default: crashed(status);
  }
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& work) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], work);
  }
  ::close(fds[1]);
  const std::string msg = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return decode(msg, status);
}

std::string doubles_to_bytes(const std::vector<double>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
}

std::vector<double> doubles_from_bytes(const std::string& bytes) {
  if (bytes.size() % sizeof(double) != 0) {
    throw IsolatedRunError(IsolatedRunError::Kind::failed,
                           "run_isolated: " + std::to_string(bytes.size()) +
                               " bytes are not a whole number of doubles");
  }
  std::vector<double> out(bytes.size() / sizeof(double));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<double> run_isolated_numbers(const std::function<std::vector<double>()>& work) {
  return doubles_from_bytes(run_isolated([&] { return doubles_to_bytes(work()); }));
}

}  // namespace clustersim::sim
