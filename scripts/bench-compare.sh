#!/usr/bin/env bash
# Two builds side by side on one machine, for a change that must not cost
# speed: the engine benchmark (its overlap table) and the pipeline
# benchmark's copy rows, each run for the earlier build and this one in
# turn, round after round, so that a machine whose speed drifts weighs on
# both alike. BEFORE is a directory holding the earlier build's
# cudaoverlap-bench and libgstcudaoverlap.so; this build's are the GPU
# bundle's (.gpu/, scripts/gpu-bundle.sh), or build/'s where there is none.
#   scripts/bench-compare.sh BEFORE OUTDIR [--rounds 2] [--sizes 1080p,4k]
# One round of both builds at both sizes takes about 8 minutes on an H200.
set -u
before=${1:?usage: bench-compare.sh BEFORE OUTDIR [--rounds N] [--sizes 1080p,4k]}
out=${2:?usage: bench-compare.sh BEFORE OUTDIR [--rounds N] [--sizes 1080p,4k]}
shift 2
rounds=2
sizes=1080p,4k
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "bench-compare: unknown argument $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.." || exit 1
before=$(cd "$before" && pwd) || exit 1
mkdir -p "$out"
if [ -f .gpu/bin.txz ]; then
  [ -d .gpu/bin ] || tar xJf .gpu/bin.txz -C .gpu
  [ -d .gpu/gst ] || tar xzf .gpu/gst.tgz -C .gpu
  # shellcheck source=/dev/null
  . .gpu/gst/env.sh
  bench_after=.gpu/bin/cudaoverlap-bench
  plugins_after=$PWD/.gpu/gst/plugins
  path_var=GST_PLUGIN_SYSTEM_PATH_1_0  # the bundle's plugins are all there
else
  # shellcheck source=scripts/env.sh
  . scripts/env.sh
  bench_after=build/tests/bench/cudaoverlap-bench
  plugins_after=$PWD/build/gst
  path_var=GST_PLUGIN_PATH  # beside the system's plugins
fi
# The earlier plugin in a copy of this build's plugin directory, so that
# every other plugin is the same; each build has a registry of its own.
plugins_before=$(mktemp -d)
trap 'rm -rf "$plugins_before"' EXIT
cp "$plugins_after"/*.so "$plugins_before"/
cp "$before/libgstcudaoverlap.so" "$plugins_before/"
pixels() {
  case $1 in 720p) echo 1280x720 ;; 1080p) echo 1920x1080 ;; 4k) echo 3840x2160 ;; *) echo "$1" ;; esac
}
pipeline_sizes=$(IFS=,; for s in $sizes; do printf '%s,' "$(pixels "$s")"; done)
pipeline_sizes=${pipeline_sizes%,}
for round in $(seq "$rounds"); do
  for build in before after; do
    if [ $build = before ]; then bench=$before/cudaoverlap-bench plugins=$plugins_before
    else bench=$bench_after plugins=$plugins_after; fi
    echo "== round $round, $build: engine benchmark" | tee -a "$out/engine.txt"
    "$bench" --sizes "$sizes" 2>&1 | tee -a "$out/engine.txt"
    echo "== round $round, $build: pipeline benchmark, copy" | tee -a "$out/pipelines.txt"
    env "$path_var=$plugins" GST_REGISTRY_1_0="$out/registry-$build.bin" \
      GST_REGISTRY="$out/registry-$build.bin" scripts/bench-pipelines.sh --only copy --sizes "$pipeline_sizes" --repeats 3 2>&1 |
      tee -a "$out/pipelines.txt"
  done
done
