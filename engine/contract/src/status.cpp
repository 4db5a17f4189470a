// Status text and the mapping from error codes to exception types.
#include "spyre_dma/status.hpp"

namespace spyre_dma {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kDeviceError: return "device error";
    case ErrorCode::kIommuFault: return "IOMMU fault";
    case ErrorCode::kDeviceTimeout: return "device timeout";
    case ErrorCode::kDeviceFault: return "device fault";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kWaitTimeout: return "wait timed out";
    case ErrorCode::kClosed: return "engine closed";
    case ErrorCode::kPeerUnreachable: return "peer unreachable";
    case ErrorCode::kRemoteAccess: return "remote access refused";
    case ErrorCode::kDependencyFailed: return "dependency failed";
    case ErrorCode::kCallbackFailed: return "callback failed";
  }
  return "unknown error";
}

Status Status::dependency_failed(std::uint64_t failed_op, const Status& cause, std::string_view failed_kind) {
  if (cause.code() == ErrorCode::kDependencyFailed) return cause;  // the first failure, carried on
  Status s(ErrorCode::kDependencyFailed,
           "op " + std::to_string(failed_op) + " (" + std::string(failed_kind) + ") failed first: " + cause.to_string(),
           cause.device());
  s.failed_op_ = failed_op;
  return s;
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  std::string s(spyre_dma::to_string(code_));
  if (!message_.empty()) s += ": " + message_;
  return s;
}

void Status::throw_if_error() const {
  const std::string text = to_string();
  switch (code_) {
    case ErrorCode::kOk: return;
    case ErrorCode::kInvalidArgument: throw InvalidArgument(text);
    case ErrorCode::kOutOfMemory: throw OutOfMemory(text);
    case ErrorCode::kDeviceError: throw DeviceError(text);
    case ErrorCode::kIommuFault: throw IommuFault(text);
    case ErrorCode::kDeviceTimeout: throw DeviceTimeout(text);
    case ErrorCode::kDeviceFault: throw DeviceFault(text);
    case ErrorCode::kCancelled: throw Cancelled(text);
    case ErrorCode::kWaitTimeout: throw WaitTimeout(text);
    case ErrorCode::kClosed: throw Closed(text);
    case ErrorCode::kPeerUnreachable: throw PeerUnreachable(text);
    case ErrorCode::kRemoteAccess: throw RemoteAccess(text);
    case ErrorCode::kDependencyFailed: throw DependencyFailed(text);
    case ErrorCode::kCallbackFailed: throw CallbackFailed(text);
  }
  throw Error(code_, text);
}

}  // namespace spyre_dma
