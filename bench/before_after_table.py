#!/usr/bin/env python3
"""The table of a bench/before_after.sh run: each figure of the old and the new build, round by round.

    python3 bench/before_after_table.py DIR      DIR: the run's results (TREE/build/bench/before-after)

Every figure is a ratio to a reference measured in the same run (the STREAM triad, the synchronous
variant, p2p, PETSc's KSPCG), except Schwarz's iteration counts and times, which the two builds
measured alternately on the same machine. Prints a Markdown table, one column per build, the rounds
separated by commas: the table of docs/benchmarks.md, made by the same function from DIR.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))
from desync_tools.results.data import Data  # noqa: E402
from desync_tools.results.pages import benchmarks  # noqa: E402


class _Folder(Data):
    """docs/benchmarks.md's before-and-after folder read from DIR instead."""

    def __init__(self, folder):
        super().__init__([os.path.dirname(os.path.abspath(folder))])
        self.name = os.path.basename(os.path.abspath(folder))

    def path(self, rel):
        return super().path(rel.replace(benchmarks.BEFORE_AFTER, self.name, 1))


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    data = _Folder(sys.argv[1])
    if not benchmarks._ba_rounds(data, "old") or not benchmarks._ba_rounds(data, "new"):
        print(f"before_after_table.py: no rounds of both builds in {sys.argv[1]}", file=sys.stderr)
        return 2
    print(benchmarks.before_after(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
