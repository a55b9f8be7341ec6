#!/usr/bin/env python3
"""Draws cudaoverlap trace files (the element's `trace-file`, Chrome/Perfetto
JSON) as a timeline PNG: one row per stage (staging, upload, compute,
download, push), one bar per frame, coloured by frame number so that
overlapping stages of consecutive frames stand out. Several traces (e.g.
serial and overlapped) are drawn one above the other on the same time scale.

  scripts/trace-to-png.py serial.json overlapped.json -o timeline.png \\
      --title serial --title overlapped --skip-frames 60 --frames 6
  scripts/trace-to-png.py --summary trace.json      # numbers only, no matplotlib

Rendering needs matplotlib (Debian: apt-get install python3-matplotlib);
--summary needs only Python.
"""
import argparse
import json
import sys
from collections import defaultdict

LANES = ["chain", "staging", "upload", "compute", "download", "worker wait", "push"]


def load(path):
    """Returns {lane: {frame: (start_ms, dur_ms)}} from a trace file."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    lanes = defaultdict(dict)
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in LANES:
            continue
        frame = int(e["args"]["frame"])
        lanes[e["cat"]][frame] = (float(e["ts"]) / 1000.0, float(e["dur"]) / 1000.0)
    return lanes


def summary(path, lanes, skip):
    frames = sorted(set().union(*[set(v) for v in lanes.values()])) if lanes else []
    kept = [f for f in frames if f >= skip]
    print(f"{path}: {len(frames)} frames" + (f", statistics over frames {skip}+" if skip else ""))
    busy = 0.0  # the element's own work, as the `stats` property counts it: not the push
    for lane in LANES:
        durs = [lanes[lane][f][1] for f in kept if f in lanes.get(lane, {})]
        if not durs:
            print(f"  {lane:9s} no slices")
            continue
        mean = sum(durs) / len(durs)
        # chain and worker wait hold the stages in them, or wait for them
        busy += mean if lane in ("staging", "upload", "compute", "download") else 0.0
        print(f"  {lane:9s} {len(durs):6d} slices  mean {mean:8.3f} ms  max {max(durs):8.3f} ms")
    push = lanes.get("push", {})
    ends = [push[f][0] + push[f][1] for f in kept if f in push]
    if len(ends) > 1:
        wall = (max(ends) - min(ends)) / (len(ends) - 1)
        print(f"  wall time per frame {wall:.3f} ms ({1000.0 / wall:.1f} frames/s), "
              f"overlap efficiency (staging+upload+compute+download means / wall) {busy / wall:.2f}")
    latency_breakdown(lanes, kept)


def latency_breakdown(lanes, kept):
    """Where a frame's time in the element goes, from its arrival (chain's
    start) to the start of its push: the gaps between one step's end and the
    next one's start are waits (for the stream, for a wake-up)."""
    steps = [("chain", "chain"), ("upload", "upload"), ("compute", "compute"),
             ("download", "download"), ("worker wait", "worker wake")]
    rows = defaultdict(list)
    for f in kept:
        if not all(f in lanes.get(lane, {}) for lane, _ in steps) or f not in lanes.get("push", {}):
            continue
        start = lanes["chain"][f][0]
        at = start
        for lane, name in steps:
            s, d = lanes[lane][f]
            if lane == "worker wait":
                # the wait starts before the download ends; its end is the wake-up
                rows["download end to the worker awake"].append(s + d - at)
            else:
                rows[f"to {name} start"].append(s - at)
                rows[name].append(d)
            at = s + d
        rows["to the push"].append(lanes["push"][f][0] - at)
        rows["total: arrival to push"].append(lanes["push"][f][0] - start)
    if not rows:
        return
    print("  latency, arrival to push (ms):   mean      p50      p99      max")
    for name, v in rows.items():
        if name == "to chain start":
            continue
        v = sorted(v)
        pct = lambda p: v[min(len(v) - 1, int(p / 100 * len(v)))]
        print(f"    {name:32s} {sum(v) / len(v):7.3f}  {pct(50):7.3f}  {pct(99):7.3f}  {v[-1]:7.3f}")


def render(paths, traces, titles, out, skip, count, window_ms, columns):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Each panel starts at the first slice of frame `skip`; all panels share
    # one window length, long enough for `count` frames of the slowest trace.
    starts, needed = [], []
    for lanes in traces:
        first = [lanes[l][skip][0] for l in LANES if skip in lanes.get(l, {})]
        if not first:
            sys.exit(f"trace-to-png: no frame {skip} in a trace; lower --skip-frames")
        t0 = min(first)
        last = skip + count - 1
        ends = [s + d for l in LANES for f, (s, d) in lanes.get(l, {}).items() if skip <= f <= last]
        starts.append(t0)
        needed.append(max(ends) - t0)
    window = window_ms if window_ms else max(needed) * 1.02

    n = len(traces)
    shape = (1, n) if columns else (n, 1)
    size = (6.5 * n, 3.2) if columns else (11, 2.4 * n + 0.6)
    fig, axes = plt.subplots(*shape, figsize=size, squeeze=False)
    colours = plt.get_cmap("tab10").colors
    for i, (lanes, t0) in enumerate(zip(traces, starts)):
        ax = axes[0][i] if columns else axes[i][0]
        for row, lane in enumerate(LANES):
            for frame, (s, d) in sorted(lanes.get(lane, {}).items()):
                x = s - t0
                if x + d < 0 or x > window:
                    continue
                ax.broken_barh([(x, max(d, window / 2000))], (row - 0.4, 0.8),
                               facecolors=colours[frame % len(colours)], edgecolor="black",
                               linewidth=0.3)
                if d > window / 25:
                    ax.text(x + d / 2, row, str(frame), ha="center", va="center", fontsize=7)
        ax.set_yticks(range(len(LANES)))
        ax.set_yticklabels(LANES)
        ax.invert_yaxis()
        ax.set_xlim(0, window)
        ax.set_xlabel("ms")
        ax.grid(axis="x", linewidth=0.3)
        ax.set_title(titles[i] if i < len(titles) else paths[i], fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print(f"trace-to-png: wrote {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+", help="trace files written by cudaoverlap trace-file=...")
    p.add_argument("-o", "--output", default="timeline.png", help="PNG to write")
    # One --title per panel, so that a title may hold any character (commas
    # included); panels without one are named by their trace file.
    p.add_argument("--title", dest="titles", action="append", default=[], metavar="TITLE",
                   help="a panel's title, once per trace in their order (\"4K, serial\")")
    p.add_argument("--skip-frames", type=int, default=30,
                   help="frames to leave out at the start (warm-up); default 30")
    p.add_argument("--frames", type=int, default=6,
                   help="frames of the slowest trace the window must hold; default 6")
    p.add_argument("--window-ms", type=float, default=0.0, help="fixed window length in ms")
    p.add_argument("--columns", action="store_true", help="panels side by side, not stacked")
    p.add_argument("--summary", action="store_true", help="print numbers only, draw nothing")
    # The old comma-separated form mislabelled titles with commas in them.
    p.add_argument("--titles", dest="titles_list", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.titles_list is not None:
        p.error("--titles is gone: give --title once per trace instead")
    if len(a.titles) > len(a.traces):
        p.error(f"{len(a.titles)} --title for {len(a.traces)} traces: give one per trace")
    traces = [load(path) for path in a.traces]
    if a.summary:
        for path, lanes in zip(a.traces, traces):
            summary(path, lanes, a.skip_frames)
        return
    render(a.traces, traces, a.titles, a.output, a.skip_frames, a.frames, a.window_ms, a.columns)


if __name__ == "__main__":
    main()
