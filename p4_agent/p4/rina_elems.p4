/* Per-element repetition for the INA payload, shared by rina_v1model.p4 and
 * rina_tna.p4 (the C preprocessor that p4c runs expands these).
 * RINA_FOR_EACH_ELEM(X) applies X to 0 .. RINA_ELEMS-1; RINA_ELEMS is 64
 * (switchd's default --payload) or 32. */
#ifndef RINA_ELEMS_P4_
#define RINA_ELEMS_P4_

#define RINA_ELEMS_0_31(X) \
    X(0)  X(1)  X(2)  X(3)  X(4)  X(5)  X(6)  X(7)  \
    X(8)  X(9)  X(10) X(11) X(12) X(13) X(14) X(15) \
    X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) \
    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
#define RINA_ELEMS_32_63(X) \
    X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) \
    X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) \
    X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) \
    X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63)

#if RINA_ELEMS == 64
#define RINA_FOR_EACH_ELEM(X) RINA_ELEMS_0_31(X) RINA_ELEMS_32_63(X)
#elif RINA_ELEMS == 32
#define RINA_FOR_EACH_ELEM(X) RINA_ELEMS_0_31(X)
#else
#error "RINA_ELEMS must be 32 or 64"
#endif

#define RINA_DECLARE_ELEM_FIELD(i) bit<32> v##i;

#endif
