// Generic payloads kept for reuse by one initiator. A payload's constructor allocates its extension
// array, and at TLP fidelity an initiator builds one payload per TLP: that was a heap allocation and
// a free per TLP. A pool hands a payload out for one transport call and takes it back afterwards.
// A SystemC thread may wait inside a transport call while another thread of the same initiator
// starts one, so payloads are leased one per call, never shared.
//
// Not thread-safe: one pool belongs to components driven by one simulation thread.
#pragma once

#include <memory>
#include <tlm>
#include <vector>

namespace spyre_dma::model {

class PayloadPool {
 public:
  // One payload for the lifetime of the lease, with the state of a freshly built one apart from
  // the fields every caller sets (command, address, data pointer, length, streaming width).
  class Lease {
   public:
    explicit Lease(PayloadPool& pool) : pool_(pool), gp_(pool.take()) {}
    ~Lease() { pool_.give_back(std::move(gp_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    tlm::tlm_generic_payload& operator*() const noexcept { return *gp_; }

   private:
    PayloadPool& pool_;
    std::unique_ptr<tlm::tlm_generic_payload> gp_;
  };

 private:
  std::unique_ptr<tlm::tlm_generic_payload> take() {
    if (free_.empty()) return std::make_unique<tlm::tlm_generic_payload>();
    std::unique_ptr<tlm::tlm_generic_payload> gp = std::move(free_.back());
    free_.pop_back();
    return gp;
  }
  // Extensions were detached by their ScopedExtension; the rest goes back to a new payload's state.
  void give_back(std::unique_ptr<tlm::tlm_generic_payload> gp) {
    gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    gp->set_byte_enable_ptr(nullptr);
    gp->set_byte_enable_length(0);
    gp->set_dmi_allowed(false);
    gp->set_gp_option(tlm::TLM_MIN_PAYLOAD);
    free_.push_back(std::move(gp));
  }

  std::vector<std::unique_ptr<tlm::tlm_generic_payload>> free_;
};

}  // namespace spyre_dma::model
