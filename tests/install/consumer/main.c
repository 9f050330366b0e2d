/* Builds against an installed rina and runs a one-rank allreduce. */
#include <rina/rina.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  rinaUniqueId id;
  rinaComm_t comm;
  float x[3] = {1.0f, 2.0f, 3.0f};
  if (rinaGetVersion(&version) != rinaSuccess || version != RINA_VERSION_CODE) return 1;
  if (rinaGetUniqueId(&id) != rinaSuccess) return 2;
  if (rinaCommInitRank(&comm, 1, id, 0) != rinaSuccess) return 3;
  if (rinaAllReduce(x, x, 3, rinaFloat32, rinaSum, comm) != rinaSuccess) return 4;
  rinaCommDestroy(comm);
  if (x[2] != 3.0f) return 5;
  printf("consumer ok: rina %d\n", version);
  return 0;
}
