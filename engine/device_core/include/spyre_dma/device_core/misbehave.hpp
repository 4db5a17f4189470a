// A misbehaving device on purpose: ways a broken controller (or broken firmware) violates the
// ring contract, for testing that the engine above it detects each one, fails what is affected
// exactly once and recovers after a reset. Every device implements the same kinds with the same
// meaning through this header: the trigger (which CB), what becomes of that CB's RB and indices
// (MisbehaveEffect) and the retargeting of rogue_dma; each backend carries the effect out with its
// own storage and threads, and arms it through backend::MisbehaveControl (the model also from its
// FaultConfig misbehave block).
//
// One misbehaviour fires once, at the at_cb-th CB the device starts (1-based, counted over all
// pipelines in the order they start, after a barrier's wait); the CB's work itself is done as
// usual (except for rogue_dma) and the kind decides what happens to its RB and the ring indices:
//   unknown_tag        its RB carries a tag no CB was given (the CB's tag + 16384, wrapped into
//                      1..32768)
//   duplicate_rb       its RB is written twice, at two consecutive ring slots (the second waits
//                      for room like any RB)
//   stale_tag          its RB carries the tag of the previous CB of the same pipeline, which has
//                      been answered already (the CB's own tag + 16384 when it has no previous)
//   garbage_status     its RB carries STATUS 15 (no such status)
//   wrong_queue        its RB is written as usual and a copy (locator changed) goes to the RB ring
//                      of another pipeline (COMPUTE, or DMAI for a COMPUTE CB), which has no CB
//                      outstanding
//   rb_pi_beyond_ring  no RB; RB_PI jumps 2 x ring size + 1 ahead (beyond the ring); the pipeline
//                      stops until reset
//   cb_ci_backwards    no RB; CB_CI moves back below RB_PI (fewer CBs fetched than answered); the
//                      pipeline stops until reset
//   stop_answering     no RB, and from then on the device fetches no CB, writes no RB and ignores
//                      every register write except CONTROL (reads return the frozen values), until
//                      CONTROL.RESET
//   drop_rb            no RB for this CB, and nothing else: the device goes on with the next CB
//                      (a lost completion; the engine's CB timeout must end the op)
//   rogue_dma          the CB's host DMA section is pointed at rogue_iova (when nonzero) and its
//                      device VA moved by rogue_device_offset bytes (when nonzero) before the
//                      checks: the device's IOMMU and XLAT checks must refuse what the engine did
//                      not map or allocate (the RB reports it as usual)
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::device_core {

enum class MisbehaveKind : std::uint8_t {
  kNone,
  kUnknownTag,
  kDuplicateRb,
  kStaleTag,
  kGarbageStatus,
  kWrongQueue,
  kRbPiBeyondRing,
  kCbCiBackwards,
  kStopAnswering,
  kRogueDma,
  kDropRb,
};
inline constexpr std::size_t kNumMisbehaveKinds = 11;

// In enum order: the names configuration files use.
inline constexpr std::array<std::string_view, kNumMisbehaveKinds> kMisbehaveKindNames = {
    "none",           "unknown_tag",       "duplicate_rb",    "stale_tag",      "garbage_status",
    "wrong_queue",    "rb_pi_beyond_ring", "cb_ci_backwards", "stop_answering", "rogue_dma",
    "drop_rb"};

inline std::string_view to_string(MisbehaveKind k) noexcept {
  return kMisbehaveKindNames[static_cast<std::size_t>(k)];
}

inline std::optional<MisbehaveKind> misbehave_kind_from(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kNumMisbehaveKinds; ++i) {
    if (kMisbehaveKindNames[i] == name) return static_cast<MisbehaveKind>(i);
  }
  return std::nullopt;
}

// The STATUS value garbage_status writes (the contract defines 0..3).
inline constexpr std::uint8_t kGarbageRbStatus = 15;
// What unknown_tag (and stale_tag without a previous CB) adds to the CB's tag.
inline constexpr std::uint32_t kMisbehaveTagShift = 16384;

// The tag unknown_tag writes for a CB of tag `tag` (1..32768 in, 1..32768 out, never `tag`).
inline constexpr std::uint32_t shifted_tag(std::uint32_t tag) noexcept {
  return (tag - 1 + kMisbehaveTagShift) % 32768u + 1;
}

struct Misbehave {
  MisbehaveKind kind = MisbehaveKind::kNone;
  std::uint64_t at_cb = 1;  // 1-based; 0 never fires
  std::uint64_t rogue_iova = 0;           // rogue_dma: byte IOVA, a multiple of 128; 0: keep
  std::uint64_t rogue_device_offset = 0;  // rogue_dma: bytes added, a multiple of 128; 0: keep
};

// Counts the CBs a device starts (after a barrier's wait, in the order the device starts them) and
// says which one the armed misbehaviour fires at: once per arm(). Thread-safe.
class MisbehaveTrigger {
 public:
  // Arms `m`, counting from now; kind kNone disarms.
  void arm(const Misbehave& m) noexcept;
  Misbehave armed() const noexcept;
  // A CB starts: true when it is the one (the first call that reaches at_cb since arm()).
  bool cb_started() noexcept;
  // How often it fired since construction (0 or 1 per arm()).
  std::uint64_t fired() const noexcept { return fired_.load(std::memory_order_relaxed); }

 private:
  std::atomic<MisbehaveKind> kind_{MisbehaveKind::kNone};
  std::atomic<std::uint64_t> at_{0};
  std::atomic<std::uint64_t> rogue_iova_{0};
  std::atomic<std::uint64_t> rogue_offset_{0};
  std::atomic<std::uint64_t> started_{0};
  std::atomic<bool> done_{false};
  std::atomic<std::uint64_t> fired_{0};
};

// rogue_dma: the decoded CB's DMA sections pointed where `m` says, before any check.
void retarget(hw::ControlBlock& cb, const Misbehave& m) noexcept;

// What becomes of the CB a misbehaviour fires at, after its work (any kind but rogue_dma, whose CB
// is answered as usual). The backend writes `rbs` RBs of the CB's own answer `rb` (with `rb.tag`
// already replaced), then the stray copy, then breaks what the kind breaks.
struct MisbehaveEffect {
  hw::ResponseBlock rb;        // the RB to write (tag as the kind says)
  unsigned rbs = 1;            // 0, 1 or 2 copies of it, at consecutive slots
  bool garbage_status = false;  // STATUS goes out as kGarbageRbStatus (patch_garbage_status)
  std::optional<hw::Pipeline> stray_to;  // wrong_queue: a copy (locator changed) into this ring,
                                         // if it has room (else the copy is lost)
  bool rb_pi_beyond_ring = false;  // RB_PI jumps (rb_pi_beyond_ring()); the pipeline stops
  bool cb_ci_backwards = false;    // CB_CI moves back (cb_ci_backwards()); the pipeline stops
  bool stop_answering = false;     // the device stops answering (and freezes its registers)
  // Whether the pipeline stops at this CB (until reset) rather than going on with the next.
  bool stops() const noexcept { return rb_pi_beyond_ring || cb_ci_backwards || stop_answering; }
};
// `last_tag`: the tag of the pipeline's previous answered CB (0: none).
MisbehaveEffect misbehave_effect(MisbehaveKind kind, const hw::ResponseBlock& rb, std::uint32_t last_tag) noexcept;

// The indices the two index-breaking kinds leave.
inline std::uint32_t rb_pi_beyond_ring(std::uint32_t rb_pi, std::uint64_t rb_size) noexcept {
  return rb_pi + 2 * static_cast<std::uint32_t>(rb_size) + 1;
}
inline std::uint32_t cb_ci_backwards(std::uint32_t rb_pi) noexcept { return rb_pi - 1; }
// garbage_status: STATUS (word 0 bits 27:24) set to kGarbageRbStatus in the encoded RB.
inline void patch_garbage_status(hw::RbBytes& bytes) noexcept {
  bytes[3] = static_cast<std::uint8_t>((bytes[3] & 0xF0u) | kGarbageRbStatus);
}

}  // namespace spyre_dma::device_core
