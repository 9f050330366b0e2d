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
  python3 python3-matplotlib python3-venv
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

# torch 2.x from PyPI for rina_torch's second build and tests (ctest -L
# torch2), in a venv outside the checkout: RINA_TORCH2_VENV (default
# ~/.cache/rina/torch2-venv), made with the first python3 on PATH (never
# installing into Debian's /usr/bin/python3), torch==RINA_TORCH2_VERSION
# (PyPI's Linux wheel is a CUDA build of several GB that also runs on the
# CPU) and numpy. Made once, then reused; where PyPI cannot be reached it
# says so and the torch2 tests skip. RINA_TORCH2=0 leaves it out. Sets
# RINA_TORCH2_PYTHON to its interpreter when it is there.
rina_torch2_venv() {
  RINA_TORCH2_PYTHON=""
  [[ "${RINA_TORCH2:-1}" == 0 ]] && { echo "rina: RINA_TORCH2=0: no torch 2.x venv, the torch2 tests skip"; return 0; }
  local venv=${RINA_TORCH2_VENV:-$HOME/.cache/rina/torch2-venv}
  local version=${RINA_TORCH2_VERSION:-2.15.0}
  local stamp="$venv/.rina-torch-version"
  if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$version" ]]; then
    local base
    base=$(command -v python3)
    echo "rina: making a torch $version venv in $venv with $base (once; PyPI's wheel is several GB)"
    local start=$SECONDS
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    if "$base" -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check --timeout 60 --retries 2 \
        "torch==$version" numpy; then
      echo "$version" > "$stamp"
      echo "rina: torch $version venv ready in $((SECONDS - start)) s"
    else
      echo "rina: could not install torch==$version from PyPI into $venv: the torch2 tests will skip" >&2
      rm -rf "$venv"
      return 0
    fi
  fi
  RINA_TORCH2_PYTHON="$venv/bin/python"
}
