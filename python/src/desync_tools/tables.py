"""Results tables (CSV, one row per run, as `desync-run collect` writes them): reading, grouping and
medians, shared by the scaling and sweep figures and the report."""
import csv
import math
import os
import statistics

from .errors import UserError


def read_table(path):
    """Rows of a CSV results table as dicts of strings; UserError when it cannot be read."""
    path = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = list(reader.fieldnames or [])
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"{path}: not a CSV results table ({e})") from None
    if not columns:
        raise UserError(f"{path}: empty results table (write one with `desync-run collect RESULTS`)")
    return columns, rows


def require_columns(columns, wanted, what, path):
    """UserError naming the available columns when one of `wanted` is missing."""
    for name in wanted:
        if name not in columns:
            raise UserError(f"{path}: unknown {what} '{name}' (columns: {', '.join(columns)})")


def number(text):
    """A cell as float, NaN when empty or not numeric ('true'/'false' become 1/0)."""
    if text is None:
        return math.nan
    t = str(text).strip().lower()
    if t in ("true", "false"):
        return 1.0 if t == "true" else 0.0
    try:
        return float(t)
    except ValueError:
        return math.nan


def is_numeric_column(rows, name):
    """Every non-empty cell of the column parses as a number (and there is at least one)."""
    cells = [r.get(name, "") for r in rows if r.get(name, "") not in ("", None)]
    return bool(cells) and all(not math.isnan(number(c)) for c in cells)


def ok_rows(rows):
    """Rows of runs that produced a record (status ok, or no status column)."""
    return [r for r in rows if r.get("status", "ok") in ("ok", "")]


def sort_key(value):
    """Numbers in numeric order, then strings."""
    x = number(value)
    return (0, x, "") if not math.isnan(x) else (1, 0.0, str(value))


def groups(rows, by):
    """{value of column `by` (or '' when by is None): [rows]}, in sorted order."""
    out = {}
    for r in rows:
        out.setdefault(r.get(by, "") if by else "", []).append(r)
    return dict(sorted(out.items(), key=lambda kv: sort_key(kv[0])))


def summarise(rows, x, y):
    """Per distinct x (sorted): (x value, median y, min y, max y, count) over rows with a finite y."""
    per_x = {}
    for r in rows:
        v = number(r.get(y))
        if not math.isnan(v):
            per_x.setdefault(r.get(x, ""), []).append(v)
    out = []
    for key in sorted(per_x, key=sort_key):
        vals = per_x[key]
        out.append((key, statistics.median(vals), min(vals), max(vals), len(vals)))
    return out


# Columns taken from a run record, in order (docs/experiments.md lists them).
RECORD_COLUMNS = ("solver", "method", "ranks", "converged", "stop_reason", "wall_time", "iterations_min",
                  "iterations_mean", "iterations_max", "true_residual", "tested_residual", "iteration_rate",
                  "unknowns")
# Solver details worth a column when present: (column, path in the record).
DETAIL_COLUMNS = (("transport", ("details", "transport")),
                  ("polish_iterations", ("details", "polish_iterations")),
                  ("delay_mean", ("details", "delay", "mean")),
                  ("delay_max", ("details", "delay", "max")),
                  ("messages_sent_per_iteration", ("details", "messages_per_iteration", "sent")))


def _dig(doc, path):
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def record_row(rec):
    """The key figures of one run record as a flat dict (one row of a results table)."""
    row = {}
    for key in RECORD_COLUMNS:
        if key.startswith("iterations_"):
            row[key] = rec.get("iterations", {}).get(key[len("iterations_"):])
        else:
            row[key] = rec.get(key)
    for part, seconds in rec.get("time_split", {}).items():
        row[f"time_{part}"] = seconds
    for column, path in DETAIL_COLUMNS:
        value = _dig(rec, path)
        if value is not None:
            row[column] = value
    return row


def cell(value):
    """A value as a CSV cell: booleans lower case, None empty, floats in full precision."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def where(columns, rows, conditions, path):
    """The rows whose columns equal the values of `conditions` (["mode=sync", ...]); UserError for a
    condition that is not COLUMN=VALUE, an unknown column, or no row left."""
    for cond in conditions or []:
        if "=" not in cond:
            raise UserError(f"--where '{cond}': use COLUMN=VALUE, e.g. mode=sync")
        col, value = cond.split("=", 1)
        require_columns(columns, [col], "column", path)
        rows = [r for r in rows if r.get(col, "") == value]
        if not rows:
            raise UserError(f"--where {cond}: no run of {path} has {col}={value}")
    return rows
