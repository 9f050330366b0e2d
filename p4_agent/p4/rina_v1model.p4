/* rina_v1model.p4: the INA aggregation pipeline for BMv2 simple_switch.
 *
 * The same semantics as p4_agent/switchd/pipeline.cc (rina-switchd), answer
 * for answer: the differential test (tests/p4/) sends the same datagram
 * sequences through both and compares every answer byte for byte.
 * p4_agent/README.md maps every register, table and action below to its
 * switchd counterpart and names the p4c and BMv2 versions it was checked with.
 *
 * One-armed: datagrams addressed to the switch (its MAC, IPv4 address and
 * INA_UDP_PORT) come in on a port, every answer leaves by the same port, from
 * that address, to a registered member (its MAC from neighbor_table).
 *
 * Per slot set (index = slot * 2 + shadow): seq, used, bitmap, count,
 * complete, exponent max, overflow, TO_PORT and its port worker, and
 * RINA_ELEMS int32 sums. Control plane (rina-bmv2ctl, or any controller fed
 * by "rina-switchctl ADDR ENTRIES job=J"): job_table, source_table,
 * member_table, neighbor_table, slot_owner (and slot_used cleared for a
 * granted slot's two sets), one multicast group per job (replica rid =
 * worker index).
 */
#include <core.p4>
#include <v1model.p4>

#define RINA_ELEMS 64
#include "rina_headers.p4"

#define NUM_SLOTS 8192
#define NUM_SETS 16384
#define NUM_JOBS 65536

struct headers_t {
    ethernet_h    ethernet;
    ipv4_h        ipv4;
    udp_h         udp;
    ina_h         ina;
    ina_payload_h payload;
}

struct metadata_t {
    bit<32> src_addr;    /* source_table: the worker's registered endpoint */
    bit<16> src_port;
    bit<32> token_hi;    /* job_table: the 64-bit token in two words */
    bit<32> token_lo;
    bit<8>  fan_in;
    bit<16> mcast_grp;
    bit<32> index;       /* slot * 2 + shadow */
    bit<1>  marker;      /* a header-only port marker (contributes zeros) */
    bit<1>  answer;      /* this packet leaves as an answer */
    bit<1>  multicast;   /* ... replicated to the job's members */
    bit<1>  bcast;       /* ... of a BCAST: its root gets an acknowledgement */
    bit<8>  root_worker;
    bit<1>  to_port;     /* ... of a TO_PORT slice: the others get one */
    bit<8>  port_worker;
    bit<1>  payload;     /* ... of a set with a contribution that was not a
                            port marker (else every member gets a header-only
                            answer: the sum of markers alone is zero) */
}

parser RinaParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* No options, not a fragment, UDP: anything else is not ours. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (5, 0, 0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        /* A datagram shorter than the header fails here (PacketTooShort):
         * ingress counts it as truncated. Every other rule of decode() is
         * checked in ingress, in decode()'s order. */
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

control RinaVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control RinaIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t sm) {
    /* Slot state: Pipeline::owner_, Pipeline::SlotSet and Pipeline::values_. */
    register<bit<16>>(NUM_SLOTS) slot_owner;
    register<bit<32>>(NUM_SETS)  slot_seq;
    register<bit<1>>(NUM_SETS)   slot_used;
    register<bit<32>>(NUM_SETS)  slot_bitmap;
    register<bit<8>>(NUM_SETS)   slot_count;
    register<bit<1>>(NUM_SETS)   slot_complete;
    register<bit<8>>(NUM_SETS)   slot_exponent;
    register<bit<1>>(NUM_SETS)   slot_overflow;
    register<bit<1>>(NUM_SETS)   slot_to_port;
    register<bit<8>>(NUM_SETS)   slot_port_worker;
    register<bit<1>>(NUM_SETS)   slot_payload;   /* SlotSet::payload */
#define DECLARE_VALUE_REG(i) register<bit<32>>(NUM_SETS) slot_value_##i;
    RINA_FOR_EACH_ELEM(DECLARE_VALUE_REG)

    /* PipelineStats: verdicts and malformed (decode errors) by switchd's
     * indices; job_activity counts a job's datagrams past the ownership
     * check (Pipeline::lastActivityMs: the controller reads it for ESA). */
    counter(V_COUNT, CounterType.packets) verdicts;
    counter(M_COUNT, CounterType.packets) malformed;
    counter(NUM_JOBS, CounterType.packets) job_activity;

    action drop_with(bit<32> verdict) {
        verdicts.count(verdict);
        mark_to_drop(sm);
    }

    action drop_malformed(bit<32> why) {
        malformed.count(why);
        drop_with(V_MALFORMED);
    }

    /* Controller REGISTER -> JobEntry (token, fan-in, group = job id). */
    action set_job(bit<32> token_hi, bit<32> token_lo, bit<8> fan_in, bit<16> mcast_grp) {
        meta.token_hi = token_hi;
        meta.token_lo = token_lo;
        meta.fan_in = fan_in;
        meta.mcast_grp = mcast_grp;
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
     * enough to add to its sums. */
    action set_source(bit<32> src_addr, bit<16> src_port) {
        meta.src_addr = src_addr;
        meta.src_port = src_port;
    }
    table source_table {
        key = { hdr.ina.job : exact; hdr.ina.worker : exact; }
        actions = { set_source; NoAction; }
        default_action = NoAction();
        size = 32768;   /* job_table size x kMaxFanIn */
    }

    /* Every answer leaves from the address the datagram was sent to (the
     * switch's), with the fixed IPv4 fields of an answer; egress sets the
     * destination MAC, the lengths and the payload count. */
    action answer_from_switch() {
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.diffserv = 0;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = ANSWER_IP_FLAGS;
        hdr.ipv4.ttl = ANSWER_TTL;
        hdr.udp.src_port = INA_UDP_PORT;
        hdr.udp.checksum = 0;
        meta.answer = 1;
    }

    /* To the sender alone, i.e. its registered endpoint (the source check
     * passed): NACK, a stored result resent, a BCAST's acknowledgement. */
    action reply_to_sender() {
        bit<32> sender_addr = hdr.ipv4.src_addr;
        bit<16> sender_port = hdr.udp.src_port;
        answer_from_switch();
        hdr.ipv4.dst_addr = sender_addr;
        hdr.udp.dst_port = sender_port;
        sm.egress_spec = sm.ingress_port;
    }

    /* One replica per member of the job's group; egress addresses it. */
    action reply_to_members() {
        answer_from_switch();
        meta.multicast = 1;
        sm.mcast_grp = meta.mcast_grp;
    }

    /* Pipeline::emitNack: the datagram's header, type NACK, flags 0, no payload. */
    action send_nack() {
        hdr.ina.type = INA_NACK;
        hdr.ina.flags = 0;
        hdr.payload.setInvalid();
        reply_to_sender();
        verdicts.count(V_NACK);
    }

    /* Pipeline::broadcast: a fan-in-1 contribution, multicast once; a
     * resend of a complete set gets a header-only RESULT (RESEND). */
    action store_broadcast(bit<32> worker_bit) {
        slot_bitmap.write(meta.index, worker_bit);
        slot_count.write(meta.index, 1);
        slot_complete.write(meta.index, 1);
        slot_exponent.write(meta.index, hdr.ina.exponent);
        slot_overflow.write(meta.index, 0);
        slot_to_port.write(meta.index, 0);
        slot_port_worker.write(meta.index, 0);
        slot_payload.write(meta.index, 1);
        verdicts.count(V_BCAST);
        meta.bcast = 1;
        meta.root_worker = hdr.ina.worker;
        hdr.ina.type = INA_RESULT;
        hdr.ina.flags = 0;
        hdr.ina.worker = 0;
        reply_to_members();
    }

    /* The stored result (or an acknowledgement) to the sender alone. */
    action resend_result(bit<1> overflow, bit<8> exponent) {
        hdr.ina.type = INA_RESULT;
        hdr.ina.flags = FLAG_RESEND | (overflow == 1 ? FLAG_OVERFLOW : 4w0);
        hdr.ina.worker = 0;
        hdr.ina.exponent = exponent;
        reply_to_sender();
    }

    apply {
        bit<16> owner = 0;
        bit<32> stored_seq = 0;
        bit<1> used = 0;
        bit<32> seq_diff = 0;
        bit<32> bitmap = 0;
        bit<8> count = 0;
        bit<1> complete = 0;
        bit<8> exponent = EXPONENT_ZERO;
        bit<1> overflow = 0;
        bit<1> to_port = 0;
        bit<8> port_worker = 0;
        bit<1> payload = 0;
        bit<32> worker_bit = 0;
        bit<1> first = 0;
        bit<32> stored = 0;
        int<32> sum = 0;
        /* decode(): the rules of ina_wire.h in its order; the datagram is
         * the UDP payload, udp.length - 8 bytes. Then Pipeline::process's
         * checks, in its order. */
        if (!hdr.udp.isValid() || hdr.udp.dst_port != INA_UDP_PORT) {
            mark_to_drop(sm);   /* not an INA datagram: this program only aggregates */
        } else if (!hdr.ina.isValid() || hdr.udp.length < UDP_HEADER_BYTES + INA_HEADER_BYTES) {
            drop_malformed(M_TRUNCATED);
        } else if (hdr.ina.magic != INA_MAGIC) {
            drop_malformed(M_BAD_MAGIC);
        } else if (hdr.ina.version != INA_VERSION) {
            drop_malformed(M_BAD_VERSION);
        } else if (hdr.ina.pad != 0) {
            drop_malformed(M_BAD_PAD);
        } else if (hdr.ina.elems > INA_MAX_ELEMS) {
            drop_malformed(M_OVERSIZED);
        } else if (hdr.udp.length != UDP_HEADER_BYTES + INA_HEADER_BYTES + (hdr.ina.elems << 2)) {
            drop_malformed(M_BAD_LENGTH);
        } else if (hdr.ina.type == 0 || hdr.ina.type > INA_TYPE_MAX) {
            drop_malformed(M_BAD_TYPE);
        } else if (hdr.ina.job == 0) {
            drop_malformed(M_BAD_JOB);
        } else if (hdr.ina.fan_in == 0 || hdr.ina.fan_in > INA_MAX_FAN_IN) {
            drop_malformed(M_BAD_FANIN);
        } else if (hdr.ina.worker >= hdr.ina.fan_in) {
            drop_malformed(M_BAD_WORKER);
        } else if ((hdr.ina.type == INA_DATA || hdr.ina.type == INA_BCAST) &&
                   hdr.ina.elems == 0 &&
                   (hdr.ina.type != INA_DATA || (hdr.ina.flags & FLAG_TO_PORT) == 0)) {
            /* Only a port marker (DATA, TO_PORT) may come without payload. */
            drop_malformed(M_EMPTY_PAYLOAD);
        } else if (hdr.ina.type != INA_DATA && hdr.ina.type != INA_BCAST) {
            drop_with(V_UNEXPECTED_TYPE);
        } else if (!job_table.apply().hit) {
            drop_with(V_UNKNOWN_JOB);
        } else if (hdr.ina.token_hi != meta.token_hi || hdr.ina.token_lo != meta.token_lo) {
            drop_with(V_BAD_TOKEN);
        } else if ((!hdr.payload.isValid() && hdr.ina.elems != 0) ||
                   hdr.ina.fan_in != meta.fan_in) {
            /* The payload is exactly RINA_ELEMS (parsed), or none: a port marker. */
            drop_with(V_BAD_SHAPE);
        } else if ((bit<32>)hdr.ina.slot >= NUM_SLOTS) {
            drop_with(V_BAD_SLOT);
        } else if (!source_table.apply().hit || hdr.ipv4.src_addr != meta.src_addr ||
                   hdr.udp.src_port != meta.src_port) {
            drop_with(V_BAD_SOURCE);
        } else {
            slot_owner.read(owner, (bit<32>)hdr.ina.slot);
            if (owner != hdr.ina.job) {
                send_nack();
            } else {
                job_activity.count((bit<32>)hdr.ina.job);
                meta.marker = hdr.ina.elems == 0 ? 1w1 : 1w0;
                meta.index = ((bit<32>)hdr.ina.slot << 1) | (bit<32>)hdr.ina.shadow;
                /* Pipeline::claimSet: an older seq is stale; a newer one
                 * (or an unused set) resets the set. */
                slot_seq.read(stored_seq, meta.index);
                slot_used.read(used, meta.index);
                seq_diff = hdr.ina.seq - stored_seq;
                if (used == 1 && stored_seq != hdr.ina.seq && seq_diff[31:31] == 1) {
                    drop_with(V_STALE);
                } else {
                    if (used == 1 && stored_seq == hdr.ina.seq) {
                        slot_bitmap.read(bitmap, meta.index);
                        slot_count.read(count, meta.index);
                        slot_complete.read(complete, meta.index);
                        slot_exponent.read(exponent, meta.index);
                        slot_overflow.read(overflow, meta.index);
                        slot_to_port.read(to_port, meta.index);
                        slot_port_worker.read(port_worker, meta.index);
                        slot_payload.read(payload, meta.index);
                    }
                    slot_used.write(meta.index, 1);
                    slot_seq.write(meta.index, hdr.ina.seq);
                    worker_bit = (bit<32>)1 << hdr.ina.worker;
                    if (hdr.ina.type == INA_BCAST) {
                        if (complete == 1) {
                            hdr.payload.setInvalid();
                            resend_result(overflow, exponent);
                            verdicts.count(V_BCAST);
                        } else {
                            if (hdr.payload.isValid()) {
#define STORE_VALUE(i) slot_value_##i.write(meta.index, hdr.payload.v##i);
                                RINA_FOR_EACH_ELEM(STORE_VALUE)
                            }
                            store_broadcast(worker_bit);
                        }
                    } else if ((bitmap & worker_bit) != 0) {
                        /* DATA, a duplicate. Complete: the stored result to
                         * this sender alone, never larger than the datagram
                         * that asked (a header-only marker whose answer would
                         * be the sum gets nothing; a set of port markers
                         * alone answers header-only). */
                        bool full = payload == 1 &&
                                    (to_port == 0 || hdr.ina.worker == port_worker);
                        if (complete == 0) {
                            drop_with(V_DUP_PENDING);
                        } else if (full && meta.marker == 1) {
                            drop_with(V_DUP_SHORT);
                        } else {
                            if (!full) {
                                hdr.payload.setInvalid();   /* acknowledgement only */
                            } else if (hdr.payload.isValid()) {
#define READ_VALUE(i) slot_value_##i.read(hdr.payload.v##i, meta.index);
                                RINA_FOR_EACH_ELEM(READ_VALUE)
                            }
                            resend_result(overflow, exponent);
                            verdicts.count(V_DUP_RESENT);
                        }
                    } else {
                        /* DATA. Pipeline::contribute: the first writes, later
                         * ones add, saturating; a saturated sum (the wrapped
                         * one differs) flags OVERFLOW. A port marker
                         * contributes zeros. */
                        if (!hdr.payload.isValid()) {
                            hdr.payload.setValid();
#define ZERO_VALUE(i) hdr.payload.v##i = 0;
                            RINA_FOR_EACH_ELEM(ZERO_VALUE)
                        }
                        first = count == 0 ? 1w1 : 1w0;
                        if (hdr.payload.isValid()) {
#define AGGREGATE_VALUE(i)                                                         \
                            slot_value_##i.read(stored, meta.index);               \
                            sum = (int<32>)stored |+| (int<32>)hdr.payload.v##i;   \
                            if (first == 0 &&                                      \
                                sum != (int<32>)stored + (int<32>)hdr.payload.v##i) { \
                                overflow = 1;                                      \
                            }                                                      \
                            if (first == 1) {                                      \
                                sum = (int<32>)hdr.payload.v##i;                   \
                            }                                                      \
                            slot_value_##i.write(meta.index, (bit<32>)sum);        \
                            hdr.payload.v##i = (bit<32>)sum;
                            RINA_FOR_EACH_ELEM(AGGREGATE_VALUE)
                        }
                        if (meta.marker == 0) {
                            payload = 1;
                        }
                        bitmap = bitmap | worker_bit;
                        count = count + 1;
                        if (first == 1 || (int<8>)hdr.ina.exponent > (int<8>)exponent) {
                            exponent = hdr.ina.exponent;
                        }
                        if ((hdr.ina.flags & FLAG_TO_PORT) != 0) {
                            to_port = 1;
                            port_worker = hdr.ina.worker;
                        }
                        if (count >= meta.fan_in) {
                            complete = 1;
                        }
                        slot_bitmap.write(meta.index, bitmap);
                        slot_count.write(meta.index, count);
                        slot_complete.write(meta.index, complete);
                        slot_exponent.write(meta.index, exponent);
                        slot_overflow.write(meta.index, overflow);
                        slot_to_port.write(meta.index, to_port);
                        slot_port_worker.write(meta.index, port_worker);
                        slot_payload.write(meta.index, payload);
                        if (count < meta.fan_in) {
                            drop_with(first == 1 ? V_FIRST : V_ADDED);
                        } else {
                            /* Complete: RESULT to every member of the job's
                             * group (TO_PORT: the sum to the port, an
                             * acknowledgement to the others; port markers
                             * alone: an acknowledgement to every member). */
                            verdicts.count(V_COMPLETED);
                            meta.to_port = to_port;
                            meta.port_worker = port_worker;
                            meta.payload = payload;
                            hdr.ina.type = INA_RESULT;
                            hdr.ina.flags = overflow == 1 ? FLAG_OVERFLOW : 4w0;
                            hdr.ina.worker = 0;
                            hdr.ina.exponent = exponent;
                            reply_to_members();
                        }
                    }
                }
            }
        }
    }
}

control RinaEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    /* Controller::entriesJson "RinaEgress.member_table": rid = worker index. */
    action set_member(bit<32> dst_addr, bit<16> dst_port) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.udp.dst_port = dst_port;
    }
    table member_table {
        key = {
            sm.mcast_grp : exact;
            sm.egress_rid : exact;
        }
        actions = { set_member; NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    /* The members' MAC addresses (the L2 knowledge a top-of-rack switch
     * has; filled by the controller, not part of a job's entries). */
    action set_neighbor(bit<48> mac) {
        hdr.ethernet.dst_addr = mac;
    }
    table neighbor_table {
        key = { hdr.ipv4.dst_addr : exact; }
        actions = { set_neighbor; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        if (meta.answer == 0 || !hdr.ina.isValid()) {
            mark_to_drop(sm);
            return;
        }
        if (meta.multicast == 1) {
            if (!member_table.apply().hit) {
                mark_to_drop(sm);
                return;
            }
            /* TO_PORT: the port gets the sum, the others an acknowledgement.
             * BCAST: the others get the values, the root an acknowledgement.
             * Port markers alone: everyone an acknowledgement. */
            if ((meta.bcast == 0 && meta.payload == 0) ||
                (meta.to_port == 1 && sm.egress_rid != (bit<16>)meta.port_worker) ||
                (meta.bcast == 1 && sm.egress_rid == (bit<16>)meta.root_worker)) {
                hdr.payload.setInvalid();
            }
        }
        if (!neighbor_table.apply().hit) {
            mark_to_drop(sm);
            return;
        }
        if (hdr.payload.isValid()) {
            hdr.ina.elems = RINA_ELEMS;
            hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES + RINA_ELEMS * 4;
        } else {
            hdr.ina.elems = 0;
            hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES;
        }
        hdr.ipv4.total_len = IPV4_HEADER_BYTES + hdr.udp.length;
        /* Nothing after the datagram (an Ethernet pad of the request). */
        truncate((bit<32>)(ETHERNET_HEADER_BYTES + hdr.ipv4.total_len));
    }
}

control RinaComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RinaDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
        pkt.emit(hdr.payload);
    }
}

V1Switch(RinaParser(), RinaVerifyChecksum(), RinaIngress(), RinaEgress(),
         RinaComputeChecksum(), RinaDeparser()) main;
