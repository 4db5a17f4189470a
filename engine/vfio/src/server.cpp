// The vfio-user device server (see spyre_dma/vfio/server.hpp).
#include "spyre_dma/vfio/server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "channel.hpp"
#include "doorbell_log.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/vfio/protocol.hpp"

namespace spyre_dma::vfio {
namespace {

constexpr std::uint64_t kPage = 4096;
// How long a message that has begun may take to arrive whole.
constexpr auto kMessageTimeout = std::chrono::seconds(5);
// How long a session with a doorbell log polls it after the last work before it sleeps (the
// longest spin; it halves after each spin that found nothing, down to kShortestSpin, and is
// restored by one that found work).
constexpr auto kLongestSpin = std::chrono::microseconds(200);
constexpr auto kShortestSpin = std::chrono::microseconds(5);

// A reply with an errno, and the reason in the server's log (the protocol carries only the errno).
struct Refusal {
  int error;
  std::string why;
};

// What the kernel calls the file behind `fd` ("anon_inode:[eventfd]", "pipe:[123]", a path).
std::string fd_kind(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[256];
  const ssize_t n = ::readlink(link, target, sizeof target - 1);
  if (n < 0) return std::string("unknown: ") + std::strerror(errno);
  return std::string(target, static_cast<std::size_t>(n));
}

bool is_eventfd(int fd) { return fd_kind(fd) == "anon_inode:[eventfd]"; }

std::string sockaddr_path_error(const std::string& path) {
  return "vfio-user server: socket path " + path + " is longer than " + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) +
         " bytes";
}

}  // namespace

// One client's connection: its device, its mappings and its interrupts.
class Server::Session {
 public:
  Session(Server& server, UniqueFd socket, std::uint64_t number)
      : server_(server), name_("client " + std::to_string(number)),
        channel_(std::move(socket), name_, server.limits_.reply_timeout), instance_(server.factory_()),
        device_(instance_.device) {
    if (!device_) throw std::runtime_error("vfio-user server: the device factory returned no device");
    channel_.set_cancel(server.stop_pipe_[0]);
    if (instance_.memory) memory_bytes_ = device_->read64(hw::reg::kDeviceMemBytes_64);
    description_ = device_->describe();
    host_driven_ = description_.progress == Progress::kHostDriven;
  }
  ~Session() { close(); }

  // Until the client leaves, the server stops or the connection breaks.
  void run();

 private:
  struct Mapping {
    void* base = nullptr;  // of our mmap
    std::size_t length = 0;
    std::uint64_t size = 0;  // as the client mapped it
  };

  // A line in the server's log, naming this client.
  void note(const std::string& line) const { server_.log(line + " (" + name_ + ")"); }
  void handle(const Message& m);
  void reply(const Header& command, const std::vector<std::uint8_t>& payload, const int* fds = nullptr,
             std::size_t nfds = 0);
  void refuse(const Header& command, const Refusal& r);
  std::vector<std::uint8_t> version(Reader& r);
  RegionInfo region_info(Reader& r);
  // The doorbell region's page and wake-up eventfd, made on the client's first ask.
  void offer_doorbells();
  // Applies what the client logged; false (the client named in the log) for a broken log.
  bool apply_doorbells();
  // While the client is busy, polls its doorbell log and its message count: true when there is
  // something to look at (a message, the stop), false when the spin ran out.
  bool spin_for_work();
  void write_bar0(std::uint64_t offset, unsigned width, std::uint64_t value);
  std::vector<std::uint8_t> irq_info(Reader& r) const;
  void set_irqs(Reader& r, const Message& m);
  std::vector<std::uint8_t> region_read(Reader& r);
  void region_write(Reader& r);
  void dma_map(Reader& r, const Message& m);
  void dma_unmap(Reader& r);
  void signal(std::uint32_t mask);
  void observe_completions();
  // Refuses a memory-region access of no bytes or more than one message carries.
  void check_memory_access(const RegionAccess& a) const;
  // Counts the 1 MiB blocks a memory-region write touches; refuses one that would take the
  // client past ServerLimits::client_memory_bytes.
  void charge_memory_write(const RegionAccess& a);
  void forward_interrupts();
  // Who signals the device's interrupts to the client: this thread while it spins on the doorbell
  // log (it looks at them between looks at the log, and the device wakes no other thread per
  // interrupt), the forwarder otherwise.
  void hand_interrupts(bool to_session);
  void close() noexcept;

  Server& server_;
  std::string name_;  // "client N", in the log and in errors
  Channel channel_;
  backend::Instance instance_;  // its capabilities live as long as its device
  std::shared_ptr<Device> device_;
  std::uint64_t memory_bytes_ = 0;  // of the memory region (0: the device has no backdoor)
  DeviceDescription description_;
  bool host_driven_ = false;
  std::map<std::uint64_t, Mapping> mappings_;  // by the client's IOVA
  std::set<std::uint64_t> memory_blocks_;      // 1 MiB blocks written through the memory region
  std::mutex irq_mu_;
  std::array<UniqueFd, hw::kNumPipelines> eventfds_;
  std::atomic<bool> done_{false};
  std::thread forwarder_;
  std::mutex forward_mu_;
  std::condition_variable forward_cv_;
  bool session_forwards_ = false;  // written by the session thread only, under forward_mu_
  // The doorbell region, once offered.
  UniqueFd doorbell_memory_;
  UniqueFd doorbell_wake_;
  DoorbellPage* doorbell_page_ = nullptr;
  std::optional<DoorbellReader> doorbells_;
  std::uint64_t messages_seen_ = 0;  // the client's message count at the last look
  std::chrono::nanoseconds spin_ = kLongestSpin;
};

void Server::Session::run() {
  // A device that runs by itself raises its interrupts at any time: a thread forwards them.
  if (!host_driven_) forwarder_ = std::thread([this] { forward_interrupts(); });
  for (;;) {
    if (!apply_doorbells()) return;
    const bool look = spin_for_work();
    if (!look) hand_interrupts(false);  // to sleep
    // Sleeping with a doorbell log: the flag first, then one more look (see doorbell_log.hpp).
    const bool sleep = !look && doorbells_ && !host_driven_ && doorbells_->client_attached();
    if (sleep) {
      doorbells_->set_sleeping(true);
      const std::uint64_t messages = doorbells_->messages();
      if (doorbells_->has_entries() || messages != messages_seen_) {
        messages_seen_ = messages;  // a count that moved without a message cannot keep this thread awake
        doorbells_->set_sleeping(false);
        continue;
      }
    }
    pollfd fds[3] = {{channel_.fd(), POLLIN, 0}, {server_.stop_pipe_[0], POLLIN, 0}, {doorbell_wake_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 3, look ? 0 : -1);
    if (sleep) doorbells_->set_sleeping(false);
    if (ready < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;  // the server stops
    if (fds[2].revents != 0) {
      std::uint64_t kicks = 0;
      (void)!::read(doorbell_wake_.get(), &kicks, sizeof kicks);
    }
    if (fds[0].revents == 0) continue;  // woken for the log, or nothing after all
    hand_interrupts(false);  // a message may take long
    Message m;
    try {
      m = channel_.receive(kMessageTimeout);
    } catch (const ConnectionClosed&) {
      return;
    } catch (const std::exception& e) {  // a header that cannot be trusted, a message cut short
      note(std::string(e.what()) + "; the connection is closed");
      return;
    }
    // Every BAR0 write the client logged before it sent this message reaches the device first.
    if (!apply_doorbells()) return;
    try {
      handle(m);
    } catch (const PeerStalled& e) {
      note(std::string(e.what()) + "; the connection is closed");
      return;
    } catch (const ConnectionClosed&) {
      return;
    }
  }
}

bool Server::Session::spin_for_work() {
  // A host-driven device moves only inside the client's clock waits, which are messages: nothing
  // to poll for.
  if (!doorbells_ || host_driven_ || !doorbells_->client_attached()) return false;
  hand_interrupts(true);
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    // The interrupts are this thread's while it spins (see hand_interrupts()).
    if (const std::uint32_t mask = device_->wait_for_interrupt(std::chrono::nanoseconds::zero())) signal(mask);
    const std::uint64_t messages = doorbells_->messages();
    if (doorbells_->has_entries() || messages != messages_seen_) {
      messages_seen_ = messages;
      spin_ = kLongestSpin;
      return true;
    }
    if (i % 64 == 0) {
      // A client that does not count its messages, and the stop, are seen here too.
      pollfd fds[2] = {{channel_.fd(), POLLIN, 0}, {server_.stop_pipe_[0], POLLIN, 0}};
      if (::poll(fds, 2, 0) > 0) return true;
      if (std::chrono::steady_clock::now() - start >= spin_) {
        spin_ = std::max<std::chrono::nanoseconds>(spin_ / 2, kShortestSpin);
        return false;
      }
    }
    // Yield, not pause: on a host with few cores the client and the device's own threads need
    // them, and they are what this spin waits for.
    std::this_thread::yield();
  }
}

bool Server::Session::apply_doorbells() {
  if (!doorbells_ || !doorbells_->has_entries()) return true;
  try {
    bool observed = false;
    doorbells_->drain([&](std::uint64_t offset, unsigned width, std::uint64_t value) {
      if (!observed && !host_driven_) observe_completions();  // as for a BAR0 write by message
      observed = true;
      write_bar0(offset, width, value);
    });
    return true;
  } catch (const Refusal& f) {
    note(f.why + " (a doorbell log entry); the connection is closed");
  } catch (const std::exception& e) {
    note(std::string(e.what()) + "; the connection is closed");
  }
  return false;
}

void Server::Session::offer_doorbells() {
  if (doorbells_) return;
  UniqueFd memory(::memfd_create("spyre-dma-doorbells", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!memory || ::ftruncate(memory.get(), kDoorbellRegionBytes) != 0 ||
      ::fcntl(memory.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    throw Refusal{errno, std::string("vfio-user server: no doorbell page: ") + std::strerror(errno)};
  }
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) throw Refusal{errno, std::string("vfio-user server: no eventfd: ") + std::strerror(errno)};
  void* page = ::mmap(nullptr, kDoorbellRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory.get(), 0);
  if (page == MAP_FAILED) throw Refusal{errno, std::string("vfio-user server: no doorbell page: ") + std::strerror(errno)};
  // A fresh memfd is zeros: every counter starts at 0, as both sides' copies do.
  doorbell_page_ = static_cast<DoorbellPage*>(page);
  doorbell_memory_ = std::move(memory);
  doorbell_wake_ = std::move(wake);
  doorbells_.emplace(doorbell_page_);
}

void Server::Session::write_bar0(std::uint64_t offset, unsigned width, std::uint64_t value) {
  if (width == 4) return device_->write32(offset, static_cast<std::uint32_t>(value));
  if (width == 8) return device_->write64(offset, value);
  throw Refusal{EINVAL, "vfio-user server: BAR0 is written 4 or 8 bytes at a time, not " + std::to_string(width)};
}

void Server::Session::handle(const Message& m) {
  const Header& h = m.header;
  if (h.is_reply()) {
    note("vfio-user server: the client sent a reply to no command (message " + std::to_string(h.id) + ")");
    return;
  }
  Reader r = m.reader();
  try {
    switch (h.command) {
      case Command::kVersion: return reply(h, version(r));
      case Command::kDeviceGetInfo: {
        DeviceInfo info;
        info.flags = kDeviceFlagPci | kDeviceFlagReset;
        info.num_regions = kNumRegions;
        info.num_irqs = kNumPciIrqs;
        return reply(h, encode(info));
      }
      case Command::kDeviceGetRegionInfo: {
        const RegionInfo info = region_info(r);
        if (info.index != kDoorbellRegion || !doorbells_) return reply(h, encode(info));
        const int fds[2] = {doorbell_memory_.get(), doorbell_wake_.get()};
        return reply(h, encode(info), fds, 2);
      }
      case Command::kDeviceGetIrqInfo: return reply(h, irq_info(r));
      case Command::kDeviceSetIrqs: set_irqs(r, m); return reply(h, {});
      case Command::kRegionRead: return reply(h, region_read(r));
      case Command::kRegionWrite: {
        region_write(r);
        RegionAccess echo;  // the reply repeats offset, region and count
        Reader again = m.reader();
        echo = parse_region_access(again, false);
        return reply(h, encode(echo));
      }
      case Command::kDmaMap: dma_map(r, m); return reply(h, {});
      case Command::kDmaUnmap: {
        dma_unmap(r);
        Reader again = m.reader();
        return reply(h, encode(parse_dma_unmap(again)));
      }
      case Command::kDeviceReset:
        device_->write32(hw::reg::kControl, hw::kControlReset);
        return reply(h, {});
      default:
        return refuse(h, {ENOSYS, std::string("vfio-user server: ") + to_string(h.command) + " is not supported"});
    }
  } catch (const ConnectionClosed&) {
    throw;
  } catch (const Refusal& f) {
    refuse(h, f);
  } catch (const ProtocolError& e) {
    refuse(h, {EINVAL, e.what()});
  } catch (const std::out_of_range& e) {
    refuse(h, {EINVAL, std::string("vfio-user server: ") + to_string(h.command) + ": " + e.what()});
  } catch (const std::invalid_argument& e) {
    refuse(h, {EINVAL, std::string("vfio-user server: ") + to_string(h.command) + ": " + e.what()});
  } catch (const std::exception& e) {
    refuse(h, {EIO, std::string("vfio-user server: ") + to_string(h.command) + " failed: " + e.what()});
  }
}

void Server::Session::reply(const Header& command, const std::vector<std::uint8_t>& payload, const int* fds,
                            std::size_t nfds) {
  if (!command.wants_reply()) return;
  Header h;
  h.id = command.id;
  h.command = command.command;
  h.flags = kFlagReply;
  channel_.send(h, payload, fds, nfds);
}

void Server::Session::refuse(const Header& command, const Refusal& r) {
  note(r.why);
  if (!command.wants_reply()) return;
  Header h;
  h.id = command.id;
  h.command = command.command;
  h.flags = kFlagReply | kFlagError;
  h.error = static_cast<std::uint32_t>(r.error);
  channel_.send(h, {});
}

std::vector<std::uint8_t> Server::Session::version(Reader& r) {
  const Version theirs = parse_version(r);
  if (theirs.major != kVersionMajor) {
    throw Refusal{ENOTSUP, "vfio-user server: the client speaks version " + std::to_string(theirs.major) + "." +
                               std::to_string(theirs.minor) + "; this server speaks " + std::to_string(kVersionMajor) +
                               "." + std::to_string(kVersionMinor)};
  }
  Version ours;
  const nlohmann::json caps = {
      {"capabilities", {{"max_msg_fds", kMaxFds}, {"max_data_xfer_size", kMaxMessageBytes - kHeaderBytes - 16}}},
      {"spyre_dma",
       {{"backend", description_.backend},
        {"name", description_.name},
        {"progress", host_driven_ ? "host-driven" : "self-timed"}}}};
  ours.capabilities_json = caps.dump();
  return encode(ours);
}

RegionInfo Server::Session::region_info(Reader& r) {
  RegionInfo asked = parse_region_info(r);
  RegionInfo info;
  info.index = asked.index;
  if (asked.index == kBar0Region) {
    info.size = hw::reg::kBar0Bytes;
    info.flags = kRegionRead | kRegionWrite;
  } else if (asked.index == kDoorbellRegion) {
    offer_doorbells();
    info.has_type = true;
    info.type = kVendorRegionType;
    info.subtype = kDoorbellRegionSubtype;
    info.size = kDoorbellRegionBytes;
    info.flags = kRegionRead | kRegionWrite | kRegionMmap;  // through its mapping only
    info.sparse_areas = {{0, kDoorbellRegionBytes}};
  } else if (asked.index == kClockRegion || asked.index == kMemoryRegion || asked.index == kMisbehaveRegion) {
    info.has_type = true;
    info.type = kVendorRegionType;
    if (asked.index == kClockRegion) {
      info.size = host_driven_ ? kClockRegionBytes : 0;
      info.subtype = kClockRegionSubtype;
    } else if (asked.index == kMemoryRegion) {
      info.size = memory_bytes_;
      info.subtype = kMemoryRegionSubtype;
    } else {
      info.size = instance_.misbehave ? kMisbehaveRegionBytes : 0;
      info.subtype = kMisbehaveRegionSubtype;
    }
    info.flags = info.size ? kRegionRead | kRegionWrite : 0;
  } else if (asked.index >= kNumRegions) {
    throw Refusal{EINVAL, "vfio-user server: region " + std::to_string(asked.index) + " does not exist"};
  }
  return info;
}

std::vector<std::uint8_t> Server::Session::irq_info(Reader& r) const {
  IrqInfo info = parse_irq_info(r);
  if (info.index >= kNumPciIrqs) {
    throw Refusal{EINVAL, "vfio-user server: interrupt index " + std::to_string(info.index) + " does not exist"};
  }
  constexpr std::uint32_t kIrqInfoEventfd = 1u << 0, kIrqInfoNoResize = 1u << 3;
  info.count = info.index == kMsixIrqIndex ? hw::kNumPipelines : 0;
  info.flags = info.count ? kIrqInfoEventfd | kIrqInfoNoResize : 0;
  return encode(info);
}

void Server::Session::set_irqs(Reader& r, const Message& m) {
  const IrqSet s = parse_irq_set(r);
  if (s.index != kMsixIrqIndex) {
    throw Refusal{EINVAL, "vfio-user server: interrupts are MSI-X only (index " + std::to_string(kMsixIrqIndex) +
                              "), not index " + std::to_string(s.index)};
  }
  if ((s.flags & kIrqActionTrigger) == 0) {
    throw Refusal{ENOTSUP, "vfio-user server: only ACTION_TRIGGER is supported for MSI-X"};
  }
  std::lock_guard<std::mutex> lock(irq_mu_);
  if ((s.flags & kIrqDataNone) != 0 && s.count == 0) {  // every vector released
    for (auto& fd : eventfds_) fd.reset();
    return;
  }
  if ((s.flags & kIrqDataEventfd) == 0) {
    throw Refusal{ENOTSUP, "vfio-user server: MSI-X vectors are triggered through eventfds only"};
  }
  if (s.start + s.count > hw::kNumPipelines) {
    throw Refusal{EINVAL, "vfio-user server: vectors " + std::to_string(s.start) + ".." +
                              std::to_string(s.start + s.count) + " exceed the " +
                              std::to_string(hw::kNumPipelines) + " the device has"};
  }
  if (m.fds.size() != s.count) {
    throw Refusal{EINVAL, "vfio-user server: SET_IRQS for " + std::to_string(s.count) + " vectors came with " +
                              std::to_string(m.fds.size()) + " file descriptors"};
  }
  for (std::uint32_t i = 0; i < s.count; ++i) {
    // Only an eventfd: a write to it never blocks for long and never raises SIGPIPE, where a pipe
    // or a socket the client stops reading would do either.
    if (!is_eventfd(m.fds[i].get())) {
      throw Refusal{EINVAL, "vfio-user server: SET_IRQS vector " + std::to_string(s.start + i) +
                                " came with a file descriptor that is not an eventfd (" + fd_kind(m.fds[i].get()) + ")"};
    }
  }
  for (std::uint32_t i = 0; i < s.count; ++i) {
    const int dup = ::fcntl(m.fds[i].get(), F_DUPFD_CLOEXEC, 0);
    if (dup < 0) throw Refusal{errno, std::string("vfio-user server: an eventfd cannot be kept: ") + std::strerror(errno)};
    eventfds_[s.start + i].reset(dup);
  }
}

std::vector<std::uint8_t> Server::Session::region_read(Reader& r) {
  RegionAccess a = parse_region_access(r, false);
  if (a.region == kMemoryRegion && memory_bytes_ != 0) {
    check_memory_access(a);
    a.data.resize(a.count);
    instance_.memory->backdoor_read(a.offset, a.data.data(), a.count);  // out_of_range names the range
    return encode(a);
  }
  if (a.region == kClockRegion && host_driven_ && a.offset == kClockNowOffset && a.count == 8) {
    const double now = instance_.clock ? instance_.clock->now_ns() : 0.0;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &now, sizeof bits);
    a.data.resize(8);
    for (unsigned i = 0; i < 8; ++i) a.data[i] = static_cast<std::uint8_t>(bits >> (8 * i));
    return encode(a);
  }
  if (a.region != kBar0Region) {
    throw Refusal{EINVAL, "vfio-user server: region " + std::to_string(a.region) + " cannot be read"};
  }
  std::uint64_t v = 0;
  if (a.count == 4) v = device_->read32(a.offset);
  else if (a.count == 8) v = device_->read64(a.offset);
  else throw Refusal{EINVAL, "vfio-user server: BAR0 is read 4 or 8 bytes at a time, not " + std::to_string(a.count)};
  a.data.resize(a.count);
  for (std::uint32_t i = 0; i < a.count; ++i) a.data[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return encode(a);
}

void Server::Session::region_write(Reader& r) {
  const RegionAccess a = parse_region_access(r, true);
  if (a.region == kMemoryRegion && memory_bytes_ != 0) {
    check_memory_access(a);
    charge_memory_write(a);
    return instance_.memory->backdoor_write(a.offset, a.data.data(), a.data.size());
  }
  if (a.region == kMisbehaveRegion && instance_.misbehave && a.offset == 0 && a.count == kMisbehaveRegionBytes) {
    auto field = [&](unsigned i) {
      std::uint64_t f = 0;
      for (unsigned b = 0; b < 8; ++b) f |= std::uint64_t{a.data[8 * i + b]} << (8 * b);
      return f;
    };
    if (field(0) >= device_core::kNumMisbehaveKinds) {
      throw Refusal{EINVAL, "vfio-user server: misbehaviour kind " + std::to_string(field(0)) + " does not exist"};
    }
    device_core::Misbehave m;
    m.kind = static_cast<device_core::MisbehaveKind>(field(0));
    m.at_cb = field(1);
    m.rogue_iova = field(2);
    m.rogue_device_offset = field(3);
    return instance_.misbehave->arm_misbehave(m);
  }
  std::uint64_t v = 0;
  for (std::uint32_t i = 0; i < a.count && i < 8; ++i) v |= std::uint64_t{a.data[i]} << (8 * i);
  if (a.region == kBar0Region) {
    if (!host_driven_) observe_completions();
    return write_bar0(a.offset, a.count, v);
  }
  if (host_driven_ && a.region == kClockRegion && a.count == 8) {
    if (a.offset == kClockWaitOffset) {
      // Bounded on our side too: a client's "forever" is a minute per message here.
      const auto timeout = std::chrono::nanoseconds(std::min<std::uint64_t>(v, 60'000'000'000ull));
      return signal(device_->wait_for_interrupt(timeout));
    }
    if (a.offset == kClockHostCopiedOffset) return device_->host_copied(v);
  }
  throw Refusal{EINVAL, "vfio-user server: no register of " + std::to_string(a.count) + " bytes at offset " +
                            std::to_string(a.offset) + " of region " + std::to_string(a.region)};
}

void Server::Session::check_memory_access(const RegionAccess& a) const {
  if (a.count == 0 || a.count > kMaxMemoryAccess) {
    throw Refusal{EINVAL, "vfio-user server: memory is accessed 1 to " + std::to_string(kMaxMemoryAccess) +
                              " bytes at a time, not " + std::to_string(a.count)};
  }
}

void Server::Session::charge_memory_write(const RegionAccess& a) {
  constexpr std::uint64_t kBlock = 1u << 20;
  if (a.offset >= memory_bytes_ || a.count > memory_bytes_ - a.offset) return;  // the backdoor refuses it by name
  std::vector<std::uint64_t> fresh;
  for (std::uint64_t b = a.offset / kBlock; b <= (a.offset + a.count - 1) / kBlock; ++b) {
    if (memory_blocks_.count(b) == 0) fresh.push_back(b);
  }
  const std::uint64_t limit = server_.limits_.client_memory_bytes;
  if ((memory_blocks_.size() + fresh.size()) * kBlock > limit) {
    throw Refusal{ENOMEM, "vfio-user server: a memory-region write at offset " + std::to_string(a.offset) +
                              " would take the client past its limit of " + std::to_string(limit) +
                              " bytes of device memory written (" + std::to_string(memory_blocks_.size() * kBlock) +
                              " touched so far)"};
  }
  memory_blocks_.insert(fresh.begin(), fresh.end());
}

void Server::Session::observe_completions() {
  // The client wrote this after it saw the device's RBs; those RBs were published with each
  // pipeline's RB_PI. Reading RB_PI here carries that order into this process, where the
  // client's part of it cannot be seen: a doorbell for work that depends on a completed CB then
  // follows that CB's effects here as it would in the client's own process (ThreadSanitizer sees
  // no race that the client's ordering rules out). A self-timed device only: there a register
  // read costs no simulated time.
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    (void)device_->read32(hw::reg::pipe(static_cast<hw::Pipeline>(p), hw::reg::kRbPi));
  }
}

void Server::Session::dma_map(Reader& r, const Message& m) {
  const DmaMap d = parse_dma_map(r);
  if (m.fds.size() != 1) {
    throw Refusal{EINVAL, "vfio-user server: DMA_MAP at IOVA " + std::to_string(d.address) + " came with " +
                              std::to_string(m.fds.size()) +
                              " file descriptors; this server reaches client memory only through one shared file"};
  }
  const int fd = m.fds[0].get();
  struct stat st {};
  if (::fstat(fd, &st) != 0 || d.offset > static_cast<std::uint64_t>(st.st_size) ||
      d.size > static_cast<std::uint64_t>(st.st_size) - d.offset) {
    throw Refusal{EINVAL, "vfio-user server: DMA_MAP of " + std::to_string(d.size) + " bytes at file offset " +
                              std::to_string(d.offset) + " lies beyond the file (" + std::to_string(st.st_size) +
                              " bytes)"};
  }
  // A file that could shrink under a mapping would fault the server on its next access.
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    throw Refusal{EINVAL, "vfio-user server: DMA_MAP needs a memfd sealed against shrinking (F_SEAL_SHRINK)"};
  }
  if (mappings_.count(d.address) != 0) {
    throw Refusal{EEXIST, "vfio-user server: IOVA " + std::to_string(d.address) + " is mapped already"};
  }
  if (mappings_.size() >= server_.limits_.client_mappings) {
    throw Refusal{ENOSPC, "vfio-user server: DMA_MAP at IOVA " + std::to_string(d.address) + " would exceed the " +
                              std::to_string(server_.limits_.client_mappings) + " mappings a client may hold"};
  }
  const std::uint64_t first = d.offset / kPage * kPage;
  const std::uint64_t delta = d.offset - first;
  const std::size_t length = static_cast<std::size_t>((delta + d.size + kPage - 1) / kPage * kPage);
  const int prot = ((d.flags & kDmaRead) ? PROT_READ : 0) | ((d.flags & kDmaWrite) ? PROT_READ | PROT_WRITE : 0);
  void* base = ::mmap(nullptr, length, prot, MAP_SHARED, fd, static_cast<off_t>(first));
  if (base == MAP_FAILED) {
    throw Refusal{errno, std::string("vfio-user server: DMA_MAP cannot map the client's file: ") + std::strerror(errno)};
  }
  const DmaAccess access = (d.flags & kDmaRead) && (d.flags & kDmaWrite) ? DmaAccess::kBoth
                           : (d.flags & kDmaWrite)                      ? DmaAccess::kDeviceWrites
                                                                        : DmaAccess::kDeviceReads;
  try {
    device_->map_at(static_cast<std::uint8_t*>(base) + delta, d.size, access, d.address);
  } catch (...) {
    ::munmap(base, length);
    throw;
  }
  mappings_[d.address] = Mapping{base, length, d.size};
}

void Server::Session::dma_unmap(Reader& r) {
  const DmaUnmap d = parse_dma_unmap(r);
  const auto it = mappings_.find(d.address);
  if (it == mappings_.end() || it->second.size != d.size) {
    throw Refusal{EINVAL, "vfio-user server: DMA_UNMAP of " + std::to_string(d.size) + " bytes at IOVA " +
                              std::to_string(d.address) + " matches no mapping"};
  }
  device_->unmap(d.address);  // returns once the device can no longer reach the bytes
  ::munmap(it->second.base, it->second.length);
  mappings_.erase(it);
}

void Server::Session::signal(std::uint32_t mask) {
  // An attached client finds them in the page; its eventfds are signalled only while it sleeps.
  if (doorbells_ && doorbells_->client_attached() && !doorbells_->post_interrupts(mask)) return;
  std::lock_guard<std::mutex> lock(irq_mu_);
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    if ((mask & (1u << p)) == 0 || !eventfds_[p]) continue;
    // Never blocking: the descriptor's blocking mode is the client's (it shares the open file), so
    // readiness is asked first. An eventfd refuses a write only when its counter is full, which a
    // client that reads its interrupts never lets happen: that vector is dropped, not waited on.
    pollfd pfd{eventfds_[p].get(), POLLOUT, 0};
    const bool writable = ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLOUT) != 0;
    const std::uint64_t one = 1;
    if (writable && ::write(eventfds_[p].get(), &one, sizeof one) == static_cast<ssize_t>(sizeof one)) continue;
    note("vfio-user server: interrupt vector " + std::to_string(p) + " cannot be signalled (" +
         (writable ? std::string(std::strerror(errno)) : std::string("its eventfd is full")) +
         "); the vector is released");
    eventfds_[p].reset();
  }
}

void Server::Session::hand_interrupts(bool to_session) {
  if (!forwarder_.joinable() || session_forwards_ == to_session) return;
  {
    std::lock_guard<std::mutex> lock(forward_mu_);
    session_forwards_ = to_session;
  }
  // The forwarder leaves its wait (a wake-up it misses makes its next wait return at once), or
  // takes the interrupts back. Either way none is lost: both collect from the same device.
  if (to_session) device_->wake_waiter();
  else forward_cv_.notify_one();
}

void Server::Session::forward_interrupts() {
  while (!done_.load(std::memory_order_acquire)) {
    {
      std::unique_lock<std::mutex> lock(forward_mu_);
      forward_cv_.wait(lock, [&] { return !session_forwards_ || done_.load(std::memory_order_acquire); });
    }
    std::uint32_t mask = 0;
    try {
      mask = device_->wait_for_interrupt(std::chrono::milliseconds(20));
    } catch (const std::exception& e) {
      note(std::string("vfio-user server: the device's interrupts stopped: ") + e.what());
      return;
    }
    if (mask != 0) signal(mask);
  }
}

void Server::Session::close() noexcept {
  {
    std::lock_guard<std::mutex> lock(forward_mu_);
    done_.store(true, std::memory_order_release);
  }
  forward_cv_.notify_one();
  device_->wake_waiter();  // the forwarder need not sleep out its 20 ms
  if (forwarder_.joinable()) forwarder_.join();
  // The client is gone: its mappings go, after the device has let go of each.
  for (auto& [iova, m] : mappings_) {
    try {
      device_->unmap(iova);
    } catch (...) {
    }
    ::munmap(m.base, m.length);
  }
  mappings_.clear();
  device_.reset();
  instance_ = backend::Instance();
  doorbells_.reset();
  if (doorbell_page_ != nullptr) ::munmap(doorbell_page_, kDoorbellRegionBytes);
  doorbell_page_ = nullptr;
}

Server::Server(DeviceFactory factory, std::string socket_path, Log log, ServerLimits limits)
    : factory_(std::move(factory)), path_(std::move(socket_path)), log_(std::move(log)), limits_(limits) {
  if (limits_.clients == 0 || limits_.client_mappings == 0 || limits_.client_memory_bytes == 0 ||
      limits_.reply_timeout <= std::chrono::milliseconds::zero()) {
    throw std::invalid_argument("vfio-user server: every limit (clients, client memory, client mappings, reply "
                                "timeout) must be above zero");
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.empty() || path_.size() >= sizeof addr.sun_path) throw std::runtime_error(sockaddr_path_error(path_));
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw std::runtime_error("vfio-user server: " + path_ + " exists and is not a socket; it is left alone");
    }
    ::unlink(path_.c_str());  // a socket left by a server that is gone
  }
  if (::pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0 || ::pipe2(ended_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {stop_pipe_[0], stop_pipe_[1]}) {
      if (fd >= 0) ::close(fd);
    }
    throw std::runtime_error("vfio-user server: no pipe: " + why);
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    const std::string why = std::strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    for (int fd : {stop_pipe_[0], stop_pipe_[1], ended_pipe_[0], ended_pipe_[1]}) ::close(fd);
    throw std::runtime_error("vfio-user server: cannot listen on " + path_ + ": " + why);
  }
}

Server::~Server() {
  ::close(listen_fd_);
  ::unlink(path_.c_str());
  for (int fd : {stop_pipe_[0], stop_pipe_[1], ended_pipe_[0], ended_pipe_[1]}) ::close(fd);
}

void Server::stop() noexcept {
  stopping_.store(true);
  // The byte stays in the pipe: every session's waits see it readable until the server is gone.
  const char c = 1;
  (void)!::write(stop_pipe_[1], &c, 1);
}

std::uint64_t Server::serve(bool once) {
  struct Running {
    std::thread thread;
    std::atomic<bool> ended{false};
  };
  std::list<Running> running;
  const auto reap = [&](bool all) {
    char drain[64];
    while (::read(ended_pipe_[0], drain, sizeof drain) > 0) {
    }
    for (auto it = running.begin(); it != running.end();) {
      if (all || it->ended.load()) {
        it->thread.join();
        it = running.erase(it);
      } else {
        ++it;
      }
    }
  };
  const unsigned at_once = once ? 1 : limits_.clients;
  std::uint64_t accepted = 0;
  while (!stopping_.load() && !(once && accepted == 1)) {
    // At the limit, the listening socket is not asked: the next client waits in the backlog.
    const bool room = running.size() < at_once;
    pollfd fds[3] = {{stop_pipe_[0], POLLIN, 0}, {ended_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (::poll(fds, room ? 3 : 2, -1) < 0) {
      if (errno == EINTR) continue;
      log(std::string("vfio-user server: poll failed: ") + std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0) reap(false);
    if (!room || fds[2].revents == 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      // A client that gave up before it was accepted, or no descriptor left: not the server's end.
      if (errno != ECONNABORTED && errno != EINTR && errno != EAGAIN) {
        log(std::string("vfio-user server: accept: ") + std::strerror(errno));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    const std::uint64_t number = ++accepted;
    Running& r = running.emplace_back();
    r.thread = std::thread([this, &r, client, number] {
      try {
        Session session(*this, UniqueFd(client), number);
        session.run();
      } catch (const std::exception& e) {
        log("vfio-user server: the session of client " + std::to_string(number) + " ended: " + e.what());
      }
      r.ended.store(true);
      const char c = 1;
      (void)!::write(ended_pipe_[1], &c, 1);
    });
  }
  reap(true);  // after stop(), every session's waits give up at once
  return accepted;
}

}  // namespace spyre_dma::vfio
