#!/usr/bin/env bash
# The whole test suite: installs packages, builds (warnings are errors),
# runs every test through ctest. RINA_SANITIZE=1 builds with ASan+UBSan into
# build-asan instead and runs every test there; RINA_SANITIZE=unit builds
# only what the unit-labelled tests need, with ASan+UBSan into build-asan,
# and runs those (the CI's last pass, .ci/run). RINA_BUILD_TYPE picks
# CMAKE_BUILD_TYPE (RelWithDebInfo, into build/; another type builds into
# build-<type>, e.g. build-release: the CI's second pass). RINA_TEST_LABEL=L
# builds everything but runs only the tests labelled L. rina_torch builds
# and is tested for Debian's torch 1.13 and for torch 2.x from a venv that
# tools/deps.sh makes once (RINA_TORCH2=0: not; the torch2 tests skip).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/deps.sh
TYPE=${RINA_BUILD_TYPE:-RelWithDebInfo}
case "$TYPE" in
  RelWithDebInfo) BUILD=build ;;
  Release | Debug | MinSizeRel) BUILD=build-${TYPE,,} ;;
  *) echo "tools/test.sh: RINA_BUILD_TYPE=${TYPE}: give Release, RelWithDebInfo, Debug or MinSizeRel" >&2; exit 2 ;;
esac
SAN=OFF
TARGET=all
LABEL=()
case "${RINA_SANITIZE:-0}" in
  0) ;;
  1) BUILD=build-asan SAN=ON ;;
  unit) BUILD=build-asan SAN=ON TARGET=unit_tests LABEL=(-L unit) ;;
  *) echo "tools/test.sh: RINA_SANITIZE=${RINA_SANITIZE}: give 0, 1 or unit" >&2; exit 2 ;;
esac
if [ -n "${RINA_TEST_LABEL:-}" ]; then LABEL=(-L "$RINA_TEST_LABEL"); fi
# rina_torch is tested against Debian's torch 1.13 and, from a venv
# (tools/deps.sh), torch 2.x; sanitizer builds have no rina_torch.
RINA_TORCH2_PYTHON=""
if [ "$SAN" = OFF ]; then rina_torch2_venv; fi
# CUDA is detected and reported by CMake; its code builds whenever nvcc is
# there (no GPU is needed to compile).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="$TYPE" -DRINA_WERROR=ON -DRINA_BUILD_TESTS=ON \
  -DRINA_SANITIZE="$SAN" -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-80;90}" \
  -DRINA_TORCH2_PYTHON="$RINA_TORCH2_PYTHON"
cmake --build "$BUILD" -j"$(nproc)" --target "$TARGET"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$BUILD" --output-on-failure -j"${RINA_TEST_JOBS:-1}" "${LABEL[@]}" "$@"
