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
