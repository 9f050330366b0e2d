#!/usr/bin/env bash
# Installs what rina builds and tests with (Debian bookworm), idempotently.
# Sourced by tools/demo.sh and tools/test.sh.
set -euo pipefail
# A checkout this user cannot write to (another user's clone, a read-only
# folder): say so now, not as a failure deep inside apt or CMake.
for dir in . build*/; do
  if [[ -e "$dir" && ! -w "$dir" ]]; then
    echo "rina: cannot write to $(cd "$dir" && pwd) (owner $(stat -c %U "$dir")), where the build goes: clone rina into a folder you own, or run this as its owner" >&2
    exit 2
  fi
done
RINA_APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev
  openmpi-bin libopenmpi-dev gfortran python3-mpi4py
  libhwloc-dev libibverbs-dev libglpk-dev libgloo-dev nlohmann-json3-dev libssl-dev
  python3 python3-matplotlib
  python3-torch libtorch-dev pybind11-dev
  clang libclang-rt-14-dev clang-format-14
  iproute2 procps
  # tools/rina-rdma-vm (ctest -L rdma): qemu, an initramfs of busybox and the
  # kernel's modules, the Soft-RoCE provider for the guest's verbs library.
  qemu-system-x86 busybox-static cpio kmod xz-utils ibverbs-providers
)
missing=()
for p in "${RINA_APT_PACKAGES[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "rina: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
