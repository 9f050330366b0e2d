/* rina_tna.p4: the INA aggregation pipeline for Tofino (TNA).
 *
 * NOT COMPILED HERE: no Intel P4 Studio (bf-p4c) on the development machines.
 * Written against tna.p4 from the SDE and kept in step with
 * p4_agent/switchd/pipeline.cc (the software switch the tests run) and
 * rina_v1model.p4; p4_agent/README.md maps each register/action to switchd.
 *
 * Tofino differences from the v1model program:
 * - every register is touched once per packet, through one RegisterAction
 *   chosen by the control flow (reset / update / read), so the state machine
 *   is spread over stages: seq -> bitmap -> count -> exponent, values;
 * - a stateful ALU per value register: 32 elements per pass
 *   (RINA_ELEMS 32; run switchd-compatible hosts with a grant of payload 32,
 *   which the controller reports); 64 would need a recirculation pass;
 * - overflow is flagged conservatively: a sum that sits at INT32_MAX/MIN
 *   after a saturating add is reported as OVERFLOW (hosts then aggregate
 *   that slice themselves, which is always correct);
 * - seq 0 marks an unused set (hosts start at seq 1);
 * - the RoCEv2 layout (UDP 4791, include/rina/ina_roce.h) is parsed into
 *   BTH/RETH/ImmDt and turned into the native ina header at the start of
 *   ingress, so one pipeline serves both; bridged.roce makes egress turn the
 *   answer back. The ICRC trailer is carried through unchanged: a deployment
 *   with real RDMA NICs must recompute it in egress (CRC32 over the masked
 *   IP/UDP/BTH and the payload), which this program does not do yet.
 * Stage fit has not been checked with bf-p4c.
 */
#include <core.p4>
#include <tna.p4>

#define RINA_ELEMS 32
#include "rina_headers.p4"

#define NUM_SLOTS 8192
#define NUM_SETS 16384

const bit<8> SEQ_SAME = 0;
const bit<8> SEQ_NEW = 1;
const bit<8> SEQ_STALE = 2;

/* Ingress -> egress: what the member table and TO_PORT need. */
header bridged_h {
    bit<16> job;
    bit<8>  port_worker;
    bit<6>  pad;
    bit<1>  roce;       /* the job's datagram came in the RoCEv2 layout */
    bit<1>  to_port;
}

struct headers_t {
    bridged_h     bridged;
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

struct ig_metadata_t {
    bit<32> src_addr;    /* source_table: the worker's registered endpoint */
    bit<16> src_port;
    bit<32> token_hi;    /* job_table: the 64-bit token in two words */
    bit<32> token_lo;
    bit<8>  fan_in;
    bit<16> mcast_grp;
    bit<32> index;
    bit<32> worker_bit;
    bit<8>  seq_state;
    bit<32> old_bitmap;
    bit<8>  count;
    bit<1>  duplicate;
    bit<1>  complete;
    bit<1>  overflow;
}

struct eg_metadata_t { }

parser RinaIngressParser(packet_in pkt, out headers_t hdr, out ig_metadata_t ig_md,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            IPPROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            ROCE_UDP_PORT: parse_roce;
            default: accept;
        }
    }
    state parse_roce {
        pkt.extract(hdr.bth);
        pkt.extract(hdr.reth);
        pkt.extract(hdr.imm);
        pkt.extract(hdr.roce_token);
        /* UC write-with-immediate, default partition, payload RINA_ELEMS:
         * else no payload, and ingress counts it as bad shape. */
        transition select(hdr.bth.opcode, hdr.bth.pkey, hdr.reth.dma_len) {
            (ROCE_OP_UC_WRITE_IMM, ROCE_PKEY, 4 + (bit<32>)RINA_ELEMS * 4): parse_payload;
            default: accept;
        }
    }
    state parse_ina {
        pkt.extract(hdr.ina);
        /* magic 5, version 2, pad 0, payload exactly RINA_ELEMS: else no payload
         * header, and ingress counts the datagram as malformed / bad shape. */
        transition select(hdr.ina.magic, hdr.ina.version, hdr.ina.pad, hdr.ina.elems) {
            (INA_MAGIC, INA_VERSION, 0, RINA_ELEMS): parse_payload;
            default: accept;
        }
    }
    state parse_payload {
        pkt.extract(hdr.payload);
        transition accept;
    }
}

control RinaIngress(inout headers_t hdr, inout ig_metadata_t ig_md,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Counter<bit<64>, bit<32>>(V_COUNT, CounterType_t.PACKETS) verdicts;

    /* ---- job table: Controller REGISTER -> JobEntry ---- */
    action set_job(bit<32> token_hi, bit<32> token_lo, bit<8> fan_in, bit<16> mcast_grp) {
        ig_md.token_hi = token_hi;
        ig_md.token_lo = token_lo;
        ig_md.fan_in = fan_in;
        ig_md.mcast_grp = mcast_grp;
    }
    table job_table {
        key = { hdr.ina.job : exact; }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* Controller::entriesJson "source_table": the endpoint the job registered
     * for each worker (Pipeline::fromMember). A contribution from anywhere
     * else is dropped unanswered, so knowing a job's token and a seq is not
     * enough to add to its sums; the RoCEv2 layout leaves the NIC from any
     * UDP port, so only its address is compared. */
    action set_source(bit<32> src_addr, bit<16> src_port) {
        ig_md.src_addr = src_addr;
        ig_md.src_port = src_port;
    }
    table source_table {
        key = { hdr.ina.job : exact; hdr.ina.worker : exact; }
        actions = { set_source; NoAction; }
        default_action = NoAction();
        size = 32768;   /* job_table size x kMaxFanIn */
    }

    /* ---- slot ownership: SlotAllocator / Pipeline::owner_ ---- */
    Register<bit<16>, bit<32>>(NUM_SLOTS) slot_owner;
    RegisterAction<bit<16>, bit<32>, bit<16>>(slot_owner) read_owner = {
        void apply(inout bit<16> value, out bit<16> rv) { rv = value; }
    };

    /* ---- per set: seq (SlotSet::seq / used) ---- */
    Register<bit<32>, bit<32>>(NUM_SETS) slot_seq;
    RegisterAction<bit<32>, bit<32>, bit<8>>(slot_seq) check_seq = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == hdr.ina.seq) {
                rv = SEQ_SAME;
            } else if (value == 0 || (int<32>)(value - hdr.ina.seq) < 0) {
                value = hdr.ina.seq;
                rv = SEQ_NEW;
            } else {
                rv = SEQ_STALE;
            }
        }
    };

    /* ---- per set: contributor bitmap (SlotSet::bitmap) ---- */
    Register<bit<32>, bit<32>>(NUM_SETS) slot_bitmap;
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_bitmap) bitmap_reset = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = 0;
            value = ig_md.worker_bit;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(slot_bitmap) bitmap_set = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | ig_md.worker_bit;
        }
    };

    /* ---- per set: contributor counter (SlotSet::count) ---- */
    Register<bit<8>, bit<32>>(NUM_SETS) slot_count;
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_count) count_reset = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = 1;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_count) count_add = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = value + 1;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_count) count_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };

    /* ---- per set: exponent max (SlotSet::exponent) ---- */
    Register<bit<8>, bit<32>>(NUM_SETS) slot_exponent;
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_exponent) exponent_reset = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = hdr.ina.exponent;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_exponent) exponent_max = {
        void apply(inout bit<8> value, out bit<8> rv) {
            if ((int<8>)hdr.ina.exponent > (int<8>)value) {
                value = hdr.ina.exponent;
            }
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(slot_exponent) exponent_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };

    /* ---- per set and element: the int32 sums (Pipeline::values_) ---- */
#define VALUE_REGISTER(i)                                                          \
    Register<int<32>, bit<32>>(NUM_SETS) slot_value_##i;                           \
    RegisterAction<int<32>, bit<32>, int<32>>(slot_value_##i) value_write_##i = {  \
        void apply(inout int<32> value, out int<32> rv) {                          \
            value = (int<32>)hdr.payload.v##i;                                     \
            rv = value;                                                            \
        }                                                                          \
    };                                                                             \
    RegisterAction<int<32>, bit<32>, int<32>>(slot_value_##i) value_add_##i = {    \
        void apply(inout int<32> value, out int<32> rv) {                          \
            value = value |+| (int<32>)hdr.payload.v##i;                           \
            rv = value;                                                            \
        }                                                                          \
    };                                                                             \
    RegisterAction<int<32>, bit<32>, int<32>>(slot_value_##i) value_read_##i = {   \
        void apply(inout int<32> value, out int<32> rv) { rv = value; }            \
    };
    RINA_FOR_EACH_ELEM(VALUE_REGISTER)

    action drop_with(bit<32> verdict) {
        verdicts.count(verdict);
        ig_dprsr_md.drop_ctl = 1;
    }

    action reply_to_sender() {
        bit<48> mac = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = mac;
        bit<32> ip = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = ip;
        bit<16> port = hdr.udp.src_port;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.udp.dst_port = port;
        hdr.udp.checksum = 0;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
    }

    action send_nack() {
        hdr.ina.type = INA_NACK;
        hdr.ina.flags = 0;
        hdr.ina.elems = 0;
        hdr.payload.setInvalid();
        hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES;
        hdr.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + INA_HEADER_BYTES;
        reply_to_sender();
        verdicts.count(V_NACK);
    }

    /* RoCEv2 -> native: the mapping of include/rina/ina_roce.h. */
    action roce_to_ina() {
        hdr.ina.setValid();
        hdr.ina.magic = INA_MAGIC;
        hdr.ina.version = INA_VERSION;
        hdr.ina.type = hdr.imm.type;
        hdr.ina.flags = hdr.imm.flags;
        hdr.ina.job = hdr.bth.dst_qp;
        hdr.ina.shadow = hdr.reth.va_shadow;
        hdr.ina.slot = hdr.reth.va_slot;
        hdr.ina.worker = hdr.imm.worker;
        hdr.ina.fan_in = hdr.imm.fan_in;
        hdr.ina.seq = hdr.reth.va_seq;
        hdr.ina.exponent = hdr.imm.exponent;
        hdr.ina.pad = 0;
        hdr.ina.elems = (hdr.reth.dma_len - 4)[17:2];
        hdr.ina.token_hi = hdr.reth.rkey;
        hdr.ina.token_lo = hdr.roce_token.token_lo;
        hdr.bridged.roce = 1;
        /* The native checks below see native lengths; the ICRC stays in the body. */
        hdr.udp.length = hdr.udp.length - (ROCE_HEADER_BYTES - INA_HEADER_BYTES) - ROCE_ICRC_BYTES;
        hdr.ipv4.total_len = hdr.ipv4.total_len - (ROCE_HEADER_BYTES - INA_HEADER_BYTES) - ROCE_ICRC_BYTES;
        hdr.bth.setInvalid();
        hdr.reth.setInvalid();
        hdr.imm.setInvalid();
        hdr.roce_token.setInvalid();
    }

    apply {
        hdr.bridged.setValid();
        hdr.bridged.job = 0;
        hdr.bridged.to_port = 0;
        hdr.bridged.port_worker = 0;
        hdr.bridged.roce = 0;
        hdr.bridged.pad = 0;
        if (hdr.bth.isValid()) {
            if (hdr.bth.solicited != 0 || hdr.bth.mig_req != 0 || hdr.bth.pad_count != 0 ||
                hdr.bth.tver != 0 || hdr.bth.dst_qp_hi != 0 || hdr.reth.va_zero != 0) {
                /* The PSN is the sending NIC's own count (a resent slice
                 * gets a new one): not checked, see ina_roce.h. */
                drop_with(V_MALFORMED);
                exit;
            }
            roce_to_ina();
        }
        if (!hdr.ina.isValid()) {
            ig_dprsr_md.drop_ctl = 1;   /* this program only aggregates */
            exit;
        }
        if (hdr.ina.magic != INA_MAGIC || hdr.ina.version != INA_VERSION || hdr.ina.pad != 0) {
            drop_with(V_MALFORMED);
            exit;
        }
        if (hdr.ina.type != INA_DATA && hdr.ina.type != INA_BCAST) {
            drop_with(V_UNEXPECTED_TYPE);
            exit;
        }
        if (!job_table.apply().hit) {
            drop_with(V_UNKNOWN_JOB);
            exit;
        }
        if (hdr.ina.token_hi != ig_md.token_hi || hdr.ina.token_lo != ig_md.token_lo) {
            drop_with(V_BAD_TOKEN);
            exit;
        }
        /* A port marker (DATA, elems 0, TO_PORT): the slice's port adds its
         * own values on the host; here it is a contribution of zeros, so
         * everything below (add, complete, resend) sees a full payload. */
        if (hdr.ina.type == INA_DATA && hdr.ina.elems == 0 &&
            (hdr.ina.flags & FLAG_TO_PORT) != 0 && !hdr.payload.isValid() &&
            hdr.udp.length == UDP_HEADER_BYTES + INA_HEADER_BYTES) {
            hdr.payload.setValid();
#define ZERO_VALUE(i) hdr.payload.v##i = 0;
            RINA_FOR_EACH_ELEM(ZERO_VALUE)
            hdr.ina.elems = RINA_ELEMS;
            hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES + (RINA_ELEMS * 4);
            hdr.ipv4.total_len = IPV4_HEADER_BYTES + hdr.udp.length;
        }
        if (!hdr.payload.isValid() || hdr.ina.fan_in != ig_md.fan_in ||
            hdr.ina.worker >= hdr.ina.fan_in ||
            hdr.udp.length != UDP_HEADER_BYTES + INA_HEADER_BYTES + (RINA_ELEMS * 4)) {
            drop_with(V_BAD_SHAPE);
            exit;
        }
        if (hdr.ina.slot >= NUM_SLOTS) {
            drop_with(V_BAD_SLOT);
            exit;
        }
        if (!source_table.apply().hit || hdr.ipv4.src_addr != ig_md.src_addr ||
            (hdr.bridged.roce == 0 && hdr.udp.src_port != ig_md.src_port)) {
            drop_with(V_BAD_SOURCE);
            exit;
        }
        if (read_owner.execute((bit<32>)hdr.ina.slot) != hdr.ina.job) {
            send_nack();
            exit;
        }
        ig_md.index = ((bit<32>)hdr.ina.slot << 1) | (bit<32>)hdr.ina.shadow;
        ig_md.worker_bit = (bit<32>)1 << hdr.ina.worker;

        ig_md.seq_state = check_seq.execute(ig_md.index);
        if (ig_md.seq_state == SEQ_STALE) {
            drop_with(V_STALE);
            exit;
        }
        /* BCAST is a fan-in-1 contribution: it always restarts the set. */
        bit<1> first = (ig_md.seq_state == SEQ_NEW || hdr.ina.type == INA_BCAST) ? 1w1 : 1w0;
        if (first == 1) {
            ig_md.old_bitmap = bitmap_reset.execute(ig_md.index);
        } else {
            ig_md.old_bitmap = bitmap_set.execute(ig_md.index);
        }
        ig_md.duplicate = (ig_md.old_bitmap & ig_md.worker_bit) != 0 ? 1w1 : 1w0;

        if (first == 1) {
            ig_md.count = count_reset.execute(ig_md.index);
        } else if (ig_md.duplicate == 1) {
            ig_md.count = count_read.execute(ig_md.index);
        } else {
            ig_md.count = count_add.execute(ig_md.index);
        }
        if (hdr.ina.type == INA_BCAST) {
            ig_md.count = ig_md.fan_in;
        }
        ig_md.complete = ig_md.count == ig_md.fan_in ? 1w1 : 1w0;

        if (ig_md.duplicate == 1 && ig_md.complete == 0) {
            drop_with(V_DUP_PENDING);
            exit;
        }

        if (first == 1) {
            hdr.ina.exponent = exponent_reset.execute(ig_md.index);
        } else if (ig_md.duplicate == 1) {
            hdr.ina.exponent = exponent_read.execute(ig_md.index);
        } else {
            hdr.ina.exponent = exponent_max.execute(ig_md.index);
        }

        /* Values: write, add, or (duplicate of a complete set) read back. */
        ig_md.overflow = 0;
#define VALUE_STEP(i)                                                              \
        if (first == 1) {                                                          \
            hdr.payload.v##i = (bit<32>)value_write_##i.execute(ig_md.index);      \
        } else if (ig_md.duplicate == 1) {                                         \
            hdr.payload.v##i = (bit<32>)value_read_##i.execute(ig_md.index);       \
        } else {                                                                   \
            hdr.payload.v##i = (bit<32>)value_add_##i.execute(ig_md.index);        \
        }                                                                          \
        if (hdr.payload.v##i == 0x7fffffff || hdr.payload.v##i == 0x80000000) {    \
            ig_md.overflow = 1;                                                    \
        }
        RINA_FOR_EACH_ELEM(VALUE_STEP)

        if (ig_md.complete == 0) {
            drop_with(first == 1 ? V_FIRST : V_ADDED);
            exit;
        }
        hdr.ina.flags = ig_md.overflow == 1 ? FLAG_OVERFLOW : 4w0;
        hdr.ina.worker = 0;
        hdr.udp.checksum = 0;
        if (ig_md.duplicate == 1) {
            /* Loss recovery: the stored result, to this sender only. */
            hdr.ina.type = INA_RESULT;
            hdr.ina.flags = hdr.ina.flags | FLAG_RESEND;
            reply_to_sender();
            verdicts.count(V_DUP_RESENT);
            exit;
        }
        verdicts.count(hdr.ina.type == INA_BCAST ? V_BCAST : V_COMPLETED);
        hdr.ina.type = INA_RESULT;
        /* One replica per member (rid = worker index); egress rewrites the
         * destination. The acknowledgement-only copies (TO_PORT's other
         * members, a BCAST's root) are left to the egress member table:
         * here they carry the values, which hosts accept as an
         * acknowledgement too (switchd and rina_v1model.p4 send the header
         * only). */
        ig_tm_md.mcast_grp_a = ig_md.mcast_grp;
        hdr.bridged.job = hdr.ina.job;
    }
}

control RinaIngressDeparser(packet_out pkt, inout headers_t hdr, in ig_metadata_t ig_md,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

parser RinaEgressParser(packet_in pkt, out headers_t hdr, out eg_metadata_t eg_md,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.ina);
        transition select(hdr.ina.elems) {
            RINA_ELEMS: parse_payload;
            default: accept;
        }
    }
    state parse_payload {
        pkt.extract(hdr.payload);
        transition accept;
    }
}

control RinaEgress(inout headers_t hdr, inout eg_metadata_t eg_md,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    /* Controller::entriesJson "Egress.member_table". */
    action set_member(bit<32> dst_addr, bit<16> dst_port) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.udp.dst_port = dst_port;
        hdr.udp.src_port = INA_UDP_PORT;
    }
    table member_table {
        key = {
            hdr.bridged.job : exact;
            eg_intr_md.egress_rid : exact;
        }
        actions = { set_member; NoAction; }
        default_action = NoAction();
        size = 8192;
    }
    /* Native -> RoCEv2 for jobs that speak it. The answer keeps the
     * member's registered UDP port (member_table): the host's UC client
     * reads answers from its UDP socket, not through its NIC's RDMA engine
     * (an RDMA receive would need the member's QPN, address and R_Key).
     * The ICRC trailer is still in the packet body. */
    action ina_to_roce() {
        hdr.bth.setValid();
        hdr.bth.opcode = ROCE_OP_UC_WRITE_IMM;
        hdr.bth.solicited = 0;
        hdr.bth.mig_req = 0;
        hdr.bth.pad_count = 0;
        hdr.bth.tver = 0;
        hdr.bth.pkey = ROCE_PKEY;
        hdr.bth.reserved0 = 0;
        hdr.bth.dst_qp_hi = 0;
        hdr.bth.dst_qp = hdr.ina.job;
        hdr.bth.ack_req = 0;
        hdr.bth.reserved1 = 0;
        hdr.bth.psn = hdr.ina.seq[23:0];
        hdr.reth.setValid();
        hdr.reth.va_zero = 0;
        hdr.reth.va_shadow = hdr.ina.shadow;
        hdr.reth.va_slot = hdr.ina.slot;
        hdr.reth.va_seq = hdr.ina.seq;
        hdr.reth.rkey = hdr.ina.token_hi;
        hdr.reth.dma_len = 4 + ((bit<32>)hdr.ina.elems << 2);
        hdr.imm.setValid();
        hdr.imm.type = hdr.ina.type;
        hdr.imm.flags = hdr.ina.flags;
        hdr.imm.worker = hdr.ina.worker;
        hdr.imm.fan_in = hdr.ina.fan_in;
        hdr.imm.exponent = hdr.ina.exponent;
        hdr.roce_token.setValid();
        hdr.roce_token.token_lo = hdr.ina.token_lo;
        hdr.ina.setInvalid();
        hdr.udp.length = hdr.udp.length + (ROCE_HEADER_BYTES - INA_HEADER_BYTES) + ROCE_ICRC_BYTES;
        hdr.ipv4.total_len = hdr.ipv4.total_len + (ROCE_HEADER_BYTES - INA_HEADER_BYTES) + ROCE_ICRC_BYTES;
    }

    apply {
        if (hdr.bridged.job != 0) {
            member_table.apply();
        }
        if (hdr.bridged.roce == 1) {
            ina_to_roce();
        }
        hdr.bridged.setInvalid();
    }
}

control RinaEgressDeparser(packet_out pkt, inout headers_t hdr, in eg_metadata_t eg_md,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        hdr.ipv4.hdr_checksum = ipv4_checksum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
            hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        pkt.emit(hdr);
    }
}

Pipeline(RinaIngressParser(), RinaIngress(), RinaIngressDeparser(),
         RinaEgressParser(), RinaEgress(), RinaEgressDeparser()) pipe;

Switch(pipe) main;
