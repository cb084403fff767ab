"""``python -m xplant.neural.distributed.train --config cfg.yaml`` (= ``xplant train``)."""

import sys

from ._launch import _parser as build_parser  # noqa: F401  (xplant train's parser, for its docs)
from ._launch import main

if __name__ == "__main__":
    sys.exit(main())
