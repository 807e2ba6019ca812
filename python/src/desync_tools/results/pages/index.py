"""docs/results/index.md: one line per claim of the five papers, each with the verdict its page computes
from the data (the same @value the page shows, so the index cannot disagree with it), from the claims
the page modules register (registry.claims); desync's own findings in a list apart."""
import re

from ...errors import UserError
from ..md import md_table
from ..registry import CLAIMS, VALUES, VERDICT_WORDS, figure, table, value, verdict_word
from . import aditya, bethune, horikoshi, yamazaki


def _lead(text):
    """A verdict written after its numbers ("... — **reproduced**") moved to the front."""
    m = re.search(r" — (\*\*[^*]+\*\*)$", text)
    return f"{m.group(1)}: {text[:m.start()]}" if m else text


def _verdict(data, c):
    """A claim's verdict as the index shows it: "**word**: reason and numbers"."""
    text = _lead(VALUES[c["verdict"]](data))
    word = verdict_word(text)
    if word is None:
        raise UserError(f"results: {c['verdict']}, the verdict of a claim on {c['page']}, does not start with a "
                        f"verdict word ({', '.join(VERDICT_WORDS)}): {text!r}")
    if c["detail"] is not None:
        text = f"**{word}**: {c['detail'](data)}"
    elif not text.startswith("**"):
        text = f"**{text}**"
    return text


def _claims():
    """The registered claims, the papers in order of publication (then name), each page's in its order."""
    return sorted(CLAIMS, key=lambda c: (re.search(r"\((\d{4})\)", c["paper"]).group(1), c["paper"]))


def _rows(data, own):
    rows, last = [], None
    for c in _claims():
        if c["own"] != own:
            continue
        rows.append([c["paper"] if c["paper"] != last else "", c["claim"], _verdict(data, c),
                     f"[{c['page'][:-3]}]({c['page']})"])
        last = c["paper"]
    return rows


@table("index.findings")
def findings_table(data):
    return md_table(["paper", "finding (the paper's place)", "desync: verdict, numbers and reason", "page"],
                    _rows(data, False), "llll")


@table("index.own")
def own_table(data):
    return md_table(["paper", "desync's own question", "desync: verdict, numbers and reason", "page"],
                    _rows(data, True), "llll")


def _tally(data):
    """How many of the papers' claims have each verdict."""
    tally = {}
    for c in CLAIMS:
        if not c["own"]:
            word = verdict_word(_verdict(data, c))
            tally[word] = tally.get(word, 0) + 1
    return tally


@table("index.counts")
def counts(data):
    tally = _tally(data)
    keys = [k for k in VERDICT_WORDS if k in tally]
    return md_table(["verdict", "findings"], [[k, tally[k]] for k in keys], "lr")


def _nums(text):
    """The numbers of a generated value, in order (rank counts after ' at ' left out)."""
    return [float(x) for x in re.findall(r"\d+\.\d+|\d+", text.split(" at ")[0])]


def _span(values):
    return min(values), max(values)


def _yamazaki_table3():
    """Yamazaki et al. (2019), Table 3: synchronous (MPI_Wait) over asynchronous time, (a) and (b)."""
    return [w / a for part in ("3a", "3b")
            for w, a in zip(yamazaki.paper_row(part, "time synch wait (s)"), yamazaki.paper_row(part, "time asynch (s)"))]


def _headlines(data):
    """(paper and what is compared, the paper's range, desync simulated steady, simulated with noise, real 2
    ranks): each a speed-up of the relaxed or overlapped variant over its synchronous twin (> 1: it pays),
    in time to solution but for the CG rows, whose papers compare time per iteration at a fixed count."""
    V = lambda n: VALUES[n](data)  # noqa: E731
    sync, asy = bethune._converge(data)
    paper_jacobi = [bethune.TABLE1[p]["sync"][3] / bethune.TABLE1[p]["async"][3] for p in bethune.TABLE1]
    steady = [s["time"] / a["time"] for s, a in yamazaki.table3_pairs(data)]
    jitter = [s["time"] / a["time"] for s, a in yamazaki.table3_pairs(data, "slight")]
    real_schwarz = [1 / x for x in _nums(V("yamazaki.transports_range"))]
    gains = _nums(V("horikoshi.gain3")) + _nums(V("horikoshi.gain4"))
    real_gains = [float(x) for x in re.findall(r"i ([\d.]+)", V("horikoshi.real_gains"))]
    return [
        ("Bethune et al. (2011)\nsync/async time to solution", _span(paper_jacobi),
         (sync["time"] / asy["time"],) * 2, None, [1 / bethune._tts_ratio(data, "async", False)]),
        ("Yamazaki et al. (2019)\nsync/async time to solution", _span(_yamazaki_table3()),
         _span(steady), _span(jitter), list(_span(real_schwarz))),
        ("Aditya et al. (2019)\nsync/weakly-sync time", (aditya.PAPER_SMALLEST, aditya.PAPER_LARGEST),
         _span(_nums(V("aditya.speedup_no_noise"))), None,
         [1 / float(V("aditya.real_ratio_p2p")), 1 / float(V("aditya.real_ratio_rma"))]),
        ("Hoefler et al. (2007)\nblocking/overlapped CG time", (1.0, 1.34),
         _span(_nums(V("hoefler.sim_gains"))), None, [float(V("hoefler.real_overlap"))]),
        ("Horikoshi et al. (2022)\nprogress control's gain",
         _span([g for gains_ in horikoshi.PAPER_TABLE3.values() for g in gains_]), _span(gains), None, real_gains),
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
        ax.plot(steady, [y] * 2, color="tab:blue", lw=7, solid_capstyle="butt", marker="s" if steady[0] == steady[1] else None,
                label="desync simulated, 16–1024 ranks" if i == 0 else None)
        if noisy:
            ax.plot(noisy, [y - 0.22] * 2, color="tab:orange", lw=7, solid_capstyle="butt",
                    label="desync simulated, jitter of the paper's noise size" if i == 1 else None)
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
    return f"of {sum(t.values())} findings, " + ", ".join(f"{t[w]} {w}" for w in VERDICT_WORDS if w in t)


def _readme(data, row):
    """One headline of README's "What desync found": simulated, with jitter of the paper's noise size
    (where the paper says how large its noise was), real, the paper."""
    _, paper, steady, noisy, real = _headlines(data)[row]
    parts = [f"{_r(steady)} simulated"] + ([f"{_r(noisy)} with jitter as large as the paper's noise"] if noisy else [])
    parts.append(f"{_r(_span(real))} real on 2 ranks")
    return ", ".join(parts) + f" (the paper: {_r(paper)})"


for _name, _row in (("jacobi", 0), ("schwarz", 1), ("pde", 2), ("cg", 4)):
    value(f"index.readme_{_name}")(lambda data, row=_row: _readme(data, row))


@value("index.readme_jacobi_rate")
def readme_jacobi_rate(data):
    return _r(_span([s / a for s, a in bethune._weak(data).values()]))
