"""--emit-slurm: a batch script that runs an experiment on a cluster into the results layout of
execute.py, so that `desync-run collect` reads it afterwards."""
import json
import math
import os
import shlex

from .execute import prepare_results
from .experiment import run_id, shown


def emit_slurm(exp, results, script, executable=None):
    """Writes the batch script `script` (srun launches every run); prepares the results folder."""
    prepare_results(exp, results)
    plan = exp.runs()
    ntasks = max(exp.ranks(c) for _, c in plan)
    minutes = max(1, math.ceil(len(plan) * exp.timeout / 60))
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={exp.name[:64]}",
        f"#SBATCH --ntasks={ntasks}",
        f"#SBATCH --time={minutes // 60:02d}:{minutes % 60:02d}:00",
        f"#SBATCH --output={os.path.abspath(results)}/slurm-%j.out",
        "# Written by desync-run --emit-slurm: every run of the experiment, one after another, in the",
        "# folder layout of desync-run; afterwards: desync-run collect " + shlex.quote(os.path.abspath(results)),
        "set -u",
        f"RESULTS={shlex.quote(os.path.abspath(results))}",
        f"ACCEPT={shlex.quote(' '.join(str(c) for c in exp.accept_exit))}   # exit codes of a successful run",
        "run() {  # run <id> <repetition> <parameters as JSON> <timeout seconds> <command...>",
        "  local id=$1 rep=$2 params=$3 limit=$4; shift 4",
        "  local dir=\"$RESULTS/runs/$id\"",
        "  [ -f \"$dir/status.json\" ] && return 0   # done in an earlier job",
        "  mkdir -p \"$dir\"; rm -f \"$dir/record.json\"",
        "  printf '%q ' \"$@\" > \"$dir/command.txt\"; echo >> \"$dir/command.txt\"",
        "  local t0=$(date +%s%N)",
        "  timeout --signal=TERM --kill-after=10 \"$limit\" \"$@\" > \"$dir/stdout.txt\" 2> \"$dir/stderr.txt\"",
        "  local code=$? status=ok timed=false reason=",
        "  local ms=$(( ($(date +%s%N) - t0) / 1000000 )); local secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))",
        "  if [ $code -eq 124 ] || [ $code -eq 137 ]; then status=timeout; timed=true; reason=\"timed out after $limit s\";",
        "  elif [[ \" $ACCEPT \" != *\" $code \"* ]]; then status=failed; reason=\"exit code $code\";",
        "  elif [ ! -f \"$dir/record.json\" ]; then status=failed; reason=\"no run record written\"; fi",
        "  printf '{\"run_id\": \"%s\", \"repetition\": %s, \"parameters\": %s, \"status\": \"%s\", \"exit_code\": %s, '"
        "'\"timed_out\": %s, \"reason\": \"%s\", \"seconds\": %s}\\n' \\",
        "    \"$id\" \"$rep\" \"$params\" \"$status\" \"$code\" \"$timed\" \"$reason\" \"$secs\" > \"$dir/status.json\"",
        "}",
        "",
    ]
    for rep, combo in plan:
        rid = run_id(rep, combo)
        record = os.path.join(os.path.abspath(results), "runs", rid, "record.json")
        cmd = exp.command(combo, record, executable, "srun", force_launcher=True)
        lines.append(f"run {shlex.quote(rid)} {rep} {shlex.quote(json.dumps(shown(combo)))} {int(exp.timeout)} {shlex.join(cmd)}")
    with open(script, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(script, 0o755)
    return len(plan), ntasks
