#!/usr/bin/env python3
"""The papers' headline findings at 64-1024 simulated ranks (docs/results/).

Runs desync's SMPI build through desync-sim on a modelled InfiniBand EDR cluster (fat tree, 16 cores
per node, 12.5 GB/s, 1 us) with the cost model calibrated on this machine, and prints one table per
study: simulated time, iterations (min/mean/max over ranks), and the host's wall time per simulated
run. `--set quick` is the subset of `make bench` (a few minutes here); `--set full` the whole
reproduction set. Each simulation runs on one core; `--jobs` of them run side by side (default: one
per core), the largest first. `--only`, `--ranks` and `--match` pick studies, rank counts and runs
(by label); `--markdown` prints the tables of an earlier `--json` file.

    python3 bench/simgrid/calibrate.py -o build/sim/costs.json
    python3 bench/simgrid/reproduce.py --costs build/sim/costs.json --set quick --json build/sim/quick.json
    python3 bench/simgrid/reproduce.py --markdown build/sim/quick.json
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from bench_util import child_env, write_json  # noqa: E402
from pde_bench import boundary_term  # noqa: E402

PLATFORM = ["--preset", "ib-edr", "--cores", "16"]


def studies(full):
    """(study, paper, [(label, ranks, desync arguments, extra desync-sim arguments)])."""
    jr = [64, 256, 1024] if full else [64, 256]
    out = []
    # Bethune et al., 2011, Table 1 (weak scaling) as iteration rates: a fixed number of iterations,
    # 50 (100 until 2026-11-26: the set's budget; the rate per iteration is what the study compares).
    rows = []
    for p in jr:
        for mode in (["--mode", "sync"], ["--mode", "async", "--transport", "p2p", "--reduction", "tree"]):
            rows.append((f"jacobi {mode[1]} P={p}", p,
                         ["jacobi", *mode, "--local", "32", "--max-iters", "50", "--tol", "1e-30"], []))
    out.append(("jacobi-weak", "Bethune et al., 2011, Table 1", rows))
    # Table 1's min/mean/max iterations to a tolerance: 8^3 points per rank (reduced from the paper's
    # sizes), 64 ranks, residual 1e-3: about 2 minutes of host time for the asynchronous run. (SimGrid
    # 3.32 keeps every request completed by MPI_Test in the rank's activity list, so host time grew
    # with the square of the iterations; desync now completes by waits what has arrived,
    # docs/simulation.md.)
    if full:
        rows = []
        for mode in (["--mode", "sync"], ["--mode", "async", "--transport", "p2p", "--reduction", "tree"]):
            rows.append((f"jacobi {mode[1]} P=64 to 1e-3", 64,
                         ["jacobi", *mode, "--local", "8", "--tol", "1e-3", "--max-iters", "50000"], []))
        out.append(("jacobi-converge", "Bethune et al., 2011, Table 1", rows))
    # Section 6.1: one core slowed 2x. The residual reached in the same simulated time: the
    # time-to-solution finding without simulating thousands of iterations. 32^3 points per rank at
    # 64 ranks (4 ms). The full set adds the paper's 50^3 per rank at the largest count, 1024 ranks:
    # with this host's cores (6 ms), and with cores 25 times slower ("paper's cores", 60 ms;
    # smpi/host-speed 25 times the platform's: the calibrated seconds are a 25 times faster core's),
    # so that an iteration costs what the paper's did (3.1-3.6 ms in its Table 1, against 0.25 ms
    # here): the finding depends on how much of an iteration is computation. The slowed core is the
    # middle of the process grid (a corner rank has half the halo work of an interior one, so its
    # slack would absorb the slowdown); desync numbers ranks x fastest over the --dims PXxPYxPZ grid
    # (CartGrid). With this host's cores at 1024 ranks only the synchronous pair runs: the
    # asynchronous pair costs 1100 s of host time, beyond the set's budget.
    rows = []
    sync_async = (["--mode", "sync"], ["--mode", "async", "--transport", "p2p", "--reduction", "tree"])
    cases = [(64, (4, 4, 4), 32, "0.004", "10", "", [], sync_async)]
    if full:
        cases += [(1024, (16, 8, 8), 50, "0.006", "5", "", [], sync_async[:1]),
                  (1024, (16, 8, 8), 50, "0.06", "2", " paper's cores", ["--cfg", "smpi/host-speed:25Gf"], sync_async)]
    for p, dims, n, limit, every, tag, sim, modes in cases:
        middle = dims[0] // 2 + dims[0] * (dims[1] // 2 + dims[1] * (dims[2] // 2))
        size = "" if n == 32 else f" {n}^3"
        for mode in modes:
            for slow in ([], ["--slow-rank", str(middle), "--slow-factor", "2"]):
                label = f"jacobi {mode[1]} P={p}{size}{tag}" + (f" rank {middle} slowed 2x" if slow else "")
                rows.append((label, p, ["jacobi", *mode, "--local", str(n), "--dims", "x".join(map(str, dims)),
                                        "--tol", "1e-30", "--time-limit", limit, "--check-every", every, *slow], sim))
    out.append(("jacobi-slow-core", "Bethune et al., 2011, section 6.1", rows))
    # Aditya et al., 2019, Figures 8 and 12: sync against weakly synchronous under jitter; weak
    # scaling at 16^3 points per rank, strong scaling of a 96^3 grid. One rank a node, as the paper
    # ran (one MPI process and 12 OpenMP threads a node; section 6.1): every halo message crosses the
    # network. (With 16 ranks a node the bounded runs also cost SimGrid's solver 8-20 times the host
    # time of the synchronous ones: 99 s against 10 s at 125 ranks, over 30 min at 512; with one rank
    # a node 13 s at 125 ranks and 103 s at 512, docs/results/simulated-cluster.md.)
    # Both modes at one step, given with --dt (about the bounded default at L = 10, stable up to
    # 128^3); a synchronous run's own default step is larger.
    pde_modes = (["--mode", "sync", "--dt", "0.0005"], ["--mode", "bounded", "--transport", "p2p", "--dt", "0.0005"])
    pde_node = ["--cores", "1"]
    rows = []
    for p in ([64, 216, 512] if full else [64]):
        for mode in pde_modes:
            rows.append((f"pde {mode[1]} P={p} jitter", p,
                         ["pde", "--problem", "burgers3d", "--local", "16", "--steps", "100", *mode, "--noise", "jitter"],
                         pde_node))
    out.append(("pde-jitter", "Aditya et al., 2019, Figures 8, 9 and 12 (weak)", rows))
    if full:
        rows = []
        for p in (64, 216, 512):
            for mode in pde_modes:
                rows.append((f"pde {mode[1]} P={p} 96^3 jitter", p,
                             ["pde", "--problem", "burgers3d", "--global", "96", "--steps", "100", *mode,
                              "--noise", "jitter"], pde_node))
        out.append(("pde-strong", "Aditya et al., 2019, Figure 8 (strong)", rows))
        # The same two studies without noise: the paper's speed-ups came from its machine's own noise,
        # none injected; on the model's ranks of equal speed there is nothing for the bound to hide
        # but the waits of the exchange itself.
        rows = []
        for p in (64, 216, 512):
            for mode in pde_modes:
                rows.append((f"pde {mode[1]} P={p}", p,
                             ["pde", "--problem", "burgers3d", "--local", "16", "--steps", "100", *mode], pde_node))
        out.append(("pde-no-noise", "Aditya et al., 2019, Figure 12 (weak), no noise", rows))
        rows = []
        for p in (64, 216, 512):
            for mode in pde_modes:
                rows.append((f"pde {mode[1]} P={p} 96^3", p,
                             ["pde", "--problem", "burgers3d", "--global", "96", "--steps", "100", *mode], pde_node))
        out.append(("pde-strong-no-noise", "Aditya et al., 2019, Figure 8 (strong), no noise", rows))
        # The speed-up as a function of desync's jitter (a free parameter: the paper injected none):
        # probability p of a pause of f times the step, after each step, at 64 ranks (16^3 each).
        rows = []
        for prob in ("0", "0.02", "0.05", "0.1", "0.2"):
            for factor in (("1",) if prob == "0" else ("1", "2", "4")):
                noise = [] if prob == "0" else ["--noise", "jitter", "--jitter-probability", prob,
                                                "--jitter-factor", factor]
                for mode in pde_modes:
                    rows.append((f"pde {mode[1]} P=64 jitter p={prob} f={factor}", 64,
                                 ["pde", "--problem", "burgers3d", "--local", "16", "--steps", "100", *mode, *noise],
                                 pde_node))
        out.append(("pde-jitter-sweep", "Aditya et al., 2019, section 6.3 (the noise as a parameter)", rows))
        # Their Figure 10: the weakly-synchronous solution's mean error in u1 against the synchronous
        # one (--paired: the synchronous run at the same step beside it), strong scaling of a 48^3
        # grid, with the delays that desync's jitter causes (the moments of Equation 3).
        rows = [(f"pde bounded P={p} 48^3 jitter paired", p,
                 ["pde", "--problem", "burgers3d", "--global", "48", "--steps", "100", *pde_modes[1], "--noise",
                  "jitter", "--paired"], pde_node) for p in (8, 27, 64, 216)]
        out.append(("pde-error", "Aditya et al., 2019, Figure 10 and Equation 3", rows))
    # Horikoshi et al., 2022, Table 3: time per iteration as ranks grow, over 25 iterations (50 until
    # 2026-11-26: the set's budget; the 1024-rank runs cost 250-350 s of host time each with 50).
    # The overlapped reductions use recursive doubling over point-to-point messages (--reduction
    # doubling): SMPI's MPI_Iallreduce is all-to-all, unusable beyond about 128 ranks.
    rows = []
    for p in ([16, 64, 128, 256, 512, 1024] if full else [16, 64]):
        for m in ("cg", "cg-cg", "pipecg", "groppcg"):
            rows.append((f"{m} P={p}", p, ["cg", "--method", m, "--local", "32", "--rtol", "1e-30",
                                             "--max-iters", "25", "--reduction", "doubling"], []))
    out.append(("cg-family", "Horikoshi et al., 2022, Table 3", rows))
    # Their Table 3 and Figures 13-14 are a strong scaling: one grid, so the rows per rank shrink
    # until the reductions rival the local work. Alg. 3 and 4 with blocking reductions against 3i
    # and 4i, whose non-blocking reductions advance at polls inside the matrix-vector product
    # (--progress test every 512 rows: progress control by the solver's own calls, as an MPI without
    # a progress thread needs). desync-sim turns off SimGrid's smpi/grow-injected-times, which would
    # make each failed MPI_Test sleep longer than the one before (one counter for all simulated
    # ranks), so that a poll costs the same 10 ns every time (docs/simulation.md).
    rows = []
    progress = ["--reduction", "doubling", "--progress", "test", "--test-interval", "512"]
    for p in ([64, 128, 256, 512, 1024] if full else [64, 256]):
        for label, m, extra in (("cg", "cg", []), ("cg-cg", "cg-cg", []),
                                ("pipecg (Alg. 3)", "pipecg", ["--reduction", "blocking"]),
                                ("pipecg progress (Alg. 3i)", "pipecg", progress),
                                ("groppcg (Alg. 4)", "groppcg", ["--reduction", "blocking"]),
                                ("groppcg progress (Alg. 4i)", "groppcg", progress)):
            rows.append((f"{label} P={p} 128^3", p, ["cg", "--method", m, "--global", "128", "--rtol", "1e-30",
                                                     "--max-iters", "25", *extra], []))
    out.append(("cg-strong", "Horikoshi et al., 2022, Table 3 and Figures 13-14 (strong)", rows))
    # Hoefler et al., 2007, Figure 4: the halo exchange overlapped with the interior rows of the
    # matrix-vector product against one completed before them (--engine blocking), CG on the same
    # 128^3 grid; the overlapped runs are cg-strong's cg rows (the default engine, p2p). SMPI has no
    # MPI_Ineighbor_alltoallv, so the neighbour-collective engine runs only for real.
    rows = [(f"cg engine blocking P={p} 128^3", p, ["cg", "--method", "cg", "--global", "128", "--rtol", "1e-30",
                                                    "--max-iters", "25", "--engine", "blocking"], [])
            for p in ([64, 128, 256, 512, 1024] if full else [64, 256])]
    out.append(("cg-overlap", "Hoefler et al., 2007, Figure 4 (blocking exchange; overlapped: cg-strong)", rows))
    # The same with the paper's preconditioner, IC(0) localised by block Jacobi: Gropp's second
    # reduction hides behind it, and with --progress test the triangular solves poll too.
    if full:
        rows = [(label.replace(" P=", " ic0 P="), p, [*argv, "--pc", "bjacobi-ic0"], extra)
                for label, p, argv, extra in rows if p >= 128]
        out.append(("cg-strong-ic0", "Horikoshi et al., 2022, Table 3 (IC(0) preconditioner)", rows))
    # Yamazaki et al., 2019, Table 3a (weak scaling, 32^2 points per subdomain), 3b (strong scaling of
    # a 256^2 grid) and Table 4 (every rank iterates for a fixed time, here 2 ms simulated, without
    # termination detection).
    schwarz_modes = (["--mode", "sync"], ["--mode", "async", "--transport", "p2p"])
    rows = []
    for p in ([64, 256] if full else [64]):
        for mode in schwarz_modes:
            rows.append((f"schwarz {mode[1]} P={p}", p, ["schwarz", *mode, "--local", "32"], []))
    out.append(("schwarz-weak", "Yamazaki et al., 2019, Table 3", rows))
    if full:
        rows = []
        for p in (64, 256):
            for mode in schwarz_modes:
                rows.append((f"schwarz {mode[1]} P={p} 256^2", p, ["schwarz", *mode, "--global", "256"], []))
        out.append(("schwarz-strong", "Yamazaki et al., 2019, Table 3b", rows))
        # Table 4 as the paper ran it: no convergence test and no termination detection
        # (--termination none), each rank iterating for the fixed time; beside it the same time with
        # the tests on (sync's allreduce every iteration, async's tree; the tolerance, 1e-7, is not
        # reached in 2 ms).
        rows = []
        for p in (64, 256):
            for mode in schwarz_modes:
                for tag, term in (("", ["--termination", "none"]), (" tests on", ["--max-iters", "100000"])):
                    rows.append((f"schwarz {mode[1]} P={p} 2 ms{tag}", p,
                                 ["schwarz", *mode, "--local", "32", "--time-limit", "0.002", *term], []))
                # and with the jitter of the schwarz-noise study below (their "hardware noises")
                rows.append((f"schwarz {mode[1]} P={p} 2 ms jitter", p,
                             ["schwarz", *mode, "--local", "32", "--time-limit", "0.002", "--termination", "none",
                              "--noise", "jitter"], []))
        out.append(("schwarz-timer", "Yamazaki et al., 2019, Table 4", rows))
        # Their section 5 credits asynchrony's gain to processes whose solves take longer at some
        # iterations ("hardware noises"), which the synchronous iteration waits for at every exchange
        # and convergence vote; the model's ranks otherwise run at equal, steady speeds. The weak
        # scaling again with desync's jitter (10 % chance per iteration of a pause twice the
        # iteration's own time, as in the PDE study).
        rows = []
        for p in (64, 256):
            for mode in schwarz_modes:
                rows.append((f"schwarz {mode[1]} P={p} jitter", p,
                             ["schwarz", *mode, "--local", "32", "--noise", "jitter"], []))
        out.append(("schwarz-noise", "Yamazaki et al., 2019, Table 3 and section 5 (noise)", rows))
    # Two-level Schwarz (docs/benchmarks.md, "Two-level Schwarz"): weak scaling at COARSE_LOCAL^2
    # points per subdomain, one level against the Nicolaides and GDSW coarse spaces, sync and async,
    # classical Schwarz (--alpha inf): with the default --alpha auto (optimized Schwarz's Robin
    # condition) the two-level iteration diverges (Nicolaides; GDSW async) at 4-64 ranks, and one level
    # runs beside it with --alpha auto for reference ("none auto"). --coarse-ranks 1: A0 is factored
    # on rank 0 alone by SuiteSparse (the SMPI build has no MUMPS; the default keeps a dense A0 on
    # every rank, too much memory for 1024 simulated ranks in one process). Runs that would cost hours of
    # host time are capped (COARSE_CAPS, --max-iters: reported as not converged) or not run (0).
    if full:
        rows = []
        for p in COARSE_RANKS:
            for coarse, alpha in (("none", "inf"), ("nicolaides", "inf"), ("gdsw", "inf"), ("none", "auto")):
                for mode in schwarz_modes:
                    name = coarse if alpha == "inf" else f"{coarse} auto"
                    cap = COARSE_CAPS.get((p, name, mode[1]))
                    if cap == 0:
                        continue  # not run: beyond the set's budget
                    rows.append((f"schwarz {mode[1]} {name} P={p}", p,
                                 ["schwarz", *mode, "--local", str(COARSE_LOCAL), "--alpha", alpha, "--coarse", coarse,
                                  *([] if coarse == "none" else ["--coarse-ranks", "1"]),
                                  *(NEVER_WAIT if coarse != "none" and mode[1] == "async" else []),
                                  *(["--max-iters", str(cap)] if cap else [])], coarse_sim(p, coarse, mode[1])))
        out.append(("coarse-weak", "two-level Schwarz, weak scaling", rows))
        # The GDSW runs again with desync's jitter (as schwarz-noise) at the larger counts.
        rows = []
        for p in COARSE_NOISE_RANKS:
            for mode in schwarz_modes:
                if COARSE_CAPS.get((p, "gdsw", mode[1])) == 0:
                    continue  # not run, as without noise
                rows.append((f"schwarz {mode[1]} gdsw P={p} jitter", p,
                             ["schwarz", *mode, "--local", str(COARSE_LOCAL), "--alpha", "inf", "--coarse", "gdsw",
                              "--coarse-ranks", "1", "--noise", "jitter", *(NEVER_WAIT if mode[1] == "async" else [])],
                             coarse_sim(p, "gdsw", mode[1])))
        # The synchronous GDSW run again with SMPI's default (linear) MPI_Reduce: what that model
        # choice (coarse_sim) would make of its time.
        rows.append(("schwarz sync gdsw P=256 linear reduce", 256,
                     ["schwarz", "--mode", "sync", "--local", str(COARSE_LOCAL), "--alpha", "inf", "--coarse", "gdsw",
                      "--coarse-ranks", "1"], ["--cfg", "maxmin/precision:1e-4"]))
        # The asynchronous GDSW run again on a flat tree (--coarse-fan-in P - 1: rank 0 takes every
        # rank's sum and sends every rank its correction): what the tree of the default fan-in saves.
        # The same with fan-in 2, 4 and 16 (the default 8 is the study coarse-weak's run).
        for k, name in ((255, "flat tree"), (2, "fan-in 2"), (4, "fan-in 4"), (16, "fan-in 16")):
            rows.append((f"schwarz async gdsw P=256 {name}", 256,
                         ["schwarz", "--mode", "async", "--local", str(COARSE_LOCAL), "--alpha", "inf", "--coarse",
                          "gdsw", "--coarse-ranks", "1", "--coarse-fan-in", str(k), *NEVER_WAIT],
                         coarse_sim(256, "gdsw", "async")))
        # Fan-in 16, the fastest at 256 ranks, again at 1024.
        rows.append(("schwarz async gdsw P=1024 fan-in 16", 1024,
                     ["schwarz", "--mode", "async", "--local", str(COARSE_LOCAL), "--alpha", "inf", "--coarse", "gdsw",
                      "--coarse-ranks", "1", "--coarse-fan-in", "16", *NEVER_WAIT], coarse_sim(1024, "gdsw", "async")))
        # The asynchronous GDSW run with --coarse-reuse r: at most r local solves on one coarse
        # solution, then a rank holds its updates until the next arrives; what bounding them does to
        # the counts and the time. r = 1 is not run at 1024 ranks: a held rank polls in steps of at
        # most 1 us of simulated time (core::PollBackoff), so at 64 ranks it took 60 s of host time
        # against 9 without --coarse-reuse, and at 1024 it would take hours. Longer polls are no way
        # out: pauses doubling up to 2 / 8 us halved the host time at 64 ranks but made the run
        # 4.26 / 6.81 ms instead of 3.61 (each level of the tree notices a sum or a correction late).
        for r, counts in ((8, COARSE_RANKS), (1, COARSE_RANKS[:2])):
            for p in counts:
                rows.append((f"schwarz async gdsw P={p} reuse {r}", p,
                             ["schwarz", "--mode", "async", "--local", str(COARSE_LOCAL), "--alpha", "inf", "--coarse",
                              "gdsw", "--coarse-ranks", "1", "--coarse-reuse", str(r)], coarse_sim(p, "gdsw", "async")))
        out.append(("coarse-noise", "two-level Schwarz under jitter", rows))
    return out


# The asynchronous two-level runs the committed records hold were made when a rank never waited for
# a coarse correction (--coarse-reuse 0, then the default; now 1): the studies name it, so that
# they rerun what their records measured.
NEVER_WAIT = ["--coarse-reuse", "0"]


def coarse_sim(ranks, coarse, mode):
    """desync-sim arguments of a two-level run.

    From 256 ranks on, SimGrid 3.32's max-min solver aborts in the coarse set-up ("Cannot saturate
    more a constraint that has no active element": a remainder of 1.07e-5 against its precision 1e-5
    after a constraint of usage 1.07e6, rank 0 gathering A0's contributions), so those runs compare
    with a coarser precision, as its message advises.

    The synchronous runs reduce along a binomial tree: SMPI 3.32's default MPI_Reduce is linear
    (every rank sends its whole buffer to the root; SimGrid calls its default selector naive, not
    for performance evaluations), so the coarse correction's reduction of the n coarse values would
    cost rank 0 P * n values per iteration, where MPI libraries reduce along a tree (the study
    coarse-noise keeps one run with the default to show the difference). The asynchronous runs make no MPI_Reduce: the setting would not change them (their
    simulated time at 64 ranks is bitwise the same with it), and they run without it."""
    args = ["--cfg", "maxmin/precision:1e-4"] if ranks >= 256 and coarse != "none" else []
    if coarse != "none" and mode == "sync":
        args += ["--cfg", "smpi/reduce:binomial"]
    return args


# The two-level studies' size and budget: points per subdomain side, rank counts, and the runs capped
# by --max-iters (0: not run), each measured before it was set (docs/benchmarks.md says which).
COARSE_LOCAL = 16
COARSE_RANKS = (64, 256, 1024)
COARSE_NOISE_RANKS = (256, 1024)
# On the 2-core host under load: classical one level took 1204 iterations and 113 s of host time at 64
# ranks, about 0.1 s per iteration there and 16 times more at 1024, hours beyond 64 ranks; it runs at
# 64 only, one level's growth beyond that is the --alpha auto reference's. Nicolaides runs at 64 only.
COARSE_CAPS = {(p, c, m): 0 for p in (256, 1024) for c in ("none", "nicolaides") for m in ("sync", "async")}


def run(args, ranks, argv, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env = child_env()
        env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "python", "src") + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-m", "desync_tools.sim", "run", *PLATFORM, "--np", str(ranks), "--costs", args.costs,
               *args.sim_args, *extra, "--", args.desync_smpi, *argv, "--quiet", "--json", out]
        t0 = time.monotonic()
        # In a session of its own: at --timeout the whole group goes (smpirun and the simulation
        # under desync-sim), and the run is reported as not finished instead of ending the set.
        with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) as p:
            try:
                stdout, stderr = p.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                return {"error": f"not finished: stopped after {args.timeout} s of host time (--timeout)",
                        "host_wall": time.monotonic() - t0, "command": shlex.join(cmd)}
        wall = time.monotonic() - t0
        if p.returncode not in (0, 1) or not os.path.exists(out):
            said = [ln for ln in (stdout + stderr).splitlines()
                    if "desync: error" in ln or "Segmentation fault" in ln or "Execution failed" in ln]
            return {"error": said[0].strip() if said else f"exit status {p.returncode}", "host_wall": wall,
                    "command": shlex.join(cmd)}
        with open(out) as f:
            rec = json.load(f)
        row = {"time": rec["wall_time"], "iterations": rec["iterations"], "converged": rec["converged"],
               "true_residual": rec["true_residual"],
               "time_split": rec["time_split"], "host_wall": wall, "command": shlex.join(cmd)}
        if "delay" in rec["details"]:
            row["delay"] = rec["details"]["delay"]
        if "coarse_solves" in rec["details"]:  # two-level: coarse cycles (async: rank 0's solves) and their delays
            d = rec["details"]
            row["coarse"] = {k: d[k] for k in ("coarse_solves", "coarse_delay", "coarse_fan_in", "coarse_tree_height",
                                               "coarse_held") if k in d}
        if rec.get("solver") == "pde":
            # the moments of Figure 6, the error against the synchronous run (--paired), and Equation
            # 3's delay term (pde_bench.boundary_term)
            d = rec["details"]
            row["pde"] = {"dt": d["dt"], "dx": d["dx"], "steps": d["steps"], "moments": d["moments"],
                          "paired": d.get("paired"), "boundary_term": boundary_term(rec)}
        return row


def per_iteration(r):
    """Simulated seconds per iteration of a result row (the mean count over ranks)."""
    return r["time"] / r["iterations"]["mean"] if r["iterations"]["mean"] else float("nan")


def markdown(doc):
    """The tables of a --json file, in Markdown."""
    out, study = [], None
    for r in doc["rows"]:
        if r["study"] != study:
            study = r["study"]
            out += ["", f"**{study}**", "",
                    "| run | ranks | simulated ms | ms per iteration | iterations min / mean / max | true residual "
                    "| delay mean / max | host s |", "|---|---|---|---|---|---|---|---|"]
        if "error" in r:
            out.append(f"| {r['label']} | {r['ranks']} | error: {r['error']} | | | | | {r['host_wall']:.0f} |")
            continue
        it, d = r["iterations"], r.get("delay")
        delay = f"{d['mean']:.2f} / {d['max']:g}" if d else ""
        out.append(f"| {r['label']} | {r['ranks']} | {1e3 * r['time']:.3f} | {1e3 * per_iteration(r):.4f} | "
                   f"{it['min']:.0f} / {it['mean']:.1f} / "
                   f"{it['max']:.0f} | {r['true_residual']:.3g} | {delay} | {r['host_wall']:.0f} |")
    return "\n".join(out)


def summaries(doc):
    """Derived tables of a --json file: the relaxed variant against the synchronous one at each count,
    and the CG methods per iteration as ratios to cg."""
    done = [r for r in doc["rows"] if "error" not in r]
    out = []
    pairs = []
    for r in done:
        if " sync " not in r["label"]:
            continue
        for word in ("async", "bounded"):
            other = next((o for o in done if o["study"] == r["study"]
                          and o["label"] == r["label"].replace(" sync ", f" {word} ")), None)
            if other:
                pairs.append((r, other))
    if pairs:
        out += ["", "**relaxed against synchronous** (ratios < 1: the relaxed variant is faster)", "",
                "| study | synchronous run | ranks | sync ms | relaxed ms | time ratio | per-iteration ratio |",
                "|---|---|---|---|---|---|---|"]
        for a, b in pairs:
            out.append(f"| {a['study']} | {a['label']} | {a['ranks']} | {1e3 * a['time']:.3f} | {1e3 * b['time']:.3f} | "
                       f"{b['time'] / a['time']:.3f} | {per_iteration(b) / per_iteration(a):.3f} |")
    for study in dict.fromkeys(r["study"] for r in done if r["study"].startswith("cg")):
        rows = [r for r in done if r["study"] == study]
        method = lambda r: r["label"].split(" P=")[0].replace(" ic0", "")  # noqa: E731
        names = list(dict.fromkeys(method(r) for r in rows))
        if "cg" not in names:
            continue
        others = [n for n in names if n != "cg"]
        gains = [(a, b) for a, b in (("pipecg (Alg. 3)", "pipecg progress (Alg. 3i)"),
                                     ("groppcg (Alg. 4)", "groppcg progress (Alg. 4i)")) if a in names and b in names]
        out += ["", f"**{study}: ms per iteration of cg, the others as ratios to cg**", "",
                "| ranks | cg ms / it | " + " | ".join(others) + "".join(f" | {a.split()[-1][:-1]} → {b.split()[-1][:-1]}"
                                                                  for a, b in gains) + " |",
                "|---" * (2 + len(others) + len(gains)) + "|"]
        for ranks in sorted({r["ranks"] for r in rows}):
            at = {method(r): r for r in rows if r["ranks"] == ranks}
            if "cg" not in at:
                continue
            base = per_iteration(at["cg"])
            cells = [f"{per_iteration(at[n]) / base:.3f}" if n in at else "" for n in others]
            cells += [f"{per_iteration(at[a]) / per_iteration(at[b]):.3f}" if a in at and b in at else "" for a, b in gains]
            out.append(f"| {ranks} | {1e3 * base:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--desync-smpi", default="build/smpi/desync")
    ap.add_argument("--costs")
    ap.add_argument("--set", choices=["quick", "full"], default="quick")
    ap.add_argument("--only", nargs="*", help="studies to run (default: all of the set)")
    ap.add_argument("--ranks", nargs="*", type=int, help="rank counts to run (default: all of the set's)")
    ap.add_argument("--match", help="only the runs whose label contains this text")
    ap.add_argument("--sim-args", default="--cfg smpi/test:1e-8", help="further desync-sim run arguments")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds of host time per simulation")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="simulations run side by side, one core each (default: this machine's cores)")
    ap.add_argument("--json")
    ap.add_argument("--markdown", metavar="JSON", help="print the tables of an earlier --json file in Markdown; run nothing")
    args = ap.parse_args()
    if args.markdown:
        with open(args.markdown) as f:
            doc = json.load(f)
        print(markdown(doc))
        print(summaries(doc))
        return
    if not args.costs:
        ap.error("--costs is required (the cost model, bench/simgrid/calibrate.py)")
    args.sim_args = shlex.split(args.sim_args)
    selected = [(name, paper, [row for row in rows if (not args.ranks or row[1] in args.ranks)
                               and (not args.match or args.match in row[0])])
                for name, paper, rows in studies(args.set == "full") if not args.only or name in args.only]
    jobs = [(name, row) for name, _, rows in selected for row in rows]
    # A run that two studies list with the same arguments runs once. (The 216-rank PDE problem, 16^3
    # per rank in the weak study and 96^3 over 216 ranks in the strong one, is given with different
    # arguments and runs twice; the two records agree bit for bit, the simulation being deterministic.)
    key = lambda row: (row[1], tuple(row[2]), tuple(row[3]))  # noqa: E731
    unique = {}
    for name, row in jobs:
        unique.setdefault(key(row), (name, row))
    # Each simulation runs on one core (SimGrid's ranks are cooperative threads of one process), so
    # --jobs simulations run side by side; the tables are printed in the set's order as they complete.
    results = {}
    t_start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # The largest first, so that the last to finish are short ones.
        order = sorted(unique.items(), key=lambda kv: -kv[1][1][1])
        futures = {pool.submit(run, args, row[1], row[2], row[3]): k for k, (name, row) in order}
        for future in concurrent.futures.as_completed(futures):
            k = futures[future]
            r = future.result()
            for name, row in jobs:
                if key(row) == k:
                    results[(name, row[0])] = dict(r, study=name, label=row[0], ranks=row[1])
            label = unique[k][1][0]
            if args.json:  # after every run: a long set interrupted keeps what it measured
                rows = [results[(n, row[0])] for n, row in jobs if (n, row[0]) in results]
                write_json(args.json, {"benchmark": "simgrid reproduce", "set": args.set, "platform": PLATFORM,
                                       "costs": args.costs, "jobs": args.jobs, "rows": rows,
                                       "host_wall_total": time.monotonic() - t_start})
            print(f"  done: {label} ({r['host_wall']:.1f} s)", file=sys.stderr, flush=True)
    for name, paper, rows in selected:
        print(f"\n{name} ({paper})", flush=True)
        print(f"  {'run':<36} {'simulated s':>12} {'iterations min/mean/max':>24} {'host wall s':>11}")
        for label, _, _, _ in rows:
            r = results[(name, label)]
            if "error" in r:
                print(f"  {label:<36} error: {r['error']}", flush=True)
                continue
            it = r["iterations"]
            delay = f"   delay mean {r['delay']['mean']:.2f} max {r['delay']['max']}" if "delay" in r else ""
            print(f"  {label:<36} {r['time']:>12.6f} {it['min']:>8.0f}/{it['mean']:>7.1f}/{it['max']:<7.0f} "
                  f"{r['host_wall']:>11.1f}  residual {r['true_residual']:.3e}{delay}", flush=True)
    print(f"\nhost wall time of the set: {time.monotonic() - t_start:.0f} s ({args.jobs} at a time)")

if __name__ == "__main__":
    main()
