/*
 * rina: collective communication with in-network aggregation inside racks
 * and ring-allreduce between them.
 *
 * A flat C ABI in the NCCL style: opaque communicator handles, one result
 * enum, every call returns it. Thread safety: one communicator may be used by
 * one thread at a time, except rinaCommAbort, rinaCommRevoke and
 * rinaCommShrink with RINA_SHRINK_ABORT, which may be called from any thread
 * to stop a call in progress.
 */
#ifndef RINA_RINA_H_
#define RINA_RINA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RINA_API __attribute__((visibility("default")))
#else
#define RINA_API
#endif

#define RINA_MAJOR 0
#define RINA_MINOR 1
#define RINA_PATCH 0
/* 0.1.0 -> 100; compare against rinaGetVersion(). */
#define RINA_VERSION_CODE (RINA_MAJOR * 10000 + RINA_MINOR * 100 + RINA_PATCH)

typedef enum {
  rinaSuccess = 0,
  rinaSystemError = 1,     /* a system call failed (socket, mmap, ...) */
  rinaInternalError = 2,   /* a bug in rina */
  rinaInvalidArgument = 3, /* a bad argument to this call */
  rinaInvalidUsage = 4,    /* calls that do not match across ranks, ... */
  rinaRemoteError = 5,     /* a peer failed or went away */
  rinaTimeout = 6,         /* a wait exceeded RINA_TIMEOUT_MS */
  rinaAborted = 7,         /* rinaCommAbort was called */
  rinaRevoked = 8,         /* the communicator was revoked (rinaCommRevoke) */
  rinaNumResults = 9
} rinaResult_t;

typedef enum {
  rinaInt8 = 0,
  rinaUint8 = 1,
  rinaInt32 = 2,
  rinaUint32 = 3,
  rinaInt64 = 4,
  rinaUint64 = 5,
  rinaFloat16 = 6,
  rinaBfloat16 = 7,
  rinaFloat32 = 8,
  rinaFloat64 = 9,
  rinaNumTypes = 10
} rinaDataType_t;

typedef enum {
  rinaSum = 0,
  rinaProd = 1,
  rinaMin = 2,
  rinaMax = 3,
  rinaAvg = 4, /* sum, then divided by the number of ranks once */
  rinaNumOps = 5
} rinaRedOp_t;

/* Opaque; carries the root's address and a random communicator id. */
#define RINA_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[RINA_UNIQUE_ID_BYTES];
} rinaUniqueId;

typedef struct rinaComm* rinaComm_t;

/* Version as RINA_VERSION_CODE. */
RINA_API rinaResult_t rinaGetVersion(int* version);

/* Called once, by one process (the root); the id is then shared with every
 * rank by any means (MPI_Bcast, a file, ...). The root keeps a listening
 * socket open until its rinaCommInitRank. RINA_COMM_ID=host:port makes every
 * rank use that address instead, and rinaGetUniqueId need not be called. */
RINA_API rinaResult_t rinaGetUniqueId(rinaUniqueId* uniqueId);

/* Collective over nranks processes (or threads) sharing uniqueId. */
RINA_API rinaResult_t rinaCommInitRank(rinaComm_t* comm, int nranks, rinaUniqueId uniqueId,
                                       int rank);

/* Settings of one communicator, given at creation (rinaCommInitRankConfig)
 * instead of through the environment. Forward compatible like
 * rinaCommStats_t: start from RINA_CONFIG_INITIALIZER, which sets size and
 * version; fields are only ever appended, and a field left 0 means "as the
 * RINA_* knob says". */
#define RINA_CONFIG_VERSION 1
typedef struct {
  size_t size;      /* sizeof(rinaConfig_t) of the caller */
  uint32_t version; /* RINA_CONFIG_VERSION of the caller's header */
  uint32_t reserved;
  /* > 0: the longest wait of this communicator for a peer (rendezvous,
   * connections, each collective step), in place of RINA_TIMEOUT_MS */
  int64_t timeoutMs;
} rinaConfig_t;
#define RINA_CONFIG_INITIALIZER \
  { sizeof(rinaConfig_t), RINA_CONFIG_VERSION, 0, 0 }

/* rinaCommInitRank with settings (NULL config: the same as rinaCommInitRank).
 * rinaInvalidArgument when config->size is smaller than the fixed head (size,
 * version, reserved) or a field is out of range (timeoutMs < 0); fields
 * beyond config->size count as 0. */
RINA_API rinaResult_t rinaCommInitRankConfig(rinaComm_t* comm, int nranks, rinaUniqueId uniqueId,
                                             int rank, const rinaConfig_t* config);

/* Frees the communicator. Does not synchronize with peers. */
RINA_API rinaResult_t rinaCommDestroy(rinaComm_t comm);

/* Makes the call in progress on comm (if any) and every later call return
 * rinaAborted; may be called from any thread, never blocks and sends
 * nothing. Then call rinaCommDestroy. */
RINA_API rinaResult_t rinaCommAbort(rinaComm_t comm);

/* Failures and elastic communicators (docs/api.md, "When a rank or a switch
 * fails"). */

/* Revokes comm on every rank: the call in progress on comm (on any rank,
 * at its next wait) and every later call return rinaRevoked, naming the
 * rank that revoked it and why (its last error, which names a dead peer).
 * Any rank may call it, from any thread, as often as it likes; it waits for
 * no other rank (at most 1 s for a host that neither answers nor refuses).
 * Then shrink comm (rinaCommShrink) or destroy it. */
RINA_API rinaResult_t rinaCommRevoke(rinaComm_t comm);

/* *asyncError gets a failure of comm seen while no call runs, without a
 * message to any peer: rinaRevoked (a rank revoked it), rinaAborted,
 * rinaRemoteError (a peer's connection closed: the peer is gone; or the
 * switch of this rank's rack was lost, after which the rack aggregates on
 * its hosts and calls go on), an earlier call's failure, or rinaSuccess.
 * rinaCommGetLastError says which. Returns rinaInvalidArgument for a bad
 * comm or a NULL asyncError, else rinaSuccess. */
RINA_API rinaResult_t rinaCommGetAsyncError(rinaComm_t comm, rinaResult_t* asyncError);

/* Collective over comm (healthy, no call in progress): the ranks that pass
 * the same color (>= 0) form a new communicator, ranked by key (ties: by
 * rank in comm), with connections of its own, its own plan, and INA for
 * each rack whose ranks are all in it; RINA_SPLIT_NOCOLOR gives *newcomm =
 * NULL. comm stays usable, also beside its children. */
#define RINA_SPLIT_NOCOLOR (-1)
RINA_API rinaResult_t rinaCommSplit(rinaComm_t comm, int color, int key, rinaComm_t* newcomm);

/* The ranks of comm but excludeRanks[0 .. excludeCount-1] (the failed
 * ones) form *newcomm, numbered in their order in comm, over comm's
 * connections (no unique id, no rendezvous); each INA rack registers its
 * job again with its new members. Every surviving rank calls it with the
 * same list; the excluded ranks do not. flags: RINA_SHRINK_DEFAULT when no
 * call runs on comm (or comm was revoked), RINA_SHRINK_ABORT to revoke comm
 * first, stopping a call in progress. comm is then used up: destroy it. A
 * list that differs across ranks, or a rank not excluded that is gone, is
 * an error on every survivor, never a wrong communicator. */
#define RINA_SHRINK_DEFAULT 0
#define RINA_SHRINK_ABORT 1
RINA_API rinaResult_t rinaCommShrink(rinaComm_t comm, const int* excludeRanks, int excludeCount,
                                     rinaComm_t* newcomm, int flags);

/* Collective over comm (healthy, no call in progress) and nNew joining
 * ranks: *newcomm has comm's ranks under their numbers and the joiners
 * after them, over comm's connections plus those to and among the
 * joiners. uniqueId is a fresh id (rinaGetUniqueId on one rank of comm),
 * the same on every rank of comm and handed to the joiners, who call
 * rinaCommJoin with it. comm is then used up: destroy it. */
RINA_API rinaResult_t rinaCommGrow(rinaComm_t comm, int nNew, rinaUniqueId uniqueId,
                                   rinaComm_t* newcomm);

/* A new rank joining the communicator that comm's ranks grow with
 * rinaCommGrow: nranks is the grown size, rank this joiner's number (from
 * comm's size up to nranks - 1). */
RINA_API rinaResult_t rinaCommJoin(rinaComm_t* newcomm, int nranks, rinaUniqueId uniqueId,
                                   int rank);

RINA_API rinaResult_t rinaCommCount(const rinaComm_t comm, int* count);
RINA_API rinaResult_t rinaCommUserRank(const rinaComm_t comm, int* rank);

/* Names the allreduce algorithm for later calls on comm: "auto" (default,
 * or RINA_ALGO: the latency algorithm below RINA_SMALL_MSG_BYTES, else,
 * with every rank on one host, two-shot below RINA_TWO_SHOT_BYTES, else
 * rina when a rack has INA and its link model beats the ring's, else ring;
 * docs/racks.md), "ring" (pipelined
 * ring, with the latency algorithm below RINA_SMALL_MSG_BYTES), "rd"
 * (recursive doubling at any size), "oneshot" (the latency algorithm when
 * every rank is on one host with shared memory: each rank posts its buffer
 * in a segment of the host and reduces all of them; recursive doubling
 * where that cannot run or above RINA_SMALL_MSG_BYTES), "twoshot" (every
 * rank on one host: the buffer in chunks through the host segment, each
 * rank summing its share of each chunk; elsewhere as "ring"), "hier" (reduce
 * inside each rack, ring between racks, broadcast inside), "rina" (INA
 * racks as ring members through their switch, other ranks as autonomous
 * members), "ps-ina" (INA racks and a parameter server at rank 0). Racks
 * come from RINA_TOPO_FILE, else RINA_RACKS, else one per host. Unknown names (and
 * "") return rinaInvalidArgument. Must be set to the same value on every rank: a call
 * that ranks would run with different algorithms returns rinaInvalidUsage
 * naming both (never a wrong sum). */
RINA_API rinaResult_t rinaCommSetAlgorithm(rinaComm_t comm, const char* algorithm);

/* Counters of one communicator (this rank's view), for rinaCommGetStats.
 * Forward compatible: set `size` to sizeof(rinaCommStats_t) before the
 * call; the library writes only the fields that fit in `size` and reports
 * its own layout in `version`. New fields are only ever appended. */
#define RINA_COMM_STATS_VERSION 8
typedef struct {
  size_t size;      /* in: sizeof(rinaCommStats_t) of the caller */
  uint32_t version; /* out: RINA_COMM_STATS_VERSION of the library */
  uint32_t reserved;
  /* allreduce calls by the algorithm that ran (auto resolved) */
  uint64_t callsRing;
  uint64_t callsRd;
  uint64_t callsHier;
  uint64_t callsRina;
  uint64_t callsPsIna;
  uint64_t inaFallbacks;       /* times this rank's rack stopped using its switch */
  uint64_t inaCalls;           /* switch reductions and broadcasts this rank took part in */
  uint64_t inaRetransmissions; /* INA datagrams this rank resent */
  uint64_t inaHostSlices;      /* INA slices aggregated on the hosts instead */
  uint64_t inaRegrants;        /* new slot grants after a preemption */
  /* version 2: traffic on this rank's connections (per link:
   * rinaCommGetLinkStats); payload bytes, creation probe included */
  uint64_t links;         /* connections to other ranks now */
  uint64_t bytesSent;     /* over all connections, closed ones included */
  uint64_t bytesReceived; /* over all connections, closed ones included */
  /* version 3: the plan hier and rina follow (docs/planning.md); equal on
   * every rank between collectives */
  uint64_t planEpoch;  /* the current plan's number; 0: none yet */
  uint64_t replans;    /* plans adopted after the initial one */
  uint64_t planChecks; /* plan exchanges (rate gather + decision), the initial one included */
  /* version 4: allreduce calls that ran one-shot over the host segment */
  uint64_t callsOneShot;
  /* version 5: the other calls, and the point-to-point channels' traffic
   * (payload bytes, headers included; not in bytesSent / bytesReceived) */
  uint64_t callsAllToAll; /* rinaAllToAll and rinaAllToAllv */
  uint64_t callsReduce;
  uint64_t callsGather;
  uint64_t callsScatter;
  uint64_t sends; /* messages: rinaSend, rinaSendTagged */
  uint64_t recvs; /* messages: rinaRecv, rinaRecvTagged */
  uint64_t p2pBytesSent;
  uint64_t p2pBytesReceived;
  /* version 6: what this rank's INA datagrams met (inaRetransmissions counts
   * every resend) */
  uint64_t inaDatagrams;           /* first sends */
  uint64_t inaFastRetransmissions; /* resends of datagrams overtaken by later answers
                                      (the rest waited for the retransmission timer) */
  uint64_t inaLateAnswers;         /* answers that came twice for a resent datagram: its
                                      first copy was only late, not lost */
  uint64_t inaSocketDrops;         /* answers the kernel dropped at this rank's INA socket
                                      for a full receive buffer */
  uint64_t inaWindowCuts;          /* halvings of the window of datagrams in flight */
  /* version 7: allreduce calls that ran two-shot over the host segment */
  uint64_t callsTwoShot;
  /* version 8: this rank's rack went back to its switch after a fallback (a
   * lost switch that came back: tried at plan checks, backing off while
   * returns sum nothing) */
  uint64_t inaReturns;
} rinaCommStats_t;

/* Fills stats (see rinaCommStats_t); rinaInvalidArgument when stats is NULL
 * or stats->size is smaller than the fixed head (size, version, reserved). */
RINA_API rinaResult_t rinaCommGetStats(const rinaComm_t comm, rinaCommStats_t* stats);

/* One connection of this rank, as measured (rinaCommGetLinkStats). Busy
 * time runs from the first to the last byte of each transfer on the link
 * (waiting for the peer to start one is not busy); rates are bytes per
 * busy second over recent transfers (older busy time decays with a time
 * constant of 100 ms). recvRate
 * is the achieved rate of the hop peer -> this rank, what the planner uses;
 * sendRate is how fast the transport took bytes (buffers make it high).
 * Forward compatible like rinaCommStats_t: new fields are only appended,
 * and rinaCommGetLinkStats passes sizeof(rinaLinkStats_t) to the library. */
#define RINA_LINK_STATS_VERSION 2
typedef struct {
  int peer;           /* the other rank */
  char transport[12]; /* "socket" or "shm" */
  uint64_t bytesSent; /* payload bytes since creation, probe included */
  uint64_t bytesReceived;
  double busySendSec;
  double busyRecvSec;
  double sendRate; /* bytes/s, 0 before anything moved */
  double recvRate; /* bytes/s, 0 before anything arrived */
  /* version 2: with addresses on several spines a pair has a default
   * connection and one more per other spine (docs/planning.md, "Several paths") */
  int spine;       /* the spine this connection's path crosses; -1: none known
                      (same rack, or one spine) */
  int defaultPath; /* 1: the pair's default connection; 0: a per-spine one */
} rinaLinkStats_t;

/* Writes this rank's connections, by (peer, spine) ascending, to
 * links[0 .. min(maxLinks, n) - 1] (each linkBytes long; fields beyond
 * linkBytes are not written) and their number to *nLinks (so maxLinks 0
 * with links NULL asks for the count). Read between collectives, from the
 * thread that calls them. rinaInvalidArgument for a NULL comm or nLinks,
 * maxLinks < 0, links NULL with maxLinks > 0, or linkBytes smaller than
 * version 1's 64 bytes. */
RINA_API rinaResult_t rinaCommGetLinkStatsSized(const rinaComm_t comm, rinaLinkStats_t* links,
                                                size_t linkBytes, int maxLinks, int* nLinks);
/* The call to use. (Programs built against version 1 of this header call
 * an exported function of this name that writes 64-byte version 1 entries
 * of the default connections only.) */
#define rinaCommGetLinkStats(comm, links, maxLinks, nLinks) \
  rinaCommGetLinkStatsSized((comm), (links), sizeof(rinaLinkStats_t), (maxLinks), (nLinks))

/* A static string for a result code. */
RINA_API const char* rinaGetErrorString(rinaResult_t result);

/* A human-readable account of the last error on comm: which rank, peer,
 * collective and step. NULL comm gives the last error of this thread's
 * calls that had no communicator yet (e.g. rinaCommInitRank). */
RINA_API const char* rinaCommGetLastError(rinaComm_t comm);

/* recvbuff[i] = op over ranks of sendbuff[i]; in place when equal. */
RINA_API rinaResult_t rinaAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    rinaDataType_t datatype, rinaRedOp_t op, rinaComm_t comm);

/* sendbuff has nranks * recvcount elements; rank r receives block r of the
 * reduction. In place when recvbuff == sendbuff + rank * recvcount. */
RINA_API rinaResult_t rinaReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        rinaDataType_t datatype, rinaRedOp_t op, rinaComm_t comm);

/* recvbuff has nranks * sendcount elements; block r comes from rank r. In
 * place when sendbuff == recvbuff + rank * sendcount. */
RINA_API rinaResult_t rinaAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    rinaDataType_t datatype, rinaComm_t comm);

/* recvbuff on every rank gets root's sendbuff (only read on root). In place
 * when sendbuff == recvbuff. */
RINA_API rinaResult_t rinaBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                    rinaDataType_t datatype, int root, rinaComm_t comm);

/* sendbuff's nranks blocks of count elements go one to each rank: block p
 * to rank p, which puts it at recvbuff + rank * count. Each block moves
 * once (pairwise exchange; between ranks of one host straight from the
 * sender's buffer into the receiver's), or, with every rank on one host
 * below RINA_ALLTOALL_SLOT_BYTES sent per rank, through the sender's slot
 * of the host's shared segment. sendbuff and recvbuff must not overlap. */
RINA_API rinaResult_t rinaAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                   rinaDataType_t datatype, rinaComm_t comm);

/* Host memory that the ranks of one host can read from each other: size
 * bytes (> 0), zero-filled, at *ptr. A rinaAllToAll whose sendbuff lies
 * wholly in one such allocation, with every rank on one host below
 * RINA_ALLTOALL_SLOT_BYTES sent per rank, is copied once, straight from
 * sendbuff into each receiver's recvbuff (instead of into and out of the
 * host's shared segment); such a call returns once every peer has read
 * sendbuff. Thread-safe; needs no communicator (a failure's message:
 * rinaCommGetLastError(NULL)). rinaInvalidArgument for a NULL ptr or size
 * 0, rinaSystemError when the system refuses the memory. */
RINA_API rinaResult_t rinaMemAlloc(void** ptr, size_t size);
/* Frees memory from rinaMemAlloc by the pointer it returned;
 * rinaInvalidUsage for any other pointer, or one freed already. Free it
 * only once no collective that uses it is running. */
RINA_API rinaResult_t rinaMemFree(void* ptr);

/* rinaAllToAll with a count and a place (displacement, in elements) per
 * rank: sendcounts[p] elements at sendbuff + sdispls[p] go to rank p, and
 * rank p's block lands at recvbuff + rdispls[p]. recvcounts[p] must equal
 * rank p's sendcounts[rank] (a pair that disagrees is rinaInvalidUsage on
 * both ranks, naming both counts). The arrays have nranks entries. */
RINA_API rinaResult_t rinaAllToAllv(const void* sendbuff, const size_t* sendcounts,
                                    const size_t* sdispls, void* recvbuff, const size_t* recvcounts,
                                    const size_t* rdispls, rinaDataType_t datatype,
                                    rinaComm_t comm);

/* recvbuff on root gets op over ranks of sendbuff (recvbuff is only used on
 * root; in place when equal there). A pipelined chain into the root: each
 * link carries the buffer once. */
RINA_API rinaResult_t rinaReduce(const void* sendbuff, void* recvbuff, size_t count,
                                 rinaDataType_t datatype, rinaRedOp_t op, int root,
                                 rinaComm_t comm);

/* Root's recvbuff (nranks * sendcount elements) gets rank r's sendbuff at
 * block r; recvbuff is only used on root (in place when sendbuff == recvbuff
 * + root * sendcount there). Each rank's block goes straight to the root. */
RINA_API rinaResult_t rinaGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 rinaDataType_t datatype, int root, rinaComm_t comm);

/* Rank r's recvbuff gets block r of root's sendbuff (nranks * recvcount
 * elements, only read on root; in place when recvbuff == sendbuff + root *
 * recvcount there). Each block goes straight from the root to its rank. */
RINA_API rinaResult_t rinaScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                  rinaDataType_t datatype, int root, rinaComm_t comm);

/* Point-to-point. rinaSend's count elements reach the rinaRecv that peer
 * posts for this rank: the messages between two ranks match in the order
 * they were posted, per direction, and a receive must name the same count
 * and type (else rinaInvalidUsage, from the receive, and from the send too
 * when the message is large enough to wait for the receiver: 32 KiB within
 * a host, 1 MiB across hosts). Outside a group each call returns when its
 * buffer may be reused: a send once its bytes are on their way (large ones
 * once received), a receive once they are in. peer is another rank: a
 * message to or from the rank itself is rinaInvalidArgument. */
RINA_API rinaResult_t rinaSend(const void* sendbuff, size_t count, rinaDataType_t datatype,
                               int peer, rinaComm_t comm);
RINA_API rinaResult_t rinaRecv(void* recvbuff, size_t count, rinaDataType_t datatype, int peer,
                               rinaComm_t comm);

/* rinaSend / rinaRecv with a tag (>= 0). Messages still match in posting
 * order; a receive naming a tag checks it (a different one is
 * rinaInvalidUsage), RINA_ANY_TAG takes any (rinaRecv's). peer may be
 * RINA_ANY_PEER in a receive outside a group: it takes the first message
 * that arrives from any rank. source (may be NULL) gets the sender's rank
 * (inside a group, at rinaGroupEnd). */
#define RINA_ANY_PEER (-1)
#define RINA_ANY_TAG (-1)
RINA_API rinaResult_t rinaSendTagged(const void* sendbuff, size_t count, rinaDataType_t datatype,
                                     int peer, int tag, rinaComm_t comm);
RINA_API rinaResult_t rinaRecvTagged(void* recvbuff, size_t count, rinaDataType_t datatype,
                                     int peer, int tag, int* source, rinaComm_t comm);

/* Groups, with NCCL's semantics: between rinaGroupStart and rinaGroupEnd
 * (on one thread; they nest, the outermost pair counts) calls only post:
 * arguments are checked at once (a bad one returns its error and is not
 * posted), nothing moves, and buffers must stay valid until rinaGroupEnd.
 * At rinaGroupEnd every posted message of a communicator runs at the same
 * time, so any order of sends and receives that matches across ranks
 * completes (a ring of sends and receives, two ranks that both send
 * first); then the posted collectives run in the order they were posted.
 * rinaGroupEnd returns the first failure (each communicator keeps its own
 * for rinaCommGetLastError). Messages in a group take host memory only. */
RINA_API rinaResult_t rinaGroupStart(void);
RINA_API rinaResult_t rinaGroupEnd(void);

/* Buffers of the collectives above may be CUDA device memory when librina
 * is built with CUDA: they are detected (cudaPointerGetAttributes) and
 * copied through pinned host buffers, pipelined in RINA_CUDA_STAGE_BYTES
 * chunks. Such a call is ordered after work queued on the legacy default
 * stream, like cudaMemcpy. Without a usable GPU, a pointer that is not host
 * memory gives rinaSystemError. */

/* rinaAllReduce ordered on a CUDA stream (a cudaStream_t; NULL = the legacy
 * default stream), as NCCL's: it starts after the work already queued on
 * stream and work queued later sees the result. Buffers may be device or
 * host memory. The call returns when the result is in recvbuff. Without
 * CUDA or a usable GPU: rinaSystemError, and comm stays usable. */
RINA_API rinaResult_t rinaAllReduceStream(const void* sendbuff, void* recvbuff, size_t count,
                                          rinaDataType_t datatype, rinaRedOp_t op, rinaComm_t comm,
                                          void* stream);

/* Weighted average: recvbuff[i] = sum_r w_r sendbuff_r[i] / sum_r w_r, where
 * w_r is the weight rank r passes (e.g. its batch size, so unequal batches
 * still give the unbiased mean gradient). Floating types only (float16,
 * bfloat16, float32, float64); each rank scales its input by w_r / sum w in
 * working precision, then the scaled inputs are summed. A negative or
 * non-finite weight on any rank, or weights summing to 0, make the call
 * return rinaInvalidArgument on every rank. In place when equal. */
RINA_API rinaResult_t rinaAllReduceWeighted(const void* sendbuff, void* recvbuff, size_t count,
                                            rinaDataType_t datatype, double weight,
                                            rinaComm_t comm);

/* InGo batch-size advice (no communication): integer batchSizes[i] >= 0,
 * summing to globalBatch, that minimise the iteration time
 *   max_i (batchSizes[i] / computeRate[i] + commSeconds[i])
 * where computeRate[i] is rank i's samples/s and commSeconds[i] its measured
 * communication time per iteration (NULL: all 0). The result is within
 * max_i 1/computeRate[i] seconds of the continuous optimum (water-filling;
 * see docs/planning.md). Rates must be finite and > 0, times finite and
 * >= 0, globalBatch >= 0, nranks >= 1: else rinaInvalidArgument. */
RINA_API rinaResult_t rinaSuggestBatchSizes(int64_t globalBatch, int nranks,
                                            const double* computeRate, const double* commSeconds,
                                            int64_t* batchSizes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RINA_RINA_H_ */
