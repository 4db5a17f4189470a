// The system calls the kernel's VFIO transport makes, behind one interface: the host's own on a
// real machine; in tests, one that answers them from a vfio-user device server, so that the
// transport's calls and their order are checked against a device that speaks the same operations.
#pragma once

#include <sys/types.h>

#include <string>

namespace spyre_dma::vfio {

class Syscalls {
 public:
  virtual ~Syscalls() = default;
  // As the libc calls: -1 and errno on failure.
  virtual int open(const char* path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
  virtual int ioctl(int fd, unsigned long request, unsigned long arg) = 0;
  virtual ssize_t pread(int fd, void* buf, size_t n, off_t offset) = 0;
  virtual ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) = 0;
  virtual void* mmap(size_t length, int prot, int fd, off_t offset) = 0;  // MAP_SHARED; MAP_FAILED on failure
  virtual int munmap(void* p, size_t length) = 0;
};

// The host's system calls.
Syscalls& host_syscalls();

}  // namespace spyre_dma::vfio
