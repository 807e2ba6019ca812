"""The type stubs (desync/__init__.pyi) are what desync._stubs writes from the command line's options
now: a new or renamed option must regenerate them (python -m desync._stubs python/src/desync/__init__.pyi)."""
import ast
import os

import desync
from conftest import agree
from desync import _stubs


def test_stubs_match_the_options():
    path = os.path.join(os.path.dirname(desync.__file__), "__init__.pyi")
    with open(path) as f:
        committed = f.read()
    ast.parse(committed)
    agree(committed == _stubs.render(desync.options()),
          "desync/__init__.pyi is stale: run python -m desync._stubs python/src/desync/__init__.pyi")


def test_every_option_is_in_the_stubs():
    with open(os.path.join(os.path.dirname(desync.__file__), "__init__.pyi")) as f:
        text = f.read()
    for solver in desync.options()["solvers"]:
        for option in solver["options"]:
            for name in option["names"]:
                agree(f"    {_stubs.python_name(name)}: " in text, f"{solver['name']} --{name} missing")
