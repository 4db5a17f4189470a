#include "report.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <optional>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "digest.hpp"

namespace spyre_dma::regress {
namespace {

using nlohmann::json;

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:.1f} {}", b, units[u]);
}

FindingKind kind_from(const std::string& s, const std::string& at) {
  for (int k = 0; k <= static_cast<int>(FindingKind::kSetup); ++k) {
    if (s == to_string(static_cast<FindingKind>(k))) return static_cast<FindingKind>(k);
  }
  throw std::invalid_argument(at + ": unknown finding kind \"" + s + "\"");
}

template <typename T>
T get(const json& j, const char* key, const std::string& at) {
  if (!j.is_object() || !j.contains(key)) throw std::invalid_argument(at + "." + key + ": missing");
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(at + "." + key + ": wrong type (" + j[key].dump() + ")");
  }
}

// A triaged test's lines in the summary and in JUnit's system-out ("" when not triaged).
std::string triage_lines(const json& t) {
  if (!t.is_object()) return {};
  auto str = [&](const char* key) { return t.contains(key) && t[key].is_string() ? t[key].get<std::string>() : std::string(); };
  std::string out = "  triage: " + str("folder") + "\n";
  if (!str("trace").empty()) out += "    trace: " + str("trace") + "\n";
  if (!str("reproducer").empty()) {
    out += fmt::format("    reproducer: {} ({} of {} ops, {} runs{})\n", str("reproducer"), t.value("reproducer_ops", 0),
                       t.value("ops", 0), t.value("runs", 0), t.value("complete", false) ? "" : ", budget reached");
    if (!str("reproducer_trace").empty()) out += "    reproducer trace: " + str("reproducer_trace") + "\n";
    if (!str("wave").empty()) out += "    reproducer waves: " + str("wave") + "\n";
    out += "    rerun: " + str("rerun") + "\n";
  }
  if (!str("error").empty()) out += "    " + str("error") + "\n";
  return out;
}

}  // namespace

std::uint64_t Report::digest() const {
  std::vector<const CaseResult*> order;
  for (const CaseResult& c : cases) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const CaseResult* a, const CaseResult* b) {
    return a->seed != b->seed ? a->seed < b->seed : a->name < b->name;
  });
  Digest d;
  for (const CaseResult* c : order) {
    d.add(c->seed);
    d.add(c->name.data(), c->name.size());
    d.add(c->status.data(), c->status.size());
    d.add(c->digest ? c->digest->value() : 0);
  }
  return d.value();
}

std::size_t Report::failures() const {
  return static_cast<std::size_t>(std::count_if(cases.begin(), cases.end(), [](const CaseResult& c) { return !c.passed(); }));
}

json Report::to_json() const {
  json tests = json::array();
  json totals = {{"tests", cases.size()}, {"passed", cases.size() - failures()}, {"failed", failures()}};
  TestMetrics sum;
  for (const CaseResult& c : cases) {
    json f = json::array();
    for (const Finding& x : c.findings) f.push_back({{"kind", to_string(x.kind)}, {"op", x.op}, {"message", x.message}});
    tests.push_back({{"name", c.name},         {"suite", c.suite},   {"backend", c.backend},
                     {"seed", c.seed},         {"status", c.status}, {"findings", f},
                     {"finding_count", c.finding_count}, {"metrics", c.metrics.to_json()}, {"repro", c.repro}});
    if (c.digest) tests.back()["digest"] = c.digest->to_json();
    if (!c.triage.is_null()) tests.back()["triage"] = c.triage;
    sum += c.metrics;
  }
  totals["metrics"] = sum.to_json();
  json out = {{"format", "spyre-dma-regress/1"}, {"version", version}, {"suite", suite},   {"backend", backend},
              {"seeds", seeds},                  {"shard", shard},     {"run_id", run_id}, {"wall_s", wall_s},
              {"summary", totals},
              {"coverage", coverage.to_json()},  {"coverage_sources", coverage.sources_json()},
              {"tests", tests},                  {"complete", interrupted.empty()},
              {"digest", Digest::hex(digest())}};
  if (!interrupted.empty()) out["interrupted"] = interrupted;
  return out;
}

Report Report::from_json(const json& j, const std::string& file) {
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (format == j.end() || !format->is_string() || format->get_ref<const std::string&>() != "spyre-dma-regress/1") {
    throw std::invalid_argument(file + ": not a regression report (format is not \"spyre-dma-regress/1\")");
  }
  Report r;
  r.version = get<std::string>(j, "version", file);
  r.suite = get<std::string>(j, "suite", file);
  r.backend = get<std::string>(j, "backend", file);
  r.seeds = get<std::string>(j, "seeds", file);
  r.shard = get<std::string>(j, "shard", file);
  if (const auto it = j.find("run_id"); it != j.end()) {
    if (!it->is_string()) throw std::invalid_argument(file + ": key \"run_id\" is not a string");
    r.run_id = it->get<std::string>();
  }
  r.wall_s = get<double>(j, "wall_s", file);
  if (const auto it = j.find("interrupted"); it != j.end()) {
    if (!it->is_string()) throw std::invalid_argument(file + ": key \"interrupted\" is not a string");
    r.interrupted = it->get<std::string>();
  }
  try {
    const auto sources = j.find("coverage_sources");
    r.coverage = Coverage::from_json(j.at("coverage"), sources == j.end() ? nlohmann::json() : *sources);
  } catch (const std::exception& e) {
    throw std::invalid_argument(file + ": coverage: " + e.what());
  }
  const json& tests = j.at("tests");
  if (!tests.is_array()) throw std::invalid_argument(file + ": tests: expected an array");
  for (std::size_t i = 0; i < tests.size(); ++i) {
    const std::string at = fmt::format("{}: tests[{}]", file, i);
    const json& t = tests[i];
    CaseResult c;
    c.name = get<std::string>(t, "name", at);
    c.suite = get<std::string>(t, "suite", at);
    c.backend = get<std::string>(t, "backend", at);
    c.seed = get<std::uint64_t>(t, "seed", at);
    c.status = get<std::string>(t, "status", at);
    c.finding_count = get<std::uint64_t>(t, "finding_count", at);
    c.repro = get<std::string>(t, "repro", at);
    for (const json& f : t.at("findings")) {
      c.findings.push_back(Finding{kind_from(get<std::string>(f, "kind", at), at), get<std::int64_t>(f, "op", at),
                                   get<std::string>(f, "message", at)});
    }
    const json& m = t.at("metrics");
    const std::string mat = at + ".metrics";
    c.metrics.ops = get<std::uint64_t>(m, "ops", mat);
    c.metrics.data_ops = get<std::uint64_t>(m, "data_ops", mat);
    c.metrics.bytes = get<std::uint64_t>(m, "bytes", mat);
    c.metrics.cbs = get<std::uint64_t>(m, "cbs", mat);
    c.metrics.failed_ops = get<std::uint64_t>(m, "failed_ops", mat);
    if (m.contains("dependency_failed_ops")) {
      c.metrics.dependency_failed_ops = get<std::uint64_t>(m, "dependency_failed_ops", mat);
    }
    c.metrics.epochs = get<std::uint64_t>(m, "epochs", mat);
    c.metrics.resets = get<std::uint64_t>(m, "resets", mat);
    c.metrics.bytes_checked = get<std::uint64_t>(m, "bytes_checked", mat);
    c.metrics.sim_time_ns = get<double>(m, "sim_time_ns", mat);
    c.metrics.wall_s = get<double>(m, "wall_s", mat);
    const json& phases = get<json>(m, "phases_s", mat);
    c.metrics.setup_s = get<double>(phases, "setup", mat + ".phases_s");
    c.metrics.run_s = get<double>(phases, "run", mat + ".phases_s");
    c.metrics.check_s = get<double>(phases, "check", mat + ".phases_s");
    c.metrics.teardown_s = get<double>(phases, "teardown", mat + ".phases_s");
    c.metrics.faults_injected = get<std::map<std::string, std::uint64_t>>(m, "faults_injected", mat);
    if (const auto d = t.find("digest"); d != t.end()) {
      try {
        c.digest = TestDigest::from_json(*d);
      } catch (const std::exception& e) {
        throw std::invalid_argument(at + "." + e.what());
      }
    }
    if (const auto tr = t.find("triage"); tr != t.end()) {
      if (!tr->is_object()) throw std::invalid_argument(at + ".triage: expected an object");
      c.triage = *tr;
    }
    r.cases.push_back(std::move(c));
  }
  return r;
}

std::string Report::junit() const {
  // One <testsuite> per suite and backend; a failed case carries its findings as the failure
  // text and its reproduction command in system-out.
  std::map<std::string, std::vector<const CaseResult*>> groups;
  for (const CaseResult& c : cases) groups["regress." + c.suite + "." + c.backend].push_back(&c);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  double total_time = 0;
  for (const CaseResult& c : cases) total_time += c.metrics.wall_s;
  out += fmt::format("<testsuites name=\"spyre-dma regress\" tests=\"{}\" failures=\"{}\" time=\"{:.3f}\">\n",
                     cases.size(), failures(), total_time);

  for (const auto& [name, list] : groups) {
    std::size_t failed = 0;
    double time = 0;
    for (const CaseResult* c : list) failed += c->passed() ? 0 : 1, time += c->metrics.wall_s;
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n",
                       xml_escape(name), list.size(), failed, time);
    if (!interrupted.empty()) {  // JUnit has no word for an incomplete run: a property says so
      out += fmt::format("    <properties><property name=\"incomplete\" value=\"interrupted by {}\"/></properties>\n",
                         xml_escape(interrupted));
    }
    for (const CaseResult* c : list) {
      out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", xml_escape(name), xml_escape(c->name),
                         c->metrics.wall_s);
      if (c->status == "skip") {
        out += "><skipped/></testcase>\n";
        continue;
      }
      if (c->passed()) {
        out += "/>\n";
        continue;
      }
      std::string text;
      for (const Finding& f : c->findings) {
        text += fmt::format("[{}]{} {}\n", to_string(f.kind), f.op >= 0 ? fmt::format(" op {}:", f.op) : "", f.message);
      }
      if (c->finding_count > c->findings.size()) {
        text += fmt::format("... and {} more finding(s)\n", c->finding_count - c->findings.size());
      }
      const std::string type = c->findings.empty() ? c->status : to_string(c->findings.front().kind);
      const std::string message =
          c->findings.empty() ? c->status : c->findings.front().message.substr(0, 200);
      out += fmt::format(">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n", xml_escape(type),
                         xml_escape(message), xml_escape(text));
      out += fmt::format("      <system-out>reproduce: {}\n{}</system-out>\n    </testcase>\n", xml_escape(c->repro),
                         xml_escape(triage_lines(c->triage)));
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

std::string Report::summary() const {
  std::map<std::string, std::size_t> by_kind;
  TestMetrics sum;
  for (const CaseResult& c : cases) {
    if (!c.passed()) {
      if (c.findings.empty()) ++by_kind[c.status];
      std::map<std::string, bool> seen;
      for (const Finding& f : c.findings) seen[to_string(f.kind)] = true;
      for (const auto& [k, v] : seen) {
        (void)v;
        ++by_kind[k];
      }
    }
    sum += c.metrics;
  }
  std::string out;
  out += fmt::format("regression: suite {}, backend {}, seeds {}{}\n", suite, backend, seeds,
                     shard.empty() ? "" : ", shard " + shard);
  if (!interrupted.empty()) {
    out += fmt::format("  INCOMPLETE: interrupted by {}; the {} tests that finished are below\n", interrupted, cases.size());
  }
  out += fmt::format("  {:<24} {}\n", "tests", cases.size());
  out += fmt::format("  {:<24} {}\n", "passed", cases.size() - failures());
  out += fmt::format("  {:<24} {}\n", "failed", failures());
  for (const auto& [k, n] : by_kind) out += fmt::format("    {:<22} {}\n", k, n);
  out += fmt::format("  {:<24} {} ({} data)\n", "ops", sum.ops, sum.data_ops);
  out += fmt::format("  {:<24} {}\n", "bytes moved", human_bytes(static_cast<double>(sum.bytes)));
  out += fmt::format("  {:<24} {}\n", "bytes checked", human_bytes(static_cast<double>(sum.bytes_checked)));
  std::uint64_t injected = 0;
  for (const auto& [k, n] : sum.faults_injected) injected += n;
  out += fmt::format("  {:<24} {}\n", "faults injected", injected);
  out += fmt::format("  {:<24} {}\n", "ops failed (reported)", sum.failed_ops);
  if (sum.dependency_failed_ops > 0) {
    out += fmt::format("  {:<24} {}\n", "ops failed behind them", sum.dependency_failed_ops);
  }
  out += fmt::format("  {:<24} {}\n", "engine resets", sum.resets);
  out += fmt::format("  {:<24} {:.3f} ms\n", "simulated time", sum.sim_time_ns / 1e6);
  out += fmt::format("  {:<24} {:.2f} s in tests, {:.2f} s elapsed\n", "wall time", sum.wall_s, wall_s);
  out += fmt::format("  {:<24} {}\n", "digest", Digest::hex(digest()));
  if (sum.wall_s > 0) {
    auto share = [&](double s) { return fmt::format("{:.2f} s ({:.0f}%)", s, 100.0 * s / sum.wall_s); };
    out += fmt::format("  {:<24} set-up {}, run {}, check {}, teardown {}\n", "time by phase", share(sum.setup_s),
                       share(sum.run_s), share(sum.check_s), share(sum.teardown_s));
    out += fmt::format("  {:<24} {:.0f} ops/s per process", "throughput", static_cast<double>(sum.ops) / sum.wall_s);
    if (sum.run_s > 0) out += fmt::format(", {:.0f} in the run phase", static_cast<double>(sum.ops) / sum.run_s);
    out += "\n";
  }
  for (const CaseResult& c : cases) {
    if (c.passed()) continue;
    out += fmt::format("FAIL {} [{}]: {}\n  reproduce: {}\n{}", c.name, c.status,
                       c.findings.empty() ? c.status : c.findings.front().message, c.repro, triage_lines(c.triage));
  }
  return out;
}

std::string merge_conflicts(const std::vector<Report>& parts, const std::vector<std::string>& files,
                            std::size_t absent) {
  // The shards' identity first: one run, each shard of it once, all of them.
  std::optional<std::size_t> first_run;  // the first part that names its run
  std::optional<std::pair<std::size_t, unsigned>> split;  // (part, N) of the first part with "i/N"
  std::map<unsigned, std::size_t> index_part;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const Report& r = parts[p];
    if (!r.run_id.empty()) {
      if (first_run && parts[*first_run].run_id != r.run_id) {
        return fmt::format("{} is from run {} and {} from run {}: merge the shards of one run", files[*first_run],
                           parts[*first_run].run_id, files[p], r.run_id);
      }
      if (!first_run) first_run = p;
    }
    unsigned i = 0, n = 0;
    char slash = 0;
    std::istringstream in(r.shard);
    if (!(in >> i >> slash >> n) || slash != '/' || n == 0) continue;  // all seeds, or merged already
    if (split && split->second != n) {
      return fmt::format("{} is shard {} and {} is shard {}: shards of one run are cut the same way (i/N, one N)",
                         files[split->first], parts[split->first].shard, files[p], r.shard);
    }
    if (!split) split.emplace(p, n);
    if (const auto [it, fresh] = index_part.emplace(i, p); !fresh) {
      return fmt::format("{} and {} are both shard {}{}: merge each shard once", files[it->second], files[p], r.shard,
                         r.run_id.empty() ? "" : " of run " + r.run_id);
    }
  }
  if (split && parts.size() + absent < split->second) {
    std::string gone;
    for (unsigned i = 0; i < split->second; ++i) {
      if (index_part.count(i) == 0) gone += fmt::format("{}{}/{}", gone.empty() ? "" : ", ", i, split->second);
    }
    return fmt::format("shard(s) {} not among the inputs ({} of {}): the merged run would be incomplete (give "
                       "every shard's file; one that was never written counts as failed)",
                       gone, parts.size() + absent, split->second);
  }
  std::map<std::tuple<std::string, std::string, std::uint64_t>, std::size_t> seen;  // test -> part
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (const CaseResult& c : parts[p].cases) {
      if (c.status == "missing") continue;
      const auto [it, fresh] = seen.emplace(std::make_tuple(c.suite, c.backend, c.seed), p);
      if (!fresh && it->second != p) {
        return fmt::format("{} and {} both hold test {} seed {} on {}: the same shard twice, or shards whose seeds "
                           "overlap; merge each test once",
                           files[it->second], files[p], c.suite, c.seed, c.backend);
      }
    }
  }
  return {};
}

Report merge_reports(const std::vector<Report>& parts, const std::vector<std::string>& missing) {
  Report m;
  auto join = [](std::string& into, const std::string& v) {
    if (into.empty()) into = v;
    else if (into != v && into != "mixed") into = "mixed";
  };
  for (const Report& r : parts) {
    join(m.suite, r.suite);
    join(m.backend, r.backend);
    join(m.seeds, r.seeds);
    join(m.version, r.version);
    if (!r.interrupted.empty()) m.interrupted = r.interrupted;  // one incomplete shard: the whole is
    m.wall_s = std::max(m.wall_s, r.wall_s);
    m.coverage.merge(r.coverage);
    m.cases.insert(m.cases.end(), r.cases.begin(), r.cases.end());
  }
  m.shard = fmt::format("{} merged", parts.size() + missing.size());
  for (const std::string& file : missing) {
    CaseResult c;
    c.suite = m.suite.empty() ? "unknown" : m.suite;
    c.backend = m.backend.empty() ? "unknown" : m.backend;
    c.name = "shard result " + file;
    c.status = "missing";
    c.findings.push_back(Finding{FindingKind::kCrash, -1, "the shard's result file " + file + " was not written"});
    c.finding_count = 1;
    c.repro = "(rerun the shard that should have written " + file + ")";
    m.cases.push_back(std::move(c));
  }
  std::stable_sort(m.cases.begin(), m.cases.end(), [](const CaseResult& a, const CaseResult& b) {
    return a.status == "missing" ? false : b.status == "missing" ? true : a.seed < b.seed;
  });
  return m;
}

}  // namespace spyre_dma::regress
