"""What Stage 1 of PLANT resolves before it trains: its learning rate and its epoch's documents.

:func:`default_planting_lr` is the peak learning rate of
``AttentionPlanter(lr=None)`` (:data:`PLANTING_LR`), and
:data:`PLANTING_EPOCH_DOCS` the documents a Stage 1 epoch draws at most by
default. Each is read by :class:`~xplant.neural.AttentionPlanter`'s ``fit``.
"""

from ..backbones import backbone_kind

#: Stage 1 (planting) peak learning rates of ``AttentionPlanter(lr=None)``
#: (docs/benchmarks/speed.md, "The planting rate of a word backbone"): the paper's 5e-4 for
#: pretrained encoders, whose keys already mean something; a word backbone's embeddings and
#: convolution start at random, and at 5e-4 its dev attention nDCG@50 was still rising at the
#: last of 10 epochs on both corpora measured (CodiEsp-D, 7,700 synthetic short documents),
#: where 3e-3 passes that figure by its 2nd epoch.
PLANTING_LR = {"word": 3e-3, "pretrained": 5e-4}

#: Documents a Stage 1 epoch draws at most by default (``AttentionPlanter``'s
#: ``iterator_train__max_epoch_docs``; a fresh random subset of a larger training set each
#: epoch): at the rates above the planting is bound by its optimizer steps, not by the
#: documents it sees, so Stage 1 costs at most about 10 × 256 steps of 16 documents however
#: large the corpus (docs/benchmarks/speed.md, "The planting rate of a word backbone").
PLANTING_EPOCH_DOCS = 4096


def default_planting_lr(backbone):
    """The Stage 1 (planting) peak learning rate that ``AttentionPlanter(lr=None)`` resolves to.

    Parameters
    ----------
    backbone : str
        An :class:`~xplant.neural.AttentionPlanter` backbone ("cnn", "bigru",
        "hf", "hf:<folder>", "llm:<folder>").

    Returns
    -------
    float
        3e-3 for a word backbone, 5e-4 (the PLANT paper's) for a pretrained
        encoder (:data:`PLANTING_LR`).

    Raises
    ------
    ValueError
        For an unknown backbone.

    Examples
    --------
    >>> default_planting_lr("cnn"), default_planting_lr("bigru"), default_planting_lr("hf")
    (0.003, 0.003, 0.0005)
    """
    return PLANTING_LR["word" if backbone_kind(backbone) == "word" else "pretrained"]
