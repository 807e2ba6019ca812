"""docs/results/simulated-cluster.md: the cost model of record, the validation of the simulation
against real runs (this host at 2 ranks, a 16-core node at 2 and 4), and the host time of the studies."""
from ..md import fmt, md_table
from ..registry import table, value

VALIDATIONS = {
    "host2": "simulated-cluster/host-validate-2.json",
    "host4": "simulated-cluster/host-validate-4-oversubscribed.json",
    "node1": "simulated-cluster/node16-validate-1.json",
    "node2": "simulated-cluster/node16-validate-2.json",
}


def _pct(x):
    return f"{100 * x:+.1f} %"


def _ratio(r):
    if r.get("ratio_real") is None:
        return "", ""
    rounds = r.get("ratio_real_rounds") or []
    spread = f" ({min(rounds):.3f}–{max(rounds):.3f})" if rounds else ""
    return f"{r['ratio_real']:.3f}{spread}", f"{r['ratio_sim']:.3f}"


def _validation(data, key):
    d = data.json(VALIDATIONS[key])
    out = []
    for r in d["rows"]:
        real, sim = _ratio(r)
        out.append([r["case"], r["variant"], r["ranks"], f"{r['iterations_real']:g}", f"{r['iterations_sim']:g}",
                    fmt(r["time_real"], 3), fmt(r["time_sim"], 3), _pct(r["time_dev"]), real, sim,
                    "yes" if r["ok"] else "**no**"])
    return md_table(["case", "variant", "ranks", "it real", "it sim", "time real (s)", "time sim (s)", "time dev",
                     "ratio real (rounds)", "ratio sim", "ok"], out, "lllrrrrrrrl")


def _met(data, key):
    rows = data.json(VALIDATIONS[key])["rows"]
    return f"{sum(1 for r in rows if r['ok'])} of {len(rows)}"


for _key in VALIDATIONS:
    table(f"simulated.validation_{_key}")(lambda data, k=_key: _validation(data, k))
    value(f"simulated.met_{_key}")(lambda data, k=_key: _met(data, k))


def _failing(data, key):
    rows = [r for r in data.json(VALIDATIONS[key])["rows"] if not r["ok"]]
    return "; ".join(f"{r['case']} {r['variant']} at {r['ranks']} ranks" for r in rows) or "none"


value("simulated.failing_node1")(lambda data: _failing(data, "node1"))
value("simulated.failing_node2")(lambda data: _failing(data, "node2"))


def _node_rows(data, case, variant, ranks):
    """The row of one case in each validation on the 16-core node."""
    return [r for k in ("node1", "node2") for r in data.json(VALIDATIONS[k])["rows"]
            if (r["case"], r["variant"], r["ranks"]) == (case, variant, ranks)]


def _range(values, f):
    lo, hi = min(values), max(values)
    return f(lo) if f(lo) == f(hi) else f"{f(lo)} to {f(hi)}"


for _case, _variant, _ranks in (("jacobi", "sync", 2), ("jacobi", "sync", 4)):
    value(f"simulated.node_{_case}_{_variant}_{_ranks}_dev")(
        lambda data, c=_case, v=_variant, n=_ranks: _range([r["time_dev"] for r in _node_rows(data, c, v, n)],
                                                           lambda x: f"{100 * x:+.0f} %"))
for _which in ("real", "sim"):
    value(f"simulated.node_pde_bounded_4_{_which}")(
        lambda data, w=_which: _range([r[f"ratio_{w}"] for r in _node_rows(data, "pde", "bounded", 4)],
                                      lambda x: f"{x:.3f}"))


@value("simulated.host2_pde_bounded")
def host2_pde_bounded(data):
    r = next(r for r in data.json(VALIDATIONS["host2"])["rows"] if (r["case"], r["variant"]) == ("pde", "bounded"))
    real, sim = _ratio(r)
    return f"{real} real and {sim} simulated"


@value("simulated.host4_iterations_agree")
def _host4_iterations(data):
    rows = data.json(VALIDATIONS["host4"])["rows"]
    return f"{sum(1 for r in rows if abs(r['iterations_dev']) <= 0.10)} of {len(rows)}"


@value("simulated.host4_time_dev")
def _host4_dev(data):
    devs = [abs(r["time_dev"]) for r in data.json(VALIDATIONS["host4"])["rows"]]
    return f"{100 * min(devs):.0f}–{100 * max(devs):.0f} %"


@table("simulated.costs")
def costs(data):
    c = data.json("simulated/costs.json")
    kinds = sorted((k, v) for k, v in c["costs"].items() if v)
    half = (len(kinds) + 1) // 2
    rows = []
    for i in range(half):
        a = kinds[i]
        b = kinds[i + half] if i + half < len(kinds) else ("", None)
        rows.append([f"`{a[0]}`", fmt(a[1], 3), f"`{b[0]}`" if b[0] else "", fmt(b[1], 3) if b[1] is not None else ""])
    return md_table(["kind", "s per unit", "kind", "s per unit"], rows, "lrlr")


@value("simulated.link")
def link(data):
    h = data.json("simulated/host.json")
    return f"{h['latency_s'] * 1e6:.3f} µs and {h['bandwidth_Bps'] / 1e9:.2f} GB/s"


@value("simulated.core_spread")
def core_spread(data):
    return f"{data.json('simulated/costs.json')['calibration']['core_speed_spread']:.3f}"


def _reproduce_files(data):
    """The record (bench/simgrid/reproduce.py --json) of every simulated study the manifest lists."""
    out = []
    listed = {e["output"] for e in data.manifest.values() if e["set"] == "sim"}
    for rel in sorted(listed | set(data.glob("simulated/*.json"))):
        try:
            d = data.json(rel)
        except Exception:  # noqa: BLE001 - not a JSON record: not a study
            continue
        if isinstance(d, dict) and d.get("benchmark") == "simgrid reproduce":
            out.append((rel, d))
    return out


@table("simulated.budget")
def budget(data):
    rows, total, runs = [], 0.0, 0
    for rel, d in _reproduce_files(data):
        walls = [r["host_wall"] for r in d["rows"]]
        total += sum(walls)
        runs += len(walls)
        dear = max(d["rows"], key=lambda r: r["host_wall"])
        rows.append([f"`{rel}`", len(walls), sorted({r["ranks"] for r in d["rows"]})[-1], f"{sum(walls):.0f}",
                     f"{dear['label']} ({dear['host_wall']:.0f} s)"])
    rows.append(["**all**", runs, "", f"**{total:.0f}**", ""])
    return md_table(["study (docs/data/)", "runs", "most ranks", "host s (sum)", "dearest run"], rows, "lrrrl")


@value("simulated.jacobi1024_host")
def jacobi1024_host(data):
    """Host time of 50 asynchronous and synchronous Jacobi iterations at 1024 simulated ranks."""
    rows = {r["label"]: r for r in data.json("simulated/jacobi-weak.json")["rows"]}
    return (f"{rows['jacobi async P=1024']['host_wall']:.0f} s against "
            f"{rows['jacobi sync P=1024']['host_wall']:.0f} s")
