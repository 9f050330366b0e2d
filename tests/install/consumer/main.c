/* Builds against an installed rina and runs a one-rank allreduce, then the
 * elastic calls on one rank (each found in the installed library, each
 * answering as on one rank it must). */
#include <rina/rina.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  rinaUniqueId id;
  rinaComm_t comm, child = NULL, shrunk = NULL, none = NULL;
  float x[3] = {1.0f, 2.0f, 3.0f};
  rinaResult_t async = rinaInternalError;
  if (rinaGetVersion(&version) != rinaSuccess || version != RINA_VERSION_CODE) return 1;
  if (rinaGetUniqueId(&id) != rinaSuccess) return 2;
  if (rinaCommInitRank(&comm, 1, id, 0) != rinaSuccess) return 3;
  if (rinaAllReduce(x, x, 3, rinaFloat32, rinaSum, comm) != rinaSuccess) return 4;
  if (x[2] != 3.0f) return 5;
  if (rinaCommGetAsyncError(comm, &async) != rinaSuccess || async != rinaSuccess) return 6;
  if (rinaCommSplit(comm, 0, 0, &child) != rinaSuccess || child == NULL) return 7;
  if (rinaCommSplit(comm, RINA_SPLIT_NOCOLOR, 0, &none) != rinaSuccess || none != NULL) return 8;
  if (rinaCommGrow(comm, 0, id, &none) != rinaInvalidArgument) return 9;
  if (rinaCommJoin(&none, 1, id, 0) != rinaInvalidArgument) return 10;
  if (rinaCommShrink(comm, NULL, 0, &shrunk, RINA_SHRINK_DEFAULT) != rinaSuccess) return 11;
  if (rinaCommRevoke(shrunk) != rinaSuccess) return 12;
  if (rinaAllReduce(x, x, 3, rinaFloat32, rinaSum, shrunk) != rinaRevoked) return 13;
  rinaCommDestroy(shrunk);
  rinaCommDestroy(child);
  rinaCommDestroy(comm);
  printf("consumer ok: rina %d\n", version);
  return 0;
}
