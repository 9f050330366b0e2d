#!/usr/bin/env bash
# compile_test.sh v1model|tna SOURCE_DIR OUT_DIR
# v1model: p4c-bm2-ss compiles p4_agent/p4/rina_v1model.p4 into
# OUT_DIR/rina_v1model.json (the BMv2 tests run it); tna: p4test type-checks
# rina_tna.p4 against the TNA include files. Either must exit 0 with no
# warning at all. Skipped (77) without the compiler.
set -u
kind=$1 src=$2 out=$3
. "$(dirname "$0")/p4_tools.sh"
p4dir=$src/p4_agent/p4
mkdir -p "$out"
log=$out/compile-$kind.log
case $kind in
  v1model)
    p4_need p4c-bm2-ss
    rm -f "$out/rina_v1model.json"
    echo "$P4C_BM2_SS: $("$P4C_BM2_SS" --version 2>&1 | sed -n '$p')"
    "$P4C_BM2_SS" --std p4-16 -o "$out/rina_v1model.json" "$p4dir/rina_v1model.p4" > "$log" 2>&1
    rc=$? ;;
  tna)
    p4_need p4test tna
    echo "$P4TEST: $("$P4TEST" --version 2>&1 | sed -n '$p'); TNA includes $P4_TNA_INCLUDE"
    "$P4TEST" -D__TARGET_TOFINO__=1 -I "$P4_TNA_INCLUDE" "$p4dir/rina_tna.p4" > "$log" 2>&1
    rc=$? ;;
  *) echo "usage: compile_test.sh v1model|tna SOURCE_DIR OUT_DIR" >&2; exit 2 ;;
esac
warnings=$(grep -ci "warning" "$log")
cat "$log"
[ "$rc" -eq 0 ] || { echo "FAIL: the compiler exited $rc"; exit 1; }
[ "$warnings" -eq 0 ] || { echo "FAIL: $warnings warning line(s)"; exit 1; }
echo "compiled $kind: 0 warnings"
