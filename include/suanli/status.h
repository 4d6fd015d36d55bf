// Errors are values. Every fallible library call returns Status or Result<T>;
// only the CLI turns an error into text on stderr and an exit code.
// The library never prints and never exits.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace suanli {

// What kind of failure happened. The CLI maps kinds to exit codes.
enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // a flag or parameter value is wrong (bad number, contradictory layout)
  kNotFound,         // an id (GPU, model, file) that does not exist
  kParseError,       // a file or text could not be parsed (with file and key/line in the message)
  kUnsupported,      // valid input that this version does not handle (e.g. unknown model_type)
  kDoesNotFit,       // a configuration that is valid but does not fit memory
  kIoError,          // reading or writing a file failed
  kInternal,         // a bug: an invariant did not hold
};

const char* ErrorCodeName(ErrorCode code);

// Status holds success, or an error code with a human-readable message that names
// the file, key or value at fault and, where possible, what would be valid.
class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Returns a copy with "context: " prepended to the message (e.g. the file name).
  Status WithContext(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status ParseError(std::string m) { return {ErrorCode::kParseError, std::move(m)}; }
inline Status Unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status IoError(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
inline Status Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

// Result<T> holds a T or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &std::get<T>(v_); }
  T* operator->() { return &std::get<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace suanli

// Propagate an error from an expression returning Status.
#define SUANLI_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::suanli::Status _st = (expr);            \
    if (!_st.ok()) return _st;                \
  } while (0)

#define SUANLI_CONCAT_INNER(a, b) a##b
#define SUANLI_CONCAT(a, b) SUANLI_CONCAT_INNER(a, b)
// Assign the value of a Result<T> expression to lhs, or return its error.
#define SUANLI_ASSIGN_OR_RETURN(lhs, expr)                            \
  auto SUANLI_CONCAT(_res_, __LINE__) = (expr);                       \
  if (!SUANLI_CONCAT(_res_, __LINE__).ok())                           \
    return SUANLI_CONCAT(_res_, __LINE__).status();                   \
  lhs = std::move(SUANLI_CONCAT(_res_, __LINE__)).value()
