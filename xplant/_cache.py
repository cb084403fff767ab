"""The one on-disk cache of the package: results that are costly to compute and never change.

What goes here is keyed by everything it depends on (a digest of the
inputs), so an entry is either right or absent: the sentence encoder's
embeddings of a label catalogue's names, computed once per catalogue
version and encoder (:func:`xplant.unseen.cached_embeddings`). Removing
the folder only costs the time to compute its entries again.
"""

import os
from pathlib import Path

#: The environment variable that moves the cache (a folder; created on first use).
CACHE_ENV = "XPLANT_CACHE_DIR"


def cache_folder():
    """The cache folder: ``$XPLANT_CACHE_DIR``, else ``$XDG_CACHE_HOME/xplant``, else ``~/.cache/xplant``.

    Returns
    -------
    Path
        Not created here (the first writer creates it).

    Examples
    --------
    >>> import os
    >>> old = os.environ.get(CACHE_ENV)
    >>> os.environ[CACHE_ENV] = "/tmp/xplant-cache-example"
    >>> str(cache_folder())
    '/tmp/xplant-cache-example'
    >>> _ = os.environ.pop(CACHE_ENV) if old is None else os.environ.update({CACHE_ENV: old})
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "xplant"
