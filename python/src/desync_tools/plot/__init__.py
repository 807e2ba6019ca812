"""desync-plot: figures from desync's run records and results tables.

Each function returns a matplotlib Figure (drawn with the Agg backend); the CLI (cli.py) saves it.
Records are record dicts (load_record) or objects with a `.record` (desync.Result), mixed; a table
is (columns, rows) of a results.csv (read_table), or of desync_tools.runner.records_table(records).
  plot_convergence(records, x="both", per_rank=False, labels=None)   residual against time/iteration
  plot_delays(record)                                                  halo delay histograms, iterations
  plot_breakdown(records, per="rank")                                  stacked time split
  plot_scaling(columns, rows, by=None, weak=False)                      time, iterations, speed-up vs ranks
  plot_sweep(columns, rows, x, y, by=None, logx=False, mark=None)      a metric against a parameter
  plot_field(array, axis="z", index=None)                              a slice of a saved field
  write_report(results_dir, output)                                    one page with table and figures
"""
import matplotlib

matplotlib.use("Agg")

from .figures import plot_breakdown, plot_convergence, plot_delays  # noqa: E402
from .field import load_field, plot_field  # noqa: E402
from .tablefigs import plot_scaling, plot_sweep  # noqa: E402
from .report import write_report  # noqa: E402

__all__ = ["plot_convergence", "plot_delays", "plot_breakdown", "plot_scaling", "plot_sweep",
           "plot_field", "load_field", "write_report"]
