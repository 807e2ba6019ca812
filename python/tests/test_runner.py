"""desync-run on real desync runs at 1-2 ranks: every combination once, restarts run nothing new,
collect's rows, failed runs recorded with their exit code, --dry-run, --emit-slurm, bad input."""
import csv
import json
import os
import subprocess

import pytest

from conftest import mpirun
from desync_tools.runner.cli import main

EXPERIMENT = """\
[experiment]
name = "modes"
executable = "{exe}"
launcher = "{launcher}"
solver = "jacobi"
repetitions = 2
order = "interleaved"
timeout = 120
[options]
local = 8
polish = true
[parameters]
ranks = [1, 2]
mode = ["sync", "async"]
"""


def write(path, text):
    path.write_text(text)
    return str(path)


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def experiment(desync, tmp_path):
    return write(tmp_path / "modes.toml", EXPERIMENT.format(exe=desync, launcher=mpirun()))


def test_run_restart_collect(experiment, tmp_path, capsys):
    results = tmp_path / "results"
    code, out, err = run_cli(["run", experiment, "-o", str(results)], capsys)
    assert code == 0, err
    runs = sorted(os.listdir(results / "runs"))
    assert runs == sorted(f"ranks={r},mode={m},rep={k}" for r in (1, 2) for m in ("sync", "async") for k in (1, 2))
    for rid in runs:
        status = json.loads((results / "runs" / rid / "status.json").read_text())
        assert status["status"] == "ok" and status["exit_code"] == 0
        assert (results / "runs" / rid / "record.json").exists()
        assert "--polish" in (results / "runs" / rid / "command.txt").read_text()
        # the host's load beside the run (whether it was disturbed depends on the host: only its type)
        assert len(status["loadavg_before"]) == 3 and len(status["loadavg_after"]) == 3
        assert status["foreign_cpu_seconds"] >= 0 and isinstance(status["disturbed"], bool)
    assert err.count("100%") == 1 and "left ~" in err  # the progress lines
    assert "8 runs: 8 ok, 0 failed" in out
    machine = json.loads((results / "machine.json").read_text())
    assert machine["cpus"] >= 1 and machine["desync_version"].startswith("desync")
    stamps = {rid: os.stat(results / "runs" / rid / "status.json").st_mtime_ns for rid in runs}
    # a restart runs nothing new
    code, out, err = run_cli(["run", experiment, "-o", str(results)], capsys)
    assert code == 0 and "8 run(s) already done" in err and "(0 ran now, 8 done before)" in out
    assert stamps == {rid: os.stat(results / "runs" / rid / "status.json").st_mtime_ns for rid in runs}
    code, out, _ = run_cli(["collect", str(results), "--summary", "--baseline", "mode=sync"], capsys)
    assert code == 0
    rows = rows_of(results / "results.csv")
    assert len(rows) == 8
    assert sorted((r["ranks"], r["mode"], r["repetition"]) for r in rows) == sorted(
        (str(r), m, str(k)) for r in (1, 2) for m in ("sync", "async") for k in (1, 2))
    for r in rows:
        assert r["status"] == "ok" and r["converged"] == "true" and r["solver"] == "jacobi" and r["method"] == r["mode"]
        assert r["disturbed"] in ("true", "false")
        assert float(r["iterations_mean"]) > 0 and float(r["wall_time"]) > 0 and float(r["true_residual"]) <= 1e-4
    sync_lines = [ln for ln in out.splitlines() if " sync " in f" {ln} "]
    assert len(sync_lines) == 2 and all(ln.rstrip().endswith("1.000") for ln in sync_lines)


def test_failed_runs_recorded(desync, tmp_path, capsys):
    exp = write(tmp_path / "f.toml", EXPERIMENT.format(exe=desync, launcher=mpirun())
                .replace('mode = ["sync", "async"]', 'mode = ["sync", "bogus"]').replace("ranks = [1, 2]", "ranks = [1]")
                .replace("repetitions = 2", "repetitions = 1"))
    results = tmp_path / "r"
    code, out, _ = run_cli(["run", exp, "-o", str(results)], capsys)
    assert code == 1 and "2 runs: 1 ok, 1 failed" in out and "unknown mode" in out
    status = json.loads((results / "runs" / "ranks=1,mode=bogus,rep=1" / "status.json").read_text())
    assert status["status"] == "failed" and status["exit_code"] == 2
    assert "desync: error: --mode 'bogus'" in status["reason"]
    run_cli(["collect", str(results)], capsys)
    rows = {r["mode"]: r for r in rows_of(results / "results.csv")}
    assert rows["bogus"]["status"] == "failed" and rows["bogus"]["exit_code"] == "2" and rows["bogus"]["wall_time"] == ""
    assert rows["sync"]["status"] == "ok"
    # a restart keeps reporting the failure; --retry-failed runs it again
    code, out, err = run_cli(["run", exp, "-o", str(results)], capsys)
    assert code == 1 and "2 run(s) already done" in err
    code, out, err = run_cli(["run", exp, "-o", str(results), "--retry-failed"], capsys)
    assert code == 1 and "(1 ran now, 1 done before)" in out


def test_record_not_a_desync_record_is_a_failed_row(experiment, tmp_path, capsys):
    results = tmp_path / "results"
    exp = experiment.replace("modes.toml", "one.toml")
    write(tmp_path / "one.toml", open(experiment).read().replace("ranks = [1, 2]", "ranks = [1]")
          .replace('mode = ["sync", "async"]', 'mode = ["sync"]').replace("repetitions = 2", "repetitions = 1"))
    assert run_cli(["run", exp, "-o", str(results)], capsys)[0] == 0
    (results / "runs" / "ranks=1,mode=sync,rep=1" / "record.json").write_text('{"hello": 1}')
    assert run_cli(["collect", str(results)], capsys)[0] == 0
    (row,) = rows_of(results / "results.csv")
    assert row["status"] == "failed" and "not a desync run record" in row["reason"]


def test_dry_run_and_slurm(experiment, tmp_path, capsys):
    results = tmp_path / "dry"
    code, out, _ = run_cli(["run", experiment, "-o", str(results), "--dry-run"], capsys)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 8 and not results.exists()
    assert sum(" -np 2 " in ln for ln in lines) == 4 and all(" jacobi " in ln and "--json" in ln for ln in lines)
    script = tmp_path / "job.sh"
    code, out, _ = run_cli(["run", experiment, "-o", str(tmp_path / "cluster"), "--emit-slurm", str(script)], capsys)
    text = script.read_text()
    assert code == 0 and "#SBATCH --ntasks=2" in text and "#SBATCH --time=" in text
    assert text.count("srun -n 1 ") == 4 and text.count("srun -n 2 ") == 4
    assert (tmp_path / "cluster" / "experiment.json").exists() and not os.listdir(tmp_path / "cluster" / "runs")
    # the script runs (an `srun` that hands over to this machine's launcher) into a folder collect reads
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "srun").write_text(f'#!/bin/sh\n[ "$1" = -n ] || exit 9\nn=$2; shift 2\nexec {mpirun()} -np "$n" "$@"\n')
    (fake / "srun").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert run_cli(["collect", str(tmp_path / "cluster")], capsys)[0] == 0
    rows = rows_of(tmp_path / "cluster" / "results.csv")
    assert len(rows) == 8 and all(r["status"] == "ok" and r["converged"] == "true" for r in rows)


def test_bundled_parameter_values(desync, tmp_path, capsys):
    exp = write(tmp_path / "b.toml", f"""\
[experiment]
name = "bundles"
executable = "{desync}"
solver = "jacobi"
accept_exit = [0, 1]
timeout = 60
[options]
local = 8
max-iters = 20
tol = 1e-300
[parameters]
ranks = [2]
transport = [{{ name = "p2p" }}, {{ name = "rma-flush", transport = "rma", rma-sync = "flush" }},
             {{ name = "shm", transport = "shmem", launcher = "oshrun --mca osc ucx -np {{ranks}} {{exe}} {{args}}" }}]
""")
    code, out, _ = run_cli(["run", exp, "--dry-run"], capsys)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 3
    assert "--transport rma --rma-sync flush" in lines[1] and lines[1].startswith(mpirun())
    assert lines[2].startswith("oshrun --mca osc ucx -np 2 ") and "--transport shmem" in lines[2] and "--name" not in out
    # exit code 1 (stopped at --max-iters) is accepted: a fixed-work benchmark
    results = tmp_path / "r"
    code, out, _ = run_cli(["run", exp, "-o", str(results), "--launcher", mpirun()], capsys)
    status = json.loads((results / "runs" / "ranks=2,transport=rma-flush,rep=1" / "status.json").read_text())
    assert status["exit_code"] == 1 and status["status"] == "ok"
    assert status["parameters"] == {"ranks": 2, "transport": "rma-flush"}
    # collect: the parameter's column holds the bundle's name, the record's own key moves aside
    assert run_cli(["collect", str(results)], capsys)[0] == 0
    row = next(r for r in rows_of(results / "results.csv") if r["run_id"] == "ranks=2,transport=rma-flush,rep=1")
    assert row["transport"] == "rma-flush" and row["record_transport"] == "rma"


@pytest.mark.parametrize("text,message", [
    ("[experiment\nname=1", "not a valid TOML file"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\ncolour = "red"\n[parameters]\nmode = ["sync"]\n',
     "unknown key [experiment] colour"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\n[parameters]\nmode = []\n', "[parameters] mode is an empty list"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\n[parameters]\n', "[parameters] is empty"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\n[options]\nmode = "sync"\n[parameters]\nmode = ["sync"]\n',
     "mode is both in [options] and in [parameters]"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\nrepetitions = 0\n[parameters]\nmode = ["sync"]\n',
     "repetitions must be at least 1"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\nlauncher = "myrun"\n[parameters]\nmode = ["sync"]\n',
     "launcher 'myrun' is neither"),
    ('[experiment]\nsolver = "jacobi"\n[parameters]\nmode = ["sync"]\n', "[experiment] name is required"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\n[parameters]\nranks = [0]\n', "ranks must be positive integers"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\n[sweep]\nmode = ["sync"]\n', "unknown table(s) sweep"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\ncommand = "true"\n[parameters]\nmode = ["sync"]\n',
     "give solver (a sweep of desync runs) or command, not both"),
    ('[[experiment]]\nid = "c"\ndescription = "d"\ncommand = "true"\n', "no sweep experiment (its experiments are commands"),
    ('[[experiment]]\nid = "c"\ncommand = "true"\ncolour = "red"\n', "unknown key [experiment] colour"),
    ('[[experiment]]\nid = "a"\nsolver = "jacobi"\n[experiment.parameters]\nmode = ["sync"]\n'
     '[[experiment]]\nid = "b"\nsolver = "jacobi"\n[experiment.parameters]\nmode = ["async"]\n',
     "2 sweep experiments (a, b): pick one with --only"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\nsets = ["medium"]\n[parameters]\nmode = ["sync"]\n',
     "sets must list some of quick, full"),
    ('[[experiment]]\nid = "x"\nsolver = "jacobi"\n[experiment.parameters]\nmode = ["sync"]\n'
     '[experiment.quick_parameters]\nranks = [2]\n', "[experiment.quick_parameters] may only replace"),
    ('[experiment]\nname = "x"\nsolver = "jacobi"\nstudy_order = "size"\n[parameters]\nmode = ["sync"]\n',
     "study_order 'size' is neither file nor ranks"),
])
def test_bad_experiment_files(tmp_path, capsys, text, message):
    path = write(tmp_path / "bad.toml", text)
    code, _, err = run_cli(["run", path, "--dry-run"], capsys)
    assert code == 2 and err.startswith("desync-run: error: ") and message in err and err.count("\n") == 1


def test_results_of_another_experiment(experiment, desync, tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    (results / "experiment.json").write_text(json.dumps({"name": "other", "fingerprint": "0123"}))
    code, _, err = run_cli(["run", experiment, "-o", str(results)], capsys)
    assert code == 2 and "holds results of another experiment ('other'" in err
    code, _, err = run_cli(["collect", str(tmp_path)], capsys)
    assert code == 2 and "not a desync-run results folder" in err
    code, _, err = run_cli(["run", str(tmp_path / "none.toml")], capsys)
    assert code == 2 and "no such file" in err


def test_one_format_for_sweeps_and_commands(tmp_path, capsys):
    """A file of [[experiment]] tables holds sweeps (desync-run runs the one --only names, its options and
    parameters in [experiment.options] and [experiment.parameters]) and commands (the results pages'
    kind); the results pages refuse a sweep in bench/results, naming it."""
    text = ('[[experiment]]\nid = "a"\nsolver = "jacobi"\nset = "quick"\noutput = "a.json"\n'
            '[experiment.options]\nlocal = 8\n[experiment.parameters]\nmode = ["sync", "async"]\n'
            '[[experiment]]\nid = "b"\nsolver = "schwarz"\n[experiment.parameters]\nranks = [2]\n'
            '[[experiment]]\nid = "c"\ndescription = "a script"\ncommand = "{python} bench/x.py --json {out}"\n')
    path = write(tmp_path / "mixed.toml", text)
    code, out, _ = run_cli(["run", path, "--only", "a", "--dry-run"], capsys)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 2 and all("jacobi" in line and "--local 8" in line for line in lines)
    assert "--mode sync" in lines[0] and "--mode async" in lines[1]
    code, _, err = run_cli(["run", path, "--only", "c", "--dry-run"], capsys)
    assert code == 2 and "no sweep experiment 'c'" in err
    from desync_tools.results.render import load_manifest
    from desync_tools.errors import UserError
    (tmp_path / "root" / "bench" / "results").mkdir(parents=True)
    (tmp_path / "root" / "bench" / "results" / "page.toml").write_text(text)
    with pytest.raises(UserError, match="experiment a is a sweep of desync runs"):
        load_manifest(str(tmp_path / "root"))


def test_host_load_counts_only_what_others_took(monkeypatch):
    # busy time of the whole machine less the run's own (its reaped children) is the others' share;
    # above half of every core over the run's time, the run is disturbed
    from desync_tools.runner import machine
    clock = {"t": 100.0, "busy": 50.0, "own": 3.0}
    monkeypatch.setattr(machine.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(machine, "cpu_busy_seconds", lambda: clock["busy"])
    monkeypatch.setattr(machine, "children_cpu_seconds", lambda: clock["own"])
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    for own, others, disturbed in ((4.0, 0.5, False), (4.0, 2.0, False), (4.0, 2.2, True), (0.0, 0.0, False)):
        host = machine.HostLoad()
        clock["t"] += 2.0                        # a run of 2 s on 2 cores: 4 CPU seconds at most
        clock["own"] += own
        clock["busy"] += own + others
        got = host.finish()
        assert got["foreign_cpu_seconds"] == pytest.approx(others)
        assert got["disturbed"] is disturbed, (own, others)
    monkeypatch.setattr(machine, "cpu_busy_seconds", lambda: None)  # no /proc/stat: unknown, not disturbed
    got = machine.HostLoad().finish()
    assert got["foreign_cpu_seconds"] is None and got["disturbed"] is False
