"""The run-folder files the report reads, and the writer of ``per_label.npz``."""

from pathlib import Path

import numpy as np

from .._files import read_json_object

PER_LABEL_FILE = "per_label.npz"
RESULTS_FILE = "results.json"
EVIDENCE_FILE = "evidence.json"
SIMILARITY_FILE = "similarity.json"
F1_SUFFIX = "__f1"


def save_per_label(path, *, train_frequency, support, f1, label_names=None):
    """Write the per-label arrays of a run to ``per_label.npz``.

    Parameters
    ----------
    path : str or Path
        The file to write (``RUN_DIR/per_label.npz``).
    train_frequency : array-like of int of shape (n_labels,)
        Training positives per label (``label_frequency_``).
    support : array-like of int of shape (n_labels,)
        Positives per label in the evaluated split.
    f1 : mapping of str to array-like of float of shape (n_labels,)
        Model name (as in ``results.json``) -> per-label F1 under the
        primary decision rule, in [0, 1].
    label_names : array-like of str of shape (n_labels,), optional
        Names of the columns, saved beside the scores.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        If the lengths differ, a model name is empty or F1 values are outside
        [0, 1].

    Notes
    -----
    The keys of the archive are ``train_frequency`` (int64), ``support``
    (int64), ``label_names`` (unicode, when given) and ``<model>__f1``
    (float64) for each model.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "per_label.npz")
    >>> _ = save_per_label(p, train_frequency=[3, 0], support=[1, 2], f1={"PLANT": [1.0, 0.5]})
    >>> sorted(load_per_label(p)["f1"])
    ['PLANT']
    """
    tf = np.asarray(train_frequency, dtype=np.int64)
    sup = np.asarray(support, dtype=np.int64)
    if tf.ndim != 1 or sup.shape != tf.shape:
        raise ValueError(f"train_frequency {tf.shape} and support {sup.shape} must be 1-D of the same length")
    arrays = {"train_frequency": tf, "support": sup}
    if label_names is not None:
        names = np.asarray(label_names, dtype=str)
        if names.shape != tf.shape:
            raise ValueError(f"label_names has shape {names.shape}, expected {tf.shape}")
        arrays["label_names"] = names
    if not f1:
        raise ValueError("f1 must hold at least one model: {model_name: per-label F1}")
    for name, values in f1.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"model names must be non-empty strings, got {name!r}")
        v = np.asarray(values, dtype=np.float64)
        if v.shape != tf.shape:
            raise ValueError(f"F1 of model {name!r} has shape {v.shape}, expected {tf.shape}")
        if np.any(~np.isfinite(v)) or np.any((v < 0) | (v > 1)):
            raise ValueError(f"F1 of model {name!r} must be finite values in [0, 1]")
        arrays[name + F1_SUFFIX] = v
    path = Path(path)
    from .._files import atomic_open
    with atomic_open(path, "wb") as fh:  # a file object keeps numpy from appending ".npz"
        np.savez_compressed(fh, **arrays)
    return path


def load_per_label(path):
    """Read ``per_label.npz`` written by :func:`save_per_label`.

    Parameters
    ----------
    path : str or Path
        The ``per_label.npz`` file to read.

    Returns
    -------
    dict
        ``train_frequency`` and ``support`` (int64 arrays), ``label_names``
        (array or None) and ``f1`` ({model: float64 array}, in file order).

    Raises
    ------
    ValueError
        If a required key is missing or the lengths differ.
    """
    with np.load(path, allow_pickle=False) as z:
        keys = list(z.files)
        for need in ("train_frequency", "support"):
            if need not in keys:
                raise ValueError(f"{path}: missing array {need!r}; write it with xplant.report.save_per_label")
        out = {
            "train_frequency": z["train_frequency"].astype(np.int64),
            "support": z["support"].astype(np.int64),
            "label_names": z["label_names"] if "label_names" in keys else None,
            "f1": {k[: -len(F1_SUFFIX)]: z[k].astype(np.float64) for k in keys if k.endswith(F1_SUFFIX)},
        }
    n = out["train_frequency"].shape[0]
    for name, arr in [("support", out["support"])] + list(out["f1"].items()):
        if arr.shape != (n,):
            raise ValueError(f"{path}: array {name!r} has shape {arr.shape}, expected ({n},)")
    return out


def _read_listing(path, key, what):
    """A JSON file (:func:`xplant._files.read_json_object`; ``what`` it should hold) checked
    to be an object whose ``key`` is a list."""
    data = read_json_object(path, what)
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise ValueError(f"{path}: expected an object with a {key!r} list")
    return data


def read_results(run_dir):
    path = Path(run_dir) / RESULTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: RUN_DIR must be the output folder of `xplant run`")
    res = _read_listing(path, "models", "the results of `xplant run`")
    for i, m in enumerate(res["models"]):
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise ValueError(f"{path}: models[{i}] must be an object with a string 'name'")
        if not isinstance(m.get("metrics", {}), dict):
            raise ValueError(f"{path}: models[{i}].metrics must be an object")
    return res


def read_evidence(path):
    ev = read_json_object(path, "{model: [{doc_id, text, codes: [...]}]}")
    if not isinstance(ev, dict):
        raise ValueError(f"{path}: expected an object {{model: [documents]}}")
    for model, docs in ev.items():
        if not isinstance(docs, list):
            raise ValueError(f"{path}: the value of model {model!r} must be a list of documents")
        for j, d in enumerate(docs):
            if not isinstance(d, dict) or not isinstance(d.get("text"), str) or not isinstance(d.get("codes"), list):
                raise ValueError(f"{path}: {model}[{j}] must have a string 'text' and a 'codes' list")
    return ev


def read_similarity(path):
    sim = _read_listing(path, "groups",
                        "{groups: [{group, labels, n_documents, similarity: {model: value}}]}")
    for j, g in enumerate(sim["groups"]):
        if not isinstance(g, dict) or not isinstance(g.get("similarity"), dict):
            raise ValueError(f"{path}: groups[{j}] must have a 'similarity' object {{model: value}}")
    return sim
