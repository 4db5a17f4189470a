// The RTL data path as the controller sees it: construction and configuration checks, CBs in and
// their answers out (later, in CB order), CB fetch tags, counters (see rtl_data_path.hpp; the clock is rtl_clock.cpp).
// sc_spawn (the clock process) needs SystemC's dynamic processes, declared before any SystemC header.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "rtl_state.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "spyre_dma/model/config_loader.hpp"

namespace spyre_dma::rtl {

using namespace sc_core;

namespace {

const model::DataPathContext& supported(const model::DataPathContext& context) {
  const model::SimConfig& c = context.config;
  if (c.fidelity != model::Fidelity::kTlp) {
    throw std::invalid_argument("data_path \"rtl\" moves every TLP: fidelity must be \"tlp\", not \"burst\"");
  }
  if (c.device.dma_engine_gbps > 0) {
    throw std::invalid_argument("data_path \"rtl\": device.dma_engine_gbps is the SystemC data path's limit; "
                                "the RTL's data path is its own limit (set it to 0)");
  }
  if (c.device.read_tags > RtlDataPath::kTags) {
    throw std::invalid_argument("data_path \"rtl\": device.read_tags " + std::to_string(c.device.read_tags) +
                                " exceeds the RTL tag table (" + std::to_string(RtlDataPath::kTags) + ")");
  }
  if (c.link.mps > RtlDataPath::kMaxPayload || c.link.mrrs > RtlDataPath::kMaxPayload) {
    throw std::invalid_argument("data_path \"rtl\": link.mps / link.mrrs above " +
                                std::to_string(RtlDataPath::kMaxPayload));
  }
  return context;
}

}  // namespace

RtlTestHooks& rtl_test_hooks() {
  static RtlTestHooks hooks;
  return hooks;
}

RtlDataPath::RtlDataPath(const model::DataPathContext& context, const std::string& wave)
    : host_(supported(context).host),
      on_answer_(context.answered),
      impl_(std::make_unique<Impl>(context, rtl_test_hooks())),
      checker_(kTags) {
  if (!wave.empty()) {
    impl_->wave = std::make_unique<WaveSink>(wave);
    impl_->context.traceEverOn(true);
    impl_->vcd = std::make_unique<VerilatedVcdC>(impl_->wave.get());
    impl_->core->trace(impl_->vcd.get(), 99);
    impl_->vcd->open(wave.c_str());
  }
  sc_spawn([this] { clock_thread(); }, "rtl_clock");
}

RtlDataPath::~RtlDataPath() {
  if (impl_->vcd) {
    impl_->vcd->close();
    // Nothing can be thrown from here: a wave file that could not be written is said on stderr.
    if (!impl_->wave->error().empty()) std::fprintf(stderr, "spyre-dma: %s\n", impl_->wave->error().c_str());
  }
  impl_->core->final();
}

model::CbExecution RtlDataPath::execute(hw::Pipeline pipeline, const hw::ControlBlock&, const std::uint8_t* raw,
                                        Ps start) {
  Impl::PendingCb cb;
  std::memcpy(cb.raw.data(), raw, hw::kCbBytes);
  cb.at_ps = start;
  cb.armed = impl_->faults.armed();
  impl_->cbs[index(pipeline)].push_back(cb);
  impl_->work.notify(SC_ZERO_TIME);
  // The pipeline goes on once the RTL is ready for its next CB: DMAI once this one's requests are
  // out (its completions still arriving), DMAO once its RB has left. The RTL answers later.
  Taken& taken = taken_[index(pipeline)];
  while (taken.queue.empty()) wait(taken.ready);
  model::CbExecution run;
  run.issue_end_ps = taken.queue.front();
  taken.queue.pop_front();
  run.pending = true;
  return run;
}

bool RtlDataPath::answered(hw::Pipeline pipeline) const { return !answers_[index(pipeline)].queue.empty(); }

model::CbExecution RtlDataPath::collect(hw::Pipeline pipeline) {
  // The RTL answers every CB it took (its completion timer bounds the wait), even after a reset.
  Answers& answers = answers_[index(pipeline)];
  while (answers.queue.empty()) wait(answers.ready);
  const RtlAnswer a = answers.queue.front();
  answers.queue.pop_front();
  model::CbExecution run;
  run.outcome = a.outcome;
  const bool good = a.outcome.good();
  if (pipeline == hw::Pipeline::kDmao) {
    // The RB is posted behind the CB's last MWr: it cannot be sent before that has left.
    run.done_ps = std::max(a.rb_ps, a.sent_ps);
    if (good) run.data_ps = a.landed_ps;
  } else {
    run.done_ps = a.end_ps;
    if (good) run.data_ps = a.end_ps;
  }
  run.issue_end_ps = run.done_ps;
  return run;
}

model::FetchTag RtlDataPath::fetch_tag(hw::Pipeline pipeline, Ps at) {
  const model::FetchTag t{kTags + static_cast<std::uint32_t>(pipeline), at};
  host_.tag_issued(t.tag, t.at_ps);
  return t;
}

void RtlDataPath::fetch_done(hw::Pipeline, const model::FetchTag& tag, Ps at) { host_.tag_retired(tag.tag, at); }

model::DataPathCounters RtlDataPath::counters() const {
  model::DataPathCounters c;
  c.read_requests = counters_.read_requests;
  c.write_tlps = counters_.write_tlps;
  return c;
}

void RtlDataPath::add_statistics(nlohmann::json& j) const {
  j["rtl"] = {{"cycles", counters_.cycles},
              {"skipped_cycles", counters_.skipped_cycles},
              {"completion_beats", counters_.completion_beats},
              {"memory_writes", counters_.memory_writes},
              {"memory_reads", counters_.memory_reads},
              {"checked_cycles", checker_.cycles_checked()},
              {"stream_violations", checker_.violations()}};
}

}  // namespace spyre_dma::rtl
