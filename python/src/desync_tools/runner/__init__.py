"""desync-run: runs an experiment file (TOML) of desync runs and collects their key figures."""
