"""Figures from run records: convergence, delays, breakdown (docs/output.md names every key read).

Every function taking records takes record dicts (desync --json, load_record) and objects with a
`.record` (the Results of desync.solve and desync.run), mixed in one list (records.as_records)."""
import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np

from ..errors import UserError
from ..records import OUTPUT_OPTIONS, as_record, as_records, history

# Parts of a time split that are shares of another part (records written before the JSON carried
# `time_split_shares`): CG's halo and reduction waits.
_KNOWN_SHARES = ("halo_wait", "reduction_wait")
_NOT_PARTS = ("other", "total")


def run_labels(records):
    """Labels telling the records apart: solver and method, then the options whose values differ
    between the records (`jacobi async, slow-factor=2`), then the ranks if they differ."""
    records = as_records(records)
    options = [rec.get("options", {}) for rec in records]
    # Options every record has (solvers differ in their options) whose values differ, at most three.
    common = set.intersection(*(set(o) for o in options)) if options else set()
    keys = sorted(common - OUTPUT_OPTIONS - {"mode", "method"})
    differing = [k for k in keys if len({str(o.get(k)) for o in options}) > 1][:3]
    ranks_differ = len({rec["ranks"] for rec in records}) > 1
    labels = []
    for rec, opt in zip(records, options):
        parts = [f"{rec['solver']} {rec['method']}"]
        parts += [f"{k}={opt.get(k)}" for k in differing]
        if ranks_differ:
            parts.append(f"{rec['ranks']} ranks")
        labels.append(", ".join(parts))
    if len(set(labels)) < len(labels):  # identical runs (repetitions): number them
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    return labels


def _rank_histories(rec):
    """[(rank, time, iteration, residual)] of the per-rank local residual histories, if recorded."""
    out = []
    for i, pr in enumerate(rec.get("per_rank", [])):
        h = pr.get("residual_history") if isinstance(pr, dict) else None
        if h and h.get("residual"):
            res = [math.nan if r is None else float(r) for r in h["residual"]]
            out.append((pr.get("rank", i), list(h.get("time", [])), list(h.get("iteration", [])), res))
    return out


def plot_convergence(records, x="both", per_rank=False, labels=None, title=None):
    """Residual against time and/or iteration, one curve per record (and per rank with per_rank),
    log scale, the tolerance as a dotted line, each run's true final residual marked."""
    records = as_records(records)
    if x not in ("both", "time", "iteration"):
        raise UserError(f"unknown x axis '{x}' (use time, iteration or both)")
    if labels is not None and len(labels) != len(records):
        raise UserError(f"{len(labels)} labels for {len(records)} records")
    labels = labels or run_labels(records)
    axes_x = ["time", "iteration"] if x == "both" else [x]
    fig, axes = plt.subplots(1, len(axes_x), figsize=(6.2 * len(axes_x), 4.4), squeeze=False, layout="constrained")
    axes = axes[0]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if per_rank:
        missing = [lab for rec, lab in zip(records, labels) if not _rank_histories(rec)]
        if missing:
            raise UserError(f"--per-rank: no per-rank residual histories in the record of {missing[0]} "
                            f"(solvers that record local residuals write per_rank[].residual_history)")
    tolerances = sorted({rec["tolerance"] for rec in records})
    true_marked = False
    for ax, xname in zip(axes, axes_x):
        ci = 0
        for rec, lab in zip(records, labels):
            t, it, res = history(rec)
            xs = t if xname == "time" else it
            colour = colours[ci % len(colours)]
            ci += 1
            if per_rank:
                for rank, rt, rit, rres in _rank_histories(rec):
                    ax.plot(rt if xname == "time" else rit, rres, lw=1.0, color=colours[ci % len(colours)],
                            label=f"{lab}: rank {rank}")
                    ci += 1
            if xs:
                ax.plot(xs, res, lw=2.0, color=colour, label=lab)
            tr = rec.get("true_residual")
            if xs and isinstance(tr, (int, float)) and tr > 0 and math.isfinite(tr):
                ax.plot([xs[-1]], [tr], linestyle="none", marker="*", markersize=11, color=colour,
                        markeredgecolor="black", label="true residual" if not true_marked else "_nolegend_")
                true_marked = True
        for tol in tolerances:
            ax.axhline(tol, color="grey", linestyle=":", lw=1.2, label=f"tolerance {tol:g}")
        ax.set_yscale("log")
        ax.set_xlabel("time since start of solve [s]" if xname == "time" else "iteration (rank 0)")
        ax.set_ylabel("residual (normalised)")
        ax.grid(True, which="major", alpha=0.3)
        true_marked = False
    axes[-1].legend(fontsize=8)
    fig.suptitle(title or "Convergence")
    return fig


def plot_delays(record, title=None):
    """Left: per-rank histograms of the halo delays used (per_rank[].delay_histogram: bin a counts ages
    of a iterations, bin 0 ages <= 0, bin 63 ages >= 63), bins up to the last non-empty one; right:
    per-rank iteration counts."""
    record = as_record(record)
    ranks = record.get("per_rank", [])
    hists = [pr.get("delay_histogram") for pr in ranks]
    if not ranks or any(h is None for h in hists) or sum(sum(h) for h in hists) == 0:
        raise UserError(f"the {record['solver']} {record['method']} record has no halo delay data "
                        "(per_rank[].delay_histogram): delays are recorded by asynchronous runs")
    nbins = max(max((i for i, c in enumerate(h) if c), default=0) for h in hists) + 1
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 1.2]}, layout="constrained")
    width = 0.8 / len(ranks)
    ages = np.arange(nbins)
    for k, (pr, h) in enumerate(zip(ranks, hists)):
        ax.bar(ages + (k - (len(ranks) - 1) / 2) * width, h[:nbins], width=width, label=f"rank {pr.get('rank', k)}")
    ax.set_xlabel("halo delay [iterations] (own iteration - sender's; bin 0: <= 0, last: >= 63)")
    ax.set_ylabel("count")
    if nbins == len(hists[0]):
        ticks = [t for t in ax.get_xticks() if 0 <= t < nbins - 4] + [nbins - 1]
        ax.set_xticks(ticks, [f"{int(t)}" for t in ticks[:-1]] + [f">={nbins - 1}"])
    ax.legend(fontsize=8)
    ax.set_title("halo delays used")
    iters = [pr.get("iterations", 0) for pr in ranks]
    ax2.bar([str(pr.get("rank", k)) for k, pr in enumerate(ranks)], iters, color="tab:gray")
    ax2.set_xlabel("rank")
    ax2.set_ylabel("iterations")
    ax2.set_title("iterations per rank")
    fig.suptitle(title or f"{record['solver']} {record['method']}, {record['ranks']} ranks")
    return fig


def split_parts(record):
    """The parts of the record's time split that add up to the total, in the record's order."""
    record = as_record(record)
    shares = set(record.get("time_split_shares", _KNOWN_SHARES))
    return [k for k in record.get("time_split", {}) if k not in _NOT_PARTS and k not in shares]


def plot_breakdown(records, per="rank", labels=None, title=None):
    """Stacked bars of the time split: one bar per rank of one record (per="rank") or one bar per
    record (per="run", means over ranks). Shares of another part (CG's halo_wait) are not stacked;
    `other` (the total minus the parts) is."""
    records = as_records(records)
    if per not in ("rank", "run"):
        raise UserError(f"unknown --per '{per}' (use rank or run)")
    if per == "rank" and len(records) != 1:
        raise UserError("breakdown per rank takes one record (use --per run for several)")
    parts = []
    for rec in records:
        parts += [p for p in split_parts(rec) if p not in parts]
    if per == "rank":
        rec = records[0]
        bars = [(str(pr.get("rank", i)), pr.get("time", {})) for i, pr in enumerate(rec["per_rank"])]
        xlabel = "rank"
    else:
        labels = labels or run_labels(records)
        bars = [(lab, rec["time_split"]) for rec, lab in zip(records, labels)]
        xlabel = "run"
    fig, ax = plt.subplots(figsize=(max(6.0, 3.0 + 1.3 * len(bars)), 4.6), layout="constrained")
    names = [textwrap.fill(b[0], 16) for b in bars]
    bottom = np.zeros(len(bars))
    palette = plt.cm.tab10.colors if len(parts) <= 10 else plt.cm.tab20.colors
    for part in parts + ["other"]:
        if part == "other":
            vals = np.array([max(0.0, t.get("total", 0.0) - sum(t.get(p, 0.0) for p in parts)) for _, t in bars])
        else:
            vals = np.array([float(t.get(part, 0.0)) for _, t in bars])
        colour = "lightgrey" if part == "other" else palette[parts.index(part) % len(palette)]
        ax.bar(names, vals, bottom=bottom, label=part, color=colour)
        bottom += vals
    ax.set_xlabel(xlabel)
    ax.set_ylabel("time [s]")
    fig.legend(fontsize=8, loc="outside right upper")
    ax.set_title(title or ("time split per rank: " + f"{records[0]['solver']} {records[0]['method']}"
                           if per == "rank" else "time split per run (means over ranks)"))
    return fig
