#include "sim/isolated.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// A child started by spawn(): its pid, the read end of its pipe and what it has sent so far.
struct Child {
  std::size_t index = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string answer;
};

Child spawn(std::size_t index, const std::function<std::string()>& work) {
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
  return {index, pid, fds[0], {}};
}

// Closes the pipe, reaps the child and decodes its answer (returns the bytes or throws).
std::string finish(Child& child) {
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return decode(child.answer, status);
}

// Waits until a child's pipe has data or is closed and reads what is there. Returns the
// position of a child whose pipe closed (its answer is complete), or -1.
int poll_children(std::vector<Child>& running) {
  std::vector<pollfd> fds;
  for (const auto& c : running) fds.push_back({c.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), -1) < 0) return -1;
  for (std::size_t k = 0; k < running.size(); ++k) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[65536];
    const ssize_t n = ::read(running[k].fd, buf, sizeof buf);
    if (n > 0) {
      running[k].answer.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

std::vector<IsolatedOutcome> run_pool(std::size_t n, int jobs, bool stop_on_error,
                                      const std::function<std::vector<double>(std::size_t)>& work,
                                      const IsolatedDone& on_done) {
  std::vector<IsolatedOutcome> out(n);
  std::vector<Child> running;
  bool failed = false;
  std::size_t next = 0;
  while (next < n || !running.empty()) {
    while (next < n && !(stop_on_error && failed) &&
           static_cast<int>(running.size()) < std::max(1, jobs)) {
      const std::size_t i = next++;
      running.push_back(spawn(i, [&work, i] { return doubles_to_bytes(work(i)); }));
    }
    if (running.empty()) break;
    const int done = poll_children(running);
    if (done < 0) continue;
    Child child = std::move(running[static_cast<std::size_t>(done)]);
    running.erase(running.begin() + done);
    IsolatedOutcome& o = out[child.index];
    try {
      o.values = doubles_from_bytes(finish(child));
    } catch (const std::exception& e) {
      o.error = std::current_exception();
      o.message = e.what();
      failed = true;
    }
    if (on_done) on_done(child.index);
  }
  return out;
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& work) {
  Child child = spawn(0, work);
  child.answer = read_all(child.fd);
  return finish(child);
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

std::vector<IsolatedOutcome> run_isolated_each(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work,
    const IsolatedDone& on_done) {
  return run_pool(n, jobs, false, work, on_done);
}

std::vector<std::vector<double>> run_isolated_all(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work,
    const IsolatedDone& on_done) {
  std::vector<IsolatedOutcome> outcomes = run_pool(n, jobs, true, work, on_done);
  std::vector<std::vector<double>> out;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].error) {
      out.push_back(std::move(outcomes[i].values));
      continue;
    }
    try {
      std::rethrow_exception(outcomes[i].error);
    } catch (const ConfigError&) {
      throw;
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      throw IsolatedRunError(IsolatedRunError::Kind::failed,
                             "item " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace clustersim::sim
