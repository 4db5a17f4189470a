// The decisions of fault injection (FaultConfig): which CB, read request or data TLP a fault hits.
//
// Each random kind keeps a countdown of eligible events to its next hit, drawn from a geometric
// distribution with the kind's rate: one draw per hit rather than per event, so a run with small
// rates costs almost nothing, and a burst of n TLPs is decided in one step exactly as n single
// TLPs would be. All draws come from one generator seeded from SimConfig::seed, in the order the
// simulation asks (deterministic: the SystemC kernel runs one process at a time, in a fixed order).
// With every rate 0 and no at_cb, nothing is ever drawn and every query is one comparison.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "spyre_dma/model/fault_kinds.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {

class FaultInjector {
 public:
  FaultInjector(const FaultConfig& config, std::uint64_t seed);

  // False when nothing can ever be injected: the controller skips every query.
  bool enabled() const noexcept { return enabled_; }

  // The controller starts executing a CB (all pipelines, execution order): counts it and arms the
  // deterministic fault when it is the at_cb-th.
  void cb_started();
  // Per CB: the device resets itself now (random or armed).
  bool device_reset();
  // The armed malformed_cb fault, taken by the CB being started.
  bool malformed_at_start();
  // Per CB fetched: it arrives corrupted.
  bool malformed_fetched();
  // Per host-memory CB (H2D, D2H) that passed its own checks: the IOMMU refuses it. With
  // `may_take_armed` false the CB cannot take the armed fault (a data path that asks for a CB
  // started before the fault was armed), only a random one.
  bool iommu(bool may_take_armed = true);
  // The armed TLP-level fault of kind `k`, taken by the first TLP of the CB being executed when
  // that CB is eligible (read: an H2D; otherwise a D2H, for poisoned and lcrc only).
  bool armed_tlp(FaultKind k, bool read);
  // Per DMAI read request: a fault of its completion (UR, CA, dropped), or none.
  std::optional<FaultKind> read_request();
  // Every fault of one read request answered by `completions` CplDs, as each data path asks for
  // it (one rule, so both draw the same numbers in the same order): at the first request of a CB
  // that may take it, the armed fault (LCRC, UR, CA, dropped or poisoned); then a random UR, CA
  // or dropped completion; then, when the request is answered, which CplD is poisoned.
  struct ReadFaults {
    bool replay = false;                       // the MRd arrives with a bad LCRC and is replayed
    std::optional<FaultKind> lost;             // UR, CA or a dropped completion
    std::optional<std::uint64_t> poisoned_cpl;  // index of the first poisoned CplD
  };
  ReadFaults read_faults(std::uint64_t completions, bool may_take_armed);
  // Per run of n data TLPs: how many of them are poisoned, and the index of the first (n when
  // none); `indices` (optional) receives every poisoned index.
  struct Hits {
    std::uint64_t count = 0;
    std::uint64_t first = 0;
  };
  Hits poisoned(std::uint64_t n, std::vector<std::uint64_t>* indices = nullptr);
  // Whether the armed fault is still waiting for an eligible CB.
  bool armed() const noexcept { return armed_; }
  FaultKind armed_kind() const noexcept { return at_kind_; }

  void count(FaultKind k, std::uint64_t n = 1) noexcept { injected_[static_cast<std::size_t>(k)] += n; }
  const std::array<std::uint64_t, kNumFaultKinds>& injected() const noexcept { return injected_; }
  void cb_affected() noexcept { ++affected_cbs_; }
  std::uint64_t affected_cbs() const noexcept { return affected_cbs_; }
  std::uint64_t cbs_started() const noexcept { return started_; }

 private:
  // Events to the next hit of a kind with rate p (none ever when p is 0).
  struct Countdown {
    double p = 0.0;
    std::uint64_t left = 0;
  };
  void arm(Countdown& c);
  bool tick(Countdown& c);  // one eligible event: a hit?
  double uniform();

  bool enabled_ = false;
  std::mt19937_64 rng_;
  Countdown poisoned_, request_, iommu_, malformed_, reset_;
  double ur_ = 0.0, ca_ = 0.0;  // shares of the request countdown's rate
  std::uint64_t at_cb_ = 0;
  FaultKind at_kind_ = FaultKind::kPoisoned;
  bool armed_ = false;
  std::uint64_t started_ = 0;
  std::array<std::uint64_t, kNumFaultKinds> injected_{};
  std::uint64_t affected_cbs_ = 0;
};

}  // namespace spyre_dma::model
