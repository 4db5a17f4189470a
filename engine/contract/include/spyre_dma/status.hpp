// Typed errors of the engine: a Status value for asynchronous results (what an operation completed
// with) and an exception hierarchy for requests rejected before anything is submitted.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma {

enum class ErrorCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,  // a request the engine refused; nothing was submitted
  kOutOfMemory,      // device memory, IOVA space or host memory exhausted
  kDeviceError,      // the device answered Error, Retry or Abend in an RB (see DeviceErrorDetail)
  kIommuFault,       // the device reported an access to host memory it was not given
  kDeviceTimeout,    // the device did not answer a CB within EngineOptions::cb_timeout
  kDeviceFault,      // the device misbehaved (an RB the engine cannot match, a broken ring)
  kCancelled,        // cancelled before completion: engine reset or shutdown
  kWaitTimeout,      // a wait gave up; the awaited work itself may still complete
  kClosed,           // the engine was closed
  // Remote memory (spyre_dma/rdma): the peer that owns it cannot be reached (never reached, or gone
  // mid-transfer), or it refused the access (a key it never issued or has revoked).
  kPeerUnreachable,
  kRemoteAccess,
  // An op that depends on one that failed (an earlier op of its stream, or an op before the event
  // record it waits on): it moved no bytes it had not moved when the failure became known
  // (docs/engine.md, "When an op fails"). Status::failed_op() names the op that failed first.
  kDependencyFailed,
  // A host callback or host task threw; the message holds the exception's text.
  kCallbackFailed,
};
std::string_view to_string(ErrorCode code) noexcept;

// What the device said about a failed CB, copied from its RB.
struct DeviceErrorDetail {
  hw::Pipeline pipeline = hw::Pipeline::kDmai;
  std::uint32_t tag = 0;
  hw::RbStatus status = hw::RbStatus::kError;
  hw::ErrorKind kind = hw::ErrorKind::kNone;
  hw::CbField field = hw::CbField::kNone;
  std::uint64_t detail = 0;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, std::optional<DeviceErrorDetail> device = std::nullopt)
      : code_(code), message_(std::move(message)), device_(device) {}
  // kDependencyFailed: the status of the op `failed_op` (its id) that failed first, carried on.
  static Status dependency_failed(std::uint64_t failed_op, const Status& cause, std::string_view failed_kind);
  static Status ok_status() { return {}; }

  bool ok() const noexcept { return code_ == ErrorCode::kOk; }
  explicit operator bool() const noexcept { return ok(); }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const std::optional<DeviceErrorDetail>& device() const noexcept { return device_; }
  // kDependencyFailed: the id of the op that failed first (0 otherwise).
  std::uint64_t failed_op() const noexcept { return failed_op_; }
  std::string to_string() const;  // "kind: message"
  // Throws the exception type that matches code() (nothing when ok).
  void throw_if_error() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::optional<DeviceErrorDetail> device_;
  std::uint64_t failed_op_ = 0;
};

// Base of every exception the engine throws.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }
  Status status() const { return Status(code_, what()); }

 private:
  ErrorCode code_;
};

#define SPYRE_DMA_ERROR_TYPE(Name, Code)                                  \
  class Name : public Error {                                             \
   public:                                                                \
    explicit Name(const std::string& message) : Error(Code, message) {}  \
  };
SPYRE_DMA_ERROR_TYPE(InvalidArgument, ErrorCode::kInvalidArgument)
SPYRE_DMA_ERROR_TYPE(OutOfMemory, ErrorCode::kOutOfMemory)
SPYRE_DMA_ERROR_TYPE(DeviceError, ErrorCode::kDeviceError)
SPYRE_DMA_ERROR_TYPE(IommuFault, ErrorCode::kIommuFault)
SPYRE_DMA_ERROR_TYPE(DeviceTimeout, ErrorCode::kDeviceTimeout)
SPYRE_DMA_ERROR_TYPE(DeviceFault, ErrorCode::kDeviceFault)
SPYRE_DMA_ERROR_TYPE(Cancelled, ErrorCode::kCancelled)
SPYRE_DMA_ERROR_TYPE(WaitTimeout, ErrorCode::kWaitTimeout)
SPYRE_DMA_ERROR_TYPE(Closed, ErrorCode::kClosed)
SPYRE_DMA_ERROR_TYPE(PeerUnreachable, ErrorCode::kPeerUnreachable)
SPYRE_DMA_ERROR_TYPE(RemoteAccess, ErrorCode::kRemoteAccess)
SPYRE_DMA_ERROR_TYPE(DependencyFailed, ErrorCode::kDependencyFailed)
SPYRE_DMA_ERROR_TYPE(CallbackFailed, ErrorCode::kCallbackFailed)
#undef SPYRE_DMA_ERROR_TYPE

}  // namespace spyre_dma
