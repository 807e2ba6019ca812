"""desync-plot on real records: the figures' objects (curves, bars, bins, labels), the files, and
every bad input (one line, exit status 2)."""
import csv
import json
import os

import matplotlib
import pytest
from matplotlib.container import BarContainer

from desync_tools.plot import (load_field, plot_breakdown, plot_convergence, plot_delays, plot_field,
                               plot_scaling, plot_sweep, write_report)
from desync_tools.plot.cli import main
from desync_tools.records import load_record
from desync_tools.tables import read_table


def data_lines(ax):
    """Lines with data: curves and markers, not the tolerance lines (axhline spans axes coordinates)."""
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("tolerance")]


def bar_counts(ax):
    return [len(c.patches) for c in ax.containers if isinstance(c, BarContainer)]


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_convergence_two_runs(records, tmp_path, capsys):
    recs = [load_record(records["sync"]), load_record(records["async"])]
    fig = plot_convergence(recs)
    assert len(fig.axes) == 2
    for ax, xlabel in zip(fig.axes, ("time since start of solve [s]", "iteration (rank 0)")):
        assert ax.get_xlabel() == xlabel
        assert ax.get_yscale() == "log"
        curves = [ln for ln in data_lines(ax) if ln.get_marker() in ("None", None, "")]
        stars = [ln for ln in data_lines(ax) if ln.get_marker() == "*"]
        assert len(curves) == 2 and len(stars) == 2
        # each run's curve is its residual history; its star sits at the true residual
        for rec, curve, star in zip(recs, curves, stars):
            assert list(curve.get_ydata()) == pytest.approx(rec["residual_history"]["residual"])
            assert star.get_ydata()[0] == pytest.approx(rec["true_residual"])
        tol = [ln for ln in ax.get_lines() if ln.get_label().startswith("tolerance")]
        assert len(tol) == 1 and tol[0].get_ydata()[0] == pytest.approx(1e-4)
    labels = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
    assert "jacobi sync" in labels and "jacobi async" in labels and "true residual" in labels
    out = tmp_path / "c.svg"
    code, stdout, _ = run_cli(["convergence", records["sync"], records["async"], "-o", str(out)], capsys)
    assert code == 0 and out.stat().st_size > 1000 and "wrote" in stdout
    fig = plot_convergence(recs, x="iteration")
    assert len(fig.axes) == 1 and fig.axes[0].get_xlabel() == "iteration (rank 0)"


def test_convergence_per_rank(records, tmp_path):
    rec = load_record(records["async"])
    with pytest.raises(Exception, match="no per-rank residual histories"):
        plot_convergence([rec], per_rank=True)
    # a record with local residual histories (as solvers that record them write): one curve per rank
    for i, pr in enumerate(rec["per_rank"]):
        pr["residual_history"] = {"time": [0.0, 0.1, 0.2], "iteration": [0, 5, 10], "residual": [1.0, 0.1 / (i + 1), None]}
    fig = plot_convergence([rec], x="time", per_rank=True)
    names = [ln.get_label() for ln in data_lines(fig.axes[0])]
    assert names.count("jacobi async: rank 0") == 1 and names.count("jacobi async: rank 1") == 1


def test_delays(records, tmp_path, capsys):
    rec = load_record(records["async"])
    fig = plot_delays(rec)
    hist_ax, iter_ax = fig.axes
    hists = [pr["delay_histogram"] for pr in rec["per_rank"]]
    nbins = max(max(i for i, c in enumerate(h) if c) for h in hists) + 1
    assert bar_counts(hist_ax) == [nbins, nbins]  # one bar per bin for each of the 2 ranks
    heights = [p.get_height() for p in hist_ax.containers[0].patches]
    assert heights == hists[0][:nbins]
    assert "halo delay" in hist_ax.get_xlabel() and hist_ax.get_ylabel() == "count"
    assert bar_counts(iter_ax) == [2]
    assert [p.get_height() for p in iter_ax.containers[0].patches] == [pr["iterations"] for pr in rec["per_rank"]]
    assert iter_ax.get_ylabel() == "iterations"
    out = tmp_path / "d.png"
    assert run_cli(["delays", records["async"], "-o", str(out)], capsys)[0] == 0 and out.stat().st_size > 1000
    code, _, err = run_cli(["delays", records["cg"], "-o", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and "no halo delay data" in err


def test_breakdown(records, tmp_path, capsys):
    rec = load_record(records["async"])
    fig = plot_breakdown([rec])
    ax = fig.axes[0]
    parts = ["compute", "finish", "halo", "noise", "polish", "reduction", "other"]
    assert sorted(c.get_label() for c in ax.containers) == sorted(parts)
    assert bar_counts(ax) == [2] * len(parts)  # one bar per rank, one segment per part
    # the stacks add up to each rank's total
    tops = [max(p.get_y() + p.get_height() for c in ax.containers for p in [c.patches[i]]) for i in range(2)]
    assert tops == pytest.approx([pr["time"]["total"] for pr in rec["per_rank"]], rel=1e-9)
    assert ax.get_ylabel() == "time [s]" and ax.get_xlabel() == "rank"
    # per run, across solvers: cg's shares (halo_wait, reduction_wait) are not stacked
    cg = load_record(records["cg"])
    assert cg["time_split_shares"] == ["halo_wait", "reduction_wait"]
    fig = plot_breakdown([rec, cg], per="run")
    labels = {c.get_label() for c in fig.axes[0].containers}
    assert "halo_wait" not in labels and "reduction_wait" not in labels and "spmv" in labels
    assert bar_counts(fig.axes[0]) == [2] * len(labels)
    out = tmp_path / "b.pdf"
    assert run_cli(["breakdown", records["sync"], records["async"], "-o", str(out)], capsys)[0] == 0
    assert out.stat().st_size > 1000


def write_table(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def table_rows():
    rows = []
    for mode, t1 in (("sync", 1.0), ("async", 0.9)):
        for ranks in (1, 2, 4):
            for rep, jitter in ((1, 0.0), (2, 0.1), (3, -0.05)):
                rows.append({"run_id": f"{mode}{ranks}{rep}", "ranks": ranks, "mode": mode, "alpha": ranks * 0.5,
                             "repetition": rep, "status": "ok", "converged": "true",
                             "wall_time": t1 / ranks + jitter, "iterations_mean": 100 * ranks, "iterations_max": 110 * ranks,
                             "true_residual": 1e-5})
    rows.append(dict(rows[0], run_id="bad", status="failed", wall_time="", iterations_mean=""))
    return rows


def test_scaling(tmp_path, capsys):
    path = tmp_path / "results.csv"
    write_table(path, table_rows())
    columns, rows = read_table(path)
    fig = plot_scaling(columns, rows, by="mode")
    t_ax, it_ax, s_ax = fig.axes
    assert [ax.get_xlabel() for ax in fig.axes] == ["ranks"] * 3
    assert t_ax.get_ylabel() == "wall time [s]" and s_ax.get_ylabel().startswith("speed-up")
    assert len(t_ax.containers) == 2  # an errorbar per mode
    async_t = t_ax.containers[0].lines[0]  # groups sorted: async first
    assert list(async_t.get_ydata()) == pytest.approx([0.9, 0.45, 0.225])  # medians over the 3 repetitions
    speedups = {ln.get_label(): list(ln.get_ydata()) for ln in s_ax.get_lines()}
    assert speedups["mode=sync"] == pytest.approx([1.0, 2.0, 4.0]) and speedups["ideal"] == [1, 2, 4]
    fig = plot_scaling(columns, rows, by="mode", weak=True)
    assert fig.axes[2].get_ylabel().startswith("efficiency")
    out = tmp_path / "s.png"
    assert run_cli(["scaling", str(path), "--by", "mode", "-o", str(out)], capsys)[0] == 0 and out.exists()
    code, _, err = run_cli(["scaling", str(path), "--by", "nonsense", "-o", str(out)], capsys)
    assert code == 2 and "unknown column 'nonsense'" in err and "mode" in err


def test_sweep(tmp_path, capsys):
    path = tmp_path / "results.csv"
    write_table(path, table_rows())
    columns, rows = read_table(path)
    fig = plot_sweep(columns, rows, "alpha", "iterations_mean", by="mode", mark=1.0)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "alpha" and ax.get_ylabel() == "iterations (mean over ranks)"
    assert len(ax.containers) == 2
    assert list(ax.containers[1].lines[0].get_xdata()) == [0.5, 1.0, 2.0]
    marks = [ln for ln in ax.get_lines() if ln.get_label() == "alpha = 1"]
    assert len(marks) == 1
    out = tmp_path / "w.png"
    assert run_cli(["sweep", str(path), "--x", "alpha", "--y", "wall_time", "--logx", "-o", str(out)], capsys)[0] == 0
    code, _, err = run_cli(["sweep", str(path), "--x", "alpha", "--y", "speed", "-o", str(out)], capsys)
    assert code == 2 and "unknown metric 'speed'" in err and "wall_time" in err
    code, _, err = run_cli(["sweep", str(path), "--x", "beta", "-o", str(out)], capsys)
    assert code == 2 and "unknown parameter 'beta'" in err
    # --where keeps one mode: the sync rows (9 and the failed one), one curve
    from desync_tools.tables import where
    assert len(where(columns, rows, ["mode=sync"], "t")) == 10
    fig = plot_sweep(columns, where(columns, rows, ["mode=sync"], "t"), "ranks", "wall_time", by="mode")
    assert len(fig.axes[0].containers) == 1
    code, _, _ = run_cli(["sweep", str(path), "--x", "ranks", "--y", "wall_time", "--where", "mode=sync", "-o", str(out)],
                         capsys)
    assert code == 0
    code, _, err = run_cli(["sweep", str(path), "--x", "ranks", "--where", "mode=none", "-o", str(out)], capsys)
    assert code == 2 and "no run of" in err and "mode=none" in err
    code, _, err = run_cli(["sweep", str(path), "--x", "ranks", "--where", "colour=red", "-o", str(out)], capsys)
    assert code == 2 and "unknown column 'colour'" in err


def test_field(records, tmp_path, capsys):
    a = load_field(records["field"])
    assert a.shape == (6, 8, 10)
    fig = plot_field(a, axis="z", index=0)
    ax = fig.axes[0]
    assert ax.get_images()[0].get_array().shape == (8, 10)
    assert ax.get_xlabel() == "x index" and ax.get_ylabel() == "y index"
    assert len(fig.axes) == 2  # the image and its colour bar
    fig = plot_field(a, axis="x")
    assert fig.axes[0].get_images()[0].get_array().shape == (6, 8)
    out = tmp_path / "f.png"
    assert run_cli(["field", records["field"], "--axis", "y", "-o", str(out)], capsys)[0] == 0 and out.exists()
    code, _, err = run_cli(["field", records["field"], "--index", "6", "-o", str(out)], capsys)
    assert code == 2 and "outside 0..5" in err


def test_report(records, tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("sync", "async"):
        (folder / f"{name}.json").write_text(open(records[name]).read())
    (folder / "notes.json").write_text("{}")  # not a record: ignored
    out = tmp_path / "report.html"
    code, stdout, _ = run_cli(["report", str(folder), "-o", str(out)], capsys)
    assert code == 0
    page = out.read_text()
    assert page.count("<img src=\"data:image/png;base64,") == 3  # convergence, breakdown, delays (async)
    assert "async.json" in page and "sync.json" in page and "notes.json" not in page
    n = write_report(str(folder), str(tmp_path / "r.md"))
    assert n == 3 and len(os.listdir(tmp_path / "r_figures")) == 3


@pytest.mark.parametrize("make,args,message", [
    (lambda d: d / "missing.json", ["convergence"], "no such file"),
    (lambda d: (d / "u.json").write_text("[1, 2]") and d / "u.json", ["convergence"], "not a desync run record"),
    (lambda d: (d / "t.txt").write_text("hello") and d / "t.txt", ["delays"], "not JSON"),
    (lambda d: (d / "v9.json").write_text(json.dumps({"schema": "desync.run", "schema_version": 9})) and d / "v9.json",
     ["breakdown"], "schema version 9 is not supported (supported: 2)"),
])
def test_bad_records(tmp_path, capsys, make, args, message):
    path = make(tmp_path)
    code, _, err = run_cli(args + [str(path), "-o", str(tmp_path / "x.png")], capsys)
    assert code == 2
    assert err.startswith("desync-plot: error: ") and message in err and err.count("\n") == 1


def test_bad_output_and_usage(records, tmp_path, capsys):
    code, _, err = run_cli(["convergence", records["sync"], "-o", str(tmp_path / "x.jpg")], capsys)
    assert code == 2 and "unknown figure format" in err
    code, _, err = run_cli(["field", records["sync"], "-o", str(tmp_path / "x.png")], capsys)
    assert code == 2 and "not a .npy field" in err
    code, _, err = run_cli(["report", str(tmp_path / "nowhere")], capsys)
    assert code == 2 and "no such folder" in err
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "convergence" in capsys.readouterr().out
    assert matplotlib.get_backend().lower() == "agg"
