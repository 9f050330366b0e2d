/* Headers and constants shared by rina_v1model.p4 and rina_tna.p4: the INA
 * datagram of include/rina/ina_wire.h carried in UDP/IPv4/Ethernet. */
#ifndef RINA_HEADERS_P4_
#define RINA_HEADERS_P4_

#include "rina_elems.p4"

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_UDP    = 17;
/* switchd --listen port; the P4 programs serve one data port. */
const bit<16> INA_UDP_PORT   = 9100;

const bit<4> INA_MAGIC   = 5;
const bit<4> INA_VERSION = 2;
const bit<4> INA_DATA    = 1;
const bit<4> INA_RESULT  = 2;
const bit<4> INA_BCAST   = 3;
const bit<4> INA_NACK    = 5;
const bit<4> FLAG_RESEND   = 0x1;
const bit<4> FLAG_OVERFLOW = 0x2;
const bit<4> FLAG_TO_PORT  = 0x8;
const bit<8> EXPONENT_ZERO = 0x80;   /* int8 -128: every value zero */

const bit<16> INA_HEADER_BYTES = 24;
const bit<16> UDP_HEADER_BYTES = 8;
const bit<16> IPV4_HEADER_BYTES = 20;
const bit<16> ETHERNET_HEADER_BYTES = 14;

/* Verdict counter indices: the same names as switchd's Verdict enum. */
const bit<32> V_FIRST = 0;
const bit<32> V_ADDED = 1;
const bit<32> V_COMPLETED = 2;
const bit<32> V_DUP_PENDING = 3;
const bit<32> V_DUP_RESENT = 4;
const bit<32> V_STALE = 5;
const bit<32> V_BCAST = 6;
const bit<32> V_NACK = 7;
const bit<32> V_UNKNOWN_JOB = 8;
const bit<32> V_BAD_TOKEN = 9;
const bit<32> V_MALFORMED = 10;
const bit<32> V_BAD_SHAPE = 11;
const bit<32> V_BAD_SLOT = 12;
const bit<32> V_BAD_SOURCE = 13;     /* not from the worker's registered endpoint */
const bit<32> V_UNEXPECTED_TYPE = 14;
const bit<32> V_DUP_SHORT = 15;      /* a header-only marker whose answer is the sum: dropped */
const bit<32> V_COUNT = 16;

/* Malformed counter indices: the order of ina::DecodeError (ina_wire.h). */
const bit<32> M_TRUNCATED = 1;
const bit<32> M_BAD_MAGIC = 2;
const bit<32> M_BAD_VERSION = 3;
const bit<32> M_BAD_TYPE = 4;
const bit<32> M_BAD_PAD = 5;
const bit<32> M_BAD_LENGTH = 6;
const bit<32> M_OVERSIZED = 7;
const bit<32> M_BAD_FANIN = 8;
const bit<32> M_BAD_WORKER = 9;
const bit<32> M_BAD_JOB = 10;
const bit<32> M_EMPTY_PAYLOAD = 11;
const bit<32> M_COUNT = 12;

/* ina_wire.h limits. */
const bit<16> INA_MAX_ELEMS = 2048;
const bit<8>  INA_MAX_FAN_IN = 32;
const bit<4>  INA_TYPE_MAX = 5;

/* What every answer's IPv4 header carries besides addresses and length
 * (the differential test builds the same bytes): no options, DSCP 0,
 * identification 0, don't-fragment, TTL 64, UDP checksum 0 (none). */
const bit<8> ANSWER_TTL = 64;
const bit<3> ANSWER_IP_FLAGS = 2;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* include/rina/ina_wire.h, field for field (24 bytes). */
header ina_h {
    bit<4>  magic;
    bit<4>  version;
    bit<4>  type;
    bit<4>  flags;
    bit<16> job;
    bit<1>  shadow;
    bit<15> slot;
    bit<8>  worker;
    bit<8>  fan_in;
    bit<32> seq;
    bit<8>  exponent;   /* int8 */
    bit<8>  pad;
    bit<16> elems;
    bit<32> token_hi;   /* the 64-bit job token, high word */
    bit<32> token_lo;
}

/* The RoCEv2 layout of the same datagram (include/rina/ina_roce.h): a UC
 * RDMA WRITE Only with Immediate to UDP 4791, INA fields in BTH/RETH/ImmDt. */
const bit<16> ROCE_UDP_PORT = 4791;
const bit<8>  ROCE_OP_UC_WRITE_IMM = 0x2B;
const bit<16> ROCE_PKEY = 0xFFFF;
const bit<16> ROCE_HEADER_BYTES = 36;  /* BTH 12 + RETH 16 + ImmDt 4 + token low 4 */
const bit<16> ROCE_ICRC_BYTES = 4;      /* trailer, left in the packet body */

header roce_bth_h {
    bit<8>  opcode;
    bit<1>  solicited;
    bit<1>  mig_req;
    bit<2>  pad_count;
    bit<4>  tver;
    bit<16> pkey;
    bit<8>  reserved0;
    bit<8>  dst_qp_hi;   /* 0 */
    bit<16> dst_qp;      /* = job */
    bit<1>  ack_req;
    bit<7>  reserved1;
    bit<24> psn;         /* the sender's; answers: seq mod 2^24 */
}

header roce_reth_h {
    bit<16> va_zero;
    bit<1>  va_shadow;
    bit<15> va_slot;
    bit<32> va_seq;
    bit<32> rkey;        /* = job token bits 63..32 */
    bit<32> dma_len;     /* = 4 + 4 x elems */
}

header roce_imm_h {
    bit<4>  type;
    bit<4>  flags;
    bit<8>  worker;
    bit<8>  fan_in;
    bit<8>  exponent;
}

/* The write's first word: job token bits 31..0 (the R_Key holds 32 bits). */
header roce_token_h {
    bit<32> token_lo;
}

header ina_payload_h {
    RINA_FOR_EACH_ELEM(RINA_DECLARE_ELEM_FIELD)
}

#endif
