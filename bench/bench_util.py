"""desync's benchmark scripts import the experiment runner's session helpers from here
(desync_tools.runner.session: interleaved repetitions, launched runs' environment, machine and load
lines), so that they run as `python3 bench/<script>.py ...` from anywhere without installing the
Python package: python/src goes first on sys.path.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))

from desync_tools.runner.session import *  # noqa: E402,F401,F403
from desync_tools.runner.session import PYTHON_SRC  # noqa: E402,F401


def local_residuals(rec):
    """The spread of the ranks' own residual histories (Yamazaki et al., 2019, Figure 16): the largest
    and smallest final local residual, and the largest rise of a rank's residual over the lowest it had
    reached before (1 when every history only falls); None for records without per-rank histories."""
    hist = [r["residual_history"]["residual"] for r in rec.get("per_rank", [])
            if r.get("residual_history", {}).get("residual")]
    if not hist:
        return None
    rise = 1.0
    for h in hist:
        low = h[0]
        for x in h[1:]:
            if low > 0:
                rise = max(rise, x / low)
            low = min(low, x)
    return {"final_max": max(h[-1] for h in hist), "final_min": min(h[-1] for h in hist), "largest_rise": rise,
            "tolerance": rec.get("tolerance")}
