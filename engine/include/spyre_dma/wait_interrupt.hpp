// Waits a caller can break into. While a WaitInterruptScope lives on a thread, every wait of an
// engine on that thread (Engine::synchronize, Stream::synchronize, Op::wait, Event::synchronize)
// calls `interrupted` about every kWaitInterruptEvery, with no lock of the engine held, and gives
// up as soon as it returns true (or throws): the wait returns kWaitTimeout ("interrupted after N
// ns") and the work it waited for goes on. A language binding uses it to let a user's Ctrl-C end a wait (the
// Python module checks for signals this way); scopes nest, the innermost one is asked.
#pragma once

#include <chrono>
#include <functional>

namespace spyre_dma {

inline constexpr std::chrono::milliseconds kWaitInterruptEvery{20};

class WaitInterruptScope {
 public:
  explicit WaitInterruptScope(std::function<bool()> interrupted);
  ~WaitInterruptScope();
  WaitInterruptScope(const WaitInterruptScope&) = delete;
  WaitInterruptScope& operator=(const WaitInterruptScope&) = delete;

  // The innermost scope's check on this thread, or null.
  static const std::function<bool()>* current() noexcept;

 private:
  std::function<bool()> interrupted_;
  const std::function<bool()>* outer_;
};

}  // namespace spyre_dma
