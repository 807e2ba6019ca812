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
