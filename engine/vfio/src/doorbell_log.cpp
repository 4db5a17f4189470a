// The doorbell region's log (see doorbell_log.hpp).
#include "doorbell_log.hpp"

#include <poll.h>
#include <unistd.h>

#include <stdexcept>
#include <thread>

namespace spyre_dma::vfio {

template <class Done>
bool DoorbellWriter::wait_until(Done done, std::chrono::nanoseconds timeout, const std::string& peer) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (unsigned spins = 0;; ++spins) {
    if (done()) return true;
    if (spins % 64 == 63) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      pollfd gone{hangup_fd_, POLLRDHUP, 0};
      if (::poll(&gone, 1, 0) > 0 && (gone.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
        throw std::runtime_error("vfio-user: " + peer + " closed the connection");
      }
      kick_if_sleeping();
    }
    std::this_thread::yield();  // the server may need this core
  }
}

void DoorbellWriter::kick_if_sleeping() noexcept {
  // Dekker's pattern, this side: the entry (or the count) is published before the flag is read.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (page_->server_sleeping.load(std::memory_order_seq_cst) == 0) return;
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);  // a full eventfd already says "wake up"
}

std::uint64_t DoorbellWriter::append(std::uint64_t offset, unsigned width, std::uint64_t value,
                                     std::chrono::nanoseconds timeout, const std::string& peer) {
  const auto room = [&] { return produced_ - page_->consumed.load(std::memory_order_acquire) < DoorbellPage::kEntries; };
  if (!room()) {
    kick_if_sleeping();
    if (!wait_until(room, timeout, peer)) {
      throw std::runtime_error("vfio-user: " + peer + " took no doorbell from its full log (" +
                               std::to_string(DoorbellPage::kEntries) + " writes) in time");
    }
  }
  DoorbellPage::Entry& e = page_->entries[produced_ % DoorbellPage::kEntries];
  e.offset_width.store(offset | (std::uint64_t{width} << 32), std::memory_order_relaxed);
  e.value.store(value, std::memory_order_relaxed);
  const std::uint64_t n = produced_++;
  page_->produced.store(produced_, std::memory_order_release);
  kick_if_sleeping();
  return n;
}

void DoorbellWriter::wait_applied(std::uint64_t n, std::chrono::nanoseconds timeout, const std::string& peer) {
  if (!wait_until([&] { return applied(n); }, timeout, peer)) {
    throw std::runtime_error("vfio-user: " + peer + " did not apply a logged BAR0 write in time");
  }
}

std::size_t DoorbellReader::drain(const Apply& apply) {
  const std::uint64_t produced = page_->produced.load(std::memory_order_acquire);
  if (produced == consumed_) return 0;
  // The client's counter is the client's word: one that runs ahead of the page, or backwards,
  // is a broken log, not a reason to read outside it.
  if (produced - consumed_ > DoorbellPage::kEntries) {
    throw ProtocolError("vfio-user: the doorbell log's field produced is " + std::to_string(produced) + " with " +
                        std::to_string(consumed_) + " applied; the log holds " +
                        std::to_string(DoorbellPage::kEntries) + " entries");
  }
  std::size_t n = 0;
  for (; consumed_ != produced; ++consumed_, ++n) {
    const DoorbellPage::Entry& e = page_->entries[consumed_ % DoorbellPage::kEntries];
    const std::uint64_t ow = e.offset_width.load(std::memory_order_relaxed);
    const std::uint64_t value = e.value.load(std::memory_order_relaxed);
    const auto width = static_cast<unsigned>(ow >> 32);
    if (width != 4 && width != 8) {
      page_->consumed.store(consumed_, std::memory_order_release);
      throw ProtocolError("vfio-user: doorbell log entry " + std::to_string(consumed_) + ": field width is " +
                          std::to_string(width) + "; BAR0 is written 4 or 8 bytes at a time");
    }
    apply(ow & 0xFFFF'FFFFu, width, value);
  }
  page_->consumed.store(consumed_, std::memory_order_release);
  return n;
}

void DoorbellWriter::set_sleeping(bool sleeping) noexcept {
  // A count: threads of the client may sleep on their eventfds at once.
  if (sleeping) page_->client_sleeping.fetch_add(1, std::memory_order_seq_cst);
  else page_->client_sleeping.fetch_sub(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

bool DoorbellReader::post_interrupts(std::uint32_t mask) noexcept {
  page_->pending_irqs.fetch_or(mask, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return page_->client_sleeping.load(std::memory_order_seq_cst) != 0;
}

void DoorbellReader::set_sleeping(bool sleeping) noexcept {
  page_->server_sleeping.store(sleeping ? 1 : 0, std::memory_order_seq_cst);
  // Dekker's pattern, this side: the flag is published before the log is looked at again.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace spyre_dma::vfio
