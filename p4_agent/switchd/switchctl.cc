// rina-switchctl: sends one CTRL request to a switch controller and prints
// the reply. "rina-switchctl 127.0.0.1:9101 ENTRIES job=7" prints the P4
// table entries and multicast group of job 7 as JSON.
#include <cstdio>
#include <cstring>
#include <string>

#include "ina/net.h"

int main(int argc, char** argv) {
  using namespace rina::ina;
  Endpoint controller;
  if (argc < 3 || !parseEndpoint(argv[1], &controller)) {
    fprintf(stderr, "usage: rina-switchctl ADDR:PORT VERB [key=value ...]\n"
                    "  e.g. rina-switchctl 127.0.0.1:9101 ENTRIES job=7\n"
                    "       rina-switchctl 127.0.0.1:9101 STATS\n");
    return 2;
  }
  std::string line = argv[2];
  for (int i = 3; i < argc; ++i) line += std::string(" ") + argv[i];
  UniqueFd fd;
  if (int err = connectTcp(controller, 2000, &fd); err != 0) {
    fprintf(stderr, "rina-switchctl: cannot connect to %s: %s\n", argv[1], strerror(-err));
    return 1;
  }
  LineReader reader;
  std::string reply;
  int err = writeAll(fd.get(), line + "\n");
  if (err == 0) err = readLine(fd.get(), reader, 5000, &reply);
  if (err != 0) {
    fprintf(stderr, "rina-switchctl: %s: %s\n", argv[1], strerror(-err));
    return 1;
  }
  bool ok = reply.rfind("OK", 0) == 0;
  printf("%s\n", ok && reply.size() > 3 ? reply.c_str() + 3 : reply.c_str());
  return ok ? 0 : 1;
}
