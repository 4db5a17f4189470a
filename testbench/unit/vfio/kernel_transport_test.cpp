// The kernel's VFIO transport with its system calls answered by a vfio-user device server: the
// set-up sequence in the kernel's order, every ioctl's structure as the kernel reads it, and an
// engine running through it, against a device that speaks the same operations. Plus the card's
// selection from sysfs and the errors a user meets.
#include <gtest/gtest.h>

#include <linux/vfio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kernel_transport.hpp"
#include "spyre_dma/backend/builtin.hpp"
#include "spyre_dma/spyre_dma.hpp"
#include "spyre_dma/vfio/kernel.hpp"
#include "spyre_dma/vfio/server.hpp"
#include "syscalls.hpp"
#include "user_transport.hpp"

namespace {

using namespace spyre_dma;
using namespace spyre_dma::vfio;
using namespace std::chrono_literals;

constexpr int kContainer = 1000, kGroup = 1001, kDevice = 1002;
constexpr int kGroupNumber = 7;
constexpr std::uint64_t kRegionShift = 40;  // region offsets within the device file, as vfio-pci lays them out

// System calls answered the way the kernel would, from a vfio-user server's device.
class ServerSyscalls final : public Syscalls {
 public:
  explicit ServerSyscalls(std::unique_ptr<Transport> server) : server_(std::move(server)) {}
  std::vector<std::string> calls;  // in order
  bool viable = true;
  int refuse_group_open = 0;  // an errno for opening the group file

  int open(const char* path, int) override {
    calls.push_back(std::string("open ") + path);
    if (std::string(path) == "/dev/vfio/vfio") return kContainer;
    if (std::string(path) == "/dev/vfio/" + std::to_string(kGroupNumber)) {
      if (refuse_group_open) return errno = refuse_group_open, -1;
      return kGroup;
    }
    return errno = ENOENT, -1;
  }
  int close(int fd) override {
    calls.push_back("close " + std::to_string(fd));
    return 0;
  }
  int ioctl(int fd, unsigned long request, unsigned long arg) override {
    if (fd == kContainer && request == VFIO_GET_API_VERSION) return note("VFIO_GET_API_VERSION"), VFIO_API_VERSION;
    if (fd == kContainer && request == VFIO_CHECK_EXTENSION) {
      note("VFIO_CHECK_EXTENSION " + std::to_string(arg));
      return arg == VFIO_TYPE1v2_IOMMU ? 1 : 0;
    }
    if (fd == kContainer && request == VFIO_SET_IOMMU) {
      note("VFIO_SET_IOMMU " + std::to_string(arg));
      return container_set_ && arg == VFIO_TYPE1v2_IOMMU ? 0 : (errno = EINVAL, -1);
    }
    if (fd == kDevice && request == VFIO_DEVICE_RESET) return note("VFIO_DEVICE_RESET"), server_->reset(), 0;
    return errno = ENOTTY, -1;
  }
  int ioctl(int fd, unsigned long request, void* arg) override {
    if (fd == kGroup && request == VFIO_GROUP_GET_STATUS) {
      note("VFIO_GROUP_GET_STATUS");
      auto* s = static_cast<vfio_group_status*>(arg);
      if (s->argsz < sizeof *s) return errno = EINVAL, -1;
      s->flags = (viable ? VFIO_GROUP_FLAGS_VIABLE : 0) | (container_set_ ? VFIO_GROUP_FLAGS_CONTAINER_SET : 0);
      return 0;
    }
    if (fd == kGroup && request == VFIO_GROUP_SET_CONTAINER) {
      note("VFIO_GROUP_SET_CONTAINER");
      if (*static_cast<int*>(arg) != kContainer) return errno = EBADF, -1;
      container_set_ = true;
      return 0;
    }
    if (fd == kGroup && request == VFIO_GROUP_GET_DEVICE_FD) {
      note(std::string("VFIO_GROUP_GET_DEVICE_FD ") + static_cast<const char*>(arg));
      return std::string(static_cast<const char*>(arg)) == "0000:3b:00.0" ? kDevice : (errno = ENODEV, -1);
    }
    if (fd == kDevice && request == VFIO_DEVICE_GET_INFO) {
      note("VFIO_DEVICE_GET_INFO");
      auto* info = static_cast<vfio_device_info*>(arg);
      const DeviceInfo d = server_->device_info();
      info->flags = d.flags;
      info->num_regions = d.num_regions;
      info->num_irqs = d.num_irqs;
      return 0;
    }
    if (fd == kDevice && request == VFIO_DEVICE_GET_REGION_INFO) {
      auto* info = static_cast<vfio_region_info*>(arg);
      note("VFIO_DEVICE_GET_REGION_INFO " + std::to_string(info->index));
      if (info->argsz < sizeof *info) return errno = EINVAL, -1;
      const RegionInfo r = server_->region_info(info->index);
      info->flags = r.flags;  // no MMAP: BAR0 is read and written through the device file
      info->size = r.size;
      info->offset = std::uint64_t{info->index} << kRegionShift;
      return 0;
    }
    if (fd == kDevice && request == VFIO_DEVICE_GET_IRQ_INFO) {
      auto* info = static_cast<vfio_irq_info*>(arg);
      note("VFIO_DEVICE_GET_IRQ_INFO " + std::to_string(info->index));
      const IrqInfo i = server_->irq_info(info->index);
      info->flags = i.flags;
      info->count = i.count;
      return 0;
    }
    if (fd == kDevice && request == VFIO_DEVICE_SET_IRQS) {
      const auto* s = static_cast<const vfio_irq_set*>(arg);
      note("VFIO_DEVICE_SET_IRQS " + std::to_string(s->index) + " count " + std::to_string(s->count));
      IrqSet set{s->flags, s->index, s->start, s->count};
      const std::size_t n = (s->flags & VFIO_IRQ_SET_DATA_EVENTFD) ? s->count : 0;
      if (s->argsz != sizeof *s + n * sizeof(std::int32_t)) return errno = EINVAL, -1;
      std::vector<int> fds(n);
      if (n != 0) std::memcpy(fds.data(), s->data, n * sizeof(std::int32_t));
      server_->set_irqs(set, fds.data());
      return 0;
    }
    if (fd == kContainer && request == VFIO_IOMMU_MAP_DMA) {
      const auto* m = static_cast<const vfio_iommu_type1_dma_map*>(arg);
      note("VFIO_IOMMU_MAP_DMA");
      if (m->vaddr % 4096 || m->iova % 4096 || m->size % 4096) return errno = EINVAL, -1;  // the kernel's rule
      server_->dma_map(m->iova, reinterpret_cast<void*>(m->vaddr), m->size, m->flags);
      return 0;
    }
    if (fd == kContainer && request == VFIO_IOMMU_UNMAP_DMA) {
      const auto* u = static_cast<const vfio_iommu_type1_dma_unmap*>(arg);
      note("VFIO_IOMMU_UNMAP_DMA");
      server_->dma_unmap(u->iova, u->size);
      return 0;
    }
    return errno = ENOTTY, -1;
  }
  ssize_t pread(int fd, void* buf, size_t n, off_t offset) override {
    if (fd != kDevice) return errno = EBADF, -1;
    const auto off = static_cast<std::uint64_t>(offset);
    server_->region_read(static_cast<std::uint32_t>(off >> kRegionShift), off & ((1ull << kRegionShift) - 1),
                         static_cast<std::uint8_t*>(buf), static_cast<std::uint32_t>(n));
    return static_cast<ssize_t>(n);
  }
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) override {
    if (fd != kDevice) return errno = EBADF, -1;
    const auto off = static_cast<std::uint64_t>(offset);
    server_->region_write(static_cast<std::uint32_t>(off >> kRegionShift), off & ((1ull << kRegionShift) - 1),
                          static_cast<const std::uint8_t*>(buf), static_cast<std::uint32_t>(n), true, {});
    return static_cast<ssize_t>(n);
  }
  void* mmap(size_t, int, int, off_t) override { return MAP_FAILED; }
  int munmap(void*, size_t) override { return 0; }

 private:
  void note(std::string s) { calls.push_back(std::move(s)); }
  std::unique_ptr<Transport> server_;
  bool container_set_ = false;
};

class ServerThread {
 public:
  explicit ServerThread(const char* name)
      : server_([] { return backend::builtin().open("refdev", {}); },
                std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/spyre-dma-kernel-test-" +
                    std::to_string(::getpid()) + "-" + name + ".sock"),
        thread_([this] { server_.serve(false); }) {}
  ~ServerThread() {
    server_.stop();
    thread_.join();
  }
  std::unique_ptr<Transport> connect() {
    ClientOptions o;
    o.socket_path = server_.path();
    return connect_transport(o);
  }

 private:
  vfio::Server server_;
  std::thread thread_;
};

PciDevice card() {
  PciDevice d;
  d.address = "0000:3b:00.0";
  d.vendor = hw::kPciVendorIbm;
  d.device = hw::kPciDeviceSpyrePf;
  d.driver = "vfio-pci";
  d.iommu_group = kGroupNumber;
  return d;
}

TEST(VfioKernel, SetUpRunsInTheKernelsOrder) {
  ServerThread server("order");
  ServerSyscalls sys(server.connect());
  auto transport = open_kernel_transport(sys, card());
  const std::vector<std::string> expected = {
      "open /dev/vfio/vfio", "VFIO_GET_API_VERSION", "VFIO_CHECK_EXTENSION 3", "open /dev/vfio/7",
      "VFIO_GROUP_GET_STATUS", "VFIO_GROUP_SET_CONTAINER", "VFIO_SET_IOMMU 3",
      "VFIO_GROUP_GET_DEVICE_FD 0000:3b:00.0", "VFIO_DEVICE_GET_REGION_INFO 0"};
  ASSERT_GE(sys.calls.size(), expected.size());
  EXPECT_EQ(std::vector<std::string>(sys.calls.begin(), sys.calls.begin() + expected.size()), expected);
  transport.reset();
  EXPECT_EQ(std::vector<std::string>(sys.calls.end() - 3, sys.calls.end()),
            (std::vector<std::string>{"close 1002", "close 1001", "close 1000"}));
}

TEST(VfioKernel, AnEngineRunsThroughTheKernelsCalls) {
  ServerThread server("engine");
  auto sys = std::make_shared<ServerSyscalls>(server.connect());
  DeviceDescription d;
  d.backend = "vfio";
  d.name = "card at 0000:3b:00.0 (answered by a vfio-user server)";
  {
    auto device = std::make_shared<VfioDevice>(open_kernel_transport(*sys, card()), d);
    auto engine = Engine::open(device);
    constexpr std::size_t kBytes = (1 << 20) + 4096;
    HostBuffer src = engine->allocate_host(kBytes), dst = engine->allocate_host(kBytes);
    for (std::size_t i = 0; i < kBytes; ++i) static_cast<std::uint8_t*>(src.data())[i] = static_cast<std::uint8_t>(i * 3);
    DeviceBuffer dev = engine->allocate(kBytes);
    Stream stream = engine->create_stream();
    stream.copy_h2d(dev, 0, src.data(), kBytes);
    stream.copy_d2h(dst.data(), dev, 0, kBytes);
    ASSERT_TRUE(stream.synchronize(10s).ok());
    EXPECT_EQ(std::memcmp(src.data(), dst.data(), kBytes), 0);
    EXPECT_TRUE(engine->reset(10s).ok());
  }
  auto count = [&](const std::string& call) {
    return std::count(sys->calls.begin(), sys->calls.end(), call);
  };
  EXPECT_GE(count("VFIO_IOMMU_MAP_DMA"), 6) << "rings, staging and the two buffers";
  EXPECT_EQ(count("VFIO_IOMMU_MAP_DMA"), count("VFIO_IOMMU_UNMAP_DMA")) << "every mapping undone";
  EXPECT_EQ(count("VFIO_DEVICE_RESET"), 1) << "a function-level reset when the device is opened";
  EXPECT_EQ(count("VFIO_DEVICE_SET_IRQS 2 count 3"), 1);
  EXPECT_EQ(count("VFIO_DEVICE_SET_IRQS 2 count 0"), 1) << "vectors released before the eventfds close";
}

TEST(VfioKernel, ErrorsSayWhatToDo) {
  ServerThread server("errors");
  {
    ServerSyscalls sys(server.connect());
    sys.viable = false;
    try {
      (void)open_kernel_transport(sys, card());
      FAIL() << "a group that is not viable was used";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("IOMMU group 7 is not viable: bind every device"), std::string::npos) << e.what();
    }
    EXPECT_EQ(sys.calls.back(), "close 1000") << "what was opened is closed again";
  }
  {
    ServerSyscalls sys(server.connect());
    sys.refuse_group_open = EACCES;
    try {
      (void)open_kernel_transport(sys, card());
      FAIL() << "a group without permission was opened";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("opening /dev/vfio/7"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("permission denied"), std::string::npos) << e.what();
    }
  }
  PciDevice no_group = card();
  no_group.iommu_group = -1;
  ServerSyscalls sys(server.connect());
  EXPECT_THROW((void)open_kernel_transport(sys, no_group), std::runtime_error);
}

// A sysfs tree of two cards and another device.
class FakeSysfs {
 public:
  FakeSysfs() : root_(std::filesystem::temp_directory_path() / ("spyre-dma-sysfs-" + std::to_string(::getpid()))) {
    add("0000:3b:00.0", "0x1014", "0x06a7", "vfio-pci", 7);
    add("0000:3b:00.1", "0x1014", "0x06a8", "", 8);
    add("0000:00:02.0", "0x8086", "0x1234", "i915", -1);
  }
  ~FakeSysfs() { std::filesystem::remove_all(root_); }
  std::string path() const { return root_.string(); }

 private:
  void add(const std::string& address, const char* vendor, const char* device, const std::string& driver, int group) {
    const auto dir = root_ / "bus/pci/devices" / address;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "vendor") << vendor << "\n";
    std::ofstream(dir / "device") << device << "\n";
    if (!driver.empty()) {
      std::filesystem::create_directories(root_ / "bus/pci/drivers" / driver);
      std::filesystem::create_directory_symlink(root_ / "bus/pci/drivers" / driver, dir / "driver");
    }
    if (group >= 0) {
      std::filesystem::create_directories(root_ / "kernel/iommu_groups" / std::to_string(group));
      std::filesystem::create_directory_symlink(root_ / "kernel/iommu_groups" / std::to_string(group), dir / "iommu_group");
    }
  }
  std::filesystem::path root_;
};

TEST(VfioKernel, CardsAreFoundByAddressOrIds) {
  FakeSysfs sysfs;
  const auto cards = list_pci_devices(hw::kPciVendorIbm, 0, sysfs.path());
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[0].address, "0000:3b:00.0");
  EXPECT_EQ(cards[0].driver, "vfio-pci");
  EXPECT_EQ(cards[0].iommu_group, 7);
  EXPECT_EQ(cards[1].driver, "");
  EXPECT_EQ(select_pci_device("3b:00.1", sysfs.path()).device, 0x06a8);
  EXPECT_EQ(select_pci_device("1014:06a7", sysfs.path()).address, "0000:3b:00.0");
  try {
    (void)select_pci_device("0000:99:00.0", sysfs.path());
    FAIL() << "a device that is not there was selected";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no PCI device at '0000:99:00.0'"), std::string::npos) << what;
    EXPECT_NE(what.find("0000:3b:00.0 1014:06a7 driver vfio-pci group 7"), std::string::npos) << what;
  }
  try {
    (void)open_card("3b:00.1", sysfs.path());
    FAIL() << "a card without vfio-pci was opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bound to no driver, not vfio-pci"), std::string::npos) << e.what();
  }
}

}  // namespace
