#include "sweep/process_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace clustersim::sweep {

namespace {

using Clock = std::chrono::steady_clock;

// How often the pool wakes up to check timeouts, the stop flag and the progress display.
constexpr int kPollIntervalMs = 200;

struct Running {
  std::size_t id = 0;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  Clock::time_point start;
  ProcessResult result;
};

[[noreturn]] void child_exec(const ProcessJob& job, int out_w, int err_w, pid_t parent) {
  // Die with the parent, and catch the race where it died before prctl took effect.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  ::dup2(out_w, STDOUT_FILENO);
  ::dup2(err_w, STDERR_FILENO);
  if (job.delay_ms > 0) ::usleep(job.delay_ms * 1000U);
  std::vector<char*> argv;
  for (const auto& a : job.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  const std::string message = "cannot run " + job.argv[0] + ": " + std::strerror(errno) + "\n";
  (void)!::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(127);
}

bool drain(int& fd, std::string& into) {
  if (fd < 0) return false;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(fd);  // EOF or error
    fd = -1;
    return false;
  }
}

Running spawn(std::size_t id, const ProcessJob& job) {
  if (job.argv.empty()) throw std::invalid_argument("run_processes: a job has an empty argv");
  int out_pipe[2];
  int err_pipe[2];
  // O_CLOEXEC: no other child inherits these ends, so each pipe sees EOF when its child exits.
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error("pipe2 failed");
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) child_exec(job, out_pipe[1], err_pipe[1], parent);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  Running r;
  r.id = id;
  r.start = Clock::now();
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    r.result.spawn_failed = true;
    r.result.err = std::string("fork failed: ") + std::strerror(errno);
    return r;
  }
  r.pid = pid;
  r.out_fd = out_pipe[0];
  r.err_fd = err_pipe[0];
  ::fcntl(r.out_fd, F_SETFL, ::fcntl(r.out_fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(r.err_fd, F_SETFL, ::fcntl(r.err_fd, F_GETFL) | O_NONBLOCK);
  return r;
}

void reap(Running& r) {
  int status = 0;
  while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    r.result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.result.term_signal = WTERMSIG(status);
  }
  r.result.wall_s = std::chrono::duration<double>(Clock::now() - r.start).count();
}

void kill_and_reap(Running& r) {
  if (r.pid > 0) {
    ::kill(r.pid, SIGKILL);
    reap(r);
  }
  if (r.out_fd >= 0) ::close(r.out_fd);
  if (r.err_fd >= 0) ::close(r.err_fd);
  r.out_fd = r.err_fd = -1;
}

}  // namespace

std::string ProcessResult::describe() const {
  if (spawn_failed) return "could not start: " + err;
  if (timed_out) return "timed out after " + std::to_string(static_cast<long>(wall_s)) + " s";
  if (term_signal != 0) {
    return std::string("killed by signal ") + std::to_string(term_signal) + " (" +
           ::strsignal(term_signal) + ")";
  }
  return "exit code " + std::to_string(exit_code);
}

bool run_processes(const std::function<std::optional<std::pair<std::size_t, ProcessJob>>()>& next,
                   const std::function<void(std::size_t, ProcessResult&&)>& done,
                   const PoolOptions& options) {
  const int parallel = std::max(1, options.parallel);
  std::vector<Running> running;
  bool more = true;
  auto stopped = [&] { return options.stop != nullptr && *options.stop != 0; };
  while (true) {
    while (more && !stopped() && static_cast<int>(running.size()) < parallel) {
      auto job = next();
      if (!job) {
        more = false;
        break;
      }
      Running r = spawn(job->first, job->second);
      if (r.result.spawn_failed) {
        done(r.id, std::move(r.result));
        continue;
      }
      running.push_back(std::move(r));
    }
    if (stopped()) {
      for (auto& r : running) kill_and_reap(r);
      return false;
    }
    if (running.empty()) return true;

    std::vector<pollfd> fds;
    for (const auto& r : running) {
      if (r.out_fd >= 0) fds.push_back({r.out_fd, POLLIN, 0});
      if (r.err_fd >= 0) fds.push_back({r.err_fd, POLLIN, 0});
    }
    if (!fds.empty()) {
      ::poll(fds.data(), fds.size(), kPollIntervalMs);
    } else {
      ::usleep(kPollIntervalMs * 1000);
    }
    if (options.tick) options.tick();

    for (std::size_t i = 0; i < running.size();) {
      Running& r = running[i];
      drain(r.out_fd, r.result.out);
      drain(r.err_fd, r.result.err);
      const double elapsed = std::chrono::duration<double>(Clock::now() - r.start).count();
      if (r.out_fd < 0 && r.err_fd < 0) {
        reap(r);
      } else if (options.timeout_s > 0 && elapsed > options.timeout_s) {
        kill_and_reap(r);
        r.result.timed_out = true;
      } else {
        ++i;
        continue;
      }
      ProcessResult result = std::move(r.result);
      const std::size_t id = r.id;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      done(id, std::move(result));
    }
  }
}

std::string self_executable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
  return path.string();
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace clustersim::sweep
