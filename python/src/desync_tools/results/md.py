"""Formatting shared by the page modules: Markdown tables and numbers written one way everywhere."""
import math
import statistics


def md_table(headers, rows, align=None):
    """A Markdown table; `align` a string of l/r/c per column (default: first left, others right)."""
    align = align or ("l" + "r" * (len(headers) - 1))
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(str(h) for h in headers) + " |",
             "|" + "|".join(marks[a] for a in align) + "|"]
    for row in rows:
        lines.append("| " + " | ".join("" if c is None else str(c) for c in row) + " |")
    return "\n".join(lines)


def fmt(x, digits=3):
    """A number with `digits` significant digits (from 10**digits on, rounded to units); '–' for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, int):
        return str(x)
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
        return f"{x:.{max(digits - 1, 0)}e}"
    return f"{x:.0f}" if abs(x) >= 10 ** digits else _fixed(x, digits)  # 1126, not 1.13e+03


def _fixed(x, digits):
    if x == 0:
        return "0"
    d = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)
    return f"{x:.{d}f}"


def fixed(x, decimals=2):
    """A number with a fixed count of decimals; '–' for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{decimals}f}"


def ratio(x):
    """A ratio as the pages write them: two decimals, with a ×."""
    return "–" if x is None else f"{x:.2f}×"


def median(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(values) if values else math.nan


def span(values, f=lambda x: f"{x:.2f}"):
    """"lo–hi" of some values as `f` writes them, one value when both read the same."""
    lo, hi = f(min(values)), f(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def describe_setup(d):
    """A bench/cg_compare.py record's configuration and load, as the CG pages write it."""
    c = d["config"]
    g = "×".join(str(x) for x in c["grid"])
    return (f"{g} points, {c['np']} ranks, rtol {c['rtol']:g}, median of {c['reps']} interleaved repetitions, "
            f"load average {d['loadavg_before'][0]:.2f} before and {d['loadavg_after'][0]:.2f} after"
            + disturbed_note(d.get("runs", [])))


def disturbed_note(runs):
    """"; 2 of 30 runs disturbed (...)" for runs that recorded the host's load beside them
    (runner.machine.HostLoad), nothing for runs recorded before they did."""
    measured = [r for r in runs if "disturbed" in r]
    if not measured:
        return ""
    n = sum(1 for r in measured if r["disturbed"])
    return f"; {n} of {len(measured)} runs disturbed (other processes kept more than half of every core busy)"


def reproduced(*checks):
    """The verdict word of a claim tested in several ways: "reproduced" when every check holds,
    "partly" when some do, "not reproduced" when none does."""
    return "reproduced" if all(checks) else "partly" if any(checks) else "not reproduced"


def apart(a, b):
    """Whether two sets of runs of one quantity have min–max ranges that do not overlap: the least a
    difference between their medians must show before a verdict calls it a difference."""
    return max(a) < min(b) or max(b) < min(a)


def count_of(checks):
    """"3 of 5": how many of a list of checks hold."""
    return f"{sum(map(bool, checks))} of {len(checks)}"
