#!/usr/bin/env bash
# Packs what a GPU machine without GStreamer needs to run this project's
# tests, benchmark and pipelines into .gpu/ (ignored by git, small enough to
# carry): the GStreamer runtime with our plugin (../shared/gpu/bundle-gst.sh),
# and the test and benchmark binaries, stripped, plus any library they need
# that the runtime bundle lacks. Both travel compressed, as .gpu/bin.txz and
# .gpu/gst.tgz: each binary carries the kernels' machine code for every
# architecture (about 16 MB each, 220 MB in all), and with gst-plugins-bad's
# plugins (nvcodec, bayer) the runtime unpacked came to more than a GPU
# machine's call may carry. The binaries go through xz with a dictionary
# larger than any one of them, so the machine code they share is stored
# once (4 MB against 56 MB as a gzip tarball). On the GPU machine, from the
# repository root:
#   tar xJf .gpu/bin.txz -C .gpu; tar xzf .gpu/gst.tgz -C .gpu
#   . .gpu/gst/env.sh; .gpu/bin/cudaoverlap-bench
# (scripts/gpu-check.sh and scripts/gpu-observe.sh unpack them themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null  # builds what changed (CUDA objects included)
# coretracers: the leaks and latency tracers the tests and measurements use;
# jpeg and avi: the file the playbin scenario plays (tests/element);
# openh264: H.264 for nvh264dec in the CUDA memory tests.
plugins=/usr/lib/x86_64-linux-gnu/gstreamer-1.0
../shared/gpu/bundle-gst.sh .gpu/gst build/gst/libgstcudaoverlap.so \
  $plugins/libgstcoretracers.so $plugins/libgstjpeg.so $plugins/libgstavi.so \
  $plugins/libgstopenh264.so
# H.264 streams for the decode benchmark (bench-pipelines.sh --only
# decode), made once and kept: 720 frames each of a moving ball.
mkdir -p .gpu/media
for size in 1920x1080 3840x2160; do
  f=.gpu/media/$size.h264
  [ -s "$f" ] && continue
  gst-launch-1.0 -q videotestsrc num-buffers=720 pattern=ball ! \
    "video/x-raw,format=I420,width=${size%x*},height=${size#*x},framerate=60/1" ! \
    openh264enc bitrate=20000000 complexity=low ! h264parse ! \
    video/x-h264,stream-format=byte-stream ! filesink location="$f.part" && mv "$f.part" "$f"
done
# NVRTC (kernel=custom) comes with the GPU machine's CUDA toolkit: at 110 MB
# it would not fit a call.
rm -f .gpu/gst/lib/libnvrtc*
rm -rf .gpu/bin .gpu/bin.tgz .gpu/bin.txz .gpu/gst.tgz
mkdir -p .gpu/bin
bins=(build/tests/engine/test_* build/tests/engine/timing-cost build/tests/element/element-tests
  build/tests/element/pinned-pool-tests build/tests/element/output-queue-tests
  build/tests/kernels/kernel-tests build/tests/kernels/kernel-vs-gst
  build/tests/bench/cudaoverlap-bench build/tests/examples/cudaoverlap-process-example)
for f in "${bins[@]}"; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  strip --strip-debug -o ".gpu/bin/$(basename "$f")" "$f"
done
# The NVRTC stand-in that lets GStreamer 1.22's CUDA converters register on
# CUDA 13 (scripts/nvrtc-arch.c; bench-pipelines.sh uses it).
gcc -Wall -Wextra -Werror -shared -fPIC -O2 -o .gpu/bin/libnvrtc-arch.so scripts/nvrtc-arch.c -ldl
skip='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|linux-vdso|libcuda|libnvidia-.*|libcudart|libnvrtc)\.so'
for f in .gpu/bin/*; do ldd "$f" | awk '/=> \//{print $1" "$3}'; done | sort -u |
  while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [ -e ".gpu/gst/lib/$name" ] || cp -L "$path" ".gpu/gst/lib/$name"
  done
tar cf - -C .gpu bin | xz --lzma2=preset=1,dict=256MiB >.gpu/bin.txz
tar czf .gpu/gst.tgz -C .gpu gst
rm -rf .gpu/bin .gpu/gst
du -sh .gpu | awk '{print "gpu-bundle: " $1 " in .gpu"}'
