#!/usr/bin/env python3
"""The cpu backend against GStreamer's own CPU elements, in one run.

  scripts/bench-cpu.py [--sizes 640x480,1920x1080] [--frames 300]
                       [--repeats 3] [--only NAME] [--threads N]

Each case runs as whole gst-launch-1.0 processes: one frame from
videotestsrc, repeated by imagefreeze, through `cudaoverlap backend=cpu`, through
the GStreamer element a user would put there instead, and through neither
(the source's own cost), in turn, round after round, so that a machine whose
speed drifts weighs on all alike. Each runs twice, with --frames frames
and with a fifth of them, so that start-up and shutdown cancel out: a
frame's cost is the CPU time (user + system, every thread) the extra frames
took, less what they took with the source alone, over their number; the
table gives the median over the rounds. The peer runs alone (as the
issue's bar has it) and followed by a queue: cudaoverlap pushes from a
thread of its own, as a queue does, and pays the same hand-over a frame.
Cases without a GStreamer peer (invert, blur) are compared with the cpu
backend's copy of the same frame.
--threads sets n-threads of the cpu backend and of the peers that have it
(videoconvert, videoscale).

Run it from a build (build/gst) or with the plugin installed.
"""
import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys

# name, input format, cudaoverlap's properties, the GStreamer element (None:
# no peer), caps after the element ({w2}, {h2}: half the size).
CASES = [
    ("convert NV12 -> RGBA", "NV12", "kernel=convert", "videoconvert", "video/x-raw,format=RGBA"),
    ("convert I420 -> BGRx", "I420", "kernel=convert", "videoconvert", "video/x-raw,format=BGRx"),
    ("convert YUY2 -> RGBA", "YUY2", "kernel=convert", "videoconvert", "video/x-raw,format=RGBA"),
    ("copy RGBA", "RGBA", "kernel=copy", "identity", ""),
    ("flip horiz RGBA", "RGBA", "kernel=flip video-direction=horiz",
     "videoflip video-direction=horiz", ""),
    ("balance I420", "I420", "kernel=balance contrast=1.2 saturation=0.8",
     "videobalance contrast=1.2 saturation=0.8", ""),
    ("scale RGBA to half, bilinear", "RGBA", "kernel=scale method=bilinear",
     "videoscale method=bilinear", "video/x-raw,width={w2},height={h2}"),
    ("invert RGBA", "RGBA", "kernel=invert", None, ""),
    ("blur sigma=2 RGBA", "RGBA", "kernel=blur sigma=2", None, ""),
]
THREADED = ("videoconvert", "videoscale")


def cpu_seconds(launch, description):
    """User + system CPU seconds of one gst-launch-1.0 run of `description`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([launch, "-q"] + shlex.split(description),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        sys.exit("bench-cpu: this pipeline failed:\n  %s\n%s" % (description, run.stderr))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="640x480,1920x1080")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="cases whose name contains this")
    parser.add_argument("--threads", type=int, default=1,
                        help="n-threads of the cpu backend and of the peers that have it")
    args = parser.parse_args()
    launch = shutil.which("gst-launch-1.0")
    if launch is None:
        sys.exit("bench-cpu: gst-launch-1.0 is not installed (scripts/setup.sh installs it)")
    here = os.path.dirname(os.path.abspath(__file__))
    plugin = os.path.join(here, "..", "build", "gst")
    if os.path.isdir(plugin) and "GST_PLUGIN_PATH" not in os.environ:
        os.environ["GST_PLUGIN_PATH"] = plugin
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    cases = [c for c in CASES if args.only in c[0]]

    short = max(1, args.frames // 5)
    # Every pipeline of one round, keyed by (case, size, which, frames).
    runs = {}
    for name, fmt, ours, peer, caps in cases:
        for w, h in sizes:
            out = caps.format(w2=w // 2, h2=h // 2)
            tail = (" ! " + out if out else "") + " ! fakesink sync=false"
            for frames in (args.frames, short):
                source = ("videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=%s,"
                          "width=%d,height=%d,framerate=30/1 ! imagefreeze num-buffers=%d"
                          % (fmt, w, h, frames))
                runs[(name, w, h, "source", frames)] = source + " ! fakesink sync=false"
                runs[(name, w, h, "ours", frames)] = (
                    source + " ! cudaoverlap backend=cpu n-threads=%d " % args.threads + ours +
                    tail)
                if peer is not None:
                    threads = " n-threads=%d" % args.threads if peer.split()[0] in THREADED else ""
                    runs[(name, w, h, "peer", frames)] = source + " ! " + peer + threads + tail
                    runs[(name, w, h, "queued", frames)] = (
                        source + " ! " + peer + threads + " ! queue" + tail)
    seconds = {key: [] for key in runs}
    for _ in range(args.repeats):
        for key, description in runs.items():
            seconds[key].append(cpu_seconds(launch, description))

    def per_frame(name, w, h, which):
        """Median ms a frame of `which`: the extra frames' CPU, the source's taken out."""
        def extra(what, r):
            long_run = seconds[(name, w, h, what, args.frames)][r]
            return long_run - seconds[(name, w, h, what, short)][r]
        costs = [(extra(which, r) - extra("source", r)) / (args.frames - short) * 1e3
                 for r in range(args.repeats)]
        return statistics.median(costs)

    print("cpu backend against GStreamer's CPU elements: CPU ms a frame (all threads), "
          "median of %d rounds of %d less %d frames; n-threads %d (the cpu backend's, "
          "videoconvert's and videoscale's)" % (args.repeats, args.frames, short, args.threads))
    print()
    print("| case | size | cudaoverlap backend=cpu | GStreamer | element | ratio "
          "| GStreamer ! queue | ratio |")
    print("|---|---|---:|---:|---|---:|---:|---:|")

    def ratio(ours, theirs):
        return "%.2fx" % (ours / theirs) if theirs > 0.005 else "-"

    for name, _, _, peer, _ in cases:
        for w, h in sizes:
            ours = per_frame(name, w, h, "ours")
            if peer is not None:
                theirs = per_frame(name, w, h, "peer")
                queued = per_frame(name, w, h, "queued")
                print("| %s | %dx%d | %.3f | %.3f | `%s` | %s | %.3f | %s |"
                      % (name, w, h, ours, theirs, peer.split()[0], ratio(ours, theirs), queued,
                         ratio(ours, queued)))
            elif ("copy RGBA", w, h, "ours", args.frames) in runs:
                copy = per_frame("copy RGBA", w, h, "ours")
                print("| %s | %dx%d | %.3f | - | (the cpu backend's copy: %.3f) | %.2fx the copy "
                      "| - | - |" % (name, w, h, ours, copy, ours / copy if copy > 0 else
                                     float("nan")))
            else:
                print("| %s | %dx%d | %.3f | - | - | - | - | - |" % (name, w, h, ours))


if __name__ == "__main__":
    main()
