#include "spyre_dma/model/wave_writer.hpp"
#include "spyre_dma/text.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#if SPYRE_DMA_HAVE_FST
extern "C" {
#include <fstapi.h>
}
#endif

namespace spyre_dma::model {

namespace {

constexpr unsigned kMaxWidth = 4096;

// The two formats behind one set of calls: the header as a walk of the scope tree, then times and
// full-width values in time order.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void scope(const std::string& name) = 0;
  virtual void upscope() = 0;
  // Declares variable `index` (a WaveWriter handle); `of` >= 0: an alias of a variable declared
  // before it, which then carries the values of both.
  virtual void var(int index, const std::string& name, unsigned width, int of) = 0;
  virtual void end_definitions(const std::string& timescale) = 0;
  virtual void time(std::uint64_t t) = 0;
  virtual void value(int index, const std::string& bits) = 0;  // exactly the variable's width
  virtual void finish() = 0;                                    // throws WaveError on failure
};

class VcdSink final : public Sink {
 public:
  explicit VcdSink(const std::string& file) : file_(file) {
    out_ = std::fopen(file.c_str(), "wb");
    if (!out_) throw WaveError("wave file '" + file + "': cannot create: " + std::strerror(errno));
    std::setvbuf(out_, nullptr, _IOFBF, 1 << 16);
  }
  ~VcdSink() override {
    if (out_) std::fclose(out_);
  }
  void scope(const std::string& name) override { header_ += "$scope module " + name + " $end\n"; }
  void upscope() override { header_ += "$upscope $end\n"; }
  void var(int index, const std::string& name, unsigned width, int of) override {
    const auto i = static_cast<std::size_t>(index);
    if (codes_.size() <= i) codes_.resize(i + 1), widths_.resize(i + 1);
    codes_[i] = of < 0 ? code(index) : codes_.at(static_cast<std::size_t>(of));
    widths_[i] = width;
    header_ += "$var wire " + std::to_string(width) + " " + codes_[i] + " " + name;
    if (width > 1) header_ += " [" + std::to_string(width - 1) + ":0]";
    header_ += " $end\n";
  }
  void end_definitions(const std::string& timescale) override {
    // No $date: the same run gives the same bytes.
    write("$version spyre-dma $end\n$timescale " + timescale + " $end\n" + header_ + "$enddefinitions $end\n");
    header_.clear();
  }
  void time(std::uint64_t t) override { write("#" + std::to_string(t) + "\n"); }
  void value(int index, const std::string& bits) override {
    const std::string& c = codes_[static_cast<std::size_t>(index)];
    if (widths_[static_cast<std::size_t>(index)] == 1) {
      write(bits + c + "\n");
      return;
    }
    // Leading zeros may go: a reader extends a shorter value with 0 (not so x or z).
    std::size_t first = bits.find_first_not_of('0');
    if (first == std::string::npos) first = bits.size() - 1;
    write("b" + bits.substr(first) + " " + c + "\n");
  }
  void finish() override {
    const bool ok = !std::ferror(out_);
    const bool closed = std::fclose(out_) == 0;
    out_ = nullptr;
    if (!ok || !closed) throw WaveError("wave file '" + file_ + "': write failed");
  }

 private:
  // Identifier codes: base 94 over the printable characters '!' to '~'.
  static std::string code(int index) {
    std::string s;
    unsigned n = static_cast<unsigned>(index);
    do {
      s += static_cast<char>('!' + n % 94);
      n /= 94;
    } while (n != 0);
    return s;
  }
  void write(const std::string& s) { std::fwrite(s.data(), 1, s.size(), out_); }

  std::string file_;
  std::FILE* out_ = nullptr;
  std::string header_;
  std::vector<std::string> codes_;
  std::vector<unsigned> widths_;
};

#if SPYRE_DMA_HAVE_FST
class FstSink final : public Sink {
 public:
  explicit FstSink(const std::string& file) : file_(file) {
    ctx_ = fstWriterCreate(file.c_str(), 1);
    if (!ctx_) throw WaveError("wave file '" + file + "': cannot create: " + std::strerror(errno));
    fstWriterSetPackType(ctx_, FST_WR_PT_LZ4);
    fstWriterSetDate(ctx_, "");  // the same run gives the same bytes
    fstWriterSetVersion(ctx_, "spyre-dma");
  }
  ~FstSink() override {
    if (ctx_) fstWriterClose(ctx_);
  }
  void scope(const std::string& name) override {
    fstWriterSetScope(ctx_, FST_ST_VCD_MODULE, name.c_str(), nullptr);
  }
  void upscope() override { fstWriterSetUpscope(ctx_); }
  void var(int index, const std::string& name, unsigned width, int of) override {
    const auto i = static_cast<std::size_t>(index);
    if (handles_.size() <= i) handles_.resize(i + 1);
    const fstHandle alias = of < 0 ? 0 : handles_.at(static_cast<std::size_t>(of));
    const fstHandle h = fstWriterCreateVar(ctx_, FST_VT_VCD_WIRE, FST_VD_IMPLICIT, width, name.c_str(), alias);
    handles_[i] = of < 0 ? h : alias;
  }
  void end_definitions(const std::string& timescale) override {
    fstWriterSetTimescaleFromString(ctx_, timescale.c_str());
  }
  void time(std::uint64_t t) override { fstWriterEmitTimeChange(ctx_, t); }
  void value(int index, const std::string& bits) override {
    fstWriterEmitValueChange(ctx_, handles_[static_cast<std::size_t>(index)], bits.c_str());
  }
  void finish() override {
    fstWriterClose(ctx_);
    ctx_ = nullptr;
    // fstWriterClose reports nothing: a file that did not come out whole is the sign.
    std::error_code ec;
    if (std::filesystem::file_size(file_, ec) == 0 || ec) throw WaveError("wave file '" + file_ + "': write failed");
  }

 private:
  std::string file_;
  void* ctx_ = nullptr;
  std::vector<fstHandle> handles_;
};
#endif

}  // namespace

WaveFormat wave_format(const std::string& path) {
  const std::string ext = lower(std::filesystem::path(path).extension().string());
  if (ext == ".vcd") return WaveFormat::kVcd;
  if (ext == ".fst") return WaveFormat::kFst;
  throw WaveError("wave file '" + path + "': unknown format '" + ext + "' (the name must end in .vcd or .fst)");
}

bool fst_supported() noexcept { return SPYRE_DMA_HAVE_FST != 0; }

struct WaveWriter::Impl {
  struct Var {
    std::string scope, name;
    unsigned width;
    int of;  // an alias of this variable, or -1
  };
  std::string path, partial;
  WaveFormat format;
  std::unique_ptr<Sink> sink;
  std::string timescale = "1ps";
  std::vector<Var> vars;
  bool started = false, closed = false;
  std::uint64_t last_time = 0;
  bool have_time = false;
  std::uint64_t changes = 0;
  std::string bits;  // scratch

  int declare(std::string_view scope, std::string_view name, unsigned width, int of) {
    if (started) {
      throw WaveError("wave file '" + path + "': variable '" + std::string(name) + "' declared after the first change");
    }
    if (name.empty() || name.find_first_of(" \t\n") != std::string_view::npos) {
      throw WaveError("wave file '" + path + "': variable name '" + std::string(name) + "' is empty or has white space");
    }
    vars.push_back(Var{std::string(scope), std::string(name), width, of});
    return static_cast<int>(vars.size() - 1);
  }

  // The scope tree in declaration order: a scope's variables, then its sub-scopes.
  struct Node {
    std::string name;
    std::vector<int> vars;
    std::vector<std::unique_ptr<Node>> children;
    Node* child(const std::string& n) {
      for (auto& c : children) {
        if (c->name == n) return c.get();
      }
      children.push_back(std::make_unique<Node>());
      children.back()->name = n;
      return children.back().get();
    }
  };
  // The tree's order is not the declaration order: the first of an alias group to come out is
  // the one the others name, and carries the group's values (carrier).
  std::vector<int> carrier;
  void emit(const Node& n, bool top) {
    if (!top) sink->scope(n.name);
    for (int v : n.vars) {
      const Var& x = vars[static_cast<std::size_t>(v)];
      int& first = carrier[static_cast<std::size_t>(target(v))];
      sink->var(v, x.name, x.width, first);
      if (first < 0) first = v;
    }
    for (const auto& c : n.children) emit(*c, false);
    if (!top) sink->upscope();
  }
  void start() {
    if (started) return;
    started = true;
    Node root;
    for (std::size_t i = 0; i < vars.size(); ++i) {
      Node* n = &root;
      std::string_view s = vars[i].scope;
      while (!s.empty()) {
        const std::size_t dot = s.find('.');
        n = n->child(std::string(s.substr(0, dot)));
        s = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
      }
      n->vars.push_back(static_cast<int>(i));
    }
    carrier.assign(vars.size(), -1);
    emit(root, true);
    sink->end_definitions(timescale);
  }
  void at(std::uint64_t time, int var) {
    if (closed) throw WaveError("wave file '" + path + "': change after close");
    if (var < 0 || static_cast<std::size_t>(var) >= vars.size()) {
      throw WaveError("wave file '" + path + "': no variable " + std::to_string(var));
    }
    start();
    if (have_time && time < last_time) {
      throw WaveError("wave file '" + path + "': change at " + std::to_string(time) + " after one at " +
                      std::to_string(last_time) + " (changes must come in time order)");
    }
    if (!have_time || time != last_time) sink->time(time);
    have_time = true;
    last_time = time;
    ++changes;
  }
  int target(int var) const {
    const int of = vars[static_cast<std::size_t>(var)].of;
    return of < 0 ? var : of;
  }
  // The variable the sink carries `var`'s values on (after start()).
  int carried(int var) const { return carrier[static_cast<std::size_t>(target(var))]; }
};

WaveWriter::WaveWriter(std::string path) : impl_(std::make_unique<Impl>()) {
  impl_->format = wave_format(path);
  if (impl_->format == WaveFormat::kFst && !fst_supported()) {
    throw WaveError("wave file '" + path + "': this build has no FST writer (it needs Verilator's FST library at "
                    "build time); write a .vcd");
  }
  impl_->path = path;
  impl_->partial = path + ".partial";
#if SPYRE_DMA_HAVE_FST
  if (impl_->format == WaveFormat::kFst) impl_->sink = std::make_unique<FstSink>(impl_->partial);
#endif
  if (!impl_->sink) impl_->sink = std::make_unique<VcdSink>(impl_->partial);
}

WaveWriter::~WaveWriter() {
  try {
    close();
  } catch (...) {
    // Destructors do not throw; close() was the place to see it.
  }
}

void WaveWriter::timescale(std::string_view unit) {
  static const char* const kUnits[] = {"s", "ms", "us", "ns", "ps", "fs"};
  const std::string u(unit);
  bool ok = false;
  for (const char* n : {"1", "10", "100"}) {
    for (const char* s : kUnits) ok = ok || u == std::string(n) + s;
  }
  if (!ok) throw WaveError("wave file '" + impl_->path + "': timescale '" + u + "' is not 1, 10 or 100 of s..fs");
  if (impl_->started) throw WaveError("wave file '" + impl_->path + "': timescale set after the first change");
  impl_->timescale = u;
}

int WaveWriter::variable(std::string_view scope, std::string_view name, unsigned width) {
  if (width == 0 || width > kMaxWidth) {
    throw WaveError("wave file '" + impl_->path + "': variable '" + std::string(name) + "' of width " +
                    std::to_string(width) + " (1.." + std::to_string(kMaxWidth) + ")");
  }
  return impl_->declare(scope, name, width, -1);
}

int WaveWriter::alias(std::string_view scope, std::string_view name, int of) {
  if (of < 0 || static_cast<std::size_t>(of) >= impl_->vars.size()) {
    throw WaveError("wave file '" + impl_->path + "': alias '" + std::string(name) + "' of no variable " +
                    std::to_string(of));
  }
  of = impl_->target(of);
  return impl_->declare(scope, name, impl_->vars[static_cast<std::size_t>(of)].width, of);
}

void WaveWriter::change(std::uint64_t time, int var, std::uint64_t value) {
  impl_->at(time, var);
  const unsigned width = impl_->vars[static_cast<std::size_t>(var)].width;
  std::string& b = impl_->bits;
  b.assign(width, '0');
  for (unsigned i = 0; i < std::min(width, 64u); ++i) {
    if ((value >> i) & 1) b[width - 1 - i] = '1';
  }
  impl_->sink->value(impl_->carried(var), b);
}

void WaveWriter::change_bits(std::uint64_t time, int var, std::string_view bits) {
  impl_->at(time, var);
  const int v = var;
  const unsigned width = impl_->vars[static_cast<std::size_t>(v)].width;
  if (bits.empty() || bits.size() > width) {
    throw WaveError("wave file '" + impl_->path + "': value of " + std::to_string(bits.size()) + " bits for '" +
                    impl_->vars[static_cast<std::size_t>(v)].name + "' of width " + std::to_string(width));
  }
  for (char c : bits) {
    if (c != '0' && c != '1' && c != 'x' && c != 'z') {
      throw WaveError("wave file '" + impl_->path + "': value '" + std::string(bits) + "' for '" +
                      impl_->vars[static_cast<std::size_t>(v)].name + "' is not made of 0, 1, x and z");
    }
  }
  std::string& b = impl_->bits;
  const char fill = bits[0] == '1' ? '0' : bits[0];
  b.assign(width - bits.size(), fill);
  b.append(bits);
  impl_->sink->value(impl_->carried(v), b);
}

void WaveWriter::close() {
  if (impl_->closed) return;
  impl_->start();
  impl_->closed = true;
  impl_->sink->finish();
  std::error_code ec;
  std::filesystem::rename(impl_->partial, impl_->path, ec);
  if (ec) throw WaveError("wave file '" + impl_->path + "': cannot put it in place: " + ec.message());
}

WaveFormat WaveWriter::format() const noexcept { return impl_->format; }
const std::string& WaveWriter::path() const noexcept { return impl_->path; }
std::uint64_t WaveWriter::change_count() const noexcept { return impl_->changes; }

}  // namespace spyre_dma::model
