"""The shortlist fusion of a PlantClassifier as one fitted part.

:class:`ShortlistFusion` holds what a classifier with a shortlist fits
besides its network: the fitted shortlist model, C (the candidates per
document), the calibration (a, b) of the shortlist's scores and the fusion
weight α of α · σ(a·s + b) + (1 − α) · σ(z) (:func:`xplant.fusion.fuse`).
It saves itself to the folder ``shortlist/`` of a saved model (the model
through :func:`xplant.linear.save_linear`, the rest in ``fusion.json``)
and loads from it, without pickle.
"""

from pathlib import Path

import numpy as np

from ...fusion import SCORE_FLOOR, Source, calibrate, final_step, fit_shortlist, fuse, rank_labels


def fuse_pair(short, net, alpha, candidates, factor=None, n_labels=None):
    """The fused score α · g(s) + (1 − α) · σ(z) of two sources at each row's candidates.

    Parameters
    ----------
    short, net : tuple (ndarray of shape (n, C), (float, float) or None)
        The shortlist's and the network's scores at ``candidates`` with the
        calibration (a, b) that maps each to a probability (None: already
        probabilities), as :class:`xplant.fusion.Source` reads them.
    alpha : float in [0, 1]
        The shortlist's weight.
    candidates : ndarray of int of shape (n, C)
        Each row's candidates.
    factor : ndarray or None, default=None
        :func:`xplant.fusion.tail_factor` of the labels below the
        candidates; None: the candidates' scores only.
    n_labels : int or None, default=None
        The labels, with ``factor``.

    Returns
    -------
    ndarray of float64 of shape (n, n_labels), or (n, C) without ``factor``
        Floored at :data:`xplant.fusion.SCORE_FLOOR`.
    """
    sources = [Source(short[0], alpha, short[1], candidates),
               Source(net[0], 1.0 - alpha, net[1], candidates)]
    if factor is None:
        return fuse(sources, min_score=SCORE_FLOOR)
    return fuse(sources, n_labels=n_labels, floor="rest", floor_factor=factor,
                min_score=SCORE_FLOOR)


class ShortlistFusion:
    """A fitted shortlist with its fusion: the model, C, the calibration and α.

    One of a PlantClassifier's fitted parts (``parts_["shortlist_fusion"]``;
    its ``shortlist_``, ``n_candidates_``, ``shortlist_calibration_``,
    ``fusion_weight_`` and ``shortlist_info_`` read it).

    Parameters
    ----------
    shortlist : estimator
        The fitted shortlist model.
    n_candidates : int >= 1
        C, the labels per document the network scores.
    calibration : tuple of float, default=(1.0, 0.0)
        (a, b) of σ(a·s + b); (1, 0) is the plain sigmoid.
    weight : float in [0, 1] or None, default=None
        α (1 = the shortlist alone, 0 = PLANT alone on its candidates);
        None until it is chosen.
    info : dict or None, default=None
        What fitting the shortlist recorded (its C chosen on dev, each C's
        dev MAP), as :func:`xplant.fusion.fit_shortlist` returns it.

    Attributes
    ----------
    choice : DevChoice or None
        The record of the choice of (α, (a, b)), once made by the classifier.
    """

    def __init__(self, shortlist, n_candidates, calibration=(1.0, 0.0), weight=None, info=None):
        self.shortlist = shortlist
        self.n_candidates = int(n_candidates)
        self.calibration = (float(calibration[0]), float(calibration[1]))
        self.weight = None if weight is None else float(weight)
        self.info = info
        self.choice = None

    @classmethod
    def fit(cls, shortlist, texts, Y, dev_texts, Y_dev, n_candidates, *, n_jobs=None,
            random_state=0):
        """Fit the shortlist on training texts (:func:`xplant.fusion.fit_shortlist`).

        Parameters
        ----------
        shortlist : "linear" or estimator
            The ``shortlist`` parameter (checked by :func:`xplant.fusion.check_shortlist`).
        texts : list of str
            The training texts.
        Y : sparse matrix of shape (n_samples, n_labels)
            Their labels.
        dev_texts : list of str or None
            The dev texts ("linear" chooses its C on them).
        Y_dev : sparse matrix of shape (n_dev, n_labels) or None
            Their labels.
        n_candidates : int >= 1
            C.
        n_jobs : int or None, default=None
            Parallel jobs of the shortlist's fit.
        random_state : int, default=0
            Seeds the shortlist's fit.

        Returns
        -------
        ShortlistFusion
            With the plain sigmoid and no α yet (:meth:`choose` sets them).
        """
        model, info = fit_shortlist(shortlist, texts, Y, dev_texts, Y_dev, n_jobs=n_jobs,
                                    random_state=random_state)
        return cls(model, n_candidates, info=info)

    def choose(self, setting, scoring, best=None):
        """Set α and the calibration: given, chosen on dev, or the fallback.

        Parameters
        ----------
        setting : "dev", float or (float, (float, float))
            The ``fusion`` parameter (:func:`xplant.fusion.check_fusion`): a
            pair fixes α and the calibration, nothing is chosen; a float fixes α.
        scoring : str
            The dev metric of the choice (recorded).
        best : callable or None, default=None
            ``best()`` gives the :class:`~xplant.model_selection.DevChoice`
            of (α, (a, b)) on dev; None without labelled dev data (then α is
            the fixed one, 0.5 for "dev", with the plain sigmoid, recorded
            as a fallback).

        Returns
        -------
        DevChoice
            Also kept as ``choice``.
        """
        from ...fusion import check_fusion
        from ...model_selection import choose_on_dev
        fixed = check_fusion(setting)
        if isinstance(fixed, tuple):       # α and the calibration given: nothing chosen
            choice = choose_on_dev("fusion", [fixed], None, family="ranking", criterion=scoring,
                                   fallback=fixed, fixed=True)
        elif best is not None:
            choice = best()
        else:
            choice = choose_on_dev("fusion", [None], None, family="ranking", criterion=scoring,
                                   has_dev=False, warn=False,
                                   fallback=(0.5 if fixed == "dev" else float(fixed), (1.0, 0.0)))
        self.weight, self.calibration = choice.value
        self.choice = choice
        return choice

    def rank(self, texts, n_labels, *, full_tail=False, raw=False, top=None):
        """Each text's candidates by the shortlist, their scores, and its ranking beyond C.

        Parameters
        ----------
        texts : list of str
            What the shortlist reads.
        n_labels : int
            The labels.
        full_tail : bool, default=False
            Rank beyond C too, for ordering the labels below the candidates:
            every label when the shortlist scores them all, else 2C.
        raw : bool, default=False
            The shortlist's raw scores instead of the calibrated probabilities.
        top : int or None, default=None
            With ``full_tail``, cut the full ranking at the ``top`` labels a
            top-k needs (its first ``top`` labels are the full ranking's).

        Returns
        -------
        candidates : ndarray of int64 of shape (n, C)
        scores : ndarray of float64 of shape (n, C)
        beyond : ndarray of int64 of shape (n, k - C)
            The shortlist's ranking after the candidates.
        """
        C, L = self.n_candidates, n_labels
        final = final_step(self.shortlist)
        dense = hasattr(final, "decision_function") or hasattr(final, "predict_proba")
        k = (L if top is None else min(L, max(C, top))) if (full_tail and dense) \
            else min(L, 2 * C if full_tail else C)
        idx, s = rank_labels(self.shortlist, texts, k)
        s = s[:, :C]
        if not raw:
            s = calibrate(s, self.calibration)
        return idx[:, :C], s, idx[:, C:]

    def apply(self, shortlist_scores, logits, candidates, factor=None, n_labels=None):
        """The fused scores of the candidates: α · σ(a·s + b) + (1 − α) · σ(z).

        Parameters
        ----------
        shortlist_scores : ndarray of shape (n, C)
            The shortlist's raw scores at ``candidates``.
        logits : ndarray of shape (n, C)
            The network's (adjusted) logits there.
        candidates, factor, n_labels
            As in :func:`fuse_pair`.

        Returns
        -------
        ndarray of float64 of shape (n, n_labels), or (n, C) without ``factor``
        """
        return fuse_pair((shortlist_scores, self.calibration), (logits, (1.0, 0.0)),
                         self.weight, candidates, factor, n_labels)

    def to_dict(self):
        """``fusion.json``'s fields: calibration, fusion weight, C and the shortlist's record.

        Returns
        -------
        dict
            JSON values: ``{"calibration": [a, b], "fusion_weight": float or
            None, "n_candidates": int, "info": {"C", "dev_map"}}``.
        """
        info = self.info or {}
        return {"calibration": [float(v) for v in self.calibration],
                "fusion_weight": self.weight,
                "n_candidates": self.n_candidates,
                "info": {"C": info.get("C"),
                         "dev_map": {str(k): v for k, v in info.get("dev_map", {}).items()}}}

    @classmethod
    def from_dict(cls, state, shortlist, where="fusion.json"):
        """The part of a :meth:`to_dict` dict and a fitted shortlist model.

        Parameters
        ----------
        state : dict
            ``fusion.json``'s fields.
        shortlist : estimator
            The fitted shortlist model.
        where : str or Path, default="fusion.json"
            The file ``state`` was read from, named in errors.

        Returns
        -------
        ShortlistFusion

        Raises
        ------
        ValueError
            Naming ``where`` and the field: a calibration that is not two
            finite numbers, a fusion weight outside [0, 1], C below 1.
        """
        from ...persistence._codec import FieldChecker
        c = FieldChecker(state, where)
        cal = c.get("calibration", list, "[a, b]")
        if len(cal) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                    and np.isfinite(v) for v in cal):
            c.fail("calibration", f"must be two finite numbers, got {cal!r}")
        weight = None if state.get("fusion_weight", 0) is None else \
            c.number("fusion_weight", low=0.0, high=1.0)
        return cls(shortlist, c.integer("n_candidates", low=1), (cal[0], cal[1]), weight,
                   state.get("info", {}))

    def save(self, folder, *, overwrite=False):
        """Write the part into ``folder`` without pickle.

        The shortlist model goes through :func:`xplant.linear.save_linear`
        (TF-IDF vocabulary and weights in JSON and safetensors, trees in
        their own format); :meth:`to_dict` goes to ``fusion.json``.

        Parameters
        ----------
        folder : str or Path
            The folder to write (``shortlist/`` of a saved model).
        overwrite : bool, default=False
            Replace an existing folder (a fresh fit into the
            ``checkpoint_dir`` of an earlier one).

        Returns
        -------
        Path

        Raises
        ------
        TypeError
            A shortlist that ``save_linear`` cannot store (naming the kinds it can).
        FileExistsError
            When ``folder`` exists and ``overwrite`` is False.
        """
        from ...linear import save_linear
        from ...persistence._codec import write_json
        folder = Path(folder)
        try:
            save_linear(self.shortlist, folder, overwrite=overwrite)
        except TypeError as exc:
            raise TypeError(f"this PlantClassifier's shortlist cannot be saved: {exc}") from exc
        write_json(folder / "fusion.json", self.to_dict())
        return folder

    @classmethod
    def load(cls, folder, n_labels):
        """The part saved by :meth:`save` in ``folder``, checked against the model's labels.

        Parameters
        ----------
        folder : str or Path
            The folder :meth:`save` wrote.
        n_labels : int
            The model's labels.

        Returns
        -------
        fusion : ShortlistFusion
            The saved part, its shortlist loaded from the folder's own file.

        Raises
        ------
        ValueError
            When ``fusion.json`` is missing or invalid, or the shortlist has
            other labels than the model, or C is more than its labels.
        """
        from ... import unseen
        from ..._files import read_json_object
        from ...linear import load_linear
        folder = Path(folder)
        meta_file = folder / "fusion.json"
        if not meta_file.is_file():
            raise ValueError(f"{folder}: no fusion.json; the shortlist folder is damaged, save "
                             "the model again")
        state = read_json_object(meta_file, "a shortlist's calibration and fusion weight")
        part = cls.from_dict(state, None, meta_file)
        part.shortlist = load_linear(folder)
        have = getattr(final_step(part.shortlist), "n_labels_", n_labels)
        if have != n_labels or not 1 <= part.n_candidates <= n_labels:
            raise ValueError(f"{folder}: the shortlist has {have} labels and "
                             f"{part.n_candidates} candidates; the model has {n_labels} labels")
        return part

    def __eq__(self, other):
        if not isinstance(other, ShortlistFusion):
            return NotImplemented
        return self.to_dict() == other.to_dict() and type(self.shortlist) is type(other.shortlist)

    __hash__ = None
