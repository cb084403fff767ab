"""``python -m xplant ...``: the ``xplant`` command line, for launchers that start a module
(``deepspeed -m xplant train --config cfg.yaml``, ``torchrun -m xplant train ...``)."""

import sys

from .app.cli import main

if __name__ == "__main__":
    sys.exit(main())
