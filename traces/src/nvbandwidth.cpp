#include "spyre_dma/traces/nvbandwidth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <locale>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>

#include "bandwidth_points.hpp"
#include "trace_builder.hpp"
#include "spyre_dma/traces/trace_io.hpp"
#include "text_input.hpp"

namespace spyre_dma::traces {
namespace {

using nlohmann::json;

// A run of every testcase skips dozens of them; the report keeps the first notes (detail::kMaxNotes).
// Whole byte counts are exact in a double only up to 2^53; the trace's D2D allocations are twice
// the buffer, which must still fit 64 bits.
constexpr std::uint64_t kMaxBufferBytes = 1ull << 53;

// How nvbandwidth measures (its README, "Measurement Details"; memcpy.cpp): what a reader of the
// trace needs to know to compare a replay with it.
constexpr const char* kMethod =
    "nvbandwidth copy-engine testcases: per GPU (or GPU pair), loopCount (default 16) back-to-back "
    "cuMemcpyAsync copies of one buffer on one stream, held behind a spin kernel until all are queued "
    "and timed between two events (bytes x loopCount / time, decimal GB/s), the median of testSamples "
    "(default 3) such samples; pinned host memory (cuMemHostAlloc). Imported per matrix cell as "
    "back-to-back copies of buffer / bandwidth each. Bidirectional and all-GPU host testcases: every "
    "stream starts together, the measured copy's (stream 0 of the cell's GPU) is the one reported, the "
    "copies beside it are twice the buffer; imported per cell as a group of those streams "
    "(extra.groups), one group after another";

void note(NvbandwidthReport& report, std::string text) { detail::add_note(report.notes, std::move(text)); }

using detail::line_of;

// ---- Where values are -------------------------------------------------------------------------
//
// A parsed JSON document keeps no positions, yet errors and points name lines. A second pass over
// the (already validated) text with nlohmann's SAX parser records the line of each value the
// importer looks at. Its keys resolve duplicates the way the document does (the last one counts):
// a container that starts again under the same key starts its lines afresh.

struct CaseLines {
  std::size_t start = 0, name = 0, status = 0, matrix = 0;
  std::vector<std::size_t> rows;
  std::vector<std::vector<std::size_t>> cells;
};

struct Lines {
  std::size_t root = 0, nvbandwidth = 0, testcases = 0, warning = 0;
  std::vector<CaseLines> cases;

  const CaseLines* at(std::size_t i) const { return i < cases.size() ? &cases[i] : nullptr; }
  std::size_t testcase(std::size_t i) const { return at(i) ? at(i)->start : 0; }
  std::size_t row(std::size_t i, std::size_t r) const { return at(i) && r < at(i)->rows.size() ? at(i)->rows[r] : 0; }
  std::size_t cell(std::size_t i, std::size_t r, std::size_t c) const {
    if (!at(i) || r >= at(i)->cells.size() || c >= at(i)->cells[r].size()) return 0;
    return at(i)->cells[r][c];
  }
};

enum class Key : std::uint8_t { kOther, kNvbandwidth, kTestcases, kWarning, kName, kStatus, kMatrix };

Key key_code(std::string_view k) {
  if (k == "nvbandwidth") return Key::kNvbandwidth;
  if (k == "testcases") return Key::kTestcases;
  if (k == "warning") return Key::kWarning;
  if (k == "name") return Key::kName;
  if (k == "status") return Key::kStatus;
  if (k == "bandwidth_matrix") return Key::kMatrix;
  return Key::kOther;
}

// The iterator nlohmann's lexer reads the text through, one character at a time. It remembers
// the last character read: when the parser reports a value, that is the value's last character
// (or, after a number, the one character beyond it that ended the number).
class Cursor {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  Cursor(const char* p, const char** last) : p_(p), last_(last) {}
  reference operator*() const {
    *last_ = p_;
    return *p_;
  }
  Cursor& operator++() {
    ++p_;
    return *this;
  }
  Cursor operator++(int) {
    Cursor old = *this;
    ++p_;
    return old;
  }
  bool operator==(const Cursor& other) const { return p_ == other.p_; }
  bool operator!=(const Cursor& other) const { return p_ != other.p_; }

 private:
  const char* p_;
  const char** last_;
};

class LineTracker : public json::json_sax_t {
 public:
  explicit LineTracker(const std::string& text) : begin_(text.data()), scanned_(text.data()) {}

  const char** last() { return &last_; }
  Lines take() { return std::move(lines_); }
  std::size_t error_byte() const { return error_byte_; }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(json::number_integer_t) override { return value(); }
  bool number_unsigned(json::number_unsigned_t) override { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) override { return value(); }
  bool string(json::string_t&) override { return value(); }
  bool binary(json::binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value(false);
    stack_.push_back(Frame{false, 0, Key::kOther});
    return true;
  }
  bool key(json::string_t& k) override {
    stack_.back().key = key_code(k);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value(true);
    stack_.push_back(Frame{true, 0, Key::kOther});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t byte, const std::string&, const json::exception&) override {
    error_byte_ = byte;
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    std::size_t next = 0;   // array: index of the next element
    Key key = Key::kOther;  // object: the key of the current member
  };

  // Lines end before the last character read: a string, literal or bracket ends on it, and a
  // number's extra character (a newline, say) belongs to what follows.
  std::size_t line() {
    const char* end = last_ == nullptr ? begin_ : last_;
    if (end > scanned_) {
      newlines_ += static_cast<std::size_t>(std::count(scanned_, end, '\n'));
      scanned_ = end;
    }
    return newlines_ + 1;
  }

  bool member(std::size_t depth, Key k) const { return !stack_[depth].array && stack_[depth].key == k; }

  // A value begins (a scalar, or a container about to be pushed): record its line if its path is
  // one of nvbandwidth, nvbandwidth.testcases, nvbandwidth.warning, nvbandwidth.testcases[i],
  // its name, status and bandwidth_matrix, and the matrix's rows and cells.
  bool value(bool opens_array = false) {
    const std::size_t here = line();
    const std::size_t depth = stack_.size();
    std::size_t index = 0;
    if (depth > 0 && stack_.back().array) index = stack_.back().next++;
    if (depth == 0) {
      lines_.root = here;
      return true;
    }
    if (!member(0, Key::kNvbandwidth)) return true;
    if (depth == 1) {
      lines_.nvbandwidth = here;
      return true;
    }
    if (depth == 2) {
      if (stack_[1].key == Key::kTestcases) {
        lines_.testcases = here;
        if (opens_array) lines_.cases.clear();
      } else if (stack_[1].key == Key::kWarning) {
        lines_.warning = here;
      }
      return true;
    }
    if (!member(1, Key::kTestcases) || !stack_[2].array) return true;
    const std::size_t i = stack_[2].next - 1;
    if (depth == 3) {
      if (lines_.cases.size() <= i) lines_.cases.resize(i + 1);
      lines_.cases[i] = CaseLines{};
      lines_.cases[i].start = here;
      return true;
    }
    if (stack_[3].array || i >= lines_.cases.size()) return true;
    CaseLines& c = lines_.cases[i];
    if (depth == 4) {
      switch (stack_[3].key) {
        case Key::kName: c.name = here; break;
        case Key::kStatus: c.status = here; break;
        case Key::kMatrix:
          c.matrix = here;
          c.rows.clear();
          c.cells.clear();
          break;
        default: break;
      }
      return true;
    }
    if (stack_[3].key != Key::kMatrix || !stack_[4].array) return true;
    const std::size_t r = stack_[4].next - 1;
    if (depth == 5) {
      if (c.rows.size() <= r) c.rows.resize(r + 1);
      if (c.cells.size() <= r) c.cells.resize(r + 1);
      c.rows[r] = here;
      c.cells[r].clear();
      return true;
    }
    if (depth == 6 && stack_[5].array && r < c.cells.size()) {
      if (c.cells[r].size() <= index) c.cells[r].resize(index + 1);
      c.cells[r][index] = here;
    }
    return true;
  }

  const char* begin_;
  const char* scanned_;
  const char* last_ = nullptr;
  std::size_t newlines_ = 0;
  std::size_t error_byte_ = 0;
  std::vector<Frame> stack_;
  Lines lines_;
};

LineTracker track_lines(const std::string& text) {
  LineTracker tracker(text);
  const char* begin = text.data();
  json::sax_parse(Cursor(begin, tracker.last()), Cursor(begin + text.size(), tracker.last()), &tracker);
  return tracker;
}

// ---- Testcases ---------------------------------------------------------------------------------

enum class Verdict : std::uint8_t { kImport, kGroup, kLatency, kSm, kMultinode, kBetweenGpus, kUnknown };

struct Importable {
  const char* name;
  OpKind kind;
  bool one_row;  // a 1 x GPUs matrix (the CPU's row, or device_local_copy's single row); else GPUs x GPUs
};

// The copy-engine testcases that measure one copy at a time on an otherwise idle link: what a
// trace of back-to-back copies on one stream replays (testcases_ce.cpp, testcase.h).
constexpr Importable kImportable[] = {
    {"host_to_device_memcpy_ce", OpKind::kH2D, true},
    {"device_to_host_memcpy_ce", OpKind::kD2H, true},
    {"device_to_device_memcpy_read_ce", OpKind::kD2D, false},
    {"device_to_device_memcpy_write_ce", OpKind::kD2D, false},
    {"device_local_copy", OpKind::kD2D, true},
};

const Importable* importable(const std::string& name) {
  for (const Importable& i : kImportable) {
    if (name == i.name) return &i;
  }
  return nullptr;
}

// The host<->device copy-engine testcases that measure one GPU's copy while others run
// (testcases_ce.cpp, testcase.cpp's allHostHelper and allHostBidirHelper): one row (the CPU), a
// column per GPU, each cell the measured copy's bandwidth.
struct Concurrent {
  const char* name;
  OpKind measured;
  NvbandwidthShape shape;
};

constexpr Concurrent kConcurrent[] = {
    {"host_to_device_bidirectional_memcpy_ce", OpKind::kH2D, NvbandwidthShape::kBidirectional},
    {"device_to_host_bidirectional_memcpy_ce", OpKind::kD2H, NvbandwidthShape::kBidirectional},
    {"host_to_all_memcpy_ce", OpKind::kH2D, NvbandwidthShape::kAllDevices},
    {"all_to_host_memcpy_ce", OpKind::kD2H, NvbandwidthShape::kAllDevices},
    {"host_to_all_bidirectional_memcpy_ce", OpKind::kH2D, NvbandwidthShape::kAllBidirectional},
    {"all_to_host_bidirectional_memcpy_ce", OpKind::kD2H, NvbandwidthShape::kAllBidirectional},
};

const Concurrent* concurrent(const std::string& name) {
  for (const Concurrent& c : kConcurrent) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// The latency testcase between the host and each GPU: one row (the CPU), a column per GPU, ns.
constexpr const char* kHostLatency = "host_device_latency_sm";

using detail::starts_with;
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Why a testcase is not imported. Each skipped kind measured something a trace of one server's
// host copies cannot stand for, so importing it would give the calibration and comparison
// durations the replay cannot reproduce:
// - SM copies: kernels whose warps load and store over the link, not a DMA engine (and their copy
//   size is truncated to the GPU's thread count);
// - multinode: GPU to GPU across nodes over a fabric, not a host link;
// - between GPUs: device_to_device bidirectional copies, all_to_one and one_to_all (every peer's
//   copy at once into or out of one GPU) and device_to_device_latency_sm: the links between
//   GPUs (NVLink or PCIe peer paths), which a trace of each device's own copies does not hold.
Verdict classify(const std::string& name) {
  if (importable(name)) return Verdict::kImport;
  if (concurrent(name)) return Verdict::kGroup;
  if (name == kHostLatency) return Verdict::kLatency;
  if (starts_with(name, "multinode_")) return Verdict::kMultinode;
  if (starts_with(name, "device_to_device_") &&
      (name.find("bidirectional") != std::string::npos || name.find("latency") != std::string::npos))
    return Verdict::kBetweenGpus;
  if (starts_with(name, "all_to_one") || starts_with(name, "one_to_all")) return Verdict::kBetweenGpus;
  if (ends_with(name, "_sm")) return Verdict::kSm;
  return Verdict::kUnknown;
}

const char* direction_of(OpKind kind) { return kind == OpKind::kH2D ? "H2D" : "D2H"; }

// What a concurrent testcase's cells became, for the report's notes.
std::string became(const Concurrent& c, std::uint64_t bytes) {
  const char* measured = direction_of(c.measured);
  const char* other = direction_of(c.measured == OpKind::kH2D ? OpKind::kD2H : OpKind::kH2D);
  const std::string size = fmt::format("{} bytes", bytes), twice = fmt::format("{} bytes", 2 * bytes);
  switch (c.shape) {
    case NvbandwidthShape::kBidirectional:
      return fmt::format("per GPU a group: its measured {} of {} on one stream beside the other direction's copy "
                         "({}) of {} on a second",
                         measured, size, other, twice);
    case NvbandwidthShape::kAllDevices:
      return fmt::format("per GPU a group: its measured {} of {} beside every other GPU's {} of {}", measured, size,
                         measured, twice);
    case NvbandwidthShape::kAllBidirectional:
      return fmt::format("per GPU a group: its measured {} of {} beside its own {} of {}, every other GPU copying "
                         "{} both ways",
                         measured, size, other, twice, twice);
  }
  return {};
}

// A decimal as nvbandwidth prints it (an ostream's default format: "26.0312", "1.5e-05"). The
// characters are checked first: the stream would skip leading blanks.
std::optional<double> decimal(const std::string& s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  for (const char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
      return std::nullopt;
  }
  std::istringstream in(s);
  in.imbue(std::locale::classic());
  double v = 0;
  in >> v;
  if (in.fail() || in.peek() != std::char_traits<char>::eof() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "0: NVIDIA H100 80GB HBM3 (00000000:19:00): (node7)" -> "NVIDIA H100 80GB HBM3" (output.cpp,
// json_output.cpp: ordinal, name, PCI domain:bus:device, host name). Anything else stays whole.
std::string device_name(std::string s) {
  const auto colon = s.find(": ");
  if (colon != std::string::npos && colon > 0 &&
      std::all_of(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(colon),
                  [](unsigned char c) { return std::isdigit(c) != 0; }))
    s.erase(0, colon + 2);
  const auto host = s.rfind("): (");
  if (host != std::string::npos) {
    const auto pci = s.rfind(" (", host);
    if (pci != std::string::npos) s.erase(pci);
  }
  return s;
}

const json* find(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string optional_string(const json& object, const char* key) {
  const json* v = find(object, key);
  return v && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

std::uint64_t nvbandwidth_default_buffer_bytes(const std::string& version) {
  // version.h: "v0.5"; common.h: defaultBufferSize 64 (MiB) through v0.6, 512 from v0.7.
  std::size_t i = !version.empty() && (version[0] == 'v' || version[0] == 'V') ? 1 : 0;
  auto number = [&](std::size_t& at) -> std::optional<unsigned> {
    const std::size_t start = at;
    unsigned v = 0;
    while (at < version.size() && std::isdigit(static_cast<unsigned char>(version[at])) && at - start < 6)
      v = v * 10 + static_cast<unsigned>(version[at++] - '0');
    if (at == start) return std::nullopt;
    return v;
  };
  const auto major = number(i);
  if (!major || i >= version.size() || version[i] != '.') return 512ull << 20;
  ++i;
  const auto minor = number(i);
  if (!minor) return 512ull << 20;
  return *major == 0 && *minor <= 6 ? 64ull << 20 : 512ull << 20;
}

NvbandwidthResults parse_nvbandwidth_results(const std::string& text, const std::string& name,
                                             std::uint64_t buffer_bytes, NvbandwidthReport& report) {
  report = NvbandwidthReport{};
  if (buffer_bytes > kMaxBufferBytes)
    throw TraceError(name, 0, "buffer_bytes",
                     fmt::format("{} bytes is beyond the largest buffer accepted (2^53)", buffer_bytes));
  detail::check_json_depth(text, name);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw TraceError(name, line_of(text, e.byte), "", fmt::format("invalid JSON: {}", e.what()));
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e999"): the exception has no position, the SAX parser's report does.
    throw TraceError(name, line_of(text, track_lines(text).error_byte()), "",
                     fmt::format("invalid JSON: {}", e.what()));
  }
  const Lines lines = track_lines(text).take();

  if (!doc.is_object())
    throw TraceError(name, lines.root, "nvbandwidth", "not nvbandwidth JSON: the document is not an object");
  const json* nvb = find(doc, "nvbandwidth");
  if (!nvb) throw TraceError(name, lines.root, "nvbandwidth", "not nvbandwidth JSON: no \"nvbandwidth\" key");
  if (!nvb->is_object()) throw TraceError(name, lines.nvbandwidth, "nvbandwidth", "not an object");

  // Run-level facts. They only describe the run, so a mistyped one is left out rather than fatal.
  report.version = optional_string(*nvb, "version");
  const std::string run_error = optional_string(*nvb, "error");
  const std::string warning = optional_string(*nvb, "warning");
  if (!run_error.empty()) note(report, "nvbandwidth reported an error: " + run_error);
  if (!warning.empty()) note(report, "nvbandwidth warned: " + warning);
  if (const json* list = find(*nvb, "GPU Device list"); list && list->is_array()) {
    for (const json& d : *list) {
      if (d.is_string()) report.devices.push_back(device_name(d.get<std::string>()));
    }
  }

  if (buffer_bytes == 0) {
    // A run with --bufferSize below the default says so in its warning (nvbandwidth.cpp), never
    // by how much: the default would be wrong and there is nothing to take instead.
    if (warning.find("smaller than the default buffer size") != std::string::npos)
      throw TraceError(
          name, lines.warning, "nvbandwidth.warning",
          "the run used a --bufferSize below the default and the JSON does not record it: give the buffer size");
    report.buffer_bytes = nvbandwidth_default_buffer_bytes(report.version);
    report.buffer_bytes_assumed = true;
    note(report,
         fmt::format("buffer size {} MiB: the default of nvbandwidth {} (the JSON does not record --bufferSize)",
                     report.buffer_bytes >> 20, report.version.empty() ? "(version unknown)" : report.version));
  } else {
    report.buffer_bytes = buffer_bytes;
  }

  const json* cases = find(*nvb, "testcases");
  if (!cases)
    throw TraceError(name, lines.nvbandwidth, "nvbandwidth.testcases",
                     run_error.empty() ? "missing" : "missing; nvbandwidth reported: " + run_error);
  if (!cases->is_array()) throw TraceError(name, lines.testcases, "nvbandwidth.testcases", "not an array");

  NvbandwidthResults out;
  std::string gpus_from;  // the testcase that set report.gpus
  const std::uint64_t bytes = report.buffer_bytes;
  for (std::size_t i = 0; i < cases->size(); ++i) {
    const json& tc = (*cases)[i];
    const std::string path = fmt::format("nvbandwidth.testcases[{}]", i);
    const CaseLines* at = lines.at(i);
    if (!tc.is_object()) throw TraceError(name, lines.testcase(i), path, "not an object");
    const json* tc_name = find(tc, "name");
    if (!tc_name || !tc_name->is_string())
      throw TraceError(name, tc_name && at ? at->name : lines.testcase(i), path + ".name",
                       tc_name ? "not a string" : "missing");
    const json* status = find(tc, "status");
    if (!status || !status->is_string())
      throw TraceError(name, status && at ? at->status : lines.testcase(i), path + ".status",
                       status ? "not a string" : "missing");
    const std::string test = tc_name->get<std::string>();
    const std::string state = status->get<std::string>();
    ++report.testcases;
    const std::string label = fmt::format("testcases[{}] {}", i, test);

    if (state != "Passed") {
      ++report.not_passed;
      const std::string why = optional_string(tc, "error");
      note(report, fmt::format("{}: status \"{}\"{}, skipped", label, state, why.empty() ? "" : " (" + why + ")"));
      continue;
    }
    const Verdict verdict = classify(test);
    switch (verdict) {
      case Verdict::kImport:
      case Verdict::kGroup:
      case Verdict::kLatency: break;
      case Verdict::kSm:
        ++report.sm_copies;
        note(report, label + ": copies by SM kernels, not a copy engine, skipped");
        continue;
      case Verdict::kMultinode:
        ++report.multinode;
        note(report, label + ": copies between nodes, skipped");
        continue;
      case Verdict::kBetweenGpus:
        ++report.between_gpus;
        note(report, label + ": between GPUs, not a host link, skipped");
        continue;
      case Verdict::kUnknown:
        ++report.unknown;
        note(report, label + ": unknown testcase, skipped");
        continue;
    }

    const Importable* kind = verdict == Verdict::kImport ? importable(test) : nullptr;
    const Concurrent* group = verdict == Verdict::kGroup ? concurrent(test) : nullptr;
    const bool one_row = kind ? kind->one_row : true;
    const std::string mpath = path + ".bandwidth_matrix";
    const json* matrix = find(tc, "bandwidth_matrix");
    if (!matrix) throw TraceError(name, lines.testcase(i), mpath, "missing in a passed testcase");
    const std::size_t mline = at ? at->matrix : 0;
    if (!matrix->is_array()) throw TraceError(name, mline, mpath, "not an array of rows");
    if (matrix->empty()) throw TraceError(name, mline, mpath, "no rows");
    for (std::size_t r = 0; r < matrix->size(); ++r) {
      const json& row = (*matrix)[r];
      const std::string rpath = fmt::format("{}[{}]", mpath, r);
      if (!row.is_array()) throw TraceError(name, lines.row(i, r), rpath, "not an array of cells");
      if (row.empty()) throw TraceError(name, lines.row(i, r), rpath, "no cells");
      if (row.size() != (*matrix)[0].size())
        throw TraceError(name, lines.row(i, r), rpath,
                         fmt::format("{} cells where row 0 has {}", row.size(), (*matrix)[0].size()));
    }
    if (one_row && matrix->size() != 1)
      throw TraceError(name, mline, mpath,
                       fmt::format("{} rows where {} has one, its columns the GPUs", matrix->size(), test));
    if (!one_row && matrix->size() != (*matrix)[0].size())
      throw TraceError(name, mline, mpath,
                       fmt::format("{} rows of {} cells where {} has a row and a column per GPU", matrix->size(),
                                   (*matrix)[0].size(), test));

    if (verdict != Verdict::kImport) {
      // Groups and latency points run on the GPUs of a server: every such matrix has one column
      // per GPU, so all must agree.
      const auto columns = static_cast<std::uint32_t>((*matrix)[0].size());
      if (report.gpus != 0 && columns != report.gpus)
        throw TraceError(name, mline, mpath,
                         fmt::format("{} GPU columns where {} has {}", columns, gpus_from, report.gpus));
      if (report.gpus == 0) gpus_from = path;
      report.gpus = columns;
    }

    std::size_t added = 0;
    for (std::size_t r = 0; r < matrix->size(); ++r) {
      const json& row = (*matrix)[r];
      for (std::size_t c = 0; c < row.size(); ++c) {
        const json& cell = row[c];
        const std::string cpath = fmt::format("{}[{}][{}]", mpath, r, c);
        const std::size_t cline = lines.cell(i, r, c);
        double gbps = 0;
        if (cell.is_string()) {
          const std::string s = cell.get<std::string>();
          if (s == "N/A") {  // not measured: the diagonal, a pair without peer access
            ++report.cells_skipped;
            continue;
          }
          const auto v = decimal(s);
          if (!v)
            throw TraceError(name, cline, cpath,
                             fmt::format("\"{}\" is not a bandwidth in GB/s (a number or \"N/A\")", s));
          gbps = *v;
        } else if (cell.is_number()) {
          gbps = cell.get<double>();
        } else {
          throw TraceError(
              name, cline, cpath,
              fmt::format("a {} is not a bandwidth (a string such as \"26.03\" or \"N/A\")", cell.type_name()));
        }
        if (!std::isfinite(gbps) || gbps < 0)
          throw TraceError(name, cline, cpath, fmt::format("{} is not a non-negative bandwidth", gbps));
        if (gbps == 0) {  // nothing was moved (or no latency) in the time measured: nothing to take
          ++report.cells_skipped;
          continue;
        }
        ++added;
        if (verdict == Verdict::kLatency) {  // a latency in ns, not a bandwidth
          out.latencies.push_back(NvbandwidthLatency{cline, static_cast<std::uint32_t>(c), gbps});
          continue;
        }
        if (!detail::copy_time_fits(static_cast<double>(bytes), gbps))
          throw TraceError(name, cline, cpath,
                           fmt::format("{} GB/s for {} bytes gives a copy time a trace cannot hold", gbps, bytes));
        if (group) {
          out.cells.push_back(
              NvbandwidthCell{cline, test, group->shape, group->measured, static_cast<std::uint32_t>(c), gbps});
        } else {
          BandwidthPoint p;
          p.line = cline;
          p.kind = kind->kind;
          // HostBuffer (memcpy.cpp) is cuMemHostAlloc'd: pinned, DMA'd directly.
          p.host = kind->kind == OpKind::kD2D ? HostMemory::kNone : HostMemory::kRegistered;
          p.bytes = bytes;
          p.gbps = gbps;
          out.points.push_back(p);
        }
        // Six significant digits (an ostream's default precision): the last one's step.
        const double step = std::pow(10.0, std::floor(std::log10(gbps)) - 5);
        report.bandwidth_resolution_gbps = std::max(report.bandwidth_resolution_gbps, step);
      }
    }
    if (added == 0) {
      ++report.without_value;
      note(report, label + ": no cell holds a " + (verdict == Verdict::kLatency ? "latency" : "bandwidth") +
                       ", nothing imported");
    } else if (verdict == Verdict::kLatency) {
      ++report.latency;
      note(report, fmt::format("{}: {} latency points, a 128-byte H2D per GPU (nvbandwidth: dependent 8-byte loads "
                               "by an SM from pinned host memory)",
                               label, added));
    } else if (group) {
      ++(group->shape == NvbandwidthShape::kBidirectional ? report.bidirectional : report.concurrent);
      note(report, fmt::format("{}: {} groups, {}", label, added, became(*group, bytes)));
    } else {
      ++report.imported;
    }
  }
  report.points = out.points.size();
  report.groups = out.cells.size();
  report.latency_points = out.latencies.size();
  if (out.points.empty() && out.cells.empty() && out.latencies.empty())
    throw TraceError(
        name, lines.testcases, "nvbandwidth.testcases",
        fmt::format("no copy-engine bandwidth or host latency to import: of {} testcases {} did not pass, {} SM "
                    "copies, {} between GPUs, {} multinode, {} unknown, {} without a value",
                    report.testcases, report.not_passed, report.sm_copies, report.between_gpus, report.multinode,
                    report.unknown, report.without_value));
  return out;
}

std::vector<BandwidthPoint> parse_nvbandwidth(const std::string& text, const std::string& name,
                                              std::uint64_t buffer_bytes, NvbandwidthReport& report) {
  return parse_nvbandwidth_results(text, name, buffer_bytes, report).points;
}

namespace {

// The direction compare reports a concurrent cell's measured copies under.
std::string label_of(const NvbandwidthCell& c) {
  const char* measured = c.kind == OpKind::kH2D ? "h2d registered" : "d2h registered";
  const char* other = c.kind == OpKind::kH2D ? "d2h" : "h2d";
  switch (c.shape) {
    case NvbandwidthShape::kBidirectional: return fmt::format("{} ({} beside)", measured, other);
    case NvbandwidthShape::kAllDevices: return fmt::format("{} (all devices)", measured);
    case NvbandwidthShape::kAllBidirectional: return fmt::format("{} (all devices, both ways)", measured);
  }
  return measured;
}

// A concurrent cell as nvbandwidth ran it: the measured copy on stream 0 of its GPU, and every
// copy beside it (twice the buffer, no captured duration) on a stream of its own, all starting
// together; each stream as many back-to-back copies as a one-way point's (nvbandwidth runs
// loopCount on every stream).
detail::Phase cell_phase(const NvbandwidthCell& c, std::uint64_t bytes, std::uint32_t gpus) {
  const OpKind other = c.kind == OpKind::kH2D ? OpKind::kD2H : OpKind::kH2D;
  const HostMemory pinned = HostMemory::kRegistered;  // cuMemHostAlloc'd, as for the one-way testcases
  detail::Phase phase;
  phase.copies = copies_for_size(bytes);
  phase.lanes.push_back(detail::Lane{c.device, c.kind, pinned, bytes, static_cast<double>(bytes) / c.gbps});
  if (c.shape != NvbandwidthShape::kAllDevices)
    phase.lanes.push_back(detail::Lane{c.device, other, pinned, 2 * bytes, std::nullopt});
  if (c.shape != NvbandwidthShape::kBidirectional) {
    for (std::uint32_t d = 0; d < gpus; ++d) {
      if (d == c.device) continue;
      phase.lanes.push_back(detail::Lane{d, c.kind, pinned, 2 * bytes, std::nullopt});
      if (c.shape == NvbandwidthShape::kAllBidirectional)
        phase.lanes.push_back(detail::Lane{d, other, pinned, 2 * bytes, std::nullopt});
    }
  }
  ConcurrentGroup g;
  g.label = label_of(c);
  g.measure = GroupMeasure::kCopy;
  g.source = fmt::format("{} GPU {} (line {})", c.testcase, c.device, c.line);
  g.note = "nvbandwidth reports the first stream's copies while the others run; only they carry a captured duration";
  phase.group = std::move(g);
  return phase;
}

// A host latency point: the contract's smallest copy, a 128-byte H2D, on the GPU's device.
detail::Phase latency_phase(const NvbandwidthLatency& l) {
  detail::Phase phase;
  phase.lanes.push_back(detail::Lane{l.device, OpKind::kH2D, HostMemory::kRegistered, 128, l.ns});
  ConcurrentGroup g;
  g.label = "h2d registered latency";
  g.measure = GroupMeasure::kLatency;
  g.source = fmt::format("{} GPU {} (line {})", kHostLatency, l.device, l.line);
  g.note = "nvbandwidth: one dependent 8-byte load by an SM through pinned host memory (a pointer chase); "
           "replayed: the device time of a 128-byte H2D, the contract's smallest copy";
  phase.group = std::move(g);
  return phase;
}

}  // namespace

Trace nvbandwidth_trace(const NvbandwidthResults& results, const NvbandwidthReport& report, const std::string& name,
                        const BandwidthTestImport& info) {
  BandwidthTestImport how = info;
  how.tool = "nvbandwidth";
  how.method = kMethod;
  how.bandwidth_resolution_gbps = report.bandwidth_resolution_gbps;
  if (how.device.empty() && !report.devices.empty() &&
      std::all_of(report.devices.begin(), report.devices.end(),
                  [&](const std::string& d) { return d == report.devices[0]; }))
    how.device = report.devices[0];
  Trace trace;
  if (results.cells.empty() && results.latencies.empty()) {
    trace = bandwidth_test_trace(results.points, name, how);  // as it has always been
  } else {
    trace.header = detail::points_header(name, how);
    detail::TraceBuilder builder(trace);
    for (const BandwidthPoint& p : results.points) builder.add_point(p);
    for (const NvbandwidthCell& c : results.cells) builder.add(cell_phase(c, report.buffer_bytes, report.gpus));
    for (const NvbandwidthLatency& l : results.latencies) builder.add(latency_phase(l));
    builder.finish();
    trace.header.devices = report.gpus;
    // What the groups assume that the JSON does not say.
    trace.header.extra["concurrent"] = {
        {"interferer_bytes", 2 * report.buffer_bytes},
        {"copies_per_stream", copies_for_size(report.buffer_bytes)},
        {"nvbandwidth_loop_count_assumed", 16},
        {"measured", "the cell's GPU's first stream in its group only (nvbandwidth's stream 0, whose bandwidth is "
                     "the one reported); the copies beside it (twice the buffer, so that they run all along) carry "
                     "no captured duration"}};
    if (const std::string problem = check_trace(trace); !problem.empty())
      throw TraceError(name, 0, "", "imported trace is inconsistent: " + problem);
  }
  trace.header.extra["buffer_bytes"] = report.buffer_bytes;
  trace.header.extra["buffer_bytes_assumed"] = report.buffer_bytes_assumed;
  if (!report.version.empty()) trace.header.extra["nvbandwidth_version"] = report.version;
  return trace;
}

Trace import_nvbandwidth(const std::string& path, const BandwidthTestImport& info, NvbandwidthReport& report,
                         std::uint64_t buffer_bytes) {
  const NvbandwidthResults results =
      parse_nvbandwidth_results(detail::read_file_text(path), path, buffer_bytes, report);
  // The header names the file without its folders; an error about the trace names the path.
  const std::string base = detail::base_name(path);
  try {
    return nvbandwidth_trace(results, report, base, info);
  } catch (const TraceError& e) {
    if (e.file() == base) throw TraceError(path, e.line(), e.field(), e.message());
    throw;
  }
}

}  // namespace spyre_dma::traces
