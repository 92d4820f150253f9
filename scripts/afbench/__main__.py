"""`python -m afbench`: the command line, as the `afbench` script runs it."""

import sys

from .cli import main

sys.exit(main())
