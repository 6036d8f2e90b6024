#!/usr/bin/env python3
"""Summarises ktrace files (tools/ktrace/ktrace.cpp): per rank, the GPU time of each kind of
kernel (NCCL, halox's copies, the application's), how much of the NCCL time overlaps the
application's kernels, idle gaps, and a short excerpt of the timeline.

    summarise.py DIR [--from FRACTION] [--excerpt N]

Only records after FRACTION of each file's span are counted (default 0.5: the steady state of
a run whose set-up and reference run came first). Traces taken with KTRACE_API=1 also get, per
kernel, how long after the host's launch call it started (the median and 90th percentile): a
host that runs ahead of the GPU shows large lags; a host on the critical path, lags of a few
microseconds."""
import argparse
import collections
import glob
import os
import re


def kind(name):
    if name.startswith("nccl") or "ncclDevKernel" in name:
        return "nccl"
    if "halox" in name or "copy_kernel" in name or "gate_kernel" in name:
        return "halox"
    if name.startswith("memcpy") or name.startswith("memset"):
        return "copy"
    return "app"


def short(name):
    name = re.sub(r"#\d+$", "", name)  # a KTRACE_API=1 trace's correlation id
    name = re.sub(r"\(.*", "", name)
    return name[-60:]


def load(path):
    """The GPU records, sorted by start, and the start of each host call by correlation id
    (KTRACE_API=1 traces; empty otherwise)."""
    recs, calls = [], {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 5)
            if len(parts) < 6:
                continue
            s, e, dev, stream, k, name = parts
            if k == "A":  # host calls: not GPU time
                call, _, corr = name.rpartition("#")
                if call.startswith(("cudaLaunch", "cuLaunch")):
                    calls[corr] = int(s)
                continue
            recs.append((int(s), int(e), int(dev), int(stream), k, name))
    recs.sort()
    return recs, calls


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def launch_lags(recs, calls):
    """Per kernel name and stream: the microseconds from the launch call to the kernel's start."""
    lags = collections.defaultdict(list)
    for s, e, dev, stream, k, name in recs:
        corr = name.rpartition("#")[2]
        if k == "K" and corr in calls:
            lags[(kind(name), short(name), stream)].append((s - calls[corr]) / 1e3)
    for (k, n, stream), v in sorted(lags.items(), key=lambda x: (x[0][2], x[0][1])):
        print(f"    {k:5s} stream {stream:4d} {len(v):6d} x  median {percentile(v, 0.5):10.1f} us"
              f"  p90 {percentile(v, 0.9):10.1f} us  {n}")


def union_length(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def overlap(a, b):
    """Total time intervals of a spend overlapping the union of b."""
    b = sorted(b)
    total = 0
    for s, e in a:
        for bs, be in b:
            if be <= s:
                continue
            if bs >= e:
                break
            total += min(e, be) - max(s, bs)
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--from", dest="frac", type=float, default=0.5)
    ap.add_argument("--excerpt", type=int, default=12)
    a = ap.parse_args()
    for path in sorted(glob.glob(os.path.join(a.dir, "ktrace-*.txt"))):
        recs, calls = load(path)
        if not recs:
            continue
        t0, t1 = recs[0][0], max(r[1] for r in recs)
        cut = t0 + (t1 - t0) * a.frac
        recs = [r for r in recs if r[0] >= cut]
        if not recs:
            continue
        span = max(r[1] for r in recs) - recs[0][0]
        by = collections.defaultdict(list)
        names = collections.defaultdict(lambda: [0, 0])
        for s, e, dev, stream, k, name in recs:
            by[kind(name)].append((s, e))
            n = names[(kind(name), short(name), stream)]
            n[0] += 1
            n[1] += e - s
        busy = union_length([(r[0], r[1]) for r in recs])
        print(f"== {os.path.basename(path)}: {len(recs)} records over {span/1e6:.3f} ms "
              f"(from {a.frac:.0%} of the run); GPU busy {busy/span:.1%}")
        for k in ("app", "halox", "nccl", "copy"):
            if by[k]:
                u = union_length(by[k])
                print(f"  {k:6s} {len(by[k]):6d} records, {u/1e6:9.3f} ms ({u/span:.1%})")
        if by["nccl"] and by["app"]:
            ov = overlap(by["nccl"], by["app"])
            print(f"  nccl overlapping app kernels: {ov/1e6:.3f} ms")
        for (k, n, stream), (count, tot) in sorted(names.items(), key=lambda x: -x[1][1])[:10]:
            print(f"    {k:5s} stream {stream:4d} {count:6d} x {tot/count/1e3:9.2f} us  {n}")
        if calls:
            print("  from the launch call to the kernel's start:")
            launch_lags(recs, calls)
        mid = len(recs) // 2
        print("  excerpt (us from the first shown; stream; kind; duration us):")
        base = recs[mid][0]
        for s, e, dev, stream, k, name in recs[mid:mid + a.excerpt]:
            print(f"    {(s-base)/1e3:10.2f} s{stream:<4d} {kind(name):5s} {(e-s)/1e3:9.2f}  {short(name)}")


if __name__ == "__main__":
    main()
