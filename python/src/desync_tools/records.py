"""Reading desync's run records (docs/output.md): JSON documents with `"schema": "desync.run"`.

Every reader of the package goes through load_record(), so a file that is not a run record, or one
of a schema version this package does not know, is refused in one place with one clear message.
"""
import json
import math
import os

from .errors import UserError

SCHEMA = "desync.run"
SUPPORTED_VERSIONS = (2,)
# Keys every solver writes (docs/output.md, "The JSON record"); a record without them is refused.
REQUIRED_KEYS = ("solver", "method", "ranks", "converged", "stop_reason", "tolerance", "true_residual",
                 "iterations", "wall_time", "time_split", "residual_history", "per_rank")


def supported_versions_text():
    return ", ".join(str(v) for v in SUPPORTED_VERSIONS)


def check_record(doc, where):
    """Checks that doc (parsed JSON) is a run record this package can read; returns it."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise UserError(f"{where}: not a desync run record (no \"schema\": \"{SCHEMA}\" key; "
                        f"write one with `desync <solver> --json FILE`)")
    version = doc.get("schema_version")
    if version not in SUPPORTED_VERSIONS:
        raise UserError(f"{where}: run record schema version {version!r} is not supported "
                        f"(supported: {supported_versions_text()})")
    missing = [k for k in REQUIRED_KEYS if k not in doc]
    if missing:
        raise UserError(f"{where}: run record lacks key(s) {', '.join(missing)}")
    return doc


def load_record(path):
    """The run record in file `path` (a dict), or UserError with the reason."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a run record") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not a desync run record (not JSON: {e})") from None
    return check_record(doc, path)


def history(rec):
    """The record's residual history as three lists (time, iteration, residual); null residuals
    become NaN."""
    h = rec["residual_history"]
    residual = [math.nan if r is None else float(r) for r in h.get("residual", [])]
    return list(h.get("time", [])), list(h.get("iteration", [])), residual


def label(rec):
    """A short label of a run: solver, method and ranks, e.g. `jacobi async, 2 ranks`."""
    return f"{rec['solver']} {rec['method']}, {rec['ranks']} rank{'s' if rec['ranks'] != 1 else ''}"


# Options that say where output goes, not what ran: never a parameter, never a label.
OUTPUT_OPTIONS = frozenset({"json", "save", "monitor", "quiet", "monitor-every"})


def as_record(run, where="record"):
    """The run record of `run`: a record dict, or an object with a `.record` dict (a desync.Result);
    checked like a record file (UserError naming `where` otherwise)."""
    if isinstance(run, dict):
        return check_record(run, where)
    record = getattr(run, "record", None)
    if isinstance(record, dict):
        return check_record(record, f"{where} ({type(run).__name__}.record)")
    raise UserError(f"{where}: a {type(run).__name__} is neither a run record (dict) nor has one "
                    "(.record, as a desync.Result)")


def as_records(runs, where="records"):
    """as_record of each run of a list (a single record or Result is a list of one)."""
    if isinstance(runs, dict) or hasattr(runs, "record"):
        runs = [runs]
    return [as_record(r, f"{where}[{i}]") for i, r in enumerate(runs)]
