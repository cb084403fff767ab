"""Any saved xplant model, neural or linear: load it, rank and decide with it.

A saved model folder names its format in ``config.json``; :func:`load_saved`
dispatches on it, so ``xplant predict`` and ``xplant evaluate`` take every
row of ``xplant run`` and every model of ``xplant fit``.
"""

from pathlib import Path

import numpy as np
import scipy.sparse as sp

_PLANT_PREFIX = "xplant-plant-classifier"


def load_saved(path):
    """Load any saved xplant model folder, without running pickled code.

    Parameters
    ----------
    path : str or Path
        A folder written by ``PlantClassifier.save``,
        :func:`xplant.linear.save_linear`, ``xplant run`` (``RUN/models/<row>``)
        or ``xplant fit``.

    Returns
    -------
    model : estimator
        A fitted :class:`~xplant.neural.PlantClassifier`, or what
        :func:`xplant.linear.load_linear` returns.
    decision : dict
        ``{"rule": "top_k" | "threshold", "k": int, "threshold": float}``: the
        rule chosen on dev when the model was saved, else the model's own
        default.

    Raises
    ------
    FileNotFoundError
        When ``path`` holds no ``config.json``.
    ValueError
        When ``config.json`` names no xplant format, or ``path`` is a part
        of a saved model (the shortlist inside a PLANT folder).
    """
    from .linear._io import LINEAR_FORMAT, load_linear, read_config
    path = Path(path)
    if (path / "fusion.json").is_file():      # written by save_shortlist, inside a PLANT folder
        raise ValueError(f"{path} is the shortlist inside a saved PLANT model, not a model of "
                         f"its own (it may know its labels only as column indices); pass the "
                         f"model folder {path.parent}")
    config = read_config(path)
    fmt = str(config.get("format"))
    if fmt == LINEAR_FORMAT:
        model = load_linear(path)
        decision = config.get("decision") or _default_decision(model)
        return model, decision
    if fmt.startswith(_PLANT_PREFIX):
        from .neural import load_model
        clf = load_model(path)
        return clf, {"rule": clf.decision, "k": int(clf.k_), "threshold": float(clf.threshold_)}
    raise ValueError(f"{path}/config.json names format {config.get('format')!r}, which is no "
                     f"saved xplant model ({LINEAR_FORMAT!r} or {_PLANT_PREFIX}-*); pass a folder "
                     "written by xplant run or xplant fit")


def read_tensors(path, *, torch=False):
    """The tensors of a safetensors file: the one reader of every saved model's weights.

    Every saved kind (linear and tree models, PLANT and its planting, MIG
    relevance, training checkpoints) reads its numbers here, so a damaged
    file gives one kind of error, naming the file and what is wrong, never
    the storage library's own exception.

    Parameters
    ----------
    path : str or Path
    torch : bool, default=False
        Return torch tensors (``safetensors.torch``) instead of numpy arrays.

    Returns
    -------
    dict of str to ndarray or torch.Tensor

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        When it is not a whole safetensors file (cut short, a header byte
        changed): names the file, its size and what the reader found.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from safetensors.numpy import save_file
    >>> f = tempfile.mkdtemp() + "/w.safetensors"
    >>> save_file({"w": np.arange(3.0)}, f)
    >>> read_tensors(f)["w"].tolist()
    [0.0, 1.0, 2.0]
    >>> _ = open(f, "r+b").truncate(20)
    >>> read_tensors(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../w.safetensors (20 bytes) is not a whole safetensors file: ...
    """
    from safetensors import SafetensorError
    if torch:
        from safetensors.torch import load_file
    else:
        from safetensors.numpy import load_file
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; the saved model is incomplete, save it "
                                "again")
    try:
        return load_file(str(path))
    except SafetensorError as exc:
        what = str(exc).replace("Error while deserializing header: ", "")
        raise ValueError(f"{path} ({path.stat().st_size} bytes) is not a whole safetensors file: "
                         f"{what} (cut short or changed after saving); copy the whole folder "
                         "again, or save the model again") from None


def _final(model):
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _default_decision(model):
    final = _final(model)
    rule, value = final._default_rule()
    rule = "top_k" if rule == "k" else rule
    if rule == "threshold" and hasattr(final, "predict_proba") and \
            hasattr(final, "decision_function"):
        # logistic one-vs-rest: its rule is on decision values, decide() reads probabilities
        from scipy.special import expit
        value = float(expit(value))
    return {"rule": rule, "k": int(value) if rule == "top_k" else 1,
            "threshold": float(value) if rule == "threshold" else 0.0}


def label_names(model):
    """The model's label names as strings, in column order."""
    return [str(c) for c in _final(model).classes_]


def score_scale(model):
    """The scale of :func:`score_matrix`: ``"probability"`` or ``"decision_function"``."""
    return "probability" if hasattr(model, "predict_proba") else "decision_function"


def score_matrix(model, texts):
    """Dense scores ``(n, L)``: ``predict_proba`` where the model has it, else decision values.

    The scale on which ``xplant run`` chooses its thresholds (:func:`score_scale`).
    """
    s = model.predict_proba(texts) if hasattr(model, "predict_proba") else \
        model.decision_function(texts)
    return np.asarray(s.toarray() if hasattr(s, "toarray") else s, dtype=np.float64)


def ranking_scores(model, texts):
    """Dense scores ``(n, L)`` that rank as :func:`ranking` does, for the ranking metrics.

    Decision values where the model has them: they order the labels as its
    probabilities do (σ of them, or the same cosines) and break the ties of
    probabilities that saturate at 1.0. Else :func:`score_matrix`.
    """
    if not hasattr(model, "decision_function"):
        return score_matrix(model, texts)
    s = model.decision_function(texts)
    return np.asarray(s.toarray() if hasattr(s, "toarray") else s, dtype=np.float64)


def ranking(model, texts, k):
    """The model's best ``min(k, L)`` labels of each text, best first: the one ranking.

    The model's own ``predict_top_k`` (:func:`xplant.linear.predict_top_k`),
    which ranks by the scores that break ties: PLANT by its logits, whose
    probabilities tie once they saturate at 1.0 in float32; a logistic model
    by its decision values. The top-k rule of :func:`decide` and the records
    of ``xplant predict`` follow it.

    Returns
    -------
    indices : ndarray of int64 of shape (n, min(k, L))
        -1 where a label is never ranked.
    """
    from .linear import predict_top_k
    return np.asarray(predict_top_k(model, texts, k)[0], dtype=np.int64)


def decide(model, texts, decision, scores=None, ranked=None):
    """0/1 predictions of ``model`` on ``texts`` under ``decision``.

    Parameters
    ----------
    model : fitted estimator
    texts : list of str
    decision : dict
        As returned by :func:`load_saved`.
    scores : ndarray of shape (n, L) or None
        :func:`score_matrix` of the texts, when already computed (the
        threshold rule reads them).
    ranked : ndarray of shape (n, >= k) or None
        :func:`ranking` of the texts, when already computed (the top-k rule
        takes its first k labels).

    Returns
    -------
    Y_pred : scipy.sparse.csr_matrix of shape (n, L), dtype int64
    """
    from .metrics import threshold_decision, top_k_decision
    n_labels = len(label_names(model))
    if decision["rule"] == "top_k":
        k = min(int(decision["k"]), n_labels)
        if ranked is None or ranked.shape[1] < k:
            ranked = ranking(model, texts, k)
        out = top_k_decision(y_top_k=ranked[:, :k], k=k, n_labels=n_labels)
    else:
        if scores is None:
            scores = score_matrix(model, texts)
        out = threshold_decision(scores, float(decision["threshold"]))
    return sp.csr_matrix(out, dtype=np.int64)


#: The file of a saved folder that names the results row it reproduces.
ROW_FILE = "row.json"


def reproduced_row(name, final):
    """The results row a saved model reproduces: a shortlisted fit answers with fused scores."""
    from .app._rows import FUSED_SUFFIXES
    shortlisted = getattr(final, "shortlist_", None) is not None
    return name + FUSED_SUFFIXES["fused"] if shortlisted else name


def saved_row(path):
    """The row recorded in a saved folder's ``row.json``, or None (a folder saved otherwise)."""
    import json
    file = Path(path) / ROW_FILE
    if not file.is_file():
        return None
    try:
        return json.loads(file.read_text(encoding="utf-8")).get("row")
    except (ValueError, AttributeError):
        return None


def save_row(model, final, model_dir, rule, row=None):
    """Save a fitted row without pickle; linear rows carry the run's dev-chosen rule.

    ``model_dir`` is a folder the run owns (``RUN/models/<row>``, checked by
    :func:`xplant._files.check_model_output` before the run fits anything, or
    the fresh sibling folder of ``xplant fit``): a saved model there is
    replaced, whatever its kind.

    With ``row`` (the row's name), the folder also gets ``row.json``,
    ``{"row": ...}``: the row of ``results.json`` the saved model
    reproduces, ``<row> fused`` for a shortlisted neural fit
    (:func:`reproduced_row`).

    Returns ``{"saved_to": path}``, or ``{"not_saved": reason}`` for a model
    that cannot be stored without pickle (LibMultiLabel): its scores stand.
    """
    path = Path(model_dir)
    if hasattr(final, "save"):
        final.save(path, overwrite=True)
    else:
        from .linear import save_linear
        try:
            save_linear(model, path, decision=rule, overwrite=True)
        except TypeError as exc:
            return {"not_saved": str(exc)}
    if row is not None:
        import json
        from ._files import write_text
        write_text(path / ROW_FILE, json.dumps({"row": reproduced_row(row, final)},
                                               ensure_ascii=False))
    return {"saved_to": str(path)}
