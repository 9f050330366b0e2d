#!/bin/sh
# On the host: boots the RDMA VM once (tools/rina-rdma-vm) and runs every
# check of MANIFEST in it (checks.sh); each check's result is then read by
# its own ctest entry (result.sh). Exit 0 when the VM ran (a check it did
# not reach, the VM having run out of time or crashed, then fails on its
# own, with the reason from OUT/VM_ENDED); 77 when no VM can be had here
# (the reason goes to OUT/SKIP for the checks to repeat).
#
# SHARE folders (the source and build folders) are shown to the VM wherever
# they lie (rina-rdma-vm --share).
#
# usage: run_vm.sh HARNESS OUT MANIFEST TIMEOUT_SECONDS [SHARE...]
harness=$1
out=$2
manifest=$3
limit=$4
shift 4
# What is left becomes --share DIR for each.
for dir in "$@"; do
  set -- "$@" --share "$dir"
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
# The VM starts in a folder under /tmp (the guest's own memory) whose path
# has a space: the check shared_folder_under_tmp (share_probe.sh) reads its
# token inside the VM.
probe=$(mktemp -d /tmp/rina-vm-probe.XXXXXX) || exit 1
trap 'rm -rf "$probe"' EXIT
mkdir "$probe/a folder"
od -An -tx8 -N8 /dev/urandom | tr -d ' ' >"$probe/a folder/token"
cp "$probe/a folder/token" "$out/probe.token"
(cd "$probe/a folder" && pwd -P) >"$out/probe.folder"
cd "$probe/a folder" || exit 1
"$harness" --out "$out" --timeout "$limit" "$@" -- sh "$here/checks.sh" "$out" "$manifest" \
  2>"$out/harness.err"
rc=$?
cat "$out/harness.err"
case $rc in
  0) exit 0 ;;
  77)
    grep "SKIP:" "$out/harness.err" | tail -1 | sed 's/^rina-rdma-vm: //' >"$out/SKIP"
    cat "$out/SKIP"
    exit 77
    ;;
  124) echo "the VM ran out of its ${limit} s" >"$out/VM_ENDED" ;;
  *) echo "the VM run ended with status $rc (see $out/.vm/console.log)" >"$out/VM_ENDED" ;;
esac
cat "$out/VM_ENDED"
exit 0
