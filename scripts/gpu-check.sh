#!/usr/bin/env bash
# On a GPU machine, after scripts/gpu-bundle.sh made .gpu/ here: runs every
# suite on the cuda backend, the element through gst-launch-1.0, and the
# engine benchmark. Full logs go to OUTDIR; a summary is printed.
#   scripts/gpu-check.sh OUTDIR
set -u
out=${1:?usage: gpu-check.sh OUTDIR}
mkdir -p "$out"
. .gpu/gst/env.sh
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max \
  --format=csv,noheader
gst-inspect-1.0 cudaoverlap >"$out/inspect.txt" 2>&1 && echo "gst-inspect-1.0 cudaoverlap: ok"

summary() { grep -E "^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$1" | tr '\n' ' '; echo; }
for t in .gpu/bin/test_*; do
  n=$(basename "$t")
  "$t" >"$out/$n.log" 2>&1
  echo "$n (rc $?): $(summary "$out/$n.log")"
done
.gpu/bin/kernel-tests >"$out/kernel-tests.log" 2>&1
echo "kernel-tests (rc $?): $(summary "$out/kernel-tests.log")"
.gpu/bin/kernel-vs-gst >"$out/kernel-vs-gst.log" 2>&1
echo "kernel-vs-gst (rc $?): $(summary "$out/kernel-vs-gst.log")"
CUDAOVERLAP_TEST_BACKEND=cuda .gpu/bin/element-tests >"$out/element-cuda.log" 2>&1
echo "element-tests cuda (rc $?): $(summary "$out/element-cuda.log")"
CUDAOVERLAP_TEST_BACKEND=cuda GST_TRACERS=leaks GST_REGISTRY="$out/registry-leaks.bin" \
  .gpu/bin/element-tests --gtest_filter='Leaks.*' >"$out/element-leaks-cuda.log" 2>&1
echo "element-tests leaks cuda (rc $?): $(summary "$out/element-leaks-cuda.log")"

# Whole pipelines, source included: videotestsrc writes each frame on the
# CPU. By default it writes into the element's pinned pool (zero-copy
# upload); behind `identity drop-allocation=true` it writes into its own
# memory and the element stages every frame. The source alone is timed too.
frames=600
for size in 1920x1080 3840x2160; do
  caps="video/x-raw,format=RGBA,width=${size%x*},height=${size#*x},framerate=60/1"
  for what in "identity" "cudaoverlap" "identity drop-allocation=true ! cudaoverlap" \
    "cudaoverlap mode=serial"; do
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    gst-launch-1.0 -q videotestsrc num-buffers=$frames pattern=solid-color ! "$caps" \
      ! $what ! fakesink sync=false >>"$out/pipelines.log" 2>&1
    rc=$?
    end=$(date +%s%N)
    echo "pipeline $size RGBA, $what: $((frames * 1000000000 / (end - start))) frames/s (rc $rc)"
  done
done
.gpu/bin/cudaoverlap-bench 2>&1 | tee "$out/bench.txt"
.gpu/bin/cudaoverlap-bench --kernels 2>&1 | tee "$out/bench-kernels.txt"
