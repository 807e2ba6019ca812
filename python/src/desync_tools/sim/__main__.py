"""`python -m desync_tools.sim ...`: desync-sim."""
import sys

from . import main

sys.exit(main())
