"""Input handling shared by AttentionPlanter and PlantClassifier."""

import contextlib
import os

import numpy as np
import torch
from sklearn.base import clone

from .._labels import check_class_names
from .._labels import check_targets as _check_targets
from .._params import check_param, to_python  # noqa: F401  (re-exported for the neural modules)
from .backbones import backbone_kind, resolve_hf_path

ARCH_PARAMS = ("backbone", "embedding_dim", "hidden_dim", "attention_dim", "kernel_size",
               "dropout", "glove", "max_length", "backbone_options")


def check_targets(Y, n_samples, *, what="Y", label_names=None, require_positive=True,
                  classes_1d=False):
    """Validate a multi-label target and return it as CSR float32 {0, 1}.

    The rule is :func:`xplant._labels.check_targets` (a rectangular 0/1
    array-like is a matrix; sets, rows of strings or ragged rows of integers
    are label lists; anything ambiguous is refused).

    Returns
    -------
    Y : scipy.sparse.csr_matrix of float32, shape (n_samples, n_labels)
    classes : ndarray of shape (n_labels,)
        ``label_names``, the sorted labels of label lists, or ``0..L-1``.

    Raises
    ------
    ValueError
        See :func:`xplant._labels.check_targets`.
    """
    Y, classes = _check_targets(Y, n_samples=n_samples, label_names=label_names, name=what,
                                dtype=np.float32, require_positive=require_positive,
                                classes_1d=classes_1d)
    return Y, check_class_names(classes)


def _is_lists(Y):
    """Whether a target is read as label lists (then dev labels take the training names)."""
    from .._target_form import _target_form
    return _target_form(Y, "Y") == "lists"


def default_relevance(backbone):
    """The MIGRelevance a classifier fits when given raw texts, for its backbone's tokens.

    Parameters
    ----------
    backbone : str
        A :class:`~xplant.neural.PlantClassifier` backbone ("cnn", "bigru",
        "hf", "hf:<folder>", "llm:<folder>", "llm:<file>.gguf", "llm:smollm2").

    Returns
    -------
    MIGRelevance
        Unfitted: word tokens for a word backbone, the encoder's own
        tokenizer for "hf" and "llm" backbones (MIG is then computed on
        exactly the tokens the encoder reads).

    Raises
    ------
    ValueError
        For an unknown backbone, or an "hf:"/"llm:" folder that does not
        hold a tokenizer.
    """
    from ..relevance import MIGRelevance
    if backbone_kind(backbone) == "word":
        return MIGRelevance(tokenizer="word")
    if backbone_kind(backbone) == "llm":
        from .backbones import load_llm_tokenizer  # pads with EOS/UNK where none is defined
        return MIGRelevance(tokenizer=load_llm_tokenizer(backbone))
    return MIGRelevance(tokenizer="hf:" + resolve_hf_path(backbone))


def is_token_corpus(X):
    return hasattr(X, "relevance") and hasattr(X, "docs")


def is_count_matrix(X):
    """Whether X is a document-token count matrix (sparse, or a numeric ndarray).

    The test of :class:`~xplant.relevance.MIGRelevance`
    (``xplant.relevance._inputs.is_count_matrix``), and such an X is read as
    it reads one: each document is the bag of its non-zero columns, column
    ``j`` being token id ``j`` (once per document, whatever its count). This
    is the one numeric input of the neural estimators (scikit-learn's common
    checks reach them through it).
    """
    from ..relevance._inputs import is_count_matrix as _is_matrix
    return _is_matrix(X)


def n_documents(X):
    """The number of documents of X: rows of a count matrix, else its length."""
    return X.shape[0] if is_count_matrix(X) and X.ndim else len(X)


def check_texts(X):
    """Raw texts as a list of str, with a clear error for anything else."""
    if isinstance(X, str):
        raise ValueError("X must be a sequence of documents, not one string; wrap it in a list")
    try:
        texts = list(X)
    except TypeError as exc:
        raise ValueError(f"X must be a sequence of texts or a token corpus, got {type(X).__name__}") from exc
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"document {i} is a {type(t).__name__}, not a str; X must be raw texts "
                             "or the token corpus returned by MIGRelevance.transform")
    return texts


def check_fingerprint(relevance, backbone):
    """An hf/llm backbone must see exactly the tokens MIG was computed on.

    Raises
    ------
    ValueError
        When the token corpus's vocabulary differs from the backbone's
        tokenizer vocabulary.
    """
    if backbone_kind(backbone) == "word":
        return
    from .backbones import load_hf_tokenizer, load_llm_tokenizer
    load = load_llm_tokenizer if backbone_kind(backbone) == "llm" else load_hf_tokenizer
    vocab = load(backbone).get_vocab()
    if getattr(relevance, "vocabulary_", None) != vocab:
        fp = getattr(relevance, "tokenizer_fingerprint_", "unknown")
        raise ValueError(f"the token corpus was made by a tokenizer ({fp}) whose vocabulary differs "
                         f"from backbone {backbone!r}; put MIGRelevance(tokenizer='hf:<same folder>') "
                         "(for an 'llm:' backbone, tokenizer=<the backbone spec>) before this "
                         "classifier so the attention sees the tokens MIG was computed on")


def fit_or_take_corpus(X, Y, relevance_param, backbone, max_length=None):
    """(docs, fitted MIGRelevance) from a token corpus, a count matrix or raw texts.

    MIG is fitted on the whole training texts; the documents the network
    reads are tokenized only up to ``max_length`` tokens. A document-token
    count matrix (:func:`is_count_matrix`) is fitted and read by the
    MIGRelevance itself, as its ``fit_transform`` reads one; it needs a word
    backbone, whose vocabulary is then the matrix's columns.
    """
    if is_token_corpus(X):
        check_fingerprint(X.relevance, backbone)
        return list(X.docs), X.relevance
    if is_count_matrix(X):
        if backbone_kind(backbone) != "word":
            raise ValueError(f"X is a document-token count matrix, whose columns are the token "
                             f"ids; backbone {backbone!r} reads its own tokenizer's ids from raw "
                             "texts. Give raw texts, or use a word backbone ('cnn' or 'bigru')")
        from ..relevance import MIGRelevance
        rel = clone(relevance_param) if relevance_param is not None else MIGRelevance()
        return list(rel.fit_transform(X, Y).docs), rel
    texts = check_texts(X)
    rel = clone(relevance_param) if relevance_param is not None else default_relevance(backbone)
    rel.fit(texts, Y)
    return list(rel.tokenize(texts, max_length=max_length)), rel


def encode(X, relevance, max_length=None):
    """Token ids for new data: a token corpus of the same MIGRelevance, a count matrix, or texts.

    Texts are tokenized only up to ``max_length`` tokens (the model reads no
    more), so a very long document costs what the model reads. A count
    matrix is read by ``relevance.transform``, which checks that it was
    fitted on a matrix of as many columns.
    """
    if is_count_matrix(X):
        return list(relevance.transform(X).docs)
    if is_token_corpus(X):
        fp_new = getattr(X.relevance, "tokenizer_fingerprint_", None)
        fp_old = getattr(relevance, "tokenizer_fingerprint_", None)
        if X.relevance is not relevance and fp_new != fp_old:
            raise ValueError("this token corpus was made by a different MIGRelevance (tokenizer "
                             f"fingerprint {fp_new} != {fp_old}); pass raw texts instead")
        return list(X.docs)
    return list(relevance.tokenize(check_texts(X), max_length=max_length))


def split_validation(n, fraction, random_state):
    """Seeded (train, dev) row indices, as scikit-learn's MLP early stopping."""
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(n)
    n_dev = max(1, int(round(fraction * n)))
    if n - n_dev < 1:
        raise ValueError(f"validation_fraction={fraction} leaves no training documents out of {n}")
    return np.sort(perm[n_dev:]), np.sort(perm[:n_dev])


def set_torch_threads(n_jobs):
    """Map n_jobs to torch's intra-op threads (None keeps torch's default)."""
    if n_jobs is None:
        return
    n = os.cpu_count() if n_jobs == -1 else int(n_jobs)
    torch.set_num_threads(max(1, n))


@contextlib.contextmanager
def deterministic_on_cpu(device):
    """Run a CPU training loop with torch's deterministic algorithms, then restore the setting.

    With more than one intra-op thread, some of torch's CPU backward
    kernels accumulate in an order that varies from run to run, so two
    fits with the same seed drifted apart from the 7th decimal of a loss
    (measured on CodiEsp-D: Stage 1 at 2 threads). Inside this context
    torch uses its deterministic kernels (``warn_only=True``: an operation
    without one warns instead of failing), and the fit repeats exactly.
    Other devices are left as they are: GPU fits are not deterministic.

    The mode also fills every new tensor with NaN by default
    (``torch.utils.deterministic.fill_uninitialized_memory``), a guard
    against reading memory no kernel wrote; xplant's kernels write every
    element they read, so it is off inside this context (restored after).
    Under torch's profiler the fill was a sixth of a fit's CPU time; on a
    quiet machine the fit's wall time did not change measurably
    (docs/benchmarks/archive/speed.md). The fits stay deterministic: the fill never
    reaches a result.

    Parameters
    ----------
    device : str or torch.device
        The estimator's ``device``; only ``"cpu"`` turns the mode on.
    """
    if torch.device(device).type != "cpu":
        yield
        return
    import torch.utils.deterministic as deterministic
    was = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    deterministic.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was, warn_only=warn_only)
        deterministic.fill_uninitialized_memory = fill


#: optimizer steps between two sweeps of :func:`zero_subnormal_state` (within an epoch)
SUBNORMAL_SWEEP_STEPS = 16

_EXPONENT_BITS = {torch.float32: (torch.int32, 0x7F800000),
                  torch.float64: (torch.int64, 0x7FF0000000000000)}


def zero_subnormal_state(optimizer):
    """Set every subnormal entry of an optimizer's CPU state to zero, in place.

    Adam's first moment of a parameter whose gradient is zero decays by
    ``beta1`` at every step: the moments of an embedding row whose word is
    absent from the recent batches reach the subnormal range (below
    ``torch.finfo(dtype).tiny``) after a few hundred steps and stay there for
    about 150 more. An x86 core computes with subnormal operands through a
    microcode assist that is many times slower than normal arithmetic, and
    ``torch.set_flush_denormal`` cannot fix it from Python: it sets only the
    calling thread's control register, not those of torch's OpenMP threads.
    A fit calls this every :data:`SUBNORMAL_SWEEP_STEPS` steps. An entry it
    zeroes is below 1.2e-38 (float32), so its share of any update is far
    below a weight's last bit.

    The test of each entry reads its exponent bits as an integer (an
    exponent of zero is a subnormal or a zero), so the sweep itself does no
    arithmetic on subnormals. Only float32 and float64 tensors on the CPU
    are swept; the others are left as they are.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        Its ``state`` tensors (for AdamW ``exp_avg`` and ``exp_avg_sq``) are
        changed in place.

    Examples
    --------
    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(3))
    >>> opt = torch.optim.AdamW([w])
    >>> w.grad = torch.ones(3); opt.step()
    >>> _ = opt.state[w]["exp_avg"].copy_(torch.tensor([1e-39, -1e-40, 1e-3]))
    >>> zero_subnormal_state(opt)
    >>> opt.state[w]["exp_avg"]
    tensor([0.0000, 0.0000, 0.0010])
    """
    for state in optimizer.state.values():
        for t in state.values():
            if not torch.is_tensor(t) or t.device.type != "cpu" or t.dtype not in _EXPONENT_BITS \
                    or t.dim() == 0:
                continue
            int_dtype, mask = _EXPONENT_BITS[t.dtype]
            t.masked_fill_(torch.bitwise_and(t.view(int_dtype), mask) == 0, 0.0)


@contextlib.contextmanager
def torch_state_restored():
    """Leave torch's intra-op thread count and global RNG state as they were.

    ``fit`` sets the threads (``n_jobs``) and seeds torch's generator
    (``random_state``) for itself; inside this context both are restored
    afterwards, so a fit changes nothing else in the process.
    """
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)


def seed_everything(random_state):
    seed = 0 if random_state is None else int(random_state)
    torch.manual_seed(seed)
    return np.random.default_rng(seed)
