// Writing output files atomically: a reader sees the old file or the complete new one, never a
// half-written file, and a failed run leaves nothing behind.
#pragma once

#include <string>

namespace clustersim {

// Writes `content` to `path` through a temporary file in the same directory, flushed and
// renamed over the target. Throws std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);

// Appends one complete record (which must end in '\n') to `path` with a single write(2) on a
// file opened with O_APPEND, then fsyncs: concurrent appenders never interleave inside a
// record, and a crash leaves either the whole record or none of it.
void append_record(const std::string& path, const std::string& record);

}  // namespace clustersim
