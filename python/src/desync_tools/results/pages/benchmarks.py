"""docs/benchmarks.md: desync's kernels and communication measured on real machines (the sweep and the
PDE update against a STREAM triad, two-sided against one-sided MPI, the channel transports, the
exchanges' sends and receives, the idle policies), desync beside PETSc, and a rework against the tree
before it. Data: docs/data/benchmarks/ (the quick experiments) and the dated folders it names."""
import functools
import glob
import os
import statistics

from ..md import fixed, fmt, md_table, median
from ..registry import figure, table, value

SWEEP = "benchmarks/sweep"            # np1.json, np2.json: desync_bench_sweep (bench-sweep)
NODE16 = "node16-2026-11-26"          # sweep-pde300-np{1,2}.json: the same on a 16-core node
COMM = "benchmarks/comm.json"         # desync bench comm (bench-comm)
RATE = "benchmarks/transport-rate.json"  # bench/transport_rate.py (bench-transport-rate)
POSTED = "host-2026-11-27b/posted-receives.json"
POSTED_JITTER = "host-2026-11-27c/jitter-posted-receives.json"
LOOP = {"Open MPI": "host-2026-11-27c/bounded-loop-openmpi-3.json", "MPICH": "host-2026-11-27c/bounded-loop-mpich-2.json"}
IDLE = {"MPICH": "host-2026-12-01/idle-mpich.json", "Open MPI": "host-2026-12-01/idle-openmpi.json"}
SCHWARZ_PETSC = "benchmarks/schwarz-petsc.json"
BEFORE_AFTER = "before-after-2026-11-27"
STACK = "schwarz-stack-2026-11-29/before-after.json"  # bench/stack_before_after.py

SWEEP_TARGET = 0.85   # the Jacobi sweep: at least this share of the triad's bandwidth
PDE_TARGET = 0.80     # the burgers3d update: the same, at 120 B per point update
ONE_SIDED_TARGET = 0.9  # one-sided bandwidth for messages >= 64 KiB: at least this share of two-sided


def met(ok):
    return "met" if ok else "not met"


# ---------------------------------------------------------------- sweep and update kernels vs STREAM

def _sweep_doc(data, ranks, folder=SWEEP, name="np{}.json"):
    return data.json(f"{folder}/{name.format(ranks)}")


def _kernel(doc, name, memory_bound=True):
    for k in doc["kernels"]:
        if k["kernel"] == name and k["memory_bound"] == memory_bound:
            return k
    return None


def _kernel_where(doc, test):
    for k in doc["kernels"]:
        if k["memory_bound"] and test(k):
            return k
    return None


def _solver_sweep(doc):
    return _kernel(doc, "sweep")


def _other_prefetch(doc):
    return _kernel_where(doc, lambda k: k["kernel"].startswith("sweep [pf"))


def _burgers(doc, solvers_choice=True):
    """The burgers3d update with the store path the solvers choose, or the other one."""
    if solvers_choice:
        return _kernel(doc, "pde burgers3d")
    return _kernel_where(doc, lambda k: k["kernel"].startswith("burgers ["))


def _bytes_per_round(k):
    a = k["aggregate"]
    return a["gb_per_s"] * a["seconds"]


def same_round_ratios(doc, k):
    """Kernel bandwidth / triad bandwidth in every round (aggregate, slowest rank's time)."""
    t = _kernel(doc, "triad")
    if k is None or t is None:
        return []
    bk, bt = _bytes_per_round(k), _bytes_per_round(t)
    return [(bk / sk) / (bt / st) for sk, st in zip(k["aggregate"]["round_seconds"], t["aggregate"]["round_seconds"])]


def same_round_median(doc, k):
    return median(same_round_ratios(doc, k))


def _ratio(k):
    return None if k is None else k["aggregate"].get("ratio_to_triad")


def _pf(k):
    return "on" if k and k.get("prefetch") else "off"


def _stores(k):
    return "streaming" if k and k.get("streaming_stores") else "regular"


def _sweep_rows(docs):
    rows = []

    def add(label, f):
        rows.append([label] + [f(d) for d in docs])

    add("triad, GB/s (aggregate)", lambda d: fixed(_kernel(d, "triad")["aggregate"]["gb_per_s"], 1))
    add("sweep, Mupdates/s (aggregate)", lambda d: fixed(_solver_sweep(d)["aggregate"]["units_per_s"] / 1e6, 0))
    add("sweep, GB/s at 24 B per update", lambda d: fixed(_solver_sweep(d)["aggregate"]["gb_per_s"], 1))
    add("**sweep / triad** (same-round median)",
        lambda d: "**" + fixed(same_round_median(d, _solver_sweep(d)), 2) + "**")
    add("sweep / triad, best rounds", lambda d: fixed(_ratio(_solver_sweep(d)), 2))
    add("sweep + fused residual / triad",
        lambda d: fixed(same_round_median(d, _kernel(d, "sweep+residual")), 2))
    add("sweep / triad, prefetch as chosen / the other",
        lambda d: f"{_pf(_solver_sweep(d))}: {fixed(same_round_median(d, _solver_sweep(d)), 2)} / "
                  f"{_pf(_other_prefetch(d))}: {fixed(same_round_median(d, _other_prefetch(d)), 2)}")
    add("**burgers3d / triad** (stores as chosen)",
        lambda d: f"**{fixed(same_round_median(d, _burgers(d)), 2)}** ({_stores(_burgers(d))})")
    add("burgers3d / triad, the other stores",
        lambda d: f"{fixed(same_round_median(d, _burgers(d, False)), 2)} ({_stores(_burgers(d, False))})")
    add("burgers3d, Mpoints/s (stores as chosen)",
        lambda d: fixed(_burgers(d)["aggregate"]["units_per_s"] / 1e6, 0))
    return rows


def _cache_rows(docs):
    def per_rank(d, name):
        k = _kernel(d, name, memory_bound=False)
        return "–" if k is None else fixed(k["aggregate"]["units_per_s"] / d["ranks"] / 1e6, 0)
    return [["cache-resident 50³: sweep, Mupdates/s per rank"] + [per_rank(d, "sweep") for d in docs],
            ["cache-resident 50³: sweep + residual"] + [per_rank(d, "sweep+residual") for d in docs]]


@table("benchmarks.sweep")
def sweep_table(data):
    """This machine's runs (1 and 2 ranks) beside the 16-core node's (recorded)."""
    docs = [_sweep_doc(data, 1), _sweep_doc(data, 2)] + [_sweep_doc(data, n, NODE16, "sweep-pde300-np{}.json")
                                                          for n in (1, 2)]
    return md_table(["", "1 rank", "2 ranks", "16-core node: 1 rank", "node: 2 ranks"],
                    _sweep_rows(docs) + _cache_rows(docs), "lrrrr")


@value("benchmarks.sweep_machine")
def sweep_machine(data):
    d = _sweep_doc(data, 2)
    mib = lambda b: f"{b / 2**20:.0f} MiB"  # noqa: E731
    sizes = (f"sweep {d['local']}³ per rank (two fields), triad {d['triad_mib_per_array']:.0f} MiB per array, "
             f"burgers3d {_burgers(d)['working_set']}")
    return (f"{d['cpu']}, L3 {mib(d['l3_bytes'])}; {sizes}; best and median of {d['reps']} interleaved rounds.")


def _sweep_verdict(data, ranks, folder=SWEEP, name="np{}.json"):
    d = _sweep_doc(data, ranks, folder, name)
    r = same_round_median(d, _solver_sweep(d))
    return f"{met(r >= SWEEP_TARGET)} ({fixed(r, 2)})"


def _pde_verdict(data, ranks, folder=SWEEP, name="np{}.json"):
    d = _sweep_doc(data, ranks, folder, name)
    r = same_round_median(d, _burgers(d))
    return f"{met(r >= PDE_TARGET)} ({fixed(r, 2)})"


# benchmarks.sweep_verdict_np1, _np2, benchmarks.pde_verdict_np1, _np2: the verdicts at 1 and 2 ranks.
for _ranks in (1, 2):
    value(f"benchmarks.sweep_verdict_np{_ranks}")(functools.partial(_sweep_verdict, ranks=_ranks))
    value(f"benchmarks.pde_verdict_np{_ranks}")(functools.partial(_pde_verdict, ranks=_ranks))


@value("benchmarks.node16_sweep_verdict")
def node16_sweep_verdict(data):
    return ", ".join(_sweep_verdict(data, n, NODE16, "sweep-pde300-np{}.json") for n in (1, 2))


@value("benchmarks.node16_pde_verdict")
def node16_pde_verdict(data):
    return ", ".join(_pde_verdict(data, n, NODE16, "sweep-pde300-np{}.json") for n in (1, 2))


@value("benchmarks.node16_prefetch_off")
def node16_prefetch_off(data):
    out = []
    for n in (1, 2):
        d = _sweep_doc(data, n, NODE16, "sweep-pde300-np{}.json")
        out.append(fixed(same_round_median(d, _other_prefetch(d)), 2))
    return " and ".join(out)


@figure("benchmarks.sweep")
def sweep_figure(data):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.2))
    kernels = [("sweep", _solver_sweep), ("sweep\n+ residual", lambda d: _kernel(d, "sweep+residual")),
               ("sweep,\nother prefetch", _other_prefetch), ("burgers3d,\nsolvers' stores", _burgers),
               ("burgers3d,\nother stores", lambda d: _burgers(d, False))]
    width = 0.38
    for i, ranks in enumerate((1, 2)):
        d = _sweep_doc(data, ranks)
        meds, lo, hi = [], [], []
        for _, pick in kernels:
            r = same_round_ratios(d, pick(d))
            m = median(r)
            meds.append(m)
            lo.append(m - min(r) if r else 0)
            hi.append(max(r) - m if r else 0)
        xs = [j + (i - 0.5) * width for j in range(len(kernels))]
        ax.bar(xs, meds, width, yerr=[lo, hi], capsize=3, label=f"{ranks} rank{'s' if ranks > 1 else ''}")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(SWEEP_TARGET, color="tab:red", lw=0.8, ls="--", label=f"sweep target {SWEEP_TARGET}")
    ax.axhline(PDE_TARGET, color="tab:purple", lw=0.8, ls=":", label=f"update target {PDE_TARGET}")
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels([k for k, _ in kernels], fontsize=8)
    ax.set_ylabel("bandwidth / STREAM triad (same round)")
    ax.set_title("Kernels against a STREAM triad in the same rounds: median and range over rounds", fontsize=9)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- desync bench comm

COMM_METHODS = [("send", "send_recv"), ("send+ack", "send_recv_ack"), ("all+fl_l", "put_lock_all_flush_local"),
                ("all+flush", "put_lock_all_flush"), ("shr+fl_l", "put_lock_shared_flush_local"),
                ("shr+flush", "put_lock_shared_flush"), ("per-elem", "put_per_element"),
                ("epoch-sh", "put_epoch_shared"), ("epoch-ex", "put_epoch_exclusive")]
COMM_SIZES = [8, 1024, 8192, 65536, 524288, 2097152]


def _size(b):
    if b >= 2**20:
        return f"{b // 2**20} MiB"
    if b >= 2**10:
        return f"{b // 2**10} KiB"
    return f"{b} B"


def _comm_result(doc, method, nbytes, section="bandwidth"):
    for r in doc[section][method]["results"]:
        if r["bytes"] == nbytes:
            return r
    return None


@table("benchmarks.comm_bandwidth")
def comm_bandwidth(data):
    doc = data.json(COMM)
    sizes = [b for b in COMM_SIZES if b in doc["sizes"]["bytes"]]
    rows = []
    for b in sizes:
        row = [_size(b)]
        for _, m in COMM_METHODS:
            r = _comm_result(doc, m, b)
            row.append("–" if r is None else fmt(r["bandwidth_gbs"], 3))
        rows.append(row)
    return md_table(["message"] + [c for c, _ in COMM_METHODS], rows)


@table("benchmarks.comm_overlap")
def comm_overlap(data):
    doc = data.json(COMM)
    sizes = [b for b in (8192, 65536, 524288, 2097152) if b in doc["sizes"]["bytes"]]
    rows = []
    for name in ("isend_irecv", "put_flush_local", "put_flush", "put_flush_target_busy"):
        row = [f"`{name}`"]
        for b in sizes:
            r = _comm_result(doc, name, b, "overlap")
            row.append("–" if r is None else f"{r['overlap_percent']:.0f} %")
        rows.append(row)
    return md_table(["overlap with computation"] + [_size(b) for b in sizes], rows)


@value("benchmarks.comm_library")
def comm_library(data):
    return data.json(COMM)["mpi_library"]


@value("benchmarks.comm_ratio_flush_local")
def comm_ratio_flush_local(data):
    return fixed(data.json(COMM)["min_bandwidth_ratio_ge_64KiB"]["put_lock_all_flush_local/send_recv"], 2)


@value("benchmarks.comm_ratio_flush")
def comm_ratio_flush(data):
    return fixed(data.json(COMM)["min_bandwidth_ratio_ge_64KiB"]["put_lock_all_flush/send_recv_ack"], 2)


@value("benchmarks.comm_verdict")
def comm_verdict(data):
    r = data.json(COMM)["min_bandwidth_ratio_ge_64KiB"]
    values = [v for v in r.values() if v is not None]
    return met(bool(values) and min(values) >= ONE_SIDED_TARGET)


@value("benchmarks.comm_allreduce")
def comm_allreduce(data):
    c = data.json(COMM)["collectives"]
    return f"{c['allreduce']['max'] * 1e6:.2f} µs (`MPI_Iallreduce` + `MPI_Wait`: {c['iallreduce']['max'] * 1e6:.2f} µs)"


def _us(doc, method, nbytes):
    r = _comm_result(doc, method, nbytes)
    return r["time_per_message"] * 1e6


@value("benchmarks.comm_small_send")
def comm_small_send(data):
    doc = data.json(COMM)
    return ", ".join(f"{_us(doc, 'send_recv', b):.2f}" for b in (8, 512))


@value("benchmarks.comm_small_ack")
def comm_small_ack(data):
    doc = data.json(COMM)
    return ", ".join(f"{_us(doc, 'send_recv_ack', b):.2f}" for b in (8, 512))


@figure("benchmarks.comm")
def comm_figure(data):
    import matplotlib.pyplot as plt
    doc = data.json(COMM)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, m in COMM_METHODS:
        if m in ("put_lock_shared_flush_local", "put_lock_shared_flush", "put_epoch_exclusive"):
            continue  # drawn on top of their lock_all / shared-epoch twins
        rs = doc["bandwidth"][m]["results"]
        ax.plot([r["bytes"] for r in rs], [r["bandwidth_gbs"] for r in rs], marker="o", ms=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth, GB/s (median of samples)")
    ax.set_title(f"desync bench comm, 2 ranks on one node ({doc['mpi_library']})", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- channel transports

def _rate_rows(data):
    return data.json(RATE)["rows"]


@table("benchmarks.transport_rate")
def transport_rate(data):
    doc = data.json(RATE)
    rows = [[r["config"], f"{r['median_rate']:.0f}", f"{r['min_rate']:.0f}", f"{r['max_rate']:.0f}",
             fixed(r["ratio_to_p2p"], 3)] for r in doc["rows"]]
    return md_table(["transport", "iterations/s (median)", "min", "max", "/ p2p"], rows)


@value("benchmarks.transport_setup")
def transport_setup(data):
    d = data.json(RATE)
    return f"{d['np']} ranks, `--local {d['local']}`, {d['max_iters']} iterations, median of {d['reps']}"


@value("benchmarks.transport_verdict")
def transport_verdict(data):
    rows = {r["config"]: r for r in _rate_rows(data)}
    p2p = rows["p2p"]
    floor = p2p["min_rate"] / p2p["median_rate"]
    defaults = [rows[c] for c in ("rma flush", "shmem put") if c in rows]
    ok = all(r["ratio_to_p2p"] >= floor for r in defaults)
    shown = ", ".join(f"{r['config']} {r['ratio_to_p2p']:.2f}" for r in defaults)
    return f"{met(ok)} ({shown}; p2p's own slowest run {floor:.2f})"


@value("benchmarks.transport_range")
def transport_range(data):
    others = [r["ratio_to_p2p"] for r in _rate_rows(data) if r["config"] != "p2p"]
    return f"{min(others):.2f}–{max(others):.2f}"


TRANSPORT_BEFORE_AFTER = "host-2026-12-01/transport-{side}-r{r}.json"  # 3 rounds, old and new alternating


@value("benchmarks.transport_before_after")
def transport_before_after(data):
    """The one-sided channels' deferred stores (0b4d7bd) against the tree before them (3106e0c): each
    transport's median rate over the 3 rounds' 9 samples, new over old."""
    import statistics
    samples = {}
    for side in ("old", "new"):
        for r in (1, 2, 3):
            for row in data.json(TRANSPORT_BEFORE_AFTER.format(side=side, r=r))["rows"]:
                samples.setdefault(row["config"], {}).setdefault(side, []).extend(row["samples"])
    return "; ".join(f"{c} {statistics.median(v['new']) / statistics.median(v['old']):.2f}"
                     for c, v in samples.items())


@figure("benchmarks.transport")
def transport_figure(data):
    import matplotlib.pyplot as plt
    rows = _rate_rows(data)
    p2p = next(r for r in rows if r["config"] == "p2p")["median_rate"]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    xs = range(len(rows))
    med = [r["median_rate"] / p2p for r in rows]
    lo = [(r["median_rate"] - r["min_rate"]) / p2p for r in rows]
    hi = [(r["max_rate"] - r["median_rate"]) / p2p for r in rows]
    ax.bar(xs, med, yerr=[lo, hi], capsize=3, color="tab:blue")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["config"] for r in rows], fontsize=8, rotation=20)
    ax.set_ylabel("iteration rate / p2p's median")
    ax.set_title("Asynchronous Jacobi per transport: median and range of the repetitions", fontsize=9)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- posted receives, bounded loop

def _pm(r):
    return f"{r['paired_mean']:.4f} ± {r['paired_se']:.4f}"


@table("benchmarks.posted_receives")
def posted_receives(data):
    quiet = data.json(POSTED)["rows"]
    jitter = data.json(POSTED_JITTER)["rows"]

    def key(args):
        if "--mode sync" in args:
            return "sync (one receive)"
        if "--p2p-receives" in args:
            return args.split("--p2p-receives")[1].split()[0]
        return "10 = L (default)"
    q = {key(r["args"]): r for r in quiet}
    j = {key(r["args"]): r for r in jitter}
    order = ["sync (one receive)", "1", "2", "5", "10 = L (default)"]
    rows = []
    for k in order:
        if k not in q and k not in j:
            continue
        qr, jr = q.get(k), j.get(k)
        rows.append([k, "1" if qr and "sync" in k else (_pm(qr) if qr else "–"),
                     f"{qr['time_split_median']['send'] + qr['time_split_median']['consume']:.3f}" if qr else "–",
                     f"{qr['time_split_median']['approximate']:.3f}" if qr else "–",
                     "1" if jr and "sync" in k else (_pm(jr) if jr else "–")])
    return md_table(["receives posted per neighbour", "no noise: bounded / sync (paired mean ± SE)",
                     "send + consume (s)", "approximation (s)", "jitter: bounded / sync"], rows)


@value("benchmarks.posted_rounds")
def posted_rounds(data):
    return f"{len(data.json(POSTED)['rows'][0]['wall_times'])} and {len(data.json(POSTED_JITTER)['rows'][0]['wall_times'])}"


def _variant(r):
    if r["receives"] == 0:
        return "sync" + (f", {r['buffers']} buffers in turn" if r["buffers"] > 1 else "")
    s = f"not waiting, {r['receives']} posted"
    if r["buffers"] != r["receives"] and r["buffers"] > 1:
        s += f", {r['buffers']} buffers in turn"
    return s


@table("benchmarks.bounded_loop")
def bounded_loop(data):
    docs = {mpi: data.json(p) for mpi, p in LOOP.items()}
    names = []
    cells = {}
    for mpi, d in docs.items():
        for r in d["rows"]:
            v = _variant(r)
            if v not in names:
                names.append(v)
            if r["receives"] == 0 and r["buffers"] == 1:
                cells[(v, mpi)] = "1 (reference)"
            else:
                cells[(v, mpi)] = f"{_pm(r)} ({r['rounds_below_1']} of {d['rounds']})"
    rows = [[v] + [cells.get((v, mpi), "–") for mpi in docs] for v in names]
    return md_table(["variant (1000 steps)"] + [f"{mpi}, {docs[mpi]['rounds']} rounds" for mpi in docs], rows)


def _loop_row(data, mpi, receives, buffers):
    for r in data.json(LOOP[mpi])["rows"]:
        if (r["receives"], r["buffers"]) == (receives, buffers):
            return r
    raise KeyError(f"{LOOP[mpi]}: no variant {receives}/{buffers}")


@value("benchmarks.loop_one_posted")
def loop_one_posted(data):
    return " and ".join(f"{(1 - _loop_row(data, m, 1, 1)['paired_mean']) * 100:.1f} %" for m in LOOP)


@value("benchmarks.loop_ten_posted")
def loop_ten_posted(data):
    return " and ".join(f"{(_loop_row(data, m, 10, 10)['paired_mean'] - _loop_row(data, m, 1, 1)['paired_mean']) * 100:.1f} %"
                        for m in LOOP)


# ---------------------------------------------------------------- idle policies

def _idle_groups(data):
    out = {}
    for mpi, p in IDLE.items():
        for r in data.json(p)["rows"]:
            out.setdefault((r["case"], r["ranks"], r["transport"]), {}).setdefault(mpi, {})[r["policy"]] = r
    return out


def _idle_cell(r):
    if r is None:
        return "–"
    if r["timeouts"] == r["runs"]:
        return "did not end"
    s = f"{r['ratio_to_sync']:.2f}"
    return s + (f" ({r['timeouts']} did not end)" if r["timeouts"] else "")


@table("benchmarks.idle")
def idle_table(data):
    rows = []
    for (case, ranks, transport), by in _idle_groups(data).items():
        row = [case, ranks, transport]
        for mpi in IDLE:
            pol = by.get(mpi, {})
            sync = pol.get("sync")
            row.append("–" if sync is None else f"{sync['wall_median']:.3f}")
            row += [_idle_cell(pol.get(p)) for p in ("spin", "yield", "skip")]
        rows.append(row)
    head = ["case", "ranks", "transport"]
    for mpi in IDLE:
        head += [f"{mpi}: sync s", "spin", "yield", "skip"]
    return md_table(head, rows, "lrl" + "r" * 8)


@value("benchmarks.idle_skip_best")
def idle_skip_best(data):
    best, total = 0, 0
    for (case, _, _), by in _idle_groups(data).items():
        if not case.startswith("schwarz"):
            continue
        for pol in by.values():
            ratios = {p: pol[p]["ratio_to_sync"] for p in ("spin", "yield", "skip")
                      if p in pol and pol[p]["timeouts"] < pol[p]["runs"]}
            if "skip" not in ratios:
                continue
            total += 1
            best += ratios["skip"] <= min(ratios.values())
    return f"{best} of {total}"


def _idle_row(data, mpi, case, ranks, transport, policy):
    for r in data.json(IDLE[mpi])["rows"]:
        if (r["case"], r["ranks"], r["transport"], r["policy"]) == (case, ranks, transport, policy):
            return r
    raise KeyError((mpi, case, ranks, transport, policy))


@value("benchmarks.idle_its_skip")
def idle_its_skip(data):
    r = _idle_row(data, "MPICH", "schwarz", 3, "rma", "skip")
    return f"{r['it_min_median']:.0f} / {r['it_max_median']:.0f}"


@value("benchmarks.idle_its_yield")
def idle_its_yield(data):
    r = _idle_row(data, "MPICH", "schwarz", 3, "rma", "yield")
    return f"{r['it_min_median']:.0f} / {r['it_max_median']:.0f}"


@value("benchmarks.idle_spin_starves")
def idle_spin_starves(data):
    """MPICH, 3 ranks over rma: spin's ratio to sync against yield's, per case."""
    parts = []
    for case in sorted({r["case"] for r in data.json(IDLE["MPICH"])["rows"]}):
        try:
            spin, yld = (_idle_row(data, "MPICH", case, 3, "rma", p) for p in ("spin", "yield"))
        except KeyError:
            continue
        parts.append(f"{case} {_idle_cell(spin)} against {_idle_cell(yld)}")
    return "; ".join(parts)


@value("benchmarks.idle_jacobi_yield")
def idle_jacobi_yield(data):
    """Jacobi at 2 ranks (one per core): yield's ratio to sync over spin's, the range over the cases,
    transports and MPIs."""
    q = []
    for mpi in IDLE:
        for r in data.json(IDLE[mpi])["rows"]:
            if r["case"].startswith("jacobi") and r["ranks"] == 2 and r["policy"] == "yield":
                spin = _idle_row(data, mpi, r["case"], 2, r["transport"], "spin")
                q.append(r["ratio_to_sync"] / spin["ratio_to_sync"])
    return f"{min(q):.2f}–{max(q):.2f}"


@value("benchmarks.idle_hung")
def idle_hung(data):
    hung = []
    for mpi in IDLE:
        for r in data.json(IDLE[mpi])["rows"]:
            if r["timeouts"]:
                hung.append(f"{r['case']} at {r['ranks']} ranks over {r['transport']} under {r['policy']} ({mpi}, "
                            f"{r['timeouts']} of {r['runs']})")
    return "; ".join(hung) if hung else "none"


# ---------------------------------------------------------------- PETSc

def _schwarz_rows(data):
    return [r for r in data.json(SCHWARZ_PETSC)["summary"] if "solve_median" in r]


def _schwarz_label(r):
    return r["config"] + (f"/{r['local']}" if r["solver"] == "petsc" and r.get("local") else "")


@table("benchmarks.schwarz_petsc")
def schwarz_petsc(data):
    rows = []
    for r in _schwarz_rows(data):
        its = f"{r['iterations']:g}" + ("*" if len(r["iterations_all"]) > 1 else "")
        g = r["iterations_global_criterion"]
        rows.append([r["n"], r["solver"], f"`{_schwarz_label(r)}`", its, "–" if g is None else f"{g:g}",
                     fmt(r["solve_median"], 3), fmt(r["seconds_per_iteration"], 3), fmt(r["factor_median"], 3),
                     fmt(r["true_residual"], 4), fixed(r.get("ratio_to_rasrich"), 3)])
    return md_table(["N", "solver", "configuration", "its", "its@g", "solve s", "s/it", "factor s", "true resid",
                     "/ rasrich"], rows, "rllrrrrrrr")


@value("benchmarks.schwarz_petsc_setup")
def schwarz_petsc_setup(data):
    d = data.json(SCHWARZ_PETSC)
    c = d["config"]
    version = d["petsc_version"]
    version = ", ".join(version) if isinstance(version, list) else version
    runs = d["runs"]
    disturbed = sum(1 for r in runs if r.get("disturbed"))
    kept = "left out where a row had undisturbed runs" if c.get("exclude_disturbed") else "kept"
    return (f"{c['np']} ranks, overlap {c['overlap']}, tolerance {c['tol']:g}, median of {c['reps']} interleaved "
            f"repetitions, {version}; in {disturbed} of {len(runs)} runs other processes took more than "
            f"{d['disturbed_share']:.0%} of a core ({kept})")


def _schwarz_find(data, n, solver, config, local=None):
    for r in _schwarz_rows(data):
        if (r["n"], r["solver"], r["config"]) == (n, solver, config) and (local is None or r["local"] == local):
            return r
    return None


def _sizes(data):
    return sorted({r["n"] for r in _schwarz_rows(data)})


@value("benchmarks.schwarz_petsc_verdict")
def schwarz_petsc_verdict(data):
    parts, ok = [], True
    for n in _sizes(data):
        r = _schwarz_find(data, n, "desync", "sync-inf")
        parts.append(f"{r['iterations']:g} against {r['petsc_iterations']:g} at {n}²")
        ok = ok and r["iterations_ok"]
    return f"{met(ok)}: " + ", ".join(parts)


def _each_size(data, first, second, phrase, sep=", "):
    """phrase(n, a, b) for each problem size n where both rows are there (first, second: _schwarz_find's
    (solver, config[, local])), joined by sep."""
    parts = []
    for n in _sizes(data):
        a, b = _schwarz_find(data, n, *first), _schwarz_find(data, n, *second)
        if a and b:
            parts.append(phrase(n, a, b))
    return sep.join(parts)


@value("benchmarks.schwarz_petsc_localstop")
def schwarz_petsc_localstop(data):
    def phrase(n, d, p):
        same = "the same" if p["iterations"] == d["iterations"] else "not the same"
        return (f"{n}²: {p['iterations']:g} and {d['iterations']:g} iterations ({same}), true residuals "
                f"{p['true_residual']:.4g} and {d['true_residual']:.4g}")
    return _each_size(data, ("desync", "sync-inf"), ("petsc", "rasrich-localstop"), phrase, "; ")


@value("benchmarks.schwarz_petsc_per_iteration")
def schwarz_petsc_per_iteration(data):
    return _each_size(data, ("desync", "sync-inf"), ("petsc", "rasrich", "cholmod"),
                      lambda n, d, p: f"{d['seconds_per_iteration'] / p['seconds_per_iteration']:.2f} at {n}²")


@value("benchmarks.schwarz_petsc_optimized")
def schwarz_petsc_optimized(data):
    return _each_size(data, ("desync", "sync-auto"), ("petsc", "cgasm", "cholmod"),
                      lambda n, d, c: f"{d['iterations']:g} iterations against {c['iterations']:g}, "
                                      f"{d['solve_median'] / c['solve_median']:.2f}× the time at {n}²", "; ")


@value("benchmarks.schwarz_petsc_simplicial")
def schwarz_petsc_simplicial(data):
    return _each_size(data, ("petsc", "rasrich", "cholmod"), ("petsc", "rasrich", "cholmod-simplicial"),
                      lambda n, a, b: f"{a['seconds_per_iteration'] / b['seconds_per_iteration']:.1f}× at {n}²")


def _cg_docs(data):
    folder = data.path(BEFORE_AFTER)
    return [data.json(os.path.join(BEFORE_AFTER, os.path.basename(p)))
            for p in sorted(glob.glob(os.path.join(folder, "cg_new_r*.json")))]


@table("benchmarks.cg_petsc")
def cg_petsc(data):
    docs = _cg_docs(data)
    keys = []
    for r in docs[0]["summary"]:
        keys.append((r["solver"], r["method"], r["pc"], r["operator"]))

    def find(doc, k):
        return next((r for r in doc["summary"] if (r["solver"], r["method"], r["pc"], r["operator"]) == k), None)
    rows = []
    for k in keys:
        rs = [find(d, k) for d in docs]
        first = rs[0]
        target = ""
        if first.get("time_target") is not None:
            target = f"≤ {first['time_target']:g}: " + ", ".join(met(r["time_ok"]) for r in rs)
        rows.append([k[0], k[1], k[3], f"{first['iterations']:g}",
                     ", ".join(fixed(r["solve_median"], 2) for r in rs),
                     ", ".join(fixed(r["ratio_to_kspcg"], 3) for r in rs), target])
    return md_table(["solver", "method", "operator", "iterations", "solve s (median of 3), per round",
                     "/ KSPCG", "time target"], rows, "llllrrl")


@value("benchmarks.cg_petsc_verdict")
def cg_petsc_verdict(data):
    docs = _cg_docs(data)
    ok_time = all(r.get("time_ok", True) for d in docs for r in d["summary"])
    ok_its = all(r.get("iterations_ok", True) for d in docs for r in d["summary"])
    return f"time {met(ok_time)}, iterations {met(ok_its)}"


# ---------------------------------------------------------------- before and after

def _ba_load(data, name):
    rel = os.path.join(BEFORE_AFTER, name)
    return data.json(rel) if data.exists(rel) else None


def _ba_rounds(data, side):
    folder = data.path(BEFORE_AFTER)
    tags = {os.path.basename(p)[len("sweep_np1_"):-len(".json")] for p in glob.glob(f"{folder}/sweep_np1_{side}_r*.json")}
    return sorted(tags, key=lambda t: int(t.rsplit("_r", 1)[1]))


def _ba_sweep(data, tag, np):
    d = _ba_load(data, f"sweep_np{np}_{tag}.json")
    return d and d["sweep_over_triad"]


def _ba_tts(data, tag, noise):
    d = _ba_load(data, f"tts_{tag}.json")
    return d and next((r["ratio_to_sync"] for r in d["summary"] if r["mode"] == "async" and r["noise"] == noise), None)


def _ba_transport(data, tag, config):
    d = _ba_load(data, f"transport_{tag}.json")
    return d and next((r["median_rate"] if config == "p2p" else r["ratio_to_p2p"] for r in d["rows"]
                       if r["config"] == config), None)


def _ba_cg(data, tag, method, operator):
    d = _ba_load(data, f"cg_{tag}.json")
    return d and next((r["ratio_to_kspcg"] for r in d["summary"]
                       if r["solver"] == "desync" and r["method"] == method and r["operator"] == operator), None)


def _ba_schwarz(data, tag, mode, what):
    folder = data.path(BEFORE_AFTER)
    runs = [data.json(os.path.join(BEFORE_AFTER, os.path.basename(p)))
            for p in sorted(glob.glob(f"{folder}/schwarz_{mode}_{tag}_*.json"))]
    if not runs:
        return None
    if what == "iterations":
        return statistics.median(r["iterations"]["max"] for r in runs)
    return statistics.median(r["wall_time"] for r in runs)


BA_FIGURES = [
    ("sweep / STREAM triad, 1 rank (best rounds)", lambda d, t: _ba_sweep(d, t, 1), "{:.3f}"),
    ("sweep / STREAM triad, 2 ranks", lambda d, t: _ba_sweep(d, t, 2), "{:.3f}"),
    ("async / sync Jacobi time to solution, no noise (median of 3)", lambda d, t: _ba_tts(d, t, False), "{:.3f}"),
    ("async / sync Jacobi time to solution, rank 1 slowed 2×", lambda d, t: _ba_tts(d, t, True), "{:.3f}"),
    ("p2p async Jacobi iterations/s (median of 3)", lambda d, t: _ba_transport(d, t, "p2p"), "{:.0f}"),
    ("rma flush / p2p iteration rate", lambda d, t: _ba_transport(d, t, "rma flush"), "{:.3f}"),
    ("shmem put / p2p iteration rate", lambda d, t: _ba_transport(d, t, "shmem put"), "{:.3f}"),
    ("CG matrix-free, time / PETSc KSPCG (128³, median of 3)", lambda d, t: _ba_cg(d, t, "cg", "matrix-free"), "{:.3f}"),
    ("CG CSR, time / PETSc KSPCG", lambda d, t: _ba_cg(d, t, "cg", "csr"), "{:.3f}"),
    ("pipecg matrix-free, time / PETSc KSPCG", lambda d, t: _ba_cg(d, t, "pipecg", "matrix-free"), "{:.3f}"),
    ("pipecg CSR, time / PETSc KSPCG", lambda d, t: _ba_cg(d, t, "pipecg", "csr"), "{:.3f}"),
    ("Schwarz sync, iterations (128², rank 1 slowed 2×, median of 3)", lambda d, t: _ba_schwarz(d, t, "sync", "iterations"), "{:.0f}"),
    ("Schwarz async, iterations (max over ranks)", lambda d, t: _ba_schwarz(d, t, "async", "iterations"), "{:.0f}"),
    ("Schwarz sync, time (s)", lambda d, t: _ba_schwarz(d, t, "sync", "time"), "{:.3f}"),
    ("Schwarz async, time (s)", lambda d, t: _ba_schwarz(d, t, "async", "time"), "{:.3f}"),
]


def before_after(data):
    """The table of a bench/before_after.sh run (bench/before_after_table.py prints it; the run of
    2026-11-27 is in git's history of docs/benchmarks.md)."""
    old, new = _ba_rounds(data, "old"), _ba_rounds(data, "new")

    def cell(fn, form, tags):
        return ", ".join("–" if (v := fn(data, t)) is None else form.format(v) for t in tags)
    rows = [[name, cell(fn, form, old), cell(fn, form, new)] for name, fn, form in BA_FIGURES]
    return md_table([f"figure ({len(old)} rounds, old then new in each)", "before", "after"], rows, "lrr")


def stack_verdict(f):
    """The rule: a build is slower or faster only when its repetitions' range lies wholly above or
    below the other's; overlapping ranges are not distinguishable (the noise of the same session)."""
    (olo, ohi), (nlo, nhi) = f["old_range"], f["new_range"]
    if nlo > ohi:
        return "after slower"
    if nhi < olo:
        return "after faster"
    return "not distinguishable"


@table("benchmarks.stack_before_after")
def stack_before_after(data):
    doc = data.json(STACK)
    rows = []
    for f in doc["figures"]:
        rows.append([f["case"],
                     f"{fixed(f['old_median'] * 1e3, 3)} ({fixed(f['old_range'][0] * 1e3, 3)}–{fixed(f['old_range'][1] * 1e3, 3)})",
                     f"{fixed(f['new_median'] * 1e3, 3)} ({fixed(f['new_range'][0] * 1e3, 3)}–{fixed(f['new_range'][1] * 1e3, 3)})",
                     fixed(f["ratio"], 3), stack_verdict(f)])
    return md_table([f"case (2 ranks, {doc['reps']} repetitions each)", "before: ms per iteration, median (min–max)",
                     "after", "after / before", "verdict"], rows, "lrrrl")


@value("benchmarks.stack_worse")
def stack_worse(data):
    slower = [f["case"] for f in data.json(STACK)["figures"] if stack_verdict(f) == "after slower"]
    return "none" if not slower else ", ".join(slower)


# ---------------------------------------------------------------- matrices from files beside PETSc

MATRIX_NP2 = "benchmarks/matrix-compare-np2.json"     # bench/matrix_compare.py, 2 ranks, groups a, b, c, e
MATRIX_NP4 = "benchmarks/matrix-compare-np4.json"     # the same at 4 ranks (more ranks than cores: iterations)
MATRIX_ASYNC = "benchmarks/matrix-compare-async.json"  # group d: desync sync against async, 2 ranks
ITERATION_SLACK = 2   # desync's iterations within this many of PETSc's
TIME_TARGET = 1.0     # desync's time per iteration at most this many times PETSc's
# (group, desync configuration, PETSc configuration, column title)
MATRIX_PAIRS = [("a", "schwarz-sync", "rich-ras-localstop", "Richardson + RAS"),
                ("b", "gmres-ras", "gmres-ras", "GMRES + RAS"),
                ("c", "cg-asm", "cg-asm", "CG + ASM")]


def _matrix_row(doc, side, config, matrix):
    for r in doc["summary"]:
        if (r["side"], r["config"], r["matrix"]) == (side, config, matrix) and "solve_median" in r:
            return r
    return None


def _matrix_names(doc):
    """The matrices run, in the manifest's order."""
    run = list(dict.fromkeys(r["matrix"] for r in doc["summary"]))
    listed = [m["name"] for m in (doc.get("manifest") or {}).get("matrices", [])]
    return [m for m in listed if m in run] + [m for m in run if m not in listed]


def _petsc_partner(doc, pname, matrix):
    """PETSc's row for a pair, and whether it is the fallback: Richardson with the every-rank-local
    stopping rule where it converged, else with the global rule (a rank whose b_p is 0 never meets the
    local rule in PETSc's driver)."""
    p = _matrix_row(doc, "petsc", pname, matrix)
    if pname == "rich-ras-localstop" and (not p or p["converged"] < p["ok"]):
        return _matrix_row(doc, "petsc", "rich-ras", matrix), True
    return p, False


def _desync_iterations(d, fallback):
    """desync's iterations for a pair: against PETSc's global rule (the fallback), the first
    iteration at which desync's own residual history met that rule."""
    g = d.get("iterations_global_criterion")
    return g if fallback and g is not None else d["iterations"]


def _matrix_pair_cells(doc, matrix, with_time=True):
    cells = []
    for _, dname, pname, _ in MATRIX_PAIRS:
        d = _matrix_row(doc, "desync", dname, matrix)
        p, fallback = _petsc_partner(doc, pname, matrix)
        if not d or not p:
            cells += ["–"] * (2 if with_time else 1)
            continue
        cells.append(f"{_desync_iterations(d, fallback):g} / {p['iterations']:g}" + ("†" if fallback else ""))
        if with_time:
            cells.append(fixed(d["seconds_per_iteration"] / p["seconds_per_iteration"], 2))
    return cells


def _gamg_cell(doc, matrix):
    g = _matrix_row(doc, "petsc", "cg-gamg", matrix)
    return "–" if not g else f"{g['iterations']:g} ({fmt(g['solve_median'], 2)} s)"


@table("benchmarks.matrix_petsc")
def matrix_petsc(data):
    doc = data.json(MATRIX_NP2)
    rows = []
    for m in _matrix_names(doc):
        rows.append([f"`{m}`", *_matrix_pair_cells(doc, m), _gamg_cell(doc, m)])
    heads = ["matrix"]
    for _, _, _, title in MATRIX_PAIRS:
        heads += [f"{title}: its desync / PETSc", "s/it ratio"]
    return md_table(heads + ["PETSc CG + GAMG: its (solve)"], rows, "l" + "rr" * len(MATRIX_PAIRS) + "r")


@table("benchmarks.matrix_petsc_np4")
def matrix_petsc_np4(data):
    doc = data.json(MATRIX_NP4)
    rows = [[f"`{m}`", *_matrix_pair_cells(doc, m, with_time=False), _gamg_cell(doc, m).split(" (")[0]]
            for m in _matrix_names(doc)]
    return md_table(["matrix"] + [f"{t}: its desync / PETSc" for *_, t in MATRIX_PAIRS] + ["PETSc CG + GAMG its"],
                    rows, "l" + "r" * (len(MATRIX_PAIRS) + 1))


def _matrix_checks(doc):
    """(iterations within the slack everywhere, the cases outside, time ratios above the target)."""
    off, slow = [], []
    for m in _matrix_names(doc):
        for _, dname, pname, title in MATRIX_PAIRS:
            d, (p, fallback) = _matrix_row(doc, "desync", dname, m), _petsc_partner(doc, pname, m)
            if not d or not p:
                continue
            its = _desync_iterations(d, fallback)
            if abs(its - p["iterations"]) > ITERATION_SLACK:
                off.append(f"{title} on `{m}` ({its:g} against {p['iterations']:g})")
            if "seconds_per_iteration" in p and p["seconds_per_iteration"]:
                r = d["seconds_per_iteration"] / p["seconds_per_iteration"]
                if r > TIME_TARGET:
                    slow.append(f"{title} on `{m}` ({r:.2f})")
    return off, slow


@value("benchmarks.matrix_iterations_verdict")
def matrix_iterations_verdict(data):
    parts = []
    for label, path in (("2 ranks", MATRIX_NP2), ("4 ranks", MATRIX_NP4)):
        off, _ = _matrix_checks(data.json(path))
        parts.append(f"{label}: " + ("every pair within ±2" if not off else "outside ±2: " + "; ".join(off)))
    ok = all(not _matrix_checks(data.json(p))[0] for p in (MATRIX_NP2, MATRIX_NP4))
    return f"{met(ok)} ({'; '.join(parts)})"


@value("benchmarks.matrix_time_verdict")
def matrix_time_verdict(data):
    doc = data.json(MATRIX_NP2)
    _, slow = _matrix_checks(doc)
    ratios = []
    for m in _matrix_names(doc):
        for _, dname, pname, _ in MATRIX_PAIRS:
            d, (p, _) = _matrix_row(doc, "desync", dname, m), _petsc_partner(doc, pname, m)
            if d and p and p["seconds_per_iteration"]:
                ratios.append(d["seconds_per_iteration"] / p["seconds_per_iteration"])
    span = f"ratios {min(ratios):.2f} to {max(ratios):.2f}" if ratios else "no pairs"
    return f"{met(not slow)} at 2 ranks ({span}" + ("" if not slow else "; above 1.0: " + "; ".join(slow)) + ")"


@value("benchmarks.matrix_setup")
def matrix_setup(data):
    doc = data.json(MATRIX_NP2)
    c = doc["config"]
    version = doc.get("petsc_version")
    version = ", ".join(version) if isinstance(version, list) else (version or "PETSc")
    return (f"2 ranks (and 4, more ranks than cores, for the iteration counts), tolerance {c['tol']:g}, overlap "
            f"{c['overlap']}, GMRES restart {c['restart']}, median of {c['reps']} interleaved repetitions, {version}")


@value("benchmarks.matrix_setup_times")
def matrix_setup_times(data):
    doc = data.json(MATRIX_NP2)
    parts = []
    for m in _matrix_names(doc):
        d = [r for r in doc["runs"] if r.get("ok") and r["matrix"] == m and r["side"] == "desync"
             and r["config"] == "schwarz-sync" and r.get("setup_seconds") is not None]
        p = [r for r in doc["runs"] if r.get("ok") and r["matrix"] == m and r["side"] == "petsc"
             and r["config"] == "rich-ras" and r.get("setup_seconds") is not None]
        if d and p:
            parts.append(f"`{m}` {median([r['setup_seconds'] for r in d]):.2f} s against "
                         f"{median([r['setup_seconds'] for r in p]):.2f} s")
    return "; ".join(parts)


ASYNC_PAIRS = [("jacobi", "Jacobi"), ("schwarz", "Schwarz")]


def _async_cell(doc, matrix, name):
    r = _matrix_row(doc, "desync", name, matrix)
    if not r:
        return "–"
    if "diverged" in r["stop_reason"]:
        return "diverged (ρ ≥ 1)"
    if r["converged"] == r["ok"]:
        return f"{fmt(r['solve_median'], 2)} s"
    stops = ", ".join(s.replace("_", " ") for s in r["stop_reason"])
    return (f"{fmt(r['solve_median'], 2)} s, {r['converged']} of {r['ok']} converged ({stops}; true residual "
            f"{r['true_residual']:.1e})")


@table("benchmarks.matrix_async")
def matrix_async(data):
    doc = data.json(MATRIX_ASYNC)
    names = {r["config"] for r in doc["summary"]}
    rows = []
    for m in _matrix_names(doc):
        for prefix, label in ASYNC_PAIRS:
            configs = [c for c in (f"{prefix}-sync", f"{prefix}-async", f"{prefix}-sync-slow", f"{prefix}-async-slow")
                       if c in names]
            rows.append([f"`{m}`", label, *[_async_cell(doc, m, c) for c in configs]])
    return md_table(["matrix", "method", "sync", "async", "sync, rank 1 slowed 2×", "async, rank 1 slowed 2×"], rows,
                    "llrrrr")
