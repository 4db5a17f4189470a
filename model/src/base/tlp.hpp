// What a TLM generic payload carries between the model's PCIe components: the TLP (or, in burst
// mode, the run of TLPs) it stands for. The payload's address, data pointer and length are those
// of the request; the extension adds what PCIe needs on top.
#pragma once

#include <cstdint>
#include <tlm>
#include <vector>

#include "pcie/link_math.hpp"
#include "spyre_dma/model/host_port.hpp"

namespace spyre_dma::model {


struct TlpExtension : tlm::tlm_extension<TlpExtension> {
  pcie::TlpType type = pcie::TlpType::kMRd;  // kMRd: a read request, kMWr: a posted write
  std::uint16_t requester = 0;   // the device that issued it (RootComplex::Requester::id)
  bool burst = false;            // a whole run of TLPs charged at once (burst fidelity)
  std::uint32_t tags = 1;        // burst reads: tags the requester keeps in flight
  bool ordered_visible = false;  // MWr whose effect the host must see only at its arrival (RBs)
  bool msi = false;              // MWr that is an MSI-X message
  std::uint32_t msi_vector = 0;
  std::uint64_t epoch = 0;       // device reset epoch: ordered writes of an older epoch are dropped
  // Injected faults (FaultConfig), set by the requester.
  bool force_replay = false;     // the first TLP arrives with a bad LCRC and is replayed
  bool drop_completion = false;  // MRd: no completion ever comes back
  CompletionStatus inject_status = CompletionStatus::kSuccess;  // MRd: the completer answers so
  bool poisoned = false;         // MWr: poisoned (EP); the root complex drops its data
  const std::vector<pcie::Segment>* poisoned_ranges = nullptr;  // burst MWr: the poisoned TLPs
  // Filled by the completer and the link on the way back.
  CompletionStatus status = CompletionStatus::kSuccess;
  std::uint64_t ready_ps = 0;    // host side: when the completion data was ready (reads)
  std::uint32_t replays = 0;     // LCRC replays the link charged
  // A transaction without data (a null data pointer: HostPort's direct form): where its bytes lie
  // in host memory, the IOMMU's translation, for the requester to move them itself; null if the
  // root complex refused it.
  std::uint8_t* host = nullptr;
  // Across a switch (cut-through): a hop that forwards a transaction says when its first TLP
  // reached the next component (the payload's delay says when the last one did), and the next
  // component says when it took the transaction out of its receive buffer (0: on arrival), which
  // is when the hop's posted credits start to come back.
  std::uint64_t first_ps = 0;
  std::uint64_t taken_ps = 0;

  tlm::tlm_extension_base* clone() const override { return new TlpExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const TlpExtension&>(other);
  }
};

// Attaches a stack-allocated extension to a payload for one transport call and detaches it on
// every way out, exceptions included (a payload deletes the extensions it still holds).
template <class Ext>
class ScopedExtension {
 public:
  ScopedExtension(tlm::tlm_generic_payload& gp, Ext& ext) : gp_(gp), ext_(ext) { gp_.set_extension(&ext_); }
  ~ScopedExtension() { gp_.clear_extension(&ext_); }
  ScopedExtension(const ScopedExtension&) = delete;
  ScopedExtension& operator=(const ScopedExtension&) = delete;

 private:
  tlm::tlm_generic_payload& gp_;
  Ext& ext_;
};

}  // namespace spyre_dma::model
