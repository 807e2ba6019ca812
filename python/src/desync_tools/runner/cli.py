"""desync-run: runs the desync runs an experiment file (TOML) describes, keeps each run's record,
output and exit code in a results folder, and collects their key figures into one table."""
import argparse
import os
import sys

from .. import __version__
from ..errors import UserError, run_main
from .collect import collect_rows, summary, write_csv
from .execute import run_experiment
from .experiment import check_launcher, load_experiment
from .slurm import emit_slurm

EPILOG = """\
examples:
  desync-run run bench/experiments/time_to_solution.toml -o results/tts
  desync-run run bench/experiments/time_to_solution.toml --dry-run
  desync-run collect results/tts --summary --baseline mode=sync
  desync-run run experiment.toml -o /scratch/me/results --emit-slurm job.sh && sbatch job.sh
  desync-plot report results/tts -o report.html

The experiment file format and the results folder are described in docs/experiments.md."""


def _command(sub, name, summary, description, example):
    """A subcommand: its one-line help, its description and one example."""
    return sub.add_parser(name, help=summary, description=description, epilog="example:\n  " + example,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser():
    p = argparse.ArgumentParser(prog="desync-run", description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"desync-run {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = _command(sub, "run", "run every combination of an experiment not yet done",
                 "Runs every (repetition, parameter combination) of EXPERIMENT that the results folder does not "
                 "hold yet, with a progress line and an estimate of the time left.",
                 "desync-run run bench/experiments/transport_rate.toml -o results/rate")
    r.add_argument("experiment", metavar="EXPERIMENT.toml")
    r.add_argument("--only", metavar="ID", help="the sweep to run, where the file lists several experiments")
    r.add_argument("-o", "--results", metavar="FOLDER", help="results folder (default results/<name>)")
    r.add_argument("--desync", metavar="PATH", help="desync executable (default: the file's executable, or $DESYNC)")
    r.add_argument("--launcher", help="launcher name or template, overriding the file's (e.g. mpirun.mpich)")
    r.add_argument("--dry-run", action="store_true", help="print the commands; run and write nothing")
    r.add_argument("--retry-failed", action="store_true", help="run the failed runs again")
    r.add_argument("--emit-slurm", metavar="SCRIPT", help="write a Slurm batch script running the experiment "
                   "with srun into the results folder, instead of running here")
    c = _command(sub, "collect", "one CSV table of every run's key figures",
                 "Writes one CSV row per run (failed runs included, with their reason) and optionally prints a "
                 "summary with ratios to a baseline.",
                 "desync-run collect results/tts --summary --baseline mode=sync")
    c.add_argument("results", metavar="RESULTS")
    c.add_argument("-o", "--output", help="CSV file (default RESULTS/results.csv)")
    c.add_argument("--summary", action="store_true", help="print medians per combination over the repetitions")
    c.add_argument("--baseline", metavar="PARAM=VALUE", help="with --summary: ratio of medians to the combination "
                   "with PARAM=VALUE and the other parameters equal (e.g. mode=sync)")
    c.add_argument("--metric", default="wall_time", help="with --summary: the metric (default wall_time)")
    return p


def main(argv=None):
    return run_main("desync-run", _main, argv)


def _main(argv):
    args = build_parser().parse_args(argv)
    if args.command == "collect":
        columns, rows, parameters = collect_rows(args.results)
        out = args.output or os.path.join(args.results, "results.csv")
        if args.metric not in columns and args.summary:
            raise UserError(f"--metric: unknown metric '{args.metric}' (columns: {', '.join(columns)})")
        write_csv(out, columns, rows)
        bad = [r for r in rows if r.get("status") != "ok"]
        print(f"desync-run: wrote {out} ({len(rows)} runs, {len(bad)} not ok)")
        if args.summary:
            for line in summary(rows, parameters, args.baseline, args.metric):
                print(line)
        return 0
    exp = load_experiment(args.experiment, args.only)
    if args.launcher:
        check_launcher("--launcher", args.launcher)
    executable = args.desync or os.environ.get("DESYNC") or exp.executable
    results = args.results or os.path.join("results", exp.name)
    if args.emit_slurm:
        n, ntasks = emit_slurm(exp, results, args.emit_slurm, executable)
        print(f"desync-run: wrote {args.emit_slurm}: {n} runs, up to {ntasks} tasks; results into {results}")
        return 0
    ran, skipped, failed = run_experiment(exp, results, executable, args.launcher, args.retry_failed, args.dry_run)
    if args.dry_run:
        return 0
    total = ran + skipped
    print(f"desync-run: {total} runs: {total - len(failed)} ok, {len(failed)} failed ({ran} ran now, {skipped} "
          f"done before); results in {results}")
    for st in failed:
        print(f"  failed: {os.path.join(results, 'runs', st['run_id'])}: {st.get('reason') or st.get('status')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
