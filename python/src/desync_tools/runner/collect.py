"""desync-run collect: one CSV row per run of a results folder, and a summary with ratios to a
baseline measured in the same experiment.

The same table comes from run records held in memory (records_table): record dicts, or the
Results of `desync.solve` / `desync.run` (anything with a `.record`), so that summary() and the
table figures (desync_tools.plot.plot_sweep, plot_scaling) work on runs made in-process."""
import csv
import json
import os

from ..errors import UserError
from ..records import OUTPUT_OPTIONS, as_records, load_record
from ..tables import cell, record_row, sort_key
from .execute import read_json
from .experiment import run_id as folder_name
from .session import median

RUN_COLUMNS = ("run_id", "repetition", "status", "exit_code", "reason", "seconds", "disturbed")
# Stop reasons that are numerical failures (desync::core::is_numerical_failure): exit code 3.
NUMERICAL_FAILURES = ("non_finite", "diverged", "breakdown", "pc_failed")


def record_exit_code(record):
    """The exit code of the command line that wrote `record` (src/run/run_end.cpp): 4 for MPI
    requests left pending, 3 for a numerical failure, 0 converged, 1 not converged."""
    if record.get("outstanding_requests"):
        return 4
    if record.get("stop_reason") in NUMERICAL_FAILURES:
        return 3
    return 0 if record.get("converged") else 1


def run_row(record, run_id, repetition=None, status="ok", exit_code=None, reason="", seconds=None,
            parameters=None, disturbed=None):
    """One row of a results table: the run's own columns, its parameter values, then the record's
    key figures (tables.record_row; none when record is None). A parameter's column keeps the
    parameter's value: a record key of the same name (e.g. the transport a bundled value selected)
    goes to record_<name>."""
    row = {"run_id": run_id, "repetition": repetition, "status": status, "exit_code": exit_code,
           "reason": reason, "seconds": seconds, "disturbed": disturbed}
    row.update(parameters or {})
    if record is not None:
        for key, value in record_row(record).items():
            row[key if key not in row or key == "ranks" else f"record_{key}"] = value
    return row


def _table(rows, parameters):
    """(columns, rows sorted by parameters then repetition, parameters)."""
    columns = list(RUN_COLUMNS[:1]) + list(parameters) + list(RUN_COLUMNS[1:])
    for r in rows:
        columns += [k for k in r if k not in columns]
    rows.sort(key=lambda r: [sort_key(cell(r.get(p))) for p in parameters] + [sort_key(cell(r.get("repetition")))])
    return columns, rows, list(parameters)


def collect_rows(results):
    """(columns, rows, parameters) of every run folder under results/runs; failed runs stay, with
    their reason."""
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
        record, problem = None, None
        path = os.path.join(folder, "record.json")
        if os.path.isfile(path):
            try:
                record = load_record(path)
            except UserError as e:
                problem = str(e)
        row = run_row(record, rid, st.get("repetition"), st.get("status"), st.get("exit_code"),
                      st.get("reason", ""), st.get("seconds"), st.get("parameters", {}), st.get("disturbed"))
        if problem:
            row["status"] = "failed"
            row["reason"] = (row["reason"] + "; " if row["reason"] else "") + problem
        rows.append(row)
    return _table(rows, parameters)


def _parameter_value(record, name):
    """A parameter's value in a record: its option (the name with dashes or underscores, as the
    record stores it: a string), else the record's own key of that name (ranks)."""
    options = record.get("options", {})
    for key in (name, name.replace("_", "-")):
        if key in options:
            return options[key]
    if name in record and not isinstance(record[name], (dict, list)):
        return record[name]
    return None


def _differing(records, names):
    """The parameters of a list of records: `ranks` if the records differ in it, then the options
    whose values differ between the records (output options left out), sorted by name."""
    found = [] if len({r["ranks"] for r in records}) <= 1 else ["ranks"]
    options = [r.get("options", {}) for r in records]
    common = set.intersection(*(set(o) for o in options)) if options else set()
    found += [k for k in sorted(common - OUTPUT_OPTIONS) if len({str(o[k]) for o in options}) > 1]
    return [k for k in found if k not in names]


def records_table(records, parameters=None, values=None, run_ids=None, accept_exit=(0,)):
    """(columns, rows, parameters): the table collect_rows reads from a results folder, made from
    run records in memory, one row per record in the same form (run_row), for summary(),
    write_csv() and the table figures.

    records: run records (dicts) or objects with a `.record` (desync.Result), mixed.
    parameters: the swept parameters' names, each an option name (dashes or underscores; the
      record's string value) or a record key (ranks); default: the names in `values`, then ranks
      and the options whose values differ between the records.
    values: one {parameter: value} dict per record, for parameters that are no option (a matrix
      size, a label); they take precedence over the records' own values.
    run_ids: one per record; default desync-run's folder names (`mode=async,rep=1`).
    accept_exit: the exit codes of a successful run, as an experiment's accept_exit: a run whose
      exit code (a Result's, else the one the record implies) is not among them has status
      "failed", reason "exit code N".
    Repetitions count the records with the same parameter values, in order; `seconds` (the
    runner's process time) stays empty."""
    objects = [records] if isinstance(records, dict) or hasattr(records, "record") else list(records)
    recs = as_records(objects)
    if values is not None and len(values) != len(recs):
        raise UserError(f"{len(values)} parameter value sets for {len(recs)} records")
    if run_ids is not None and len(run_ids) != len(recs):
        raise UserError(f"{len(run_ids)} run ids for {len(recs)} records")
    values = [dict(v) for v in values] if values is not None else [{} for _ in recs]
    if parameters is None:
        parameters = []
        for v in values:
            parameters += [k for k in v if k not in parameters]
        parameters += _differing(recs, parameters) if recs else []
    parameters = list(parameters)
    rows, seen = [], {}
    for i, (obj, rec, given) in enumerate(zip(objects, recs, values)):
        params = {p: given[p] if p in given else _parameter_value(rec, p) for p in parameters}
        key = tuple(cell(params[p]) for p in parameters)
        seen[key] = seen.get(key, 0) + 1
        code = getattr(obj, "exit_code", None)  # a Result's; a dict's is the one its record implies
        code = record_exit_code(rec) if code is None else int(code)
        ok = code in accept_exit
        rid = run_ids[i] if run_ids is not None else folder_name(seen[key], params)
        rows.append(run_row(rec, rid, seen[key], "ok" if ok else "failed", code,
                            "" if ok else f"exit code {code}", None, params))
    return _table(rows, parameters)


def write_csv(path, columns, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([cell(r.get(c)) for c in columns])


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
        line += [f"{median(vals):.4g}", f"{min(vals):.4g}", f"{max(vals):.4g}"] if vals else ["-", "-", "-"]
        line.append(f"{median(its):.1f}" if its else "-")
        if baseline:
            bkey_i = parameters.index(bkey)
            base = list(key)
            base[bkey_i] = bval
            bvals = med.get(tuple(base), [])
            line.append(f"{median(vals) / median(bvals):.3f}" if vals and bvals else "-")
        table.append(line)
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    return ["  ".join(str(v).rjust(w) for v, w in zip(row, widths)) for row in table]
