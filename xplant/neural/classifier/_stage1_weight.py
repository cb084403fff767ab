"""``stage1_weight="dev"``: Stage 2 once per candidate weight, from the same planted start.

PlantClassifier's kept Stage 1 loss (``stage1_weight``) helps on some
corpora and hurts on others (docs/benchmarks/evidence.md, section "PLANT's
defaults across corpus shapes"), so it can be chosen on the dev split inside ``fit``: Stage 1
runs once, then Stage 2 trains once per candidate, each from the planted
weights, the same optimizer start, the same sampling seed and its own early
stopping; the candidate with the best dev score (the early-stopping
``scoring``, dev MAP by default) is kept.
"""

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from skorch.callbacks import Callback

from ..training._checkpoint import finished_training, read_checkpoint, restore_checkpoint
from ._final_choices import choose_epoch

#: The weights ``stage1_weight="dev"`` chooses from: the paper's 0 and the
#: default 0.1. Two, so that the fit costs less than twice a fixed-weight
#: fit (one Stage 1, two Stage 2); 1 was never ahead of 0.1 on dev
#: (docs/benchmarks/evidence.md, section "PLANT's defaults across corpus shapes").
STAGE1_WEIGHT_CANDIDATES = (0.0, 0.1)

#: The weight ``stage1_weight="dev"`` falls back to where it cannot choose
#: (no labelled dev data): 0.1, the choice on every CodiEsp shape measured.
STAGE1_WEIGHT_FALLBACK = 0.1

#: How far ahead of the best earlier candidate (in the dev ``scoring``, 0.005 = half a
#: point of dev MAP) a later candidate must be to keep training (:class:`CandidateRace`):
#: the spread of dev MAP between neighbouring epochs of one fit, so a lead smaller
#: than this is no difference dev can show.
RACE_MARGIN = 0.005

#: How far behind (0.1: ten points of dev MAP) the earlier candidate's best at the same epoch a
#: later candidate may be, for :data:`ROUT_EPOCHS` epochs in a row after the warm-up, before
#: :class:`CandidateRace` stops it without waiting ``patience`` epochs. Measured on two
#: synthetic corpora (docs/benchmarks/speed.md, "A user's corpus of many short
#: documents"): the weight 0.1 that went on to lead was at most 0.035 behind at every
#: epoch after the warm-up; the ones that never led were 0.20 and 0.25 behind at the first.
ROUT_GAP = 0.1

#: Consecutive epochs a later candidate must trail by more than :data:`ROUT_GAP` to stop:
#: one, since the first epoch after the warm-up already parts the two kinds of curve above
#: (a gap of 0.1 is three times the leader's largest).
ROUT_EPOCHS = 1


def best_so_far(scores):
    """The running maximum of a dev curve, NaN (no score) counted as -inf.

    Examples
    --------
    >>> best_so_far([0.2, float("nan"), 0.5, 0.4]).tolist()
    [0.2, 0.2, 0.5, 0.5]
    """
    vals = np.asarray(scores, dtype=float)
    vals = np.where(np.isfinite(vals), vals, -np.inf)
    return np.maximum.accumulate(vals) if len(vals) else vals


def race_misses(scores, reference, *, margin=RACE_MARGIN, start=0):
    """Epochs since a candidate last led the reference curve by more than ``margin``.

    Parameters
    ----------
    scores : sequence of float
        The candidate's dev score per epoch so far (NaN: not scored).
    reference : sequence of float
        The best earlier candidate's dev score per epoch (its whole fit);
        the candidate's epoch e is compared with the reference's best up to
        epoch e (its best overall past its last epoch).
    margin : float, default=RACE_MARGIN
    start : int, default=0
        Epochs not counted (the unfreezing warm-up, when a head trained
        alone says little of the whole network).

    Returns
    -------
    int
        Consecutive epochs, up to the last one and after ``start``, at which
        the candidate's best so far was not ahead by more than ``margin``.

    Examples
    --------
    >>> race_misses([0.5, 0.6, 0.7], [0.5, 0.6, 0.7])     # level: no lead
    3
    >>> race_misses([0.5, 0.6, 0.8], [0.5, 0.6, 0.7])     # ahead at the last epoch
    0
    >>> race_misses([0.1, 0.2, 0.7, 0.7], [0.5, 0.6, 0.65], start=2)
    0
    >>> race_misses([0.1, 0.2, 0.6, 0.6], [0.5, 0.6, 0.65], start=2)
    2
    """
    own, ref = best_so_far(scores), best_so_far(reference)
    if not len(ref):
        return 0
    misses = 0
    for e in range(int(start), len(own)):
        ahead = own[e] > ref[min(e, len(ref) - 1)] + margin
        misses = 0 if ahead else misses + 1
    return misses


def race_routed(scores, reference, *, gap=ROUT_GAP, epochs=ROUT_EPOCHS, start=0):
    """Whether a candidate trailed the reference by more than ``gap`` at each of its last epochs.

    Parameters
    ----------
    scores : sequence of float
        The candidate's dev score per epoch so far (NaN: not scored).
    reference : sequence of float
        The best earlier candidate's dev score per epoch; compared, as in
        :func:`race_misses`, by its best up to the same epoch.
    gap : float, default=ROUT_GAP
    epochs : int, default=ROUT_EPOCHS
        How many of the last epochs must trail by more than ``gap``.
    start : int, default=0
        Epochs of the warm-up, never counted.

    Returns
    -------
    bool
        False while fewer than ``epochs`` epochs follow the warm-up.

    Examples
    --------
    >>> ref = [0.45, 0.43, 0.67, 0.73, 0.75]
    >>> race_routed([0.47, 0.50, 0.47, 0.50], ref, start=2)    # 0.23 behind at the last
    True
    >>> race_routed([0.47, 0.50, 0.70, 0.70], ref, start=2)    # 0.03 behind: still racing
    False
    >>> race_routed([0.47, 0.50, 0.47], ref, start=2)          # 0.20 behind at the first
    True
    >>> race_routed([0.47, 0.50, 0.47], ref, start=2, epochs=2)  # two epochs asked for
    False
    >>> race_routed([0.47, 0.50], ref, start=2)                # the warm-up alone
    False
    """
    own, ref = best_so_far(scores), best_so_far(reference)
    if not len(ref) or len(own) - int(start) < epochs:
        return False
    return all(own[e] < ref[min(e, len(ref) - 1)] - gap
               for e in range(len(own) - epochs, len(own)))


@dataclass(eq=False)
class CandidateRace(Callback):
    """Stop a later ``stage1_weight`` candidate that dev does not show ahead (skorch callback).

    Its settings are its fields (a dataclass, whose ``__init__`` skorch's
    ``get_params`` reads as it reads any callback's).

    After each epoch, :func:`race_misses` of the net's dev curve against the
    best earlier candidate's; at ``patience`` misses training stops, as
    early stopping stops it (the best epoch's weights are kept by early
    stopping's ``load_best``). A candidate far behind (:func:`race_routed`:
    more than :data:`ROUT_GAP` for :data:`ROUT_EPOCHS` epochs after the
    warm-up) stops at once. It reads only the history, so a resumed fit
    races on as the interrupted one did.

    Parameters
    ----------
    reference : sequence of float
        The best earlier candidate's dev score per epoch.
    monitor : str
        The history key of the dev score (``"valid_map"``).
    patience : int
        Misses that stop the candidate.
    margin : float, default=RACE_MARGIN
    start : int, default=0
        Epochs of the unfreezing warm-up, not counted.

    Attributes
    ----------
    stopped_ : bool
        True once the race stopped the candidate.
    why_ : str or None
        Why it stopped: ``"not ahead"`` (``patience`` misses) or ``"far
        behind"`` (:func:`race_routed`); None while it races.
    """

    reference: list
    monitor: str
    patience: int
    margin: float = RACE_MARGIN
    start: int = 0

    def initialize(self):
        self.stopped_, self.why_ = False, None
        return self

    def decide(self, scores):
        """Why a candidate with this dev curve stops now: ``"not ahead"``, ``"far behind"``
        or None (it races on).

        Parameters
        ----------
        scores : sequence of float
            The candidate's dev score per epoch so far.
        """
        if race_misses(scores, self.reference, margin=self.margin,
                       start=self.start) >= self.patience:
            return "not ahead"
        if race_routed(scores, self.reference, start=self.start):
            return "far behind"
        return None

    def on_epoch_end(self, net, **kwargs):
        why = self.decide([h.get(self.monitor, np.nan) for h in net.history])
        if why is not None:
            self.stopped_, self.why_ = True, why
            raise KeyboardInterrupt       # skorch ends training, as early stopping does


def resolve_stage1_weight(stage1_weight, *, dev_Y):
    """The fixed weight to train with, or "dev" where the choice on dev can run.

    Parameters
    ----------
    stage1_weight : float or "dev"
    dev_Y : sparse matrix of shape (n_dev, n_labels) or None
        The dev targets of the fit (None: no dev data).

    Returns
    -------
    float, "dev" or None
        None: ``"dev"`` without labelled dev data; the fit then takes
        :data:`STAGE1_WEIGHT_FALLBACK` as a fallback of
        :func:`~xplant.model_selection.choose_on_dev`.
    """
    if stage1_weight != "dev":
        return float(stage1_weight)
    if dev_Y is None or not dev_Y.nnz:
        return None                     # the fit records the fallback with the other choices
    return "dev"


def stage1_weight_to_train(clf, *, dev_Y):
    """The weight Stage 2 of ``clf`` trains with, its record put in ``clf.dev_choices_``.

    A weight given (not ``"dev"``) is recorded as fixed; ``"dev"`` without
    labelled dev data takes :data:`STAGE1_WEIGHT_FALLBACK`, recorded as a
    fallback. ``"dev"`` with labelled dev data records nothing yet:
    :func:`fit_stage2_on_dev` makes and records the choice.

    Parameters
    ----------
    clf : PlantClassifier
        In ``fit``, with ``dev_choices_`` started.
    dev_Y : sparse matrix of shape (n_dev, n_labels) or None
        The dev targets of the fit (None: no dev data).

    Returns
    -------
    float or "dev"
    """
    weight = resolve_stage1_weight(clf.stage1_weight, dev_Y=dev_Y)
    if weight is None:                  # "dev" without labelled dev data
        from ...model_selection import choose_on_dev
        clf.dev_choices_["stage1_weight"] = choose_on_dev(
            "stage1_weight", [STAGE1_WEIGHT_FALLBACK], None, family="ranking",
            criterion=clf.scoring, fallback=STAGE1_WEIGHT_FALLBACK, has_dev=False,
            warn=False).to_dict()
        weight = STAGE1_WEIGHT_FALLBACK
    if weight != "dev" and "stage1_weight" not in clf.dev_choices_:     # given, not chosen
        from ...model_selection import choose_on_dev
        clf.dev_choices_["stage1_weight"] = choose_on_dev(
            "stage1_weight", [float(weight)], None, family="ranking",
            criterion=clf.scoring, fallback=float(weight), fixed=True).to_dict()
    return weight


def fit_stage2_on_dev(clf, make_dataset, candidates=STAGE1_WEIGHT_CANDIDATES, *, resume=False):
    """Train Stage 2 once per ``stage1_weight`` candidate and keep the best on dev.

    Parameters
    ----------
    clf : PlantClassifier
        Initialized and planted (its ``module_`` holds the Stage 2 start),
        with dev data (``dev_docs_``); any ``strategy`` (each candidate trains
        through ``_continue_training``).
    make_dataset : callable
        ``make_dataset()`` builds the Stage 2 training dataset for the
        current ``clf.stage1_weight_`` (ranking items only when it is > 0).
    candidates : sequence of float, default=STAGE1_WEIGHT_CANDIDATES
    resume : bool, default=False
        With a checkpoint (``checkpoint_dir``, or a DeepSpeed config's),
        each candidate checkpoints into its own subfolder
        ``stage1_weight=<w>`` of the checkpoint's folder; ``resume``
        continues each from there (a completed candidate is restored, not
        trained again; DeepSpeed reads its config's ``resume`` instead).

    Returns
    -------
    list of dict
        One per candidate, in order: ``stage1_weight``, ``dev_<scoring>``
        (the best dev score of its early stopping; ``dev_map`` by default),
        ``best_epoch``, ``epochs`` (the epochs it trained), ``lr`` (its
        Stage 2 learning rate: with ``lr=None`` each weight has its own,
        :func:`~xplant.neural.default_lr`), ``raced_out`` (True when the
        race stopped it: dev did not show it ahead of an earlier candidate,
        or showed it far behind, :class:`CandidateRace`), ``seconds`` (wall
        seconds of its epochs, skorch's ``dur``, a resumed one's included). With ``clf.verbose``, each
        candidate's start and its epochs, wall time and dev score are
        printed, so a user sees that the choice trains Stage 2 once per
        candidate. The chosen
        candidate's weights, history and ``stage1_weight_`` are left in
        ``clf``.

    Raises
    ------
    KeyboardInterrupt
        When a candidate's training was interrupted (Ctrl-C, which skorch
        swallows): no choice is made from a half-trained candidate.

    Notes
    -----
    Cost: one Stage 1, the first candidate's Stage 2 to its early
    stopping, then each later one for as long as it races ahead on dev
    (with ``patience=None``, no race: every candidate trains
    ``max_epochs``). Where dev shows no difference a later candidate stops
    ``patience`` epochs after the unfreezing warm-up, one far behind
    (:func:`race_routed`) :data:`ROUT_EPOCHS` epochs after it; one that dev shows
    ahead trains to its own early stopping, and its epochs are exactly
    those of the fit with its fixed weight. The candidates share the start state (module
    weights, NumPy and torch random states), so they differ only by the
    weight and, with ``lr=None``, the learning rate that goes with it; ties
    go to the earlier candidate.
    """
    start = copy.deepcopy(clf.module_.state_dict())
    rng_state = copy.deepcopy(clf.rng_.bit_generator.state)
    torch_state = torch.get_rng_state()
    key = "valid_" + clf.scoring
    results, curves = [], []            # each trained candidate's dev curve, for the race

    def train(w):                           # one candidate from the planted start
        t0 = time.perf_counter()
        if clf.verbose:
            print(f"stage1_weight='dev': training Stage 2 with candidate {w:g} "
                  f"({len(results) + 1} of {len(candidates)})", flush=True)
        clf.stage1_weight_ = float(w)
        clf.resolve_phases()                # lr=None: the rate of this weight
        clf.rng_.bit_generator.state = copy.deepcopy(rng_state)
        torch.set_rng_state(torch_state)
        clf.initialize_history()
        clf.initialize_callbacks()          # a fresh early stopping and unfreezing schedule
        race = None
        if curves and clf.patience is not None:   # a later candidate races the earlier ones
            lead = max(curves, key=lambda c: float(np.nanmax(c)) if np.isfinite(c).any()
                       else -np.inf)
            warmup = max((int(ph[0]) for ph in clf.phases_), default=0)
            race = CandidateRace(lead, key, clf.patience, start=warmup).initialize()
            names = [n for n, _ in clf.callbacks_]
            at = names.index("checkpoint") if "checkpoint" in names else len(names)
            clf.callbacks_.insert(at, ("race", race))   # before the checkpoint: it marks a stop
        clf.module_.load_state_dict(start)
        clf.initialize_optimizer()
        ckpt = None
        saver = dict(clf.callbacks_).get("checkpoint")
        if saver is not None:                     # each candidate its own checkpoints
            saver.folder = sub = Path(saver.folder) / f"stage1_weight={w:g}"
            ckpt = read_checkpoint(sub) if resume else None
        done = ckpt is not None and ckpt["state"]["completed"]
        if ckpt is None:
            clf._continue_training(make_dataset())
        else:
            restore_checkpoint(clf, ckpt)
            if done:                           # restored as it ended; nothing left pending
                clf._resume_early_stopping_ = clf._resume_schedule_ = None
            else:
                clf._continue_training(make_dataset(),
                                epochs=max(0, clf.max_epochs - len(clf.history)))
        if not (done or finished_training(clf)):     # a race's stop is a finished training
            # skorch swallows Ctrl-C and returns; here that would move on to
            # the next candidate and choose from a half-trained one
            raise KeyboardInterrupt(f"stage1_weight='dev' interrupted while training the "
                                    f"candidate {w:g}; with a checkpoint_dir, "
                                    "fit(..., resume=True) continues it")
        # raced out: stopped by the race now, or (restored from a completed checkpoint) by
        # the race of the interrupted fit, which its dev curve shows
        if race is not None and done and not race.stopped_:
            race.why_ = race.decide([h.get(key, np.nan) for h in clf.history])
            race.stopped_ = race.why_ is not None
        stopped = race is not None and race.stopped_
        vals = np.asarray([h.get(key, np.nan) for h in clf.history], dtype=float)
        curves.append(vals)
        score = float(np.nanmax(vals)) if np.isfinite(vals).any() else float("-inf")
        results.append({"stage1_weight": float(w), "dev_" + clf.scoring: score,
                        "best_epoch": int(choose_epoch(clf.history, clf.scoring,
                                                       clf.patience).value),
                        "epochs": len(clf.history),
                        "lr": clf.effective_lr(), "raced_out": bool(stopped),
                        "seconds": float(sum(h.get("dur", 0.0) for h in clf.history))})
        if clf.verbose:
            why = {None: "", "not ahead": f", stopped: not ahead of the earlier candidate by "
                                          f"more than {RACE_MARGIN:g} for {clf.patience} epochs",
                   "far behind": f", stopped: behind the earlier candidate by more than "
                                 f"{ROUT_GAP:g} after the warm-up"}[
                race.why_ if stopped else None]
            print(f"stage1_weight='dev': candidate {w:g}: {len(clf.history)} epochs in "
                  f"{time.perf_counter() - t0:.0f} s, best dev {clf.scoring} {score:.4f}{why} "
                  "(set stage1_weight to one value to train Stage 2 once)", flush=True)
        return score, (copy.deepcopy(clf.module_.state_dict()), copy.deepcopy(clf.history))

    from ...model_selection import choose_on_dev
    # one trained candidate kept at a time: choose_on_dev keeps the best one's state
    choice = choose_on_dev("stage1_weight", [float(w) for w in candidates], train,
                           family="ranking", criterion=clf.scoring,
                           fallback=STAGE1_WEIGHT_FALLBACK, keep=True)
    clf.dev_choices_["stage1_weight"] = choice.to_dict()
    clf.stage1_weight_ = choice.value
    state, clf.history = choice.kept
    clf.module_.load_state_dict(state)
    clf.resolve_phases()                    # the chosen weight's rate (lr=None)
    return results
