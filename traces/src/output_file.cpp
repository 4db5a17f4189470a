// Atomic output files (see output_file.hpp).
#include "spyre_dma/traces/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace spyre_dma::traces {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string errno_text(int e) { return std::strerror(e); }

// A name beside `path` no other writer uses: this process's id and a counter.
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Writes all of `data` to `fd`, retrying short writes and interrupted calls.
void write_all(int fd, const char* data, std::size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw OutputError(path, "write failed: " + errno_text(errno));
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

OutputError::OutputError(std::string path, const std::string& why)
    : std::runtime_error("cannot write '" + path + "': " + why), path_(std::move(path)) {}

void write_file_atomically(const std::string& path, std::string_view content) {
  if (path.empty()) throw OutputError(path, "empty path");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw OutputError(path, S_ISDIR(st.st_mode) ? "it is a folder" : "it is not a regular file");
  }
  // A fresh name beside the target, created exclusively with the mode a plain create would give
  // (0666 less the umask).
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = temporary_name(path);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt > 100)) {
      throw OutputError(path, "cannot create a file in '" + folder_of(path) + "': " + errno_text(errno));
    }
  }
  try {
    write_all(fd, content.data(), content.size(), path);
    if (::fsync(fd) != 0) throw OutputError(path, "flush to disk failed: " + errno_text(errno));
    const int closed = ::close(fd);
    fd = -1;  // closed either way: never closed twice
    if (closed != 0) throw OutputError(path, "close failed: " + errno_text(errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      throw OutputError(path, "rename into place failed: " + errno_text(errno));
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ostringstream out;
  write(out);
  if (!out) throw OutputError(path, "formatting the content failed");
  write_file_atomically(path, out.str());
}

void check_output_path(const std::string& path, std::string_view what) {
  const std::string w(what);
  if (path.empty()) throw OutputError(path, w + " names no file");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw OutputError(path, w + " names a folder");
    if (!S_ISREG(st.st_mode)) throw OutputError(path, w + " names something that is not a regular file");
  }
  const std::string folder = folder_of(path);
  if (::stat(folder.c_str(), &st) != 0) throw OutputError(path, "its folder '" + folder + "' does not exist");
  if (!S_ISDIR(st.st_mode)) throw OutputError(path, "'" + folder + "' is not a folder");
  // The real test: create (and remove) a file beside it, as write_file_atomically() will. (A
  // permission check alone passes for root on filesystems that refuse new files, /proc say.)
  const std::string probe = temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw OutputError(path, "cannot create a file in '" + folder + "': " + errno_text(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_not_an_input(const std::string& output, std::string_view what, const std::vector<std::string>& inputs) {
  struct stat out {};
  const bool exists = ::stat(output.c_str(), &out) == 0;
  for (const std::string& in : inputs) {
    struct stat st {};
    const bool same = in == output || (exists && ::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev &&
                                       st.st_ino == out.st_ino);
    if (same) throw OutputError(output, std::string(what) + " is also an input ('" + in + "'): it would be overwritten");
  }
}

}  // namespace spyre_dma::traces
