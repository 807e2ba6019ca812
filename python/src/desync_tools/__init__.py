"""desync-tools: the Python companion of desync.

desync-plot draws figures from desync's run records (the JSON of `desync <solver> --json FILE`,
schema `desync.run`); desync-run runs experiment files (TOML) of desync runs and collects their
key figures into one table.
"""
__version__ = "0.2.0"
