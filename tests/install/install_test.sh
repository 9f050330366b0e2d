#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a consumer
# through find_package(rina) and through pkg-config.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
cmake -S "$src/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" > "$tmp/cfg.log"
cmake --build "$tmp/consumer" > "$tmp/build.log"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer/consumer"
flags=$(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs rina)
cc "$src/consumer/main.c" $flags -o "$tmp/pc_consumer"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/pc_consumer"
# librina must not depend on MPI; librina_mpi (when built) is installed, needs
# no librina (it carries its own copy) and exports the MPI entry points.
# (Each tool's output is read whole first: under pipefail a grep -q that
# stops reading early can make the pipeline fail.)
if grep -q 'NEEDED.*libmpi' <<<"$(readelf -d "$tmp"/prefix/lib*/librina.so)"; then
  echo "install_test: FAIL: librina.so depends on MPI"
fi
if [ -e "$build/lib/mpi/librina_mpi.so" ]; then
  mpi_lib=$(ls "$tmp"/prefix/lib*/librina_mpi.so 2>/dev/null || true)
  if [ -z "$mpi_lib" ]; then
    echo "install_test: FAIL: librina_mpi.so not installed"
  elif grep -q 'NEEDED.*librina\.so' <<<"$(readelf -d "$mpi_lib")" ||
       ! grep -q ' MPI_Allreduce$' <<<"$(nm -D --defined-only "$mpi_lib")"; then
    echo "install_test: FAIL: librina_mpi.so links librina or lacks MPI_Allreduce"
  else
    echo "librina_mpi ok"
  fi
fi
