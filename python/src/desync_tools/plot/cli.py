"""desync-plot: figures from desync's run records (`desync <solver> --json FILE`) and results tables
(`desync-run collect`). The output format follows the file name: .png, .svg or .pdf."""
import argparse
import os
import sys

import matplotlib.pyplot as plt

from .. import __version__
from ..errors import UserError, run_main
from ..records import load_record, supported_versions_text
from ..tables import read_table, where
from . import (load_field, plot_breakdown, plot_convergence, plot_delays, plot_field, plot_scaling,
               plot_sweep, write_report)

FORMATS = (".png", ".svg", ".pdf")

EPILOG = f"""\
examples:
  mpirun -np 2 desync jacobi --mode sync  --slow-rank 1 --slow-factor 2 --json sync.json
  mpirun -np 2 desync jacobi --mode async --slow-rank 1 --slow-factor 2 --json async.json
  desync-plot convergence sync.json async.json -o convergence.png
  desync-plot delays async.json -o delays.png
  desync-plot breakdown async.json -o split.svg
  desync-run run bench/experiments/time_to_solution.toml -o results/tts && desync-run collect results/tts
  desync-plot scaling results/tts/results.csv --by mode -o scaling.pdf
  desync-plot sweep results/alpha/results.csv --x alpha --y wall_time --by mode -o alpha.png
  desync-plot field u.npy --axis z --index 0 -o u.png
  desync-plot report results/tts -o report.html
  desync-plot results bethune.slow -o slow.png        a figure of the results pages (docs/results/)

Run records of schema version {supported_versions_text()} are read (docs/output.md)."""


def _output(path):
    if os.path.splitext(path)[1].lower() not in FORMATS:
        raise UserError(f"{path}: unknown figure format (use a file name ending in {', '.join(FORMATS)})")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{path}: folder {folder} does not exist")
    return path


def _save(fig, path):
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"desync-plot: wrote {path}")


def build_parser():
    p = argparse.ArgumentParser(prog="desync-plot", description=__doc__.split("\n\n")[0],
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"desync-plot {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name, help_text, epilog):
        s = sub.add_parser(name, help=help_text, description=help_text, epilog="example:\n  " + epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name != "report":
            s.add_argument("-o", "--output", required=True, help="figure file: .png, .svg or .pdf")
            s.add_argument("--title", help="figure title")
        return s

    s = add("convergence", "residual against time and iteration, one curve per run record",
            "desync-plot convergence sync.json async.json -o convergence.png")
    s.add_argument("records", nargs="+", metavar="RECORD", help="run records (desync --json)")
    s.add_argument("--x", choices=("both", "time", "iteration"), default="both", help="x axis (default both: two panels)")
    s.add_argument("--per-rank", action="store_true",
                   help="also each rank's local residual (solvers that record per_rank[].residual_history)")
    s.add_argument("--label", action="append", help="a curve's label, once per record in order (default: "
                   "solver, method and the options that differ)")

    s = add("delays", "histograms of the halo delays each rank used, and iterations per rank",
            "desync-plot delays async.json -o delays.png")
    s.add_argument("record", metavar="RECORD", help="a run record of an asynchronous run")

    s = add("breakdown", "stacked bars of the time split, per rank (one record) or per run",
            "desync-plot breakdown sync.json async.json --per run -o split.png")
    s.add_argument("records", nargs="+", metavar="RECORD")
    s.add_argument("--per", choices=("rank", "run"), default=None,
                   help="one bar per rank (default for one record) or per run (default for several)")

    s = add("scaling", "time, iterations and speed-up against ranks from a results table",
            "desync-plot scaling results/weak/results.csv --by mode --weak -o weak.png")
    s.add_argument("table", metavar="TABLE.csv", help="results table (desync-run collect)")
    s.add_argument("--by", metavar="COLUMN", help="one curve per value of this column (e.g. mode)")
    s.add_argument("--weak", action="store_true", help="weak scaling: efficiency t(P0)/t(P) instead of speed-up")
    s.add_argument("--where", action="append", metavar="COL=VALUE", help="only the runs with this value (repeatable)")

    s = add("sweep", "a metric against one parameter from a results table",
            "desync-plot sweep results/alpha/results.csv --x alpha --y iterations_mean --by mode -o alpha.png")
    s.add_argument("table", metavar="TABLE.csv")
    s.add_argument("--x", required=True, metavar="PARAM", help="parameter column on the x axis")
    s.add_argument("--y", default="wall_time", metavar="METRIC", help="metric column (default wall_time)")
    s.add_argument("--by", metavar="COLUMN", help="one curve per value of this column")
    s.add_argument("--logx", action="store_true", help="logarithmic x axis")
    s.add_argument("--mark", type=float, metavar="VALUE", help="a vertical line at this x (e.g. the automatic choice)")
    s.add_argument("--where", action="append", metavar="COL=VALUE", help="only the runs with this value (repeatable)")

    s = add("field", "a slice of a saved field (desync --save FILE.npy) with a colour bar",
            "desync-plot field u.npy --axis z --index 0 -o u.png")
    s.add_argument("field", metavar="FILE.npy")
    s.add_argument("--axis", choices=("x", "y", "z"), default="z", help="normal of the slice (3D fields)")
    s.add_argument("--index", type=int, help="plane index along the axis (default the middle)")

    s = add("results", "a figure of the results pages, from the records under docs/data (desync-results)",
            "desync-plot results bethune.slow -o docs/figures/results/bethune-slow.png")
    s.add_argument("name", metavar="NAME", help="the figure's name (desync-plot results --list)")
    s.add_argument("--data", action="append", metavar="DIR",
                   help="data folder searched before the source tree's docs/data (repeatable)")
    s.add_argument("--root", default=".", help="the desync source tree (default: around the current folder)")

    s = add("report", "one page with the results table and every applicable figure",
            "desync-plot report results/tts -o report.html")
    s.add_argument("results", metavar="RESULTS", help="a desync-run results folder (or any folder of run records)")
    s.add_argument("-o", "--output", help="report.html (one file, images inline) or report.md (images beside); "
                   "default RESULTS/report.html")
    return p


def main(argv=None):
    return run_main("desync-plot", _main, argv)


def _main(argv):
    args = build_parser().parse_args(argv)
    if args.command == "report":
        out = args.output or os.path.join(args.results, "report.html")
        n = write_report(args.results, out)
        print(f"desync-plot: wrote {out} ({n} figures)")
        return 0
    out = _output(args.output)
    if args.command == "results":
        from ..results.cli import find_root
        from ..results.data import Data
        from ..results.registry import FIGURES, load_pages
        root = find_root(args.root)
        load_pages()
        if args.name not in FIGURES:
            raise UserError(f"unknown results figure '{args.name}' (known: {', '.join(sorted(FIGURES))})")
        fig = FIGURES[args.name](Data((args.data or []) + [os.path.join(root, "docs", "data")]))
        if args.title:
            fig.suptitle(args.title)
        _save(fig, out)
        return 0
    if args.command == "convergence":
        fig = plot_convergence([load_record(r) for r in args.records], x=args.x, per_rank=args.per_rank,
                               labels=args.label, title=args.title)
    elif args.command == "delays":
        fig = plot_delays(load_record(args.record), title=args.title)
    elif args.command == "breakdown":
        recs = [load_record(r) for r in args.records]
        fig = plot_breakdown(recs, per=args.per or ("rank" if len(recs) == 1 else "run"), title=args.title)
    elif args.command == "scaling":
        columns, rows = read_table(args.table)
        rows = where(columns, rows, args.where, args.table)
        fig = plot_scaling(columns, rows, by=args.by, weak=args.weak, where=args.table, title=args.title)
    elif args.command == "sweep":
        columns, rows = read_table(args.table)
        rows = where(columns, rows, args.where, args.table)
        fig = plot_sweep(columns, rows, args.x, args.y, by=args.by, logx=args.logx, mark=args.mark,
                         where=args.table, title=args.title)
    else:
        fig = plot_field(load_field(args.field), axis=args.axis, index=args.index, title=args.title)
    _save(fig, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
