#!/usr/bin/env bash
# An application and a kernel built outside this repository, against what
# `meson install` puts in place: installs the build into a scratch
# directory, asks pkg-config (cudaoverlap-1.0) for the flags, and compiles a
# C file that uses <cudaoverlap/cudaoverlap.h> and, where nvcc is found, a
# CUDA file with its own kernel on <cudaoverlap/pixel.cuh>.
#   installed.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 source=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
pc=$(find "$dest" -name cudaoverlap-1.0.pc | head -1)
[ -n "$pc" ] || { echo "installed.sh: no cudaoverlap-1.0.pc installed"; exit 1; }
prefix=$(pkg-config --variable=prefix "$pc")
cflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$dest$prefix" \
  --cflags cudaoverlap-1.0)
echo "pkg-config --cflags cudaoverlap-1.0: $cflags"
cc $cflags -Wall -Werror -c "$source/installed_app.c" -o "$dest/app.o"
echo "C application: compiled"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then
  "$nvcc" $cflags -std=c++17 -arch=sm_90 -c "$source/installed_kernel.cu" -o "$dest/kernel.o"
  echo "CUDA kernel on <cudaoverlap/pixel.cuh>: compiled"
fi
