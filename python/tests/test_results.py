"""The results pages (docs/results/, docs/benchmarks.md, README.md) against their data: a page whose
generated table or number differs from what the committed records render fails here."""
import json
import os
import re
import subprocess
import sys

import pytest

from desync_tools.errors import UserError
from desync_tools.results import registry
from desync_tools.results.cli import main as results_main, render_all
from desync_tools.results.data import Data
from desync_tools.results.render import load_manifest, names_used, page_paths, render_text

from conftest import REPO

DATA = os.path.join(REPO, "docs", "data")


def test_every_page_matches_what_its_data_renders():
    pages, _ = render_all(REPO, [DATA])
    assert pages, "no results pages found"
    stale = [rel for rel, (old, new) in pages.items() if old != new]
    assert not stale, f"pages differ from their data (desync-results check shows the diff): {stale}"


def test_check_command_fails_on_a_stale_table(tmp_path, capsys):
    # a copy of the tree's pages with one generated cell changed must fail `desync-results check`
    root = tmp_path / "tree"
    (root / "bench").mkdir(parents=True)
    os.symlink(os.path.join(REPO, "bench", "results"), root / "bench" / "results")
    (root / "docs" / "results").mkdir(parents=True)
    os.symlink(DATA, root / "docs" / "data")
    pages, _ = render_all(REPO, [DATA])
    target = None
    for rel, (old, _) in pages.items():
        text = old
        if rel.startswith("docs/results/"):
            m = re.search(r"<!-- value: [^>]+ -->([^<]+)<!-- end -->", text)
            if m and target is None:
                text = text[:m.start(1)] + "999.999" + text[m.end(1):]
                target = rel
            (root / rel).write_text(text, encoding="utf-8")
    assert target, "no page has an inline generated value to alter"
    assert results_main(["--root", str(root), "check"]) == 1
    assert "999.999" in capsys.readouterr().out


def test_every_marked_name_is_known_and_every_experiment_is_on_a_page():
    manifest = load_manifest(REPO)
    registry.load_pages()
    used_tables, used_values, used_experiments = set(), set(), set()
    for rel in page_paths(REPO):
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            t, v, e = names_used(f.read())
        used_tables |= t
        used_values |= v
        used_experiments |= e
    assert used_tables <= set(registry.TABLES)
    assert used_values <= set(registry.VALUES)
    assert not set(manifest) - used_experiments, "experiments no page shows"
    assert not set(registry.TABLES) - used_tables, "tables no page shows"
    for e in manifest.values():
        assert os.path.exists(os.path.join(DATA, e["output"])), f"{e['id']}: docs/data/{e['output']} missing"


def _rendered_pages():
    pages, data = render_all(REPO, [DATA])
    return {rel: new for rel, (_, new) in pages.items()}, data


def test_the_index_counts_every_verdict_of_every_page():
    pages, data = _rendered_pages()
    assert registry.uncounted_verdicts(pages) == []
    rows = {rel: len(registry.verdict_rows(text)) for rel, text in pages.items() if rel.startswith("docs/results/")}
    claims = [c for c in registry.CLAIMS if not c["own"]]
    own = [c for c in registry.CLAIMS if c["own"]]
    # every verdict row of the paper pages is one line of the index: the papers' claims, then desync's own
    assert sum(n for rel, n in rows.items() if not rel.endswith("index.md")) == len(claims) + len(own)
    index = pages["docs/results/index.md"]
    counts = dict(re.findall(r"^\| (reproduced|partly|not reproduced|not attempted|not distinguishable) \| (\d+) \|$",
                             index, re.M))
    assert sum(map(int, counts.values())) == len(claims)
    assert len(own) == 2 and all("2" in c["claim"] for c in own), "desync's own 2-rank questions, listed apart"
    assert f"of {len(claims)} findings" in pages["README.md"]
    lines = [line for line in registry.verdict_rows(index) if line.count(" | ") == 3]  # not the counts table
    words = [registry.verdict_word(line.split(" | ")[2]) for line in lines]
    assert None not in words and len(words) == len(claims) + len(own)


def test_result_pages_stay_short_and_history_stays_in_git():
    # a results page is the current figures, their commands and data, not a diary
    for rel in page_paths(REPO):
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            n = len(f.read().splitlines())
        if rel.startswith("docs/results/"):
            assert n <= 300, f"{rel}: {n} lines (at most 300)"
        elif rel == "docs/benchmarks.md":
            assert n <= 700, f"{rel}: {n} lines (at most 700)"
    assert not os.path.exists(os.path.join(REPO, "docs", "reproduction.md"))


def test_a_verdict_the_index_does_not_count_fails(tmp_path):
    pages, _ = _rendered_pages()
    page = "docs/results/bethune2011.md"
    text = pages[page]
    last = registry.verdict_rows(text)[-1]
    added = text.replace(last, last + "\n| 7. a claim added by hand | **partly**: numbers |")
    problems = registry.uncounted_verdicts({**pages, page: added})
    n = sum(c["page"] == "bethune2011.md" for c in registry.CLAIMS)
    assert len(problems) == 1 and problems[0].startswith(f"{page}: {n + 1} verdict rows, {n} claims"), problems
    # a plain verdict word in a table cell is a verdict too
    added = text.replace(last, last + "\n| 7. a claim added by hand | not reproduced |")
    assert registry.uncounted_verdicts({**pages, page: added})
    # ... but one inside a reason is not
    added = text.replace(last, last + "\n| a note | see the runs — **not reproduced** there |")
    assert registry.uncounted_verdicts({**pages, page: added}) == []
    # a claim whose verdict row shows another value
    moved = text.replace("<!-- value: bethune.verdict_zeros -->", "<!-- value: bethune.verdict_period -->", 1)
    problems = registry.uncounted_verdicts({**pages, page: moved})
    assert any("bethune.verdict_zeros" in p for p in problems), problems
    # and `desync-results check` fails on such a page
    root = tmp_path / "tree"
    (root / "bench").mkdir(parents=True)
    os.symlink(os.path.join(REPO, "bench", "results"), root / "bench" / "results")
    (root / "docs" / "results").mkdir(parents=True)
    os.symlink(DATA, root / "docs" / "data")
    for rel, t in pages.items():
        if rel.startswith("docs/results/"):
            (root / rel).write_text(t, encoding="utf-8")
    assert results_main(["--root", str(root), "check"]) == 0
    (root / page).write_text(text.replace(last, last + "\n| 7. a claim added by hand | **partly**: numbers |"),
                             encoding="utf-8")
    assert results_main(["--root", str(root), "check"]) == 1


def test_every_figure_is_committed_and_every_linked_figure_exists():
    registry.load_pages()
    folder = os.path.join(REPO, "docs", "figures", "results")
    for name in registry.FIGURES:
        assert os.path.exists(os.path.join(folder, name.replace(".", "-") + ".png")), name
    for rel in page_paths(REPO):
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            text = f.read()
        for link in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text):
            path = os.path.normpath(os.path.join(REPO, os.path.dirname(rel), link))
            assert os.path.exists(path), f"{rel}: figure {link} missing"


def test_unknown_names_and_unclosed_blocks_are_errors():
    manifest = load_manifest(REPO)
    data = Data([DATA])
    with pytest.raises(UserError, match="unknown table 'no.such'"):
        render_text("a\n<!-- table: no.such -->\nx\n<!-- end -->\n", data, "docs/results/x.md", manifest)
    with pytest.raises(UserError, match="without its <!-- end -->"):
        render_text("<!-- table: no.such -->\nx\n", data, "docs/results/x.md", manifest)
    with pytest.raises(UserError, match="unknown value 'no.such'"):
        render_text("x <!-- value: no.such -->1<!-- end -->\n", data, "docs/results/x.md", manifest)
    with pytest.raises(UserError, match="unknown experiment"):
        render_text("<!-- experiment: no-such -->\n<!-- end -->\n", data, "docs/results/x.md", manifest)


def test_a_table_renders_from_the_first_data_root_that_has_the_file(tmp_path):
    registry.TABLES.setdefault("test.echo", lambda d: str(d.json("t/x.json")["v"]))
    try:
        (tmp_path / "a" / "t").mkdir(parents=True)
        (tmp_path / "b" / "t").mkdir(parents=True)
        (tmp_path / "a" / "t" / "x.json").write_text('{"v": 1}')
        (tmp_path / "b" / "t" / "x.json").write_text('{"v": 2}')
        page = "<!-- table: test.echo -->\nold\n<!-- end -->"
        assert render_text(page, Data([tmp_path / "a", tmp_path / "b"]), "p.md", {}).split("\n")[1] == "1"
        assert render_text(page, Data([tmp_path / "b"]), "p.md", {}).split("\n")[1] == "2"
        with pytest.raises(UserError, match="no data file t/x.json"):
            render_text(page, Data([tmp_path]), "p.md", {})
    finally:
        registry.TABLES.pop("test.echo")


def test_run_dry_run_lists_every_quick_experiment():
    manifest = load_manifest(REPO)
    out = subprocess.run([sys.executable, "-m", "desync_tools.results", "run", "--set", "quick", "--dry-run",
                          "--desync", "/bin/true", "--out", "/tmp/desync-results-dry"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for e in manifest.values():
        assert (f"== {e['id']}:" in out.stdout) == (e["set"] == "quick")


def test_host_load_line_says_what_the_runs_recorded(tmp_path):
    """The line under each real-run experiment: per-run marks counted, whole-file load averages named,
    and older data said to have none, never shown as undisturbed."""
    import json

    runs = tmp_path / "runner" / "runs"
    for i, mark in enumerate([False, True, False]):
        (runs / f"r{i}").mkdir(parents=True)
        (runs / f"r{i}" / "status.json").write_text(json.dumps({"status": "ok", "disturbed": mark}))
        (runs / f"r{i}" / "record.json").write_text(json.dumps({"runs": [{"disturbed": True}]}))  # not a run list
    (tmp_path / "bench.json").write_text(json.dumps({"runs": [{"disturbed": False}, {"disturbed": False}]}))
    (tmp_path / "whole.json").write_text(json.dumps({"loadavg_before": [2.5, 1, 1], "loadavg_after": [0.4, 1, 1],
                                                     "runs": [{"wall": 1.0}]}))
    (tmp_path / "old.json").write_text(json.dumps({"runs": [{"wall": 1.0}]}))
    data = Data([str(tmp_path)])
    assert data.host_load("runner") == "host load: 1 of 3 runs disturbed"
    assert data.host_load("bench.json") == "host load: 0 of 2 runs disturbed"
    assert data.host_load("whole.json").startswith("host load average 2.50 before, 0.40 after")
    assert data.host_load("old.json").startswith("host load not recorded")


def test_local_residual_spread_sees_a_rise_and_the_final_spread():
    sys.path.insert(0, os.path.join(REPO, "bench"))
    try:
        from bench_util import local_residuals
    finally:
        sys.path.pop(0)

    def rank(*res):
        return {"residual_history": {"residual": list(res)}}
    rec = {"tolerance": 1e-6, "per_rank": [rank(1.0, 0.1, 0.4, 1e-7), rank(1.0, 0.5, 2e-7)]}
    got = local_residuals(rec)
    assert got["largest_rise"] == pytest.approx(4.0)  # 0.4 after a low of 0.1
    assert got["final_max"] == 2e-7 and got["final_min"] == 1e-7 and got["tolerance"] == 1e-6
    assert local_residuals({"per_rank": [rank(1.0, 0.5, 0.25)]})["largest_rise"] == 1.0
    assert local_residuals({"per_rank": [{"rank": 0}]}) is None


def test_host_load_of_a_whole_experiment_when_its_runs_kept_none(tmp_path):
    import json

    (tmp_path / "script.json").write_text(json.dumps({"runs": [{"wall": 1.0}],
                                                      "host_runs": [{"disturbed": True}, {"disturbed": False}]}))
    (tmp_path / "plain.json").write_text(json.dumps({"rows": []}))
    (tmp_path / "host-load").mkdir()
    (tmp_path / "host-load" / "exp.json").write_text(json.dumps({"disturbed": False, "foreign_cpu_seconds": 1.5,
                                                                  "seconds": 60.0}))
    data = Data([str(tmp_path)])
    assert data.host_load("script.json") == "host load: 1 of 2 runs disturbed"
    assert data.host_load("plain.json", "exp") == "host load: quiet, other processes took 1.5 CPU s in the experiment's 60 s"
    assert data.host_load("plain.json", "other").startswith("host load not recorded")


def test_a_disturbed_experiment_runs_once_more(monkeypatch, tmp_path):
    """desync-results run: a real-run experiment that other processes disturbed runs again, once; a quiet
    one and a simulated one (no load record) run once."""
    from desync_tools.results import cli

    marks = iter([True, False])

    class FakeLoad:
        def __init__(self):
            self.start = 0.0

        def finish(self):
            return {"loadavg_before": [0, 0, 0], "loadavg_after": [0, 0, 0], "foreign_cpu_seconds": 9.0,
                    "disturbed": next(marks)}
    monkeypatch.setattr(cli, "HostLoad", FakeLoad)
    log = tmp_path / "ran"
    command = f"echo x >> {log}"
    rc, load = cli.run_watched(command, str(tmp_path), dict(os.environ), 30, True)
    assert rc == 0 and load["attempts"] == 2 and load["disturbed"] is False
    assert log.read_text().count("x") == 2
    marks = iter([False])
    rc, load = cli.run_watched(command, str(tmp_path), dict(os.environ), 30, True)
    assert load["attempts"] == 1 and log.read_text().count("x") == 3
    rc, load = cli.run_watched(command, str(tmp_path), dict(os.environ), 30, False)
    assert load is None and log.read_text().count("x") == 4


def test_fan_in_pages_prefer_the_sweeps_own_default_run(tmp_path):
    # The fan-in verdicts compare against the default fan-in (8): the sweep's own run of it (made with
    # the same build as the others) where there is one, the study coarse-weak's only where not.
    from desync_tools.results.pages import coarse

    def run(label, fan, time, ranks=256):
        return {"label": label, "ranks": ranks, "time": time, "coarse": {
            "coarse_fan_in": fan, "coarse_tree_height": 3, "coarse_solves": 40,
            "coarse_fan_in_model": {"latency": 5e-7, "per_message": 4e-7, "poll_wait": 6e-6}}}
    sim = tmp_path / "simulated"
    sim.mkdir()
    weak = [run("schwarz async gdsw P=256", 8, 4.0e-3)]
    noise = [run("schwarz async gdsw P=256 fan-in auto", 16, 4.4e-3),
             run("schwarz async gdsw P=256 flat tree", 255, 9.0e-3),
             run("schwarz async gdsw P=256 fan-in 16", 16, 4.3e-3)]
    (sim / "coarse-weak.json").write_text(json.dumps({"rows": weak}))
    (sim / "coarse-noise.json").write_text(json.dumps({"rows": noise}))
    data = Data([str(tmp_path)])
    # no fan-in 8 run in the sweep: coarse-weak's (4.0 ms) is the default
    auto = coarse.fan_in_auto(data)
    assert "1.10× fan-in 8's" in auto and "at least as fast" not in auto and "of 3 fan-ins" in auto
    assert "against 4.00 ms with fan-in 8" in coarse.tree_effect(data)
    # the sweep's own fan-in 8 run (4.8 ms) replaces it, counted once
    noise.append(run("schwarz async gdsw P=256 fan-in 8", 8, 4.8e-3))
    (sim / "coarse-noise.json").write_text(json.dumps({"rows": noise}))
    data = Data([str(tmp_path)])
    auto = coarse.fan_in_auto(data)
    assert "0.92× fan-in 8's" in auto and "of 3 fan-ins" in auto
    assert auto.endswith("auto at least as fast as the default at every count")
    assert "against 4.80 ms with fan-in 8" in coarse.tree_effect(data)
    assert coarse.fan_in_sweep(data).count("8: 4.80 ms") == 1 and "4.00 ms" not in coarse.fan_in_sweep(data)


def test_optimized_verdict_judges_oversubscribed_and_simulated_async_rows_apart(tmp_path):
    # The asynchronous target (the fixed-point form's count from 36 to 64 subdomains within 1.1x and
    # below one level and classical two-level at every count) is judged on each file's own rows.
    from desync_tools.results.pages import optimized

    def rows(mode, counts):
        out = []
        for method, per in counts.items():
            for s, n in zip((16, 36, 64), per):
                out.append({"method": method, "label": method + (", async" if mode == "async" else ""),
                            "mode": mode, "subdomains": s, "iterations": n, "converged": True})
        return out
    sync = rows("sync", {"one-level-auto": [28, 41, 51], "classical": [43, 62, 74], "galerkin-auto": [21, 30, 39],
                         "fixed-point-0.9": [26, 27, 28]})
    over = rows("async", {"one-level-auto": [55, 112, 126], "classical": [36, 40, 46], "fixed-point-0.9": [28, 30, 34]})
    sim = rows("async", {"one-level-auto": [84, 113, 130], "classical": [46, 66, 70], "fixed-point-0.9": [26, 30, 32]})
    (tmp_path / "two-level").mkdir()
    (tmp_path / "two-level" / "optimized.json").write_text(json.dumps({"rows": sync + over}))
    data = Data([str(tmp_path)])
    text = optimized.optimized_verdict(data)
    assert "Async, oversubscribed ranks: **not met**: fixed-point-0.9, async: 36→64 subdomains 1.13×" in text
    assert "simulated" not in text
    (tmp_path / "two-level" / "optimized-sim.json").write_text(json.dumps({"rows": sim}))
    data = Data([str(tmp_path)])
    text = optimized.optimized_verdict(data)
    assert text.endswith("Async on the simulated cluster, a core per rank: **met**: fixed-point-0.9, async: "
                         "36→64 subdomains 1.07×, fewer iterations than one-level optimized and classical "
                         "two-level (async) at every count")
    table = optimized.optimized_async_sim(data)
    assert "| fixed-point-0.9, async | 26 | 30 | 32 |" in table


def test_large_study_verdict_takes_the_fastest_of_every_fixed_point_weight(tmp_path):
    # coarse-large: the target compares the fastest asynchronous two-level method with the fastest
    # synchronous method of any kind, the fixed-point form at beta 0.9 among them; a method without
    # an asynchronous run at a count is left out there, and its table cells are dashes.
    from desync_tools.results.pages import coarse

    def run(label, time, its=50):
        return {"label": label, "ranks": int(label.split("P=")[1].split()[0]), "time": time, "converged": True,
                "iterations": {"min": its, "mean": its, "max": its}}
    rows = []
    for noise, slow in (("no noise", 1.0), ("jitter", 2.0)):
        rows += [run(f"gdsw sync P=64 {noise}", 60e-3 * slow), run(f"gdsw async P=64 {noise}", 30e-3 * slow),
                 run(f"one level auto sync P=64 {noise}", 13e-3 * slow),
                 run(f"gdsw fixed-point auto sync P=64 {noise}", 7e-3 * slow),
                 run(f"gdsw fixed-point auto async P=64 {noise}", 10e-3 * slow),
                 run(f"gdsw fixed-point beta 0.9 sync P=64 {noise}", 6e-3 * slow),
                 run(f"gdsw fixed-point beta 0.9 async P=64 {noise}", 3e-3 if noise == "jitter" else 8e-3),
                 run(f"gdsw fixed-point beta 0.9 sync P=256 {noise}", 15e-3 * slow)]
    (tmp_path / "simulated").mkdir()
    (tmp_path / "simulated" / "coarse-large.json").write_text(json.dumps({"rows": rows}))
    (tmp_path / "simulated" / "coarse-large128.json").write_text(json.dumps({"rows": []}))
    data = Data([str(tmp_path)])
    text = coarse.large_verdict(data)
    assert ("at 64 ranks, jitter: the fastest async two-level method (GDSW fixed-point form, beta 0.9) 3.00 ms "
            "against the fastest sync method (GDSW fixed-point form, beta 0.9) 12.0 ms, sync / async 4.00") in text
    assert ("at 64 ranks, no noise: the fastest async two-level method (GDSW fixed-point form, beta 0.9) 8.00 ms "
            "against the fastest sync method (GDSW fixed-point form, beta 0.9) 6.00 ms, sync / async 0.75") in text
    assert "at 256 ranks, no noise: not measured" in text and text.endswith("not met at 64 and 256 ranks, not measured at 1024")
    table = coarse.large_sim(data)
    assert "| 256 | jitter | GDSW fixed-point form, beta 0.9 | 30.0 | 50 | – | – |" in table
    assert "| 64 | no noise | GDSW fixed-point form, beta 0.9 | 6.00 | 50 | 8.00 | 50 |" in table
    text = coarse.large_fixed_point_async(data)
    assert "64², beta 0.9, at 64 ranks, jitter: 3.00 ms against 12.0 ms (0.25×" in text
    assert "64², `--alpha auto`, at 64 ranks, no noise: 10.0 ms against 7.00 ms (1.43×" in text
