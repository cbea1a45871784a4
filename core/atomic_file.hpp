// Writing output files atomically: a reader sees the old file or the complete new one, never a
// half-written file, and a failed run leaves nothing behind.
#pragma once

#include <map>
#include <string>

namespace clustersim {

// Writes `content` to `path` through a temporary file in the same directory, flushed and
// renamed over the target. Throws EnvironmentError (core/errors.hpp) naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

// The output files of one command, all or nothing: each is declared (and checked) before the
// command does its work, given its content as the work produces it, and written at the end
// together. A command that fails before commit() leaves no output behind.
class OutputFiles {
 public:
  // Declares an output file: creates its directory when missing and checks that a file can be
  // created there and that `path` is not a directory. Throws EnvironmentError naming the path.
  void declare(const std::string& path);
  // Declares a directory that will receive files: creates it when missing, checks it is
  // writable. Files in it are declared by set() (their directory is then known to be good).
  void declare_directory(const std::string& path);
  // The content of a file in a declared directory or declared itself; replaces any earlier one.
  void set(const std::string& path, std::string content);
  // Writes every file given content to a temporary next to it (flushed), then renames each
  // over its target. If any temporary cannot be written none is renamed and all are removed.
  void commit();

 private:
  std::map<std::string, std::string> contents_;
};

// Appends one complete record (which must end in '\n') to `path` with a single write(2) on a
// file opened with O_APPEND, then fsyncs: concurrent appenders never interleave inside a
// record, and a crash leaves either the whole record or none of it.
void append_record(const std::string& path, const std::string& record);

}  // namespace clustersim
