#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace clustersim {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("cannot " + what + " " + path + ": " + std::strerror(errno));
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

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
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
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail("replace", path);
  }
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
