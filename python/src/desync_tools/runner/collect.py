"""desync-run collect: one CSV row per run of a results folder, and a summary with ratios to a
baseline measured in the same experiment."""
import csv
import json
import math
import os
import statistics

from ..errors import UserError
from ..records import load_record
from ..tables import cell, record_row, sort_key
from .execute import read_json

RUN_COLUMNS = ("run_id", "repetition", "status", "exit_code", "reason", "seconds")


def collect_rows(results):
    """(columns, rows) of every run folder under results/runs; failed runs stay, with their reason."""
    exp_path = os.path.join(results, "experiment.json")
    if not os.path.isfile(exp_path):
        raise UserError(f"{results}: not a desync-run results folder (no experiment.json; "
                        "make one with `desync-run run EXPERIMENT.toml -o FOLDER`)")
    try:
        exp = read_json(exp_path)
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"{exp_path}: unreadable ({e})") from None
    parameters = list(exp.get("parameters", []))
    runs = os.path.join(results, "runs")
    rows = []
    for rid in sorted(os.listdir(runs)) if os.path.isdir(runs) else []:
        folder = os.path.join(runs, rid)
        status_path = os.path.join(folder, "status.json")
        if not os.path.isfile(status_path):
            rows.append({"run_id": rid, "status": "incomplete", "reason": "no status.json (interrupted?)"})
            continue
        st = read_json(status_path)
        row = {"run_id": rid, "repetition": st.get("repetition"), "status": st.get("status"),
               "exit_code": st.get("exit_code"), "reason": st.get("reason", ""), "seconds": st.get("seconds")}
        row.update(st.get("parameters", {}))
        record = os.path.join(folder, "record.json")
        if os.path.isfile(record):
            try:
                # A parameter's column keeps the parameter's value: a record key of the same name
                # (e.g. the transport a bundled value selected) goes to record_<name>.
                for key, value in record_row(load_record(record)).items():
                    row[key if key not in row or key == "ranks" else f"record_{key}"] = value
            except UserError as e:
                row["status"] = "failed"
                row["reason"] = (row["reason"] + "; " if row["reason"] else "") + str(e)
        rows.append(row)
    columns = list(RUN_COLUMNS[:1]) + parameters + list(RUN_COLUMNS[1:])
    for r in rows:
        columns += [k for k in r if k not in columns]
    rows.sort(key=lambda r: [sort_key(cell(r.get(p))) for p in parameters] + [sort_key(cell(r.get("repetition")))])
    return columns, rows, parameters


def write_csv(path, columns, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([cell(r.get(c)) for c in columns])


def _median(xs):
    return statistics.median(xs) if xs else math.nan


def summary(rows, parameters, baseline=None, metric="wall_time"):
    """Lines of a table: per combination (repetitions pooled) the runs ok, the median metric with its
    min-max, median iterations, and with a baseline `key=value` the ratio of medians to the baseline
    combination that has the same other parameters."""
    if baseline:
        if "=" not in baseline:
            raise UserError(f"--baseline '{baseline}': use PARAMETER=VALUE, e.g. mode=sync")
        bkey, bval = baseline.split("=", 1)
        if bkey not in parameters:
            raise UserError(f"--baseline: unknown parameter '{bkey}' (swept: {', '.join(parameters)})")
    combos = {}
    for r in rows:
        key = tuple(cell(r.get(p)) for p in parameters)
        combos.setdefault(key, []).append(r)
    med = {}
    for key, rs in combos.items():
        vals = [float(r[metric]) for r in rs if r.get("status") == "ok" and isinstance(r.get(metric), (int, float))]
        med[key] = vals
    if baseline and not any(k[parameters.index(bkey)] == bval for k in combos):
        raise UserError(f"--baseline: no run has {bkey}={bval}")
    head = parameters + ["ok", f"median {metric}", "min", "max", "iterations"] + (["ratio"] if baseline else [])
    table = [head]
    for key in sorted(combos, key=lambda k: [sort_key(v) for v in k]):
        vals = med[key]
        its = [float(r["iterations_mean"]) for r in combos[key] if isinstance(r.get("iterations_mean"), (int, float))]
        line = list(key) + [f"{len(vals)}/{len(combos[key])}"]
        line += [f"{_median(vals):.4g}", f"{min(vals):.4g}", f"{max(vals):.4g}"] if vals else ["-", "-", "-"]
        line.append(f"{_median(its):.1f}" if its else "-")
        if baseline:
            bkey_i = parameters.index(bkey)
            base = list(key)
            base[bkey_i] = bval
            bvals = med.get(tuple(base), [])
            line.append(f"{_median(vals) / _median(bvals):.3f}" if vals and bvals else "-")
        table.append(line)
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    return ["  ".join(str(v).rjust(w) for v, w in zip(row, widths)) for row in table]
