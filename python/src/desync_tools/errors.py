"""One kind of error for bad input, and the way both commands report it."""
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
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
