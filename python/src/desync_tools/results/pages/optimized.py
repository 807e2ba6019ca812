"""docs/results/two-level-rate.md, section "Optimized Schwarz with a coarse level": the optimized
two-level iteration's counts with its two coarse forms, synchronous and asynchronous
(bench/optimized_coarse.py, docs/data/two-level/optimized.json; the asynchronous rows also on the
simulated cluster, docs/data/two-level/optimized-sim.json)."""
from ..md import md_table
from ..registry import table, value

OPTIMIZED = "two-level/optimized.json"
OPTIMIZED_SIM = "two-level/optimized-sim.json"  # the asynchronous rows, a core per simulated rank
LEVEL_OFF = 1.1  # the target: counts from 36 to 64 subdomains within this factor


def _counts(data, mode="sync", path=OPTIMIZED):
    """{method: {subdomains: row}} of one mode (rows without a mode are sync), the methods in the
    file's order, and the subdomain counts."""
    doc = data.json(path)
    by, order = {}, []
    for r in doc["rows"]:
        if r.get("mode", "sync") != mode:
            continue
        if r["method"] not in by:
            order.append(r["method"])
        by.setdefault(r["method"], {})[r["subdomains"]] = r
    sizes = sorted({r["subdomains"] for r in doc["rows"]})
    return doc, by, order, sizes


def _cell(r):
    if r is None:
        return "–"
    return str(int(r["iterations"])) if r["converged"] else f"diverged ({int(r['iterations'])})"


@table("coarse.optimized_forms")
def optimized_forms(data):
    rows, sizes = [], []
    for mode in ("sync", "async"):
        _, by, order, sizes = _counts(data, mode)
        for m in order:
            first = next(iter(by[m].values()))
            rows.append([first["label"]] + [_cell(by[m].get(s)) for s in sizes])
    return md_table(["method (iterations to 10⁻⁶; async: the most of a rank)"] + [f"{s} subdomains" for s in sizes],
                    rows)


def _fixed_rows(by, sizes, held_only):
    """The fixed-point rows (held_only: at a held beta) that converge at every count, with their
    growth over the last two counts, smallest growth first."""
    out = []
    for m, per in by.items():
        if not m.startswith("fixed-point-") or (held_only and m.endswith("auto")):
            continue
        if all(s in per and per[s]["converged"] for s in sizes):
            out.append((per[sizes[-1]]["iterations"] / per[sizes[-2]]["iterations"], m))
    return sorted(out)


def _judge(by, sizes, fixed):
    """[(met, growth, beats, label)] of the fixed-point rows against one level and classical two-level
    of the same mode."""
    parts = []
    for growth, m in fixed:
        per = by[m]
        refs = [by.get("one-level-auto", {}), by.get("classical", {})]
        beats = all(s in ref and per[s]["iterations"] < ref[s]["iterations"] for ref in refs for s in sizes)
        parts.append((growth <= LEVEL_OFF and beats, growth, beats, per[sizes[0]]["label"]))
    return parts


def _text(parts, lo, hi):
    return "; ".join(f"{label}: {lo}→{hi} subdomains {growth:.2f}×, "
                     f"{'fewer iterations than' if beats else 'not below'} one-level optimized and classical "
                     f"two-level {'(async) ' if label.endswith('async') else ''}at every count"
                     for _, growth, beats, label in parts)


@table("coarse.optimized_async_sim")
def optimized_async_sim(data):
    _, by, order, sizes = _counts(data, "async", OPTIMIZED_SIM)
    rows = [[next(iter(by[m].values()))["label"]] + [_cell(by[m].get(s)) for s in sizes] for m in order]
    return md_table(["method (the most local solves of a rank to 10⁻⁶), simulated"] +
                    [f"{s} subdomains" for s in sizes], rows)


def _async_text(data, sizes, path):
    """'**met**: ...' or '**not met**: ...' of the asynchronous rows in `path`."""
    _, aby, aorder, _ = _counts(data, "async", path)
    lo, hi = sizes[-2], sizes[-1]
    aparts = _judge(aby, sizes, _fixed_rows(aby, sizes, held_only=False))
    amet = any(p[0] for p in aparts)
    adiverged = [next(iter(aby[m].values()))["label"] for m in aorder
                 if any(s in aby[m] and not aby[m][s]["converged"] for s in sizes)]
    atext = _text(aparts, lo, hi) if aparts else "no fixed-point run converges at every count"
    atail = f"; diverged or stopped: {', '.join(adiverged)}" if adiverged else ""
    return f"{'**met**' if amet else '**not met**'}: {atext}{atail}"


@value("coarse.optimized_verdict")
def optimized_verdict(data):
    doc, by, order, sizes = _counts(data)
    best = _fixed_rows(by, sizes, held_only=True)
    if not best:
        return "**not met**: no fixed-point run at a held Robin weight converges at every count"
    lo, hi = sizes[-2], sizes[-1]
    parts = _judge(by, sizes, best)
    met = any(p[0] for p in parts)
    g_auto = by["galerkin-auto"][hi]["iterations"] / by["galerkin-auto"][lo]["iterations"]
    diverged = [by[m][sizes[0]]["label"] for m in order if any(not by[m][s]["converged"] for s in sizes)]
    tail = f"; diverged: {', '.join(diverged)}" if diverged else ""
    sync = (f"**met** (sync)" if met else "**not met** (sync)") + f": {_text(parts, lo, hi)} (Galerkin at alpha auto {g_auto:.2f}×){tail}"
    _, aby, _, _ = _counts(data, "async")
    if not aby:
        return sync + "; async: not run"
    out = sync + f". Async, oversubscribed ranks: {_async_text(data, sizes, OPTIMIZED)}"
    if data.exists(OPTIMIZED_SIM):
        out += f". Async on the simulated cluster, a core per rank: {_async_text(data, sizes, OPTIMIZED_SIM)}"
    return out
