// BMv2 simple_switch in its pcap file mode (--use-files: no root, no
// interfaces): port 0 reads DIR/p0_in.pcap and writes DIR/p0_out.pcap. The
// input is a FIFO, so the switch starts, its tables are filled through the
// runtime CLI, and only then do frames reach it, one record at a time as the
// test writes them; answers are read back from the output file as it grows.
#ifndef RINA_TESTS_P4_FILES_SWITCH_H_
#define RINA_TESTS_P4_FILES_SWITCH_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bmv2/runtime_cli.h"
#include "core/socket.h"
#include "core/status.h"
#include "p4/frames.h"

namespace rina::p4test {

struct FilesSwitchOptions {
  std::string simpleSwitch;  // the simple_switch binary
  std::string json;          // the compiled program (p4c-bm2-ss)
  std::string cli;           // the runtime CLI command
  std::string workDir;       // holds the FIFO, the output and the switch's log
  int timeoutMs = 30000;     // start, and each wait for answers
};

class FilesSwitch {
 public:
  static Status start(const FilesSwitchOptions& options, std::unique_ptr<FilesSwitch>* out);
  ~FilesSwitch();

  bmv2::RuntimeCli& cli() { return *cli_; }
  // Hands one frame to the switch's port 0.
  Status send(const Frame& frame);
  // Waits until done(frames written so far) holds; fails naming the wait
  // after the timeout or when the switch exits.
  Status waitFor(const std::string& what,
                 const std::function<bool(const std::vector<Frame>&)>& done,
                 std::vector<Frame>* frames);
  std::string logTail() const;

 private:
  FilesSwitch() = default;
  bool alive();

  FilesSwitchOptions options_;
  pid_t pid_ = -1;
  Fd input_;
  std::unique_ptr<bmv2::RuntimeCli> cli_;
};

}  // namespace rina::p4test

#endif  // RINA_TESTS_P4_FILES_SWITCH_H_
