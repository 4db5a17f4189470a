// The vfio-user client Device (see spyre_dma/vfio/client.hpp).
#include "spyre_dma/vfio/client.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "channel.hpp"
#include "spyre_dma/deadline.hpp"
#include "spyre_dma/device_core/iommu.hpp"
#include "spyre_dma/device_core/register_file.hpp"
#include "spyre_dma/hw/contract.hpp"
#include "spyre_dma/shareable_memory.hpp"
#include "spyre_dma/vfio/protocol.hpp"

extern char** environ;

namespace spyre_dma::vfio {
namespace {

UniqueFd connect_socket(const std::string& path, std::chrono::nanoseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("vfio-user: socket path '" + path + "' is empty or longer than " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const auto deadline = deadline_after<std::chrono::steady_clock>(std::chrono::steady_clock::now(), timeout);
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throw std::runtime_error(std::string("vfio-user: no socket: ") + std::strerror(errno));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    const int e = errno;
    // A server still starting has no socket yet, or is not listening yet: try again until the deadline.
    if ((e != ENOENT && e != ECONNREFUSED) || std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("vfio-user: cannot connect to the server at " + path + ": " + std::strerror(e));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

class Client final : public Device, public backend::MemoryBackdoor, public backend::SimulatedClock {
 public:
  Client(UniqueFd socket, const ClientOptions& options, pid_t child)
      : options_(options), channel_(std::move(socket), "the server at " + options.socket_path), child_(child) {
    handshake();
  }
  ~Client() override {
    try {
      release_irqs();
    } catch (...) {
    }
    channel_ = Channel(UniqueFd(), channel_.peer());  // closing the socket ends the server's session
    reap_child();
  }

  DeviceDescription describe() const override { return description_; }

  std::uint32_t read32(std::uint64_t offset) override { return static_cast<std::uint32_t>(read(offset, 4)); }
  std::uint64_t read64(std::uint64_t offset) override { return read(offset, 8); }
  void write32(std::uint64_t offset, std::uint32_t value) override { write(kBar0Region, offset, value, 4, false); }
  void write64(std::uint64_t offset, std::uint64_t value) override { write(kBar0Region, offset, value, 8, false); }

  std::uint64_t map(void* host, std::size_t bytes, DmaAccess access) override {
    const std::optional<ShareableRange> shared = find_shareable(host, bytes);
    if (!shared) {
      throw std::invalid_argument("vfio-user: host memory at " + hex(reinterpret_cast<std::uintptr_t>(host)) + " (" +
                                  std::to_string(bytes) +
                                  " bytes) is not shareable with the device's process; use memory from "
                                  "Engine::allocate_host or spyre_dma::allocate_shareable");
    }
    const std::uint64_t iova = iovas_.map(host, bytes, access);  // our IOVA space, the device's rules
    DmaMap m;
    m.flags = (static_cast<unsigned>(access) & static_cast<unsigned>(DmaAccess::kDeviceReads) ? kDmaRead : 0) |
              (static_cast<unsigned>(access) & static_cast<unsigned>(DmaAccess::kDeviceWrites) ? kDmaWrite : 0);
    m.offset = shared->offset;
    m.address = iova;
    m.size = bytes;
    try {
      const int fd = shared->fd;
      request(Command::kDmaMap, encode(m), &fd, 1);
    } catch (...) {
      iovas_.unmap(iova);
      throw;
    }
    std::lock_guard<std::mutex> lock(mu_);
    mapped_[iova] = bytes;
    return iova;
  }

  void unmap(std::uint64_t iova) override {
    std::uint64_t bytes = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto it = mapped_.find(iova);
      if (it == mapped_.end()) throw std::invalid_argument("vfio-user: unmap of " + hex(iova) + ", which map() did not return");
      bytes = it->second;
      mapped_.erase(it);
    }
    iovas_.unmap(iova);
    DmaUnmap u;
    u.address = iova;
    u.size = bytes;
    request(Command::kDmaUnmap, encode(u));  // the reply: the device can no longer reach the bytes
  }

  std::uint32_t wait_for_interrupt(std::chrono::nanoseconds timeout) override {
    if (host_driven_) {
      // The server runs the device until an interrupt or the timeout; the interrupts are on their
      // eventfds before its reply leaves.
      const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(timeout.count(), 0));
      write(kClockRegion, kClockWaitOffset, ns, 8, true, timeout + options_.reply_timeout);
      return collect(std::chrono::nanoseconds::zero());
    }
    return collect(timeout);
  }

  void host_copied(std::uint64_t bytes) override {
    if (host_driven_) write(kClockRegion, kClockHostCopiedOffset, bytes, 8, false);
  }

  pid_t child() const noexcept { return child_; }
  bool has_memory() const noexcept { return memory_bytes_ != 0; }
  bool has_clock() const noexcept { return host_driven_; }

  void backdoor_read(std::uint64_t phys, void* dst, std::size_t bytes) override {
    auto* out = static_cast<std::uint8_t*>(dst);
    for (std::size_t done = 0; done < bytes;) {
      const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(bytes - done, kMaxMemoryAccess));
      RegionAccess a;
      a.offset = phys + done;
      a.region = kMemoryRegion;
      a.count = n;
      Message m = request(Command::kRegionRead, encode(a));
      Reader r = m.reader();
      const RegionAccess got = parse_region_access(r, true);
      if (got.count != n) throw ProtocolError("vfio-user: " + channel_.peer() + " answered a memory read short");
      std::memcpy(out + done, got.data.data(), n);
      done += n;
    }
  }
  void backdoor_write(std::uint64_t phys, const void* src, std::size_t bytes) override {
    const auto* in = static_cast<const std::uint8_t*>(src);
    for (std::size_t done = 0; done < bytes;) {
      const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(bytes - done, kMaxMemoryAccess));
      RegionAccess a;
      a.offset = phys + done;
      a.region = kMemoryRegion;
      a.count = n;
      a.data.assign(in + done, in + done + n);
      request(Command::kRegionWrite, encode(a));  // acknowledged: the next DMA sees it
      done += n;
    }
  }
  double now_ns() override {
    RegionAccess a;
    a.offset = kClockNowOffset;
    a.region = kClockRegion;
    a.count = 8;
    Message m = request(Command::kRegionRead, encode(a));
    Reader r = m.reader();
    const RegionAccess got = parse_region_access(r, true);
    std::uint64_t bits = 0;
    for (unsigned i = 0; i < 8 && i < got.data.size(); ++i) bits |= std::uint64_t{got.data[i]} << (8 * i);
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }

 private:
  static std::string hex(std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  void handshake();
  void release_irqs();
  void reap_child() noexcept;

  Message request(Command c, const std::vector<std::uint8_t>& payload, const int* fds = nullptr, std::size_t nfds = 0,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());
  std::uint64_t read(std::uint64_t offset, unsigned width);
  void write(std::uint32_t region, std::uint64_t offset, std::uint64_t value, unsigned width, bool wait,
             std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());
  // The interrupts signalled so far, waiting up to `timeout` for the first.
  std::uint32_t collect(std::chrono::nanoseconds timeout);

  ClientOptions options_;
  std::mutex mu_;  // one exchange on the connection at a time; mapped_
  Channel channel_;
  std::uint16_t next_id_ = 0;
  pid_t child_ = -1;
  DeviceDescription description_;
  bool host_driven_ = false;
  std::uint64_t memory_bytes_ = 0;  // of the server's memory region (0: no backdoor)
  device_core::Iommu iovas_;
  std::map<std::uint64_t, std::uint64_t> mapped_;  // IOVA -> bytes
  std::array<UniqueFd, hw::kNumPipelines> eventfds_;
};

void Client::handshake() {
  // Version first; the server's answer says what it serves.
  Version v;
  v.capabilities_json = nlohmann::json{{"capabilities", {{"max_msg_fds", kMaxFds}}}}.dump();
  Message r = request(Command::kVersion, encode(v));
  Reader rd = r.reader();
  const Version theirs = parse_version(rd);
  if (theirs.major != kVersionMajor) {
    throw std::runtime_error("vfio-user: " + channel_.peer() + " speaks version " + std::to_string(theirs.major) + "." +
                             std::to_string(theirs.minor));
  }
  description_.backend = "vfio-user";
  description_.name = "vfio-user device at " + options_.socket_path;
  const nlohmann::json caps = nlohmann::json::parse(theirs.capabilities_json, nullptr, false);
  const auto served = caps.is_object() ? caps.find("spyre_dma") : caps.end();
  if (served != caps.end() && served->is_object()) {
    const auto name = served->find("name");
    const auto progress = served->find("progress");
    if (name != served->end() && name->is_string()) description_.name += " serving " + name->get<std::string>();
    host_driven_ = progress != served->end() && progress->is_string() && progress->get<std::string>() == "host-driven";
  }
  description_.progress = host_driven_ ? Progress::kHostDriven : Progress::kSelfTimed;

  Message info = request(Command::kDeviceGetInfo, Writer().u32(16).u32(0).u32(0).u32(0).take());
  Reader ir = info.reader();
  const DeviceInfo di = parse_device_info(ir);
  if ((di.flags & kDeviceFlagPci) == 0 || di.num_regions <= kBar0Region || di.num_irqs <= kMsixIrqIndex) {
    throw std::runtime_error("vfio-user: " + channel_.peer() + " does not offer a PCI device with BAR0 and MSI-X");
  }
  RegionInfo ask;
  ask.index = kBar0Region;
  Message bar = request(Command::kDeviceGetRegionInfo, encode(ask));
  Reader br = bar.reader();
  const RegionInfo bar0 = parse_region_info(br);
  if (bar0.size < hw::reg::kBar0Bytes || (bar0.flags & (kRegionRead | kRegionWrite)) != (kRegionRead | kRegionWrite)) {
    throw std::runtime_error("vfio-user: " + channel_.peer() + " offers a BAR0 of " + std::to_string(bar0.size) +
                             " bytes; the device's registers need " + std::to_string(hw::reg::kBar0Bytes));
  }
  // This project's regions, where the server has them (a server of another project has not).
  auto vendor_region = [&](std::uint32_t index, std::uint32_t subtype) -> std::uint64_t {
    if (di.num_regions <= index) return 0;
    ask.index = index;
    Message m = request(Command::kDeviceGetRegionInfo, encode(ask));
    Reader rr = m.reader();
    const RegionInfo ri = parse_region_info(rr);
    return ri.has_type && ri.type == kVendorRegionType && ri.subtype == subtype ? ri.size : 0;
  };
  if (host_driven_ && vendor_region(kClockRegion, kClockRegionSubtype) < kClockRegionBytes) {
    throw std::runtime_error("vfio-user: " + channel_.peer() + " serves a host-driven device without its clock region");
  }
  memory_bytes_ = vendor_region(kMemoryRegion, kMemoryRegionSubtype);
  IrqInfo irq;
  irq.index = kMsixIrqIndex;
  Message im = request(Command::kDeviceGetIrqInfo, encode(irq));
  Reader imr = im.reader();
  if (parse_irq_info(imr).count < hw::kNumPipelines) {
    throw std::runtime_error("vfio-user: " + channel_.peer() + " offers fewer MSI-X vectors than the device's pipelines");
  }
  std::array<int, hw::kNumPipelines> fds{};
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    eventfds_[p].reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!eventfds_[p]) throw std::runtime_error(std::string("vfio-user: no eventfd: ") + std::strerror(errno));
    fds[p] = eventfds_[p].get();
  }
  IrqSet set;
  set.flags = kIrqDataEventfd | kIrqActionTrigger;
  set.index = kMsixIrqIndex;
  set.count = hw::kNumPipelines;
  request(Command::kDeviceSetIrqs, encode(set), fds.data(), fds.size());
}

void Client::release_irqs() {
  if (channel_.fd() < 0) return;
  IrqSet set;
  set.flags = kIrqDataNone | kIrqActionTrigger;
  set.index = kMsixIrqIndex;
  Header h;
  h.command = Command::kDeviceSetIrqs;
  h.flags = kFlagNoReply;
  std::lock_guard<std::mutex> lock(mu_);
  h.id = next_id_++;
  channel_.send(h, encode(set));
}

void Client::reap_child() noexcept {
  if (child_ <= 0) return;
  // The server leaves once its client has gone (serve --once); give it a moment, then end it.
  bool gone = false;
  for (int i = 0; i < 400 && !gone; ++i) {
    gone = ::waitpid(child_, nullptr, WNOHANG) == child_;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!gone) {
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
  }
  ::unlink(options_.socket_path.c_str());  // left behind by a server that was killed
}

Message Client::request(Command c, const std::vector<std::uint8_t>& payload, const int* fds, std::size_t nfds,
                        std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds::zero()) timeout = options_.reply_timeout;
  std::lock_guard<std::mutex> lock(mu_);
  Header h;
  h.id = next_id_++;
  h.command = c;
  channel_.send(h, payload, fds, nfds);
  for (;;) {
    Message m;
    try {
      m = channel_.receive(timeout);
    } catch (const ReceiveTimeout&) {
      throw std::runtime_error("vfio-user: " + channel_.peer() + " did not answer " + to_string(c) + " in time");
    }
    if (!m.header.is_reply()) continue;  // the server asks nothing of this client (no DMA_READ/WRITE)
    if (m.header.id != h.id || m.header.command != c) {
      throw ProtocolError("vfio-user: " + channel_.peer() + " answered message " + std::to_string(h.id) + " (" +
                          to_string(c) + ") with a reply to message " + std::to_string(m.header.id));
    }
    if ((m.header.flags & kFlagError) != 0) {
      const int e = static_cast<int>(m.header.error);
      const std::string what = "vfio-user: " + channel_.peer() + " refused " + to_string(c) + ": " + std::strerror(e);
      if (e == EINVAL) throw std::invalid_argument(what);
      throw std::runtime_error(what);
    }
    return m;
  }
}

std::uint64_t Client::read(std::uint64_t offset, unsigned width) {
  device_core::check_bar0_access(offset, width, false, "vfio-user");  // the contract's rule, before any message
  RegionAccess a;
  a.offset = offset;
  a.region = kBar0Region;
  a.count = width;
  Message m = request(Command::kRegionRead, encode(a));
  Reader r = m.reader();
  const RegionAccess got = parse_region_access(r, true);
  if (got.count != width) {
    throw ProtocolError("vfio-user: " + channel_.peer() + " answered a read of " + std::to_string(width) +
                        " bytes with " + std::to_string(got.count));
  }
  std::uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) v |= std::uint64_t{got.data[i]} << (8 * i);
  return v;
}

void Client::write(std::uint32_t region, std::uint64_t offset, std::uint64_t value, unsigned width, bool wait,
                   std::chrono::nanoseconds timeout) {
  if (region == kBar0Region) device_core::check_bar0_access(offset, width, true, "vfio-user");
  RegionAccess a;
  a.offset = offset;
  a.region = region;
  a.count = width;
  a.data.resize(width);
  for (unsigned i = 0; i < width; ++i) a.data[i] = static_cast<std::uint8_t>(value >> (8 * i));
  if (wait) {
    request(Command::kRegionWrite, encode(a), nullptr, 0, timeout);
    return;
  }
  Header h;
  h.command = Command::kRegionWrite;
  h.flags = kFlagNoReply;  // posted, as a PCIe memory write
  std::lock_guard<std::mutex> lock(mu_);
  h.id = next_id_++;
  channel_.send(h, encode(a));
}

std::uint32_t Client::collect(std::chrono::nanoseconds timeout) {
  std::array<pollfd, hw::kNumPipelines + 1> fds{};
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) fds[p] = {eventfds_[p].get(), POLLIN, 0};
  // The server closing its end shows as a hang-up on the socket: a wait then ends at once.
  fds[hw::kNumPipelines] = {channel_.fd(), POLLRDHUP, 0};
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout + std::chrono::microseconds(999));
  int ready = 0;
  do {
    ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<std::int64_t>(ms.count(), 0, 1 << 30)));
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) throw std::runtime_error(std::string("vfio-user: waiting for interrupts failed: ") + std::strerror(errno));
  if ((fds[hw::kNumPipelines].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
    throw std::runtime_error("vfio-user: " + channel_.peer() + " closed the connection");
  }
  std::uint32_t mask = 0;
  for (unsigned p = 0; p < hw::kNumPipelines; ++p) {
    std::uint64_t count = 0;
    if (::read(eventfds_[p].get(), &count, sizeof count) == static_cast<ssize_t>(sizeof count) && count != 0) {
      mask |= 1u << p;
    }
  }
  return mask;
}

}  // namespace

std::shared_ptr<Device> connect(const ClientOptions& options) {
  return std::make_shared<Client>(connect_socket(options.socket_path, options.connect_timeout), options, -1);
}

std::shared_ptr<Device> spawn(const SpawnOptions& options) {
  // A fresh socket path of our own in the temporary directory.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  std::random_device rd;
  const std::string path = dir + "/spyre-dma-" + std::to_string(::getpid()) + "-" + std::to_string(rd()) + ".sock";
  std::vector<std::string> args = {options.program, "serve", "--backend", options.backend, "--socket", path, "--once"};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int e = ::posix_spawnp(&pid, options.program.c_str(), nullptr, nullptr, argv.data(), environ);
  if (e != 0) {
    throw std::runtime_error("vfio-user: cannot start the server '" + options.program + "': " + std::strerror(e));
  }
  ClientOptions client;
  client.socket_path = path;
  client.connect_timeout = options.connect_timeout;
  try {
    UniqueFd socket;
    const auto deadline =
        deadline_after<std::chrono::steady_clock>(std::chrono::steady_clock::now(), options.connect_timeout);
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        throw std::runtime_error("vfio-user: the server '" + options.program + " serve --backend " + options.backend +
                                 "' exited before it listened (status " + std::to_string(status) + ")");
      }
      try {
        socket = connect_socket(path, std::chrono::milliseconds(50));
        break;
      } catch (const std::runtime_error&) {
        if (std::chrono::steady_clock::now() >= deadline) throw;
      }
    }
    return std::make_shared<Client>(std::move(socket), client, pid);
  } catch (...) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    throw;
  }
}

pid_t server_pid(const Device& device) {
  const auto* c = dynamic_cast<const Client*>(&device);
  return c ? c->child() : -1;
}

backend::MemoryBackdoor* memory_backdoor(Device& device) {
  auto* c = dynamic_cast<Client*>(&device);
  return c && c->has_memory() ? c : nullptr;
}

backend::SimulatedClock* simulated_clock(Device& device) {
  auto* c = dynamic_cast<Client*>(&device);
  return c && c->has_clock() ? c : nullptr;
}

}  // namespace spyre_dma::vfio
