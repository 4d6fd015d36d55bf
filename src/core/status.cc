#include "suanli/status.h"

namespace suanli {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kParseError: return "parse error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kDoesNotFit: return "does not fit";
    case ErrorCode::kIoError: return "i/o error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace suanli
