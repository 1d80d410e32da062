"""``python -m shiftsim``: the command line (see :mod:`shiftsim.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
