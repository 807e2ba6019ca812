"""One kind of error for bad input, and the way both commands report it."""
import os
import sys


class UserError(Exception):
    """Bad input from the user: reported as one line `<prog>: error: <message>`, exit status 2."""


def run_main(prog, main_function, argv=None):
    """Calls main_function(argv); a UserError becomes one line on standard error and exit status 2."""
    try:
        return main_function(argv)
    except UserError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`desync-run run ... --dry-run | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
