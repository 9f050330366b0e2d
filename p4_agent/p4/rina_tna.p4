/* rina_tna.p4: the INA aggregation pipeline for Tofino (TNA).
 *
 * The semantics of p4_agent/switchd/pipeline.cc (rina-switchd) and
 * rina_v1model.p4, which the differential test runs against each other in
 * BMv2; this program is type-checked with p4test against the open TNA
 * include files (p4_agent/README.md names the versions). Tofino's own
 * compiler does not run here: the forms below are the ones it accepts, and
 * p4_agent/README.md ("Tofino resources") estimates what each stage holds.
 *
 * 64 int32 values per datagram, split across two passes: the values' state
 * needs 64 stateful ALUs, more than one pass of ingress or egress has after
 * the slot state (12 stages x 4 ALUs). Every datagram that changes or reads
 * values recirculates once:
 *   pass 1, ingress   decode checks, job / token / shape / source, slot
 *                     owner, and the set's state: used, seq, bitmap, count,
 *                     exponent, TO_PORT, overflow; decides what the values
 *                     do (write, add, read, zero, nothing) and the answer.
 *                     Answers without values (NACK, acknowledgements) and
 *                     drops end here.
 *   pass 1, egress    (the recirculation port) values 0..31
 *   pass 2, ingress   values 32..63, then the answer: drop, unicast to the
 *                     sender's registered endpoint, or the job's multicast
 *   pass 2, egress    per replica: member_table, neighbor_table, lengths,
 *                     the RoCEv2 layout for a job that speaks it.
 * Each register is touched once per pass through one RegisterAction with at
 * most one condition; each action writes a field once; the worker bit comes
 * from a table, the set index from an identity hash.
 *
 * Known differences from rina-switchd (p4_agent/README.md):
 * - overflow is flagged conservatively: a sum at INT32_MAX or INT32_MIN is
 *   reported as OVERFLOW (hosts then aggregate that slice, always correct);
 * - a BCAST for a seq whose DATA set is incomplete (hosts never mix the
 *   two on one seq) keeps the earlier contributors' bits;
 * - the ICRC of a RoCEv2 answer is not recomputed (see the README).
 */
#include <core.p4>
#include <tna.p4>

#define RINA_ELEMS 64
#include "rina_headers.p4"

#define NUM_SLOTS 8192
#define NUM_SETS 16384
#define NUM_JOBS 65536

/* The recirculation port of pipe 0 on Tofino 1. */
const PortId_t RECIRC_PORT = 68;

/* What the values do in a pass. */
const bit<3> VALUES_NONE = 0;
const bit<3> VALUES_WRITE = 1;
const bit<3> VALUES_ADD = 2;
const bit<3> VALUES_READ = 3;
const bit<3> VALUES_ZERO = 4;   /* a port marker's first contribution */

/* What happens after the values. */
const bit<2> ANSWER_NONE = 0;     /* drop (the verdict was counted in pass 1) */
const bit<2> ANSWER_SENDER = 1;   /* unicast to the sender's registered endpoint */
const bit<2> ANSWER_MEMBERS = 2;  /* the job's multicast group */

const bit<2> PASS_STATE = 0;      /* (no header: a datagram from a port) */
const bit<2> PASS_VALUES_LO = 1;  /* ingress -> egress on the recirculation port */
const bit<2> PASS_VALUES_HI = 2;  /* recirculated into ingress */
const bit<2> PASS_ANSWER = 3;     /* ingress -> egress on the answer's port */

/* Carried between the passes (bridged, then through recirculation). */
header rina_pass_h {
    bit<2>  pass;
    bit<3>  values;
    bit<2>  answer;
    bit<1>  overflow;     /* a saturated sum seen so far (conservative) */
    bit<16> index;        /* the set: slot * 2 + shadow */
    bit<16> job;          /* the multicast group, member_table's key */
    bit<8>  port_worker;  /* TO_PORT: the port; the others get acknowledgements */
    bit<8>  root_worker;  /* BCAST: the root gets an acknowledgement */
    bit<1>  to_port;
    bit<1>  bcast;
    bit<1>  roce;         /* the job's datagram came in the RoCEv2 layout */
    bit<1>  ack;          /* a unicast answer without payload */
    bit<3>  pad0;
    PortId_t reply_port;  /* where the datagram came in */
    bit<32> reply_addr;   /* the sender's registered endpoint */
    bit<16> reply_udp;
}

struct headers_t {
    rina_pass_h   pass;
    ethernet_h    ethernet;
    ipv4_h        ipv4;
    udp_h         udp;
    ina_h         ina;
    roce_bth_h    bth;
    roce_reth_h   reth;
    roce_imm_h    imm;
    roce_token_h  roce_token;
    ina_payload_h payload;
}

#include "rina_tna_parser.p4"
#include "rina_tna_ingress.p4"
#include "rina_tna_egress.p4"

Pipeline(RinaIngressParser(), RinaIngress(), RinaIngressDeparser(),
         RinaEgressParser(), RinaEgress(), RinaEgressDeparser()) pipe;

Switch(pipe) main;
