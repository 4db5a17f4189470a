// A misbehaving device on purpose: ways a broken controller (or broken firmware) violates the
// ring contract, for testing that the engine above it detects each one, fails what is affected
// exactly once and recovers after a reset. The reference device (RefDevice::set_misbehave) and
// the SystemC model (FaultConfig misbehave block) implement the same kinds with the same meaning.
//
// One misbehaviour fires once, at the at_cb-th CB the device fetches (1-based, counted over all
// pipelines in fetch order); the CB's work itself is done as usual (except for rogue_dma) and the
// kind decides what happens to its RB and the ring indices:
//   unknown_tag        its RB carries a tag no CB was given (the CB's tag + 16384, wrapped into
//                      1..32768)
//   duplicate_rb       its RB is written twice, at two consecutive ring slots
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
//   rogue_dma          the CB's host DMA section is pointed at rogue_iova (when nonzero) and its
//                      device VA moved by rogue_device_offset bytes (when nonzero) before the
//                      checks: the device's IOMMU and XLAT checks must refuse what the engine did
//                      not map or allocate (the RB reports it as usual)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace spyre_dma::refdev {

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
};
inline constexpr std::size_t kNumMisbehaveKinds = 10;

// In enum order: the names configuration files use.
inline constexpr std::array<std::string_view, kNumMisbehaveKinds> kMisbehaveKindNames = {
    "none",           "unknown_tag",       "duplicate_rb",    "stale_tag",      "garbage_status",
    "wrong_queue",    "rb_pi_beyond_ring", "cb_ci_backwards", "stop_answering", "rogue_dma"};

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

}  // namespace spyre_dma::refdev
