"""What Stage 2 of PLANT resolves before it trains: the labels it scores and its rates.

:func:`scored_labels` leaves out the labels without a training positive
(unless Stage 1 plants them from their texts); :func:`default_lr` is the
learning rate of ``lr=None`` (:data:`DEFAULT_LR`) and
:func:`default_phases` the progressive unfreezing that goes with it
(Stage 1's rate, for ``AttentionPlanter(lr=None)``, is in
``planting/_defaults.py``); :func:`initial_label_bias` is where each
label's bias starts. Each is read by :class:`~xplant.neural.PlantClassifier`'s ``fit``.
"""

import numpy as np

from ..._labels import label_frequency, label_prior
from ..backbones import backbone_kind

#: Stage 2 learning rates of ``lr=None`` (docs/benchmarks/evidence.md, section
#: "The Stage 2 learning rate"). A word backbone trained from scratch whose Stage 2 keeps
#: the Stage 1 ranking loss (``stage1_weight`` > 0) trains at 1e-2: at 1e-3
#: every such CodiEsp fit was still rising at its last epoch, and 1e-2 lifts
#: dev MAP on CodiEsp-D (28.0 to 37.4) and CodiEsp-P (22.7 to 26.2); it is 1.5
#: points behind on the EURLEX57K subset, where stage1_weight="dev" takes 0.
#: Without that loss 1e-2 lost on dev in three of four fits (PLANT at weight
#: 0 on CodiEsp-D and the EURLEX57K subset, plant=False on CodiEsp-P): 1e-3.
#: Pretrained encoders keep 1e-3 for the head, which :func:`default_phases`
#: divides further for their lower layers.
DEFAULT_LR = {"word, ranking loss kept": 1e-2, "word": 1e-3, "pretrained": 1e-3}

def scored_labels(frequency, planted_from_texts=False):
    """The labels Stage 2's network attends and scores.

    A label with no positive among the training rows gives its attention
    nothing to learn: its query is never planted (it has no MIG tokens) and
    the loss only ever pushes its score down. Unless Stage 1 plants such
    labels from their descriptions, synonyms or ancestors, the network
    leaves them out and gives them the logit
    :data:`~xplant.neural.modules.UNSCORED_LOGIT` (a probability of 0, as
    scikit-learn's ``OneVsRestClassifier`` predicts a label absent from
    training); the label-wise attention's work falls in proportion (on
    CodiEsp-D, 790 of 2,557 labels have no training positive).

    Parameters
    ----------
    frequency : array-like of int of shape (n_labels,)
        Positives per label in the training rows (``label_frequency_``).
    planted_from_texts : bool, default=False
        True when ``fit`` plants with label descriptions, synonyms or
        parents: every label is then scored (so is every label when none
        has a positive).

    Returns
    -------
    ndarray of bool of shape (n_labels,)

    Examples
    --------
    >>> scored_labels([3, 0, 1]).tolist()
    [True, False, True]
    >>> scored_labels([3, 0, 1], planted_from_texts=True).tolist()
    [True, True, True]
    >>> scored_labels([0, 0]).tolist()                # no positive at all
    [True, True]
    """
    frequency = np.asarray(frequency)
    if planted_from_texts or not frequency.any():     # nothing tells the labels apart
        return np.ones(frequency.shape, dtype=bool)
    return frequency > 0


def default_lr(backbone, stage1_weight):
    """The Stage 2 learning rate that ``lr=None`` resolves to.

    Parameters
    ----------
    backbone : str
        A :class:`PlantClassifier` backbone ("cnn", "bigru", "hf", "hf:<folder>", ...).
    stage1_weight : float
        The weight of the Stage 1 ranking loss kept in Stage 2 (the fixed
        weight, or each candidate of ``stage1_weight="dev"``).

    Returns
    -------
    float
        1e-2 for a word backbone with ``stage1_weight`` > 0, else 1e-3
        (:data:`DEFAULT_LR`).

    Raises
    ------
    ValueError
        For an unknown backbone.

    Examples
    --------
    >>> default_lr("cnn", 0.1), default_lr("cnn", 0.0), default_lr("hf", 0.1)
    (0.01, 0.001, 0.001)
    """
    if backbone_kind(backbone) != "word":
        return DEFAULT_LR["pretrained"]
    return DEFAULT_LR["word, ranking loss kept" if stage1_weight > 0 else "word"]


def default_phases(backbone, lr):
    """Progressive unfreezing phases (epoch, group, lr) per backbone kind.

    Word backbones (trained from scratch on a CPU): the head trains alone for
    2 epochs, then attention and encoder join at the same rate. Pretrained
    encoders follow the paper's order with smaller rates for lower layers.

    Parameters
    ----------
    backbone : str
        The backbone spec (``"cnn"``, ``"hf"``, ...).
    lr : float
        The learning rate of the head; lower groups get fractions of it.

    Returns
    -------
    list of (int, str, float)
        ``(epoch, group, lr)``: from ``epoch`` on, ``group`` trains at ``lr``.
    """
    if backbone_kind(backbone) == "word":
        return [(0, "head", lr), (2, "attention", lr), (2, "encoder", lr), (2, "embeddings", lr)]
    return [(0, "head", lr), (2, "attention", lr / 10), (4, "encoder", lr / 50),
            (6, "intermediate", lr / 100), (6, "embeddings", lr / 100)]


def initial_label_bias(Y_train, label_smoothing, smoothing_form):
    """Where Stage 2 starts each label's bias: the log-odds of its mean training target.

    The mean target of label l is its smoothed prior: with frequency
    p_l = (f_l + ½) / (N + 1) and label smoothing ε, (1 − ε) p_l + ε (1 − p_l)
    ("paper") or (1 − ε) p_l + ε / 2 ("symmetric"). The network then
    starts at the constant that minimises its own loss for each label,
    rather than at 0.5, and a label it scores without a training
    positive (every label is scored when Stage 1 plants from label
    texts) keeps a low, finite score until hard-negative mining picks it.

    Parameters
    ----------
    Y_train : sparse matrix of shape (n_samples, n_labels)
        The training targets.
    label_smoothing : float or None
        The loss's label smoothing ε (None: 0).
    smoothing_form : {"paper", "symmetric"}
        How the loss smooths its targets.

    Returns
    -------
    ndarray of float64 of shape (n_labels,)
    """
    p = label_prior(label_frequency(Y_train), Y_train.shape[0])
    eps = float(label_smoothing or 0.0)
    if eps:
        p = (1 - eps) * p + (eps * (1 - p) if smoothing_form == "paper" else eps / 2)
    return np.log(p / (1 - p))
