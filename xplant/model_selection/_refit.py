"""Refit on train + dev: choose everything on dev, then fit once more with the choices fixed.

Several CodiEsp systems train their final model on train + dev once dev has
chosen the settings (Miranda-Escalada et al., CLEF eHealth 2020 overview;
López-García et al. 2021 for the best published CodiEsp-D result). In xplant
the dev split chooses the epoch count, ``stage1_weight``, the fusion weight α
and the shortlist's calibration, the shortlist's C, the logit adjustment τ and
the decision rule with its k, threshold and per-label thresholds
(:func:`choose_on_dev` records, ``dev_choices_``). :func:`refit_params` maps a
fitted estimator's choices to the ``set_params`` values that pin them, and
:class:`RefitOnDev` fits the estimator on train with dev, then a clone on
train + dev with those values: the refit has no dev data left and chooses
nothing, so every record of its ``dev_choices_`` says ``fixed``. The test
split is never read.

The option lives here, as a meta-estimator, rather than in the estimator's
own parameters: it needs two fits of one estimator (as
:class:`sklearn.model_selection.GridSearchCV` with ``refit=True`` does, whose
``best_estimator_`` is refitted on the whole data), it serves any estimator
that records its dev choices (a :class:`~xplant.neural.PlantClassifier`, a
:class:`~sklearn.pipeline.Pipeline` ending in one, an estimator without
choices, refitted as it is), and the estimator keeps one fit.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils.metaestimators import available_if

from .._params import final_step, fit_accepts

#: The epoch counts a refit can take (:func:`refit_params`).
REFIT_EPOCHS = ("fixed", "scaled")

#: The epoch count of a refit unless told otherwise (:class:`RefitOnDev`,
#: ``xplant run --refit``), set by the one-time benchmark at the main job's
#: budget (:doc:`/benchmarks/results`, "Refit on train and dev").
DEFAULT_REFIT_EPOCHS = "scaled"


def refit_params(estimator, *, epochs="fixed", n_train=None, n_dev=None):
    """The ``set_params`` values that pin a fitted estimator's dev choices for a refit.

    Parameters
    ----------
    estimator : estimator
        Fitted on train with dev data; its ``dev_choices_`` (records of
        :func:`choose_on_dev`) and fitted attributes are read. A Pipeline
        is read through its last step (the keys carry the step's prefix).
        An estimator without ``dev_choices_`` gives ``{}``.
    epochs : {"fixed", "scaled"}, default="fixed"
        The epoch count of the refit: the epoch chosen on dev, or that count
        scaled by (n_train + n_dev) / n_train and rounded (at least 1). Each
        refit epoch passes over more documents, so "fixed" takes more
        optimiser steps than the first fit, "scaled" more still.
    n_train, n_dev : int or None
        The training and dev documents of the first fit; needed by
        ``epochs="scaled"``.

    Returns
    -------
    dict
        By choice: ``max_epochs`` (and ``patience=None``: no early stopping,
        the count is fixed), ``stage1_weight`` (float), ``fusion``
        ``(α, (a, b))`` (α and the shortlist's calibration, fitted numbers
        carried over), ``shortlist`` (an unfitted clone of the fitted
        shortlist: its C), ``decision__logit_adjustment`` (τ), ``decision``
        with ``decision__k``, ``decision__threshold`` and
        ``decision__thresholds`` (the per-label thresholds, fitted numbers
        carried over, or None), and ``validation_fraction=None`` where the
        estimator has it (the refit holds nothing out).

    Raises
    ------
    ValueError
        For an unknown ``epochs``, ``"scaled"`` without positive ``n_train``
        and ``n_dev``, or a choice that the first fit did not make on dev
        (it took its fallback: there was no labelled dev data).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> fitted = SimpleNamespace(dev_choices_={"epoch": {"value": 6, "on_dev": True}})
    >>> refit_params(fitted, epochs="scaled", n_train=200, n_dev=100)
    {'max_epochs': 9, 'patience': None}
    """
    if epochs not in REFIT_EPOCHS:
        raise ValueError(f"epochs must be one of {list(REFIT_EPOCHS)}, got {epochs!r}")
    est, prefix = final_step(estimator, with_prefix=True)
    choices = getattr(est, "dev_choices_", None) or {}
    fell = sorted(n for n, c in choices.items() if not c["on_dev"] and not c.get("fixed"))
    if fell:
        raise ValueError(f"the first fit chose {fell} without labelled dev data (fallbacks): "
                         "a refit pins what dev chose, so fit it with validation_data")
    out = {}
    if "epoch" in choices:
        count = int(choices["epoch"]["value"])
        if epochs == "scaled":
            for name, n in (("n_train", n_train), ("n_dev", n_dev)):
                if not isinstance(n, numbers.Integral) or n < (1 if name == "n_train" else 0):
                    raise ValueError(f'epochs="scaled" needs {name} as a count, got {n!r}')
            count = max(1, int(round(count * (n_train + n_dev) / n_train)))
        out.update(max_epochs=count, patience=None)
    if "stage1_weight" in choices:
        out["stage1_weight"] = float(choices["stage1_weight"]["value"])
    if "fusion" in choices:
        alpha, (a, b) = choices["fusion"]["value"]
        out["fusion"] = (float(alpha), (float(a), float(b)))
    if "shortlist_C" in choices and getattr(est, "shortlist_", None) is not None:
        out["shortlist"] = clone(est.shortlist_)
    if "logit_adjustment" in choices:
        out["decision__logit_adjustment"] = float(choices["logit_adjustment"]["value"])
    if "k" in choices and getattr(est, "decision_rule_", None) is not None:
        rule = est.decision_rule_.to_dict()
        thresholds = rule["thresholds"]
        out.update({"decision": rule["rule"], "decision__k": int(rule["k"]),
                    "decision__threshold": float(rule["threshold"]),
                    "decision__thresholds": None if thresholds is None
                    else [float(t) for t in thresholds]})
    if hasattr(est, "get_params") and "validation_fraction" in est.get_params(deep=False):
        out["validation_fraction"] = None
    return {prefix + k: v for k, v in out.items()}


def _estimator_has(name):
    """Whether the wrapped estimator (fitted if it is, else as given) has ``name``:
    the refit offers a score method only where its estimator does, as
    scikit-learn's meta-estimators do (``available_if``)."""
    def check(self):
        return hasattr(getattr(self, "estimator_", self.estimator), name)
    return check


def _delegated(name):
    """RefitOnDev's method ``name(X)``: the refit's answer, offered where its estimator has it.

    The one body and docstring of ``predict``, ``predict_proba`` and
    ``decision_function``.
    """
    def method(self, X):
        return self._delegate(name, X)
    method.__name__, method.__qualname__ = name, f"RefitOnDev.{name}"
    method.__doc__ = f"""The refit's ``{name}``.

        Parameters
        ----------
        X : list of str, array-like or sparse matrix of shape (n, ...)
            Documents in the form ``fit`` took.

        Returns
        -------
        answer : ndarray or sparse matrix
            What ``estimator_`` answers.
        """
    return available_if(_estimator_has(name))(method)


def _stack(a, b):
    """Train rows then dev rows: lists, sparse matrices or arrays."""
    if sp.issparse(a) or sp.issparse(b):
        return sp.vstack([sp.csr_matrix(a), sp.csr_matrix(b)]).tocsr()
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.concatenate([a, b])
    return list(a) + list(b)


def _n(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


class RefitOnDev(MetaEstimatorMixin, BaseEstimator):
    """Choose everything on dev, then refit on train + dev with the choices fixed.

    ``fit`` fits a clone of ``estimator`` on the training data with the dev
    split (``first_``: it makes every choice on dev), then another clone on
    train + dev with :func:`refit_params` pinning those choices
    (``estimator_``), which ``predict`` and the other methods use. The dev
    split chooses; a test split is never read.

    Parameters
    ----------
    estimator : estimator
        Unfitted; its ``fit(X, Y, validation_data=(X_dev, Y_dev))`` makes
        its choices on dev (:class:`~xplant.neural.PlantClassifier`, a
        Pipeline ending in one), or an estimator without dev choices, refitted
        on train + dev as it is (a linear row whose C was chosen outside).
    epochs : {"scaled", "fixed"}, default="scaled"
        The refit's epoch count: the one chosen on dev times
        (n_train + n_dev) / n_train, rounded, or the chosen count itself
        (:func:`refit_params`). The default (:data:`DEFAULT_REFIT_EPOCHS`)
        follows the one-time benchmark of :doc:`/benchmarks/results`
        (``benchmarks/bench_refit.py``).

    Attributes
    ----------
    first_ : estimator
        The fit on train that chose on dev (its ``dev_choices_``).
    estimator_ : estimator
        The refit on train + dev.
    refit_params_ : dict
        The values that pinned the choices (:func:`refit_params`).
    n_train_, n_dev_ : int
        Documents of train and dev; the refit trained on their sum.

    Examples
    --------
    >>> from xplant.neural import PlantClassifier                     # doctest: +SKIP
    >>> refit = RefitOnDev(PlantClassifier(shortlist="linear"))       # doctest: +SKIP
    >>> refit.fit(X_train, Y_train, validation_data=(X_dev, Y_dev))   # doctest: +SKIP
    >>> refit.estimator_.dev_choices_["epoch"]["fixed"]               # doctest: +SKIP
    True
    """

    def __init__(self, estimator, *, epochs=DEFAULT_REFIT_EPOCHS):
        self.estimator = estimator
        self.epochs = epochs

    def fit(self, X, Y, validation_data=None, **fit_params):
        """Fit on train choosing on dev, then refit on train + dev with the choices fixed.

        Parameters
        ----------
        X : list of str, array-like or sparse matrix of shape (n_train, ...)
            The training documents.
        Y : {array-like, sparse matrix} of shape (n_train, n_labels)
            Their labels (a label matrix: train and dev rows are stacked).
        validation_data : tuple (X_dev, Y_dev)
            The dev split, in the forms of X and Y.
        **fit_params
            Passed to both fits (prefixed with the step's name for a
            Pipeline, as :meth:`sklearn.pipeline.Pipeline.fit` routes them;
            ``validation_data`` is routed to the last step here).

        Returns
        -------
        self : RefitOnDev
            Fitted: ``first_`` (the fit that chose on dev) and ``estimator_``.

        Raises
        ------
        ValueError
            Without ``validation_data``, for an unknown ``epochs``, for an
            estimator whose ``fit`` (a Pipeline's last step's) takes no
            ``validation_data``, or when the first fit took a fallback (no
            labelled dev data).
        """
        if self.epochs not in REFIT_EPOCHS:
            raise ValueError(f"epochs must be one of {list(REFIT_EPOCHS)}, got {self.epochs!r}")
        if validation_data is None or len(validation_data) != 2:
            raise ValueError("RefitOnDev needs validation_data=(X_dev, Y_dev): the dev split "
                             "chooses before the refit on train + dev")
        final, prefix = final_step(self.estimator, with_prefix=True)    # a Pipeline routes it to its last step
        if not fit_accepts(final, "validation_data"):
            raise ValueError(
                f"RefitOnDev wraps an estimator that chooses on dev; {type(final).__name__}.fit "
                "takes no validation_data, so it chooses nothing there: fit it on train + dev "
                "yourself")
        X_dev, Y_dev = validation_data
        self.n_train_, self.n_dev_ = _n(X), _n(X_dev)
        self.first_ = clone(self.estimator).fit(
            X, Y, **{prefix + "validation_data": validation_data}, **fit_params)
        self.refit_params_ = refit_params(self.first_, epochs=self.epochs, n_train=self.n_train_,
                                          n_dev=self.n_dev_)
        self.estimator_ = clone(self.estimator).set_params(**self.refit_params_)
        self.estimator_.fit(_stack(X, X_dev), _stack(Y, Y_dev), **fit_params)
        return self

    def _delegate(self, name, *args, **kwargs):
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "estimator_")
        return getattr(self.estimator_, name)(*args, **kwargs)

    predict = _delegated("predict")
    predict_proba = _delegated("predict_proba")
    decision_function = _delegated("decision_function")

    @available_if(_estimator_has('predict_top_k'))
    def predict_top_k(self, X, k=5):
        """The refit's ``predict_top_k``.

        Parameters
        ----------
        X : list of str, array-like or sparse matrix of shape (n, ...)
            Documents in the form ``fit`` took.
        k : int, default=5
            Labels per document.

        Returns
        -------
        indices, scores : ndarray of shape (n, k)
            What ``estimator_.predict_top_k`` answers.
        """
        return self._delegate("predict_top_k", X, k=k)
