#!/bin/sh
# Inside the RDMA VM: the folders under the guest's memory folders are shown
# as they are on the host. run_vm.sh starts the VM from a folder under /tmp
# whose path has a space, holding a file "token" whose content it also left
# in OUT/probe.token; here the current folder must be that folder with that
# file, read-only, while /tmp itself stays the guest's writable scratch.
#
# usage: share_probe.sh OUT
out=$1
fail() { echo "FAIL: $*"; exit 1; }
want=$(cat "$out/probe.folder") || fail "no $out/probe.folder"
[ "$(pwd -P)" = "$want" ] || fail "the current folder is $(pwd -P), not $want"
[ -r token ] || fail "$want/token is not visible inside the VM"
[ "$(cat token)" = "$(cat "$out/probe.token")" ] || fail "$want/token does not hold the host's content"
if touch "$want/written-by-the-guest" 2>/dev/null; then
  fail "the shared folder $want is writable inside the VM"
fi
scratch=$(mktemp /tmp/scratch.XXXXXX) || fail "/tmp is not writable inside the VM"
rm -f "$scratch"
echo "ok: $want shown read-only with its token; /tmp writable"
