"""Reading the simulated studies (bench/simgrid/reproduce.py's JSON, one file per study under
docs/data/simulated/) for the pages' tables."""
import math

from ..md import fmt, md_table


def rows(data, study):
    """The study's rows that finished (a row with an error is kept out and named by `errors`)."""
    return [r for r in data.json(f"simulated/{study}.json")["rows"] if "error" not in r]


def errors(data, study):
    return [r for r in data.json(f"simulated/{study}.json")["rows"] if "error" in r]


def row(data, study, label):
    """The row with this label; KeyError naming the study when there is none."""
    for r in data.json(f"simulated/{study}.json")["rows"]:
        if r["label"] == label:
            return r
    raise KeyError(f"simulated/{study}.json: no run labelled '{label}'")


def per_iteration(r):
    """Simulated seconds per iteration (the mean count over ranks)."""
    m = r["iterations"]["mean"]
    return r["time"] / m if m else math.nan


def ms(seconds):
    return fmt(1e3 * seconds, 3)


def runs_table(data, study):
    """Every run of a study: simulated time, per iteration, iterations, true residual, delays, host time."""
    out = []
    for r in data.json(f"simulated/{study}.json")["rows"]:
        if "error" in r:
            out.append([r["label"], r["ranks"], "error: " + r["error"], "", "", "", "", f"{r['host_wall']:.0f}"])
            continue
        it, d = r["iterations"], r.get("delay")
        out.append([r["label"], r["ranks"], f"{1e3 * r['time']:.3f}", f"{1e3 * per_iteration(r):.4f}",
                    f"{it['min']:.0f} / {it['mean']:.1f} / {it['max']:.0f}", f"{r['true_residual']:.3g}",
                    f"{d['mean']:.2f} / {d['max']:g}" if d else "", f"{r['host_wall']:.0f}"])
    return md_table(["run", "ranks", "simulated ms", "ms per iteration", "iterations min / mean / max",
                     "true residual", "delay mean / max", "host s"], out)
