// vfio-user: VFIO's operations as messages to a device server (see spyre_dma/vfio/client.hpp), and
// the client API over it (connect, spawn).
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "spyre_dma/input_file.hpp"
#include "channel.hpp"
#include "doorbell_log.hpp"
#include "spyre_dma/deadline.hpp"
#include "spyre_dma/shareable_memory.hpp"
#include "spyre_dma/vfio/client.hpp"
#include "spyre_dma/vfio/protocol.hpp"
#include "user_transport.hpp"
#include "vfio_device.hpp"

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

class UserTransport final : public Transport {
 public:
  UserTransport(UniqueFd socket, const ClientOptions& options, pid_t child)
      : options_(options), channel_(std::move(socket), "the vfio-user server at " + options.socket_path), child_(child) {}
  ~UserTransport() override {
    channel_ = Channel(UniqueFd(), channel_.peer());  // closing the socket ends the server's session
    if (doorbell_page_ != nullptr) ::munmap(doorbell_page_, kDoorbellRegionBytes);
    reap_child();
  }

  // VFIO_USER_VERSION: what the server serves (backend, name, progress).
  DeviceDescription handshake();
  // Maps the server's doorbell region where it offers one (see spyre_dma/vfio/client.hpp).
  void map_doorbells();

  const std::string& peer() const override { return channel_.peer(); }
  DeviceInfo device_info() override {
    Message m = request(Command::kDeviceGetInfo, Writer().u32(16).u32(0).u32(0).u32(0).take());
    Reader r = m.reader();
    return parse_device_info(r);
  }
  RegionInfo region_info(std::uint32_t index) override {
    RegionInfo ask;
    ask.index = index;
    Message m = request(Command::kDeviceGetRegionInfo, encode(ask));
    Reader r = m.reader();
    return parse_region_info(r);
  }
  IrqInfo irq_info(std::uint32_t index) override {
    IrqInfo ask;
    ask.index = index;
    Message m = request(Command::kDeviceGetIrqInfo, encode(ask));
    Reader r = m.reader();
    return parse_irq_info(r);
  }
  void set_irqs(const IrqSet& set, const int* fds) override {
    const std::size_t n = (set.flags & kIrqDataEventfd) ? set.count : 0;
    request(Command::kDeviceSetIrqs, encode(set), fds, n);
  }
  void region_read(std::uint32_t region, std::uint64_t offset, std::uint8_t* dst, std::uint32_t n) override {
    RegionAccess a;
    a.offset = offset;
    a.region = region;
    a.count = n;
    Message m = request(Command::kRegionRead, encode(a));
    Reader r = m.reader();
    const RegionAccess got = parse_region_access(r, true);
    if (got.count != n) {
      throw ProtocolError("vfio-user: " + peer() + " answered a read of " + std::to_string(n) + " bytes with " +
                          std::to_string(got.count));
    }
    std::memcpy(dst, got.data.data(), n);
  }
  void region_write(std::uint32_t region, std::uint64_t offset, const std::uint8_t* src, std::uint32_t n, bool posted,
                    std::chrono::nanoseconds timeout) override {
    if (doorbells_) {
      if (region == kBar0Region && (n == 4 || n == 8)) return log_write(offset, src, n, posted, timeout);
      // No posted message beside the log: the server could apply what was logged after it
      // first (the ordering rule of doorbell_log.hpp).
      posted = false;
    }
    RegionAccess a;
    a.offset = offset;
    a.region = region;
    a.count = n;
    a.data.assign(src, src + n);
    if (!posted) {
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
  void dma_map(std::uint64_t iova, void* host, std::size_t bytes, std::uint32_t flags) override {
    const std::optional<ShareableRange> shared = find_shareable(host, bytes);
    if (!shared) {
      char where[32];
      std::snprintf(where, sizeof where, "%p", host);
      throw std::invalid_argument("vfio-user: host memory at " + std::string(where) + " (" + std::to_string(bytes) +
                                  " bytes) is not shareable with the device's process; use memory from "
                                  "Engine::allocate_host or spyre_dma::allocate_shareable");
    }
    DmaMap m;
    m.flags = flags;
    m.offset = shared->offset;
    m.address = iova;
    m.size = bytes;
    request(Command::kDmaMap, encode(m), &shared->fd, 1);
  }
  void dma_unmap(std::uint64_t iova, std::size_t bytes) override {
    DmaUnmap u;
    u.address = iova;
    u.size = bytes;
    request(Command::kDmaUnmap, encode(u));
  }
  void reset() override { request(Command::kDeviceReset, {}); }
  int hangup_fd() const override { return channel_.fd(); }
  std::uint32_t take_interrupts() noexcept override { return doorbells_ ? doorbells_->take_interrupts() : 0; }
  void sleeping_on_interrupts(bool sleeping) noexcept override {
    if (doorbells_) doorbells_->set_sleeping(sleeping);
  }

  pid_t child() const noexcept { return child_; }

 private:
  Message request(Command c, const std::vector<std::uint8_t>& payload, const int* fds = nullptr, std::size_t nfds = 0,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero());
  void log_write(std::uint64_t offset, const std::uint8_t* src, std::uint32_t n, bool posted,
                 std::chrono::nanoseconds timeout);
  void reap_child() noexcept;

  ClientOptions options_;
  std::mutex mu_;  // one exchange on the connection at a time
  Channel channel_;
  std::uint16_t next_id_ = 0;
  pid_t child_ = -1;
  // The doorbell region, where mapped.
  std::mutex log_mu_;  // one writer of the log at a time
  DoorbellPage* doorbell_page_ = nullptr;
  UniqueFd doorbell_wake_;
  std::optional<DoorbellWriter> doorbells_;
};

void UserTransport::map_doorbells() {
  const DeviceInfo di = device_info();
  if (di.num_regions <= kDoorbellRegion) return;  // a server without one: messages it is
  RegionInfo ask;
  ask.index = kDoorbellRegion;
  Message m = request(Command::kDeviceGetRegionInfo, encode(ask));
  Reader r = m.reader();
  const RegionInfo ri = parse_region_info(r);
  const bool offered = ri.has_type && ri.type == kVendorRegionType && ri.subtype == kDoorbellRegionSubtype &&
                       ri.size == kDoorbellRegionBytes && (ri.flags & kRegionMmap) != 0 &&
                       ri.sparse_areas.size() == 1 && ri.sparse_areas[0].offset == 0 &&
                       ri.sparse_areas[0].size == kDoorbellRegionBytes;
  if (!offered) return;
  if (m.fds.size() != 2) {
    throw ProtocolError("vfio-user: " + peer() + " offered its doorbell region with " + std::to_string(m.fds.size()) +
                        " file descriptors; the page's and the wake-up eventfd are two");
  }
  void* page = ::mmap(nullptr, kDoorbellRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, m.fds[0].get(),
                      static_cast<off_t>(ri.offset));
  if (page == MAP_FAILED) {
    throw std::runtime_error("vfio-user: cannot map the doorbell region of " + peer() + ": " + std::strerror(errno));
  }
  doorbell_page_ = static_cast<DoorbellPage*>(page);
  doorbell_wake_ = std::move(m.fds[1]);
  doorbells_.emplace(doorbell_page_, doorbell_wake_.get(), channel_.fd());
  doorbells_->attach();  // from here the server polls while this side is busy, and posts interrupts here
}

void UserTransport::log_write(std::uint64_t offset, const std::uint8_t* src, std::uint32_t n, bool posted,
                              std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds::zero()) timeout = options_.reply_timeout;
  std::uint64_t value = 0;
  for (std::uint32_t i = 0; i < n; ++i) value |= std::uint64_t{src[i]} << (8 * i);
  std::lock_guard<std::mutex> lock(log_mu_);
  const std::uint64_t entry = doorbells_->append(offset, n, value, timeout, peer());
  if (!posted) doorbells_->wait_applied(entry, timeout, peer());
}

DeviceDescription UserTransport::handshake() {
  Version v;
  v.capabilities_json = nlohmann::json{{"capabilities", {{"max_msg_fds", kMaxFds}}}}.dump();
  Message r = request(Command::kVersion, encode(v));
  Reader rd = r.reader();
  const Version theirs = parse_version(rd);
  if (theirs.major != kVersionMajor) {
    throw std::runtime_error("vfio-user: " + peer() + " speaks version " + std::to_string(theirs.major) + "." +
                             std::to_string(theirs.minor));
  }
  DeviceDescription d;
  d.backend = "vfio-user";
  d.name = "vfio-user device at " + options_.socket_path;
  d.progress = Progress::kSelfTimed;
  d.spin_yields = true;  // the server's threads run on this host's cores
  // The server's words: nesting deeper than any reader here allows is taken as no capabilities.
  nlohmann::json caps;
  if (json_too_deep_at(theirs.capabilities_json) == std::string_view::npos) {
    caps = nlohmann::json::parse(theirs.capabilities_json, nullptr, false);
  }
  const auto served = caps.is_object() ? caps.find("spyre_dma") : caps.end();
  if (served != caps.end() && served->is_object()) {
    const auto name = served->find("name");
    const auto progress = served->find("progress");
    if (name != served->end() && name->is_string()) d.name += " serving " + name->get<std::string>();
    if (progress != served->end() && progress->is_string() && progress->get<std::string>() == "host-driven") {
      d.progress = Progress::kHostDriven;
    }
  }
  return d;
}

Message UserTransport::request(Command c, const std::vector<std::uint8_t>& payload, const int* fds, std::size_t nfds,
                               std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds::zero()) timeout = options_.reply_timeout;
  std::lock_guard<std::mutex> lock(mu_);
  Header h;
  h.id = next_id_++;
  h.command = c;
  channel_.send(h, payload, fds, nfds);
  if (doorbells_) doorbells_->message_sent();
  for (;;) {
    Message m;
    try {
      m = channel_.receive(timeout);
    } catch (const ReceiveTimeout&) {
      throw std::runtime_error("vfio-user: " + peer() + " did not answer " + to_string(c) + " in time");
    }
    if (!m.header.is_reply()) continue;  // the server asks nothing of this client (no DMA_READ/WRITE)
    if (m.header.id != h.id || m.header.command != c) {
      throw ProtocolError("vfio-user: " + peer() + " answered message " + std::to_string(h.id) + " (" + to_string(c) +
                          ") with a reply to message " + std::to_string(m.header.id));
    }
    if ((m.header.flags & kFlagError) != 0) {
      const int e = static_cast<int>(m.header.error);
      const std::string what = "vfio-user: " + peer() + " refused " + to_string(c) + ": " + std::strerror(e);
      if (e == EINVAL) throw std::invalid_argument(what);
      throw std::runtime_error(what);
    }
    return m;
  }
}

void UserTransport::reap_child() noexcept {
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

std::shared_ptr<Device> open_over(UniqueFd socket, const ClientOptions& options, pid_t child) {
  auto transport = std::make_unique<UserTransport>(std::move(socket), options, child);
  const DeviceDescription d = transport->handshake();
  if (options.map_doorbells) transport->map_doorbells();
  return std::make_shared<VfioDevice>(std::move(transport), d, options.interrupts);
}

}  // namespace

std::unique_ptr<Transport> connect_transport(const ClientOptions& options, DeviceDescription* served) {
  auto t = std::make_unique<UserTransport>(connect_socket(options.socket_path, options.connect_timeout), options, -1);
  const DeviceDescription d = t->handshake();
  if (served) *served = d;
  return t;
}

std::shared_ptr<Device> connect(const ClientOptions& options) {
  return open_over(connect_socket(options.socket_path, options.connect_timeout), options, -1);
}

std::shared_ptr<Device> spawn(const SpawnOptions& options) {
  // A fresh socket path of our own in the temporary directory.
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
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
  client.interrupts = options.interrupts;
  client.map_doorbells = options.map_doorbells;
  UniqueFd socket;
  try {
    const auto deadline =
        deadline_after<std::chrono::steady_clock>(std::chrono::steady_clock::now(), options.connect_timeout);
    for (;;) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                : WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                      : "ended";
        throw std::runtime_error("vfio-user: the server '" + options.program + " serve --backend " + options.backend +
                                 "' " + how + " before it listened (its error is above)");
      }
      try {
        socket = connect_socket(path, std::chrono::milliseconds(50));
        break;
      } catch (const std::runtime_error&) {
        if (std::chrono::steady_clock::now() >= deadline) throw;
      }
    }
  } catch (...) {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::unlink(path.c_str());
    throw;
  }
  return open_over(std::move(socket), client, pid);  // from here the transport owns the child
}

pid_t server_pid(const Device& device) {
  const auto* d = dynamic_cast<const VfioDevice*>(&device);
  const auto* t = d ? dynamic_cast<const UserTransport*>(&const_cast<VfioDevice*>(d)->transport()) : nullptr;
  return t ? t->child() : -1;
}

backend::MemoryBackdoor* memory_backdoor(Device& device) {
  auto* d = dynamic_cast<VfioDevice*>(&device);
  return d && d->has_memory() ? d : nullptr;
}

backend::SimulatedClock* simulated_clock(Device& device) {
  auto* d = dynamic_cast<VfioDevice*>(&device);
  return d && d->has_clock() ? d : nullptr;
}

backend::MisbehaveControl* misbehave_control(Device& device) {
  auto* d = dynamic_cast<VfioDevice*>(&device);
  return d && d->has_misbehave() ? d : nullptr;
}

}  // namespace spyre_dma::vfio
