#!/usr/bin/env bash
# Installs what is missing (Debian packages), then configures and builds the
# project in build/. Idempotent and quick when nothing changed. Used by the
# README's two commands (scripts/demo.sh, scripts/test.sh); run it alone to
# just build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  meson ninja-build pkg-config g++ python3
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  # GStreamer's CUDA library's headers (the pipeline's shared CUDA context,
  # CUDA memory); they include cudaGL.h, which needs GL's headers
  libgstreamer-plugins-bad1.0-dev libgl-dev
  libgtest-dev
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  # GStreamer's Python overrides: without them Python cannot read a
  # GstValueArray, such as the `devices` field of the element's `stats`
  python3-gst-1.0
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# nvcc is found on PATH or in the usual toolkit place; without it the build
# has the cpu backend only (meson says so).
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

options=()
[ -n "${CI:-}" ] && options+=(-Dwerror=true)
if [ ! -f build/build.ninja ]; then
  # shellcheck disable=SC2086 # the extra options are split into words
  meson setup build "${options[@]}" ${CUDAOVERLAP_MESON_OPTIONS:-}
elif [ ${#options[@]} -gt 0 ]; then
  meson configure build "${options[@]}" >/dev/null
fi
# Meson 1.0 gives nvcc no dependency file, so ninja does not rebuild a .cu
# object when a header it includes changes (and a stale object reads a
# changed struct at old offsets): drop the CUDA objects older than the
# newest header under kernels/, where every .cu file's includes live.
newest=$(find kernels \( -name '*.h' -o -name '*.cuh' \) -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
find build -name '*.cu.o' ! -newer "$newest" -delete
ninja -C build -j "${CUDAOVERLAP_JOBS:-2}"
