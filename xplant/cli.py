"""The ``xplant`` command line moved to :mod:`xplant.app.cli`; ``xplant.cli:main`` stays.

Console scripts installed before the move call ``xplant.cli:main``.
"""

from .app.cli import main

__all__ = ["main"]
