/* rina_tna.p4's ingress: pass 1 (a datagram from a port: checks, the set's
 * state, the plan for the values and the answer) and pass 2 (recirculated:
 * values 32..63, then the answer). Names follow rina_v1model.p4 and
 * switchd/pipeline.cc (p4_agent/README.md maps them). */

control RinaIngress(inout headers_t hdr, inout ig_metadata_t ig_md,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Counter<bit<64>, bit<32>>(V_COUNT, CounterType_t.PACKETS) verdicts;
    Counter<bit<64>, bit<32>>(M_COUNT, CounterType_t.PACKETS) malformed;
    Counter<bit<64>, bit<32>>(NUM_JOBS, CounterType_t.PACKETS) job_activity;

    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) set_index;

    /* ---- tables the controller fills (rina-switchctl ENTRIES) ---- */
    action set_job(bit<32> token_hi, bit<32> token_lo, bit<8> fan_in, bit<16> mcast_grp) {
        ig_md.token_hi = token_hi;
        ig_md.token_lo = token_lo;
        ig_md.fan_in = fan_in;
        hdr.pass.job = mcast_grp;
    }
    table job_table {
        key = { hdr.ina.job : exact; }
        actions = { set_job; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    action set_source(bit<32> src_addr, bit<16> src_port) {
        ig_md.src_addr = src_addr;
        ig_md.src_port = src_port;
    }
    table source_table {
        key = { hdr.ina.job : exact; hdr.ina.worker : exact; }
        actions = { set_source; NoAction; }
        default_action = NoAction();
        size = 32768;
    }

    /* 1 << worker for worker < fan_in (a miss: bad_worker). A table, not a
     * shift by a run-time amount, which Tofino's ALUs do not have. */
    action set_worker_bit(bit<32> bit_) {
        ig_md.worker_bit = bit_;
    }
    table worker_table {
        key = { hdr.ina.worker : exact; hdr.ina.fan_in : range; }
        actions = { set_worker_bit; NoAction; }
        default_action = NoAction();
        size = 32;
        const entries = {
#define WORKER_ENTRY(i) (i, (i + 1) .. INA_MAX_FAN_IN) : set_worker_bit(32w1 << i);
            RINA_ELEMS_0_31(WORKER_ENTRY)
        }
    }

    /* ---- per slot and per set (Pipeline::owner_, Pipeline::SlotSet) ---- */
    Register<bit<16>, bit<16>>(NUM_SLOTS) slot_owner;
    RegisterAction<bit<16>, bit<16>, bit<16>>(slot_owner) read_owner = {
        void apply(inout bit<16> value, out bit<16> rv) { rv = value; }
    };

    /* used: the controller clears it when it grants the slot. */
    Register<bit<8>, bit<16>>(NUM_SETS) slot_used;
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_used) mark_used = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            value = 1;
        }
    };

    /* seq: one condition per action. */
    Register<bit<32>, bit<16>>(NUM_SETS) slot_seq;
    RegisterAction<bit<32>, bit<16>, bit<32>>(slot_seq) seq_write = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = hdr.ina.seq;
            rv = value;
        }
    };
    /* A newer seq takes the set: (int32)(seq - stored) > 0, as switchd's claim. */
    RegisterAction<bit<32>, bit<16>, bit<32>>(slot_seq) seq_check = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if ((int<32>)(hdr.ina.seq - value) > 0) {
                value = hdr.ina.seq;
            }
        }
    };

    Register<bit<32>, bit<16>>(NUM_SETS) slot_bitmap;
    RegisterAction<bit<32>, bit<16>, bit<32>>(slot_bitmap) bitmap_reset = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = 0;
            value = ig_md.worker_bit;
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(slot_bitmap) bitmap_set = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            value = value | ig_md.worker_bit;
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(slot_bitmap) bitmap_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    /* count: contributors, plus 0x80 once a BCAST completed the set (which
     * keeps it at or above any fan-in: complete iff fan_in - count <= 0 in
     * 8 bits). */
    Register<bit<8>, bit<16>>(NUM_SETS) slot_count;
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_count) count_first = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = 1;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_count) count_bcast = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = 0x81;
            rv = value;
        }
    };
    /* A BCAST on its own seq: completes the set unless it is complete. */
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_count) count_bcast_claim = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (value < ig_md.fan_in) {
                value = 0x81;
            }
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_count) count_add = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = value + 1;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_count) count_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };

    Register<bit<8>, bit<16>>(NUM_SETS) slot_exponent;
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_exponent) exponent_write = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = hdr.ina.exponent;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_exponent) exponent_max = {
        void apply(inout bit<8> value, out bit<8> rv) {
            if ((int<8>)hdr.ina.exponent > (int<8>)value) {
                value = hdr.ina.exponent;
            }
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_exponent) exponent_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };

    /* TO_PORT and its port worker: 0, or 0x100 | worker. */
    Register<bit<16>, bit<16>>(NUM_SETS) slot_port;
    RegisterAction<bit<16>, bit<16>, bit<16>>(slot_port) port_reset = {
        void apply(inout bit<16> value, out bit<16> rv) {
            value = 0;
            rv = value;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(slot_port) port_set = {
        void apply(inout bit<16> value, out bit<16> rv) {
            value = ig_md.port_code;
            rv = value;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(slot_port) port_read = {
        void apply(inout bit<16> value, out bit<16> rv) { rv = value; }
    };

    /* A saturated sum seen by an earlier pass (conservative, see the top). */
    Register<bit<8>, bit<16>>(NUM_SETS) slot_overflow;
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_overflow) overflow_reset = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = 0;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_overflow) overflow_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<8>, bit<16>, bit<8>>(slot_overflow) overflow_set = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = 1;
            rv = value;
        }
    };

    /* ---- values 32..63: pass 2 ---- */
#define TNA_VALUE_REGISTER(i)                                                           \
    Register<int<32>, bit<16>>(NUM_SETS) slot_value_##i;                                \
    RegisterAction<int<32>, bit<16>, int<32>>(slot_value_##i) value_write_##i = {       \
        void apply(inout int<32> value, out int<32> rv) {                               \
            value = (int<32>)hdr.payload.v##i;                                          \
            rv = value;                                                                 \
        }                                                                               \
    };                                                                                  \
    RegisterAction<int<32>, bit<16>, int<32>>(slot_value_##i) value_add_##i = {         \
        void apply(inout int<32> value, out int<32> rv) {                               \
            value = value |+| (int<32>)hdr.payload.v##i;                                \
            rv = value;                                                                 \
        }                                                                               \
    };                                                                                  \
    RegisterAction<int<32>, bit<16>, int<32>>(slot_value_##i) value_read_##i = {        \
        void apply(inout int<32> value, out int<32> rv) { rv = value; }                 \
    };                                                                                  \
    RegisterAction<int<32>, bit<16>, int<32>>(slot_value_##i) value_zero_##i = {        \
        void apply(inout int<32> value, out int<32> rv) {                               \
            value = 0;                                                                  \
            rv = value;                                                                 \
        }                                                                               \
    };
    RINA_ELEMS_32_63(TNA_VALUE_REGISTER)

    /* ---- actions: each writes a field once ---- */
    action count_verdict(bit<32> verdict) {
        verdicts.count(verdict);
    }
    action drop_with(bit<32> verdict) {
        verdicts.count(verdict);
        ig_dprsr_md.drop_ctl = 1;
    }
    action drop_malformed(bit<32> why) {
        malformed.count(why);
        verdicts.count(V_MALFORMED);
        ig_dprsr_md.drop_ctl = 1;
    }
    action measure_length() {
        ig_md.length_words = hdr.ina.elems << 2;
    }
    action measure_rest() {
        ig_md.length_rest = hdr.udp.length - ig_md.length_words;
    }
    action compare_job() {
        ig_md.token_diff_hi = hdr.ina.token_hi ^ ig_md.token_hi;
        ig_md.token_diff_lo = hdr.ina.token_lo ^ ig_md.token_lo;
        ig_md.fan_in_diff = hdr.ina.fan_in ^ ig_md.fan_in;
    }
    action compare_source() {
        ig_md.src_diff = hdr.ipv4.src_addr ^ ig_md.src_addr;
        ig_md.port_diff = hdr.udp.src_port ^ ig_md.src_port;
    }
    action compare_owner() {
        ig_md.owner_diff = ig_md.owner ^ hdr.ina.job;
    }
    action compare_seq() {
        ig_md.seq_age = hdr.ina.seq - ig_md.stored_seq;
    }
    action find_duplicate() {
        ig_md.duplicate = ig_md.old_bitmap & ig_md.worker_bit;
    }
    action count_missing() {
        ig_md.count_rest = ig_md.fan_in - ig_md.count;
    }
    action make_port_code() {
        ig_md.port_code = 8w1 ++ hdr.ina.worker;
    }
    action compare_port() {
        ig_md.port_match = ig_md.port_state ^ ig_md.port_code;
    }

    /* RoCEv2 -> native (include/rina/ina_roce.h), in two steps: the
     * payload count needs a subtraction and then a shift. */
    action roce_measure() {
        ig_md.dma_words = hdr.reth.dma_len - 4;
    }
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
        hdr.ina.elems = ig_md.dma_words[17:2];
        hdr.ina.token_hi = hdr.reth.rkey;
        hdr.ina.token_lo = hdr.roce_token.token_lo;
        hdr.pass.roce = 1;
        /* Native lengths for the checks; the ICRC stays in the body. */
        hdr.udp.length = hdr.udp.length - (ROCE_HEADER_BYTES - INA_HEADER_BYTES + ROCE_ICRC_BYTES);
        hdr.ipv4.total_len =
            hdr.ipv4.total_len - (ROCE_HEADER_BYTES - INA_HEADER_BYTES + ROCE_ICRC_BYTES);
        hdr.bth.setInvalid();
        hdr.reth.setInvalid();
        hdr.imm.setInvalid();
        hdr.roce_token.setInvalid();
    }

    /* Every answer leaves from the address the datagram was sent to. */
    action answer_from_switch() {
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.diffserv = 0;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = ANSWER_IP_FLAGS;
        hdr.ipv4.ttl = ANSWER_TTL;
        hdr.udp.src_port = INA_UDP_PORT;
        hdr.udp.checksum = 0;
        hdr.pass.reply_port = ig_intr_md.ingress_port;
        hdr.pass.reply_addr = ig_md.src_addr;
        hdr.pass.reply_udp = ig_md.src_port;
    }

    /* Straight to the answer's egress (no values involved). */
    action reply_now() {
        hdr.pass.pass = PASS_ANSWER;
        hdr.pass.answer = ANSWER_SENDER;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
    }
    action to_values() {
        hdr.pass.pass = PASS_VALUES_LO;
        ig_tm_md.ucast_egress_port = RECIRC_PORT;
    }

    action send_nack() {
        hdr.ina.type = INA_NACK;
        hdr.ina.flags = 0;
        hdr.ina.elems = 0;   /* the egress parser reads no payload */
        hdr.payload.setInvalid();
        hdr.pass.ack = 1;
        verdicts.count(V_NACK);
    }

    /* Pass 1: the datagram came from a port. */
    apply {
        if (hdr.pass.isValid()) {
            /* Pass 2 (recirculated): values 32..63, then the answer. */
            if (hdr.payload.isValid()) {
                bit<1> saturated = 0;
#define TNA_VALUE_STEP(i)                                                                   \
                if (hdr.pass.values == VALUES_WRITE) {                                      \
                    hdr.payload.v##i = (bit<32>)value_write_##i.execute(hdr.pass.index);    \
                } else if (hdr.pass.values == VALUES_ADD) {                                 \
                    hdr.payload.v##i = (bit<32>)value_add_##i.execute(hdr.pass.index);      \
                } else if (hdr.pass.values == VALUES_READ) {                                \
                    hdr.payload.v##i = (bit<32>)value_read_##i.execute(hdr.pass.index);     \
                } else if (hdr.pass.values == VALUES_ZERO) {                                \
                    hdr.payload.v##i = (bit<32>)value_zero_##i.execute(hdr.pass.index);     \
                }                                                                           \
                if (hdr.payload.v##i == 0x7fffffff || hdr.payload.v##i == 0x80000000) {     \
                    saturated = 1;                                                          \
                }
                RINA_ELEMS_32_63(TNA_VALUE_STEP)
                if (saturated == 1 || hdr.pass.overflow == 1) {
                    hdr.pass.overflow = 1;
                    overflow_set.execute(hdr.pass.index);
                    hdr.ina.flags = hdr.ina.flags | FLAG_OVERFLOW;
                }
            }
            if (hdr.pass.answer == ANSWER_NONE) {
                ig_dprsr_md.drop_ctl = 1;
            } else if (hdr.pass.answer == ANSWER_SENDER) {
                hdr.pass.pass = PASS_ANSWER;
                ig_tm_md.ucast_egress_port = hdr.pass.reply_port;
            } else {
                hdr.pass.pass = PASS_ANSWER;
                ig_tm_md.mcast_grp_a = hdr.pass.job;
            }
            exit;
        }

        hdr.pass.setValid();
        hdr.pass.pass = PASS_STATE;
        hdr.pass.values = VALUES_NONE;
        hdr.pass.answer = ANSWER_NONE;
        hdr.pass.overflow = 0;
        hdr.pass.index = 0;
        hdr.pass.job = 0;
        hdr.pass.port_worker = 0;
        hdr.pass.root_worker = 0;
        hdr.pass.to_port = 0;
        hdr.pass.bcast = 0;
        hdr.pass.roce = 0;
        hdr.pass.ack = 0;
        hdr.pass.pad0 = 0;
        hdr.pass.reply_port = 0;
        hdr.pass.reply_addr = 0;
        hdr.pass.reply_udp = 0;

        if (hdr.bth.isValid()) {
            if (!hdr.reth.isValid() || hdr.bth.solicited != 0 || hdr.bth.mig_req != 0 ||
                hdr.bth.pad_count != 0 || hdr.bth.tver != 0 || hdr.bth.dst_qp_hi != 0 ||
                hdr.reth.va_zero != 0) {
                /* The PSN is the sending NIC's own count: not checked. */
                drop_with(V_MALFORMED);
                exit;
            }
            roce_measure();
            roce_to_ina();
        }
        if (!hdr.udp.isValid() ||
            (hdr.udp.dst_port != INA_UDP_PORT && hdr.pass.roce == 0)) {
            ig_dprsr_md.drop_ctl = 1;   /* not an INA datagram */
            exit;
        }
        /* decode(), in its order. */
        if (!hdr.ina.isValid() || hdr.udp.length < UDP_HEADER_BYTES + INA_HEADER_BYTES) {
            drop_malformed(M_TRUNCATED);
            exit;
        }
        if (hdr.ina.magic != INA_MAGIC) {
            drop_malformed(M_BAD_MAGIC);
            exit;
        }
        if (hdr.ina.version != INA_VERSION) {
            drop_malformed(M_BAD_VERSION);
            exit;
        }
        if (hdr.ina.pad != 0) {
            drop_malformed(M_BAD_PAD);
            exit;
        }
        if (hdr.ina.elems > INA_MAX_ELEMS) {
            drop_malformed(M_OVERSIZED);
            exit;
        }
        measure_length();
        measure_rest();
        if (ig_md.length_rest != UDP_HEADER_BYTES + INA_HEADER_BYTES) {
            drop_malformed(M_BAD_LENGTH);
            exit;
        }
        if (hdr.ina.type == 0 || hdr.ina.type > INA_TYPE_MAX) {
            drop_malformed(M_BAD_TYPE);
            exit;
        }
        if (hdr.ina.job == 0) {
            drop_malformed(M_BAD_JOB);
            exit;
        }
        if (hdr.ina.fan_in == 0 || hdr.ina.fan_in > INA_MAX_FAN_IN) {
            drop_malformed(M_BAD_FANIN);
            exit;
        }
        if (!worker_table.apply().hit) {
            drop_malformed(M_BAD_WORKER);
            exit;
        }
        ig_md.marker = (hdr.ina.type == INA_DATA && hdr.ina.elems == 0 &&
                        (hdr.ina.flags & FLAG_TO_PORT) != 0) ? 1w1 : 1w0;
        if ((hdr.ina.type == INA_DATA || hdr.ina.type == INA_BCAST) && hdr.ina.elems == 0 &&
            ig_md.marker == 0) {
            drop_malformed(M_EMPTY_PAYLOAD);
            exit;
        }
        /* Pipeline::process. */
        if (hdr.ina.type != INA_DATA && hdr.ina.type != INA_BCAST) {
            drop_with(V_UNEXPECTED_TYPE);
            exit;
        }
        if (!job_table.apply().hit) {
            drop_with(V_UNKNOWN_JOB);
            exit;
        }
        compare_job();
        if (ig_md.token_diff_hi != 0 || ig_md.token_diff_lo != 0) {
            drop_with(V_BAD_TOKEN);
            exit;
        }
        if ((!hdr.payload.isValid() && ig_md.marker == 0) || ig_md.fan_in_diff != 0) {
            drop_with(V_BAD_SHAPE);
            exit;
        }
        if (hdr.ina.slot >= NUM_SLOTS) {
            drop_with(V_BAD_SLOT);
            exit;
        }
        if (!source_table.apply().hit) {
            drop_with(V_BAD_SOURCE);
            exit;
        }
        /* A RoCEv2 datagram leaves its NIC from any UDP port: its address counts. */
        compare_source();
        if (ig_md.src_diff != 0 || (hdr.pass.roce == 0 && ig_md.port_diff != 0)) {
            drop_with(V_BAD_SOURCE);
            exit;
        }
        answer_from_switch();
        ig_md.owner = read_owner.execute((bit<16>)hdr.ina.slot);
        compare_owner();
        if (ig_md.owner_diff != 0) {
            send_nack();
            reply_now();
            exit;
        }
        job_activity.count((bit<32>)hdr.ina.job);
        hdr.pass.index = set_index.get({hdr.ina.slot, hdr.ina.shadow});

        /* Pipeline::claimSet. */
        ig_md.used = mark_used.execute(hdr.pass.index);
        if (ig_md.used == 0) {
            ig_md.stored_seq = seq_write.execute(hdr.pass.index);
        } else {
            ig_md.stored_seq = seq_check.execute(hdr.pass.index);
        }
        compare_seq();
        if (ig_md.used != 0 && ig_md.seq_age[31:31] == 1) {
            drop_with(V_STALE);
            exit;
        }
        ig_md.is_new = (ig_md.used == 0 || ig_md.seq_age != 0) ? 1w1 : 1w0;
        make_port_code();
        hdr.ina.worker = 0;   /* every answer's; source_table read it already */

        if (hdr.ina.type == INA_BCAST) {
            /* Pipeline::broadcast. */
            if (ig_md.is_new == 1) {
                ig_md.old_bitmap = bitmap_reset.execute(hdr.pass.index);
                ig_md.count = count_bcast.execute(hdr.pass.index);
            } else {
                ig_md.old_bitmap = bitmap_read.execute(hdr.pass.index);
                ig_md.count = count_bcast_claim.execute(hdr.pass.index);
            }
            count_missing();
            if (ig_md.is_new == 0 && (ig_md.count_rest[7:7] == 1 || ig_md.count_rest == 0)) {
                /* Complete: a header-only RESULT (RESEND) to the root. */
                ig_md.exponent = exponent_read.execute(hdr.pass.index);
                ig_md.stored_overflow = overflow_read.execute(hdr.pass.index);
                hdr.ina.type = INA_RESULT;
                hdr.ina.flags = FLAG_RESEND;
                if (ig_md.stored_overflow != 0) {
                    hdr.ina.flags = FLAG_RESEND | FLAG_OVERFLOW;
                }
                hdr.ina.exponent = ig_md.exponent;
                hdr.ina.elems = 0;
                hdr.payload.setInvalid();
                hdr.pass.ack = 1;
                count_verdict(V_BCAST);
                reply_now();
                exit;
            }
            exponent_write.execute(hdr.pass.index);
            port_reset.execute(hdr.pass.index);
            overflow_reset.execute(hdr.pass.index);
            count_verdict(V_BCAST);
            hdr.ina.type = INA_RESULT;
            hdr.ina.flags = 0;
            hdr.pass.bcast = 1;
            hdr.pass.root_worker = ig_md.port_code[7:0];
            hdr.pass.values = VALUES_WRITE;
            hdr.pass.answer = ANSWER_MEMBERS;
            to_values();
            exit;
        }

        /* DATA: Pipeline::contribute. */
        if (ig_md.is_new == 1) {
            ig_md.old_bitmap = bitmap_reset.execute(hdr.pass.index);
        } else {
            ig_md.old_bitmap = bitmap_set.execute(hdr.pass.index);
        }
        find_duplicate();
        if (ig_md.is_new == 1) {
            ig_md.count = count_first.execute(hdr.pass.index);
        } else if (ig_md.duplicate != 0) {
            ig_md.count = count_read.execute(hdr.pass.index);
        } else {
            ig_md.count = count_add.execute(hdr.pass.index);
        }
        count_missing();
        bit<1> complete = (ig_md.count_rest[7:7] == 1 || ig_md.count_rest == 0) ? 1w1 : 1w0;
        if (ig_md.duplicate != 0 && complete == 0) {
            drop_with(V_DUP_PENDING);
            exit;
        }
        if (ig_md.is_new == 1 || ig_md.duplicate != 0) {
            if (ig_md.is_new == 1 && (hdr.ina.flags & FLAG_TO_PORT) != 0) {
                ig_md.port_state = port_set.execute(hdr.pass.index);
            } else if (ig_md.is_new == 1) {
                ig_md.port_state = port_reset.execute(hdr.pass.index);
            } else {
                ig_md.port_state = port_read.execute(hdr.pass.index);
            }
        } else if ((hdr.ina.flags & FLAG_TO_PORT) != 0) {
            ig_md.port_state = port_set.execute(hdr.pass.index);
        } else {
            ig_md.port_state = port_read.execute(hdr.pass.index);
        }
        if (ig_md.duplicate != 0) {
            /* The stored result to this sender alone, never larger than the
             * datagram that asked: a header-only marker whose answer would be
             * the sum gets nothing. */
            compare_port();
            bool full = ig_md.port_state[8:8] == 0 || ig_md.port_match == 0;
            if (full && ig_md.marker == 1) {
                drop_with(V_DUP_SHORT);
                exit;
            }
            ig_md.exponent = exponent_read.execute(hdr.pass.index);
            ig_md.stored_overflow = overflow_read.execute(hdr.pass.index);
            hdr.ina.type = INA_RESULT;
            hdr.ina.flags = FLAG_RESEND;
            if (ig_md.stored_overflow != 0) {
                hdr.ina.flags = FLAG_RESEND | FLAG_OVERFLOW;
            }
            hdr.ina.exponent = ig_md.exponent;
            count_verdict(V_DUP_RESENT);
            if (!full) {
                hdr.ina.elems = 0;   /* acknowledgement only */
                hdr.payload.setInvalid();
                hdr.pass.ack = 1;
                reply_now();
                exit;
            }
            hdr.pass.values = VALUES_READ;
            hdr.pass.answer = ANSWER_SENDER;
            to_values();
            exit;
        }
        if (ig_md.is_new == 1) {
            ig_md.exponent = exponent_write.execute(hdr.pass.index);
            overflow_reset.execute(hdr.pass.index);
        } else {
            ig_md.exponent = exponent_max.execute(hdr.pass.index);
            /* An earlier contribution saturated: the result says so even
             * where later ones brought the sum back. */
            ig_md.stored_overflow = overflow_read.execute(hdr.pass.index);
            if (ig_md.stored_overflow != 0) {
                hdr.pass.overflow = 1;
            }
        }
        hdr.ina.exponent = ig_md.exponent;
        /* The values: the first contribution writes, later ones add; a port
         * marker contributes zeros (its first writes them; later ones only
         * read the sum when they complete it). */
        if (ig_md.marker == 1) {
            hdr.payload.setValid();
            hdr.ina.elems = RINA_ELEMS;
            if (ig_md.is_new == 1) {
                hdr.pass.values = VALUES_ZERO;
            } else if (complete == 1) {
                hdr.pass.values = VALUES_READ;
            }
        } else if (ig_md.is_new == 1) {
            hdr.pass.values = VALUES_WRITE;
        } else {
            hdr.pass.values = VALUES_ADD;
        }
        if (complete == 0) {
            count_verdict(ig_md.is_new == 1 ? V_FIRST : V_ADDED);
            if (hdr.pass.values == VALUES_NONE) {
                ig_dprsr_md.drop_ctl = 1;
                exit;
            }
            to_values();   /* and dropped after pass 2 */
            exit;
        }
        /* Complete: RESULT to every member (TO_PORT: the sum to the port,
         * acknowledgements to the others). */
        count_verdict(V_COMPLETED);
        hdr.ina.type = INA_RESULT;
        hdr.ina.flags = 0;
        hdr.pass.to_port = ig_md.port_state[8:8];
        hdr.pass.port_worker = ig_md.port_state[7:0];
        hdr.pass.answer = ANSWER_MEMBERS;
        to_values();
    }
}
