// The doorbell region's page (kDoorbellRegion of spyre_dma/vfio/protocol.hpp): BAR0 writes as a
// log in shared memory, so that a client rings the device in another process with plain stores
// instead of a message, and the server sees them by polling while it is busy.
//
// Why a log, not BAR0's registers mapped: the device's rules depend on the order of writes across
// registers (a barrier CB waits for what the other pipelines were rung to before its own doorbell;
// a doorbell after a queue was disabled must not fetch). A page of register values would give
// the server the last value of each register, in whatever order it looked at them; the log gives
// every write, in the order the client made it.
//
// The page (4096 bytes, both sides' views of one memfd):
//   0x000  produced          u64, client: log entries written so far
//   0x040  consumed          u64, server: log entries applied to the device so far
//   0x080  server_sleeping   u32, server: 1 while it sleeps on the wake-up eventfd (kick it)
//   0x0C0  messages          u64, client: messages sent on the socket so far (a spinning server
//                            reads the socket when this moves, without a system call per look)
//   0x100  pending_irqs      u32, server sets, client takes: interrupts raised (1 << pipeline)
//   0x140  client_sleeping   u32, client: how many of its threads sleep on its interrupt eventfds
//                            (not 0: signal them)
//   0x180  client_attached   u32, client: 1 once it has mapped the page and follows this layout
//   0x1C0  entries           kEntries of 16 bytes: offset | width << 32, then the value
// Each counter lies in a cache line of its own, so the two sides' stores do not contend.
//
// Interrupts, for an attached client: the server sets their bits in pending_irqs and signals the
// eventfds only when the client sleeps on them; a client that is spinning on its RB rings (the
// common case under load) costs the server no system call per interrupt. The same pattern as the
// doorbells, the other way round: the server publishes the bits, then reads client_sleeping; the
// client publishes client_sleeping, then takes the bits once more before it sleeps.
//
// Ordering, the whole contract: the server applies the log in order, and drains it before it
// handles any message; the client, while it uses the log, sends no posted message (a write
// outside BAR0 awaits its reply), and writes to the log only after the replies it waited for.
// Then every BAR0 write, logged or not, reaches the device in the client's order. Sleeping is
// Dekker's pattern: the server publishes server_sleeping, then looks at the log once more; the
// client publishes its entry, then reads server_sleeping; sequentially consistent on both sides,
// one of the two sees the other.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "spyre_dma/vfio/protocol.hpp"

namespace spyre_dma::vfio {

struct DoorbellPage {
  struct Entry {
    std::atomic<std::uint64_t> offset_width;
    std::atomic<std::uint64_t> value;
  };
  static constexpr std::size_t kEntriesAt = 0x1C0;
  static constexpr std::size_t kEntries = (kDoorbellRegionBytes - kEntriesAt) / sizeof(Entry);

  alignas(64) std::atomic<std::uint64_t> produced;
  alignas(64) std::atomic<std::uint64_t> consumed;
  alignas(64) std::atomic<std::uint32_t> server_sleeping;
  alignas(64) std::atomic<std::uint64_t> messages;
  alignas(64) std::atomic<std::uint32_t> pending_irqs;
  alignas(64) std::atomic<std::uint32_t> client_sleeping;
  alignas(64) std::atomic<std::uint32_t> client_attached;
  alignas(64) Entry entries[kEntries];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "the page's counters are shared between processes: they must be lock-free (address-free)");
static_assert(offsetof(DoorbellPage, consumed) == 0x40 && offsetof(DoorbellPage, server_sleeping) == 0x80 &&
                  offsetof(DoorbellPage, messages) == 0xC0 && offsetof(DoorbellPage, pending_irqs) == 0x100 &&
                  offsetof(DoorbellPage, client_sleeping) == 0x140 &&
                  offsetof(DoorbellPage, client_attached) == 0x180 &&
                  offsetof(DoorbellPage, entries) == DoorbellPage::kEntriesAt,
              "the layout above is the protocol");
static_assert(sizeof(DoorbellPage) == kDoorbellRegionBytes);

// The client's side: appends writes, kicks a sleeping server. Not thread-safe: one writer at a
// time (the transport's lock).
class DoorbellWriter {
 public:
  // `page` is the client's mapping; `wake_fd` the server's wake-up eventfd; `hangup_fd` reports
  // the server gone (the socket), so that a wait on a log nobody drains ends at once (borrowed).
  DoorbellWriter(DoorbellPage* page, int wake_fd, int hangup_fd) noexcept
      : page_(page), wake_fd_(wake_fd), hangup_fd_(hangup_fd) {}
  // Appends a BAR0 write. A full log is waited on (the server is kicked) up to `timeout`; then
  // std::runtime_error naming `peer`. Returns the entry's number (see applied()).
  std::uint64_t append(std::uint64_t offset, unsigned width, std::uint64_t value, std::chrono::nanoseconds timeout,
                       const std::string& peer);
  // Whether the server has applied entry `n` (and all before it).
  bool applied(std::uint64_t n) const noexcept { return page_->consumed.load(std::memory_order_acquire) > n; }
  // Waits until entry `n` is applied, up to `timeout`; then std::runtime_error naming `peer`.
  void wait_applied(std::uint64_t n, std::chrono::nanoseconds timeout, const std::string& peer);
  // After a message was sent: a spinning server then reads the socket.
  void message_sent() noexcept { page_->messages.fetch_add(1, std::memory_order_release); }
  // Says that this client follows the page's layout (interrupts in the page included).
  void attach() noexcept { page_->client_attached.store(1, std::memory_order_release); }
  // The interrupts the server left in the page since the last call (a mask).
  std::uint32_t take_interrupts() noexcept { return page_->pending_irqs.exchange(0, std::memory_order_acq_rel); }
  // Before sleeping on the interrupt eventfds (true; then take_interrupts() once more) and after
  // (false), from any thread: the page counts the sleepers.
  void set_sleeping(bool sleeping) noexcept;

 private:
  void kick_if_sleeping() noexcept;
  // Waits until done() or the timeout (false); std::runtime_error naming `peer` once it is gone.
  template <class Done>
  bool wait_until(Done done, std::chrono::nanoseconds timeout, const std::string& peer);
  DoorbellPage* page_;
  int wake_fd_;
  int hangup_fd_;
  std::uint64_t produced_ = 0;  // this side's copy: only this side writes it
};

// The server's side: applies what the client logged.
class DoorbellReader {
 public:
  // One BAR0 write, in the client's order.
  using Apply = std::function<void(std::uint64_t offset, unsigned width, std::uint64_t value)>;
  explicit DoorbellReader(DoorbellPage* page) noexcept : page_(page) {}
  // Applies every entry logged so far; returns how many. A log the client corrupted (more entries
  // than the page holds, a width other than 4 or 8) throws ProtocolError naming the field; the
  // entries before it were applied.
  std::size_t drain(const Apply& apply);
  // Whether the client has logged entries not yet applied.
  bool has_entries() const noexcept { return page_->produced.load(std::memory_order_acquire) != consumed_; }
  // How many messages the client says it has sent.
  std::uint64_t messages() const noexcept { return page_->messages.load(std::memory_order_acquire); }
  // The sleeping flag, published with the order Dekker's pattern needs (see above).
  void set_sleeping(bool sleeping) noexcept;
  // Whether the client follows the page's layout (see client_attached).
  bool client_attached() const noexcept { return page_->client_attached.load(std::memory_order_acquire) == 1; }
  // Leaves interrupts for an attached client; true when the client sleeps on its eventfds and
  // they must be signalled too.
  bool post_interrupts(std::uint32_t mask) noexcept;

 private:
  DoorbellPage* page_;
  std::uint64_t consumed_ = 0;  // this side's copy
};

}  // namespace spyre_dma::vfio
