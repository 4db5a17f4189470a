// A SystemC test bench around the link and the root complex alone: an initiator that streams
// back-to-back writes or tag-limited reads of one size, the way a device's DMA engine would,
// timed TLP by TLP. Each run elaborates in a fresh kernel.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>

#include "host/root_complex.hpp"
#include "link/pcie_link.hpp"
#include "pcie/timing.hpp"
#include "sim/kernel.hpp"
#include "base/rates.hpp"
#include "base/tlp.hpp"

namespace spyre_dma::model::testing {

struct StreamResult {
  pcie::Ps first_issue = 0;
  pcie::Ps last_done = 0;
  std::uint64_t bytes = 0;
  std::uint64_t violations = 0;
  double gbps() const { return double(bytes) * 1000.0 / double(last_done - first_issue); }
};

class StreamInitiator : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(StreamInitiator);
  tlm_utils::simple_initiator_socket<StreamInitiator> socket;

  StreamInitiator(sc_core::sc_module_name name, const LinkConfig& link, bool reads, std::uint64_t size,
                  std::uint64_t count, std::uint32_t tags, std::uint64_t iova, bool split)
      : sc_module(name), socket("socket"), link_config_(link), reads_(reads), split_(split), size_(size),
        count_(count), tags_(tags), iova_(iova), buffer_(size) {
    SC_THREAD(run);
  }
  StreamResult result;

 private:
  // One transfer is cut into TLPs as a DMA engine cuts it (MPS for writes, MRRS for reads); a
  // read transfer is done when its last request's completions are in.
  void run() {
    const pcie::LinkParams p = pcie::link_params(link_config_);
    pcie::Ps issue = 0;
    for (std::uint64_t i = 0; i < count_; ++i) {
      auto segments = reads_ ? pcie::read_requests(iova_, size_, p.mrrs) : pcie::write_segments(iova_, size_, p.mps);
      if (!split_) segments = {pcie::Segment{iova_, size_}};  // negative tests: one oversized TLP
      for (const pcie::Segment& seg : segments) {
        tlm::tlm_generic_payload gp;
        TlpExtension ext;
        ext.type = reads_ ? pcie::TlpType::kMRd : pcie::TlpType::kMWr;
        ScopedExtension<TlpExtension> attach(gp, ext);
        gp.set_command(reads_ ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        gp.set_address(seg.addr);
        gp.set_data_ptr(buffer_.data() + (seg.addr - iova_));
        gp.set_data_length(static_cast<unsigned>(seg.len));
        gp.set_streaming_width(static_cast<unsigned>(seg.len));
        pcie::TagGrant g{0, issue};
        if (reads_) g = tags_.acquire(issue);
        sc_core::sc_time delay = delay_until(g.at_ps);
        socket->b_transport(gp, delay);
        const pcie::Ps done = now_ps() + to_ps(delay);
        if (reads_) tags_.release(g.tag, done);
        result.last_done = std::max(result.last_done, done);
        issue = reads_ ? g.at_ps : done;  // writes: the next TLP follows when this one left
      }
      result.bytes += size_;
    }
  }
  LinkConfig link_config_;
  bool reads_;
  bool split_;
  std::uint64_t size_, count_;
  pcie::TagPool tags_;
  std::uint64_t iova_;
  std::vector<std::uint8_t> buffer_;
};

// Streams `count` transfers of `size` bytes through a link of `config`.
// `split` false sends each transfer as one TLP whatever its size (to break the rules on purpose).
inline StreamResult run_stream(const SimConfig& config, bool reads, std::uint64_t size, std::uint64_t count,
                               std::uint32_t tags = 256, bool split = true, std::uint64_t offset = 0) {
  fresh_kernel();
  device_core::Iommu iommu;
  // Page-aligned, as DMA buffers are: an unaligned start would cost an extra RCB completion.
  std::unique_ptr<std::uint8_t, decltype(&std::free)> host(
      static_cast<std::uint8_t*>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096)), &std::free);
  std::unique_ptr<std::uint8_t, decltype(&std::free)> host_block(
      static_cast<std::uint8_t*>(std::aligned_alloc(4096, (size + offset + 4095) / 4096 * 4096)), &std::free);
  host.swap(host_block);
  const std::uint64_t iova = iommu.map(host.get() + offset, size, DmaAccess::kBoth);
  RootComplex rc("rc", config);
  (void)rc.attach(iommu, [](std::uint32_t) {});
  PcieLink link("link", config, config.link);
  StreamInitiator init("init", config.link, reads, size, count, tags, iova, split);
  init.socket.bind(link.device_side);
  rc.add_port(link.params());
  link.host_side.bind(rc.socket);
  sc_core::sc_start();  // a ProtocolError thrown in the initiator's thread surfaces here
  StreamResult r = init.result;
  r.violations = link.checker().violations();
  return r;
}

}  // namespace spyre_dma::model::testing
