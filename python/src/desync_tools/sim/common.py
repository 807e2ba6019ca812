"""What every desync-sim command shares: its name in messages, and reading the JSON file an option
names (--calibration, --costs, --platform-dir's platform.json) with one message when it cannot."""
import json

from ..errors import UserError

PROG = "desync-sim"


def read_json_option(option, path, hint=""):
    """The JSON document in the file an option names; one UserError if it cannot be read (`hint`, if
    given, is added to the message of a file that cannot be opened)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise UserError(f"{option}: cannot read {path}: {e.strerror}{hint}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{option}: {path} is not JSON: {e}") from None
