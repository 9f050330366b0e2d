/* rina_tna.p4's parsers and deparsers. Every state matches at most 32 bits
 * and extracts a fixed-size header, so Tofino's parser can split the long
 * extractions (the payload's 256 bytes) over its states: the RoCEv2 headers
 * take three states (BTH with its opcode and partition key, RETH with the
 * write's length, then ImmDt and the token word), the payload two halves. */

struct ig_metadata_t {
    bit<32> token_hi;     /* job_table */
    bit<32> token_lo;
    bit<8>  fan_in;
    bit<32> src_addr;     /* source_table: the worker's registered endpoint */
    bit<16> src_port;
    bit<32> worker_bit;   /* worker_table: 1 << worker (worker < fan_in) */
    bit<16> length_words; /* elems * 4 */
    bit<16> length_rest;  /* udp.length - elems * 4: 32 when they agree */
    bit<32> dma_words;    /* RoCEv2: dma_len - 4 */
    bit<32> token_diff_hi;
    bit<32> token_diff_lo;
    bit<8>  fan_in_diff;
    bit<32> src_diff;
    bit<16> port_diff;
    bit<16> owner_diff;
    bit<16> owner;
    bit<8>  used;         /* the set's used flag before this datagram */
    bit<32> stored_seq;
    bit<32> seq_age;      /* seq - stored_seq: negative when the datagram is older */
    bit<32> old_bitmap;
    bit<32> duplicate;    /* old_bitmap & worker_bit */
    bit<8>  count;        /* contributors (+ 0x80 once a BCAST completed the set) */
    bit<8>  count_rest;   /* fan_in - count: 0 or negative when complete */
    bit<16> port_code;    /* 0x100 | worker: TO_PORT, this worker the port */
    bit<16> port_state;   /* as stored: 0 or 0x100 | the port worker */
    bit<16> port_match;   /* port_state ^ port_code: 0 when this worker is the port */
    bit<8>  exponent;
    bit<8>  stored_overflow;
    bit<1>  marker;
    bit<1>  is_new;
}

struct eg_metadata_t { }

parser RinaIngressParser(packet_in pkt, out headers_t hdr, out ig_metadata_t ig_md,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        ig_md.token_hi = 0;
        ig_md.token_lo = 0;
        ig_md.fan_in = 0;
        ig_md.src_addr = 0;
        ig_md.src_port = 0;
        ig_md.worker_bit = 0;
        ig_md.length_words = 0;
        ig_md.length_rest = 0;
        ig_md.dma_words = 0;
        ig_md.token_diff_hi = 0;
        ig_md.token_diff_lo = 0;
        ig_md.fan_in_diff = 0;
        ig_md.src_diff = 0;
        ig_md.port_diff = 0;
        ig_md.owner_diff = 0;
        ig_md.owner = 0;
        ig_md.used = 0;
        ig_md.stored_seq = 0;
        ig_md.seq_age = 0;
        ig_md.old_bitmap = 0;
        ig_md.duplicate = 0;
        ig_md.count = 0;
        ig_md.count_rest = 0;
        ig_md.port_code = 0;
        ig_md.port_state = 0;
        ig_md.port_match = 0;
        ig_md.exponent = 0;
        ig_md.stored_overflow = 0;
        ig_md.marker = 0;
        ig_md.is_new = 0;
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            RECIRC_PORT: parse_pass;
            default: parse_ethernet;
        }
    }
    state parse_pass {
        pkt.extract(hdr.pass);
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
        /* No options, not a fragment, UDP (26 bits). */
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (5, 0, 0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        /* Recirculated: native by now (pass 1 translated RoCEv2). */
        transition select(ig_intr_md.ingress_port, hdr.udp.dst_port) {
            (RECIRC_PORT, _): parse_ina;
            (_, INA_UDP_PORT): parse_ina;
            (_, ROCE_UDP_PORT): parse_bth;
            default: accept;
        }
    }
    state parse_bth {
        pkt.extract(hdr.bth);
        transition select(hdr.bth.opcode, hdr.bth.pkey) {
            (ROCE_OP_UC_WRITE_IMM, ROCE_PKEY): parse_reth;
            default: accept;   /* malformed: ingress drops it */
        }
    }
    state parse_reth {
        pkt.extract(hdr.reth);
        transition parse_imm;
    }
    state parse_imm {
        pkt.extract(hdr.imm);
        pkt.extract(hdr.roce_token);
        transition select(hdr.reth.dma_len) {
            4 + RINA_ELEMS * 4: parse_payload;
            default: accept;
        }
    }
    state parse_ina {
        /* A datagram shorter than the header fails here (ingress: truncated). */
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
        pkt.extract(hdr.pass);      /* ingress always bridges it */
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.ina);       /* native by now: pass 1 translated RoCEv2 */
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
