// Error kinds shared by every layer of clustersim.
//
// ConfigError is bad input: it names the file, the JSON pointer inside it and what is wrong.
// EnvironmentError is a failure of the machine around valid input (an output that cannot be
// written, a process that cannot be started). InternalError is a result the simulator must
// never produce (a deadlock, a time that is not finite): a bug to report. The command-line tool
// turns them into exit codes 2, 3 and 4 (tools/main.cpp). Library code never calls exit().
#pragma once

#include <stdexcept>
#include <string>

namespace clustersim {

class ConfigError : public std::runtime_error {
 public:
  // file: path as the user gave it (may be empty for command-line input);
  // pointer: RFC 6901 JSON pointer ("" for the whole document);
  // message: what is wrong, including the offending value.
  ConfigError(std::string file, std::string pointer, const std::string& message);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string pointer_;
  std::string message_;
};

class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace clustersim
