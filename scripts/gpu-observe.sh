#!/usr/bin/env bash
# On a GPU machine, after scripts/gpu-bundle.sh made .gpu/ here: the figures
# of the README's "Seeing what it does" section. Writes to OUTDIR:
#   trace-4k-serial.json, trace-4k-overlapped.json   (trace-file, 4K RGBA copy)
#   trace-1080p-serial.json, trace-1080p-overlapped.json
#   stats-*.txt        the element's stats at the end of each trace run
#   latency.txt        scripts/latency-check.sh with its peers at 1080p and 4K,
#                      live 60 and 30 frames/s, RGBA copy and NV12 -> RGBA convert
#   timing-cost.txt    what per-frame timing costs on the cuda backend
#   writes.txt         a source writing every frame, alone, into the element's
#                      pinned pool and into its own memory: frames/s
#                      (bench-pipelines.sh --only writes) and the writer's
#                      thread, us of CPU a frame, three rounds interleaved
#   scale.txt          the scale rows of the kernel table (RGBA, NV12, P010)
#                      and, where ncu and cuobjdump are, each bilinear scale
#                      kernel's profile (scale-ncu.txt: issue, pipes,
#                      memory) and its instructions by kind (scale-sass.txt)
# and prints a summary. Draw the timelines afterwards where matplotlib is:
#   scripts/trace-to-png.py OUTDIR/trace-4k-serial.json OUTDIR/trace-4k-overlapped.json \
#     -o timeline-4k.png --title "4K RGBA copy, serial" --title "4K RGBA copy, overlapped"
#
#   scripts/gpu-observe.sh OUTDIR [traces,latency,timing,writes,scale]
# (all but scale unless a list says which).
set -u
out=${1:?usage: gpu-observe.sh OUTDIR [traces,latency,timing,writes,scale]}
parts=${2:-traces,latency,timing,writes}
part() { [[ ",$parts," == *",$1,"* ]]; }
cd "$(dirname "$0")/.." || exit 1  # OUTDIR is relative to the repository root
mkdir -p "$out"
[ -d .gpu/bin ] || tar xJf .gpu/bin.txz -C .gpu
[ -d .gpu/gst ] || tar xzf .gpu/gst.tgz -C .gpu
# shellcheck source=/dev/null # made by gpu-bundle.sh on the GPU machine
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

part writes && {
  scripts/bench-pipelines.sh --only writes --sizes 1920x1080,3840x2160 --frames 300 \
    --repeats 3 | tee "$out/writes.txt"
  for size in 1920x1080 3840x2160; do
    short=200 long=1200
    [ "$size" = 3840x2160 ] && short=60 long=360
    writer="videotestsrc num-buffers=@FRAMES@ pattern=solid-color"
    caps="video/x-raw,format=RGBA,width=${size%x*},height=${size#*x}"
    for round in 1 2 3; do
      line="writer's thread, $size, round $round, us a frame:"
      for case in "alone|fakesink sync=false" "pinned pool|cudaoverlap ! fakesink sync=false" \
        "own memory|identity drop-allocation=true ! cudaoverlap ! fakesink sync=false"; do
        # shellcheck disable=SC2086
        us=$(scripts/thread-cpu.sh --short $short $long gst-launch-1.0 $writer ! $caps ! ${case#*|} |
          awk '/^videotestsrc/ {print $3}')
        line="$line ${case%%|*} ${us:-?};"
      done
      echo "$line" | tee -a "$out/writes.txt"
    done
  done
}

part scale && {
  .gpu/bin/cudaoverlap-bench --kernels --iterations 50 \
    --only scale:RGBA,scale:NV12,scale:P010_10LE | tee "$out/scale.txt"
  cuda=/usr/local/cuda/bin
  if [ -x $cuda/ncu ]; then
    # Every launch of the rows' scale kernels (each row: one a frame set,
    # then the timed one), the clocks left as they are.
    $cuda/ncu --clock-control none --kernel-name-base demangled -k 'regex:scale_' --launch-count 200 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
      --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
      .gpu/bin/cudaoverlap-bench --kernels --no-hold --iterations 1 --only scale:RGBA,scale:NV12 \
      >"$out/scale-ncu.txt" 2>&1
    echo "scale kernels profiled (rc $?): $out/scale-ncu.txt"
  fi
  if [ -x $cuda/cuobjdump ]; then
    # Each scale kernel's sm_90 instructions, counted by opcode.
    $cuda/cuobjdump -sass -arch sm_90 .gpu/bin/cudaoverlap-bench 2>/dev/null | awk '
      /Function : .*scale_/ { name = $3 }
      /Function : / && !/scale_/ { name = "" }
      name != "" && /\/\*[0-9a-f]+\*\// {
        op = $2; if (op ~ /^@/) op = $3; sub(/;/, "", op)
        count[name "\t" op]++ }
      END { for (k in count) print count[k] "\t" k }' | sort -t$'\t' -k2,2 -k1,1nr \
      >"$out/scale-sass.txt"
    echo "scale kernels' instructions: $out/scale-sass.txt ($(wc -l <"$out/scale-sass.txt") lines)"
  fi
}
