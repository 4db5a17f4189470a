// BAR0 of every device: the storage of the registers in register_map.hpp and the one routine that
// applies the contract's access rules to a host's reads and writes.
//
// The rules (docs/programming-model.md, section 10.4), applied here and nowhere else:
//   * An access at or beyond the 4 MiB BAR throws std::out_of_range naming the offset.
//   * A misaligned access (offset not a multiple of 4) or one to an unassigned offset reads 0 and
//     writes nothing; so does a write to a read-only register. Each counts as a bad access.
//   * A 32-bit access to either half of a 64-bit register reads or writes that half (a write merges
//     with the other half). A 64-bit access to a 64-bit register covers it whole; a 64-bit access
//     anywhere else is two 32-bit accesses, to the offset and the next one.
//   * A host write stores value & write_mask; write-1-to-clear registers (ERROR_STATUS) clear on any
//     nonzero value. CONTROL.RESET is an action: the device resets first, then CONTROL is stored. Sizes and bases are stored as written: a ring the device cannot use is a queue
//     fault when it tries to (rings.hpp), so what a host wrote always reads back.
//   * STATUS is composed from CONTROL.ENABLE and the device's condition (compose_status); the
//     identity registers read the DeviceIdentity; TIMESTAMP_NS reads the device clock.
//
// Storage and threading stay with each backend: `Word` is the cell a register lives in, with
// load() and store() (std::atomic<std::uint64_t> for backends with threads, PlainWord under
// SystemC), and RegisterHooks is what the backend does around an access (its clock, its condition,
// the doorbell, reset, waking whoever waits for a register).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "spyre_dma/device_core/register_map.hpp"
#include "spyre_dma/hw/contract.hpp"

namespace spyre_dma::device_core {

// What a device is, as its identity registers tell it.
struct DeviceIdentity {
  std::uint64_t capabilities = hw::kCapFill | hw::kCapDeviceCopy | hw::kCapCompute | hw::kCapTimestamps;
  std::array<std::uint32_t, hw::kNumPipelines> depth{256, 1024, 1024};  // CB ring slots; powers of two
  std::uint32_t max_cb_bytes = 64u << 20;
  std::uint64_t memory_bytes = 128ull << 30;  // installed (DEVICE_MEM_BYTES)
  std::uint64_t usable_bytes = 112ull << 30;  // DEVICE_MEM_USABLE
};
// Throws std::invalid_argument, the message starting with `who`, for a depth that is not a power of
// two, no memory, usable bytes above the memory or a max_cb_bytes of zero.
void validate(const DeviceIdentity& identity, std::string_view who);

// Throws std::out_of_range ("<who>: <verb><bits> at offset 0x... lies beyond BAR0 ...") unless
// [offset, offset + width) lies within BAR0. For devices that queue an access before they apply it.
void check_bar0_access(std::uint64_t offset, unsigned width, bool write, std::string_view who);

// What the backend does around an access.
class RegisterHooks {
 public:
  struct Condition {
    bool resetting = false;
    bool fatal = false;
  };
  virtual std::uint64_t clock_ns() = 0;  // TIMESTAMP_NS
  virtual Condition condition() = 0;     // STATUS
  // A host read of a stored register returns this (the model: RB_PI counts only the RBs that have
  // landed in host memory). The default is the stored value.
  virtual std::uint64_t visible(Reg reg, hw::Pipeline p, std::uint64_t stored) {
    (void)reg, (void)p;
    return stored;
  }
  // CONTROL.RESET was written: reset the device (section 15) and return once it is done. The
  // routine then stores CONTROL (its ENABLE bit as written with RESET) and calls stored().
  virtual void reset() = 0;
  // A doorbell: the backend numbers it (DoorbellOrder) and stores CB_PI as it publishes it.
  virtual void doorbell(hw::Pipeline p, std::uint32_t new_pi) = 0;
  // After any other host write was stored: wake whoever waits on that register.
  virtual void stored(Reg reg, hw::Pipeline p) = 0;
  // While true, host writes to every register but CONTROL are ignored (misbehave stop_answering).
  virtual bool frozen() { return false; }
  virtual void bad_access() {}

 protected:
  ~RegisterHooks() = default;
};

// A register cell for a device that runs under one thread at a time (SystemC).
class PlainWord {
 public:
  std::uint64_t load() const noexcept { return v_; }
  void store(std::uint64_t v) noexcept { v_ = v; }

 private:
  std::uint64_t v_ = 0;
};

template <class Word>
class RegisterFile {
 public:
  explicit RegisterFile(const DeviceIdentity& identity) : identity_(identity) {
    for (std::size_t i = 0; i < kNumGlobalRegs; ++i) global_[i].store(kRegisterMap[i].reset_value);
    reset_pipelines();
  }
  RegisterFile(const RegisterFile&) = delete;
  RegisterFile& operator=(const RegisterFile&) = delete;

  // --- The host's side: BAR0 ---------------------------------------------------------------------
  std::uint64_t read(std::uint64_t offset, unsigned width, RegisterHooks& hooks);
  void write(std::uint64_t offset, std::uint64_t value, unsigned width, RegisterHooks& hooks);

  // --- The device's side: the storage, no access rules ---------------------------------------------
  std::uint64_t get(Reg r, hw::Pipeline p = hw::Pipeline::kCompute) const noexcept { return cell(r, p).load(); }
  void set(Reg r, hw::Pipeline p, std::uint64_t v) noexcept { cell(r, p).store(v); }
  void set(Reg r, std::uint64_t v) noexcept { cell(r, hw::Pipeline::kCompute).store(v); }
  // The cell itself, for what a backend needs beyond load and store (memory orders, exchange).
  Word& cell(Reg r, hw::Pipeline p = hw::Pipeline::kCompute) noexcept {
    return per_pipeline(r) ? pipes_[index(p)][static_cast<std::size_t>(r) - kFirstPipeReg]
                           : global_[static_cast<std::size_t>(r)];
  }
  const Word& cell(Reg r, hw::Pipeline p = hw::Pipeline::kCompute) const noexcept {
    return const_cast<RegisterFile*>(this)->cell(r, p);
  }
  // Reset: every per-pipeline register returns to its reset value, and so do FATAL_CAUSE and
  // FATAL_DETAIL (CONTROL is stored by the routine after the reset: the ENABLE bit written with it).
  void reset_pipelines() noexcept {
    for (auto& block : pipes_) {
      for (std::size_t i = 0; i < kNumPipeRegs; ++i) block[i].store(kRegisterMap[kFirstPipeReg + i].reset_value);
    }
  }
  void reset() noexcept {
    reset_pipelines();
    set(Reg::kFatalCause, 0);
    set(Reg::kFatalDetail, 0);
  }

  const DeviceIdentity& identity() const noexcept { return identity_; }

 private:
  static std::size_t index(hw::Pipeline p) noexcept { return static_cast<std::size_t>(p); }
  std::uint64_t value(Reg r, hw::Pipeline p, RegisterHooks& hooks);
  void write_register(Reg r, hw::Pipeline p, std::uint64_t v, RegisterHooks& hooks);

  const DeviceIdentity identity_;
  std::array<Word, kNumGlobalRegs> global_;
  struct alignas(64) Block : std::array<Word, kNumPipeRegs> {};  // a pipeline's own cache lines
  std::array<Block, hw::kNumPipelines> pipes_;
};

// The identity register's value (Source::kIdentity).
std::uint64_t identity_value(const DeviceIdentity& identity, Reg r) noexcept;

// --- The access routine -----------------------------------------------------------------------------

template <class Word>
std::uint64_t RegisterFile<Word>::value(Reg r, hw::Pipeline p, RegisterHooks& hooks) {
  const RegisterSpec& s = spec(r);
  switch (s.source) {
    case Source::kConstant: return s.reset_value;
    case Source::kIdentity: return identity_value(identity_, r);
    case Source::kClock: return hooks.clock_ns();
    case Source::kStatus: {
      const RegisterHooks::Condition c = hooks.condition();
      return compose_status((get(Reg::kControl) & hw::kControlEnable) != 0, c.resetting, c.fatal);
    }
    case Source::kStored: break;
  }
  return hooks.visible(r, p, get(r, p));
}

template <class Word>
std::uint64_t RegisterFile<Word>::read(std::uint64_t offset, unsigned width, RegisterHooks& hooks) {
  check_bar0_access(offset, width, false, "BAR0");
  if (offset % 4 != 0) {
    hooks.bad_access();
    return 0;
  }
  const auto at = register_at(offset);
  if (width == 8) {
    if (at && at->half == 0 && spec(at->reg).width == 8) return value(at->reg, at->pipeline, hooks);
    const std::uint64_t low = read(offset, 4, hooks);
    return low | (read(offset + 4, 4, hooks) << 32);
  }
  if (!at) {
    hooks.bad_access();
    return 0;
  }
  const std::uint64_t v = value(at->reg, at->pipeline, hooks);
  return at->half != 0 ? v >> 32 : v & 0xFFFF'FFFFull;
}

template <class Word>
void RegisterFile<Word>::write(std::uint64_t offset, std::uint64_t value, unsigned width, RegisterHooks& hooks) {
  check_bar0_access(offset, width, true, "BAR0");
  if (offset % 4 != 0) return hooks.bad_access();
  const auto at = register_at(offset);
  if (width == 8) {
    if (at && at->half == 0 && spec(at->reg).width == 8) return write_register(at->reg, at->pipeline, value, hooks);
    write(offset, value & 0xFFFF'FFFFull, 4, hooks);
    return write(offset + 4, value >> 32, 4, hooks);
  }
  if (!at) return hooks.bad_access();
  std::uint64_t v = value & 0xFFFF'FFFFull;
  if (spec(at->reg).width == 8) {  // one half, merged with the other
    const std::uint64_t cur = get(at->reg, at->pipeline);
    v = at->half != 0 ? (cur & 0xFFFF'FFFFull) | (v << 32) : (cur & ~0xFFFF'FFFFull) | v;
  }
  write_register(at->reg, at->pipeline, v, hooks);
}

template <class Word>
void RegisterFile<Word>::write_register(Reg r, hw::Pipeline p, std::uint64_t v, RegisterHooks& hooks) {
  const RegisterSpec& s = spec(r);
  if (s.access == Access::kReadOnly) return hooks.bad_access();
  if (r == Reg::kControl && (v & hw::kControlReset) != 0) hooks.reset();
  if (r != Reg::kControl && hooks.frozen()) return;
  if (r == Reg::kCbPi) return hooks.doorbell(p, static_cast<std::uint32_t>(v));
  if (s.access == Access::kWrite1Clear) {
    if (v == 0) return;
    set(r, p, s.reset_value);
  } else {
    set(r, p, v & s.write_mask);
  }
  hooks.stored(r, p);
}

}  // namespace spyre_dma::device_core
