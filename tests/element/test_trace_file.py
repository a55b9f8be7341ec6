#!/usr/bin/env python3
"""The element's trace-file, read back with a real JSON parser: for serial and
overlapped mode, a gst-launch-1.0 run of N frames must leave a file in the
Chrome/Perfetto trace format ({"traceEvents": [...]}) with the seven lanes
named, exactly one slice per frame in each lane (none in staging on the
cpu backend, which copies nothing), every slice inside the
run, and the stages of each frame in barrier order (upload before compute
before download before push); with a chain, each frame's compute slice
holds one slice per launch of the chain, named after its steps, in order.
Then scripts/trace-to-png.py --summary must read it. Run by meson (suite element) with the plugin's environment;
CUDAOVERLAP_TEST_BACKEND picks the backend (cpu when unset).

  test_trace_file.py GST_LAUNCH TRACE_TO_PNG_SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile

LANES = ["chain", "staging", "upload", "compute", "download", "worker wait", "push"]
FRAMES = 24
# Times are written in us with ns resolution: on the cpu backend allow for
# rounding only; CUDA's times reach the host clock through an anchor event
# (a few us of wake-up) and float milliseconds, as in tests/engine/test_timing.
BACKEND = os.environ.get("CUDAOVERLAP_TEST_BACKEND", "cpu")
EPS_US = 0.002 if BACKEND == "cpu" else 20.0
# The chain run: its launches (balance and invert fused, blur alone).
CHAIN = "balance contrast=1.2 ! invert ! blur sigma=1"
CHAIN_STEPS = ["steps 1-2 (balance, invert)", "step 3 (blur)"]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(path, mode, steps=()):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        fail(f"{mode}: no traceEvents list")
    events = data["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    if sorted(names.values()) != sorted(LANES):
        fail(f"{mode}: lanes named {sorted(names.values())}, want {sorted(LANES)}")
    slices = {lane: {} for lane in LANES}
    parts = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        lane = e["cat"]
        if lane == "compute step" and names.get(e["tid"]) == "compute":
            frame = e["args"]["frame"]
            parts.setdefault(frame, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
            continue
        if lane not in slices or names.get(e["tid"]) != lane:
            fail(f"{mode}: slice {e} is in no lane or in the wrong one")
        frame = e["args"]["frame"]
        if e["name"] != f"frame {frame}":
            fail(f"{mode}: slice named {e['name']!r} for frame {frame}")
        if frame in slices[lane]:
            fail(f"{mode}: two {lane} slices for frame {frame}")
        if e["dur"] < 0:
            fail(f"{mode}: negative duration {e}")
        slices[lane][frame] = (e["ts"], e["ts"] + e["dur"])
    for lane in LANES:
        # The cpu backend reads frames where they lie: nothing is staged.
        if lane == "staging" and BACKEND == "cpu":
            if slices[lane]:
                fail(f"{mode}: the cpu backend staged frames {sorted(slices[lane])}")
            continue
        if sorted(slices[lane]) != list(range(FRAMES)):
            fail(f"{mode}: {lane} has slices for frames {sorted(slices[lane])}, "
                 f"want one for each of 0..{FRAMES - 1}")
    order = ["upload", "compute", "download", "push"]
    for frame in range(FRAMES):
        for a, b in zip(order, order[1:]):
            if slices[a][frame][1] > slices[b][frame][0] + EPS_US:
                fail(f"{mode}: frame {frame}: {a} ends at {slices[a][frame][1]} us, "
                     f"after {b} starts at {slices[b][frame][0]} us")
        if mode == "serial" and frame > 0:
            if slices["download"][frame - 1][1] > slices["upload"][frame][0] + EPS_US:
                fail(f"serial: frame {frame} uploads before frame {frame - 1} is downloaded")
    for frame in range(FRAMES):
        got = sorted(parts.get(frame, []))
        want = [f"frame {frame} {step}" for step in steps]
        if [name for _, _, name in got] != want:
            fail(f"{mode}: frame {frame}: compute steps {[n for _, _, n in got]}, want {want}")
        start, end = slices["compute"][frame]
        for (a, b, name) in got:
            if a < start - EPS_US or b > end + EPS_US:
                fail(f"{mode}: {name} ({a}..{b} us) outside its compute slice ({start}..{end})")
    print(f"ok: {mode}: {len(LANES)} lanes x {FRAMES} slices, stages in order"
          + (f", {len(steps)} compute steps each" if steps else ""))


def main():
    gst_launch, script = sys.argv[1], sys.argv[2]
    backend = os.environ.get("CUDAOVERLAP_TEST_BACKEND", "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        for mode, chain in (("overlapped", None), ("serial", None), ("overlapped", CHAIN)):
            path = os.path.join(tmp, f"{mode}{'-chain' if chain else ''}.json")
            cmd = [gst_launch, "-q", "videotestsrc", f"num-buffers={FRAMES}", "!",
                   "video/x-raw,format=RGBA,width=96,height=64", "!",
                   # upstream's own memory, not pinned, so every frame is
                   # staged and the staging lane is filled too (the pinned
                   # pool and pinned upstream memory skip it)
                   "identity", "drop-allocation=true", "!", "cudaoverlap",
                   "pin-upstream-memory=false", f"backend={backend}", f"mode={mode}", f"trace-file={path}"]
            cmd += [f'chain="{chain}"'] if chain else []
            cmd += ["!", "fakesink", "sync=false"]
            # Under scripts/sanitize.sh the plugin needs the sanitizer's
            # runtime preloaded into gst-launch-1.0 (not into Python).
            env = dict(os.environ)
            if env.get("CUDAOVERLAP_SANITIZER_PRELOAD"):
                env["LD_PRELOAD"] = env["CUDAOVERLAP_SANITIZER_PRELOAD"]
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
            if run.returncode != 0:
                fail(f"{' '.join(cmd)} exited with {run.returncode}: {run.stderr}")
            check(path, mode + (" chain" if chain else ""), CHAIN_STEPS if chain else ())
            summary = subprocess.run([sys.executable, script, "--summary", "--skip-frames", "0",
                                      path], capture_output=True, text=True, timeout=60)
            if summary.returncode != 0 or f"{FRAMES} frames" not in summary.stdout:
                fail(f"trace-to-png.py --summary: {summary.stdout}{summary.stderr}")
    print("PASS")


if __name__ == "__main__":
    main()
