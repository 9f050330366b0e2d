#!/bin/sh
# On the host: the result of one check of the RDMA VM run (run_vm.sh): its
# output, then its exit status; 77 (skipped) with the reason when the VM
# could not be had here.
#
# usage: result.sh OUT NAME
out=$1
name=$2
if [ -f "$out/SKIP" ]; then
  cat "$out/SKIP"
  exit 77
fi
if [ ! -f "$out/$name.rc" ]; then
  echo "FAIL: no result for $name: the VM run did not reach it: $(cat "$out/VM_ENDED" 2>/dev/null)"
  exit 1
fi
cat "$out/$name.log"
echo "($name: $(cat "$out/$name.secs" 2>/dev/null) s inside the VM)"
exit "$(cat "$out/$name.rc")"
