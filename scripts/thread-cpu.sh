#!/usr/bin/env bash
# Where a pipeline's host CPU goes, thread by thread: runs a gst-launch-1.0
# line, reads every thread's CPU time and context switches from /proc every
# few milliseconds while it runs, and prints per thread name (threads of one
# name added up) the user + system CPU and the voluntary and involuntary
# context switches per frame.
#   scripts/thread-cpu.sh [--short N0] FRAMES COMMAND ARGS...
# Each argument @FRAMES@ in the command becomes the frame count. With
# --short, the command also runs with N0 frames, and what that run cost is
# taken off, per thread name: start-up (the ring's pinned memory, CUDA's
# initialisation) and shutdown cancel out and the figures are per frame of
# the steady state, (long - short) / (FRAMES - N0). e.g.
#   scripts/thread-cpu.sh --short 600 6000 gst-launch-1.0 videotestsrc num-buffers=1 ! \
#     video/x-raw,format=RGBA,width=1920,height=1080 ! \
#     imagefreeze num-buffers=@FRAMES@ ! cudaoverlap ! fakesink sync=false
# CPU times are each thread's own count in nanoseconds
# (/proc/PID/task/TID/schedstat), where the kernel keeps it; otherwise its
# user + system clock ticks (usually 10 ms, a tick a frame's worth of noise
# in short runs). What a thread did after the last reading before it ended
# is not counted: run a few seconds' worth of frames.
set -u
short=0
if [ "${1:-}" = --short ]; then
  short=${2:?--short needs a frame count}
  shift 2
fi
frames=${1:?usage: thread-cpu.sh [--short N0] FRAMES COMMAND ARGS...}
shift
[ $# -gt 0 ] || { echo "thread-cpu: no command" >&2; exit 2; }
[ "$short" -lt "$frames" ] || { echo "thread-cpu: --short must be fewer frames" >&2; exit 2; }
tick=$(getconf CLK_TCK)
use_ns=0
[ -r /proc/self/schedstat ] && use_ns=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run N OUTFILE: the command with N frames; per thread at its last reading:
# tid name utime stime voluntary involuntary ns (ns: -1 without schedstat).
run() {
  local n=$1 samples=$2 args=() a
  for a in "${cmd[@]}"; do args+=("${a//@FRAMES@/$n}"); done
  "${args[@]}" >/dev/null 2>&1 &
  local pid=$! t s v name rest ns
  while kill -0 "$pid" 2>/dev/null; do
    for t in /proc/"$pid"/task/*; do
      s=$(cat "$t/stat" 2>/dev/null) || continue
      ns=-1
      [ "$use_ns" = 1 ] && { read -r ns _ <"$t/schedstat"; } 2>/dev/null
      v=$(awk '/^voluntary_ctxt_switches/{v=$2} /^nonvoluntary_ctxt_switches/{n=$2} END{print v+0, n+0}' \
        "$t/status" 2>/dev/null) || continue
      name=$( { tr ' ' '_' <"$t/comm"; } 2>/dev/null) || continue
      # The fields after the command name's closing parenthesis: the state is
      # the first of them, utime the 12th and stime the 13th.
      rest=${s##*) }
      read -r -a f <<<"$rest"
      echo "${t##*/} $name ${f[11]} ${f[12]} $v ${ns:--1}"
    done >>"$samples"
    sleep 0.005
  done
  wait "$pid"
}

cmd=("$@")
run "$frames" "$work/long" || { echo "thread-cpu: the command failed" >&2; exit 1; }
: >"$work/short"
if [ "$short" -gt 0 ]; then
  run "$short" "$work/short" || { echo "thread-cpu: the command failed" >&2; exit 1; }
fi
awk -v frames="$((frames - short))" -v tick="$tick" '
  # The last reading of each thread, summed per name, once per file.
  FNR == 1 { file++ }
  { key = file " " $1; name[key] = $2; vol[key] = $5; inv[key] = $6
    cpu[key] = $7 >= 0 ? $7 / 1e9 : ($3 + $4) / tick
    sign[key] = file == 1 ? 1 : -1 }
  END {
    for (k in name) {
      n = name[k]; c[n] += sign[k] * cpu[k]; v[n] += sign[k] * vol[k]; i[n] += sign[k] * inv[k]
      if (sign[k] > 0) cnt[n]++
      tc += sign[k] * cpu[k]; tv += sign[k] * vol[k]; ti += sign[k] * inv[k]
    }
    printf "%-20s %7s %12s %14s %12s\n", "thread", "threads", "cpu us/frame", "vol sw/frame", "invol/frame"
    for (n in c)
      printf "%-20s %7d %12.1f %14.2f %12.2f\n", n, cnt[n], c[n] * 1e6 / frames, v[n] / frames, i[n] / frames | "sort -k3,3gr -k4,4gr"
    close("sort -k3,3gr -k4,4gr")
    printf "%-20s %7s %12.1f %14.2f %12.2f\n", "all", "", tc * 1e6 / frames, tv / frames, ti / frames
  }' "$work/long" "$work/short"
