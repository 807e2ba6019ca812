#!/usr/bin/env python3
"""desync pde benchmarks (Aditya et al., 2019): the verification study and sync against weakly sync.

  verify   the 1D advection-diffusion verification of their section 3.2 (Figure 2): the mean error
           against the exact solution for N points at a fixed end time, in three configurations
           (synchronous + standard, weakly synchronous + standard, weakly synchronous + AT) with the
           seeded delay model (delays drawn from 0..L-1 every step at every process boundary), and
           the slope of each fitted in log-log; all three at one step per N, the weakly-synchronous
           default, given with --dt (a synchronous run's default step is larger). Not a timing:
           oversubscribed runs are fine (the paper uses P = 8).

             python3 bench/pde_bench.py verify --ranks 8 --points 32 64 128 256 512 --json v.json --figure v.png

  compare  burgers3d at --ranks ranks (2), synchronous against weakly synchronous (--max-delay L,
           default 10), both at the weakly-synchronous default step (given with --dt), over each
           --transports entry, with no noise and with each --noise setting (extra desync options, e.g.
           "--noise jitter"), --reps interleaved repetitions. Reports
           median total time, computation (compute), communication (send + consume) and
           approximation as ratios to sync with the same noise and transport (the total also as the
           median of each repetition's ratio, "paired", with its smallest and largest), the delays, and an
           idealised model of the same noise with instant messages (see model_ratio below), and
           beside it ("+work") the same model with each step also spending the bounded stepper's
           measured communication and approximation work without noise, which the pauses scale with
           only under desync pde's default --jitter-basis step (the pause is a multiple of the whole
           step: the +work model equals the model); with --jitter-basis compute they do not.

             python3 bench/pde_bench.py compare --points 64 --steps 1000 --noise "--noise jitter" --json c.json

  moments  burgers3d at --ranks ranks, one weakly-synchronous run per grid count N (--points) and
           transport (--transports) to one end time, each with --paired (the synchronous run at the same step beside it): the second
           moments <u1'^2> and <(du1/dx1)'^2> of both, their relative difference, the mean |u1 - u1_sync|,
           and the delays (their Figure 6: the moments' grid convergence, TS against WS).

             python3 bench/pde_bench.py moments --points 16 24 32 48 64 --end-time 0.25 --json m.json

  scaling  Equation 3, <E> ~ (P/N) dx^2 (<k^2> + <k>): weakly-synchronous runs with the seeded delay
           model (--delay-model uniform: k drawn from 0..L-1 at every process boundary every step),
           each --paired, varying one of ranks P, points N and bound L at a time around --base P N L;
           records the mean |u - u_sync| and the delay term of the equation (boundary_term below).
           Every run of one N at one step: --dt-per-dx2 C gives dt = C dx^2, else the bounded default
           step of the largest L (the default step shrinks with L).

             python3 bench/pde_bench.py scaling --problem advection-diffusion1d --ranks 2 4 8 16 \
                 --points 64 128 256 512 --max-delay 2 3 5 10 --base 4 256 10 --end-time 1 --json s.json

Standard library only (the figure needs matplotlib, e.g. the build/venv of make python-tools).
"""
import argparse
import json
import math
import os
import random
import shlex
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import add_launch_options, child_env, interleaved, run_measured, write_json  # noqa: E402


def run_desync(args, ranks, desync_args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = shlex.split(args.mpirun) + ["-np", str(ranks)]
        if "--transport shmem" in " ".join(desync_args) or "shmem" in desync_args:
            cmd += ["--mca", "osc", "ucx"]
        cmd += [args.desync, "pde", *desync_args, "--quiet", "--json", out]
        env = child_env()
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")  # verify runs more ranks than cores
        p = run_measured(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        if p.returncode != 0:
            raise SystemExit(f"pde_bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f)


def bounded_step(args, ranks, desync_args):
    """The step a bounded run with these options takes by default (a run of no steps reports it). A
    synchronous run's default step is larger (desync pde's default step depends only on what applies
    to the mode), so every run of one comparison is given this step with --dt."""
    rec = run_desync(args, ranks, [*desync_args, "--mode", "bounded", "--steps", "0", "--warmup", "0"])
    return rec["details"]["dt"]


def slope(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


CONFIGS = {
    "sync + standard": ["--mode", "sync"],
    "weakly sync + standard": ["--mode", "bounded", "--delay-model", "uniform", "--scheme", "standard"],
    "weakly sync + AT": ["--mode", "bounded", "--delay-model", "uniform", "--scheme", "at"],
}


def verify(args):
    rows = {name: [] for name in CONFIGS}
    for n in args.points:
        problem = ["--problem", "advection-diffusion1d", "--global", str(n), "--max-delay", str(args.max_delay)]
        # The three configurations at one step: the bounded default, passed to all with --dt.
        dt = bounded_step(args, args.ranks, problem)
        for name, extra in CONFIGS.items():
            rec = run_desync(args, args.ranks, [*problem, "--dt", repr(dt), "--end-time", str(args.end_time),
                                                "--delay-seed", str(args.seed), *extra])
            d = rec["details"]
            rows[name].append({"points": n, "error_mean": d["error"]["mean"], "error_max": d["error"]["max"],
                               "steps": d["steps"], "dt": d["dt"], "delay_mean": d["delay"]["mean"],
                               "delay_mean_sq": d["delay"]["mean_sq"]})
    print(f"verification: advection-diffusion1d, {args.ranks} ranks, end time {args.end_time}, "
          f"delays uniform on 0..{args.max_delay - 1} (seed {args.seed}), every configuration at the bounded "
          f"default step for its N (given with --dt)")
    print(f"  {'N':>6} " + " ".join(f"{name:>24}" for name in CONFIGS))
    for i, n in enumerate(args.points):
        print(f"  {n:>6} " + " ".join(f"{rows[name][i]['error_mean']:>24.4e}" for name in CONFIGS))
    slopes = {name: slope(args.points, [r["error_mean"] for r in rows[name]]) for name in CONFIGS}
    print("  slope  " + " ".join(f"{slopes[name]:>24.3f}" for name in CONFIGS))
    ok_sync = abs(slopes["sync + standard"] + 2) <= 0.2
    ok_at = abs(slopes["weakly sync + AT"] + 2) <= 0.2
    print(f"  sync slope within 0.2 of -2: {'ok' if ok_sync else 'MISS'}; AT slope within 0.2 of -2: "
          f"{'ok' if ok_at else 'MISS'}; standard with delays: slope {slopes['weakly sync + standard']:.2f}")
    doc = {"benchmark": "pde verify", "ranks": args.ranks, "end_time": args.end_time, "max_delay": args.max_delay,
           "dt_note": "every configuration at the bounded default step for its N (--dt)",
           "seed": args.seed, "rows": rows, "slopes": slopes}
    if args.json:
        write_json(args.json, doc)
    if args.figure:  # the figure of docs/results/aditya2019.md, drawn by the page's own function
        import matplotlib
        matplotlib.use("Agg")
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))
        from desync_tools.results.pages.aditya import verification_figure
        verification_figure(doc).savefig(args.figure, dpi=120)
        print(f"pde_bench: wrote {args.figure}")


FACES = ("xm", "xp", "ym", "yp", "zm", "zp")


def boundary_term(rec):
    """Equation 3's (P/N)(<k^2> + <k>) from a run record, for blocks of any shape: the sum over every
    rank's faces of the face's points times that face's <k> + <k^2>, over twice the grid's points.
    With one point per face (1D: P ranks, two faces each) it is exactly (P/N)(<k^2> + <k>); in 3D a
    face counts the points whose stencil reads its halo, so a block's surface over its volume takes
    the place of P/N. Faces a rank exchanges with itself count with the delays they had (none, except
    under the seeded delay model, which delays them too)."""
    total = 0.0
    for pr in rec["per_rank"]:
        local = pr["local_size"]
        for f in FACES:
            if f"delay_mean_{f}" not in pr:
                continue
            axis = "xyz".index(f[0])
            area = math.prod(n for a, n in enumerate(local) if a != axis)
            total += area * (pr[f"delay_mean_{f}"] + pr[f"delay_sq_mean_{f}"])
    return total / (2 * rec["unknowns"])


def delays_of(rec):
    d = rec["details"]["delay"]
    return {"mean": d["mean"], "mean_sq": d["mean_sq"], "max": d["max"], "histogram": d["histogram"]}


def moments(args):
    rows = []
    print(f"burgers3d, {args.ranks} ranks, weakly synchronous (L = {args.max_delay}) --paired with "
          f"the synchronous run at the same step, to t = {args.end_time}")
    print(f"  {'transport':<9} {'N':>4} {'steps':>6} {'<u1^2> TS':>14} {'WS':>14} {'rel diff':>9} {'<du1dx1^2> TS':>14} "
          f"{'WS':>14} {'rel diff':>9} {'mean |du1|':>10} {'delay mean':>10}")
    for transport, n in [(t, n) for t in args.transports for n in args.points]:
        argv = ["--problem", "burgers3d", "--global", str(n), "--mode", "bounded", "--max-delay", str(args.max_delay),
                "--transport", transport, "--end-time", str(args.end_time), "--paired", *shlex.split(args.extra)]
        rec = run_desync(args, args.ranks, argv)
        d = rec["details"]
        ws, ts = d["moments"], d["paired"]["moments"]
        row = {"transport": transport, "points": n, "dims": rec["process_grid"], "dt": d["dt"], "steps": d["steps"], "end_time": d["end_time"],
               "dx": d["dx"], "moments_ws": ws, "moments_ts": ts,
               "rel_diff": {q: abs(ws[q] - ts[q]) / abs(ts[q]) for q in ts},
               "error_mean": d["paired"]["error_mean"], "error_max": d["paired"]["error_max"],
               "delay": delays_of(rec), "boundary_term": boundary_term(rec), "wall_time": rec["wall_time"]}
        rows.append(row)
        print(f"  {transport:<9} {n:>4} {d['steps']:>6} {ts['u1']:>14.8e} {ws['u1']:>14.8e} {row['rel_diff']['u1']:>9.2e} "
              f"{ts['du1dx1']:>14.8e} {ws['du1dx1']:>14.8e} {row['rel_diff']['du1dx1']:>9.2e} "
              f"{row['error_mean']:>10.3e} {d['delay']['mean']:>10.3f}")
    if args.json:
        write_json(args.json, {"benchmark": "pde moments", "ranks": args.ranks, "end_time": args.end_time,
                               "max_delay": args.max_delay, "transports": args.transports, "extra": args.extra,
                               "dt_note": "each N at the bounded default step; its synchronous run (--paired) at the same step",
                               "rows": rows})


def scaling(args):
    base_p, base_n, base_l = args.base
    cases = [("ranks", p, base_n, base_l) for p in args.ranks]
    cases += [("points", base_p, n, base_l) for n in args.points]
    cases += [("max_delay", base_p, base_n, l) for l in args.max_delay]
    seen, rows = set(), []
    dts = {}
    print(f"{args.problem}, delay model {args.delay_model}, each run --paired with the synchronous run at its step, "
          f"to t = {args.end_time}; base P = {base_p}, N = {base_n}, L = {base_l}")
    print(f"  {'varied':<10} {'P':>3} {'N':>5} {'L':>3} {'dt':>10} {'steps':>6} {'<k>':>6} {'<k^2>':>7} "
          f"{'mean |u - u_sync|':>17} {'term':>9} {'E/(dx^2 term)':>13}")
    for varied, p, n, l in cases:
        key = (p, n, l)
        if key in seen:
            rows.append(dict(next(r for r in rows if (r["ranks"], r["points"], r["max_delay"]) == key), varied=varied))
            continue
        seen.add(key)
        problem = ["--problem", args.problem, "--global", str(n)]
        if n not in dts:
            if args.dt_per_dx2:
                dx = 2 * math.pi / n
                dts[n] = args.dt_per_dx2 * dx * dx
            else:
                dts[n] = bounded_step(args, p, [*problem, "--max-delay", str(max(args.max_delay + [base_l]))])
        rec = run_desync(args, p, [*problem, "--mode", "bounded", "--max-delay", str(l), "--delay-model",
                                   args.delay_model, "--delay-seed", str(args.seed), "--dt", repr(dts[n]),
                                   "--end-time", str(args.end_time), "--paired"])
        d = rec["details"]
        term = boundary_term(rec)
        row = {"varied": varied, "ranks": p, "points": n, "max_delay": l, "dims": rec["process_grid"],
               "dt": d["dt"], "steps": d["steps"], "dx": d["dx"], "error_mean": d["paired"]["error_mean"],
               "error_max": d["paired"]["error_max"], "delay": delays_of(rec), "boundary_term": term}
        rows.append(row)
        c = row["error_mean"] / (d["dx"] ** 2 * term) if term else float("nan")
        print(f"  {varied:<10} {p:>3} {n:>5} {l:>3} {d['dt']:>10.4g} {d['steps']:>6} {d['delay']['mean']:>6.2f} "
              f"{d['delay']['mean_sq']:>7.2f} {row['error_mean']:>17.4e} {term:>9.3e} {c:>13.4g}")
    if args.json:
        write_json(args.json, {"benchmark": "pde scaling", "problem": args.problem, "delay_model": args.delay_model,
                               "seed": args.seed, "end_time": args.end_time, "base": args.base,
                               "dt_per_dx2": args.dt_per_dx2,
                               "dt_note": ("dt = C dx^2" if args.dt_per_dx2 else
                                           "each N at the bounded default step of the largest L"),
                               "rows": rows})


def parse_noise(extra):
    """Jitter probability, factor and basis (compute or step) from a desync noise option string
    (desync pde's defaults 0.1, 2 and step)."""
    toks = shlex.split(extra)
    p, f, basis = 0.1, 2.0, "step"
    if "jitter" not in toks:
        return None
    for i, t in enumerate(toks[:-1]):
        if t == "--jitter-probability":
            p = float(toks[i + 1])
        if t == "--jitter-factor":
            f = float(toks[i + 1])
        if t == "--jitter-basis":
            basis = toks[i + 1]
    return p, f, basis


def model_ratio(p, f, steps, L, ranks=2, trials=20, seed=7, work=0.0, basis="compute"):
    """Idealised jitter model, instant messages: each rank's step takes 1 (its compute) plus f with
    probability p. Synchronous: step n ends on every rank at max over ranks (of the previous end,
    here all neighbours on a ring) plus its own step time. Weakly synchronous with bound L: a rank may
    start step n once its neighbours have finished step n - L. Returns mean T_ws / T_sync.
    `work`: further time of every step besides its compute, in units of the compute, that the pause
    does not scale with (the step's packing, sending and installing of halos: messages still travel
    instantly); 0 is the issue's model. `basis` step: the pause is f times the whole step, 1 + work
    (desync pde --jitter-basis step), so the ratio does not depend on the work."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(trials):
        pause = f * (1 + work) if basis == "step" else f
        draws = [[1 + work + (pause if rng.random() < p else 0) for _ in range(steps)] for _ in range(ranks)]
        nb = [[(r - 1) % ranks, (r + 1) % ranks] for r in range(ranks)]
        sync = [0.0] * ranks
        ws = [[0.0] * (steps + 1) for _ in range(ranks)]  # ws[r][n]: end of step n-1 on rank r
        for n in range(steps):
            start = max(sync)  # every rank waits for its neighbours' previous step (2 ranks: all)
            if ranks > 2:
                start_r = [max(sync[r], *(sync[q] for q in nb[r])) for r in range(ranks)]
            else:
                start_r = [start] * ranks
            sync = [start_r[r] + draws[r][n] for r in range(ranks)]
            for r in range(ranks):
                ready = ws[r][n]
                if n - L >= 0:
                    ready = max(ready, *(ws[q][n - L] for q in nb[r]))
                ws[r][n + 1] = ready + draws[r][n]
        ratios.append(max(ws[r][steps] for r in range(ranks)) / max(sync))
    return statistics.fmean(ratios)


def compare(args):
    noises = [("none", "")] + [(n, n) for n in args.noise]
    configs = []
    for t in args.transports:
        for noise_name, noise in noises:
            for mode in ("sync", "bounded"):
                configs.append((t, noise_name, noise, mode))
    results = {c: [] for c in configs}
    # Both modes at one step (the bounded default), given with --dt: the same work per step.
    problem = ["--problem", "burgers3d", "--global", str(args.points), "--dims", args.dims,
               "--max-delay", str(args.max_delay)]
    dt = bounded_step(args, args.ranks, problem)
    for rep, c in interleaved(configs, args.reps):
        t, noise_name, noise, mode = c
        argv = [*problem, "--dt", repr(dt), "--steps", str(args.steps), "--mode", mode, "--transport", *shlex.split(t)]
        argv += shlex.split(noise)
        rec = run_desync(args, args.ranks, argv)
        ts = rec["time_split"]
        results[c].append({"total": rec["wall_time"], "compute": ts["compute"], "comm": ts["send"] + ts["consume"],
                           "approximate": ts["approximate"], "noise": ts.get("noise", 0.0),
                           "delay": rec["details"]["delay"], "forced_waits": rec["details"]["forced_waits"]})
    out = {"benchmark": "pde compare", "ranks": args.ranks, "points": args.points, "steps": args.steps,
           "max_delay": args.max_delay, "dt": dt, "dt_note": "both modes at the bounded default step (--dt)",
           "reps": args.reps, "rows": []}
    print(f"burgers3d, {args.ranks} ranks, {args.points}^3 points ({args.dims}), {args.steps} timed steps, L = {args.max_delay}, "
          f"dt {dt:.4g} in both modes (the bounded default, given with --dt), "
          f"{args.reps} interleaved repetitions (medians; ratios to sync with the same transport and noise)")
    print(f"  {'transport':<22} {'noise':<22} {'mode':<8} {'total s':>9} {'ratio':>7} {'paired':>7} {'(min':>6} {'max)':>6} "
          f"{'compute':>8} {'comm':>8} {'approx':>7} {'delay mean':>10} {'max':>4} {'model':>6} {'+work':>6}")
    for t in args.transports:
        # The bounded stepper's own work besides its computation, per unit of computation, from its
        # run without noise (where it seldom waits): communication plus halo approximation.
        quiet = {k: statistics.median(r[k] for r in results[(t, "none", "", "bounded")])
                 for k in ("compute", "comm", "approximate")}
        work = (quiet["comm"] + quiet["approximate"]) / quiet["compute"] if quiet["compute"] else 0.0
        for noise_name, noise in noises:
            sync_rs = results[(t, noise_name, noise, "sync")]
            base = {k: statistics.median(r[k] for r in sync_rs) for k in ("total", "compute", "comm", "approximate")}
            for mode in ("sync", "bounded"):
                rs = results[(t, noise_name, noise, mode)]
                med = {k: statistics.median(r[k] for r in rs) for k in ("total", "compute", "comm", "approximate")}
                # The two modes' runs of one repetition ran minutes apart at most (interleaved): the
                # median of their ratios cancels the machine's drift between repetitions, which the
                # ratio of the two medians does not.
                paired = [r["total"] / b["total"] for r, b in zip(rs, sync_rs)]
                dmean = statistics.fmean(r["delay"]["mean"] for r in rs)
                dmax = max(r["delay"]["max"] for r in rs)
                hist = [sum(r["delay"]["histogram"][i] for r in rs) for i in range(len(rs[0]["delay"]["histogram"]))]
                pf = parse_noise(noise)
                model = model_work = None  # sync is the reference; bounded without noise: 1
                if mode == "bounded" and pf:
                    model = model_ratio(pf[0], pf[1], args.steps, args.max_delay, args.ranks)
                    model_work = model_ratio(pf[0], pf[1], args.steps, args.max_delay, args.ranks, work=work,
                                             basis=pf[2])
                elif mode == "bounded":
                    model = model_work = 1.0
                row = {"transport": t, "noise": noise_name, "mode": mode, **{k: med[k] for k in med},
                       "ratio_total": med["total"] / base["total"],
                       "ratio_total_paired": statistics.median(paired),
                       "ratio_total_paired_range": [min(paired), max(paired)],
                       "total_runs": [r["total"] for r in rs],
                       "ratio_compute": med["compute"] / base["compute"] if base["compute"] else None,
                       "ratio_comm": med["comm"] / base["comm"] if base["comm"] else None,
                       "delay_mean": dmean, "delay_max": dmax, "delay_histogram": hist, "model_ratio": model,
                       "model_ratio_with_work": model_work, "model_work_per_compute": work}
                out["rows"].append(row)
                print(f"  {t:<22} {noise_name:<22} {mode:<8} {med['total']:>9.4f} {row['ratio_total']:>7.3f} "
                      f"{row['ratio_total_paired']:>7.3f} {min(paired):>6.3f} {max(paired):>6.3f} {med['compute']:>8.4f} {med['comm']:>8.4f} {med['approximate']:>7.4f} {dmean:>10.3f} "
                      f"{dmax:>4.0f} {('%.3f' % model) if model else '-':>6} {('%.3f' % model_work) if model_work else '-':>6}")
    if args.json:
        write_json(args.json, out)


def _subcommand(sub, name, ranks):
    """A subcommand with the launch options, --ranks (one count, or a list when `ranks` is one),
    --timeout and --json."""
    p = sub.add_parser(name)
    add_launch_options(p)
    if isinstance(ranks, list):
        p.add_argument("--ranks", type=int, nargs="+", default=ranks)
    else:
        p.add_argument("--ranks", type=int, default=ranks)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--json")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = _subcommand(sub, "verify", ranks=8)
    v.add_argument("--points", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    v.add_argument("--end-time", type=float, default=1.0)
    v.add_argument("--max-delay", type=int, default=10)
    v.add_argument("--seed", type=int, default=1)
    v.add_argument("--figure")
    c = _subcommand(sub, "compare", ranks=2)
    c.add_argument("--points", type=int, default=64, help="N: an N^3 periodic cube (default 64)")
    c.add_argument("--dims", default="2x1x1")
    c.add_argument("--steps", type=int, default=1000)
    c.add_argument("--max-delay", type=int, default=10)
    c.add_argument("--transports", nargs="+", default=["rma", "p2p"])
    c.add_argument("--noise", nargs="*", default=[], help='noise settings, each a string of desync options')
    c.add_argument("--reps", type=int, default=5)
    m = _subcommand(sub, "moments", ranks=2)
    m.add_argument("--points", type=int, nargs="+", default=[16, 24, 32, 48, 64])
    m.add_argument("--end-time", type=float, default=0.25)
    m.add_argument("--max-delay", type=int, default=10)
    m.add_argument("--transports", nargs="+", default=["rma", "p2p"])
    m.add_argument("--extra", default="", help="further desync pde options (e.g. \"--noise jitter\")")
    s = _subcommand(sub, "scaling", ranks=[2, 4, 8, 16])
    s.add_argument("--problem", default="advection-diffusion1d")
    s.add_argument("--points", type=int, nargs="+", default=[64, 128, 256, 512])
    s.add_argument("--max-delay", type=int, nargs="+", default=[2, 3, 5, 10])
    s.add_argument("--base", type=int, nargs=3, default=[4, 256, 10], metavar=("P", "N", "L"))
    s.add_argument("--delay-model", default="uniform", choices=["uniform", "max"])
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--end-time", type=float, default=1.0)
    s.add_argument("--dt-per-dx2", type=float, help="dt = C dx^2 for every run (default: the bounded default step)")
    args = ap.parse_args()
    {"verify": verify, "compare": compare, "moments": moments, "scaling": scaling}[args.cmd](args)


if __name__ == "__main__":
    main()
