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
