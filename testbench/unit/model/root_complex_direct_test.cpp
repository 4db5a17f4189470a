// The root complex's direct forms (HostPort::read and write with a null buffer): the transaction
// is checked and timed as any other, moves no bytes, and says where its bytes lie in host memory,
// or nothing where the IOMMU refuses it; a write that must carry its bytes (ordered, poisoned)
// cannot take the direct form.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>

#include "host/root_complex.hpp"
#include "sim/kernel.hpp"
#include "base/tlp.hpp"
#include "spyre_dma/model/sim_config.hpp"

namespace spyre_dma::model {
namespace {

struct Sent {
  tlm::tlm_response_status response = tlm::TLM_INCOMPLETE_RESPONSE;
  CompletionStatus status = CompletionStatus::kSuccess;
  std::uint8_t* host = nullptr;
  pcie::Ps ready_ps = 0;
  std::string error;  // what the root complex threw, if it did
};

// Sends each of `requests` (address, length, read, data, ordered) to the root complex from a
// SystemC thread, as a device's link would.
struct Request {
  std::uint64_t iova;
  std::uint32_t len;
  bool read;
  std::uint8_t* data;
  bool ordered = false;
};

class Requester : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Requester);
  tlm_utils::simple_initiator_socket<Requester> socket;
  Requester(sc_core::sc_module_name name, std::vector<Request> requests)
      : sc_module(name), socket("socket"), requests_(std::move(requests)) {
    SC_THREAD(run);
  }
  std::vector<Sent> sent;

 private:
  void run() {
    for (const Request& q : requests_) {
      tlm::tlm_generic_payload gp;
      TlpExtension ext;
      ext.type = q.read ? pcie::TlpType::kMRd : pcie::TlpType::kMWr;
      ext.ordered_visible = q.ordered;
      ScopedExtension<TlpExtension> attach(gp, ext);
      gp.set_command(q.read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
      gp.set_address(q.iova);
      gp.set_data_ptr(q.data);
      gp.set_data_length(q.len);
      gp.set_streaming_width(q.len);
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      Sent s;
      try {
        socket->b_transport(gp, delay);
      } catch (const std::logic_error& e) {
        s.error = e.what();
      }
      s.response = gp.get_response_status();
      s.status = ext.status;
      s.host = ext.host;
      s.ready_ps = ext.ready_ps;
      sent.push_back(s);
    }
  }
  std::vector<Request> requests_;
};

std::vector<Sent> send(device_core::Iommu& iommu, std::vector<Request> requests) {
  fresh_kernel();
  const SimConfig config;
  RootComplex rc("rc", config);
  (void)rc.attach(iommu, [](std::uint32_t) {});
  Requester req("req", std::move(requests));
  req.socket.bind(rc.socket);
  sc_core::sc_start();
  rc.release_windows();
  return req.sent;
}

TEST(RootComplexDirect, ReadsAndWritesSayWhereTheirBytesLieAndMoveNone) {
  std::vector<std::uint8_t> host(8192);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 7 + 3);
  const std::vector<std::uint8_t> before = host;
  std::vector<std::uint8_t> buffer(512, 0xAB);
  device_core::Iommu iommu;
  const std::uint64_t iova = iommu.map(host.data(), host.size(), DmaAccess::kBoth);
  const std::vector<Sent> s = send(iommu, {{iova + 100, 512, true, nullptr},
                                           {iova + 4096, 512, false, nullptr},
                                           {iova + 100, 512, true, buffer.data()}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].response, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(s[0].status, CompletionStatus::kSuccess);
  EXPECT_EQ(s[0].host, host.data() + 100);
  EXPECT_EQ(s[1].response, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(s[1].host, host.data() + 4096);
  EXPECT_EQ(host, before) << "a transaction without data moved bytes";
  // The same read with a buffer: the bytes move, no pointer comes back, and it takes the same time.
  EXPECT_EQ(s[2].host, nullptr);
  EXPECT_TRUE(std::equal(buffer.begin(), buffer.end(), host.begin() + 100));
  EXPECT_GT(s[0].ready_ps, 0u);
}

TEST(RootComplexDirect, WhatTheIommuRefusesGivesNoPointer) {
  std::vector<std::uint8_t> host(4096);
  device_core::Iommu iommu;
  const std::uint64_t read_only = iommu.map(host.data(), host.size(), DmaAccess::kDeviceReads);
  const std::vector<Sent> s = send(iommu, {{read_only + 4096 * 16, 64, true, nullptr},  // unmapped
                                           {read_only, 64, false, nullptr}});          // not writable
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].host, nullptr);
  EXPECT_EQ(s[0].status, CompletionStatus::kUnsupportedRequest);
  EXPECT_EQ(s[0].response, tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(s[1].host, nullptr);
  EXPECT_EQ(s[1].response, tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

TEST(RootComplexDirect, AnOrderedWriteMustCarryItsBytes) {
  std::vector<std::uint8_t> host(4096);
  device_core::Iommu iommu;
  const std::uint64_t iova = iommu.map(host.data(), host.size(), DmaAccess::kBoth);
  Request ordered{iova, 64, false, nullptr};
  ordered.ordered = true;
  const std::vector<Sent> s = send(iommu, {ordered});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NE(s[0].error.find("a write without data must be a plain posted write"), std::string::npos) << s[0].error;
  EXPECT_EQ(s[0].host, nullptr);
}

}  // namespace
}  // namespace spyre_dma::model
