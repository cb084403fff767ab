"""The one on-disk cache of the package: results that are costly to compute and never change.

What goes here is keyed by everything it depends on (a digest of the
inputs), so an entry is either right or absent: the sentence encoder's
embeddings of a label catalogue's names, computed once per catalogue
version and encoder (:func:`xplant.unseen.cached_embeddings`). Removing
the folder only costs the time to compute its entries again.

An entry is a safetensors file whose header metadata holds the SHA-256 of
its arrays (:data:`CHECKSUM_KEY`, :func:`entry_checksum`).
:func:`read_entry` checks it, so an entry damaged anywhere (its header,
its length, or bytes inside its data: a disk error, a partial copy of the
folder) reads as absent and is computed again; :func:`write_entry` writes
to a temporary name beside the entry and renames it into place, so no
reader ever sees half of one. Entries and their folders follow the umask,
as every file xplant writes (:func:`xplant._files.atomic_path`), so a
shared ``XPLANT_CACHE_DIR`` serves every user the umask lets read it.
"""

import hashlib
import os
from pathlib import Path

import numpy as np

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


#: The key of an entry's checksum in its safetensors header metadata.
CHECKSUM_KEY = "xplant-sha256"


def entry_checksum(arrays):
    """SHA-256 of a cache entry's arrays: each name, dtype, shape and bytes, by name.

    Parameters
    ----------
    arrays : dict of str to ndarray

    Returns
    -------
    str
        The hex digest.

    Examples
    --------
    >>> import numpy as np
    >>> a = entry_checksum({"x": np.zeros(2, np.float16)})
    >>> a == entry_checksum({"x": np.zeros(2, np.float16)}), a == entry_checksum({"x": np.ones(2, np.float16)})
    (True, False)
    """
    h = hashlib.sha256(b"xplant-cache-entry-1\x00")
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\x00{a.dtype.str}\x00{a.shape}\x00".encode("utf-8"))
        h.update(a.tobytes())
    return h.hexdigest()


def write_entry(path, arrays):
    """Write a cache entry whole or not at all, with its checksum.

    The arrays go to a temporary file beside ``path``, renamed into place
    once written (:func:`xplant.persistence._codec.write_arrays`), with
    :func:`entry_checksum` in the header metadata under
    :data:`CHECKSUM_KEY`. The folder is created if needed.

    Parameters
    ----------
    path : str or Path
        The entry, ``<cache>/<kind>/<digest>.safetensors``.
    arrays : dict of str to ndarray

    Returns
    -------
    Path

    Raises
    ------
    OSError
        When the cache folder cannot be written (a read-only home): the
        caller keeps its result without caching it.
    """
    from .persistence._codec import write_arrays
    arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    return write_arrays(path, arrays, metadata={CHECKSUM_KEY: entry_checksum(arrays)})


def read_entry(path):
    """The arrays of a cache entry if it is whole and right, else None.

    An entry that is absent, cut short, has a damaged header, carries no
    checksum or whose arrays do not match their checksum
    (:func:`entry_checksum`) reads as None: the caller computes it again
    and :func:`write_entry` replaces it.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict of str to ndarray or None
    """
    from .persistence._codec import read_arrays
    path = Path(path)
    if not path.is_file():
        return None
    try:
        arrays, metadata = read_arrays(path, metadata=True)
    except (OSError, ValueError):
        return None
    stored = metadata.get(CHECKSUM_KEY)
    if stored is None or stored != entry_checksum(arrays):
        return None
    return arrays
