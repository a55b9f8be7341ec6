#!/usr/bin/env bash
# Measures the latency cudaoverlap adds with GStreamer's latency tracer and
# compares it with what the element reports in the LATENCY query, on a live
# source (videotestsrc is-live=true) at the given rate, against the clock
# (fakesink sync=true), as a live rig runs it.
#
#   scripts/latency-check.sh [options] [-- extra cudaoverlap properties]
#     --backend cpu|cuda|auto   (default auto)
#     --size WxH                (default 1920x1080)
#     --format RGBA|NV12|…      (default RGBA)
#     --fps N                   (default 60)
#     --frames N                (default 600)
#     --skip N                  frames left out as warm-up (default 60)
#     --mode overlapped|serial  (default overlapped)
#     --kernel NAME             (default copy)
#     --sink DESCRIPTION        (default "fakesink sync=true processing-deadline=0")
#     --log FILE                keep the tracer log there
#     --check                   exit 1 unless both figures were found (for tests)
#
# "measured" is the tracer's element-latency of cudaoverlap: from the moment
# upstream pushes a buffer into it to the moment it pushes the result out.
# "reported" is the tracer's element-reported-latency: the min latency the
# element adds in its last answer to the LATENCY query. The element reports
# the longest stay it measured (after warm-up, +10 %), so reported should be
# at or above the measured p99 and close to the measured max.
#
# Why processing-deadline=0: a syncing sink adds its processing deadline
# (20 ms by default) to the pipeline latency and holds each push that long;
# cudaoverlap pushes from its own thread, so the next frame, ready sooner,
# waits behind that push and the tracer counts the wait as the element's.
# That wait is the sink's budget, not work the element does; the element
# leaves it out of what it reports. Run with --sink "fakesink sync=true" to
# see the tracer count it.
#
# Where the plugin comes from is up to the caller: `. scripts/env.sh` here,
# `. .gpu/gst/env.sh` plus GST_PLUGIN_PATH on a GPU machine (see README).
set -euo pipefail

backend=auto size=1920x1080 format=RGBA fps=60 frames=600 skip=60 mode=overlapped
kernel=copy log="" check=0 sink="fakesink sync=true processing-deadline=0"
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --format) format=$2; shift 2 ;;
    --fps) fps=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --sink) sink=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --check) check=1; shift ;;
    --) shift; break ;;
    *) echo "latency-check: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
extra=("$@")
width=${size%x*} height=${size#*x}
keep_log=1
if [ -z "$log" ]; then
  log=$(mktemp "${TMPDIR:-/tmp}/latency-check.XXXXXX.log")
  keep_log=0
fi

# GST_DEBUG_NO_COLOR keeps the log parseable; GST_TRACER:7 is where the
# latency tracer writes its records.
# (scripts/sanitize.sh preloads its runtime into gst-launch-1.0 alone.)
LD_PRELOAD="${CUDAOVERLAP_SANITIZER_PRELOAD:-${LD_PRELOAD:-}}" \
  GST_TRACERS="latency(flags=pipeline+element+reported)" GST_DEBUG="GST_TRACER:7" \
  GST_DEBUG_NO_COLOR=1 GST_DEBUG_FILE="$log" \
  gst-launch-1.0 -q videotestsrc is-live=true num-buffers="$frames" pattern=solid-color \
  ! "video/x-raw,format=$format,width=$width,height=$height,framerate=$fps/1" \
  ! cudaoverlap name=overlap backend="$backend" mode="$mode" kernel="$kernel" "${extra[@]}" \
  ! $sink >/dev/null

rc=0
python3 - "$log" "$skip" "$check" \
  "$size $format $kernel $mode backend=$backend, live $fps frames/s, $frames frames, into $sink" \
  <<'PY' || rc=$?
import re, sys
log, skip, check, what = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
measured, reported = [], []
field = lambda name, line: re.search(name + r"=\(\w+\)([^,;]+)", line)
for line in open(log, errors="replace"):
    if "element=(string)overlap" not in line:
        continue
    if "element-latency," in line:
        measured.append(int(field("time", line).group(1)) / 1e6)
    elif "element-reported-latency," in line:
        reported.append(int(field("min", line).group(1)) / 1e6)
print(f"cudaoverlap {what}")
kept = sorted(measured[skip:])
if kept:
    pct = lambda p: kept[min(len(kept) - 1, int(p / 100 * len(kept)))]
    mean = sum(kept) / len(kept)
    print(f"  measured (latency tracer, {len(kept)} frames after {skip}): mean {mean:.3f} ms, "
          f"median {pct(50):.3f} ms, p99 {pct(99):.3f} ms, max {kept[-1]:.3f} ms")
else:
    print("  measured: no element-latency records for cudaoverlap")
if reported:
    last = reported[-1]
    print(f"  reported (LATENCY query, last of {len(reported)}): min {last:.3f} ms")
    if kept:
        verdict = "covers" if last >= pct(99) else "is BELOW"
        print(f"  reported {verdict} the measured p99 ({last - pct(99):+.3f} ms); "
              f"reported - mean = {last - mean:+.3f} ms")
else:
    print("  reported: no element-reported-latency records for cudaoverlap")
if check and not (kept and reported):
    sys.exit(1)
PY
# A log nobody asked for is kept only when something was missing from it.
if [ "$keep_log" = 1 ] || [ "$rc" != 0 ]; then echo "  tracer log: $log"; else rm -f "$log"; fi
exit $rc
