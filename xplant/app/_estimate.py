"""How long each row of a run will take, told before anything is fitted.

A probe fits each row as the run fits it (:func:`xplant.app._fit_row._grid_choice`),
on the first :data:`PROBE_DOCS` training documents and the same share of the dev
split, and times it. A linear row's time is a line through the probe's time and
that of a fit on half its documents (both timed after a first fit, which also
pays the imports), extended to the whole training split. A neural row's probe
trains Stage 1 for two epochs and Stage 2 until every parameter group has
joined (the unfreezing warm-up), then two epochs more; its time is its overhead
(the probe's time outside the epochs), Stage 1's epoch budget and the Stage 2
epochs early stopping is expected to take (:func:`expected_stage2_epochs`), each
epoch timed by the probe and scaled. The refit of a row on train + dev is
estimated from its first fit's own times (:func:`refit_estimate`).

The measured error, row by row, is in docs/benchmarks/speed.md, section
"The time estimate".
"""

import contextlib
import dataclasses
import time

import numpy as np

from ._fit_row import _epoch_scale
from .._params import final_step

#: Training documents a probe fits on (the dev split's share of it with them).
PROBE_DOCS = 256

#: Stage 2's best epoch on dev, expected as ``BEST_EPOCH_SCALE * m ** -BEST_EPOCH_POWER``
#: with ``m`` the mean number of training documents of a label that has one: a
#: least-squares line in log-log space through the best epochs of 15 word-CNN
#: fits (PLANT and ``plant=False`` on synthetic corpora of 1,000 to 7,700
#: documents, m from 14 to 105, and PLANT on CodiEsp-D, m = 3.2), each within
#: a factor of 1.7 of it (docs/benchmarks/speed.md, "The time estimate"). Rare
#: labels take more epochs: each epoch shows a label's head its documents once.
BEST_EPOCH_SCALE = 84.0
BEST_EPOCH_POWER = 0.42


@dataclasses.dataclass
class RowEstimate:
    """A row's estimated fit time.

    Attributes
    ----------
    name : str
        The row.
    seconds : float
        The expected fit time, in seconds (early stopping as expected).
    most_seconds : float
        The fit time if every epoch of the budget runs, in seconds (a linear
        row: ``seconds``).
    detail : str
        Where the time goes (the neural rows' epochs and their times).
    """

    name: str
    seconds: float
    most_seconds: float
    detail: str = ""

    def to_dict(self):
        """The estimate as a JSON-ready dict (``results.json``'s ``"estimate"``)."""
        return {"seconds": float(self.seconds), "most_seconds": float(self.most_seconds),
                "detail": self.detail}

    def line(self):
        """The progress line of the estimate."""
        text = f"{self.name}: about {_duration(self.seconds)}"
        if self.detail:
            text += f" ({self.detail})"
        if self.most_seconds > 1.5 * self.seconds:
            text += f"; at most {_duration(self.most_seconds)} if no epoch stops early"
        return text


def _duration(seconds):
    """``seconds`` as a person reads a wait: seconds under 2 minutes, then minutes."""
    if seconds < 10:
        return "10 s or less"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def _epochs(n):
    return f"{n} epoch" + ("" if n == 1 else "s")


def expected_best_epoch(label_frequency):
    """Stage 2's expected best epoch on dev (1 the first), from the training labels' frequencies.

    ``BEST_EPOCH_SCALE * m ** -BEST_EPOCH_POWER``, with ``m`` the mean
    frequency of the labels that occur in training (see
    :data:`BEST_EPOCH_SCALE` for the fits it comes from).

    Parameters
    ----------
    label_frequency : array-like of shape (n_labels,)
        Training documents per label (int).

    Returns
    -------
    float
        The expected best epoch; ``BEST_EPOCH_SCALE`` when no label occurs.

    Examples
    --------
    >>> round(expected_best_epoch([1, 3, 0, 5]), 1)      # m = 3
    53.0
    """
    f = np.asarray(label_frequency, dtype=float)
    f = f[f > 0]
    m = f.mean() if f.size else 1.0
    return float(BEST_EPOCH_SCALE * m ** -BEST_EPOCH_POWER)


def expected_stage2_epochs(label_frequency, *, max_epochs, patience, warmup, has_dev):
    """The Stage 2 epochs a fit is expected to train, and its budget.

    With a usable dev split and early stopping, the expected best epoch
    (:func:`expected_best_epoch`, at least the first epoch after the
    unfreezing warm-up) plus ``patience`` (early stopping's wait), at most ``max_epochs``; otherwise
    ``max_epochs``.

    Parameters
    ----------
    label_frequency : array-like of shape (n_labels,)
        Training documents per label.
    max_epochs : int
        The Stage 2 budget.
    patience : int or None
        Early stopping's patience (None: no early stopping).
    warmup : int
        Epochs before every parameter group trains (the last phase's start).
    has_dev : bool
        Whether dev can guide early stopping
        (:func:`xplant.model_selection.dev_usability`).

    Returns
    -------
    expected, most : int
        Expected epochs, and ``max_epochs``.

    Examples
    --------
    >>> expected_stage2_epochs([100] * 90, max_epochs=60, patience=6, warmup=2, has_dev=True)
    (18, 60)
    >>> expected_stage2_epochs([100] * 90, max_epochs=60, patience=6, warmup=2, has_dev=False)
    (60, 60)
    """
    if not has_dev or patience is None:
        return max_epochs, max_epochs
    best = max(int(round(expected_best_epoch(label_frequency))), warmup + 1)
    return min(max_epochs, best + patience), max_epochs


def _epochs_seconds(durations, n_epochs):
    """Seconds of ``n_epochs`` epochs, epoch e taking ``durations[e]`` (the last one's after)."""
    d = list(durations)
    if not d or n_epochs <= 0:
        return 0.0
    return float(sum(d[:n_epochs]) + max(0, n_epochs - len(d)) * d[-1])


def _probe_settings(final):
    """The probe's settings of a neural row's classifier: quiet, no checkpoint, no early
    stopping, two Stage 1 epochs and Stage 2 to two epochs past its warm-up; and that
    warm-up."""
    from ..neural import default_phases
    phases = (final.get_params().get("callbacks__unfreeze__phases")
              or default_phases(final.backbone, 1e-3))
    warmup = max((int(p[0]) for p in phases), default=0)
    settings = {"max_epochs": min(final.max_epochs, warmup + 2), "patience": None, "verbose": 0,
                "checkpoint_dir": None}
    if final.plant:
        settings["planter__max_epochs"] = 2
    return settings, warmup


def probe_row(spec, data_args, model_args, splits, probe_docs=PROBE_DOCS):
    """Fit one row on a share of the data, timed, and estimate its whole fit.

    Parameters
    ----------
    spec : dict
        The row's spec (:func:`xplant.app.run_models`).
    data_args : dict
        The run's data arguments.
    model_args : dict
        The run's model arguments (``epochs``, ``plant_epochs``,
        ``random_state``, ...).
    splits : dict
        The run's loaded splits.
    probe_docs : int, default=PROBE_DOCS
        Training documents the probe fits on.

    Returns
    -------
    RowEstimate
    """
    from ..model_selection import dev_usability
    from .._labels import label_frequency
    from ._build import build_model
    from ._fit_row import DEV_GRIDS, _grid_choice
    from ._fused import row_params
    from ._rows import find_row
    from ._splits import _row_splits, first_documents
    _, tr, dv, _ = _row_splits(spec, data_args, splits)
    row = find_row(spec.get("model", spec["name"]))
    n_train, n_dev = tr.Y.shape[0], dv.Y.shape[0]
    n_probe = min(n_train, probe_docs)
    scale = n_train / n_probe
    params = row_params(spec.get("params"), row, data_args.get("dataset"), data_args.get("codes"))
    args = {k: v for k, v in model_args.items()
            if k in ("epochs", "plant_epochs", "random_state", "description_encoder")}
    base = build_model(row.display, params=params, features=tr.get("texts") is None,
                       verbose=0, **args)
    final = final_step(base)
    neural = hasattr(final, "planter")
    if neural:
        settings, warmup = _probe_settings(final)
        patience, max_epochs = final.patience, final.max_epochs
        plant_epochs = final.get_params().get("planter__max_epochs") if final.plant else 0
        final.set_params(**settings)
    grid = spec.get("grid", DEV_GRIDS.get(row.display, {}))

    def timed(n):        # the row fitted on its first n training documents, dev's share too
        t0 = time.perf_counter()
        choice, _ = _grid_choice(spec, base, grid, first_documents(tr, n), first_documents(
            dv, max(1, int(round(n_dev * n / n_train))) if n_dev else 0), resume=False, verbose=0)
        return time.perf_counter() - t0, choice

    probe_s, choice = timed(n_probe)
    if not neural:
        # a linear row's time is a fixed part and a part per document: a line through
        # the probe and a fit on half its documents, extended to the whole split. The
        # first fit in the process also pays its imports and compilations: both timed
        # fits come after it
        if n_train == n_probe:
            return RowEstimate(spec["name"], probe_s, probe_s)
        half_s, _ = timed(n_probe // 2)
        probe_s, _ = timed(n_probe)
        per_doc = max(probe_s - half_s, 0.0) / (n_probe - n_probe // 2)
        sec = probe_s + per_doc * (n_train - n_probe)
        return RowEstimate(spec["name"], sec, sec)
    model = choice.kept[0]
    fitted = final_step(model)
    has_dev = dev_usability(dv.Y, label_frequency(tr.Y)).usable
    planter = getattr(fitted, "planter_", None)
    return _neural_estimate(spec["name"], fitted, probe_s, scale, label_frequency(tr.Y),
                            plant_epochs=plant_epochs or 0, max_epochs=max_epochs,
                            patience=patience, warmup=warmup, has_dev=has_dev,
                            stage1_scale=None if planter is None else
                            _epoch_scale(planter, n_train, n_probe),
                            stage2_scale=_epoch_scale(fitted, n_train, n_probe))


def _neural_estimate(name, fitted, probe_s, scale, frequency, *, plant_epochs, max_epochs,
                     patience, warmup, has_dev, stage1_scale=None, stage2_scale=None):
    """A neural row's :class:`RowEstimate` from its probe's fitted classifier.

    ``scale`` multiplies the time outside the epochs; ``stage1_scale`` and
    ``stage2_scale`` (default ``scale``) each stage's epochs, whose documents
    an ``iterator_train__max_epoch_docs`` bounds (Stage 1's by default).
    """
    from ._fit_row import epoch_seconds
    stage1_scale = scale if stage1_scale is None else stage1_scale
    stage2_scale = scale if stage2_scale is None else stage2_scale
    ep = epoch_seconds(fitted)
    stage1, stage2 = ep["stage1"], ep["stage2"]
    # an epoch of a few batches is easily slowed by anything else on the machine: each
    # stage's epoch after the warm-up is the fastest the probe timed
    epoch1 = min(stage1) if stage1 else 0.0
    each = stage2[:warmup] + [min(stage2[warmup:])] if len(stage2) > warmup else stage2
    cands = getattr(fitted, "stage1_weight_candidates_", None) or []
    chosen = next((c for c in cands if c["stage1_weight"] == fitted.stage1_weight_), None)
    # every candidate trained the probe's epochs; each one's epoch times are the chosen
    # one's, scaled by their seconds (a weight > 0 adds ranking items to the batches)
    cost = {c["stage1_weight"]: c["seconds"] / max(chosen["seconds"], 1e-9) for c in cands} \
        if chosen else {fitted.stage1_weight_: 1.0}
    overhead = max(probe_s - sum(stage1) - ep["stage2_all"], 0.0)
    expected, most = expected_stage2_epochs(frequency, max_epochs=max_epochs, patience=patience,
                                            warmup=warmup, has_dev=has_dev)
    s1 = plant_epochs * epoch1 * stage1_scale
    parts = []
    total = total_most = overhead * scale + s1
    if plant_epochs and stage1:
        parts.append(f"Stage 1: {_epochs(plant_epochs)} × {_duration(s1 / plant_epochs)}")
    for i, (w, ratio) in enumerate(cost.items()):
        # the race: a later candidate stops `patience` epochs after the warm-up unless ahead
        n = expected if i == 0 else min(max_epochs, warmup + (patience or max_epochs))
        d = [x * ratio * stage2_scale for x in each]
        sec, sec_most = _epochs_seconds(d, n), _epochs_seconds(d, most)
        total, total_most = total + sec, total_most + sec_most
        label = f" with stage1_weight {w:g}" if len(cost) > 1 else ""
        parts.append(f"Stage 2{label}: about {_epochs(n)} × {_duration(d[-1])}")
    return RowEstimate(name, total, total_most, "; ".join(parts))


def estimate_rows(checked, data_args, model_args, splits, probe_docs=PROBE_DOCS):
    """Every row's :class:`RowEstimate`, in order (a run's probe; its child process's body).

    Run it in a process of its own, as :func:`xplant.app.run_models` does
    (one row a process): a fit changes what a later fit in the same process
    computes (the first fit of a process sums oneDNN's convolution gradients
    in another order), so no restoring of random states would keep a probe
    from moving the figures of a row fitted after it there.

    Parameters
    ----------
    checked : list of (dict, str)
        The run's rows (:func:`xplant.app._run.check_model_specs`).
    data_args, model_args, splits
        As in :func:`probe_row`.
    probe_docs : int, default=PROBE_DOCS

    Returns
    -------
    list of RowEstimate
    """
    import io
    import warnings
    from ._build import _child_model_args
    model_args = _child_model_args(model_args)
    # the probe's own lines and warnings (a share of dev guides little) are not the run's
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return [probe_row(spec, data_args, model_args, splits, probe_docs)
                for spec, _ in checked]


def refit_estimate(name, out, n_train, n_dev):
    """The refit of a row on train + dev, estimated from its first fit.

    A neural row: the first fit's overhead and Stage 1 epochs, and its
    chosen candidate's Stage 2 epochs up to the epoch the refit trains to
    (the best one); the overhead scaled by ``(n_train + n_dev) / n_train``,
    each stage's epochs by the documents a refit's epoch draws over those
    of the first fit's (``epoch_seconds["refit_scale"]``, the estimators'
    own rule: a Stage 1 capped at 4,096 documents an epoch does not grow
    past the cap), else by the same ratio. Another row: its first fit's
    time per candidate of its grid (the refit fits the chosen one), scaled
    by the ratio.

    Parameters
    ----------
    name : str
        The refit row.
    out : dict
        The first fit's record (:func:`xplant.app._fit_row._fit_one`), with
        ``fit_seconds``, ``epoch_seconds`` (None but for a neural row) and
        ``info["dev_choice"]`` (a row with a grid).
    n_train, n_dev : int
        The training and dev documents.

    Returns
    -------
    RowEstimate
    """
    ep = out.get("epoch_seconds")
    scale = (n_train + n_dev) / max(n_train, 1)
    if not ep:
        n = len(out.get("info", {}).get("dev_choice", {}).get("scores", ())) or 1
        sec = out["fit_seconds"] / n * scale
        return RowEstimate(name, sec, sec, f"the first fit's time a candidate × {scale:.2f}"
                           if n > 1 else "")
    chosen, trained = ep["stage2"], ep["stage2_all"]
    overhead = max(out["fit_seconds"] - sum(ep["stage1"]) - trained, 0.0)
    n = int(ep["best_epoch"])
    stages = ep.get("refit_scale") or {}
    s1, s2 = stages.get("stage1", scale), stages.get("stage2", scale)
    sec = overhead * scale + sum(ep["stage1"]) * s1 + _epochs_seconds(chosen, n) * s2
    scales = f"× {scale:.2f}" if s1 == s2 == scale else \
        f"× {scale:.2f} (Stage 1's epochs × {s1:.2f}, Stage 2's × {s2:.2f})"
    return RowEstimate(name, sec, sec, f"Stage 1: {_epochs(len(ep['stage1']))}, Stage 2: "
                       f"{_epochs(n)}, at the first fit's times {scales}")
