#!/usr/bin/env bash
# The README's two commands, run by a user who cannot write to the checkout
# (another user's clone), stop at once with exit status 2 and a message
# naming the folder and what to do, before apt or CMake. Needs root (to run
# them as another user); skips otherwise.
#
# usage: unwritable_checkout_test.sh SOURCE_DIR
set -euo pipefail
src=$1
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root to run as another user"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
tmp=$(mktemp -d /tmp/rina-unwritable.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
checkout="$tmp/someone else's clone"
mkdir -p "$checkout/tools"
cp "$src"/tools/{deps.sh,demo.sh,test.sh} "$checkout/tools/"
chmod 755 "$tmp" "$checkout" "$checkout/tools"
fail() { echo "FAIL: $*"; exit 1; }
for script in demo.sh test.sh; do
  rc=0
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups -- bash "$checkout/tools/$script" 2>&1) || rc=$?
  echo "tools/$script as uid 65534: status $rc: $out"
  [[ $rc -eq 2 ]] || fail "tools/$script exited with $rc, expected 2"
  grep -qF "rina: cannot write to $checkout (owner root)" <<<"$out" || fail "tools/$script: no message naming the folder"
  grep -q "clone rina into a folder you own" <<<"$out" || fail "tools/$script: no advice"
done
echo "ok: both commands refuse an unwritable checkout, naming it"
