// Uses the installed SpyreDma package: encodes a control block through the contract API.
#include <spyre_dma/hw/contract.hpp>

#include <cstdio>

int main() {
  spyre_dma::hw::ControlBlock cb;
  cb.tag = spyre_dma::hw::kMinTag;
  cb.dmi.type = spyre_dma::hw::DmaType::kMemoryFill;
  cb.dmi.length_flits = 1;
  cb.dmi.fill_pattern = 0xA5A5A5A5u;

  const spyre_dma::hw::CbBytes bytes = spyre_dma::hw::encode(cb);
  if (bytes.size() != 128) {
    std::fprintf(stderr, "consumer: encoded CB is %zu bytes, expected 128\n", bytes.size());
    return 1;
  }
  std::printf("consumer: encoded a %zu-byte control block\n", bytes.size());
  return 0;
}
