// Reading outside input under one set of rules (see spyre_dma/input_file.hpp).
#include "spyre_dma/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace spyre_dma {

std::uint64_t max_input_bytes() {
  const char* v = std::getenv("SPYRE_DMA_MAX_INPUT_BYTES");
  if (!v || !*v) return kMaxInputBytes;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*v == '-' || errno != 0 || *end != '\0' || n == 0) {
    throw std::invalid_argument(std::string("'") + v + "' is not a positive byte count (SPYRE_DMA_MAX_INPUT_BYTES)");
  }
  return n;
}

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO, not a file";
  if (S_ISSOCK(mode)) return "is a socket, not a file";
  if (S_ISCHR(mode)) return "is a character device, not a file";
  if (S_ISBLK(mode)) return "is a block device, not a file";
  return "is not a regular file";
}

}  // namespace

std::string read_input_file(const std::string& path) {
  std::uint64_t cap = 0;
  try {
    cap = max_input_bytes();
  } catch (const std::invalid_argument& e) {
    throw InputFileError("SPYRE_DMA_MAX_INPUT_BYTES", e.what());
  }
  // Non-blocking: opening a FIFO with no writer would otherwise wait for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw InputFileError(path, std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw InputFileError(path, std::string("cannot read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputFileError(path, std::string("cannot read: ") + kind_of(st.st_mode));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > cap) {
    throw InputFileError(path, "is " + std::to_string(size) + " bytes, above the input limit of " + std::to_string(cap) +
                                   " bytes (SPYRE_DMA_MAX_INPUT_BYTES raises it)");
  }
  std::string text;
  text.resize(static_cast<std::size_t>(size));
  std::size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (text.size() >= cap) break;  // the file grew while read: what fits under the cap is checked below
      text.resize(std::min<std::uint64_t>(cap, text.size() + (1u << 16)));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputFileError(path, std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  char extra;
  if (got >= cap && ::read(fd, &extra, 1) == 1) {
    throw InputFileError(path, "grew past the input limit of " + std::to_string(cap) + " bytes while it was read");
  }
  return text;
}

std::size_t json_too_deep_at(std::string_view text, unsigned max_depth) noexcept {
  unsigned depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character, whatever it is
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return std::string_view::npos;
}

std::string json_too_deep_message(unsigned max_depth) {
  return "nests deeper than " + std::to_string(max_depth) + " levels of arrays and objects";
}

}  // namespace spyre_dma
