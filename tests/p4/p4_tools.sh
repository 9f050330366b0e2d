# Sourced by the p4 tests (bash): finds the P4 tools the user built (none is
# part of this project; p4_agent/README.md says which versions and how).
#
#   p4_need TOOL...   sets each tool's variable, or exits 77 (skipped) naming
#                     every one that is missing and how to point at it.
#     p4c-bm2-ss         $P4C_BM2_SS, else p4c-bm2-ss on PATH
#     p4test             $P4TEST, else p4test on PATH
#     simple_switch      $SIMPLE_SWITCH, else simple_switch on PATH
#     simple_switch_CLI  $SIMPLE_SWITCH_CLI (a command line for /bin/sh:
#                        quote a path with spaces), else simple_switch_CLI
#                        on PATH
#     tna                $P4_TNA_INCLUDE: the folder holding tna.p4
p4_need() {
  local missing=() tool first
  for tool in "$@"; do
    case $tool in
      p4c-bm2-ss)
        P4C_BM2_SS=${P4C_BM2_SS:-$(command -v p4c-bm2-ss)}
        [ -x "$P4C_BM2_SS" ] || missing+=("p4c-bm2-ss (PATH or P4C_BM2_SS)") ;;
      p4test)
        P4TEST=${P4TEST:-$(command -v p4test)}
        [ -x "$P4TEST" ] || missing+=("p4test (PATH or P4TEST)") ;;
      simple_switch)
        SIMPLE_SWITCH=${SIMPLE_SWITCH:-$(command -v simple_switch)}
        [ -x "$SIMPLE_SWITCH" ] || missing+=("BMv2 simple_switch (PATH or SIMPLE_SWITCH)") ;;
      simple_switch_CLI)
        if [ -z "${SIMPLE_SWITCH_CLI:-}" ]; then
          first=$(command -v simple_switch_CLI) && SIMPLE_SWITCH_CLI="'$first'" ||
            missing+=("BMv2 simple_switch_CLI (PATH, or SIMPLE_SWITCH_CLI as a command line)")
        fi ;;
      tna)
        [ -f "${P4_TNA_INCLUDE:-}/tna.p4" ] ||
          missing+=("the TNA include files (P4_TNA_INCLUDE: a folder holding tna.p4)") ;;
      *) echo "p4_need: unknown tool $tool" >&2; exit 1 ;;
    esac
  done
  if ((${#missing[@]})); then
    local text=${missing[0]} m
    for m in "${missing[@]:1}"; do text+="; $m"; done
    echo "SKIP: missing $text"
    exit 77
  fi
}
