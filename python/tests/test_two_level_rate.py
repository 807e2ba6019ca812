"""bench/two_level_rate.py: the SciPy transcription of desync's synchronous two-level iteration is the
iteration desync runs (the same coarse space size and the same count), and its spectral radius is the
one power iteration finds."""
import numpy as np

from conftest import mpirun


def test_transcription_counts_equal_desyncs(bench_script, desync, tmp_path):
    tlr = bench_script("bench/two_level_rate.py")

    class Args:
        local, overlap, tol, timeout = 8, 1, 1e-6, 120
    Args.desync, Args.mpirun = desync, mpirun()
    for q in (2, 3):
        row = tlr.rate(q, Args.local, Args.overlap, Args.tol)
        ran = tlr.desync_count(Args, q * q)
        assert ran["converged"]
        assert ran["coarse_functions"] == row["coarse_functions"]
        assert ran["iterations"] == row["transcribed"], (q, ran, row)
        assert 0 < row["rho"] < 1 and row["predicted"] >= row["transcribed"]


def test_spectral_radius_matches_power_iteration(bench_script):
    tlr = bench_script("bench/two_level_rate.py")
    A = tlr.laplacian(24)
    own = tlr.owners(3, 8)
    phi = tlr.gdsw_basis(A, own)
    # every interface row has exactly one function equal to 1 there: GDSW's functions partition the interface
    iface = np.abs(phi).max(axis=1) == 1.0
    assert np.allclose(phi[iface].sum(axis=1), 1.0)
    a0 = phi.T @ (A @ phi)
    m = tlr.ras(A, own, 1)
    e = np.random.default_rng(1).standard_normal(A.shape[0])
    for _ in range(400):
        e = e - phi @ np.linalg.solve(a0, phi.T @ (A @ e))
        e = e - m(A @ e)
        norm = np.linalg.norm(e)
        e /= norm
    assert abs(norm - tlr.rate(3, 8, 1, 1e-6)["rho"]) < 1e-3
