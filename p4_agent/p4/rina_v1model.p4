/* rina_v1model.p4: the INA aggregation pipeline for BMv2 simple_switch.
 *
 * NOT COMPILED HERE: the development machines have no p4c/BMv2. Written to
 * P4_16 + v1model.p4 and kept in step with p4_agent/switchd/pipeline.cc,
 * which runs the same semantics in software and is what the tests exercise.
 * p4_agent/README.md maps every register, table and action below to its
 * switchd counterpart.
 *
 * Per slot set (index = slot * 2 + shadow): seq, used, bitmap, count,
 * exponent max, overflow flag, port worker, and RINA_ELEMS int32 sums.
 * Control plane (rina-switchd's controller, or a P4Runtime client fed by
 * "rina-switchctl ADDR ENTRIES job=J"): job_table, source_table,
 * member_table, slot_owner, and one multicast group per job (replica rid =
 * worker index).
 */
#include <core.p4>
#include <v1model.p4>

#define RINA_ELEMS 64
#include "rina_headers.p4"

#define NUM_SLOTS 8192
#define NUM_SETS 16384

error { InaBadMagic, InaBadVersion, InaBadPad }

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
    bit<1>  first;       /* this contribution writes instead of adding */
    bit<1>  overflow;
    bit<1>  to_port;
    bit<8>  port_worker;
    bit<1>  multicast;   /* a RESULT replicated to the job's members */
    bit<1>  bcast;       /* ... of a BCAST: its root gets an acknowledgement */
    bit<8>  root_worker;
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
        transition select(hdr.ipv4.protocol) {
            IPPROTO_UDP: parse_udp;
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
        pkt.extract(hdr.ina);
        verify(hdr.ina.magic == INA_MAGIC, error.InaBadMagic);
        verify(hdr.ina.version == INA_VERSION, error.InaBadVersion);
        verify(hdr.ina.pad == 0, error.InaBadPad);
        transition select(hdr.ina.elems) {
            RINA_ELEMS: parse_payload;
            default: accept;   /* rejected in ingress as a bad shape */
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
    /* Slot state: Pipeline::SlotSet and Pipeline::values_ in switchd. */
    register<bit<16>>(NUM_SLOTS) slot_owner;
    register<bit<32>>(NUM_SETS)  slot_seq;
    register<bit<1>>(NUM_SETS)   slot_used;
    register<bit<32>>(NUM_SETS)  slot_bitmap;
    register<bit<8>>(NUM_SETS)   slot_count;
    register<bit<8>>(NUM_SETS)   slot_exponent;
    register<bit<1>>(NUM_SETS)   slot_overflow;
    register<bit<1>>(NUM_SETS)   slot_to_port;
    register<bit<8>>(NUM_SETS)   slot_port_worker;
#define DECLARE_VALUE_REG(i) register<bit<32>>(NUM_SETS) slot_value_##i;
    RINA_FOR_EACH_ELEM(DECLARE_VALUE_REG)

    counter(V_COUNT, CounterType.packets) verdicts;

    action drop_with(bit<32> verdict) {
        verdicts.count(verdict);
        mark_to_drop(sm);
    }

    action set_job(bit<32> token_hi, bit<32> token_lo, bit<8> fan_in, bit<16> mcast_grp) {
        meta.token_hi = token_hi;
        meta.token_lo = token_lo;
        meta.fan_in = fan_in;
        meta.mcast_grp = mcast_grp;
    }

    /* Controller: Controller::handle(REGISTER) -> JobEntry (token, fan-in, group). */
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
        meta.src_addr = src_addr;
        meta.src_port = src_port;
    }
    table source_table {
        key = { hdr.ina.job : exact; hdr.ina.worker : exact; }
        actions = { set_source; NoAction; }
        default_action = NoAction();
        size = 32768;   /* job_table size x kMaxFanIn */
    }

    /* Unicast back to the sender (NACK, stored result for a duplicate). */
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
        sm.egress_spec = sm.ingress_port;
        meta.multicast = 0;
    }

    /* Pipeline::emitNack */
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

    apply {
        if (!hdr.ina.isValid()) {
            mark_to_drop(sm);   /* this program only aggregates */
            return;
        }
        if (sm.parser_error != error.NoError) {
            drop_with(V_MALFORMED);
            return;
        }
        if (hdr.ina.type != INA_DATA && hdr.ina.type != INA_BCAST) {
            drop_with(V_UNEXPECTED_TYPE);
            return;
        }
        if (!job_table.apply().hit) {
            drop_with(V_UNKNOWN_JOB);
            return;
        }
        if (hdr.ina.token_hi != meta.token_hi || hdr.ina.token_lo != meta.token_lo) {
            drop_with(V_BAD_TOKEN);
            return;
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
            hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES + (RINA_ELEMS << 2);
            hdr.ipv4.total_len = IPV4_HEADER_BYTES + hdr.udp.length;
        }
        /* decode()'s length rules, and the switch's payload size and fan-in. */
        if (!hdr.payload.isValid() || hdr.ina.fan_in != meta.fan_in ||
            hdr.ina.worker >= hdr.ina.fan_in ||
            hdr.udp.length != UDP_HEADER_BYTES + INA_HEADER_BYTES + (hdr.ina.elems << 2)) {
            drop_with(V_BAD_SHAPE);
            return;
        }
        if ((bit<32>)hdr.ina.slot >= NUM_SLOTS) {
            drop_with(V_BAD_SLOT);
            return;
        }
        if (!source_table.apply().hit || hdr.ipv4.src_addr != meta.src_addr ||
            hdr.udp.src_port != meta.src_port) {
            drop_with(V_BAD_SOURCE);
            return;
        }
        bit<16> owner;
        slot_owner.read(owner, (bit<32>)hdr.ina.slot);
        if (owner != hdr.ina.job) {
            send_nack();
            return;
        }
        meta.index = ((bit<32>)hdr.ina.slot << 1) | (bit<32>)hdr.ina.shadow;

        /* Seq of the set: older -> stale; newer (or unused) -> reset. */
        bit<32> stored_seq;
        bit<1> used;
        slot_seq.read(stored_seq, meta.index);
        slot_used.read(used, meta.index);
        if (used == 1 && stored_seq != hdr.ina.seq) {
            bit<32> diff = hdr.ina.seq - stored_seq;
            if (diff[31:31] == 1) {   /* (int32)(seq - stored) < 0 */
                drop_with(V_STALE);
                return;
            }
        }
        bit<32> bitmap;
        bit<8> count;
        if (used == 0 || stored_seq != hdr.ina.seq) {
            slot_seq.write(meta.index, hdr.ina.seq);
            slot_used.write(meta.index, 1);
            slot_overflow.write(meta.index, 0);
            slot_to_port.write(meta.index, 0);
            bitmap = 0;
            count = 0;
        } else {
            slot_bitmap.read(bitmap, meta.index);
            slot_count.read(count, meta.index);
        }
        bit<32> worker_bit = (bit<32>)1 << hdr.ina.worker;

        if (hdr.ina.type == INA_DATA && (bitmap & worker_bit) != 0) {
            if (count != meta.fan_in) {
                drop_with(V_DUP_PENDING);
                return;
            }
            /* Complete: the stored result goes back to this sender only. */
#define READ_VALUE(i) slot_value_##i.read(hdr.payload.v##i, meta.index);
            RINA_FOR_EACH_ELEM(READ_VALUE)
            bit<1> stored_overflow;
            slot_overflow.read(stored_overflow, meta.index);
            slot_exponent.read(hdr.ina.exponent, meta.index);
            slot_to_port.read(meta.to_port, meta.index);
            slot_port_worker.read(meta.port_worker, meta.index);
            hdr.ina.type = INA_RESULT;
            hdr.ina.flags = FLAG_RESEND | (stored_overflow == 1 ? FLAG_OVERFLOW : 4w0);
            if (meta.to_port == 1 && hdr.ina.worker != meta.port_worker) {
                hdr.payload.setInvalid();   /* acknowledgement only */
                hdr.ina.elems = 0;
                hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES;
                hdr.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + INA_HEADER_BYTES;
            }
            hdr.ina.worker = 0;
            reply_to_sender();
            verdicts.count(V_DUP_RESENT);
            return;
        }

        /* First contribution writes, later ones add (saturating, flagged). */
        meta.first = (count == 0 || hdr.ina.type == INA_BCAST) ? 1w1 : 1w0;
        meta.overflow = 0;
        bit<32> stored;
        int<32> sum;
#define AGGREGATE_VALUE(i)                                                   \
        slot_value_##i.read(stored, meta.index);                             \
        sum = (int<32>)stored |+| (int<32>)hdr.payload.v##i;                 \
        if (meta.first == 0 && sum != (int<32>)stored + (int<32>)hdr.payload.v##i) { \
            meta.overflow = 1;                                               \
        }                                                                    \
        if (meta.first == 1) {                                               \
            sum = (int<32>)hdr.payload.v##i;                                 \
        }                                                                    \
        slot_value_##i.write(meta.index, (bit<32>)sum);                      \
        hdr.payload.v##i = (bit<32>)sum;
        RINA_FOR_EACH_ELEM(AGGREGATE_VALUE)

        bitmap = (meta.first == 1) ? worker_bit : (bitmap | worker_bit);
        count = (hdr.ina.type == INA_BCAST) ? meta.fan_in : count + 1;
        slot_bitmap.write(meta.index, bitmap);
        slot_count.write(meta.index, count);

        bit<8> exponent;
        slot_exponent.read(exponent, meta.index);
        if (meta.first == 1 || (int<8>)hdr.ina.exponent > (int<8>)exponent) {
            exponent = hdr.ina.exponent;
            slot_exponent.write(meta.index, exponent);
        }
        bit<1> of;
        slot_overflow.read(of, meta.index);
        of = of | meta.overflow;
        slot_overflow.write(meta.index, of);
        if ((hdr.ina.flags & FLAG_TO_PORT) != 0) {
            slot_to_port.write(meta.index, 1);
            slot_port_worker.write(meta.index, hdr.ina.worker);
        }
        slot_to_port.read(meta.to_port, meta.index);
        slot_port_worker.read(meta.port_worker, meta.index);

        if (count != meta.fan_in) {
            drop_with(meta.first == 1 ? V_FIRST : V_ADDED);
            return;
        }
        /* Complete (or BCAST): RESULT to every member of the job's group. */
        verdicts.count(hdr.ina.type == INA_BCAST ? V_BCAST : V_COMPLETED);
        meta.bcast = (hdr.ina.type == INA_BCAST) ? 1w1 : 1w0;
        meta.root_worker = hdr.ina.worker;
        hdr.ina.type = INA_RESULT;
        hdr.ina.flags = (of == 1) ? FLAG_OVERFLOW : 4w0;
        hdr.ina.exponent = exponent;
        hdr.ina.worker = 0;
        hdr.udp.checksum = 0;
        meta.multicast = 1;
        sm.mcast_grp = meta.mcast_grp;
    }
}

control RinaEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    /* Controller::entriesJson "Egress.member_table": rid = worker index. */
    action set_member(bit<32> dst_addr, bit<16> dst_port) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.udp.dst_port = dst_port;
        hdr.udp.src_port = INA_UDP_PORT;
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
    apply {
        if (meta.multicast == 1 && hdr.ina.isValid()) {
            member_table.apply();
            /* TO_PORT: the port gets the sum, the others an acknowledgement.
             * BCAST: the others get the values, the root an acknowledgement. */
            if ((meta.to_port == 1 && (bit<8>)sm.egress_rid != meta.port_worker) ||
                (meta.bcast == 1 && (bit<8>)sm.egress_rid == meta.root_worker)) {
                hdr.payload.setInvalid();
                hdr.ina.elems = 0;
                hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES;
                hdr.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + INA_HEADER_BYTES;
            }
        }
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
