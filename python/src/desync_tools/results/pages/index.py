"""docs/results/index.md: one line per finding of the five papers, each with the verdict its page
computes from the data (the same @value the page shows, so the index cannot disagree with it)."""
from ..md import md_table
from ..registry import VALUES, table

# (paper, page, the paper's claim and where it is, the page's verdict value or a fixed verdict)
FINDINGS = [
    ("Bethune et al. (2011)", "bethune2011.md", "async iterates faster than sync, more so as processes grow (Figure 3, Tables 1–2)", "bethune.verdict_rate"),
    ("", "bethune2011.md", "async needs 19–24 % more iterations to the tolerance (Table 1)", "bethune.verdict_iterations"),
    ("", "bethune2011.md", "one core at half speed makes sync about 2× slower than async (section 6.1)", "bethune.verdict_slow"),
    ("", "bethune2011.md", "OpenMP async and racy faster than sync (Table 3)", "bethune.verdict_omp"),
    ("", "bethune2011.md", "racy faster than async over MPI (Table 1)", "bethune.verdict_racy"),
    ("", "bethune2011.md", "one message in flight beats 100 (section 6.3)", "bethune.verdict_inflight"),
    ("Yamazaki et al. (2019)", "yamazaki2019.md", None, None),
    ("Hoefler et al. (2007)", "hoefler2007.md", "overlapping the halo exchange with the inner matrix-vector product speeds CG up, up to 34 % (Figure 4)", "hoefler.verdict_sim"),
    ("", "hoefler2007.md", "the same on 2 ranks of one node", "hoefler.verdict_real"),
    ("", "hoefler2007.md", "testing for progress costs time where the exchange needs no help (section 3.5)", "hoefler.verdict_polls"),
    ("", "hoefler2007.md", "non-blocking point-to-point would perform almost equally to the neighbour all-to-all (section 3.6)", "hoefler.verdict_neighbor"),
    ("Aditya et al. (2019)", "aditya2019.md", None, None),
    ("Horikoshi et al. (2022)", "horikoshi2022.md", "CG saturates, Chronopoulos/Gear keeps scaling (section 6.1, Table 7)", "horikoshi.verdict_cgcg"),
    ("", "horikoshi2022.md", "pipelined CG pays only in strong scaling with few rows per process (section 2.2)", "horikoshi.verdict_pipelined"),
    ("", "horikoshi2022.md", "Alg. 3i and 4i scale better than CG (section 6.1, Table 7)", "horikoshi.verdict_i_scaling"),
    ("", "horikoshi2022.md", "progress control gains 1.03–1.19 (Alg. 3) and 1.06–1.38 (Alg. 4), growing with nodes (Table 3)", "horikoshi.verdict_gain"),
    ("", "horikoshi2022.md", "the same on 2 real ranks", "horikoshi.verdict_real"),
]


def findings():
    return [f for f in FINDINGS if f[2] is not None]


@table("index.findings")
def findings_table(data):
    rows = []
    for paper, page, claim, verdict in findings():
        rows.append([paper, claim, VALUES[verdict](data), f"[{page[:-3]}]({page})"])
    return md_table(["paper", "finding (the paper's place)", "desync: verdict, numbers and reason", "page"], rows, "llll")


@table("index.counts")
def counts(data):
    tally = {}
    for paper, page, claim, verdict in findings():
        text = VALUES[verdict](data)
        word = text.split("**")[1] if text.startswith("**") else text.split(":")[0]
        tally[word] = tally.get(word, 0) + 1
    order = ["reproduced", "partly", "not reproduced", "not attempted"]
    keys = [k for k in order if k in tally] + sorted(k for k in tally if k not in order)
    return md_table(["verdict", "findings"], [[k, tally[k]] for k in keys], "lr")
