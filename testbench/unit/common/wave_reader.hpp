// Reads a waveform back for tests: each variable by its full name ("device0.DMAI.cbs_queued") and
// its value changes in time order, as bit strings without leading zeros (x and z kept). The VCD
// reader here is independent of the model's (model::VcdStream), so a VCD the model writes is
// checked by other code than its own; FST is read with the FST library's reader.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#if SPYRE_DMA_HAVE_FST
extern "C" {
#include <fstapi.h>
}
#endif

namespace spyre_dma::testing {

struct Wave {
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::string>>> changes;
  std::map<std::string, unsigned> widths;

  // The value of `name` at `time` (the last change at or before it); "" if none yet.
  std::string at(const std::string& name, std::uint64_t time) const {
    std::string v;
    for (const auto& [t, bits] : changes.at(name)) {
      if (t > time) break;
      v = bits;
    }
    return v;
  }
  static std::uint64_t number(const std::string& bits) { return bits.empty() ? 0 : std::stoull(bits, nullptr, 2); }
};

inline std::string trimmed(std::string bits) {
  const std::size_t first = bits.find_first_not_of('0');
  return first == std::string::npos ? "0" : bits.substr(first);
}

inline Wave read_vcd(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("read_vcd: cannot open " + path);
  Wave w;
  std::vector<std::string> scope;
  std::map<std::string, std::vector<std::string>> by_code;
  std::uint64_t time = 0;
  std::string tok;
  auto full = [&](const std::string& name) {
    std::string s;
    for (const auto& x : scope) s += x + ".";
    return s + name;
  };
  auto record = [&](const std::string& code, const std::string& bits) {
    for (const auto& n : by_code.at(code)) w.changes[n].emplace_back(time, trimmed(bits));
  };
  while (in >> tok) {
    if (tok == "$scope") {
      std::string type, name, end;
      in >> type >> name >> end;
      scope.push_back(name);
    } else if (tok == "$upscope") {
      in >> tok;
      scope.pop_back();
    } else if (tok == "$var") {
      std::string type, code, name;
      unsigned width = 0;
      in >> type >> width >> code >> name;
      while (in >> tok && tok != "$end") {
      }
      by_code[code].push_back(full(name));
      w.widths[full(name)] = width;
      w.changes[full(name)];
    } else if (tok[0] == '$') {
      if (tok == "$dumpvars" || tok == "$end") continue;
      while (tok != "$end" && in >> tok) {
      }
    } else if (tok[0] == '#') {
      time = std::stoull(tok.substr(1));
    } else if (tok[0] == 'b') {
      std::string code;
      in >> code;
      record(code, tok.substr(1));
    } else {
      record(tok.substr(1), tok.substr(0, 1));
    }
  }
  return w;
}

#if SPYRE_DMA_HAVE_FST
inline Wave read_fst(const std::string& path) {
  void* ctx = fstReaderOpen(path.c_str());
  if (!ctx) throw std::runtime_error("read_fst: cannot open " + path);
  Wave w;
  std::vector<std::string> scope;
  std::map<fstHandle, std::vector<std::string>> names;
  while (fstHier* h = fstReaderIterateHier(ctx)) {
    if (h->htyp == FST_HT_SCOPE) {
      scope.emplace_back(h->u.scope.name);
    } else if (h->htyp == FST_HT_UPSCOPE) {
      scope.pop_back();
    } else if (h->htyp == FST_HT_VAR) {
      std::string n;
      for (const auto& x : scope) n += x + ".";
      n += h->u.var.name;
      names[h->u.var.handle].push_back(n);
      w.widths[n] = h->u.var.length;
      w.changes[n];
    }
  }
  struct Ctx {
    Wave* w;
    std::map<fstHandle, std::vector<std::string>>* names;
  } c{&w, &names};
  fstReaderSetFacProcessMaskAll(ctx);
  fstReaderIterBlocks(
      ctx,
      [](void* user, std::uint64_t time, fstHandle handle, const unsigned char* value) {
        auto* cc = static_cast<Ctx*>(user);
        for (const auto& n : cc->names->at(handle)) {
          cc->w->changes[n].emplace_back(time, trimmed(reinterpret_cast<const char*>(value)));
        }
      },
      &c, nullptr);
  fstReaderClose(ctx);
  return w;
}
#endif

}  // namespace spyre_dma::testing
