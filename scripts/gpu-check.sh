#!/usr/bin/env bash
# On a GPU machine, after scripts/gpu-bundle.sh made .gpu/ here: runs every
# suite on the cuda backend, the pipeline benchmark (scripts/bench-pipelines.sh)
# and the engine benchmark (its overlap, live, kernel and staging tables). Full logs go to OUTDIR; a summary is printed.
#   scripts/gpu-check.sh OUTDIR [--no-kernels] [--memcheck] [--no-bench]
# --no-kernels leaves out the kernel suites and the kernel table (for changes
# that touch no kernel); --memcheck also runs the cuda element suite under
# compute-sanitizer's memcheck; --no-bench leaves out the benchmarks.
set -u
out=${1:?usage: gpu-check.sh OUTDIR [--no-kernels] [--memcheck] [--no-bench]}
shift
kernels=1 memcheck=0 bench=1
for a in "$@"; do
  case $a in
    --no-kernels) kernels=0 ;;
    --memcheck) memcheck=1 ;;
    --no-bench) bench=0 ;;
    *) echo "gpu-check: unknown option $a" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
[ -d .gpu/bin ] || tar xJf .gpu/bin.txz -C .gpu
[ -d .gpu/gst ] || tar xzf .gpu/gst.tgz -C .gpu
. .gpu/gst/env.sh
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max \
  --format=csv,noheader
gst-inspect-1.0 cudaoverlap >"$out/inspect.txt" 2>&1 && echo "gst-inspect-1.0 cudaoverlap: ok"

# The counts, then each failed test by name and the first failure's place:
# a failure that does not come back can still be told apart from the log.
summary() {
  grep -E "^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ test" "$1" | tr '\n' ' '
  grep -E "^\[  FAILED  \] [A-Za-z]" "$1" | sort -u | sed 's/^\[  FAILED  \] /failed: /' | tr '\n' ' '
  grep -m1 -E ": Failure$" "$1"
  echo
}
for t in .gpu/bin/test_*; do
  n=$(basename "$t")
  "$t" >"$out/$n.log" 2>&1
  echo "$n (rc $?): $(summary "$out/$n.log")"
done
for t in .gpu/bin/*-tests; do
  n=$(basename "$t")
  case $n in kernel-tests | element-tests) continue ;; esac
  "$t" >"$out/$n.log" 2>&1
  echo "$n (rc $?): $(summary "$out/$n.log")"
done
if [ $kernels = 1 ]; then
# kernel-tests in a shard per core at once: its CPU references take about
# 18 minutes on one core (H100 machine, 2026-11-25), the GPU part seconds.
rc=0
shards=$(nproc)
for i in $(seq 0 $((shards - 1))); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i .gpu/bin/kernel-tests \
    >"$out/kernel-tests.shard$i.log" 2>&1 &
done
for job in $(jobs -p); do wait "$job" || rc=1; done
cat "$out"/kernel-tests.shard*.log >"$out/kernel-tests.log" && rm "$out"/kernel-tests.shard*.log
echo "kernel-tests (rc $rc, $shards shards): $(grep -c '^\[       OK \]' "$out/kernel-tests.log") OK," \
  "$(grep -c '^\[  FAILED  \] [A-Z]' "$out/kernel-tests.log") FAILED"
.gpu/bin/kernel-vs-gst >"$out/kernel-vs-gst.log" 2>&1
echo "kernel-vs-gst (rc $?): $(summary "$out/kernel-vs-gst.log")"
fi
# The element suite in 6 shards at once (each with a registry of its own):
# one after another its cases take more than one call to the GPU machine
# may run (2026-11-25, H100). Leaks.* runs apart, under the leaks tracer.
rc=0
for i in 0 1 2 3 4 5; do
  CUDAOVERLAP_TEST_BACKEND=cuda GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i \
    GST_REGISTRY="$out/registry.$i.bin" .gpu/bin/element-tests --gtest_filter='-Leaks.*' \
    >"$out/element-cuda.shard$i.log" 2>&1 &
done
for job in $(jobs -p); do wait "$job" || rc=1; done
cat "$out"/element-cuda.shard*.log >"$out/element-cuda.log" && rm "$out"/element-cuda.shard*.log
rm -f "$out"/registry.?.bin
echo "element-tests cuda (rc $rc, 6 shards): $(grep -c '^\[       OK \]' "$out/element-cuda.log") OK," \
  "$(grep -c '^\[  FAILED  \] [A-Z]' "$out/element-cuda.log") FAILED," \
  "$(grep -c '^\[  SKIPPED \] [A-Z]' "$out/element-cuda.log") skipped"
# With several GPUs, the element suite once more over all of them
# (devices=all in every case), in shards as above.
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c '^[0-9]')
# CUDA numbers only the GPUs CUDA_VISIBLE_DEVICES lets it see.
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
if [ "$gpus" -ge 2 ]; then
  rc=0
  for i in 0 1 2 3 4 5; do
    CUDAOVERLAP_TEST_BACKEND=cuda CUDAOVERLAP_TEST_DEVICES=all GTEST_TOTAL_SHARDS=6 \
      GTEST_SHARD_INDEX=$i GST_REGISTRY="$out/registry.$i.bin" .gpu/bin/element-tests \
      --gtest_filter='-Leaks.*' >"$out/element-cuda-devices.shard$i.log" 2>&1 &
    pids[i]=$!
  done
  for i in 0 1 2 3 4 5; do wait "${pids[i]}" || rc=1; done
  cat "$out"/element-cuda-devices.shard*.log >"$out/element-cuda-devices.log" &&
    rm "$out"/element-cuda-devices.shard*.log
  rm -f "$out"/registry.?.bin
  echo "element-tests cuda over $gpus GPUs (devices=all; rc $rc, 6 shards):" \
    "$(grep -c '^\[       OK \]' "$out/element-cuda-devices.log") OK," \
    "$(grep -c '^\[  FAILED  \] [A-Z]' "$out/element-cuda-devices.log") FAILED," \
    "$(grep -c '^\[  SKIPPED \] [A-Z]' "$out/element-cuda-devices.log") skipped"
else
  echo "element-tests over several GPUs: not run ($gpus GPU on this machine)"
fi
# kernel=application from a C application: Thrust and a kernel of its own
# on the element's stream, every frame checked on the CPU (tests/examples).
for what in thrust kernel; do
  .gpu/bin/cudaoverlap-process-example $what >"$out/process-example-$what.log" 2>&1
  echo "process-example $what (rc $?): $(tail -1 "$out/process-example-$what.log")"
done
CUDAOVERLAP_TEST_BACKEND=cuda GST_TRACERS=leaks GST_REGISTRY="$out/registry-leaks.bin" \
  .gpu/bin/element-tests --gtest_filter='Leaks.*' >"$out/element-leaks-cuda.log" 2>&1
echo "element-tests leaks cuda (rc $?): $(summary "$out/element-leaks-cuda.log")"
if [ $memcheck = 1 ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ -x "$sanitizer" ]; then
    # Leaks of CUDA allocations at exit included; the stress and leaks cases
    # are left out (minutes under the tool, and nothing they do is not done
    # by the others too). API calls that fail on purpose are not reported
    # (cudaHostRegister refusing memory that cannot be pinned, which is then
    # staged): the suite checks what the element does with each.
    CUDAOVERLAP_TEST_BACKEND=cuda "$sanitizer" --tool memcheck --leak-check full --report-api-errors no \
      --error-exitcode 9 .gpu/bin/element-tests --gtest_filter='-Stress.*:Leaks.*' \
      >"$out/element-memcheck.log" 2>&1
    echo "element-tests cuda under memcheck (rc $?): $(summary "$out/element-memcheck.log")" \
      "$(grep -E '^========= ERROR SUMMARY' "$out/element-memcheck.log" | tail -1)"
  else
    echo "element-tests under memcheck: no compute-sanitizer on this machine"
  fi
fi
[ $bench = 1 ] || exit 0

# Whole gst-launch-1.0 pipelines against nvcodec's cudaupload ! cudadownload
# and videoconvert (table and CSV; scripts/bench-plot.py draws the CSV).
scripts/bench-pipelines.sh --csv "$out/pipelines.csv" 2>&1 | tee "$out/pipelines.txt"
.gpu/bin/cudaoverlap-bench 2>&1 | tee "$out/bench.txt"
.gpu/bin/cudaoverlap-bench --live 2>&1 | tee "$out/bench-live.txt"
[ $kernels = 1 ] && .gpu/bin/cudaoverlap-bench --kernels 2>&1 | tee "$out/bench-kernels.txt"
.gpu/bin/cudaoverlap-bench --staging 2>&1 | tee "$out/bench-staging.txt"
