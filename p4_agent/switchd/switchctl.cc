// rina-switchctl: sends one CTRL request to a switch controller and prints
// the reply. "rina-switchctl 127.0.0.1:9101 ENTRIES job=7" prints the P4
// table entries and multicast group of job 7 as JSON. With --auth-file it
// signs the request with the switch's admin secret (lib/wire/ctrl_auth.h).
#include <cstdio>
#include <cstring>
#include <string>

#include "rina/rina.h"
#include "wire/ctrl_auth.h"
#include "wire/net.h"

int main(int argc, char** argv) {
  using namespace rina::ina;
  std::string authFile;
  int first = 1;
  if (argc > 2 && std::strcmp(argv[1], "--auth-file") == 0) {
    authFile = argv[2];
    first = 3;
  }
  Endpoint controller;
  if (argc < first + 2 || !parseEndpoint(argv[first], &controller)) {
    fprintf(stderr,
            "usage: rina-switchctl [--auth-file FILE] ADDR:PORT VERB [key=value ...]\n"
            "  e.g. rina-switchctl 127.0.0.1:9101 ENTRIES job=7\n"
            "       rina-switchctl 127.0.0.1:9101 STATS\n"
            "  --auth-file  the switch's admin secret (rina-switchd --auth-file): the\n"
            "               request is signed with it (REGISTER, RELEASE and ENTRIES\n"
            "               need that on a switch that has one)\n");
    return 2;
  }
  std::string secret, error;
  if (!authFile.empty() && !readSecretFile(authFile, &secret, &error)) {
    fprintf(stderr, "rina-switchctl: --auth-file: %s\n", error.c_str());
    return 2;
  }
  std::string line = argv[first + 1];
  for (int i = first + 2; i < argc; ++i) line += std::string(" ") + argv[i];
  rina::Fd fd;
  LineReader reader;
  std::string reply;
  rina::Status s = connectTcp(controller, 2000, &fd);
  if (s.ok() && !secret.empty()) {
    std::string challenge, nonce;
    s = sendLine(fd.get(), std::string(kCtrlChallengeVerb), 2000);
    if (s.ok()) s = readLine(fd.get(), reader, 5000, &challenge);
    if (s.ok() && !parseChallengeReply(challenge, &nonce)) {
      fprintf(stderr, "rina-switchctl: %s does not authenticate: %s\n", argv[first],
              challenge.c_str());
      return 1;
    }
    line = signCtrlRequest(secret, nonce, 1, line);
  }
  if (s.ok()) s = sendLine(fd.get(), line, 2000);
  if (s.ok()) s = readLine(fd.get(), reader, 5000, &reply);
  if (!s.ok()) {
    fprintf(stderr, "rina-switchctl: %s: %s\n", argv[first], s.message().c_str());
    return 1;
  }
  bool ok = reply.rfind("OK", 0) == 0;
  printf("%s\n", ok && reply.size() > 3 ? reply.c_str() + 3 : reply.c_str());
  return ok ? 0 : 1;
}
