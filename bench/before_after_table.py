#!/usr/bin/env python3
"""The table of a bench/before_after.sh run: each figure of the old and the new build, round by round.

    python3 bench/before_after_table.py DIR      DIR: the run's results (TREE/build/bench/before-after)

Every figure is a ratio to a reference measured in the same run (the STREAM triad, the synchronous
variant, p2p, PETSc's KSPCG), except Schwarz's iteration counts and times, which the two builds
measured alternately on the same machine. Prints a Markdown table, one column per build, the rounds
separated by commas.
"""
import glob
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def rounds(folder, side):
    """The round tags of one side (old_r1, old_r2, ...) in order."""
    tags = {os.path.basename(p)[len("sweep_np1_"):-len(".json")] for p in glob.glob(f"{folder}/sweep_np1_{side}_r*.json")}
    return sorted(tags, key=lambda t: int(t.rsplit("_r", 1)[1]))


def sweep(folder, tag, np):
    d = load(f"{folder}/sweep_np{np}_{tag}.json")
    return d and d["sweep_over_triad"]


def tts(folder, tag, noise):
    d = load(f"{folder}/tts_{tag}.json")
    if not d:
        return None
    for row in d["summary"]:
        if row["mode"] == "async" and row["noise"] == noise:
            return row["ratio_to_sync"]
    return None


def transport(folder, tag, config):
    d = load(f"{folder}/transport_{tag}.json")
    if not d:
        return None
    for row in d["rows"]:
        if row["config"] == config:
            return row["median_rate"] if config == "p2p" else row["ratio_to_p2p"]
    return None


def cg(folder, tag, method, operator):
    d = load(f"{folder}/cg_{tag}.json")
    if not d:
        return None
    for row in d["summary"]:
        if row["solver"] == "desync" and row["method"] == method and row["operator"] == operator:
            return row["ratio_to_kspcg"]
    return None


def schwarz(folder, tag, mode, what):
    runs = [load(p) for p in sorted(glob.glob(f"{folder}/schwarz_{mode}_{tag}_*.json"))]
    runs = [r for r in runs if r]
    if not runs:
        return None
    if what == "iterations":
        return statistics.median(r["iterations"]["max"] for r in runs)
    return statistics.median(r["wall_time"] for r in runs)


FIGURES = [
    ("sweep / STREAM triad, 1 rank", lambda f, t: sweep(f, t, 1), "{:.3f}"),
    ("sweep / STREAM triad, 2 ranks", lambda f, t: sweep(f, t, 2), "{:.3f}"),
    ("async / sync Jacobi time to solution, no noise (median of 3)", lambda f, t: tts(f, t, False), "{:.3f}"),
    ("async / sync Jacobi time to solution, rank 1 slowed 2x (target <= 0.9)", lambda f, t: tts(f, t, True), "{:.3f}"),
    ("p2p async Jacobi iterations/s (median of 3)", lambda f, t: transport(f, t, "p2p"), "{:.0f}"),
    ("rma flush / p2p iteration rate", lambda f, t: transport(f, t, "rma flush"), "{:.3f}"),
    ("shmem put / p2p iteration rate", lambda f, t: transport(f, t, "shmem put"), "{:.3f}"),
    ("CG matrix-free, time / PETSc KSPCG (128^3, median of 3)", lambda f, t: cg(f, t, "cg", "matrix-free"), "{:.3f}"),
    ("CG CSR, time / PETSc KSPCG", lambda f, t: cg(f, t, "cg", "csr"), "{:.3f}"),
    ("pipecg matrix-free, time / PETSc KSPCG", lambda f, t: cg(f, t, "pipecg", "matrix-free"), "{:.3f}"),
    ("pipecg CSR, time / PETSc KSPCG", lambda f, t: cg(f, t, "pipecg", "csr"), "{:.3f}"),
    ("Schwarz sync, iterations (128^2, rank 1 slowed 2x, median of 3)", lambda f, t: schwarz(f, t, "sync", "iterations"), "{:.0f}"),
    ("Schwarz async, iterations (max over ranks)", lambda f, t: schwarz(f, t, "async", "iterations"), "{:.0f}"),
    ("Schwarz sync, time (s)", lambda f, t: schwarz(f, t, "sync", "time"), "{:.3f}"),
    ("Schwarz async, time (s)", lambda f, t: schwarz(f, t, "async", "time"), "{:.3f}"),
]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    folder = sys.argv[1]
    old, new = rounds(folder, "old"), rounds(folder, "new")
    if not old or not new:
        print(f"before_after_table.py: no rounds of both builds in {folder}", file=sys.stderr)
        return 2

    def cell(fn, fmt, tags):
        values = [fn(folder, t) for t in tags]
        return ", ".join("-" if v is None else fmt.format(v) for v in values)

    print(f"| Figure ({len(old)} rounds, old then new each round) | before | after |")
    print("|---|---|---|")
    for name, fn, fmt in FIGURES:
        print(f"| {name} | {cell(fn, fmt, old)} | {cell(fn, fmt, new)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
