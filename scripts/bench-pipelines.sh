#!/usr/bin/env bash
# Throughput of cudaoverlap in real gst-launch-1.0 pipelines, next to
# GStreamer's own CUDA path (nvcodec's cudaupload ! cudadownload) and the
# CPU's videoconvert. Prints a table: frames/s, GB/s each way, % of the PCIe
# bound, and the host CPU time (every thread of the process) per frame;
# with --csv FILE also writes the rows for scripts/bench-plot.py.
#
#   scripts/bench-pipelines.sh [--frames 600] [--repeats 3] [--sizes 1920x1080,3840x2160]
#                              [--pcie-gbps 55] [--csv FILE]
#                              [--only copy|writes|convert|yuy2|blur|scale|decode|chain|devices]
#                              [--media DIR]
#
# Needs gst-launch-1.0 with the cudaoverlap plugin on its path (source
# scripts/env.sh for the build tree, or .gpu/gst/env.sh on a GPU machine
# without GStreamer). Rows whose elements are missing say so and are skipped.
#
# How the source's cost is kept out: videotestsrc writes one frame and
# imagefreeze pushes that buffer again and again, so upstream costs nothing
# per frame. Where imagefreeze passes the ALLOCATION query on, the frame is
# written into cudaoverlap's pinned pool (case "pinned pool"); behind
# `identity drop-allocation=true` it is in upstream's own memory ("not
# ours"), which cudaoverlap pins once, or, with pin-upstream-memory=false,
# copies into pinned staging memory every frame (over the CPU's cores). The
# "writes" rows have videotestsrc writing every frame, to show what a real
# source costs. And how start-up is kept out: the time is gst-launch-1.0's
# own, from PLAYING to EOS, and each pipeline runs with 60 and with 60 + N
# frames; frames/s is N over the difference, so whatever the first frames
# cost cancels out. The median of --repeats such pairs is reported.
#
# Cases, for each size:
#   copy    RGBA -> RGBA: cudaoverlap (pinned pool / not ours, pinned once /
#           not ours, staged / mode=serial), cudaupload ! cudadownload
#   writes  videotestsrc writing every frame, as a camera or decoder does:
#           alone, into cudaoverlap's pinned pool, and into its own memory,
#           and the element alone on a frozen frame, rounds interleaved;
#           then each case's frames/s and CPU against the source alone's
#   convert NV12 -> RGBA: the same with kernel=convert, cudaupload !
#           cudaconvert ! cudadownload, videoconvert n-threads=<cores>
#   yuy2    YUY2 -> RGBA (a USB camera's format): cudaoverlap kernel=convert
#           from the pinned pool and mode=serial, videoconvert n-threads=<cores>
#   blur    RGBA, sigma 5: cudaoverlap overlapped vs mode=serial
#   scale   (only when asked) NV12 4K -> 1080p and 1080p -> 4K: kernel=scale
#           bilinear and lanczos, kernel=convert to RGBA (bilinear),
#           cudaupload ! cudascale ! cudadownload,
#           videoscale n-threads=<cores>; to RGBA: kernel=convert,
#           cudaupload ! cudaconvertscale ! cudadownload,
#           videoconvertscale n-threads=<cores>
#   decode  (only when asked) H.264 decoded by nvh264dec from the files
#           gpu-bundle.sh makes (.gpu/media/WxH.h264, or --media DIR): the
#           decoder alone and with cudaoverlap kernel=blur after it, in
#           GStreamer's CUDA memory and in system memory, rounds
#           interleaved; then each cudaoverlap case against its decoder
#           alone's frames/s, and its CPU a frame over the decoder's
#   chain   (only when asked) RGBA, balance ! blur sigma=2 ! invert: one
#           element with chain=; the three as elements in series, which
#           pass frames in GStreamer's CUDA memory, and with system memory
#           between them (a round trip each); blur alone; a chain of
#           three per-pixel steps (fused into one launch) and its three
#           elements
#   devices RGBA copy on each GPU alone (device-id=N) and on all of them in
#           one element (devices=all, ring 4 and 8); with several GPUs only
set -u
frames=600
repeats=3
sizes=1920x1080,3840x2160
pcie=55
csv=
only=
media=$(cd "$(dirname "$0")/.." && pwd)/.gpu/media
while [ $# -gt 0 ]; do
  case $1 in
    --frames) frames=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --pcie-gbps) pcie=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --media) media=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench-pipelines: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "${EPOCHREALTIME:-}" ] || {
  echo "bench-pipelines: needs bash 5 or later (EPOCHREALTIME)" >&2
  exit 2
}
command -v gst-launch-1.0 >/dev/null || {
  echo "bench-pipelines: no gst-launch-1.0; source scripts/env.sh or .gpu/gst/env.sh" >&2
  exit 2
}
gst-inspect-1.0 cudaoverlap >/dev/null 2>&1 || {
  echo "bench-pipelines: the cudaoverlap plugin is not on GStreamer's path" >&2
  exit 2
}
cores=$(nproc)
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c '^[0-9]')
# CUDA numbers only the GPUs CUDA_VISIBLE_DEVICES lets it see.
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
warm=60
[ -n "$csv" ] && echo "workload,size,case,fps,in_gbps,out_gbps,pcie_pct,cpu_us_per_frame" >"$csv"

have() { gst-inspect-1.0 "$1" >/dev/null 2>&1; }
# nvcodec's NVRTC elements (cudaconvert, cudascale, cudaconvertscale) in
# GStreamer 1.22 compile for compute_52, which CUDA 13's NVRTC refuses, so
# they do not register; the stand-in gpu-bundle.sh builds
# (scripts/nvrtc-arch.c) raises the architecture and forwards to the
# toolkit's NVRTC. Used where it is and GST_CUDA_NVRTC_LIBNAME is not set.
stand_in=$(cd "$(dirname "$0")/.." && pwd)/.gpu/bin/libnvrtc-arch.so
if [ -z "${GST_CUDA_NVRTC_LIBNAME:-}" ] && [ -f "$stand_in" ]; then
  for f in /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda-13*/lib64/libnvrtc.so.13; do
    [ -f "$f" ] && export CUDAOVERLAP_NVRTC=${CUDAOVERLAP_NVRTC:-$f} GST_CUDA_NVRTC_LIBNAME=$stand_in
  done
fi
# nvcodec registers those elements by what it found when the registry was
# written: with GST_CUDA_NVRTC_LIBNAME set, a registry of its own, so one
# written earlier without it is not read.
if [ -n "${GST_CUDA_NVRTC_LIBNAME:-}" ]; then
  export GST_REGISTRY_1_0="${GST_REGISTRY_1_0:-${TMPDIR:-/tmp}/gst-registry.bin}.nvrtc"
fi

# Samples process PID's threads until it ends, every 2 ms: a line "TIME TID
# NS" per thread, NS its CPU time so far in nanoseconds, the scheduler's own
# count (/proc/PID/task/TID/schedstat), not the clock ticks of user +
# system time, so that a few hundred frames' worth is exact. A thread that
# ended keeps its last line, so what it did still counts. Shell builtins
# only: the sampler's own cost stays small.
sample_threads() {
  local pid=$1 f t rest
  exec 8<> <(:)  # never readable: read -t on it sleeps without a fork
  while [ -d /proc/"$pid"/task ]; do
    for f in /proc/"$pid"/task/*/schedstat; do
      read -r t rest 2>/dev/null <"$f" || continue
      f=${f%/schedstat}
      echo "$EPOCHREALTIME ${f##*/} $t"
    done
    read -r -t 0.002 -u 8 rest
  done
}

# "WALL CPU" of one gst-launch-1.0 run of DESCRIPTION: WALL the seconds from
# PLAYING to EOS, as gst-launch-1.0 reports it ("Execution ended after"):
# plugin loading and the preroll (device and pool set-up) are not in it;
# CPU the process's threads' CPU time over the same stretch, from when
# gst-launch-1.0 says it sets the pipeline to PLAYING to when it says it got
# the EOS (each thread's last sample before each moment, so that threads
# that end before the EOS is printed, as some do, still count): start-up
# (CUDA's initialisation, pinning the ring and the pool, which varies by
# more than hundreds of frames cost) and shutdown stay out. gst-launch-1.0
# runs in the C locale, whose messages these are. "fail" when the run does
# not end with EOS, or prints nothing for `run_limit` seconds (it is then
# killed).
run_limit=600
run_once() {
  local fifo pid sampler line t_playing= t_eos= samples
  fifo=$(mktemp -u)
  samples=$(mktemp)
  mkfifo "$fifo"
  # shellcheck disable=SC2086
  LC_ALL=C gst-launch-1.0 $1 >"$fifo" 2>&1 &
  pid=$!
  sample_threads "$pid" >"$samples" &
  sampler=$!
  exec 9<"$fifo"
  rm -f "$fifo"
  : >/tmp/bench-pipelines.log
  local ok=1 status
  while :; do
    IFS= read -r -t "$run_limit" line <&9
    status=$?
    [ $status -eq 0 ] || break
    case $line in
      "Setting pipeline to PLAYING"*) t_playing=$EPOCHREALTIME ;;
      "Got EOS from element"*) t_eos=$EPOCHREALTIME ;;
    esac
    printf "%s\n" "$line" >>/tmp/bench-pipelines.log
  done
  if [ $status -gt 128 ]; then  # silent for run_limit seconds: stuck
    echo "bench-pipelines: no output for ${run_limit} s, stopped" >>/tmp/bench-pipelines.log
    kill "$pid" 2>/dev/null
    ok=0
  fi
  exec 9<&-
  wait "$pid" || ok=0
  wait "$sampler"
  if [ $ok = 0 ] || [ -z "$t_playing" ] || [ -z "$t_eos" ]; then
    rm -f "$samples"
    echo fail
    return
  fi
  local wall cpu
  wall=$(sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\).*/\1 \2 \3/p' \
    /tmp/bench-pipelines.log | awk '{printf "%.6f", $1 * 3600 + $2 * 60 + $3}')
  cpu=$(awk -v a="$t_playing" -v b="$t_eos" '
    $1 <= a { at_a[$2] = $3 }
    $1 <= b { at_b[$2] = $3 }
    END { for (t in at_b) sb += at_b[t]; for (t in at_a) sa += at_a[t]; printf "%.6f", (sb - sa) / 1e9 }' \
    "$samples")
  rm -f "$samples"
  [ -n "$wall" ] || { echo fail; return; }
  echo "$wall $cpu"
}

# pair PIPELINE-WITH-@N@: "FPS CPU" of one pair of runs, warm + N frames
# and warm frames: frames/s over the difference, which takes out what the
# first frames cost, and host CPU per frame (us) the same way; "fail" (with
# the first error line in /tmp/bench-pipelines.log) when either run failed.
pair() {
  local short long
  short=$(run_once "${1//@N@/$warm}")
  long=$(run_once "${1//@N@/$((warm + frames))}")
  if [ "$short" = fail ] || [ "$long" = fail ] || [ -z "$short" ] || [ -z "$long" ]; then
    echo fail
    return
  fi
  awk -v n="$frames" -v s="$short" -v l="$long" 'BEGIN {
    split(s, a, " "); split(l, b, " "); d = b[1] - a[1]
    printf "%.3f %.1f\n", (d > 0 ? n / d : 0), (b[2] - a[2]) / n * 1e6 }'
}

median() { printf "%s\n" "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# row WORKLOAD SIZE CASE IN_BYTES OUT_BYTES FPS CPU: one line of the table
# (and of the CSV).
row() {
  awk -v w="$1" -v z="$2" -v c="$3" -v i="$4" -v o="$5" -v fps="$6" -v cpu="$7" -v bound="$pcie" \
    -v csv="$csv" 'BEGIN {
      gin = fps * i / 1e9; gout = fps * o / 1e9
      big = (i > o ? i : o); pct = 100 * fps * big / (bound * 1e9)
      printf "%-8s %-10s %-50s %9.0f %8.1f %8.1f %7.0f%% %9.0f\n", w, z, c, fps, gin, gout, pct, cpu
      if (csv != "") printf "%s,%s,\"%s\",%.1f,%.2f,%.2f,%.1f,%.1f\n", w, z, c, fps, gin, gout, pct, cpu >> csv
    }'
}

failed() {
  printf "%-8s %-10s %-50s %s\n" "$1" "$2" "$3" \
    "failed: $(grep -m1 -i error /tmp/bench-pipelines.log | cut -c1-100)"
}

# measure WORKLOAD SIZE CASE IN_BYTES OUT_BYTES PIPELINE-WITH-@N@
# The median of `repeats` pairs (see pair).
measure() {
  local rates=() cpus=() r result
  for ((r = 0; r < repeats; r++)); do
    result=$(pair "$6")
    [ "$result" = fail ] && { failed "$1" "$2" "$3"; return; }
    rates+=("${result% *}")
    cpus+=("${result#* }")
  done
  row "$1" "$2" "$3" "$4" "$5" "$(median "${rates[@]}")" "$(median "${cpus[@]}")"
}

# run_rounds WORKLOAD SIZE: each pipeline of the array `pipes` (named in
# `names`) once a round, `repeats` rounds, so that a machine whose speed
# drifts from run to run (as shared ones do) weighs on all alike; fps and
# cpu, [round * cases + case], get each run's figures. False, after a
# "failed" row, when a run failed.
run_rounds() {
  local n=${#pipes[@]} r c result
  fps=() cpu=()
  for ((r = 0; r < repeats; r++)); do
    for ((c = 0; c < n; c++)); do
      result=$(pair "${pipes[c]}")
      [ "$result" = fail ] && { failed "$1" "$2" "${names[c]}"; return 1; }
      fps[r * n + c]=${result% *}
      cpu[r * n + c]=${result#* }
    done
  done
}

# of_case ARRAY CASE: case CASE's figures in ARRAY (fps or cpu), a round each.
of_case() {
  local -n values=$1
  local n=${#pipes[@]} r
  for ((r = 0; r < repeats; r++)); do echo "${values[r * n + $2]}"; done
}

# rows_of_rounds WORKLOAD SIZE: after run_rounds, a row per case with its
# medians; its bytes in and out from the arrays `ins` and `outs`.
rows_of_rounds() {
  local c
  for ((c = 0; c < ${#pipes[@]}; c++)); do
    # shellcheck disable=SC2046
    row "$1" "$2" "${names[c]}" "${ins[c]}" "${outs[c]}" "$(median $(of_case fps $c))" \
      "$(median $(of_case cpu $c))"
  done
}

# against WORKLOAD SIZE CASE TEXT FPS-RATIOS CPU-FIGURES: the line that
# compares a case with its reference, round by round.
against() {
  # shellcheck disable=SC2086
  printf "%-8s %-10s %-50s %s\n" "$1" "$2" "  ${3#*! }" \
    "$(median $5)% of $4's frames/s ($(tr ' ' / <<<"$5")), CPU $(median $6)$7 ($(tr ' ' / <<<"$6"))"
}

# measure_writes SIZE BYTES WRITER ELEMENT-ONLY: the source writing every
# frame alone, into the element's pinned pool and into its own memory, and
# the element alone on a frozen frame in its pool (ELEMENT-ONLY: what the
# element itself costs), in interleaved rounds (run_rounds). Then, for the
# two cases with the element, the median over the rounds of each round's
# ratio: frames/s against the source alone's, and CPU a frame over the
# source alone's plus the element's own.
measure_writes() {
  local size=$1 bytes=$2 writer=$3 element=$4 sink="fakesink sync=false"
  local names=("videotestsrc (every frame) alone" "videotestsrc (every frame) ! cudaoverlap, pinned pool"
    "videotestsrc (every frame) ! cudaoverlap, own memory" "cudaoverlap alone (frozen frame, pinned pool)")
  local pipes=("$writer ! $sink" "$writer ! cudaoverlap ! $sink"
    "$writer ! identity drop-allocation=true ! cudaoverlap ! $sink" "$element ! cudaoverlap ! $sink")
  local ins=("$bytes" "$bytes" "$bytes" "$bytes") outs=(0 "$bytes" "$bytes" "$bytes")
  local fps=() cpu=() r c f u
  run_rounds writes "$size" || return
  rows_of_rounds writes "$size"
  for c in 1 2; do
    f= u=
    for ((r = 0; r < repeats; r++)); do
      f+=" $(awk -v a="${fps[r * 4 + c]}" -v b="${fps[r * 4]}" 'BEGIN {printf "%.1f", 100 * a / b}')"
      u+=" $(awk -v a="${cpu[r * 4 + c]}" -v b="${cpu[r * 4]}" -v e="${cpu[r * 4 + 3]}" \
        'BEGIN {printf "%+.1f", 100 * (a / (b + e) - 1)}')"
    done
    against writes "$size" "${names[c]}" alone "${f# }" "${u# }" "% over alone + element"
  done
}

# measure_decode SIZE FILE BYTES: nvh264dec alone and with cudaoverlap
# kernel=blur after it, in GStreamer's CUDA memory and in system memory,
# in interleaved rounds (run_rounds); then each cudaoverlap case's
# frames/s against its decoder alone's, and its CPU a frame over the
# decoder's. BYTES: a decoded frame's, for the columns of what crosses
# PCIe (the decoder's own download in system memory).
measure_decode() {
  local size=$1 file=$2 bytes=$3 sink="fakesink sync=false" cuda="video/x-raw(memory:CUDAMemory)"
  local dec="filesrc location=$file ! h264parse ! identity eos-after=@N@ ! nvh264dec"
  local names=("nvh264dec alone, CUDA memory" "nvh264dec ! cudaoverlap blur, CUDA memory"
    "nvh264dec alone, system memory" "nvh264dec ! cudaoverlap blur, system memory")
  local pipes=("$dec ! $cuda ! $sink" "$dec ! $cuda ! cudaoverlap kernel=blur ! $cuda ! $sink"
    "$dec ! video/x-raw ! $sink" "$dec ! video/x-raw ! cudaoverlap kernel=blur ! video/x-raw ! $sink")
  local ins=(0 0 0 "$bytes") outs=(0 0 "$bytes" $((2 * bytes)))
  local fps=() cpu=() r c f u
  run_rounds decode "$size" || return
  rows_of_rounds decode "$size"
  for c in 1 3; do
    f= u=
    for ((r = 0; r < repeats; r++)); do
      f+=" $(awk -v a="${fps[r * 4 + c]}" -v b="${fps[r * 4 + c - 1]}" 'BEGIN {printf "%.1f", 100 * a / b}')"
      u+=" $(awk -v a="${cpu[r * 4 + c]}" -v b="${cpu[r * 4 + c - 1]}" 'BEGIN {printf "%+.0f", a - b}')"
    done
    against decode "$size" "${names[c]}" "the decoder alone" "${f# }" "${u# }" " us/frame over it"
  done
}

echo "cudaoverlap pipelines: $frames frames after $warm (start-up cancelled out), median of" \
  "$repeats, sync=false; PCIe bound $pcie GB/s each way; $cores CPU cores"
printf "%-8s %-10s %-50s %9s %8s %8s %8s %9s\n" workload size case "frames/s" "in GB/s" \
  "out GB/s" "% PCIe" "CPU us/fr"
IFS=, read -r -a size_list <<<"$sizes"
for size in "${size_list[@]}"; do
  w=${size%x*}
  h=${size#*x}
  rgba=$((w * h * 4))
  nv12=$((w * h * 3 / 2))
  still() { echo "videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=$1,width=$w,height=$h,framerate=60/1"; }
  freeze="imagefreeze num-buffers=@N@"
  notours="identity drop-allocation=true ! $freeze"
  sink="fakesink sync=false"

  if [ -z "$only" ] || [ "$only" = copy ]; then
    src=$(still RGBA)
    measure copy "$size" "cudaoverlap, pinned pool" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap ! $sink"
    measure copy "$size" "cudaoverlap, not ours, pinned once" $rgba $rgba \
      "$src ! $notours ! cudaoverlap ! $sink"
    measure copy "$size" "cudaoverlap, not ours, staged" $rgba $rgba \
      "$src ! $notours ! cudaoverlap pin-upstream-memory=false ! $sink"
    measure copy "$size" "cudaoverlap mode=serial" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap mode=serial ! $sink"
    if have cudaupload && have cudadownload; then
      measure copy "$size" "cudaupload ! cudadownload" $rgba $rgba \
        "$src ! $freeze ! cudaupload ! video/x-raw(memory:CUDAMemory) ! cudadownload ! video/x-raw ! $sink"
    else
      echo "copy     $size cudaupload ! cudadownload: not available (nvcodec)"
    fi
    measure copy "$size" "imagefreeze alone (the source's cost)" $rgba 0 \
      "$src ! $freeze ! $sink"
  fi

  if [ -z "$only" ] || [ "$only" = writes ]; then
    writer="videotestsrc num-buffers=@N@ pattern=solid-color ! video/x-raw,format=RGBA,width=$w,height=$h"
    measure_writes "$size" $rgba "$writer" "$(still RGBA) ! $freeze"
  fi

  if [ -z "$only" ] || [ "$only" = convert ]; then
    src=$(still NV12)
    out="video/x-raw,format=RGBA"
    measure convert "$size" "cudaoverlap, pinned pool" $nv12 $rgba \
      "$src ! $freeze ! cudaoverlap kernel=convert ! $out ! $sink"
    measure convert "$size" "cudaoverlap, not ours, pinned once" $nv12 $rgba \
      "$src ! $notours ! cudaoverlap kernel=convert ! $out ! $sink"
    measure convert "$size" "cudaoverlap, not ours, staged" $nv12 $rgba \
      "$src ! $notours ! cudaoverlap kernel=convert pin-upstream-memory=false ! $out ! $sink"
    measure convert "$size" "cudaoverlap mode=serial" $nv12 $rgba \
      "$src ! $freeze ! cudaoverlap kernel=convert mode=serial ! $out ! $sink"
    if have cudaupload && have cudaconvert && have cudadownload; then
      measure convert "$size" "cudaupload ! cudaconvert ! cudadownload" $nv12 $rgba \
        "$src ! $freeze ! cudaupload ! video/x-raw(memory:CUDAMemory) ! cudaconvert ! video/x-raw(memory:CUDAMemory),format=RGBA ! cudadownload ! video/x-raw ! $sink"
    else
      echo "convert  $size cudaupload ! cudaconvert ! cudadownload: not available (nvcodec)"
    fi
    measure convert "$size" "videoconvert n-threads=$cores" $nv12 $rgba \
      "$src ! $freeze ! videoconvert n-threads=$cores dither=none ! $out ! $sink"
  fi

  if [ -z "$only" ] || [ "$only" = yuy2 ]; then
    src=$(still YUY2)
    out="video/x-raw,format=RGBA"
    yuy2=$((w * h * 2))
    measure yuy2 "$size" "cudaoverlap, pinned pool" $yuy2 $rgba \
      "$src ! $freeze ! cudaoverlap kernel=convert ! $out ! $sink"
    measure yuy2 "$size" "cudaoverlap mode=serial" $yuy2 $rgba \
      "$src ! $freeze ! cudaoverlap kernel=convert mode=serial ! $out ! $sink"
    measure yuy2 "$size" "videoconvert n-threads=$cores" $yuy2 $rgba \
      "$src ! $freeze ! videoconvert n-threads=$cores dither=none ! $out ! $sink"
  fi

  if [ "$only" = scale ]; then
    # 4K to 1080p and 1080p to 4K, NV12 both sides.
    if [ "$size" = 3840x2160 ]; then to_w=1920 to_h=1080; else to_w=3840 to_h=2160; fi
    src=$(still NV12)
    out="video/x-raw,width=$to_w,height=$to_h"
    scaled=$((to_w * to_h * 3 / 2))
    for method in bilinear lanczos; do
      measure scale "$size" "cudaoverlap method=$method -> ${to_w}x$to_h" $nv12 $scaled \
        "$src ! $freeze ! cudaoverlap kernel=scale method=$method ! $out ! $sink"
    done
    measure scale "$size" "cudaoverlap kernel=convert -> RGBA ${to_w}x$to_h" $nv12 \
      $((to_w * to_h * 4)) \
      "$src ! $freeze ! cudaoverlap kernel=convert ! $out,format=RGBA ! $sink"
    if have cudaupload && have cudascale && have cudadownload; then
      measure scale "$size" "cudaupload ! cudascale ! cudadownload" $nv12 $scaled \
        "$src ! $freeze ! cudaupload ! video/x-raw(memory:CUDAMemory) ! cudascale ! video/x-raw(memory:CUDAMemory),width=$to_w,height=$to_h ! cudadownload ! video/x-raw ! $sink"
    else
      echo "scale    $size cudaupload ! cudascale ! cudadownload: not available (nvcodec)"
    fi
    measure scale "$size" "videoscale n-threads=$cores" $nv12 $scaled \
      "$src ! $freeze ! videoscale n-threads=$cores ! $out ! $sink"
    # Scaled and converted to RGBA in one element, as kernel=convert does.
    if have cudaupload && have cudaconvertscale && have cudadownload; then
      measure scale "$size" "cudaupload ! cudaconvertscale ! cudadownload -> RGBA" $nv12 \
        $((to_w * to_h * 4)) \
        "$src ! $freeze ! cudaupload ! video/x-raw(memory:CUDAMemory) ! cudaconvertscale ! video/x-raw(memory:CUDAMemory),width=$to_w,height=$to_h,format=RGBA ! cudadownload ! video/x-raw ! $sink"
    else
      echo "scale    $size cudaupload ! cudaconvertscale ! cudadownload: not available (nvcodec)"
    fi
    measure scale "$size" "videoconvertscale n-threads=$cores -> RGBA" $nv12 \
      $((to_w * to_h * 4)) \
      "$src ! $freeze ! videoconvertscale n-threads=$cores dither=none ! $out,format=RGBA ! $sink"
  fi

  if [ "$only" = chain ]; then
    src=$(still RGBA)
    steps="balance contrast=1.2 saturation=0.8 ! blur sigma=2 ! invert"
    measure chain "$size" "one element, chain of the three" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap chain=\"$steps\" ! $sink"
    measure chain "$size" "three elements, CUDA memory between them" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap kernel=balance contrast=1.2 saturation=0.8 ! cudaoverlap kernel=blur sigma=2 ! cudaoverlap kernel=invert ! $sink"
    measure chain "$size" "three elements, system memory between them" $((3 * rgba)) $((3 * rgba)) \
      "$src ! $freeze ! cudaoverlap kernel=balance contrast=1.2 saturation=0.8 ! video/x-raw ! cudaoverlap kernel=blur sigma=2 ! video/x-raw ! cudaoverlap kernel=invert ! $sink"
    measure chain "$size" "cudaoverlap kernel=blur sigma=2 alone" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap kernel=blur sigma=2 ! $sink"
    fused="balance contrast=1.2 saturation=0.8 ! invert ! convert"
    measure chain "$size" "one element, fused chain $fused -> BGRx" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap chain=\"$fused\" ! video/x-raw,format=BGRx ! $sink"
    measure chain "$size" "its three as elements, system memory between them" $((3 * rgba)) \
      $((3 * rgba)) \
      "$src ! $freeze ! cudaoverlap kernel=balance contrast=1.2 saturation=0.8 ! video/x-raw ! cudaoverlap kernel=invert ! video/x-raw ! cudaoverlap kernel=convert ! video/x-raw,format=BGRx ! $sink"
  fi

  if [ "$only" = decode ]; then
    if ! have nvh264dec || ! have h264parse; then
      echo "decode   $size nvh264dec: not available (nvcodec, or no NVDEC here)"
    elif [ ! -f "$media/$size.h264" ]; then
      echo "decode   $size no $media/$size.h264 (scripts/gpu-bundle.sh makes it)"
    else
      measure_decode "$size" "$media/$size.h264" "$nv12"
    fi
  fi

  # Several GPUs: each device alone, then all of them together in one
  # element (devices=all; README, "Several GPUs"). The % PCIe column is of
  # one link; with N devices the bound is N links.
  if [ "$only" = devices ] || { [ -z "$only" ] && [ "$gpus" -ge 2 ]; }; then
    src=$(still RGBA)
    if [ "$gpus" -lt 2 ]; then
      echo "devices  $size several GPUs: not run ($gpus GPU on this machine)"
    else
      for ((d = 0; d < gpus; d++)); do
        measure devices "$size" "cudaoverlap device-id=$d, pinned pool" $rgba $rgba \
          "$src ! $freeze ! cudaoverlap device-id=$d ! $sink"
      done
      measure devices "$size" "cudaoverlap devices=all ($gpus GPUs), pinned pool" $rgba $rgba \
        "$src ! $freeze ! cudaoverlap devices=all ! $sink"
      measure devices "$size" "cudaoverlap devices=all ring-size=8, pinned pool" $rgba $rgba \
        "$src ! $freeze ! cudaoverlap devices=all ring-size=8 ! $sink"
    fi
  fi

  if [ -z "$only" ] || [ "$only" = blur ]; then
    src=$(still RGBA)
    measure blur "$size" "cudaoverlap blur sigma=5" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap kernel=blur sigma=5 ! $sink"
    measure blur "$size" "cudaoverlap blur sigma=5 mode=serial" $rgba $rgba \
      "$src ! $freeze ! cudaoverlap kernel=blur sigma=5 mode=serial ! $sink"
  fi
done
