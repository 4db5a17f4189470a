#include "spyre_dma/rdma/remote_handle.hpp"

#include <charconv>
#include <map>
#include <sstream>

#include "spyre_dma/status.hpp"

namespace spyre_dma::rdma {
namespace {

constexpr std::string_view kMagic = "spyre-dma-remote";
constexpr std::string_view kVersion = "1";

std::string hex(const std::string& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

[[noreturn]] void bad(const std::string& what) { throw InvalidArgument("remote handle: " + what); }

std::string unhex(std::string_view field, std::string_view text) {
  if (text.empty() || text.size() % 2 != 0) bad(std::string(field) + " '" + std::string(text) + "' is not whole hex bytes");
  std::string out;
  out.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    unsigned v = 0;
    const auto r = std::from_chars(text.data() + i, text.data() + i + 2, v, 16);
    if (r.ec != std::errc() || r.ptr != text.data() + i + 2) bad(std::string(field) + " has a non-hex digit at " + std::to_string(i));
    out += static_cast<char>(v);
  }
  return out;
}

std::uint64_t number(std::string_view field, std::string_view text) {
  int base = 10;
  if (text.substr(0, 2) == "0x") text.remove_prefix(2), base = 16;
  std::uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    bad(std::string(field) + " '" + std::string(text) + "' is not a number");
  }
  return v;
}

}  // namespace

Status RemoteHandle::check(const char* op, std::uint64_t offset, std::uint64_t bytes) const {
  if (bytes == 0) return Status(ErrorCode::kInvalidArgument, std::string(op) + ": 0 bytes");
  if (offset > size || bytes > size - offset) {
    return Status(ErrorCode::kInvalidArgument, std::string(op) + ": " + std::to_string(bytes) + " bytes at offset " +
                                                   std::to_string(offset) + " leave the remote range of " +
                                                   std::to_string(size) + " bytes");
  }
  return {};
}

std::string RemoteHandle::to_text() const {
  std::ostringstream s;
  s << kMagic << ' ' << kVersion << " size=" << size << " base=0x" << std::hex << base << std::dec
    << " owner=" << hex(owner) << " key=" << hex(key);
  return s.str();
}

RemoteHandle RemoteHandle::from_text(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  std::map<std::string, std::string, std::less<>> fields;
  std::size_t word = 0;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view w = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
    if (w.empty()) continue;
    if (word == 0 && w != kMagic) bad("does not start with '" + std::string(kMagic) + "'");
    if (word == 1 && w != kVersion) bad("version '" + std::string(w) + "' (this build reads " + std::string(kVersion) + ")");
    if (word >= 2) {
      const std::size_t eq = w.find('=');
      if (eq == std::string_view::npos) bad("'" + std::string(w) + "' is not name=value");
      const std::string name(w.substr(0, eq));
      if (fields.count(name)) bad("field '" + name + "' appears twice");
      fields[name] = std::string(w.substr(eq + 1));
    }
    ++word;
  }
  if (word < 2) bad("is empty or has no version");
  for (const char* f : {"size", "base", "owner", "key"}) {
    if (!fields.count(f)) bad("field '" + std::string(f) + "' is missing");
  }
  for (const auto& [name, value] : fields) {
    if (name != "size" && name != "base" && name != "owner" && name != "key") bad("unknown field '" + name + "'");
  }
  RemoteHandle h;
  h.size = number("size", fields["size"]);
  h.base = number("base", fields["base"]);
  h.owner = unhex("owner", fields["owner"]);
  h.key = unhex("key", fields["key"]);
  if (h.size == 0) bad("size is 0");
  if (h.base + h.size < h.base) bad("base + size passes the end of the address space");
  return h;
}

}  // namespace spyre_dma::rdma
