"""``python -m xplant.neural.distributed.train --config cfg.yaml`` (= ``xplant train``)."""

import sys

from ._launch import main

if __name__ == "__main__":
    sys.exit(main())
