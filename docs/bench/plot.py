#!/usr/bin/env python3
"""Draws the figures of docs/performance.md from the committed halo_bench JSON.

    /usr/bin/python3 docs/bench/plot.py      # needs Debian's python3-matplotlib

Writes cpu-2ranks.png, gpu-2xh200.png (second session), gpu-2xh200-v3.png (third session),
gpu-2xh200-v4.png and sweep-2xh200.png (fourth session), gpu-1xh200-v5.png (fifth session)
next to this script.

    /usr/bin/python3 docs/bench/plot.py RUN.jsonl [RUN2.jsonl ...]

draws instead, for each halo_bench output given (rows with `floor_us`), RUN-floor.png beside
it: per case, each implementation's time against the row's floor (dashed), with the ratio.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def bars(ax, cases, series, ylabel, title):
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(cases))]
        ax.bar(xs, values, width, label=label)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", ncol=2, bbox_to_anchor=(0.5, -0.1))
    ax.grid(axis="y", which="both", alpha=0.3)


def full_exchange_figure(cases, series, ylabel, title, bottom, name):
    """Bars of the 2-GPU full-exchange cases next to the library the issue names, with the
    issue's targets as dashed lines."""
    ref = {"64^3 w1 device": 710.0, "256^3 w2 device": 590.0}  # the library figures
    series = series + [("NCCL-based library (issue)", [ref.get(c, float("nan")) for c in cases])]
    fig, ax = plt.subplots(figsize=(8, 5.4))
    bars(ax, [c.replace(" device", "") for c in cases], series, ylabel, title)
    targets = {"64^3 w1": 20.0, "256^3 w2": 60.0}
    for i, c in enumerate(cases):
        t = targets.get(c.replace(" device", ""))
        if t:
            ax.hlines(t, i - 0.45, i + 0.45, colors="k", linestyles="dashed")
    ax.set_ylim(bottom=bottom)
    ax.text(0.01, 0.02, "dashed: issue targets", transform=ax.transAxes, fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, name), dpi=110)


def cpu():
    rows = [r for r in load("h100-host-cpu-2ranks-shm.jsonl") if "median_us" in r]
    mpi_only = {r["case"]: r["median_us"]
                for r in load("h100-host-cpu-2ranks-halox-mpi-only.jsonl") if "median_us" in r}
    cases = []
    for r in rows:
        if r["case"] not in cases:
            cases.append(r["case"])
    impls = ["halox", "mpi_manual", "mpi_types"]
    med = {(r["impl"], r["case"]): r["median_us"] for r in rows}
    series = [("halox (shared memory)", [med[("halox", c)] for c in cases]),
              ("halox, HALOX_HOST_TRANSPORT=mpi", [mpi_only[c] for c in cases])]
    series += [(i, [med[(i, c)] for c in cases]) for i in impls[1:]]
    fig, ax = plt.subplots(figsize=(8, 5.2))
    bars(ax, cases, series, "median µs per exchange",
         "CPU, 2 ranks, 3 double fields, box stencil (H100 host, Xeon)")
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "cpu-2ranks.png"), dpi=110)


def gpu():
    ipc = {r["case"]: r["median_us"] for r in load("h200x2-peer-ipc.jsonl") if "median_us" in r}
    mapped = {r["case"]: r["median_us"] for r in load("h200x2-host-staged-mapped.jsonl") if "median_us" in r}
    copy = {r["case"]: r["median_us"] for r in load("h200x2-host-staged-copy.jsonl") if "median_us" in r}
    cases = list(ipc)
    series = [("halox peer_ipc", [ipc[c] for c in cases]),
              ("halox host_staged (mapped)", [mapped[c] for c in cases]),
              ("halox host_staged (copy)", [copy[c] for c in cases])]
    full_exchange_figure(cases, series, "median µs per exchange",
                         "2 ranks on 2 H200s, 3 double fields, box stencil, full exchange",
                         10, "gpu-2xh200.png")


def gpu_full(suffix, old_file, old_label, name):
    """Full exchange of the session whose raw files end in `suffix`: straight into the halo
    (blocking and scheduled loop), through the receive buffer, and an earlier session's run."""
    field = {r["case"]: r for r in load(f"h200x2-full-field{suffix}.jsonl") if r["impl"] == "halox"}
    buf = {r["case"]: r for r in load(f"h200x2-full-buffer{suffix}.jsonl") if r["impl"] == "halox"}
    old = {r["case"]: r["median_us"] for r in load(old_file)
           if r.get("impl") == "halox" and "median_us" in r}
    cases = list(field)
    series = [("halox, straight into the halo", [field[c]["median_us"] for c in cases]),
              ("  same, GPU time in a scheduled loop", [field[c]["loop_us"] for c in cases]),
              ("halox, through the receive buffer", [buf[c]["median_us"] for c in cases]),
              (old_label, [old.get(c, float("nan")) for c in cases])]
    full_exchange_figure(cases, series, "µs per exchange",
                         "2 ranks on 2 H200s (grid 2x1x1), 3 double fields, box stencil, full "
                         "exchange", 5, name)


def gpu1():
    """One H200: GPU time (kernel_us) of each implementation's pack+unpack per case, with the
    hardware's time for one pass over the halo bytes and the issue's 60% target."""
    rows = load("h200x2-gpu-1rank-v5.jsonl")
    d2d = next(r["GBps"] for r in rows if r["impl"] == "cudaMemcpy_d2d") * 1e3  # bytes per us
    first = {}
    for r in rows:
        if "kernel_us" in r:
            first.setdefault((r["impl"], r["case"]), r)
    cases = []
    for impl, case in first:
        if case not in cases:
            cases.append(case)
    impls = [("halox", "halox (fused, tiled)"), ("single_kernel", "single plain kernel"),
             ("per_region_kernels", "one kernel per region"), ("memcpy3d", "cudaMemcpy3DAsync")]
    series = [(label, [first[(i, c)]["kernel_us"] for c in cases]) for i, label in impls]
    fig, ax = plt.subplots(figsize=(8, 5.4))
    bars(ax, [c.replace(" device", "") for c in cases], series, "GPU µs (CUDA events)",
         "1 H200, pack+unpack of 3 double fields, box stencil (one pass at 1 rank)")
    for i, c in enumerate(cases):
        halo = first[("halox", c)]["bytes"]
        ax.hlines(2 * halo / d2d, i - 0.45, i + 0.45, colors="k", linestyles="dashed")
        if c.startswith("256"):  # the issue sets the bandwidth target at 256^3
            ax.hlines(4 * halo / (0.6 * d2d), i - 0.45, i + 0.45, colors="k", linestyles="dotted")
    ax.set_ylim(bottom=0.2, top=2000)
    ax.text(0.01, 0.96, "dashed: D2D time to read+write the halo once; dotted: issue's 60% "
            "target at 256^3 (4 x halo bytes)", transform=ax.transAxes, fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "gpu-1xh200-v5.png"), dpi=110)


def sweep():
    # Two runs in one file: the second of each case is drawn.
    rows = [r for r in load("h200x2-sweep-v4.jsonl") if r["impl"] == "halox"]
    sizes = sorted({r["message_bytes"] for r in rows})
    by = {(r["staging"], r["message_bytes"]): r for r in rows}
    kib = [b / 1024 for b in sizes]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(kib, [by[("auto", b)]["peer_copy_GBps"] for b in sizes], "k--", marker="o",
            label="peer copy (cudaMemcpyPeerAsync, same run): ceiling")
    ax.plot(kib, [0.8 * by[("auto", b)]["peer_copy_GBps"] for b in sizes], "k:",
            label="80% of the ceiling (issue target at >= 8 MiB)")
    ax.plot(kib, [by[("auto", b)]["loop_GBps"] for b in sizes], marker="o",
            label="halox peer_ipc, scheduled loop")
    ax.plot(kib, [by[("auto", b)]["GBps"] for b in sizes], marker="s",
            label="halox peer_ipc, blocking exchange()")
    ax.plot(kib, [by[("host_staged", b)]["loop_GBps"] for b in sizes], marker="^",
            label="halox host_staged, scheduled loop")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size per peer (KiB)")
    ax.set_ylabel("GB/s (message bytes per round)")
    ax.set_title("One message each way between 2 H200s (NVLink)")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "sweep-2xh200.png"), dpi=110)


def floor_figure(path):
    """Per case, each implementation's time (the one its row compares with the floor:
    `ratio_of`, i.e. kernel_us on one GPU, else median_us) as a bar, the case's floor as a
    dashed line, the ratio above each bar."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip().startswith("{")]
    rows = [r for r in rows if "floor_us" in r and "ratio_of" in r]
    if not rows:
        sys.exit(f"{path}: no rows with floor_us (halo_bench output from before the floors?)")
    cases, impls, by = [], [], {}
    for r in rows:
        if r["case"] not in cases:
            cases.append(r["case"])
        if r["impl"] not in impls:
            impls.append(r["impl"])
        by.setdefault((r["impl"], r["case"]), r)  # the first run of each in the file
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(cases)), 5.4))
    width = 0.8 / len(impls)
    tallest = 0.0
    for k, impl in enumerate(impls):
        xs, ys, ratios = [], [], []
        for i, c in enumerate(cases):
            r = by.get((impl, c))
            if r:
                xs.append(i + (k - (len(impls) - 1) / 2) * width)
                ys.append(r[r["ratio_of"]])
                ratios.append(r["ratio_to_floor"])
        label = impl + (f" ({by[(impl, cases[0])]['ratio_of']})" if (impl, cases[0]) in by else "")
        ax.bar(xs, ys, width, label=label)
        tallest = max([tallest] + ys)
        for x, y, q in zip(xs, ys, ratios):
            ax.text(x, y * 1.05, f"{q:.1f}x", ha="center", va="bottom", fontsize=6, rotation=90)
    for i, c in enumerate(cases):
        r = next(by[(m, c)] for m in impls if (m, c) in by)
        ax.hlines(r["floor_us"], i - 0.45, i + 0.45, colors="k", linestyles="dashed")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c.replace(" device", "") for c in cases])
    ax.set_yscale("log")
    ax.set_ylim(top=tallest * 6)  # room for the ratios
    ax.set_ylabel("µs per exchange")
    first = rows[0]
    ax.set_title(f"halo_bench, {first['ranks']} rank(s): time against the floor "
                 f"(ratio above each bar)")
    ax.legend(fontsize=8, loc="upper center", ncol=3, bbox_to_anchor=(0.5, -0.1))
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.text(0.01, 0.97, "dashed: floor (" + first["floor_counts"] + ")", transform=ax.transAxes,
            fontsize=7, va="top")
    fig.tight_layout()
    out = os.path.splitext(path)[0] + "-floor.png"
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__" and len(sys.argv) > 1:
    for name in sys.argv[1:]:
        floor_figure(name)
elif __name__ == "__main__":
    cpu()
    gpu()
    gpu_full("", "h200x2-peer-ipc-device-signals.jsonl", "halox, second session (grid 1x1x2)",
             "gpu-2xh200-v3.png")
    gpu_full("-v4", "h200x2-full-field.jsonl", "halox, third session (into the halo)",
             "gpu-2xh200-v4.png")
    sweep()
    gpu1()
