"""Choose on dev: the one rule every choice of xplant follows (public in :mod:`xplant.model_selection`).

Every value that xplant chooses on a dev split (the fusion weight α and the
shortlist's calibration, ``stage1_weight``, the logit adjustment τ, k of the
top-k rule, the global threshold, the shortlist's C, the run's parameter
grid) goes through :func:`choose_on_dev`, so that each choice

- uses one of two documented criterion families: **ranking** choices (the
  epoch, α, the calibration, ``stage1_weight``, C, fusion weights) maximise
  the dev ``scoring`` metric (MAP by default); **decision** choices (the
  rule, k, thresholds, τ) maximise dev micro-F1;
- breaks ties the same way: the earliest candidate, so candidates are listed
  from the preferred (simplest, or the model as trained) value;
- behaves the same way without labelled dev data: it takes its documented
  fallback and warns with :class:`NoDevDataWarning`, naming the choice, the
  fallback and the fix;
- is recorded in one form, :class:`DevChoice`: the chosen value, the
  criterion, and every candidate's dev score;
- can be given instead of chosen (``fixed=True``): a refit on train + dev
  (:class:`RefitOnDev`) pins every value its first fit chose, and the record
  says so (``fixed`` True, no dev score, no warning).
"""

import math
import numbers
import warnings
from dataclasses import dataclass, field

#: The two criterion families (see the module docstring).
CRITERIA = {"ranking": "the dev scoring metric (MAP by default)",
            "decision": "dev micro-F1 of the decision rule"}


class NoDevDataWarning(UserWarning):
    """A choice on dev took its fallback: the fit had no labelled dev data."""


@dataclass(frozen=True)
class DevChoice:
    """One choice made on dev, as every estimator and ``xplant run`` record it.

    Attributes
    ----------
    name : str
        What was chosen ("fusion_weight", "logit_adjustment", "k", ...).
    family : {"ranking", "decision"}
        The criterion family (:data:`CRITERIA`).
    criterion : str
        The metric maximised ("map", "micro_f1", ...).
    value : object
        The chosen candidate, or the fallback.
    scores : tuple of (candidate, float)
        Each candidate's dev score, in candidate order; empty without dev data.
    on_dev : bool
        False when the fallback was taken (no labelled dev data).
    kept : object
        With ``keep=True``: what the chosen candidate's ``score`` call gave
        beside its score (a fitted model, say); None otherwise. Not part of
        the record.
    fixed : bool
        True when the value was given, not chosen (``choose_on_dev(...,
        fixed=True)``): nothing was scored on dev and no fallback was
        taken, so no :class:`NoDevDataWarning` is due.
    """

    name: str
    family: str
    criterion: str
    value: object
    scores: tuple = ()
    on_dev: bool = True
    kept: object = field(default=None, compare=False, repr=False)
    fixed: bool = False

    def to_dict(self):
        """The record as JSON-ready Python (tuples become lists); ``"fixed": True``
        only for a fixed value, so the records of chosen values keep their keys."""
        def plain(v):
            if isinstance(v, tuple):
                return [plain(x) for x in v]
            if isinstance(v, numbers.Integral) and not isinstance(v, bool):
                return int(v)
            if isinstance(v, numbers.Real) and not isinstance(v, bool):
                return float(v)
            return v
        out = {"name": self.name, "family": self.family, "criterion": self.criterion,
               "value": plain(self.value),
               "scores": [[plain(c), float(s)] for c, s in self.scores],
               "on_dev": bool(self.on_dev)}
        if self.fixed:
            out["fixed"] = True
        return out


def choose_on_dev(name, candidates, score, *, family, criterion, fallback, has_dev=True,
                  warn=True, keep=False, fixed=False, reason=None):
    """Choose the candidate with the highest dev score.

    Parameters
    ----------
    name : str
        What is chosen (used in the record and in the warning).
    candidates : sequence
        The values to choose from, the preferred one first: ties keep the
        earliest.
    score : callable or sequence of float
        ``score(candidate)`` gives a candidate's dev score (higher is
        better), or the scores themselves, one per candidate. Not called
        without dev data.
    family : {"ranking", "decision"}
        The criterion family (:data:`CRITERIA`).
    criterion : str
        The metric's name, for the record ("map", "micro_f1").
    fallback : object
        The value taken without labelled dev data.
    has_dev : bool, default=True
        Whether labelled dev data exist (a dev split with at least one
        positive label).
    warn : bool, default=True
        Warn with :class:`NoDevDataWarning` when the fallback is taken.
    keep : bool, default=False
        ``score(candidate)`` returns ``(score, payload)``; the chosen
        candidate's payload is returned as ``kept``, and every other payload
        is dropped as soon as a better one arrives (one fitted model in
        memory at a time, not one per candidate).
    fixed : bool, default=False
        The value is given, not chosen: ``candidates`` holds it alone,
        ``score`` is not read, nothing warns, and the record has ``fixed``
        True and ``on_dev`` False (how a refit on train + dev records the
        values its first fit chose on dev).
    reason : str or None, default=None
        Why the dev split cannot guide this choice (a
        ``DevUsability.reason``), for the warning; None: there is no
        labelled dev data.

    Returns
    -------
    DevChoice

    Raises
    ------
    ValueError
        For an unknown family, no candidates, a score count that differs
        from the candidates', or a NaN score.

    Warns
    -----
    NoDevDataWarning
        Without labelled dev data: the choice, its fallback and the fix.

    Examples
    --------
    >>> choose_on_dev("k", [1, 2, 3], [0.4, 0.6, 0.6], family="decision",
    ...               criterion="micro_f1", fallback=1).value
    2
    >>> choose_on_dev("k", [3], None, family="decision", criterion="micro_f1",
    ...               fallback=3, fixed=True).fixed
    True
    """
    if family not in CRITERIA:
        raise ValueError(f"family must be one of {sorted(CRITERIA)}, got {family!r}")
    candidates = list(candidates)
    if not candidates:
        raise ValueError(f"no candidates to choose {name} from")
    if fixed:
        if len(candidates) != 1:
            raise ValueError(f"a fixed {name} is one value, got {len(candidates)} candidates")
        return DevChoice(name, family, criterion, candidates[0], (), False, fixed=True)
    if not has_dev:
        if warn:
            if reason:
                why = (f"dev cannot choose it ({reason})", "Give dev documents labelled with "
                       "such labels")
            else:
                why = ("no labelled dev data to choose it on", "Pass validation_data with "
                       "labelled documents (or a validation_fraction)")
            warnings.warn(f"{name}: {why[0]}; using {fallback!r}. {why[1]}, or set the value "
                          "yourself", NoDevDataWarning, stacklevel=3)
        return DevChoice(name, family, criterion, fallback, (), False)
    if callable(score):
        outs = ((score(c) if keep else (score(c), None)) for c in candidates)
    else:
        outs = ((v, None) for v in score)
    values, best, kept = [], None, None
    for value, payload in outs:                 # one payload kept: the best so far
        values.append(float(value))
        if math.isnan(values[-1]):
            raise ValueError(f"a dev score of {name} is NaN: {values}")
        if best is None or values[-1] > values[best]:      # ties keep the earlier
            best, kept = len(values) - 1, payload
    if len(values) != len(candidates):
        raise ValueError(f"{len(values)} scores for {len(candidates)} candidates of {name}")
    return DevChoice(name, family, criterion, candidates[best],
                     tuple(zip(candidates, values)), True, kept)


#: Below this share of its positives on labels with training documents, a dev split is
#: flagged: its choices rest on few of its labels (:func:`dev_usability`).
LOW_DEV_COVERAGE = 0.5


@dataclass(frozen=True)
class DevUsability:
    """Whether a dev split can guide a choice (:func:`dev_usability`).

    Attributes
    ----------
    usable : bool
        At least one dev positive is on a label with a training positive.
    reason : str or None
        Why not, for the messages (None when usable).
    n_positives : int
        The dev split's positive (document, label) pairs.
    n_covered : int
        Those on labels with at least one training positive.
    coverage : float
        ``n_covered / n_positives`` (0.0 without positives).
    low : bool
        Usable, but ``coverage`` is below :data:`LOW_DEV_COVERAGE`.
    """

    usable: bool
    reason: object
    n_positives: int
    n_covered: int
    coverage: float
    low: bool


def dev_usability(Y_dev, label_frequency=None, *, labels="seen"):
    """Whether a dev split's labels can guide a choice on dev: the one rule of every choice.

    A choice on dev compares a model's rankings or decisions on the dev
    labels; a model trained on the training split ranks only the labels it
    has training positives for. So a dev split guides a choice only if some
    of its positives are on such labels: one whose labels all lie outside
    them (or that has no positive, or no documents) makes every choice
    meaningless (the top-k rule would pick k = all labels), and each choice
    then takes its fallback with a :class:`NoDevDataWarning` naming the
    reason. ``xplant run`` refuses such a dev file before fitting and warns
    when its coverage is low.

    Parameters
    ----------
    Y_dev : {ndarray, sparse matrix} of shape (n_docs, n_labels) or None
        The dev labels, 0/1; columns past ``label_frequency``'s length
        (labels outside the training columns) count as uncovered.
    label_frequency : array-like of int of shape (n_known,), default=None
        Training documents per label; None counts every dev positive as
        covered (only an empty dev split is unusable).
    labels : {"seen", "unseen"}, default="seen"
        The labels a choice is about. ``"seen"``: a dev positive is covered
        on a label with training documents (a model's choices).
        ``"unseen"``: on a label of ``label_frequency``'s columns with none
        (the weights that score only the labels absent from training, such
        as the unseen-code channel's of
        :class:`~xplant.unseen.DescriptionFusion`: a dev split without such
        a positive gives them all one dev score, and its first candidate
        would win by the tie).

    Returns
    -------
    DevUsability

    Examples
    --------
    >>> import numpy as np
    >>> dev_usability(np.array([[1, 0, 1], [0, 0, 1]]), [5, 0, 0]).coverage
    0.3333333333333333
    >>> dev_usability(np.array([[0, 1]]), [4, 0]).reason
    "none of the dev split's 1 positive labels is on a label with training documents"
    >>> dev_usability(None).reason
    'no dev split'
    >>> dev_usability(np.array([[1, 0, 0]]), [5, 0, 0], labels="unseen").reason
    "none of the dev split's 1 positive labels is on a label without training documents"
    """
    if labels not in ("seen", "unseen"):
        raise ValueError(f"labels must be 'seen' or 'unseen', got {labels!r}")
    import numpy as np
    import scipy.sparse as sp
    if Y_dev is None:
        return DevUsability(False, "no dev split", 0, 0, 0.0, False)
    Y = sp.csr_matrix(Y_dev)
    Y.eliminate_zeros()
    n = int(Y.nnz)
    if Y.shape[0] == 0:
        return DevUsability(False, "the dev split holds no documents", 0, 0, 0.0, False)
    if n == 0:
        return DevUsability(False, "the dev split has no positive label", 0, 0, 0.0, False)
    if label_frequency is None:
        covered = n
    else:
        freq = np.asarray(label_frequency).ravel()
        cols = Y.indices
        inside = cols < freq.size
        on = freq[cols[inside]] > 0 if labels == "seen" else freq[cols[inside]] == 0
        covered = int(np.count_nonzero(on))
    coverage = covered / n
    if covered == 0:
        return DevUsability(False, f"none of the dev split's {n} positive labels is on a label "
                                   f"{'with' if labels == 'seen' else 'without'} training "
                                   "documents", n, 0, 0.0, False)
    return DevUsability(True, None, n, covered, coverage, coverage < LOW_DEV_COVERAGE)
