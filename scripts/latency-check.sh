#!/usr/bin/env bash
# Measures the latency cudaoverlap adds to a live pipeline as a user sees
# it, with GStreamer's latency tracer: a live source (videotestsrc
# is-live=true) at the given rate, into a syncing sink with its default
# settings, as a live rig runs it.
#
#   scripts/latency-check.sh [options] [-- extra cudaoverlap properties]
#     --backend cpu|cuda|auto   (default auto)
#     --size WxH                (default 1920x1080)
#     --format RGBA|NV12|…      (default RGBA)
#     --fps N                   (default 60)
#     --frames N                (default 600)
#     --skip N                  frames left out as warm-up (default 60)
#     --kernel NAME             (default copy)
#     --caps-out CAPS           a capsfilter after the element (convert's output)
#     --peers                   also run the peers in the element's place
#     --log FILE                keep the first run's tracer log there
#     --check MS                exit 1 unless the element's stays average at
#                               most MS, it reports at most MS or no more
#                               than its longest stay measured (a machine
#                               that stalled a frame is reported honestly),
#                               and its source-to-sink mean is within MS of
#                               its peer's (implies --peers)
#
# For each pipeline it prints:
#   reported        the min latency the element adds in its last answer to
#                   the LATENCY query (the tracer's element-reported-latency):
#                   what the sink adds to every frame's render time;
#   stay            the element's own measure of each frame, what its report
#                   is made of (mean and p99): chain() to push, less any
#                   wait for a slot downstream holds or for the previous
#                   push to return;
#   own             the tracer's element-latency of the element: upstream's
#                   push into it to its push out, waits included (mean, p99);
#   source-to-sink  the tracer's pipeline latency, the source's push to the
#                   sink's (mean and p99): what the frame lived through.
# Two sinks: "fakesink sync=true" with its defaults, whose 20 ms processing
# deadline is part of the pipeline's latency, and the same with
# processing-deadline=0. The peers: with the sink's defaults "identity !
# queue", which like cudaoverlap pushes from a thread of its own, so that
# the sink's deadline shows in its source-to-sink figure too; with a
# deadline of 0, "identity".
#
# Where the plugin comes from is up to the caller: `. scripts/env.sh` here,
# `. .gpu/gst/env.sh` plus GST_PLUGIN_PATH on a GPU machine.
set -euo pipefail

backend=auto size=1920x1080 format=RGBA fps=60 frames=600 skip=60 kernel=copy caps_out=""
log="" check="" peers=0
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --format) format=$2; shift 2 ;;
    --fps) fps=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --caps-out) caps_out=$2; shift 2 ;;
    --peers) peers=1; shift ;;
    --log) log=$2; shift 2 ;;
    --check) check=$2; peers=1; shift 2 ;;
    --) shift; break ;;
    *) echo "latency-check: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
extra=("$@")
width=${size%x*} height=${size#*x}
dir=$(mktemp -d "${TMPDIR:-/tmp}/latency-check.XXXXXX")
trap 'rm -rf "$dir"' EXIT

element="cudaoverlap name=overlap backend=$backend kernel=$kernel ${extra[*]:-}"
[ -n "$caps_out" ] && element="$element ! $caps_out"
default_sink="fakesink sync=true"
no_deadline="fakesink sync=true processing-deadline=0"
runs=("element|$element|$default_sink")
[ $peers = 1 ] && runs+=("peer|identity ! queue|$default_sink")
runs+=("element|$element|$no_deadline")
[ $peers = 1 ] && runs+=("peer|identity|$no_deadline")

# GST_DEBUG_NO_COLOR keeps the log parseable; GST_TRACER:7 is where the
# latency tracer writes its records. (scripts/sanitize.sh preloads its
# runtime into gst-launch-1.0 alone.)
i=0
for run in "${runs[@]}"; do
  IFS='|' read -r _ middle sink <<<"$run"
  LD_PRELOAD="${CUDAOVERLAP_SANITIZER_PRELOAD:-${LD_PRELOAD:-}}" \
    GST_TRACERS="latency(flags=pipeline+element+reported)" \
    GST_DEBUG="GST_TRACER:7,cudaoverlap-latency:7" \
    GST_DEBUG_NO_COLOR=1 GST_DEBUG_FILE="$dir/$i.log" \
    gst-launch-1.0 -q videotestsrc is-live=true num-buffers="$frames" pattern=solid-color \
    ! "video/x-raw,format=$format,width=$width,height=$height,framerate=$fps/1" \
    ! $middle ! $sink name=sink >/dev/null
  i=$((i + 1))
done
[ -n "$log" ] && cp "$dir/0.log" "$log"

# Under a sanitizer the figures are printed, not held to the check.
sanitized=${CUDAOVERLAP_SANITIZER_PRELOAD:+1}
python3 - "$dir" "$skip" "${check:-}" "${sanitized:-}" \
  "$size $format kernel=$kernel backend=$backend ${extra[*]:-}, live $fps frames/s, $frames frames" \
  "${runs[@]}" <<'PY'
import re, sys
folder, skip, check, sanitized, what = sys.argv[1:6]
skip = int(skip)
runs = [r.split("|") for r in sys.argv[6:]]
field = lambda name, line: re.search(name + r"=\(\w+\)([^,;]+)", line)


def read(log):
    own, reported, s2s, stays = [], [], [], []
    for line in open(log, errors="replace"):
        stay = re.search(r"stay (\d+) ns:", line)
        if stay:
            stays.append(int(stay.group(1)) / 1e6)
        elif "element-reported-latency," in line and "element=(string)overlap" in line:
            reported.append(int(field("min", line).group(1)) / 1e6)
        elif "element-latency," in line and "element=(string)overlap" in line:
            own.append(int(field("time", line).group(1)) / 1e6)
        elif line.find("latency,") >= 0 and "sink-element=(string)sink" in line:
            s2s.append(int(field("time", line).group(1)) / 1e6)
    return own[skip:], reported, s2s[skip:], stays


def stats(values):
    if not values:
        return None
    v = sorted(values)
    return sum(v) / len(v), v[min(len(v) - 1, int(0.99 * len(v)))]


print(f"latency-check: {what}")
print("| in the element's place | sink | reported ms | stay mean / p99 ms | own mean / p99 ms "
      "| source-to-sink mean / p99 ms |")
print("|---|---|---:|---:|---:|---:|")
results = []
pair = lambda v: "%.3f / %.3f" % v if v else "-"
for i, (kind, middle, sink) in enumerate(runs):
    own, reported, s2s, stays = read(f"{folder}/{i}.log")
    o, s, st = stats(own), stats(s2s), stats(stays[skip:])
    r = reported[-1] if reported else None
    results.append((kind, sink, r, s, st, max(stays[5:]) if stays[5:] else None))
    name = "cudaoverlap" if kind == "element" else middle
    print(f"| `{name}` | `{sink}` | {'%.3f' % r if r is not None else '-'} | {pair(st)} | "
          f"{pair(o)} | {pair(s) if s else 'none'} |")
if not check:
    sys.exit(0)
limit, failed = float(check), []
for i in range(0, len(results), 2):
    (_, sink, reported, ours, stay, longest), peer = results[i], results[i + 1][3]
    if reported is None or ours is None or peer is None or stay is None:
        failed.append(f"{sink}: figures missing")
        continue
    # The report is a high quantile of the stays plus 10 %, rounded up to
    # 10 us, of the stays after its first five: never more than the longest
    # of those.
    if reported > limit and reported > longest * 1.1 + 0.01:
        failed.append(f"{sink}: reported {reported:.3f} ms > {limit} ms and > its longest stay")
    # A sink's wait counted in the stays would put their mean near a frame.
    if stay[0] > limit:
        failed.append(f"{sink}: stays average {stay[0]:.3f} ms > {limit} ms")
    if abs(ours[0] - peer[0]) > limit:
        failed.append(f"{sink}: source-to-sink {ours[0]:.3f} ms against the peer's {peer[0]:.3f}")
for f in failed:
    print("latency-check: " + ("(sanitizer, not held) " if sanitized else "FAIL ") + f)
sys.exit(1 if failed and not sanitized else 0)
PY
