# Sourced by the lab test scripts (bash): the skip checks, the lab wrapper,
# and a cleanup on exit that leaves no namespace of the lab behind.
#
#   lab_init PREFIX   exits 77 without root, network namespaces or mpirun;
#                     else sets name=PREFIX$$, work (a temporary folder),
#                     state, and removes all of it on exit. $netlab must be
#                     set. A script that starts background work defines
#                     lab_before_cleanup to stop it.
#   lab ARGS...       rina-netlab on this lab
#   lab_namespaces    the lab's namespaces still there
#   fail MESSAGE      FAIL on stderr, exit 1
#   timing_miss MESSAGE
#                     a rate or a time outside its bound: fail, unless other
#                     processes crowd the CPUs (cpu_crowding.py), where the
#                     lab cannot reach its rates: then the miss is noted as
#                     inconclusive and the script goes on
#   lab_done MESSAGE  the end: MESSAGE and exit 0, or exit 77 (skipped) with
#                     the inconclusive misses

lab_init() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the lab test needs root (network namespaces)"
    exit 77
  fi
  local probe=rnl-probe$$
  if ! ip netns add "$probe" 2> /dev/null; then
    echo "SKIP: cannot create network namespaces here"
    exit 77
  fi
  ip netns del "$probe"
  if ! command -v mpirun > /dev/null; then
    echo "SKIP: no mpirun"
    exit 77
  fi
  name=$1$$
  work=$(mktemp -d)
  state=$work/state
  trap lab_cleanup EXIT
}

lab() { "$netlab" --name "$name" --state "$state" "$@"; }

lab_namespaces() { ip netns list | awk -v p="rnl-$name-" 'index($1, p) == 1 {print $1}'; }

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

lab_inconclusive=()
timing_miss() {
  local crowding
  crowding=$("$(dirname "${BASH_SOURCE[0]}")/cpu_crowding.py") || fail "$* (CPUs not crowded: $crowding)"
  echo "inconclusive: $* ($crowding: other processes hold the CPUs)" >&2
  lab_inconclusive+=("$*")
}

lab_done() {
  if ((${#lab_inconclusive[@]})); then
    echo "SKIP: every other check passed; inconclusive on a crowded host: ${lab_inconclusive[*]}"
    exit 77
  fi
  echo "$*"
}

lab_cleanup() {
  if declare -F lab_before_cleanup > /dev/null; then lab_before_cleanup; fi
  lab down > /dev/null 2>&1
  local ns
  for ns in $(lab_namespaces); do
    echo "cleanup: removing leftover namespace $ns" >&2
    ip netns del "$ns"
  done
  rm -rf "$work"
}
