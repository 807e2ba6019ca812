"""desync's results pages, generated from data: every table and marked number on docs/results/*.md,
docs/benchmarks.md and README.md is rendered from the records under docs/data/ by a function
registered here, and `desync-results check` (a test of the suite) fails when a page differs from
what its data renders. The experiments that made the data, and the commands that make it again, are
listed in bench/results/*.toml; `desync-results run` reruns them into a folder of its own
(`make reproduce-quick`, `make reproduce`).

A page marks what is generated with HTML comments, which Markdown does not show:

    <!-- table: bethune.tts -->            a block (a table, or any lines) from @table("bethune.tts")
    ...
    <!-- end -->
    text <!-- value: bethune.tts_ratio -->0.93<!-- end --> text      a number inline, from @value
    <!-- experiment: bethune-tts -->       the experiment's command and data file, from the manifest
    ...
    <!-- end -->
"""
from .registry import TABLES, VALUES, FIGURES, table, value, figure  # noqa: F401
from .data import Data  # noqa: F401
