#!/usr/bin/env bash
# Sets up what is missing, builds, and runs the main job: a real
# gst-launch-1.0 pipeline through cudaoverlap (on the GPU when there is one,
# on the cpu backend otherwise, said so plainly), printing frames/s and
# writing one processed frame as a PNG you can look at; then the engine
# benchmark table.
set -euo pipefail
cd "$(dirname "$0")/.."

# The first build takes minutes: say so, and let its progress show.
if [ -f build/build.ninja ]; then
  echo "demo: bringing the build up to date (scripts/setup.sh)"
else
  echo "demo: building (first time: several minutes; its progress follows)"
fi
scripts/setup.sh
echo "demo: build ready"
echo
# shellcheck source=scripts/env.sh disable=SC1091
. scripts/env.sh
mkdir -p build/demo
bench=build/tests/bench/cudaoverlap-bench

# A GPU is there when the cuda backend runs one frame; otherwise every figure
# below is the cpu backend's, and the output says so before any of them.
if why=$("$bench" --backend cuda --frames 1 --warmup 0 --runs 1 --rings 2 --sizes 720p \
  --no-pageable 2>&1 >/dev/null); then
  backend=cuda
else
  backend=cpu
  why=${why##*$'\n'}  # the last line: the reason
  why=${why#cudaoverlap-bench: }
  why=${why%%;*}  # what follows is advice on the backend property
  if [[ "$why" == "no CUDA device: "* ]]; then
    echo "no GPU: running the cpu backend, the fallback for machines without a GPU; figures are not the GPU's"
    echo "  why no GPU: ${why#no CUDA device: }"
  else
    echo "the cuda backend did not run: running the cpu backend, the fallback for machines without a GPU; figures are not the GPU's"
    echo "  why: $why"
  fi
  echo
fi

if gst-inspect-1.0 cudaoverlap >/dev/null 2>&1; then
  # Headline: on a GPU, 1080p frames/s through a whole pipeline; on the cpu
  # backend, smaller frames, as a check that the element runs here.
  if [ "$backend" = cuda ]; then
    frames=${DEMO_FRAMES:-600} width=1920 height=1080
  else
    frames=${DEMO_FRAMES:-120} width=640 height=360
  fi
  caps="video/x-raw,format=RGBA,width=$width,height=$height,framerate=60/1"
  element=(cudaoverlap "backend=$backend" kernel=invert)
  echo "== gst-launch-1.0 videotestsrc num-buffers=$frames ! $caps ! ${element[*]} ! fakesink sync=false"
  start=$(date +%s.%N)
  gst-launch-1.0 -q videotestsrc num-buffers="$frames" ! "$caps" ! "${element[@]}" \
    ! fakesink sync=false
  end=$(date +%s.%N)
  if [ "$backend" = cuda ]; then
    what="through the whole pipeline on the GPU (source included)"
  else
    what="on the cpu backend (a check that the element runs here, not a GPU figure)"
  fi
  python3 -c "f=$frames; t=$end-$start; print(f'{f} frames of ${width}x${height} RGBA in {t:.2f} s: {f/t:.0f} frames/s $what')"
  gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte \
    ! "video/x-raw,format=RGBA,width=1920,height=1080" ! "${element[@]}" \
    ! videoconvert ! pngenc ! filesink location=build/demo/invert.png
  echo "one inverted SMPTE frame: build/demo/invert.png"
else
  echo "demo: the cudaoverlap plugin is not built (no GStreamer dev files?); engine benchmark only"
fi

echo
# On the cpu backend fewer frames and one size: its figures are the host's.
if [ "$backend" = cuda ]; then
  args=(--backend cuda)
else
  args=(--backend cpu --frames 120 --warmup 20 --sizes 1080p)
fi
echo "== engine alone ($bench ${args[*]})"
"$bench" "${args[@]}"
