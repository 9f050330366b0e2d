// libFuzzer target: the INA datagram decoder, and the switch pipeline behind
// it. Properties: decode never reads out of bounds; whatever decodes
// re-encodes to the same bytes; the pipeline never crashes or emits an
// undecodable datagram.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rina/ina_wire.h"
#include "switchd/pipeline.h"

namespace {

using rina::ina::DecodeError;
using rina::ina::Header;

rina::switchd::Pipeline& pipeline() {
  static rina::switchd::Pipeline* p = [] {
    auto* q = new rina::switchd::Pipeline(rina::switchd::PipelineConfig{64, 16, 0, 1});
    rina::ina::Endpoint m{0x7F000001, 5000};
    // The seeds' tokens (seeds/wire): high word 0x5EC2E701, low 99 / 1.
    q->installJob({7, 0x5EC2E70100000063ull, 2, {m, m}});
    q->installJob({8, 0x5EC2E70100000001ull, 1, {m}});
    q->assignSlots(0, 32, 7);
    q->assignSlots(32, 48, 8);
    return q;
  }();
  return *p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy so ASan sees the exact extent of the datagram.
  std::vector<uint8_t> d(data, data + size);
  Header h;
  if (rina::ina::decode(d, &h) == DecodeError::kOk) {
    std::vector<int32_t> payload(h.elems);
    for (size_t i = 0; i < h.elems; ++i) payload[i] = rina::ina::payloadAt(d.data(), i);
    std::vector<uint8_t> again(rina::ina::kMaxDatagramBytes);
    size_t len = rina::ina::encode(h, payload, again);
    if (len != size || std::memcmp(again.data(), d.data(), size) != 0) abort();
  }
  rina::switchd::Output out;
  pipeline().process(d, rina::ina::Endpoint{0x7F000001, 5000}, 1, &out);
  for (const auto& m : out.messages()) {
    Header r;
    if (rina::ina::decode({out.bytes(m), m.length}, &r) != DecodeError::kOk) abort();
  }
  return 0;
}
