"""docs/results/two-level-rate.md, section "Optimized Schwarz with a coarse level": the synchronous
optimized two-level iteration's counts with its two coarse forms (bench/optimized_coarse.py,
docs/data/two-level/optimized.json)."""
from ..md import md_table
from ..registry import table, value

OPTIMIZED = "two-level/optimized.json"
LEVEL_OFF = 1.1  # the target: counts from 36 to 64 subdomains within this factor


def _counts(data):
    """{method: {subdomains: row}}, the methods in the file's order, and the subdomain counts."""
    doc = data.json(OPTIMIZED)
    by, order = {}, []
    for r in doc["rows"]:
        if r["method"] not in by:
            order.append(r["method"])
        by.setdefault(r["method"], {})[r["subdomains"]] = r
    sizes = sorted({r["subdomains"] for r in doc["rows"]})
    return doc, by, order, sizes


def _cell(r):
    return str(int(r["iterations"])) if r["converged"] else f"diverged ({int(r['iterations'])})"


@table("coarse.optimized_forms")
def optimized_forms(data):
    doc, by, order, sizes = _counts(data)
    rows = []
    for m in order:
        first = by[m][sizes[0]]
        rows.append([first["label"]] + [_cell(by[m][s]) for s in sizes])
    return md_table(["method (iterations to 10⁻⁶)"] + [f"{s} subdomains" for s in sizes], rows)


def _best_fixed(by, sizes):
    """The fixed-point rows at a held beta that converge everywhere, with their growth over the
    last two sizes, smallest growth first."""
    out = []
    for m, per in by.items():
        if not m.startswith("fixed-point-") or m.endswith("auto"):
            continue
        if all(per[s]["converged"] for s in sizes):
            out.append((per[sizes[-1]]["iterations"] / per[sizes[-2]]["iterations"], m))
    return sorted(out)


@value("coarse.optimized_verdict")
def optimized_verdict(data):
    doc, by, order, sizes = _counts(data)
    best = _best_fixed(by, sizes)
    if not best:
        return "**not met**: no fixed-point run at a held Robin weight converges at every count"
    lo, hi = sizes[-2], sizes[-1]
    parts = []
    for growth, m in best:
        per = by[m]
        beats = all(per[s]["iterations"] < by["one-level-auto"][s]["iterations"] and
                    per[s]["iterations"] < by["classical"][s]["iterations"] for s in sizes)
        parts.append((growth <= LEVEL_OFF and beats, growth, beats, per[sizes[0]]["label"]))
    met = [p for p in parts if p[0]]
    g_auto = by["galerkin-auto"][hi]["iterations"] / by["galerkin-auto"][lo]["iterations"]
    text = "; ".join(f"{label}: {lo}→{hi} subdomains {growth:.2f}×, "
                     f"{'fewer iterations than' if beats else 'not below'} one-level optimized and classical "
                     f"two-level at every count" for _, growth, beats, label in parts)
    diverged = [by[m][sizes[0]]["label"] for m in order if any(not by[m][s]["converged"] for s in sizes)]
    tail = f"; diverged: {', '.join(diverged)}" if diverged else ""
    return ((f"**met** (sync)" if met else "**not met**") +
            f": {text} (Galerkin at alpha auto {g_auto:.2f}×){tail}")
