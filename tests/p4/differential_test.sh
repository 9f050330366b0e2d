#!/usr/bin/env bash
# differential_test.sh P4_DIFFERENTIAL JSON
# rina_v1model.p4 (JSON, from the compile test) in BMv2's pcap-file mode
# against rina-switchd's pipeline: p4_differential must find no difference.
# Skipped (77) without simple_switch, its CLI, or the compiled program.
set -u
bin=$1 json=$2
. "$(dirname "$0")/p4_tools.sh"
p4_need simple_switch simple_switch_CLI
[ -f "$json" ] || { echo "SKIP: no $json (the p4_compile_v1model test makes it)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" --simple-switch "$SIMPLE_SWITCH" --json "$json" --cli "$SIMPLE_SWITCH_CLI" \
  --work "$work" --seed "${P4_DIFFERENTIAL_SEED:-1}" --random "${P4_DIFFERENTIAL_RANDOM:-1500}"
rc=$?
[ "$rc" -eq 0 ] || { echo "simple_switch's log:"; tail -20 "$work/simple_switch.log"; }
exit $rc
