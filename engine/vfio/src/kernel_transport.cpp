// The kernel's VFIO transport (see kernel_transport.hpp and spyre_dma/vfio/kernel.hpp).
#include "kernel_transport.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace spyre_dma::vfio {
namespace {

constexpr std::uint64_t kPage = 4096;

class HostSyscalls final : public Syscalls {
 public:
  int open(const char* path, int flags) override { return ::open(path, flags | O_CLOEXEC); }
  int close(int fd) override { return ::close(fd); }
  int ioctl(int fd, unsigned long request, void* arg) override { return ::ioctl(fd, request, arg); }
  int ioctl(int fd, unsigned long request, unsigned long arg) override { return ::ioctl(fd, request, arg); }
  ssize_t pread(int fd, void* buf, size_t n, off_t offset) override { return ::pread(fd, buf, n, offset); }
  ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) override { return ::pwrite(fd, buf, n, offset); }
  void* mmap(size_t length, int prot, int fd, off_t offset) override {
    return ::mmap(nullptr, length, prot, MAP_SHARED, fd, offset);
  }
  int munmap(void* p, size_t length) override { return ::munmap(p, length); }
};

// What a failed call's errno means for a VFIO user.
std::string advice(int e) {
  switch (e) {
    case ENOENT: return " (no such file: is vfio-pci loaded (modprobe vfio-pci) and the card bound to it?)";
    case EACCES:
    case EPERM: return " (permission denied: the user needs read and write access to the group's /dev/vfio file, and a "
                       "memlock limit (ulimit -l) that covers the mapped memory)";
    case EBUSY: return " (busy: another process holds the device or its group)";
    case ENODEV: return " (no such device: the card is not bound to vfio-pci, or it is gone)";
    case EINVAL: return " (invalid argument)";
    case ENOMEM: return " (out of memory: the memlock limit (ulimit -l) is below the memory mapped for DMA)";
    default: return "";
  }
}

[[noreturn]] void fail(const std::string& what, int e) {
  throw std::runtime_error("vfio: " + what + " failed: " + std::strerror(e) + advice(e));
}

class KernelTransport final : public Transport {
 public:
  KernelTransport(Syscalls& sys, const PciDevice& device) : sys_(sys), peer_("the card at " + device.address) {
    if (device.iommu_group < 0) {
      throw std::runtime_error("vfio: the card at " + device.address +
                               " has no IOMMU group: enable the IOMMU (intel_iommu=on or amd_iommu=on on the kernel "
                               "command line)");
    }
    try {
      set_up(device);
    } catch (...) {
      close_all();
      throw;
    }
  }
  ~KernelTransport() override { close_all(); }

  const std::string& peer() const override { return peer_; }

  DeviceInfo device_info() override {
    vfio_device_info info{};
    info.argsz = sizeof info;
    if (sys_.ioctl(device_, VFIO_DEVICE_GET_INFO, &info) != 0) fail("VFIO_DEVICE_GET_INFO on " + peer_, errno);
    DeviceInfo d;
    d.flags = info.flags;
    d.num_regions = info.num_regions;
    d.num_irqs = info.num_irqs;
    reset_supported_ = (info.flags & VFIO_DEVICE_FLAGS_RESET) != 0;
    return d;
  }

  RegionInfo region_info(std::uint32_t index) override {
    vfio_region_info info{};
    info.argsz = sizeof info;
    info.index = index;
    if (sys_.ioctl(device_, VFIO_DEVICE_GET_REGION_INFO, &info) != 0) {
      fail("VFIO_DEVICE_GET_REGION_INFO (region " + std::to_string(index) + ") on " + peer_, errno);
    }
    RegionInfo r;
    r.index = index;
    r.flags = info.flags & (kRegionRead | kRegionWrite);
    r.size = info.size;
    r.offset = info.offset;
    if (index == kBar0Region) bar0_ = info;
    return r;  // (capability chains are not read: a card has none of this project's regions)
  }

  IrqInfo irq_info(std::uint32_t index) override {
    vfio_irq_info info{};
    info.argsz = sizeof info;
    info.index = index;
    if (sys_.ioctl(device_, VFIO_DEVICE_GET_IRQ_INFO, &info) != 0) {
      fail("VFIO_DEVICE_GET_IRQ_INFO (index " + std::to_string(index) + ") on " + peer_, errno);
    }
    IrqInfo i;
    i.flags = info.flags;
    i.index = index;
    i.count = info.count;
    return i;
  }

  void set_irqs(const IrqSet& set, const int* fds) override {
    const std::size_t n = (set.flags & kIrqDataEventfd) ? set.count : 0;
    std::vector<std::uint8_t> buf(sizeof(vfio_irq_set) + n * sizeof(std::int32_t));
    auto* s = reinterpret_cast<vfio_irq_set*>(buf.data());
    s->argsz = static_cast<std::uint32_t>(buf.size());
    s->flags = set.flags;
    s->index = set.index;
    s->start = set.start;
    s->count = set.count;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t fd = fds[i];
      std::memcpy(buf.data() + sizeof(vfio_irq_set) + i * sizeof fd, &fd, sizeof fd);
    }
    if (sys_.ioctl(device_, VFIO_DEVICE_SET_IRQS, s) != 0) fail("VFIO_DEVICE_SET_IRQS on " + peer_, errno);
  }

  void region_read(std::uint32_t region, std::uint64_t offset, std::uint8_t* dst, std::uint32_t n) override {
    if (region == kBar0Region && bar0_map_ != nullptr && (n == 4 || n == 8)) {
      // A real BAR: one load of the access's width (a split access would be two TLPs).
      if (n == 4) {
        const std::uint32_t v = *reinterpret_cast<volatile const std::uint32_t*>(bar0_map_ + offset);
        std::memcpy(dst, &v, 4);
      } else {
        const std::uint64_t v = *reinterpret_cast<volatile const std::uint64_t*>(bar0_map_ + offset);
        std::memcpy(dst, &v, 8);
      }
      return;
    }
    const ssize_t got = sys_.pread(device_, dst, n, static_cast<off_t>(region_offset(region) + offset));
    if (got != static_cast<ssize_t>(n)) fail("reading region " + std::to_string(region) + " of " + peer_, got < 0 ? errno : EIO);
  }

  void region_write(std::uint32_t region, std::uint64_t offset, const std::uint8_t* src, std::uint32_t n, bool,
                    std::chrono::nanoseconds) override {
    if (region == kBar0Region && bar0_map_ != nullptr && (n == 4 || n == 8)) {
      if (n == 4) {
        std::uint32_t v;
        std::memcpy(&v, src, 4);
        std::atomic_thread_fence(std::memory_order_release);  // ring writes before the doorbell
        *reinterpret_cast<volatile std::uint32_t*>(bar0_map_ + offset) = v;
      } else {
        std::uint64_t v;
        std::memcpy(&v, src, 8);
        std::atomic_thread_fence(std::memory_order_release);
        *reinterpret_cast<volatile std::uint64_t*>(bar0_map_ + offset) = v;
      }
      return;
    }
    const ssize_t put = sys_.pwrite(device_, src, n, static_cast<off_t>(region_offset(region) + offset));
    if (put != static_cast<ssize_t>(n)) fail("writing region " + std::to_string(region) + " of " + peer_, put < 0 ? errno : EIO);
  }

  void dma_map(std::uint64_t iova, void* host, std::size_t bytes, std::uint32_t flags) override {
    // The IOMMU maps whole pages: the pages that hold the range (the IOVA keeps the host's page offset).
    const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(host) % kPage;
    vfio_iommu_type1_dma_map m{};
    m.argsz = sizeof m;
    m.flags = (flags & kDmaRead ? VFIO_DMA_MAP_FLAG_READ : 0) | (flags & kDmaWrite ? VFIO_DMA_MAP_FLAG_WRITE : 0);
    m.vaddr = reinterpret_cast<std::uintptr_t>(host) - offset;
    m.iova = iova - offset;
    m.size = (offset + bytes + kPage - 1) / kPage * kPage;
    if (sys_.ioctl(container_, VFIO_IOMMU_MAP_DMA, &m) != 0) {
      const int e = errno;
      if (e == EINVAL) throw std::invalid_argument("vfio: VFIO_IOMMU_MAP_DMA on " + peer_ + " refused the mapping");
      fail("VFIO_IOMMU_MAP_DMA of " + std::to_string(m.size) + " bytes for " + peer_, e);
    }
  }

  void dma_unmap(std::uint64_t iova, std::size_t bytes) override {
    const std::uint64_t offset = iova % kPage;
    vfio_iommu_type1_dma_unmap u{};
    u.argsz = sizeof u;
    u.iova = iova - offset;
    u.size = (offset + bytes + kPage - 1) / kPage * kPage;
    if (sys_.ioctl(container_, VFIO_IOMMU_UNMAP_DMA, &u) != 0) fail("VFIO_IOMMU_UNMAP_DMA for " + peer_, errno);
  }

  void reset() override {
    if (sys_.ioctl(device_, VFIO_DEVICE_RESET, 0ul) != 0) fail("VFIO_DEVICE_RESET on " + peer_, errno);
  }

 private:
  void set_up(const PciDevice& d) {
    container_ = sys_.open("/dev/vfio/vfio", O_RDWR);
    if (container_ < 0) fail("opening /dev/vfio/vfio", errno);
    const int version = sys_.ioctl(container_, VFIO_GET_API_VERSION, 0ul);
    if (version != VFIO_API_VERSION) {
      throw std::runtime_error("vfio: the kernel's VFIO API is version " + std::to_string(version) + ", not " +
                               std::to_string(VFIO_API_VERSION));
    }
    iommu_type_ = sys_.ioctl(container_, VFIO_CHECK_EXTENSION, static_cast<unsigned long>(VFIO_TYPE1v2_IOMMU)) > 0
                      ? VFIO_TYPE1v2_IOMMU
                      : VFIO_TYPE1_IOMMU;
    if (iommu_type_ == VFIO_TYPE1_IOMMU &&
        sys_.ioctl(container_, VFIO_CHECK_EXTENSION, static_cast<unsigned long>(VFIO_TYPE1_IOMMU)) <= 0) {
      throw std::runtime_error("vfio: the kernel offers no type-1 IOMMU for " + peer_);
    }
    const std::string group_path = "/dev/vfio/" + std::to_string(d.iommu_group);
    group_ = sys_.open(group_path.c_str(), O_RDWR);
    if (group_ < 0) fail("opening " + group_path + " (the IOMMU group of " + d.address + ")", errno);
    vfio_group_status status{};
    status.argsz = sizeof status;
    if (sys_.ioctl(group_, VFIO_GROUP_GET_STATUS, &status) != 0) fail("VFIO_GROUP_GET_STATUS on " + group_path, errno);
    if ((status.flags & VFIO_GROUP_FLAGS_VIABLE) == 0) {
      throw std::runtime_error("vfio: IOMMU group " + std::to_string(d.iommu_group) +
                               " is not viable: bind every device of the group to vfio-pci (see /sys/kernel/iommu_groups/" +
                               std::to_string(d.iommu_group) + "/devices)");
    }
    if (sys_.ioctl(group_, VFIO_GROUP_SET_CONTAINER, &container_) != 0) fail("VFIO_GROUP_SET_CONTAINER", errno);
    if (sys_.ioctl(container_, VFIO_SET_IOMMU, static_cast<unsigned long>(iommu_type_)) != 0) fail("VFIO_SET_IOMMU", errno);
    device_ = sys_.ioctl(group_, VFIO_GROUP_GET_DEVICE_FD, const_cast<char*>(d.address.c_str()));
    if (device_ < 0) fail("VFIO_GROUP_GET_DEVICE_FD for " + d.address, errno);
    // BAR0 mapped where the kernel allows it: doorbells become stores, as on any driver.
    (void)region_info(kBar0Region);
    if ((bar0_.flags & VFIO_REGION_INFO_FLAG_MMAP) != 0 && bar0_.size >= 8) {
      void* p = sys_.mmap(bar0_.size, PROT_READ | PROT_WRITE, device_, static_cast<off_t>(bar0_.offset));
      if (p != MAP_FAILED) bar0_map_ = static_cast<std::uint8_t*>(p);
    }
  }

  std::uint64_t region_offset(std::uint32_t region) {
    if (region == kBar0Region) return bar0_.offset;
    return region_info(region).offset;
  }

  void close_all() noexcept {
    if (bar0_map_) sys_.munmap(bar0_map_, bar0_.size);
    bar0_map_ = nullptr;
    for (int* fd : {&device_, &group_, &container_}) {
      if (*fd >= 0) sys_.close(*fd);
      *fd = -1;
    }
  }

  Syscalls& sys_;
  std::string peer_;
  int container_ = -1, group_ = -1, device_ = -1;
  int iommu_type_ = 0;
  bool reset_supported_ = false;
  vfio_region_info bar0_{};
  std::uint8_t* bar0_map_ = nullptr;
};

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string link_name(const std::string& path) {
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  const std::string target(buf, static_cast<std::size_t>(n));
  const auto slash = target.rfind('/');
  return slash == std::string::npos ? target : target.substr(slash + 1);
}

}  // namespace

Syscalls& host_syscalls() {
  static HostSyscalls s;
  return s;
}

std::unique_ptr<Transport> open_kernel_transport(Syscalls& sys, const PciDevice& device) {
  return std::make_unique<KernelTransport>(sys, device);
}

std::vector<PciDevice> list_pci_devices(std::uint16_t vendor, std::uint16_t device, const std::string& sysfs) {
  std::vector<PciDevice> out;
  const std::string dir = sysfs + "/bus/pci/devices";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string base = dir + "/" + name;
    PciDevice p;
    p.address = name;
    try {
      p.vendor = static_cast<std::uint16_t>(std::stoul(read_line(base + "/vendor"), nullptr, 16));
      p.device = static_cast<std::uint16_t>(std::stoul(read_line(base + "/device"), nullptr, 16));
    } catch (const std::exception&) {
      continue;  // not a PCI function's directory
    }
    if ((vendor != 0 && p.vendor != vendor) || (device != 0 && p.device != device)) continue;
    p.driver = link_name(base + "/driver");
    const std::string group = link_name(base + "/iommu_group");
    p.iommu_group = group.empty() ? -1 : std::atoi(group.c_str());
    out.push_back(p);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const PciDevice& a, const PciDevice& b) { return a.address < b.address; });
  return out;
}

PciDevice select_pci_device(const std::string& selector, const std::string& sysfs) {
  auto listing = [&](const std::vector<PciDevice>& found) {
    std::string s;
    for (const auto& p : found) {
      char ids[16];
      std::snprintf(ids, sizeof ids, "%04x:%04x", p.vendor, p.device);
      s += "\n  " + p.address + " " + ids + " driver " + (p.driver.empty() ? "(none)" : p.driver) + " group " +
           (p.iommu_group < 0 ? "(none)" : std::to_string(p.iommu_group));
    }
    return s.empty() ? std::string(" none") : s;
  };
  const auto colon = selector.find(':');
  const bool by_ids = colon == 4 && selector.size() == 9 && selector.find('.') == std::string::npos;
  if (by_ids) {
    std::uint16_t vendor = 0, device = 0;
    try {
      vendor = static_cast<std::uint16_t>(std::stoul(selector.substr(0, 4), nullptr, 16));
      device = static_cast<std::uint16_t>(std::stoul(selector.substr(5), nullptr, 16));
    } catch (const std::exception&) {
      throw std::runtime_error("vfio: '" + selector + "' is neither a PCI address nor vendor:device IDs in hex");
    }
    const auto found = list_pci_devices(vendor, device, sysfs);
    if (found.empty()) {
      throw std::runtime_error("vfio: no PCI device " + selector + " under " + sysfs + "; cards found:" +
                               listing(list_pci_devices(hw::kPciVendorIbm, 0, sysfs)));
    }
    return found.front();
  }
  const std::string address = selector.size() == 7 ? "0000:" + selector : selector;  // "3b:00.0"
  for (const auto& p : list_pci_devices(0, 0, sysfs)) {
    if (p.address == address) return p;
  }
  throw std::runtime_error("vfio: no PCI device at '" + selector + "' under " + sysfs + "; cards found:" +
                           listing(list_pci_devices(hw::kPciVendorIbm, 0, sysfs)));
}

std::shared_ptr<Device> open_card(const std::string& selector, const std::string& sysfs, InterruptMode interrupts) {
  const PciDevice d = select_pci_device(selector, sysfs);
  if (d.driver != "vfio-pci") {
    throw std::runtime_error("vfio: the card at " + d.address + " is bound to " +
                             (d.driver.empty() ? std::string("no driver") : d.driver) +
                             ", not vfio-pci: echo vfio-pci > " + sysfs + "/bus/pci/devices/" + d.address +
                             "/driver_override, then bind it");
  }
  DeviceDescription desc;
  desc.backend = "vfio";
  desc.name = "card at " + d.address;
  desc.progress = Progress::kSelfTimed;
  return std::make_shared<VfioDevice>(open_kernel_transport(host_syscalls(), d), desc, interrupts);
}

}  // namespace spyre_dma::vfio
