"""desync's own code on a simulated cluster: the SMPI build (DESYNC_SMPI, made by `make build-sim`)
run through desync-sim against the ordinary build (DESYNC) on this machine. Checks that the real
numerics run (the same iterations as the real run), that compute phases advance the simulated clock
by exactly the cost model's charge, that a simulated run is deterministic, that a slowed rank slows
a synchronous run, and that what SMPI cannot do is refused with one message."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, child_env, desync_path, mpirun

KINDS = ["jacobi.update", "jacobi.update_residual", "halo.element", "pde.at.element", "pde.burgers3d.update",
         "pde.advection_diffusion1d.update", "poisson3d.row", "csr.entry", "cg.cg.vector", "cg.cg-cg.vector",
         "cg.pipecg.vector", "cg.groppcg.vector", "pc.none", "pc.jacobi", "pc.bjacobi-ic0", "schwarz.solve",
         "schwarz.residual"]
COST = 2e-9  # seconds per unit, every kind

SMPI = os.environ.get("DESYNC_SMPI", os.path.join(REPO, "build", "smpi", "desync"))
pytestmark = pytest.mark.skipif(not (os.path.exists(SMPI) and shutil.which("smpirun")),
                                reason="no SMPI build of desync (make build-sim) or no smpirun")


@pytest.fixture(scope="module")
def costs(tmp_path_factory):
    path = tmp_path_factory.mktemp("costs") / "costs.json"
    path.write_text(json.dumps({"costs": {k: COST for k in KINDS}}))
    return str(path)


def simulate(tmp_path, costs, ranks, args, sim_args=(), name="r.json"):
    out = tmp_path / name
    env = child_env()
    env["PYTHONPATH"] = os.path.join(REPO, "python", "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "desync_tools.sim", "run", "--preset", "ib-edr", "--cores", "2", "--np", str(ranks),
           "--costs", costs, *sim_args, "--", SMPI, *args, "--quiet", "--json", str(out)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    record = json.loads(out.read_text()) if out.exists() else None
    return p, record


def with_and_without(tmp_path, costs, ranks, args, kind, per_unit):
    """The run on the simulated cluster twice: with the cost model `costs`, and with `kind` charged
    `per_unit` seconds besides: ((process, record) without, (process, record) with)."""
    with_kind = tmp_path / "costs-with.json"
    with_kind.write_text(json.dumps({"costs": {**{k: COST for k in KINDS}, kind: per_unit}}))
    return (simulate(tmp_path, costs, ranks, args, name="without.json"),
            simulate(tmp_path, str(with_kind), ranks, args, name="with.json"))


def real(tmp_path, ranks, args):
    out = tmp_path / "real.json"
    cmd = [mpirun(), "-np", str(ranks), desync_path(), *args, "--quiet", "--json", str(out)]
    env = child_env()
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")  # 4 ranks on this 2-core machine
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(out.read_text())


def test_simulated_sync_jacobi_iterates_as_the_real_run_and_charges_its_sweeps(tmp_path, costs):
    args = ["jacobi", "--mode", "sync", "--local", "10", "--check-every", "1"]
    p, sim = simulate(tmp_path, costs, 4, args)
    assert p.returncode == 0, p.stderr[-2000:]
    if os.path.exists(desync_path()):
        assert sim["iterations"] == real(tmp_path, 4, args)["iterations"]
    assert sim["converged"] and sim["true_residual"] <= 1e-4
    # Every sweep fuses the residual (--check-every 1): the compute time is the charge, exactly.
    sweeps = sim["iterations"]["max"] + 1  # the candidate of the last test is computed too
    expected = sweeps * 10 ** 3 * COST
    for rank in sim["per_rank"]:
        assert rank["time"]["compute"] == pytest.approx(expected, rel=0.02)
    assert sim["simulation"]["platform"]["preset"] == "ib-edr"
    assert sim["simulation"]["costs"]["jacobi.update_residual"] == COST
    assert sim["mpi_library"].startswith("SMPI")


def test_simulated_grid_of_nine_ranks_is_the_real_runs(tmp_path, costs):
    # 9 ranks in 2D: 3 x 3 on every MPI library. SimGrid 3.32's MPI_Dims_create gives 9 x 1, which
    # made the simulated run a strip decomposition (8 coarse functions and 453 iterations against
    # the real run's 28 and 53) before desync chose its grids itself.
    args = ["schwarz", "--mode", "sync", "--local", "8", "--coarse", "gdsw", "--alpha", "inf", "--tol", "1e-6"]
    p, sim = simulate(tmp_path, costs, 9, args)
    assert p.returncode == 0, p.stderr[-2000:]
    extended = sim["details"]["extended_rows"]
    assert (extended["min"], extended["max"]) == (8 * 8 + 2 * 8, 8 * 8 + 4 * 8)  # corners and the middle: a 3 x 3 grid
    if os.path.exists(desync_path()):
        r = real(tmp_path, 9, args)
        assert sim["details"]["coarse_functions"] == r["details"]["coarse_functions"]
        assert sim["iterations"] == r["iterations"]


def test_charges_below_a_microsecond_are_not_dropped(tmp_path, costs):
    # 4^3 points per rank: a sweep costs 64 x 2e-9 s = 0.13 us, below SMPI's smpi/cpu-threshold (1 us),
    # which smpi_execute would silently discard.
    args = ["jacobi", "--mode", "sync", "--local", "4", "--check-every", "1", "--max-iters", "50", "--tol", "1e-30"]
    p, sim = simulate(tmp_path, costs, 2, args)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    sweeps = sim["iterations"]["max"] + 1
    for rank in sim["per_rank"]:  # (+10 %: the initial and final residuals are a few sweeps more)
        assert rank["time"]["compute"] == pytest.approx(sweeps * 4 ** 3 * COST, rel=0.1)


def test_simulated_run_is_deterministic(tmp_path, costs):
    args = ["jacobi", "--mode", "async", "--transport", "p2p", "--local", "8"]
    _, a = simulate(tmp_path, costs, 4, args, name="a.json")
    _, b = simulate(tmp_path, costs, 4, args, name="b.json")
    assert a["wall_time"] == b["wall_time"]
    assert [r["iterations"] for r in a["per_rank"]] == [r["iterations"] for r in b["per_rank"]]


@pytest.mark.parametrize("sim_args", [[], ["--slow-rank", "2", "--slow-factor", "4"]], ids=["even", "slowed"])
def test_asynchronous_run_with_tree_reduction_converges_and_ends_clean(tmp_path, costs, sim_args):
    # The asynchronous exchange and the tree reduction complete the receives SimGrid has written by
    # MPI_Wait rather than MPI_Test (request_ledger.hpp, test_receive), and the channels' sends by
    # MPI_Waitany beside such a receive (transport_p2p.cpp, reap_sends): every rank must still get
    # every message it waits for, or the run would hang or stop without converging. With a rank
    # slowed 4x its neighbours' send slots fill, and their sends complete by MPI_Test as well.
    args = ["jacobi", "--mode", "async", "--transport", "p2p", "--reduction", "tree", "--local", "8",
            "--tol", "1e-4"]
    p, sim = simulate(tmp_path, costs, 6, args, sim_args)
    assert p.returncode == 0, p.stderr[-2000:]
    assert sim["converged"] and sim["true_residual"] <= 1e-4
    assert sim["outstanding_requests"] == 0
    assert sim["iterations"]["min"] < sim["iterations"]["max"]  # the ranks iterated at their own pace


def test_asynchronous_schwarz_converges_and_ends_clean(tmp_path, costs):
    # Asynchronous optimized Schwarz over the same channels, with its termination detection.
    args = ["schwarz", "--mode", "async", "--transport", "p2p", "--local", "16", "--tol", "1e-6"]
    p, sim = simulate(tmp_path, costs, 4, args)
    assert p.returncode == 0, p.stderr[-2000:]
    assert sim["converged"] and sim["true_residual"] <= 1e-4
    assert sim["outstanding_requests"] == 0


def test_slow_rank_slows_the_synchronous_run(tmp_path, costs):
    args = ["jacobi", "--mode", "sync", "--local", "12", "--max-iters", "200", "--tol", "1e-30"]
    _, fast = simulate(tmp_path, costs, 4, args, name="fast.json")
    _, slow = simulate(tmp_path, costs, 4, args, ["--slow-rank", "1", "--slow-factor", "2"], name="slow.json")
    compute = fast["per_rank"][1]["time"]["compute"]
    assert slow["per_rank"][1]["time"]["compute"] == pytest.approx(2 * compute, rel=0.01)  # speed 1/2
    assert slow["per_rank"][0]["time"]["compute"] == pytest.approx(compute, rel=0.01)
    # Synchronous: every rank ends up at the slow rank's pace (less the waits it hid before).
    assert slow["wall_time"] - fast["wall_time"] > 0.5 * compute
    assert slow["simulation"]["rank_speed"][1] == 0.5


def test_slower_cores_scale_the_work_not_the_pauses(tmp_path, costs):
    # smpi/host-speed 4x the platform's: the calibrated seconds are a 4x faster core's, so the work
    # takes 4x longer; desync's own --slow-rank pauses (f - 1) x the work it measured, and a pause
    # is simulated time, so it stays equal to the (longer) work, not 4x that.
    args = ["jacobi", "--mode", "sync", "--local", "12", "--max-iters", "50", "--tol", "1e-30",
            "--slow-rank", "1", "--slow-factor", "2"]
    _, base = simulate(tmp_path, costs, 2, args, name="base.json")
    _, slow = simulate(tmp_path, costs, 2, args, ["--cfg", "smpi/host-speed:4Gf"], name="slow.json")
    for r in (base, slow):
        t = r["per_rank"][1]["time"]
        assert t["noise"] == pytest.approx(t["compute"], rel=0.05)
    assert slow["per_rank"][0]["time"]["compute"] == pytest.approx(4 * base["per_rank"][0]["time"]["compute"],
                                                                   rel=0.01)
    assert slow["simulation"]["host_speed_flops"] == 4e9


def test_pipelined_cg_with_recursive_doubling_converges_as_the_real_run(tmp_path, costs):
    # 5 simulated ranks: a rank outside the power of two folds in and gets the total back.
    args = ["cg", "--method", "pipecg", "--local", "8", "--rtol", "1e-8"]
    p, sim = simulate(tmp_path, costs, 5, [*args, "--reduction", "doubling"])
    assert p.returncode == 0, p.stderr[-2000:]
    assert sim["converged"] and sim["true_residual"] <= 1e-8 * 1.01
    assert sim["iterations"]["min"] == sim["iterations"]["max"]  # every rank got the same sums
    assert sim["options"]["reduction"] == "doubling" and sim["outstanding_requests"] == 0
    if os.path.exists(desync_path()):
        # Other summation orders than MPI_Iallreduce's: the same iteration count to within one.
        assert abs(sim["iterations"]["max"] - real(tmp_path, 5, args)["iterations"]["max"]) <= 1


@pytest.mark.parametrize("args, words", [
    (["jacobi", "--mode", "async", "--transport", "rma", "--local", "8"], "not available on a simulated cluster"),
    (["cg", "--engine", "neighbor", "--local", "8"], "neighbourhood collectives"),
    (["cg", "--progress", "thread", "--local", "8"], "second thread of a rank cannot call MPI"),
    (["jacobi", "--threads", "2", "--local", "8"], "--threads is not available on a simulated cluster"),
    (["pde", "--threads", "2", "--global", "16"], "--threads is not available on a simulated cluster"),
])
def test_what_smpi_cannot_do_is_refused(tmp_path, costs, args, words):
    p, record = simulate(tmp_path, costs, 2, args)
    assert p.returncode == 2, p.stderr[-2000:]
    assert words in p.stdout + p.stderr


def test_missing_cost_is_refused_before_any_work(tmp_path):
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"costs": {"jacobi.update": COST}}))
    p, record = simulate(tmp_path, str(path), 2, ["jacobi", "--local", "8"])
    assert p.returncode == 2
    assert "halo.element" in p.stdout + p.stderr and record is None


def test_halo_message_charges_each_message_at_both_ends_and_may_be_left_out(tmp_path, costs):
    # halo.message (optional): desync's work per message a channel sends or takes in. Synchronous
    # Jacobi on 2^3 points, 2 ranks of one neighbour each: an exchange is the sender's charge, the
    # link's latency and the receiver's charge, so each adds 2 x halo.message to every iteration's
    # halo time; a cost model without the kind (the module's) runs and charges nothing for it.
    args = ["jacobi", "--mode", "sync", "--local", "2", "--dims", "2x1x1", "--tol", "1e-300", "--max-iters", "2000",
            "--check-every", "100000"]
    per_message = 5e-7
    (p0, without), (p1, charged) = with_and_without(tmp_path, costs, 2, args, "halo.message", per_message)
    assert p0.returncode == 1 and p1.returncode == 1, (p0.stderr + p1.stderr)[-2000:]  # 1: --max-iters reached
    for a, b in zip(without["per_rank"], charged["per_rank"]):
        assert a["messages_sent"] == b["messages_sent"] == 2001 and b["messages_received"] == 2001
        grown = (b["time"]["halo"] - a["time"]["halo"]) / b["messages_sent"]
        assert grown == pytest.approx(2 * per_message, rel=0.02)


def test_halo_open_charges_each_exchange_opened(tmp_path, costs):
    # halo.open (optional): the host's time to open a plan exchange. Synchronous Schwarz opens three
    # (the initial true residual's, the main phase's, the final true residual's); each costs the
    # charge more, on both ranks alike, so the run is 3 charges longer.
    args = ["schwarz", "--mode", "sync", "--local", "16"]
    per_open = 1e-4
    (p0, without), (p1, charged) = with_and_without(tmp_path, costs, 2, args, "halo.open", per_open)
    assert p0.returncode == 0 and p1.returncode == 0, (p0.stderr + p1.stderr)[-2000:]
    assert without["iterations"] == charged["iterations"]
    for a, b in zip(without["per_rank"], charged["per_rank"]):
        assert a["exchange_opens"] == b["exchange_opens"] == 3
        assert (b["exchange_open_seconds"] - a["exchange_open_seconds"]) / 3 == pytest.approx(per_open, rel=0.02)
    assert charged["wall_time"] - without["wall_time"] == pytest.approx(3 * per_open, rel=0.05)


def test_fan_in_model_sees_a_channels_work_per_message(tmp_path, costs):
    # --coarse-fan-in auto measures what one more message costs the parent that takes them all: on
    # a simulated cluster, the messages' transfers overlap (rank 0 posts its receives ahead, as the
    # tree's channels do) and each message costs what a channel's taking it in is charged,
    # halo.message. So the per-message cost the record keeps is about that charge, with it and
    # without it: the transfers' latency is paid once, not once per message (a blocking receive
    # after another would pay it each time, about 2 us a message across the simulated links).
    args = ["schwarz", "--mode", "async", "--local", "6", "--alpha", "inf", "--coarse", "gdsw", "--coarse-ranks", "1",
            "--coarse-fan-in", "auto", "--tol", "1e-6", "--max-iters", "400"]
    charge = 4e-6
    (p0, without), (p1, charged) = with_and_without(tmp_path, costs, 9, args, "halo.message", charge)
    assert p0.returncode == 0 and p1.returncode == 0, (p0.stderr + p1.stderr)[-2000:]
    m0, m1 = without["details"]["coarse_fan_in_model"], charged["details"]["coarse_fan_in_model"]
    assert m0["latency"] > 0 and m0["per_message"] < 0.25 * charge
    assert m1["per_message"] == pytest.approx(charge + m0["per_message"], rel=0.05)
    assert 1 <= charged["details"]["coarse_fan_in"] <= 8


def test_fixed_point_sync_coarse_step_is_halo_time_not_the_sweeps(tmp_path, costs):
    """The synchronous fixed-point form corrects inside the update, after the local solves (a
    reduction, rank 0's coarse solve, a broadcast). That collective is halo time, as the Galerkin
    form's correction in the exchange is, and not part of the sweep that compute counts and a jitter
    pause is a multiple of: the local solves' time per iteration (schwarz's `solve`) matches
    one-level Schwarz's, and the halo time (`p2p`) takes the coarse step."""
    base = ["schwarz", "--mode", "sync", "--local", "16", "--alpha", "auto", "--tol", "1e-6"]
    p1, one = simulate(tmp_path, costs, 9, base, name="one.json")
    p2, fp = simulate(tmp_path, costs, 9, base + ["--coarse", "gdsw", "--coarse-ranks", "1", "--coarse-form",
                                                  "fixed-point"], name="fp.json")
    assert p1.returncode == 0 and p2.returncode == 0, (p1.stderr[-1000:], p2.stderr[-1000:])

    def per_iteration(record, part):
        return max(r["time"][part] / (r["iterations"] + 1) for r in record["per_rank"])

    assert per_iteration(fp, "solve") == pytest.approx(per_iteration(one, "solve"), rel=0.25)
    assert per_iteration(fp, "p2p") > 1.5 * per_iteration(one, "p2p")
