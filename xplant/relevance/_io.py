"""Saving and loading a fitted MIGRelevance without pickle.

Arrays go to a safetensors file (read with ``safetensors.numpy``), everything
else to JSON, so loading a saved relevance executes no code.
"""

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._estimator import MIGRelevance
from ._tokenize import is_hf_tokenizer

_FORMAT = "xplant-mig-relevance-1"
_PARAMS = ("top_k", "positive_only", "normalize", "min_df", "max_df", "lowercase", "max_length")


def _tokenizer_spec(rel):
    tok = rel.tokenizer
    if isinstance(tok, str):
        return tok
    if is_hf_tokenizer(tok):
        path = getattr(tok, "name_or_path", None)
        if path and Path(path).is_dir():
            return "hf:" + str(Path(path).resolve())
    raise ValueError(
        "only MIGRelevance(tokenizer='word') or tokenizer='hf:<local folder>' (or a Hugging Face "
        "tokenizer loaded from a local folder) can be saved without pickle; a callable tokenizer "
        "is code. Refit with tokenizer='word' or an 'hf:' folder, or pickle the estimator "
        "(trusted use only).")


def save_relevance(relevance, path):
    """Write a fitted MIGRelevance to ``path`` (a folder): JSON + safetensors.

    Parameters
    ----------
    relevance : MIGRelevance
        Fitted on texts with the word tokenizer or a local Hugging Face tokenizer.
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
    from safetensors.numpy import save_file
    from sklearn.utils.validation import check_is_fitted
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
    from .._files import atomic_path, write_text
    with atomic_path(path / "relevance.safetensors") as tmp:
        save_file(arrays, str(tmp))
    meta = {"format": _FORMAT, "tokenizer": spec,
            "params": {p: getattr(relevance, p) for p in _PARAMS},
            "shape": list(R.shape), "n_train_documents": int(relevance.n_train_documents_),
            "tokenizer_fingerprint": relevance.tokenizer_fingerprint_}
    if spec == "word":
        inv = sorted(relevance.vocabulary_.items(), key=lambda kv: kv[1])
        meta["vocabulary"] = [t for t, _ in inv]
    write_text(path / "relevance.json", json.dumps(meta))
    return path


def load_relevance(path):
    """Read a MIGRelevance written by :func:`save_relevance`.

    Returns
    -------
    MIGRelevance
        Fitted: ``tokenize``/``transform`` work as before saving.

    Raises
    ------
    FileNotFoundError
        When the folder lacks the two files.
    ValueError
        When the saved tokenizer cannot be rebuilt identically (its
        fingerprint differs, e.g. another Hugging Face folder).
    """
    from safetensors.numpy import load_file
    path = Path(path)
    if not (path / "relevance.json").is_file() or not (path / "relevance.safetensors").is_file():
        raise FileNotFoundError(f"{path} holds no saved MIGRelevance (relevance.json and "
                                "relevance.safetensors)")
    meta = json.loads((path / "relevance.json").read_text())
    if meta.get("format") != _FORMAT:
        raise ValueError(f"{path}: unknown format {meta.get('format')!r}, expected {_FORMAT!r}")
    arr = load_file(str(path / "relevance.safetensors"))
    params = dict(meta["params"])
    if meta["tokenizer"] == "word":
        params["vocabulary"] = {t: i for i, t in enumerate(meta["vocabulary"])}
    rel = MIGRelevance(tokenizer=meta["tokenizer"], **params)
    rel._setup_tokenizer("text")
    if meta["tokenizer"] == "word":
        rel.vocabulary = None  # the vocabulary was learned, not given
    L, V = meta["shape"]
    rel.relevance_ = sp.csr_matrix((arr["relevance_data"], arr["relevance_indices"],
                                    arr["relevance_indptr"]), shape=(L, V))
    rel._finish(arr["document_frequency"], arr["label_frequency"], meta["n_train_documents"])
    if rel.tokenizer_fingerprint_ != meta["tokenizer_fingerprint"]:
        raise ValueError(f"the tokenizer rebuilt from {meta['tokenizer']!r} does not match the saved "
                         f"one ({rel.tokenizer_fingerprint_} != {meta['tokenizer_fingerprint']}); "
                         "the model folder it names has changed")
    return rel
