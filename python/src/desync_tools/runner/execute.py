"""Running an experiment into a results folder (docs/experiments.md, "The results folder"):

    RESULTS/experiment.json    the experiment (parsed), its fingerprint and the swept parameters
    RESULTS/machine.json       the machine and software (machine.py), load at start and end
    RESULTS/runs/<run id>/     command.txt, stdout.txt, stderr.txt, record.json (desync's --json),
                               status.json (written last: exit code, status, seconds, timed_out, ...)

A run with a status.json is done: a restart skips it (--retry-failed re-runs the failed ones).
"""
import json
import os
import shlex
import signal
import subprocess
import sys
import time

from ..errors import UserError
from ..records import load_record
from . import machine, session
from .session import write_json
from .experiment import LAUNCHERS, run_id, shown


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def experiment_doc(exp):
    return {"name": exp.name, "description": exp.description, "solver": exp.solver, "file": os.path.abspath(exp.path),
            "fingerprint": exp.fingerprint(), "repetitions": exp.repetitions, "order": exp.order,
            "launcher": exp.launcher, "executable": exp.executable, "timeout": exp.timeout,
            "accept_exit": exp.accept_exit,
            "options": exp.options, "parameters": list(exp.parameters), "values": exp.parameters}


def prepare_results(exp, results):
    """Creates (or checks) the results folder of `exp`; UserError for another experiment's folder."""
    path = os.path.join(results, "experiment.json")
    if os.path.exists(path):
        try:
            old = read_json(path)
        except (OSError, json.JSONDecodeError):
            raise UserError(f"{results}: experiment.json is unreadable; use another -o or delete the folder") from None
        if old.get("fingerprint") != exp.fingerprint():
            raise UserError(f"{results}: the folder holds results of another experiment "
                            f"('{old.get('name')}', fingerprint {old.get('fingerprint')}); use another -o or delete it")
    elif os.path.isdir(results) and os.listdir(results):
        raise UserError(f"{results}: the folder exists and is not a desync-run results folder; use another -o")
    os.makedirs(os.path.join(results, "runs"), exist_ok=True)
    write_json(path, experiment_doc(exp))


def child_env(exp, ranks):
    return session.child_env(ranks, exp.env)


def _clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _error_line(stderr_path):
    """`: <desync's error message>` from a run's standard error, or nothing."""
    try:
        with open(stderr_path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if "error" in line.lower()]
    return f": {errors[0][:200]}" if errors else ""


def run_one(exp, rep, combo, folder, executable, launcher):
    """Runs one combination into `folder`; returns its status dict (also written to status.json)."""
    os.makedirs(folder, exist_ok=True)
    record = os.path.join(folder, "record.json")
    for stale in ("record.json", "status.json"):
        if os.path.exists(os.path.join(folder, stale)):
            os.remove(os.path.join(folder, stale))
    cmd = exp.command(combo, record, executable, launcher)
    with open(os.path.join(folder, "command.txt"), "w", encoding="utf-8") as f:
        f.write(shlex.join(cmd) + "\n")
    start = time.time()
    timed_out = False
    exit_code = None
    reason = ""
    host = machine.HostLoad()
    with open(os.path.join(folder, "stdout.txt"), "wb") as out, open(os.path.join(folder, "stderr.txt"), "wb") as err:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=child_env(exp, exp.ranks(combo)),
                                    start_new_session=True)
        except OSError as e:
            reason = f"could not start {cmd[0]}: {e.strerror}"
        else:
            try:
                exit_code = proc.wait(timeout=exp.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, signal.SIGTERM)  # the launcher and every rank it started
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                exit_code = proc.returncode
                reason = f"timed out after {exp.timeout:g} s"
    seconds = time.time() - start
    load = host.finish()
    if not reason:
        if exit_code not in exp.accept_exit:
            reason = f"exit code {exit_code}" + _error_line(os.path.join(folder, "stderr.txt"))
        if not os.path.exists(record):
            reason = (reason + ", " if reason else "") + "no run record written"
        else:
            try:
                load_record(record)
            except UserError as e:
                reason = (reason + ", " if reason else "") + str(e)
    status = {"run_id": os.path.basename(folder), "repetition": rep, "parameters": shown(combo),
              "status": "timeout" if timed_out else ("ok" if not reason else "failed"),
              "exit_code": exit_code, "timed_out": timed_out, "reason": reason,
              "start": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start)), "seconds": round(seconds, 3),
              **load}
    write_json(os.path.join(folder, "status.json"), status)
    return status


def launcher_program(exp, launcher=None):
    launcher = launcher or exp.launcher
    if launcher in LAUNCHERS:
        return LAUNCHERS[launcher][0] if LAUNCHERS[launcher] else None
    return shlex.split(launcher)[0]


def run_experiment(exp, results, executable=None, launcher=None, retry_failed=False, dry_run=False, stream=None):
    """Runs every (repetition, combination) not yet done; returns (ran, skipped, failed statuses)."""
    stream = stream or sys.stderr
    executable = executable or exp.executable
    plan = [(rep, combo, os.path.join(results, "runs", run_id(rep, combo))) for rep, combo in exp.runs()]
    if dry_run:
        for rep, combo, folder in plan:
            print(shlex.join(exp.command(combo, os.path.join(folder, "record.json"), executable, launcher)))
        return 0, 0, []
    if not (os.path.isfile(executable) and os.access(executable, os.X_OK)) and os.sep in executable:
        raise UserError(f"desync executable '{executable}' not found (build it, or give --desync PATH)")
    prepare_results(exp, results)
    info = machine.describe(executable, launcher_program(exp, launcher))
    todo, skipped, failed = [], 0, []
    for rep, combo, folder in plan:
        status_path = os.path.join(folder, "status.json")
        if os.path.exists(status_path):
            old = read_json(status_path)
            if not (retry_failed and old.get("status") != "ok"):
                skipped += 1
                if old.get("status") != "ok":
                    failed.append(old)
                continue
        todo.append((rep, combo, folder))
    if skipped:
        print(f"desync-run: {skipped} run(s) already done in {results}, skipped", file=stream)
    begun = time.time()
    for k, (rep, combo, folder) in enumerate(todo, 1):
        status = run_one(exp, rep, combo, folder, executable, launcher)
        if status["status"] != "ok":
            failed.append(status)
        elapsed = time.time() - begun
        left = elapsed / k * (len(todo) - k)
        print(f"[{k:>{len(str(len(todo)))}}/{len(todo)}] {100 * k // len(todo):3d}%  elapsed {_clock(elapsed)}  "
              f"left ~{_clock(left)}  {status['run_id']}: {status['status']} {status['seconds']:.1f} s"
              + (f" ({status['reason']})" if status["reason"] else "")
              + (" (disturbed: other processes kept the host busy)" if status.get("disturbed") else ""),
              file=stream, flush=True)
    info["load_end"] = machine.load()
    write_json(os.path.join(results, "machine.json"), info)
    return len(todo), skipped, failed
