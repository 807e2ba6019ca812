"""desync-run: runs an experiment file (TOML) of desync runs and collects their key figures.

From Python, the same results table comes from a results folder or from records in memory (record
dicts, or the Results of desync.solve and desync.run):

    columns, rows, parameters = collect_rows("results/tts")
    columns, rows, parameters = records_table([sync_result, async_result])
    print("\\n".join(summary(rows, parameters, baseline="mode=sync")))
"""
from ..records import as_record, as_records
from .collect import collect_rows, records_table, summary, write_csv

__all__ = ["collect_rows", "records_table", "summary", "write_csv", "as_record", "as_records"]
