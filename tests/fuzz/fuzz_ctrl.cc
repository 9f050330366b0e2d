// libFuzzer target: the CTRL request parser and the controller behind it.
// Properties: parsing never crashes; an accepted request formats to a line
// that parses to the same request; grant/notice parsers never crash; the
// controller answers every line with OK or ERR.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "null_data_plane.h"
#include "switchd/control.h"
#include "wire/ctrl_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string line(reinterpret_cast<const char*>(data), size);
  rina::ina::CtrlRequest req;
  std::string error;
  if (rina::ina::parseCtrlRequest(line, &req, &error)) {
    rina::ina::CtrlRequest again;
    std::string formatted = rina::ina::formatCtrlRequest(req);
    if (!rina::ina::parseCtrlRequest(formatted, &again, &error)) abort();
    if (again.verb != req.verb || again.job != req.job || again.token != req.token ||
        again.slots != req.slots || again.members != req.members) {
      abort();
    }
  } else if (error.empty()) {
    abort();  // every refusal says why
  }
  rina::ina::Grant g;
  (void)rina::ina::parseGrant(line, &g);
  rina::ina::PreemptNotice n;
  (void)rina::ina::parsePreemptNotice(line, &n);

  static rina::fuzz::NullDataPlane dataPlane;
  static rina::switchd::Controller controller({64, 16, 9000, 1, 100}, dataPlane);
  static uint64_t now = 0;
  std::vector<rina::ina::PreemptNotice> notices;
  std::string reply = controller.handle(line, now += 7, &notices);
  if (reply.rfind("OK", 0) != 0 && reply.rfind("ERR ", 0) != 0) abort();
  return 0;
}
