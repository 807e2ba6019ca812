"""desync-results: desync's results pages from their data. `check` compares every page with what its
committed data renders (exit 1 and a diff when one differs), `render` writes the pages rendered from
other data into a folder, `run` reruns the experiments of bench/results/*.toml into a folder of its own
and renders the pages there, `figures` draws every registered figure, `list` lists the experiments."""
import argparse
import difflib
import os
import subprocess
import sys
import time

from .. import __version__
from ..errors import UserError, run_main
from ..runner.machine import HostLoad
from ..runner.session import write_json
from .data import Data
from .registry import FIGURES, load_pages, uncounted_verdicts
from .render import SETS, load_manifest, page_paths, render_text

EPILOG = """\
examples:
  desync-results check                                  every page against docs/data (a test does the same)
  desync-results render --data mydata --out mypages     the pages from your own records
  desync-results run --set quick --desync build/bench/desync --out build/reproduce-quick
  desync-results figures                                docs/figures/results/*.png from docs/data
  desync-results list"""


def find_root(start):
    p = os.path.abspath(start)
    while True:
        if os.path.isdir(os.path.join(p, "bench", "results")) and os.path.isdir(os.path.join(p, "docs")):
            return p
        parent = os.path.dirname(p)
        if parent == p:
            raise UserError(f"{start}: not inside a desync source tree (no bench/results/ and docs/ above it); give --root")
        p = parent


def render_all(root, data_roots):
    """{page_rel: (committed text, rendered text)} for every page."""
    manifest = load_manifest(root)
    data = Data(data_roots)
    out = {}
    for rel in page_paths(root):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        out[rel] = (text, render_text(text, data, rel, manifest))
    return out, data


def cmd_check(args, root):
    pages, _ = render_all(root, args.data or [os.path.join(root, "docs", "data")])
    stale = 0
    for rel, (old, new) in pages.items():
        if old != new:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       f"{rel} (committed)", f"{rel} (rendered from data)"))
    print(f"desync-results: {len(pages) - stale} of {len(pages)} pages match their data"
          + ("" if not stale else f"; {stale} differ (update them with `desync-results render --out .`)"))
    problems = uncounted_verdicts({rel: new for rel, (_, new) in pages.items()})
    for p in problems:
        print(f"desync-results: {p}")
    return 1 if stale or problems else 0


def write_pages(pages, out):
    changed = []
    for rel, (old, new) in pages.items():
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        if old != new:
            changed.append(rel)
    return changed


def cmd_render(args, root):
    roots = (args.data or []) + [os.path.join(root, "docs", "data")]
    pages, _ = render_all(root, roots)
    changed = write_pages(pages, args.out)
    print(f"desync-results: wrote {len(pages)} pages under {args.out}; "
          f"{len(changed)} differ from the committed ones{': ' + ', '.join(changed) if changed else ''}")
    return 0


def draw_figures(data, out, names=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    load_pages()
    os.makedirs(out, exist_ok=True)
    written = []
    for name in names or sorted(FIGURES):
        if name not in FIGURES:
            raise UserError(f"unknown results figure '{name}' (known: {', '.join(sorted(FIGURES))})")
        fig = FIGURES[name](data)
        path = os.path.join(out, name.replace(".", "-") + ".png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def cmd_figures(args, root):
    data = Data((args.data or []) + [os.path.join(root, "docs", "data")])
    for p in draw_figures(data, args.out or os.path.join(root, "docs", "figures", "results"), args.names):
        print(f"desync-results: wrote {p}")
    return 0


def selected(manifest, sets, only):
    chosen = [e for e in manifest.values() if e["set"] in sets]
    if only:
        unknown = [o for o in only if o not in manifest]
        if unknown:
            raise UserError(f"unknown experiment {', '.join(unknown)} (desync-results list)")
        chosen = [e for e in chosen if e["id"] in only]
    return chosen


def run_watched(command, root, env, limit, real):
    """Runs an experiment's command; for real runs (`real`) with the host's load beside it
    (runner.machine.HostLoad), and once more when other processes disturbed it. Returns (exit code or
    "timeout", the load record or None)."""
    for attempt in (1, 2):
        host = HostLoad() if real else None
        try:
            rc = subprocess.run(["bash", "-c", command], cwd=root, env=env, timeout=limit).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        load = None if host is None else {**host.finish(), "seconds": round(time.monotonic() - host.start, 1),
                                          "attempts": attempt}
        if load is None or not load["disturbed"] or rc != 0:
            return rc, load
        print(f"desync-results: other processes disturbed it ({load['foreign_cpu_seconds']} CPU s): once more",
              flush=True)
    return rc, load


def cmd_run(args, root):
    manifest = load_manifest(root)
    sets = {"quick": ["quick"], "sim": ["sim"], "all": ["quick", "sim"]}[args.set]
    chosen = selected(manifest, sets, args.only)
    if not chosen:
        raise UserError("no experiment selected")
    out = os.path.abspath(args.out)
    data_out = os.path.join(out, "data")
    subst = {"desync": os.path.abspath(args.desync), "python": sys.executable, "root": root,
             "sim_desync": os.path.abspath(args.sim_desync) if args.sim_desync else "",
             "build": os.path.dirname(os.path.abspath(args.desync))}
    for e in chosen:
        if "{sim_desync}" in e["command"] and not args.sim_desync:
            raise UserError(f"experiment {e['id']} needs --sim-desync (desync's SMPI build, make build-sim)")
        if not os.access(subst["desync"], os.X_OK):
            raise UserError(f"{args.desync}: not an executable (build it first)")
    total = sum(float(e.get("minutes", 1)) for e in chosen)
    print(f"desync-results: {len(chosen)} experiments, about {total:.0f} min; data into {data_out}", flush=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(root, "python", "src")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    log = []
    failed = []
    for e in chosen:
        target = os.path.join(data_out, e["output"])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        command = e["command"].strip().format(out=target, outdir=os.path.dirname(target), **subst)
        print(f"== {e['id']}: {command}", flush=True)
        if args.dry_run:
            continue
        t0 = time.monotonic()
        rc, load = run_watched(command, root, env, max(300.0, 3 * 60 * float(e.get("minutes", 1))),
                               e["set"] == "quick")
        if load is not None:  # the host's load beside the experiment, for the page's line under it
            os.makedirs(os.path.join(data_out, "host-load"), exist_ok=True)
            write_json(os.path.join(data_out, "host-load", f"{e['id']}.json"), load)
        took = time.monotonic() - t0
        log.append(f"{e['id']}\t{e['set']}\t{rc}\t{took:.0f} s")
        if rc != 0:
            failed.append(e["id"])
            print(f"desync-results: {e['id']} failed ({rc}) after {took:.0f} s", file=sys.stderr, flush=True)
    if args.dry_run:
        return 0
    pages, data = render_all(root, [data_out, os.path.join(root, "docs", "data")])
    changed = write_pages(pages, os.path.join(out, "pages"))
    draw_figures(data, os.path.join(out, "figures"))
    fresh = sorted(rel for rel, r in data.used.items() if r == data_out)
    with open(os.path.join(out, "summary.txt"), "w", encoding="utf-8") as f:
        f.write("experiment\tset\texit\ttime\n" + "\n".join(log) + "\n\n")
        f.write("data rendered from this run:\n" + "".join(f"  {p}\n" for p in fresh))
        f.write("pages that differ from the committed ones (diff -r docs/results " + os.path.join(out, "pages", "docs", "results") + "):\n"
                + "".join(f"  {p}\n" for p in changed))
    print(f"desync-results: pages in {out}/pages, figures in {out}/figures, summary in {out}/summary.txt; "
          f"{len(changed)} pages differ from the committed ones")
    if failed:
        print(f"desync-results: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def cmd_list(args, root):
    manifest = load_manifest(root)
    for e in manifest.values():
        print(f"{e['id']:32s} {e['set']:9s} {str(e.get('minutes', 1)):>4s} min  {e['output']}")
    for s, text in SETS.items():
        n = sum(1 for e in manifest.values() if e["set"] == s)
        print(f"# {s}: {n} experiments, {text}")
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="desync-results", description=__doc__.split("\n\n")[0] if False else __doc__,
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"desync-results {__version__}")
    p.add_argument("--root", default=".", help="the desync source tree (default: the one around the current folder)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("check", help="every page against what its committed data renders")
    s.add_argument("--data", action="append", metavar="DIR", help="data folder instead of docs/data (repeatable, first wins)")
    s = sub.add_parser("render", help="the pages rendered from data, written into a folder")
    s.add_argument("--data", action="append", metavar="DIR", help="data folder searched before docs/data (repeatable)")
    s.add_argument("--out", required=True, metavar="DIR", help="where the pages go (. rewrites the committed pages)")
    s = sub.add_parser("run", help="rerun the experiments and render the pages from their data")
    s.add_argument("--set", choices=("quick", "sim", "all"), default="quick",
                   help="quick: the real runs; sim: the simulated runs; all: both (default quick)")
    s.add_argument("--desync", required=True, help="the desync executable of the real runs")
    s.add_argument("--sim-desync", help="desync's SMPI build, for the simulated runs")
    s.add_argument("--out", required=True, metavar="DIR", help="a folder of its own: data/, pages/, figures/, summary.txt")
    s.add_argument("--only", action="append", metavar="ID", help="only this experiment (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    s = sub.add_parser("figures", help="draw every results figure (default into docs/figures/results/)")
    s.add_argument("names", nargs="*", metavar="NAME")
    s.add_argument("--data", action="append", metavar="DIR")
    s.add_argument("--out", metavar="DIR")
    sub.add_parser("list", help="the experiments and their sets")
    return p


def main(argv=None):
    return run_main("desync-results", _main, argv)


def _main(argv):
    args = build_parser().parse_args(argv)
    root = find_root(args.root)
    return {"check": cmd_check, "render": cmd_render, "run": cmd_run, "figures": cmd_figures,
            "list": cmd_list}[args.command](args, root)
