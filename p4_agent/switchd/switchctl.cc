// rina-switchctl: sends one CTRL request to a switch controller and prints
// the reply. "rina-switchctl 127.0.0.1:9101 ENTRIES job=7" prints the P4
// table entries and multicast group of job 7 as JSON.
#include <cstdio>
#include <cstring>
#include <string>

#include "inanet/net.h"
#include "rina/rina.h"

int main(int argc, char** argv) {
  using namespace rina::ina;
  Endpoint controller;
  if (argc < 3 || !parseEndpoint(argv[1], &controller)) {
    fprintf(stderr,
            "usage: rina-switchctl ADDR:PORT VERB [key=value ...]\n"
            "  e.g. rina-switchctl 127.0.0.1:9101 ENTRIES job=7\n"
            "       rina-switchctl 127.0.0.1:9101 STATS\n");
    return 2;
  }
  std::string line = argv[2];
  for (int i = 3; i < argc; ++i) line += std::string(" ") + argv[i];
  rina::Fd fd;
  LineReader reader;
  std::string reply;
  rina::Status s = connectTcp(controller, 2000, &fd);
  if (s.ok()) s = sendLine(fd.get(), line, 2000);
  if (s.ok()) s = readLine(fd.get(), reader, 5000, &reply);
  if (!s.ok()) {
    fprintf(stderr, "rina-switchctl: %s: %s\n", argv[1], s.message().c_str());
    return 1;
  }
  bool ok = reply.rfind("OK", 0) == 0;
  printf("%s\n", ok && reply.size() > 3 ? reply.c_str() + 3 : reply.c_str());
  return ok ? 0 : 1;
}
