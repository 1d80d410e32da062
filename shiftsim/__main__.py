"""``python -m shiftsim``: the command line (see :mod:`shiftsim.cli`)."""

import sys

from .cli import main

sys.exit(main())
