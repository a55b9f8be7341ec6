#!/usr/bin/env bash
# On a GPU machine, after scripts/gpu-bundle.sh made .gpu/ here: the figures
# of the README's "Seeing what it does" section. Writes to OUTDIR:
#   trace-4k-serial.json, trace-4k-overlapped.json   (trace-file, 4K RGBA copy)
#   trace-1080p-serial.json, trace-1080p-overlapped.json
#   stats-*.txt        the element's stats at the end of each trace run
#   latency.txt        scripts/latency-check.sh with its peers at 1080p and 4K,
#                      live 60 and 30 frames/s, RGBA copy and NV12 -> RGBA convert
#   timing-cost.txt    what per-frame timing costs on the cuda backend
# and prints a summary. Draw the timelines afterwards where matplotlib is:
#   scripts/trace-to-png.py OUTDIR/trace-4k-serial.json OUTDIR/trace-4k-overlapped.json \
#     -o timeline-4k.png --titles "4K RGBA copy, serial,4K RGBA copy, overlapped"
#
#   scripts/gpu-observe.sh OUTDIR [traces,latency,timing]
# (all three parts unless a list says which).
set -u
out=${1:?usage: gpu-observe.sh OUTDIR [traces,latency,timing]}
parts=${2:-traces,latency,timing}
part() { [[ ",$parts," == *",$1,"* ]]; }
cd "$(dirname "$0")/.."  # OUTDIR is relative to the repository root
mkdir -p "$out"
[ -d .gpu/bin ] || tar xJf .gpu/bin.txz -C .gpu
[ -d .gpu/gst ] || tar xzf .gpu/gst.tgz -C .gpu
. .gpu/gst/env.sh

frames=300
part traces && for size in 3840x2160 1920x1080; do
  name=$([ "$size" = 3840x2160 ] && echo 4k || echo 1080p)
  caps="video/x-raw,format=RGBA,width=${size%x*},height=${size#*x}"
  for mode in serial overlapped; do
    # -m prints the bus, where stats-interval posts the stats; the last
    # message is the nearest gst-launch-1.0 gets to the final `stats`.
    gst-launch-1.0 -m videotestsrc num-buffers=$frames pattern=solid-color ! "$caps" \
      ! cudaoverlap backend=cuda mode=$mode trace-file="$out/trace-$name-$mode.json" \
      stats-interval=100 ! fakesink sync=false >"$out/stats-$name-$mode.txt" 2>&1
    echo "trace $name $mode (rc $?): $out/trace-$name-$mode.json"
    grep -o "cudaoverlap-stats.*" "$out/stats-$name-$mode.txt" | tail -1 | sed 's/(double)//g;s/(guint64)//g;s/(uint)//g'
    python3 scripts/trace-to-png.py --summary --skip-frames 60 "$out/trace-$name-$mode.json"
  done
done

# Live, into a syncing sink with its defaults and with no processing
# deadline, next to the peers (see latency-check.sh); 5 s a pipeline.
part latency && for size in 3840x2160 1920x1080; do
  for fps in 60 30; do
    scripts/latency-check.sh --backend cuda --size "$size" --fps $fps --frames $((fps * 5)) \
      --skip $fps --peers | tee -a "$out/latency.txt"
    scripts/latency-check.sh --backend cuda --size "$size" --fps $fps --frames $((fps * 5)) \
      --skip $fps --format NV12 --kernel convert --caps-out video/x-raw,format=RGBA |
      tee -a "$out/latency.txt"
  done
done

part timing && {
  .gpu/bin/timing-cost --backend cuda --frames 20000 --rounds 5 | tee "$out/timing-cost.txt"
  .gpu/bin/timing-cost --backend cuda --frames 2000 --rounds 3 --size 3840x2160 |
    tee -a "$out/timing-cost.txt"
}
