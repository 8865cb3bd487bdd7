"""``python -m blocksolve``: see :mod:`blocksolve.cli.main`."""

import sys

from blocksolve.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
