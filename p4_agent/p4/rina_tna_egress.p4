/* rina_tna.p4's egress: on the recirculation port, values 0..31 (pass 1);
 * on an answer's port, each replica addressed and shaped (pass 2). */

control RinaEgress(inout headers_t hdr, inout eg_metadata_t eg_md,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    RINA_ELEMS_0_31(TNA_VALUE_REGISTER)

    /* Controller::entriesJson "member_table": rid = worker index. */
    action set_member(bit<32> dst_addr, bit<16> dst_port) {
        hdr.ipv4.dst_addr = dst_addr;
        hdr.udp.dst_port = dst_port;
    }
    table member_table {
        key = {
            hdr.pass.job : exact;
            eg_intr_md.egress_rid : exact;
        }
        actions = { set_member; NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    action to_sender() {
        hdr.ipv4.dst_addr = hdr.pass.reply_addr;
        hdr.udp.dst_port = hdr.pass.reply_udp;
    }

    /* The members' MAC addresses (filled by the controller). */
    action set_neighbor(bit<48> mac) {
        hdr.ethernet.dst_addr = mac;
    }
    table neighbor_table {
        key = { hdr.ipv4.dst_addr : exact; }
        actions = { set_neighbor; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    action acknowledgement_only() {
        hdr.payload.setInvalid();
        hdr.ina.elems = 0;
    }
    action full_lengths() {
        hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES + RINA_ELEMS * 4;
        hdr.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + INA_HEADER_BYTES + RINA_ELEMS * 4;
    }
    action header_lengths() {
        hdr.udp.length = UDP_HEADER_BYTES + INA_HEADER_BYTES;
        hdr.ipv4.total_len = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + INA_HEADER_BYTES;
    }

    /* Native -> RoCEv2 for a job that speaks it. The answer goes to the
     * member's registered UDP port (its client reads answers from its
     * socket); the ICRC trailer is still in the body, not recomputed. */
    action ina_to_roce(bit<32> dma_len) {
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
        hdr.reth.dma_len = dma_len;
        hdr.imm.setValid();
        hdr.imm.type = hdr.ina.type;
        hdr.imm.flags = hdr.ina.flags;
        hdr.imm.worker = hdr.ina.worker;
        hdr.imm.fan_in = hdr.ina.fan_in;
        hdr.imm.exponent = hdr.ina.exponent;
        hdr.roce_token.setValid();
        hdr.roce_token.token_lo = hdr.ina.token_lo;
        hdr.ina.setInvalid();
    }
    action roce_lengths() {
        hdr.udp.length = hdr.udp.length + (ROCE_HEADER_BYTES - INA_HEADER_BYTES + ROCE_ICRC_BYTES);
        hdr.ipv4.total_len =
            hdr.ipv4.total_len + (ROCE_HEADER_BYTES - INA_HEADER_BYTES + ROCE_ICRC_BYTES);
    }

    apply {
        if (hdr.pass.pass == PASS_VALUES_LO) {
            /* Pass 1 on the recirculation port: values 0..31. */
            if (hdr.payload.isValid()) {
                bit<1> saturated = 0;
                RINA_ELEMS_0_31(TNA_VALUE_STEP)
                if (saturated == 1) {
                    hdr.pass.overflow = 1;
                }
            }
            hdr.pass.pass = PASS_VALUES_HI;
            exit;
        }
        /* An answer, per replica. */
        if (hdr.pass.answer == ANSWER_MEMBERS) {
            if (!member_table.apply().hit) {
                eg_dprsr_md.drop_ctl = 1;
                exit;
            }
            /* TO_PORT: the port gets the sum, the others an acknowledgement.
             * BCAST: the others get the values, the root an acknowledgement. */
            if ((hdr.pass.to_port == 1 &&
                 eg_intr_md.egress_rid != (ReplicationId_t)hdr.pass.port_worker) ||
                (hdr.pass.bcast == 1 &&
                 eg_intr_md.egress_rid == (ReplicationId_t)hdr.pass.root_worker)) {
                acknowledgement_only();
            }
        } else {
            to_sender();
        }
        if (!neighbor_table.apply().hit) {
            eg_dprsr_md.drop_ctl = 1;
            exit;
        }
        if (hdr.payload.isValid()) {
            full_lengths();
        } else {
            header_lengths();
        }
        if (hdr.pass.roce == 1) {
            if (hdr.payload.isValid()) {
                ina_to_roce(4 + RINA_ELEMS * 4);
            } else {
                ina_to_roce(4);
            }
            roce_lengths();
        }
        hdr.pass.setInvalid();
    }
}
