"""Saving and loading a fitted MIGRelevance without pickle.

Arrays go to a safetensors file, everything else to JSON, both through
:mod:`xplant.persistence`'s codec, so loading a saved relevance executes no
code.
"""

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._params import to_python
from ._estimator import MIGRelevance
from ._tokenize import is_hf_tokenizer

_FORMAT = "xplant-mig-relevance-1"
_PARAMS = ("top_k", "positive_only", "normalize", "min_df", "max_df", "lowercase", "max_length")


def _tokenizer_spec(rel):
    tok = rel.tokenizer
    if isinstance(tok, str):
        return tok
    if isinstance(getattr(tok, "xplant_llm_spec", None), str):   # from load_llm_tokenizer
        return tok.xplant_llm_spec
    if is_hf_tokenizer(tok):
        path = getattr(tok, "name_or_path", None)
        if path and Path(path).is_dir():
            return "hf:" + str(Path(path).resolve())
    raise ValueError(
        "only MIGRelevance(tokenizer='word'), tokenizer='hf:<local folder>', tokenizer='llm:<spec>' "
        "(or a Hugging Face tokenizer loaded from a local folder) can be saved without pickle; a "
        "callable tokenizer "
        "is code. Refit with tokenizer='word' or an 'hf:' folder, or pickle the estimator "
        "(trusted use only).")


def save_relevance(relevance, path):
    """Write a fitted MIGRelevance to ``path`` (a folder): JSON + safetensors.

    Parameters
    ----------
    relevance : MIGRelevance
        Fitted on texts with the word tokenizer, a local Hugging Face
        tokenizer or an LLM's (stored as its ``"llm:<spec>"``, a packaged
        name as such, a path made absolute).
    path : str or Path
        Folder to create; ``relevance.json`` and ``relevance.safetensors`` go there.

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        For a callable tokenizer or a relevance fitted on a matrix.
    sklearn.exceptions.NotFittedError
        When ``relevance`` is not fitted.
    """
    from sklearn.utils.validation import check_is_fitted
    from ..persistence._codec import write_arrays, write_json
    check_is_fitted(relevance, "relevance_")
    if relevance.input_kind_ == "matrix":
        raise ValueError("a MIGRelevance fitted on a matrix has no tokenizer to save")
    spec = _tokenizer_spec(relevance)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    R = sp.csr_matrix(relevance.relevance_)
    arrays = {"relevance_indptr": R.indptr.astype(np.int64),
              "relevance_indices": R.indices.astype(np.int64),
              "relevance_data": R.data.astype(np.float64),
              "document_frequency": np.asarray(relevance.document_frequency_, dtype=np.int64),
              "label_frequency": np.asarray(relevance.label_frequency_, dtype=np.int64)}
    from ._tokenize import UNICODE_FORM
    write_arrays(path / "relevance.safetensors", arrays)
    meta = {"format": _FORMAT, "tokenizer": spec, "unicode_normalization": UNICODE_FORM,
            "params": {p: to_python(getattr(relevance, p)) for p in _PARAMS},
            "shape": list(R.shape), "n_train_documents": int(relevance.n_train_documents_),
            "tokenizer_fingerprint": relevance.tokenizer_fingerprint_}
    if spec == "word":
        inv = sorted(relevance.vocabulary_.items(), key=lambda kv: kv[1])
        meta["vocabulary"] = [t for t, _ in inv]
    write_json(path / "relevance.json", meta)
    return path


def load_relevance(path):
    """Read a MIGRelevance written by :func:`save_relevance`.

    Every parameter is validated as ``fit`` validates it, and the arrays
    against the saved shape (label and vocabulary sizes, CSR structure).

    Parameters
    ----------
    path : str or Path
        The folder that :func:`save_relevance` wrote.

    Returns
    -------
    MIGRelevance
        Fitted: ``tokenize``/``transform`` work as before saving.

    Raises
    ------
    FileNotFoundError
        When the folder lacks the two files.
    ValueError
        Naming the file and field: invalid JSON (with its line), a missing
        or invalid field, a parameter ``fit`` would refuse, arrays that do
        not match the saved shape, an ``hf:`` tokenizer folder that is
        missing on this machine, an ``llm:`` tokenizer whose model (or
        package) is missing, or a tokenizer rebuilt differently (its
        fingerprint differs, e.g. another Hugging Face folder).
    """
    from ..persistence._codec import open_saved, read_arrays
    from ._tokenize import UNICODE_FORM
    path, meta, c = open_saved(path, "relevance.json", "relevance.safetensors", _FORMAT,
                                "a saved MIGRelevance", "holds no saved MIGRelevance (relevance.json "
                                "and relevance.safetensors)")
    spec = c.get("tokenizer", str, "'word', 'hf:<folder>' or 'llm:<spec>'")
    if spec != "word" and not spec.startswith(("hf:", "llm:")):
        c.fail("tokenizer", f"must be 'word', 'hf:<folder>' or 'llm:<spec>', got {spec!r}")
    if spec.startswith("hf:") and not Path(spec[3:]).is_dir():
        c.fail("tokenizer", f"this model stores the absolute tokenizer folder {spec[3:]!r}, which "
                            "does not exist on this machine; copy the tokenizer folder there, or "
                            "edit the path to where it is")
    if spec.startswith("llm:"):
        from ._llm_files import resolve_llm_path
        try:
            resolve_llm_path(spec)
        except (FileNotFoundError, ImportError) as exc:
            raise ValueError(f"{c.path}, field 'tokenizer': the model's LLM tokenizer {spec!r} is "
                             f"not on this machine: {exc}") from exc
    if meta.get("unicode_normalization", UNICODE_FORM) != UNICODE_FORM:
        c.fail("unicode_normalization", f"must be {UNICODE_FORM!r} (the only rule xplant applies), "
                                        f"got {meta['unicode_normalization']!r}")
    params = dict(c.get("params", dict, "an object of parameters"))
    if set(params) - set(_PARAMS):
        c.fail("params", f"unknown parameters {sorted(set(params) - set(_PARAMS))}")
    shape = c.get("shape", list, "[n_labels, n_vocabulary]")
    if len(shape) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                  for v in shape):
        c.fail("shape", f"must be [n_labels, n_vocabulary], two positive integers, got {shape!r}")
    L, V = shape
    n_docs = c.integer("n_train_documents", low=1)
    fingerprint = c.get("tokenizer_fingerprint", str, "a string")
    if spec == "word":
        vocabulary = c.get("vocabulary", list, "a list of tokens")
        if len(vocabulary) != V or not all(isinstance(t, str) for t in vocabulary) \
                or len(set(vocabulary)) != V:
            c.fail("vocabulary", f"must hold {V} distinct tokens (shape[1]), got {len(vocabulary)}")
        params["vocabulary"] = {t: i for i, t in enumerate(vocabulary)}
    try:
        rel = MIGRelevance(tokenizer=spec, **params)
        rel._validate_params()               # exactly what fit checks
    except (TypeError, ValueError) as exc:
        c.fail("params", str(exc))
    arr = read_arrays(path / "relevance.safetensors")
    _check_arrays(arr, L, V, path / "relevance.safetensors")
    rel._setup_tokenizer("text")
    if spec == "word":
        rel.vocabulary = None  # the vocabulary was learned, not given
    if rel.n_tokens_ != V:
        c.fail("shape", f"says {V} vocabulary entries but the tokenizer has {rel.n_tokens_}")
    rel.relevance_ = sp.csr_matrix((arr["relevance_data"], arr["relevance_indices"],
                                    arr["relevance_indptr"]), shape=(L, V))
    rel._finish(arr["document_frequency"], arr["label_frequency"], n_docs)
    if rel.tokenizer_fingerprint_ != fingerprint:
        raise ValueError(f"{c.path}: the tokenizer rebuilt from {spec!r} does not match the saved "
                         f"one ({rel.tokenizer_fingerprint_} != {fingerprint}); "
                         "the model folder it names has changed")
    return rel


def _check_arrays(arr, L, V, where):
    """The saved arrays against shape (L, V): present, 1-D, the right lengths, CSR-valid."""
    want = {"relevance_indptr": L + 1, "relevance_indices": None, "relevance_data": None,
            "document_frequency": V, "label_frequency": L}
    for name, n in want.items():
        if name not in arr:
            raise ValueError(f"{where}: missing array {name!r}")
        a = arr[name]
        if a.ndim != 1 or (n is not None and a.shape[0] != n):
            raise ValueError(f"{where}, array {name!r}: shape {a.shape}, expected ({n},) for the "
                             f"saved shape [{L}, {V}]")
    ptr, ind, data = arr["relevance_indptr"], arr["relevance_indices"], arr["relevance_data"]
    if ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != ind.shape[0] or \
            data.shape[0] != ind.shape[0]:
        raise ValueError(f"{where}: relevance_indptr/indices/data do not form a CSR matrix")
    if ind.size and (ind.min() < 0 or ind.max() >= V):
        raise ValueError(f"{where}, array 'relevance_indices': values outside [0, {V})")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{where}, array 'relevance_data': NaN or inf")
    for name in ("document_frequency", "label_frequency"):
        if arr[name].size and arr[name].min() < 0:
            raise ValueError(f"{where}, array {name!r}: negative counts")
