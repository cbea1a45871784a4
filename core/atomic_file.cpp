#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "core/errors.hpp"

namespace clustersim {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw EnvironmentError("cannot " + what + " " + path + ": " + std::strerror(errno));
}

void write_all(int fd, const std::string& content, const std::string& path) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", path);
    }
    done += static_cast<std::size_t>(n);
  }
}

// Writes `content` to a new temporary file next to `path`, flushed; returns its name.
std::string write_temporary(const std::string& path, const std::string& content) {
  std::string pattern = path + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail("create a temporary file for", path);
  const std::string temp(name.data());
  try {
    write_all(fd, content, path);
    if (::fsync(fd) != 0) fail("flush", path);
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  ::fchmod(fd, 0644);
  ::close(fd);
  return temp;
}

void rename_over(const std::string& temp, const std::string& path) {
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail("replace", path);
  }
}

// Creates `dir` (and its parents) when missing; refuses a path that is not a directory.
void ensure_directory(const std::filesystem::path& dir, const std::string& for_path) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw EnvironmentError("cannot create the directory " + dir.string() + " for " + for_path +
                           ": " + (ec ? ec.message() : std::string("not a directory")));
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  rename_over(write_temporary(path, content), path);
}

void OutputFiles::declare(const std::string& path) {
  if (path.empty()) throw EnvironmentError("an output file needs a name");
  const std::filesystem::path p(path);
  if (std::filesystem::is_directory(p)) {
    throw EnvironmentError("cannot write " + path + ": it is a directory");
  }
  ensure_directory(p.parent_path(), path);
  // A file can be created next to it: the directory is writable and has room for a name.
  ::unlink(write_temporary(path, "").c_str());
}

void OutputFiles::declare_directory(const std::string& path) {
  ensure_directory(path, path);
  ::unlink(write_temporary((std::filesystem::path(path) / "probe").string(), "").c_str());
}

void OutputFiles::set(const std::string& path, std::string content) {
  contents_[path] = std::move(content);
}

void OutputFiles::commit() {
  std::vector<std::pair<std::string, std::string>> written;  // (temporary, target)
  try {
    for (const auto& [path, content] : contents_) {
      written.emplace_back(write_temporary(path, content), path);
    }
  } catch (...) {
    for (const auto& [temp, path] : written) ::unlink(temp.c_str());
    throw;
  }
  for (const auto& [temp, path] : written) rename_over(temp, path);
  contents_.clear();
}

void append_record(const std::string& path, const std::string& record) {
  if (record.empty() || record.back() != '\n') {
    throw std::invalid_argument("append_record: a record must end with a newline");
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) fail("open", path);
  // One write call: O_APPEND makes the seek-and-write atomic with respect to other appenders.
  const ssize_t n = ::write(fd, record.data(), record.size());
  const int saved = errno;
  if (n != static_cast<ssize_t>(record.size())) {
    // A short write leaves a partial line; cut it off again so the file stays line-complete.
    if (n > 0) {
      const off_t end = ::lseek(fd, 0, SEEK_END);
      if (end >= n) (void)::ftruncate(fd, end - n);
    }
    ::close(fd);
    errno = n < 0 ? saved : EIO;
    fail("append to", path);
  }
  ::fsync(fd);
  ::close(fd);
}

}  // namespace clustersim
