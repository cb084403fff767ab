"""The one fusion formula of xplant: a weighted sum of calibrated sources, with a floor.

Several models score a document's labels, each on its own scale and
possibly only some of them (a shortlist's candidates, the labels seen in
training, the labels never seen). :func:`fuse` puts each *source* i on one
scale with its calibration g_i, weights it by w_i, and adds up, label by
label, the sources that score the label; the labels of a *floor* set
start from the document's lowest score among the other labels:

    f(d, l) =            Σ_{i : l ∈ S_i(d)} w_i · g_i(s_i(d, l))     (l not a floor label)
    f(d, l) = m(d)·t(d, l) + Σ_{i : l ∈ S_i(d)} w_i · g_i(s_i(d, l))  (l a floor label of d)
    m(d) = min of f(d, l) over the other labels of d that a source scores,

with S_i(d) the labels source i scores for document d and t(d, l) a
factor of the floor term. Each fusion of the library is a member:

- PLANT with a shortlist (:class:`xplant.neural.PlantClassifier`): two
  sources on each document's candidates, the shortlist's score s with
  w = α and g = σ(a·s + b), the network's logit z with w = 1 − α and
  g = σ; the floor labels are the rest, at t = 1 − (r + 1)/(L + 1) for the
  label of tail rank r (:func:`tail_factor`), so they fall strictly below
  the candidates in the shortlist's order, then by training frequency.
- :class:`xplant.unseen.DescriptionFusion`: the trained model on the
  labels seen in training (w = 1, no calibration) and the description
  cosine on the unseen labels (w = the weight); the unseen labels are the
  floor set, at t = 1: m + w · cos. Over an open label space (a
  catalogue) the floor labels are each document's candidates, scored by
  their catalogue score (:func:`xplant.unseen._catalogue_fusion.candidate_scores`)
  with w = 1.

The sum runs over the sources in the order given, so both equal their
earlier formulas to the last bit (tested).
"""

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._params import check_param
from ._calibration import calibrate

#: Fusion weights α tried by ``PlantClassifier(fusion="dev")``: 0 is PLANT
#: alone on its candidates, 1 the shortlist alone.
FUSION_GRID = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))


def check_fusion(fusion):
    """Validate ``fusion``: ``"dev"``, a float α in [0, 1], or α with its calibration.

    Parameters
    ----------
    fusion : "dev", float or (float, (float, float))
        ``PlantClassifier``'s ``fusion`` parameter. The pair ``(α, (a, b))``
        fixes both α and the shortlist's calibration σ(a·s + b): nothing is
        chosen on dev (how a refit on train + dev carries over its first
        fit's fused score).

    Returns
    -------
    "dev", float or (float, (float, float))

    Raises
    ------
    ValueError
        Another string, a number outside [0, 1] (:func:`xplant._params.check_param`),
        or a pair of another form or with a non-finite calibration.

    Examples
    --------
    >>> check_fusion("dev"), check_fusion(1), check_fusion([0.5, [2, -1]])
    ('dev', 1.0, (0.5, (2.0, -1.0)))
    """
    if isinstance(fusion, (tuple, list)):
        if len(fusion) != 2 or not isinstance(fusion[1], (tuple, list)) or len(fusion[1]) != 2:
            raise ValueError(f"fusion as a pair is (alpha, (a, b)), got {fusion!r}")
        a, b = fusion[1]
        for name, v in (("a", a), ("b", b)):
            check_param(f"fusion's calibration {name}", v, low=-np.inf, high=np.inf)
            if not np.isfinite(float(v)):
                raise ValueError(f"fusion's calibration {name} must be finite, got {v!r}")
        return (check_fusion(fusion[0]), (float(a), float(b)))
    if isinstance(fusion, str):
        check_param("fusion", fusion, allowed=("dev",))
        return fusion
    check_param("fusion", fusion, low=0.0, high=1.0)
    return float(fusion)


@dataclass(frozen=True, eq=False)
class Source:
    """One source of a fusion: a model's scores of some labels, its weight and calibration.

    A plain tuple ``(scores, weight)`` or ``(scores, weight, calibration,
    labels)`` serves wherever a Source does.

    Parameters
    ----------
    scores : array-like of shape (n_samples, m)
        The source's raw scores of n documents and m label columns; read as
        float64.
    weight : float or array-like, default=1.0
        w: a float, or an array that broadcasts to ``scores`` (one weight per
        label or per cell).
    calibration : (a, b) or None, default=None
        g: None keeps the scores as they are, (a, b) maps them to
        σ(a·s + b) (:func:`xplant.fusion.calibrate`).
    labels : array-like of int or None, default=None
        Which labels the columns of ``scores`` are: None, columns 0..m−1
        are labels 0..m−1; shape (m,), column j is label ``labels[j]`` in
        every document (a label subset); shape (n, m), column j of row d is
        label ``labels[d, j]`` (each document's candidates). Distinct within
        a row.
    """

    scores: Any
    weight: Any = 1.0
    calibration: Any = None
    labels: Any = None


def _check_sources(sources, n_labels):
    if isinstance(sources, Source) or not hasattr(sources, "__len__") or len(sources) == 0:
        raise ValueError("sources must be a non-empty sequence of Source (or (scores, weight) "
                         "tuples)")
    out = []
    for i, src in enumerate(sources):
        if not isinstance(src, Source):
            if not isinstance(src, (tuple, list)) or not 1 <= len(src) <= 4:
                raise ValueError(f"sources[{i}] must be a Source or a tuple (scores, weight[, "
                                 f"calibration[, labels]]), got {type(src).__name__}")
            src = Source(*src)
        scores = np.asarray(src.scores)
        if scores.ndim != 2 or scores.dtype.kind not in "biuf":
            raise ValueError(f"sources[{i}].scores must be a 2-D numeric array (documents × "
                             f"labels), got shape {scores.shape} of {scores.dtype}")
        weight = src.weight
        if isinstance(weight, numbers.Real) and not isinstance(weight, bool):
            ok = np.isfinite(weight)
        else:
            weight = np.asarray(weight, dtype=np.float64)
            try:
                fits = np.broadcast_shapes(weight.shape, scores.shape) == scores.shape
            except ValueError:
                fits = False
            if not fits:
                raise ValueError(f"sources[{i}].weight of shape {weight.shape} does not "
                                 f"broadcast to its scores {scores.shape}")
            ok = np.isfinite(weight).all()
        if not ok:
            raise ValueError(f"sources[{i}].weight must be finite")
        cal = src.calibration
        if cal is not None and (not isinstance(cal, (tuple, list)) or len(cal) != 2):
            raise ValueError(f"sources[{i}].calibration must be None or a pair (a, b), got "
                             f"{cal!r:.60}")
        labels = src.labels
        if labels is not None:
            labels = np.asarray(labels)
            if labels.dtype.kind not in "iu" or labels.ndim not in (1, 2) or \
                    labels.shape != scores.shape[-labels.ndim:] or \
                    (labels.ndim == 2 and labels.shape != scores.shape):
                raise ValueError(f"sources[{i}].labels must be integer label columns of shape "
                                 f"({scores.shape[1]},) or {scores.shape}, got shape "
                                 f"{labels.shape} of {labels.dtype}")
            if n_labels is not None and labels.size and \
                    (labels.min() < 0 or labels.max() >= n_labels):
                raise ValueError(f"sources[{i}].labels holds a column outside [0, {n_labels})")
        elif n_labels is not None and scores.shape[1] != n_labels:
            raise ValueError(f"sources[{i}] scores {scores.shape[1]} columns without labels; "
                             f"give labels, or one column per label ({n_labels})")
        out.append(Source(scores, weight, cal, labels))
    n = out[0].scores.shape[0]
    if any(s.scores.shape[0] != n for s in out):
        raise ValueError("every source must score the same documents (rows): got "
                         f"{[s.scores.shape[0] for s in out]}")
    return out


def _same_labels(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a is b or (a.shape == b.shape and np.array_equal(a, b))


def _weighted(src):
    """w · g(s) of one source, float64 of its scores' shape."""
    return src.weight * calibrate(src.scores, src.calibration)


def _floor_steps(c, min_score):
    """The scores of floored columns 0..c−1: min_score · (1 − (j + 1)/(c + 1)), float64 (c,)."""
    return min_score * (1.0 - np.arange(1, c + 1) / (c + 1.0))


def _lift(block, min_score):
    """Scores below ``min_score`` at column j of c: min_score · (1 − (j + 1)/(c + 1))."""
    s = np.asarray(block, dtype=np.float64)
    return np.where(s < min_score, _floor_steps(s.shape[1], min_score)[None, :], s)


def fuse(sources, *, n_labels=None, floor=None, floor_factor=1.0, min_score=None):
    """Fuse the scores of several sources: Σ w_i · g_i(s_i), with an optional floor.

    The formula of this module's docstring: each label of a document
    gets the weighted sum of the calibrated scores of the sources that
    score it; a floor label also gets m(d) · t(d, l), m(d) being the
    document's lowest score over the other scored labels (0 when there
    are none). A label that no source scores and that is no floor label
    scores 0. The sum runs over the sources in the order given.

    Parameters
    ----------
    sources : sequence of Source or tuple
        At least one (:class:`Source`); all score the same documents.
    n_labels : int or None, default=None
        L. Given: the output has one column per label. None: the output is
        the block of the sources' columns (all sources then share one
        ``labels`` and width), for example the fused candidates of each
        document without an (n, L) array.
    floor : None, "rest" or array-like of int, default=None
        The floor labels: ``"rest"``, the labels of each document that no
        source scores; an array, those label columns in every document.
        Needs ``n_labels``.
    floor_factor : float or array-like of shape (n_samples, n_labels), default=1.0
        t(d, l), read at the floor labels (:func:`tail_factor` for the
        tail order below the candidates).
    min_score : float > 0 or None, default=None
        A non-floor score below it, at column j of the sources' m columns,
        becomes ``min_score · (1 − (j + 1)/(m + 1))``: positive and in the
        sources' column order (a shortlist's order), where probabilities
        underflow to 0 (:data:`xplant.fusion.SCORE_FLOOR`). Needs sources
        that share ``labels``.

    Returns
    -------
    ndarray of float64 of shape (n_samples, n_labels) or (n_samples, m)
        One column per label; without ``n_labels``, the sources' m columns.

    Raises
    ------
    ValueError
        For sources that are not 2-D numeric arrays of one row count, a
        weight that is not finite or does not broadcast, labels of another
        shape or outside [0, n_labels), a bad ``floor``, ``floor_factor``,
        ``min_score`` or ``n_labels``, or sources on different labels
        without ``n_labels``.

    Examples
    --------
    Three sources of two documents over four labels: a model of every
    label, a second model of labels 0 and 1 only, and label descriptions
    for label 3 (a label without training documents), which is the floor
    label:

    >>> model = np.array([[0.9, 0.2, 0.4], [0.1, 0.6, 0.3]])
    >>> other = np.array([[0.5, 0.7], [0.3, 0.9]])
    >>> cosine = np.array([[0.4], [0.1]])
    >>> fuse([Source(model, 0.5, labels=[0, 1, 2]),
    ...       Source(other, 0.5, labels=[0, 1]),
    ...       Source(cosine, 2.0, labels=[3])], n_labels=4, floor=[3]).round(3).tolist()
    [[0.7, 0.45, 0.2, 1.0], [0.2, 0.75, 0.15, 0.35]]
    """
    if n_labels is not None:
        check_param("n_labels", n_labels, kind=numbers.Integral, low=1)
        n_labels = int(n_labels)
    srcs = _check_sources(sources, n_labels)
    if min_score is not None:
        check_param("min_score", min_score, low=0.0, low_open=True)
    first = srcs[0]
    shared = all(_same_labels(s.labels, first.labels) and s.scores.shape == first.scores.shape
                 for s in srcs[1:])
    if floor is not None and n_labels is None:
        raise ValueError("a floor needs n_labels: the floor labels are label columns")
    if n_labels is None and not shared:
        raise ValueError("sources on different labels (or of different widths) need n_labels")
    if min_score is not None and not shared:
        raise ValueError("min_score needs sources that share their labels: it reads their "
                         "column order")
    if floor is not None and not (isinstance(floor, str) and floor == "rest"):
        if isinstance(floor, str):
            raise ValueError(f"floor must be None, 'rest' or label columns, got {floor!r}")
        floor = np.asarray(floor)
        if floor.ndim != 1 or (floor.size and (floor.dtype.kind not in "iu" or floor.min() < 0
                                               or floor.max() >= n_labels)):
            raise ValueError(f"floor must be None, 'rest' or a 1-D array of label columns in "
                             f"[0, {n_labels})")
    n = first.scores.shape[0]
    if floor is not None and not np.isscalar(floor_factor):
        floor_factor = np.asarray(floor_factor, dtype=np.float64)
        if floor_factor.shape != (n, n_labels):
            raise ValueError(f"floor_factor must be a number or an array of shape "
                             f"{(n, n_labels)}, got {floor_factor.shape}")

    if shared and (floor is None or isinstance(floor, str)):
        return _fuse_block(srcs, n_labels, floor, floor_factor, min_score)
    if all(s.labels is None or s.labels.ndim == 1 for s in srcs):
        return _fuse_columns(srcs, n_labels, floor, floor_factor)
    return _fuse_cells(srcs, n_labels, floor, floor_factor)


def _fuse_block(srcs, n_labels, floor, factor, min_score):
    """Every source on the same labels: sum in their columns, then place them among L."""
    block = _weighted(srcs[0])
    for src in srcs[1:]:
        block = block + _weighted(src)
    if min_score is not None:
        block = _lift(block, min_score)
    labels = srcs[0].labels
    if n_labels is None or labels is None:
        return block                           # every label scored: no rest to floor
    n = block.shape[0]
    if floor is None:
        out = np.zeros((n, n_labels))
    else:                                      # the rest: m(d) · t below the scored labels
        low = block.min(1, keepdims=True) if block.shape[1] else np.zeros((n, 1))
        out = low * factor if not np.isscalar(factor) else \
            np.broadcast_to(low * factor, (n, n_labels)).copy()
    if labels.ndim == 1:
        out[:, labels] = block
    else:
        out[np.arange(n)[:, None], labels] = block
    return out


def _fuse_columns(srcs, n_labels, floor, factor):
    """Sources on label subsets shared by every document (columns)."""
    n = srcs[0].scores.shape[0]
    out = np.zeros((n, n_labels))
    covered = np.zeros(n_labels, dtype=bool)
    for src in srcs:
        cols = np.arange(n_labels) if src.labels is None else src.labels
        v = _weighted(src)
        new = ~covered[cols]
        out[:, cols] = v if new.all() else np.where(new, v, out[:, cols] + v)
        covered[cols] = True
    if floor is None:
        return out
    at = ~covered if isinstance(floor, str) else np.isin(np.arange(n_labels), floor)
    base = covered & ~at
    m = out[:, base].min(1, keepdims=True) if base.any() else np.zeros((n, 1))
    for cols, scored in ((at & covered, True), (at & ~covered, False)):
        if cols.any():
            term = m * (factor if np.isscalar(factor) else factor[:, cols])
            out[:, cols] = term + out[:, cols] if scored else term
    return out


def _fuse_cells(srcs, n_labels, floor, factor):
    """The general case: some source scores each document's own labels."""
    n = srcs[0].scores.shape[0]
    out = np.zeros((n, n_labels))
    covered = np.zeros((n, n_labels), dtype=bool)
    for src in srcs:
        c = src.scores.shape[1]
        if src.labels is None:
            rows, cols = np.arange(n)[:, None], np.broadcast_to(np.arange(c), (n, c))
        elif src.labels.ndim == 1:
            rows, cols = np.arange(n)[:, None], np.broadcast_to(src.labels, (n, c))
        else:
            rows, cols = np.arange(n)[:, None], src.labels
        v = np.broadcast_to(_weighted(src), (n, c))
        new = ~covered[rows, cols]
        out[rows, cols] = np.where(new, v, out[rows, cols] + v)
        covered[rows, cols] = True
    if floor is None:
        return out
    at = ~covered if isinstance(floor, str) else \
        np.broadcast_to(np.isin(np.arange(n_labels), floor), (n, n_labels))
    base = covered & ~at
    m = np.where(base, out, np.inf).min(1, keepdims=True) if n_labels else np.zeros((n, 1))
    m[~base.any(1)] = 0.0
    term = m * (np.broadcast_to(factor, (n, n_labels)) if np.isscalar(factor) else factor)
    return np.where(at, np.where(covered, term + out, term), out)
