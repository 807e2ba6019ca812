"""bench/pde_bench.py's jitter model (issue 13's yardstick for the weakly-synchronous stepper)."""
import math


def test_jitter_model_without_noise_or_without_delay_is_one(bench_script):
    pb = bench_script("bench/pde_bench.py")
    assert pb.model_ratio(0.0, 2.0, 200, 10) == 1.0
    assert pb.model_ratio(0.0, 2.0, 200, 10, work=0.6) == 1.0
    # A bound of 0 is the synchronous algorithm, pause for pause.
    assert pb.model_ratio(0.1, 2.0, 200, 0) == 1.0
    assert pb.model_ratio(0.1, 2.0, 200, 1) < 1.0


def test_jitter_model_unbounded_matches_the_expected_step_times(bench_script):
    # 2 ranks, no bound in reach (L >= n steps): the weakly-synchronous ranks never wait, and the run
    # ends with the later of two sums of n steps X = 1 + w + 2 B(0.1) (mean 1.2 + w, deviation 0.6):
    # E[max(S1, S2)] = n (1.2 + w) + 0.6 sqrt(n / pi). The synchronous ranks wait every step for the
    # later one: n E[max(X1, X2)] = n (1 + w + 2 * 0.19).
    pb = bench_script("bench/pde_bench.py")
    n = 2000
    for w in (0.0, 0.75):
        expected = (n * (1.2 + w) + 0.6 * math.sqrt(n / math.pi)) / (n * (1.38 + w))
        assert math.isclose(pb.model_ratio(0.1, 2.0, n, n, trials=20, work=w), expected, abs_tol=0.003)


def test_jitter_model_with_the_steps_work_saves_less(bench_script):
    # The bound L = 10 makes the ratio a little higher than unbounded (0.882 against 0.870, the
    # issue's "about 0.87"); work every step that the pauses do not scale with dilutes the saving.
    pb = bench_script("bench/pde_bench.py")
    r0 = pb.model_ratio(0.1, 2.0, 1000, 10)
    assert 0.875 < r0 < 0.89
    r = [pb.model_ratio(0.1, 2.0, 1000, 10, work=w) for w in (0.25, 0.5, 0.75, 1.0)]
    assert r0 < r[0] < r[1] < r[2] < r[3] < 1.0
    assert math.isclose(r[2], 0.921, abs_tol=0.005)


def test_jitter_model_with_step_basis_does_not_depend_on_the_work(bench_script):
    # desync pde --jitter-basis step pauses twice the whole step (1 + w), not twice its compute: every
    # duration scales by 1 + w, so the ratio is the model whatever w (same draws, same seed).
    pb = bench_script("bench/pde_bench.py")
    r0 = pb.model_ratio(0.1, 2.0, 1000, 10)
    for w in (0.5, 0.75):
        assert math.isclose(pb.model_ratio(0.1, 2.0, 1000, 10, work=w, basis="step"), r0, rel_tol=1e-12)
    assert pb.parse_noise("--noise jitter --jitter-basis step") == (0.1, 2.0, "step")
    assert pb.parse_noise("--noise jitter --jitter-factor 3") == (0.1, 3.0, "step")
    assert pb.parse_noise("--noise jitter --jitter-basis compute") == (0.1, 2.0, "compute")
    assert pb.parse_noise("--slow-rank 1") is None


def test_boundary_term_is_equation_3s_in_1d_and_weighs_faces_by_area_in_3d(bench_script):
    pb = bench_script("bench/pde_bench.py")
    # 1D: P = 4 ranks of 64 points, two faces of one point each, every face <k> = 4.5, <k^2> = 28.5:
    # Equation 3's (P/N)(<k^2> + <k>) = (4/256) * 33.
    face = {"delay_mean_xm": 4.5, "delay_sq_mean_xm": 28.5, "delay_mean_xp": 4.5, "delay_sq_mean_xp": 28.5}
    rec = {"unknowns": 256, "per_rank": [dict(face, local_size=[64, 1, 1]) for _ in range(4)]}
    assert math.isclose(pb.boundary_term(rec), 4 / 256 * 33)
    # 3D: 2 ranks of 12 x 24 x 24, only the x faces delayed (<k> = 1, <k^2> = 1): 2 ranks x 2 faces of
    # 576 points x 2, over 2 x 13824 points.
    per = {f"delay_mean_{f}": 0.0 for f in pb.FACES} | {f"delay_sq_mean_{f}": 0.0 for f in pb.FACES}
    per |= {"delay_mean_xm": 1.0, "delay_sq_mean_xm": 1.0, "delay_mean_xp": 1.0, "delay_sq_mean_xp": 1.0}
    rec = {"unknowns": 24 * 24 * 24, "per_rank": [dict(per, local_size=[12, 24, 24]) for _ in range(2)]}
    assert math.isclose(pb.boundary_term(rec), 2 * 2 * 576 * 2 / (2 * 13824))
