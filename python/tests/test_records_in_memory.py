"""desync-plot and desync-run on records held in memory: record dicts and objects with a `.record`
(desync.Result), mixed, give the figures and the results table that the same records give from
files. The records are the stored runner output under docs/data/bethune/rate (Jacobi at 2 ranks,
sync/async/racy over three transports, three repetitions); one test makes a real desync.Result."""
import json
import os
import re
import subprocess
import sys
import textwrap

import matplotlib.pyplot as plt
import pytest
from matplotlib.container import BarContainer

from conftest import REPO, child_env
from desync_tools.errors import UserError
from desync_tools.plot import plot_breakdown, plot_convergence, plot_delays, plot_sweep
from desync_tools.plot.figures import run_labels, split_parts
from desync_tools.records import load_record
from desync_tools.runner import as_records, collect_rows, records_table, summary, write_csv
from desync_tools.runner.collect import record_exit_code
from desync_tools.runner.execute import write_json
from desync_tools.tables import read_table

RATE = os.path.join(REPO, "docs", "data", "bethune", "rate")


class Run:
    """What desync.solve returns, as far as the tools care: a record and an exit code."""

    def __init__(self, record, exit_code=None):
        self.record = record
        self.exit_code = exit_code


def rate_runs():
    """[(run id, status dict, record dict)] of the stored experiment, in folder order."""
    out = []
    for rid in sorted(os.listdir(os.path.join(RATE, "runs"))):
        folder = os.path.join(RATE, "runs", rid)
        with open(os.path.join(folder, "status.json")) as f:
            status = json.load(f)
        out.append((rid, status, load_record(os.path.join(folder, "record.json"))))
    return out


def rate_record(rid):
    return load_record(os.path.join(RATE, "runs", rid, "record.json"))


SYNC = "ranks=2,mode=sync,transport=p2p,rep=1"
ASYNC = "ranks=2,mode=async,transport=p2p,rep=1"


def figure_data(fig):
    """Everything drawn with data: each axes' lines (label, x, y) and bars (heights, bottoms), tick
    labels and legend texts."""
    out = []
    for ax in fig.axes:
        out.append([(ln.get_label(), [float(v) for v in ln.get_xdata()], [float(v) for v in ln.get_ydata()])
                    for ln in ax.get_lines()])
        out.append([[(p.get_height(), p.get_y(), p.get_x()) for p in c.patches]
                     for c in ax.containers if isinstance(c, BarContainer)])
        out.append([t.get_text() for t in ax.get_xticklabels()])
        legend = ax.get_legend()
        out.append([t.get_text() for t in legend.get_texts()] if legend else None)
    out.append(fig._suptitle.get_text() if fig._suptitle else None)
    plt.close(fig)
    return out


def curves(fig):
    """The residual curves (not the tolerance lines, not the true-residual stars)."""
    n = sum(len([ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1
                 and not ln.get_label().startswith("tolerance")]) for ax in fig.axes)
    plt.close(fig)
    return n


def test_convergence_same_from_dicts_results_and_mixed():
    sync, asyn = rate_record(SYNC), rate_record(ASYNC)
    reference = figure_data(plot_convergence([sync, asyn]))
    assert curves(plot_convergence([sync, asyn])) == 4  # two curves on each of two axes
    assert figure_data(plot_convergence([Run(sync), Run(asyn)])) == reference
    assert figure_data(plot_convergence([sync, Run(asyn)])) == reference
    assert figure_data(plot_convergence((r for r in [Run(sync), asyn]))) == reference
    # one record or Result, not in a list
    assert figure_data(plot_convergence(Run(asyn), x="iteration")) == figure_data(plot_convergence([asyn], x="iteration"))
    assert run_labels([Run(sync), asyn]) == run_labels([sync, asyn]) == ["jacobi sync", "jacobi async"]


def test_delays_and_breakdown_same_from_results():
    sync, asyn = rate_record(SYNC), rate_record(ASYNC)
    assert figure_data(plot_delays(Run(asyn))) == figure_data(plot_delays(asyn))
    assert figure_data(plot_breakdown([Run(asyn)])) == figure_data(plot_breakdown([asyn]))
    assert figure_data(plot_breakdown(Run(asyn))) == figure_data(plot_breakdown([asyn]))
    assert (figure_data(plot_breakdown([Run(sync), asyn], per="run"))
            == figure_data(plot_breakdown([sync, asyn], per="run")))
    assert split_parts(Run(asyn)) == split_parts(asyn) and "compute" in split_parts(asyn)


@pytest.mark.parametrize("bad,message", [
    ({"solver": "jacobi"}, "not a desync run record"),
    (Run({}), "records[0] (Run.record): not a desync run record"),
    (Run(None), "neither a run record"),
    ("sync.json", "a str is neither a run record"),
])
def test_not_a_record(bad, message):
    with pytest.raises(UserError, match=re.escape(message)):
        plot_convergence([bad])
    with pytest.raises(UserError, match="not a desync run record|neither a run record"):
        records_table([rate_record(SYNC), bad])


def write_results(folder, runs, parameters, accept_exit):
    """A results folder as desync-run writes it (runner/execute.py), with the given records."""
    os.makedirs(os.path.join(folder, "runs"))
    write_json(os.path.join(folder, "experiment.json"), {"name": "in-memory", "parameters": parameters,
                                                         "accept_exit": accept_exit})
    for rid, status, record in runs:
        os.makedirs(os.path.join(folder, "runs", rid))
        write_json(os.path.join(folder, "runs", rid, "record.json"), record)
        write_json(os.path.join(folder, "runs", rid, "status.json"), status)


def without_seconds(rows):
    """The rows without what only the runner's status.json knows: its process time and the host's load."""
    return [{k: v for k, v in r.items() if k not in ("seconds", "disturbed")} for r in rows]


def test_rows_equal_collect_rows_of_a_folder_with_the_same_records(tmp_path):
    # A folder written with four records (sync and async, two repetitions) and their in-memory table.
    runs = []
    for rid, _, record in rate_runs():
        if "transport=p2p" in rid and "racy" not in rid and not rid.endswith("rep=3"):
            mode, rep = record["options"]["mode"], int(rid[-1])
            new_id = f"mode={mode},rep={rep}"
            runs.append((new_id,
                         {"run_id": new_id, "repetition": rep, "parameters": {"mode": mode}, "status": "ok",
                          "exit_code": record_exit_code(record), "timed_out": False, "reason": "",
                          "seconds": None},
                         record))
    assert [r[0] for r in runs] == ["mode=async,rep=1", "mode=async,rep=2", "mode=sync,rep=1", "mode=sync,rep=2"]
    write_results(str(tmp_path / "res"), runs, ["mode"], [0, 1])
    from_folder = collect_rows(str(tmp_path / "res"))
    # in run order (sync, async, sync, async), as Results and dicts mixed; the mode inferred
    in_memory = records_table([Run(runs[2][2], 1), runs[0][2], Run(runs[3][2]), runs[1][2]], accept_exit=(0, 1))
    assert in_memory == from_folder
    columns, rows, parameters = in_memory
    assert parameters == ["mode"] and columns[:7] == ["run_id", "mode", "repetition", "status", "exit_code",
                                                       "reason", "seconds"]
    assert [(r["run_id"], r["status"], r["exit_code"], r["converged"]) for r in rows] == [
        ("mode=async,rep=1", "ok", 1, False), ("mode=async,rep=2", "ok", 1, False),
        ("mode=sync,rep=1", "ok", 1, False), ("mode=sync,rep=2", "ok", 1, False)]
    assert rows[0]["wall_time"] == runs[0][2]["wall_time"] and rows[0]["time_compute"] > 0
    # the CSV written from either is the same file
    write_csv(str(tmp_path / "a.csv"), *in_memory[:2])
    write_csv(str(tmp_path / "b.csv"), *from_folder[:2])
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()


def test_rows_equal_the_stored_runner_output():
    """docs/data/bethune/rate as desync-run collected it: parameters ranks, mode and a bundled
    transport (whose record key goes to record_transport); only `seconds` (the runner's process
    time) and `disturbed` (the host's load beside the run) are not in a record."""
    runs = rate_runs()
    columns, rows, parameters = collect_rows(RATE)
    mem_columns, mem_rows, mem_parameters = records_table([Run(rec) for _, _, rec in runs],
                                                          parameters=["ranks", "mode", "transport"],
                                                          accept_exit=(0, 1))
    assert (mem_columns, mem_parameters) == (columns, parameters)
    assert without_seconds(mem_rows) == without_seconds(rows)
    assert all(r["seconds"] is None for r in mem_rows) and all(r["seconds"] > 0 for r in rows)
    assert all(r["disturbed"] is None for r in mem_rows) and all(r["disturbed"] in (True, False) for r in rows)
    assert "record_transport" in columns and len(rows) == 27
    assert summary(mem_rows, mem_parameters, baseline="mode=sync") == summary(rows, parameters, baseline="mode=sync")
    # values given per record replace the lookups (here: the same values), run ids given as they are
    vals = [st["parameters"] for _, st, _ in runs]
    ids = [rid for rid, _, _ in runs]
    assert records_table([rec for _, _, rec in runs], values=vals, run_ids=ids, accept_exit=(0, 1))[1] == mem_rows


def test_sweep_figure_from_records_as_from_the_csv(tmp_path):
    runs = rate_runs()
    columns, rows, _ = collect_rows(RATE)
    write_csv(str(tmp_path / "results.csv"), columns, rows)
    csv_columns, csv_rows = read_table(str(tmp_path / "results.csv"))
    mem_columns, mem_rows, _ = records_table([rec for _, _, rec in runs], accept_exit=(0, 1))
    ref = figure_data(plot_sweep(csv_columns, csv_rows, "mode", "iteration_rate", by="transport"))
    assert figure_data(plot_sweep(mem_columns, mem_rows, "mode", "iteration_rate", by="transport")) == ref
    assert len(ref[0]) >= 3  # a curve per transport


def test_exit_codes_and_status():
    sync = rate_record(SYNC)  # stopped at --max-iters: not converged, exit code 1
    assert record_exit_code(sync) == 1
    converged = dict(sync, converged=True, stop_reason="tolerance_reached")
    failed = dict(sync, stop_reason="non_finite")
    pending = dict(converged, outstanding_requests=2)
    assert [record_exit_code(r) for r in (converged, failed, pending)] == [0, 3, 4]
    _, rows, parameters = records_table([converged, sync, Run(sync, exit_code=0)])
    assert parameters == []  # the same options and ranks: nothing was swept
    by_id = {r["run_id"]: r for r in rows}
    assert [(r["status"], r["exit_code"], r["reason"]) for r in rows] == [
        ("ok", 0, ""), ("failed", 1, "exit code 1"), ("ok", 0, "")]
    assert [r["repetition"] for r in rows] == [1, 2, 3] and list(by_id) == ["rep=1", "rep=2", "rep=3"]
    with pytest.raises(UserError, match="2 run ids for 3 records"):
        records_table([sync, sync, sync], run_ids=["a", "b"])
    with pytest.raises(UserError, match="1 parameter value sets for 2 records"):
        records_table([sync, sync], values=[{"n": 1}])
    assert as_records(Run(sync)) == [sync]


SCRIPT = textwrap.dedent("""\
    import json, sys
    try:
        import desync
    except ImportError as e:
        print("SKIP", e)
        sys.exit(0)
    from desync_tools.plot import plot_convergence
    from desync_tools.runner import records_table
    sys.path.insert(0, sys.argv[1])
    from test_records_in_memory import figure_data
    result = desync.run("jacobi", mode="async", local=8, tol=1e-6)
    assert isinstance(result, desync.Result) and isinstance(result.record, dict)
    assert figure_data(plot_convergence(result)) == figure_data(plot_convergence([result.record]))
    mixed = records_table([result, result.record], accept_exit=(0, 1))
    assert mixed[1][0]["exit_code"] == result.exit_code == mixed[1][1]["exit_code"]
    assert {k: v for k, v in mixed[1][0].items() if k not in ("run_id", "repetition")} == \\
           {k: v for k, v in mixed[1][1].items() if k not in ("run_id", "repetition")}
    print("OK", result.converged, result.iterations)
""")


def test_a_real_desync_result():
    """desync.run in a separate process (MPI is initialised there, as a singleton, not in pytest)."""
    out = subprocess.run([sys.executable, "-c", SCRIPT, os.path.dirname(__file__)], capture_output=True,
                         text=True, timeout=120, env=child_env(), cwd=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.startswith("SKIP"):
        pytest.skip(f"the desync module is not installed here: {out.stdout.strip()}")
    assert out.stdout.startswith("OK"), out.stdout + out.stderr
