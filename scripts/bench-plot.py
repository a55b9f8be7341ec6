#!/usr/bin/env python3
"""Draws the rows of scripts/bench-pipelines.sh --csv as a PNG: one panel per
workload and frame size, a bar per case (frames/s), and the PCIe bound (the
frames/s at which the larger direction fills the link) as a dashed line.
Needs matplotlib (Debian: python3-matplotlib).

  scripts/bench-plot.py RESULTS.csv -o bench.png [--pcie-gbps 55] [--title TEXT]
"""
import argparse
import csv
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--pcie-gbps", type=float, default=55.0)
    parser.add_argument("--title", default="cudaoverlap in gst-launch-1.0 pipelines")
    args = parser.parse_args()

    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"bench-plot: no rows in {args.csv}")
    panels = []
    for r in rows:
        key = (r["workload"], r["size"])
        if key not in panels:
            panels.append(key)

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("bench-plot: needs matplotlib (Debian: apt install python3-matplotlib)")

    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.0 + 0.45 * len(rows)), squeeze=False)
    for ax, (workload, size) in zip(axes[:, 0], panels):
        mine = [r for r in rows if (r["workload"], r["size"]) == (workload, size)]
        names = [r["case"] for r in mine]
        fps = [float(r["fps"]) for r in mine]
        colors = ["tab:green" if n.startswith("cudaoverlap") else "tab:gray" for n in names]
        bars = ax.barh(range(len(mine)), fps, color=colors)
        ax.set_yticks(range(len(mine)))
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        for bar, value, r in zip(bars, fps, mine):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                    f" {value:.0f}  ({float(r['pcie_pct']):.0f}% PCIe)", va="center", fontsize=7)
        # The bound from any row with PCIe traffic: fps / pct * 100.
        bound = [float(r["fps"]) * 100.0 / float(r["pcie_pct"]) for r in mine
                 if float(r["pcie_pct"]) > 0 and float(r["out_gbps"]) > 0]
        if bound:
            ax.axvline(bound[0], color="tab:red", linestyle="--", linewidth=1)
            ax.text(bound[0], -0.6, f"PCIe bound {bound[0]:.0f}/s", color="tab:red", fontsize=7,
                    ha="right")
        ax.set_title(f"{workload} {size}", fontsize=9, loc="left")
        ax.set_xlabel("frames/s", fontsize=8)
        ax.set_xlim(0, max(fps + bound) * 1.3)
    fig.suptitle(args.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"bench-plot: wrote {args.output}")


if __name__ == "__main__":
    main()
