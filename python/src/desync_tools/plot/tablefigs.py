"""Figures from a results table (`desync-run collect`): scaling against ranks, a metric against a
parameter. Medians over repetitions, with min-max error bars."""
import math

import matplotlib.pyplot as plt
import numpy as np

from ..errors import UserError
from ..tables import groups, is_numeric_column, number, ok_rows, require_columns, summarise

METRIC_LABELS = {
    "wall_time": "wall time [s]",
    "iterations_mean": "iterations (mean over ranks)",
    "iterations_max": "iterations (max over ranks)",
    "iterations_min": "iterations (min over ranks)",
    "true_residual": "true residual",
    "iteration_rate": "iteration rate [it/s]",
}


def _errorbar(ax, stats, label, xs=None, joined=True):
    """Medians with min-max bars; xs: numeric x positions (default: the x values as numbers);
    joined: a line through the medians (not for categories, whose order means nothing)."""
    if xs is None:
        xs = [number(s[0]) for s in stats]
    med = np.array([s[1] for s in stats])
    lo = med - np.array([s[2] for s in stats])
    hi = np.array([s[3] for s in stats]) - med
    return ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=label,
                       linestyle="-" if joined else "none")


def plot_scaling(columns, rows, by=None, weak=False, where="table", title=None):
    """Wall time, iterations and speed-up (strong) or efficiency (weak) against ranks, one curve per
    value of column `by`. Speed-up and efficiency are taken against the group's smallest rank count:
    strong t(P0)/t(P) with the ideal P/P0; weak t(P0)/t(P) with the ideal 1."""
    require_columns(columns, ["ranks", "wall_time", "iterations_mean"], "column", where)
    if by:
        require_columns(columns, [by], "column", where)
    rows = ok_rows(rows)
    if not rows:
        raise UserError(f"{where}: no successful runs to plot")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3), layout="constrained")
    all_ranks = set()
    for value, grp in groups(rows, by).items():
        label = f"{by}={value}" if by else "runs"
        t = summarise(grp, "ranks", "wall_time")
        it = summarise(grp, "ranks", "iterations_mean")
        _errorbar(axes[0], t, label)
        _errorbar(axes[1], it, label)
        ranks = [number(s[0]) for s in t]
        all_ranks.update(ranks)
        base = t[0][1]
        ratio = [base / s[1] if s[1] > 0 else math.nan for s in t]
        axes[2].plot(ranks, ratio, marker="o", label=label)
    rs = sorted(all_ranks)
    if rs:
        axes[2].plot(rs, [1.0] * len(rs) if weak else [r / rs[0] for r in rs], "k:", label="ideal")
    axes[0].set_ylabel("wall time [s]")
    axes[1].set_ylabel("iterations (mean over ranks)")
    axes[2].set_ylabel("efficiency t(P0)/t(P)" if weak else "speed-up t(P0)/t(P)")
    for ax in axes:
        ax.set_xlabel("ranks")
        ax.set_xscale("log", base=2)
        if rs:
            ax.set_xticks(rs, [f"{r:g}" for r in rs])
            ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or ("weak scaling" if weak else "strong scaling"))
    return fig


def plot_sweep(columns, rows, x, y, by=None, logx=False, mark=None, where="table", title=None):
    """Metric `y` against parameter `x` (medians, min-max bars), one curve per value of `by`; `mark`
    draws a vertical line at one x value (e.g. the automatic choice of a parameter)."""
    require_columns(columns, [x], "parameter", where)
    require_columns(columns, [y], "metric", where)
    if by:
        require_columns(columns, [by], "column", where)
    rows = ok_rows(rows)
    if not rows:
        raise UserError(f"{where}: no successful runs to plot")
    numeric_x = is_numeric_column(rows, x)
    fig, ax = plt.subplots(figsize=(6.8, 4.4), layout="constrained")
    categories = []
    if not numeric_x:
        for r in rows:
            if r.get(x, "") not in categories:
                categories.append(r.get(x, ""))
    grouped = groups(rows, by)
    for k, (value, grp) in enumerate(grouped.items()):
        stats = summarise(grp, x, y)
        if not stats:
            continue
        # categories: each group a little to the side, so that the bars do not hide each other
        shift = (k - (len(grouped) - 1) / 2) * 0.08
        xs = None if numeric_x else [categories.index(s[0]) + shift for s in stats]
        _errorbar(ax, stats, f"{by}={value}" if by else y, xs=xs, joined=numeric_x)
    if not numeric_x:
        ax.set_xticks(range(len(categories)), categories,
                      rotation=30 if max(len(c) for c in categories) > 8 else 0, ha="right" if
                      max(len(c) for c in categories) > 8 else "center")
    if mark is not None:
        mx = number(mark)
        if math.isnan(mx):
            raise UserError(f"--mark {mark}: not a number")
        ax.axvline(mx, color="grey", linestyle="--", label=f"{x} = {mark:g}" if isinstance(mark, float) else f"{x} = {mark}")
    if logx and numeric_x:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(METRIC_LABELS.get(y, y))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or f"{y} against {x}")
    return fig
