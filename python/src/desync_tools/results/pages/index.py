"""docs/results/index.md: one line per finding of the five papers, each with the verdict its page
computes from the data (the same @value the page shows, so the index cannot disagree with it)."""
import re

from ..md import md_table
from ..registry import VALUES, figure, table, value
from . import aditya


def _lead(text):
    """A verdict written after its numbers ("... — **reproduced**") moved to the front."""
    m = re.search(r" — (\*\*[^*]+\*\*)$", text)
    return f"{m.group(1)}: {text[:m.start()]}" if m else text


def _v(name):
    return lambda data: _lead(VALUES[name](data))


def _yamazaki_table3(data):
    return (f"**partly**: simulated (asynchronous over two-sided p2p) {VALUES['yamazaki.sim_table3_summary'](data)}; "
            f"real, 2 ranks, every transport: {VALUES['yamazaki.transports_verdict'](data).split(' — ')[0]}")


def _yamazaki_more_iterations(data):
    text = VALUES["yamazaki.sim_more_iterations"](data)
    counts = [tuple(map(int, m)) for m in re.findall(r"in (\d+) of (\d+)", text)]
    word = ("reproduced" if all(a == b for a, b in counts) else "partly" if any(a for a, _ in counts)
            else "not reproduced")
    return f"**{word}**: {text} (simulated, steady ranks)"


def _yamazaki_timer(data):
    return (f"**partly**: simulated without termination detection, {VALUES['yamazaki.timer_sim_verdict'](data)}; "
            f"real, 2 ranks: {VALUES['yamazaki.timer_real_verdict'](data)}")


def _aditya(index):
    def verdict(data):
        claim, _, desync, word = aditya.summary_rows(data)[index]
        return f"**{word}**: {desync}"
    return verdict

# (paper, page, the paper's claim and where it is, the page's verdict value or a fixed verdict)
FINDINGS = [
    ("Bethune et al. (2011)", "bethune2011.md", "async iterates faster than sync, more so as processes grow (Figure 3, Tables 1–2)", "bethune.verdict_rate"),
    ("", "bethune2011.md", "async needs 19–24 % more iterations to the tolerance (Table 1)", "bethune.verdict_iterations"),
    ("", "bethune2011.md", "one core at half speed makes sync about 2× slower than async (section 6.1)", "bethune.verdict_slow"),
    ("", "bethune2011.md", "OpenMP async and racy faster than sync (Table 3)", "bethune.verdict_omp"),
    ("", "bethune2011.md", "racy faster than async over MPI (Table 1)", "bethune.verdict_racy"),
    ("", "bethune2011.md", "one message in flight beats 100 (section 6.3)", "bethune.verdict_inflight"),
    ("", "bethune2011.md", "batched message arrival, SHMEM's drop-off at 32768 processes, NUMA-split iteration counts (sections 5.1, 6.2)", lambda data: "**not attempted**: effects of HECToR's network, SHMEM library and node layout, which neither this host nor the model has"),
    ("Yamazaki et al. (2019)", "yamazaki2019.md", "async time to solution \"similar or smaller\" than sync, 144–2304 processes (Table 3: 0.586 against 0.616 s at q = 12 up to 1.28 = 1.28 s at q = 42 (a); behind at q = 12, 1.89 against 1.75 s, waitall 1.82 s (b))", _yamazaki_table3),
    ("", "yamazaki2019.md", "async makes more iterations and ends with the smaller residual (Table 3)", _yamazaki_more_iterations),
    ("", "yamazaki2019.md", "without termination detection, async's residual after a fixed time is generally smaller (Table 4)", _yamazaki_timer),
    ("", "yamazaki2019.md", "a process 8× slower needs fewer local iterations than at equal speed (Figure 8)", _v("yamazaki.slow_fewer_updates")),
    ("", "yamazaki2019.md", "so async may reduce the time to solution with the slow process (Figure 8)", _v("yamazaki.slow_time_verdict")),
    ("", "yamazaki2019.md", "async prefers a smaller α (section 7.4)", _v("yamazaki.slow_alpha_verdict")),
    ("", "yamazaki2019.md", "communication benchmarks (Figures 4–7, Table 1), KNL runs (Figures 17–18)", lambda data: "**not attempted**: desync's own communication benchmarks are in benchmarks.md; no KNL node"),
    ("Hoefler et al. (2007)", "hoefler2007.md", "overlapping the halo exchange with the inner matrix-vector product speeds CG up, up to 34 % (Figure 4)", "hoefler.verdict_sim"),
    ("", "hoefler2007.md", "the same on 2 ranks of one node", "hoefler.verdict_real"),
    ("", "hoefler2007.md", "testing for progress costs time where the exchange needs no help (section 3.5)", "hoefler.verdict_polls"),
    ("", "hoefler2007.md", "non-blocking point-to-point would perform almost equally to the neighbour all-to-all (section 3.6)", "hoefler.verdict_neighbor"),
    ("", "hoefler2007.md", "nearly all communication overlapped over Gigabit Ethernet and InfiniBand alike (Figure 3)", lambda data: "**not attempted**: one network model (InfiniBand EDR) and one real node"),
    ("Aditya et al. (2019)", "aditya2019.md", "asynchrony-tolerant schemes keep second order under delays; standard ones drop to first (Figure 2)", _aditya(0)),
    ("", "aditya2019.md", "weakly-synchronous stepping 1.27–2.19× faster (12³ a process), 1.21–1.55× (24³), on the machine's own noise, none injected (Figures 8, 11, 12)", _aditya(1)),
    ("", "aditya2019.md", "moments converge with N; TS and WS differ by under 0.005 % (Figure 6)", _aditya(2)),
    ("", "aditya2019.md", "WS's error against TS is small, lower with notified puts (Figure 10)", _aditya(3)),
    ("", "aditya2019.md", "the error scales as (P/N) Δx² (⟨k²⟩ + ⟨k⟩) (Eq. 3)", _aditya(4)),
    ("", "aditya2019.md", "notified puts give delays of lower mean and variance (Figure 9)", _aditya(5)),
    ("", "aditya2019.md", "contours of u1 (Figure 5), the time split at every count (Figure 7), 12-thread processes", lambda data: "**not attempted**"),
    ("Horikoshi et al. (2022)", "horikoshi2022.md", "CG saturates, Chronopoulos/Gear keeps scaling (section 6.1, Table 7)", "horikoshi.verdict_cgcg"),
    ("", "horikoshi2022.md", "pipelined CG pays only in strong scaling with few rows per process (section 2.2)", "horikoshi.verdict_pipelined"),
    ("", "horikoshi2022.md", "Alg. 3i and 4i scale better than CG (section 6.1, Table 7)", "horikoshi.verdict_i_scaling"),
    ("", "horikoshi2022.md", "progress control gains 1.03–1.19 (Alg. 3) and 1.06–1.38 (Alg. 4), growing with nodes (Table 3)", "horikoshi.verdict_gain"),
    ("", "horikoshi2022.md", "the same on 2 real ranks", "horikoshi.verdict_real"),
    ("", "horikoshi2022.md", "re-measured in 2021, progress control loses at large counts (Table 4); thread placement and McKernel (Tables 2, 5, 6)", lambda data: "**not attempted**: progress threads competing for cores, changed system software and the operating system are outside desync and its model"),
]


def _verdict(data, v):
    return v(data) if callable(v) else VALUES[v](data)


@table("index.findings")
def findings_table(data):
    rows = []
    for paper, page, claim, verdict in FINDINGS:
        rows.append([paper, claim, _verdict(data, verdict), f"[{page[:-3]}]({page})"])
    return md_table(["paper", "finding (the paper's place)", "desync: verdict, numbers and reason", "page"], rows, "llll")


def _tally(data):
    """How many findings have each verdict (the first bold word of their line)."""
    tally = {}
    for _, _, _, verdict in FINDINGS:
        text = _verdict(data, verdict)
        word = text.split("**")[1] if text.startswith("**") else text.split(":")[0]
        tally[word] = tally.get(word, 0) + 1
    return tally


@table("index.counts")
def counts(data):
    tally = _tally(data)
    order = ["reproduced", "partly", "not reproduced", "not attempted"]
    keys = [k for k in order if k in tally] + sorted(k for k in tally if k not in order)
    return md_table(["verdict", "findings"], [[k, tally[k]] for k in keys], "lr")


def _nums(text):
    """The numbers of a generated value, in order (rank counts after ' at ' left out)."""
    return [float(x) for x in re.findall(r"\d+\.\d+|\d+", text.split(" at ")[0])]


def _span(values):
    return min(values), max(values)


# Yamazaki et al. (2019), Table 3: synchronous (MPI_Wait) over asynchronous time, (a) q = 12 ... 42 and
# (b) q = 12 ... 48, from the paper's seconds (quoted on yamazaki2019.md)
YAMAZAKI_TABLE3 = [0.616 / 0.586, 0.738 / 0.611, 0.800 / 0.741, 0.982 / 0.883, 1.13 / 1.06, 1.28 / 1.28,
                   1.75 / 1.89, 0.994 / 0.992, 1.150 / 0.669, 0.631 / 0.543, 0.512 / 0.505, 0.463 / 0.413]


def _headlines(data):
    """(paper, what is compared, the paper's range, desync simulated steady, simulated with noise, real 2 ranks):
    each a speed-up of the relaxed or overlapped variant over its synchronous twin (> 1: it pays)."""
    V = lambda n: VALUES[n](data)  # noqa: E731
    rate = re.search(r"rate is ([\d.]+)–([\d.]+)× sync's.*and ([\d.]+)× at 2 real", V("bethune.verdict_rate"))
    t3 = V("yamazaki.sim_table3_summary")
    at = lambda part: [1 / float(x) for x in re.findall(r"([\d.]+) at \d+", part)]  # noqa: E731
    steady, jitter = at(t3.split("jitter")[0]), at(t3.split("jitter")[1])
    real_schwarz = [1 / x for x in _nums(V("yamazaki.transports_range"))]
    gains = _nums(V("horikoshi.gain3")) + _nums(V("horikoshi.gain4"))
    real_gains = [float(x) for x in re.findall(r"i ([\d.]+)", V("horikoshi.real_gains"))]
    return [
        ("Bethune et al. (2011)\nasync/sync iteration rate", (1.04, 1.09),
         (float(rate.group(1)), float(rate.group(2))), None, [float(rate.group(3))]),
        ("Yamazaki et al. (2019)\nsync/async time to solution", _span(YAMAZAKI_TABLE3),
         _span(steady), _span(jitter), list(_span(real_schwarz))),
        ("Aditya et al. (2019)\nsync/weakly-sync time", (1.21, 2.19),
         _span(_nums(V("aditya.speedup_no_noise"))), _span(_nums(V("aditya.speedup_jitter"))),
         [1 / float(V("aditya.real_ratio_p2p")), 1 / float(V("aditya.real_ratio_rma"))]),
        ("Hoefler et al. (2007)\nblocking/overlapped CG time", (1.0, 1.34),
         _span(_nums(V("hoefler.sim_gains"))), None, [float(V("hoefler.real_overlap"))]),
        ("Horikoshi et al. (2022)\nprogress control's gain", (1.03, 1.38), _span(gains), None, real_gains),
    ]


@figure("index.summary")
def summary_figure(data):
    import matplotlib.pyplot as plt
    rows = _headlines(data)
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for i, (label, paper, steady, noisy, real) in enumerate(rows):
        y = len(rows) - 1 - i
        ax.plot(paper, [y + 0.22] * 2, color="0.55", lw=7, solid_capstyle="butt",
                label="the paper" if i == 0 else None)
        ax.plot(steady, [y] * 2, color="tab:blue", lw=7, solid_capstyle="butt",
                label="desync simulated, 16–1024 ranks" if i == 0 else None)
        if noisy:
            ax.plot(noisy, [y - 0.22] * 2, color="tab:orange", lw=7, solid_capstyle="butt",
                    label="desync simulated, with injected jitter" if i == 1 else None)
        ax.plot(real, [y - 0.3] * len(real), "kD", ms=5, label="desync real, 2 ranks" if i == 0 else None)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in reversed(rows)], fontsize=8)
    ax.set_xscale("log")
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter
    ax.xaxis.set_major_locator(FixedLocator([0.5, 0.7, 1, 1.5, 2, 3, 5, 7]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("speed-up of the relaxed (or overlapped) variant over the synchronous one (> 1: it pays)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def _r(span):
    lo, hi = span
    return f"{lo:.2f}×" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}×"


@value("index.tally")
def tally(data):
    t = _tally(data)
    return (f"of {sum(t.values())} findings, {t.get('reproduced', 0)} reproduced, {t.get('partly', 0)} in part, "
            f"{t.get('not reproduced', 0)} not, {t.get('not attempted', 0)} not attempted")


@value("index.readme_jacobi")
def readme_jacobi(data):
    return _r(_headlines(data)[0][2])


@value("index.readme_schwarz")
def readme_schwarz(data):
    h = _headlines(data)[1]
    return f"{_r(h[2])} without noise, {_r(h[3])} with injected jitter"


@value("index.readme_pde")
def readme_pde(data):
    h = _headlines(data)[2]
    return f"{_r(h[2])} without noise, {_r(h[3])} with injected jitter"


@value("index.readme_cg")
def readme_cg(data):
    return _r(_headlines(data)[4][2])
