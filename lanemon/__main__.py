"""``python -m lanemon``: the same entry point as the ``lanemon`` command."""

import sys

from lanemon.cli import main

if __name__ == "__main__":
    sys.exit(main())
