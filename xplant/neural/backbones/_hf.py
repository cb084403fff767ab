"""Pretrained Hugging Face encoders over long documents (windows).

A document longer than the model's maximum length is cut into the fewest
windows of at most :func:`usable_window` subword ids, all of (nearly) equal
size; each window gets its own [CLS]/[SEP], is encoded, and the hidden
states of the real tokens are concatenated back into one sequence
(docs/design.md, section "Backbones"), so the label attention sees the whole
document.
"""

import os

import torch
from torch import nn

from ..._progress import no_progress_bars
from ...relevance._tokenize import default_pretrained_path, resolve_hf_path  # noqa: F401


def load_hf_tokenizer(spec):
    """The fast tokenizer of a backbone spec's local folder, loaded offline.

    Parameters
    ----------
    spec : str
        ``"hf"``, ``"minilm"`` or ``"hf:<folder>"`` (:func:`resolve_hf_path`).
    """
    from ...relevance._tokenize import load_hf_tokenizer as load_folder
    return load_folder(resolve_hf_path(spec))


def usable_window(config, embeddings=None):
    """Subword ids one window can hold, besides [CLS] and [SEP].

    BERT-style models number positions 0, 1, ..., so a window holds
    ``max_position_embeddings - 2`` ids. RoBERTa-style models (RoBERTa,
    XLM-R, CamemBERT, ...) start their position ids at ``padding_idx + 1``,
    so ``max_position_embeddings = 514`` holds 512 tokens, not 514: the
    window is ``max_position_embeddings - padding_idx - 1 - 2``.

    Parameters
    ----------
    config : transformers.PretrainedConfig
        The model's configuration.
    embeddings : torch.nn.Module or None
        The model's embeddings module; RoBERTa-style ones carry a
        ``padding_idx`` attribute (their position ids are counted from it).

    Returns
    -------
    int

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> usable_window(SimpleNamespace(max_position_embeddings=512))
    510
    >>> usable_window(SimpleNamespace(max_position_embeddings=514, pad_token_id=1),
    ...               SimpleNamespace(padding_idx=1))
    510
    """
    limit = getattr(config, "max_position_embeddings", 512)
    padding_idx = getattr(embeddings, "padding_idx", None)
    if isinstance(padding_idx, int) and padding_idx >= 0:
        limit -= padding_idx + 1
    return limit - 2


class HFEncoder(nn.Module):
    """A local pretrained transformer encoder applied in windows.

    Parameters
    ----------
    path : str
        Local model folder.
    cls_id, sep_id, pad_id : int
        Special token ids of its tokenizer.
    max_window : int or None
        Subword ids per window; default and upper bound:
        :func:`usable_window` of the model.
    """

    def __init__(self, path, cls_id, sep_id, pad_id, max_window=None):
        super().__init__()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from transformers import AutoConfig, AutoModel
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("A Hugging Face backbone needs the package 'transformers': "
                              "pip install 'xplant[pretrained]'") from exc
        config = AutoConfig.from_pretrained(path)
        # Attention dropout sends CPU attention onto a ~2.5x slower path.
        if hasattr(config, "attention_probs_dropout_prob"):
            config.attention_probs_dropout_prob = 0.0
        with no_progress_bars():               # verbose=0 and --quiet stay quiet
            self.model = AutoModel.from_pretrained(path, config=config)
        self.hidden_size = config.hidden_size
        limit = usable_window(config, getattr(self.model, "embeddings", None))
        self.window = min(max_window or limit, limit)
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self.use_bf16 = torch.backends.cpu.get_cpu_capability() in ("AVX512",) and \
            getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)()

    def forward(self, ids, mask):
        """ids, mask: (b, n) -> H (b, n, h), zero at padding.

        Each document is cut into the fewest windows of at most
        ``self.window`` ids, of equal size (a 600-id document runs as
        2 x 300, not 510 + 90 padded to 2 x 510), and each window is encoded
        as ``[CLS] ids [SEP]``. All windows of the batch run in one call,
        padded only to the longest window. Padding was a third of the
        encoder's work on CodiEsp with fixed 510-id windows, and attention
        cost grows with the square of the window. ``mask`` must be a prefix
        mask (real ids first), as :class:`xplant.neural.batching.Stage2Collate`
        builds it.

        Parameters
        ----------
        ids, mask : LongTensor and BoolTensor of shape (b, n)
            The tokenizer's ids and the prefix mask of real (not padding)
            ids, as :meth:`xplant.neural.backbones.WordEncoder.forward` reads them.
        """
        b, n = ids.shape
        lengths = mask.sum(1)
        H = torch.zeros((b * n, self.hidden_size), device=ids.device)
        starts, docs, sizes = [], [], []
        for i, length in enumerate(lengths.tolist()):
            if length == 0:
                continue
            k = -(-length // self.window)
            base, extra = divmod(length, k)
            start = 0
            for j in range(k):
                size = base + (j < extra)
                starts.append(start), docs.append(i), sizes.append(size)
                start += size
        if not sizes:
            return H.view(b, n, self.hidden_size)
        dev = ids.device
        starts, docs, sizes = (torch.tensor(v, device=dev) for v in (starts, docs, sizes))
        w = int(sizes.max())
        t = torch.arange(w, device=dev)
        valid = t < sizes[:, None]                                  # (S, w)
        flat = docs[:, None] * n + starts[:, None] + t              # (S, w) positions in (b*n)
        flat = torch.where(valid, flat, torch.zeros_like(flat))
        S = sizes.shape[0]
        inp = torch.full((S, w + 2), self.pad_id, dtype=ids.dtype, device=dev)
        inp[:, 0] = self.cls_id
        inp[:, 1:w + 1] = torch.where(valid, ids.reshape(-1)[flat], inp[:, 1:w + 1])
        inp[torch.arange(S, device=dev), sizes + 1] = self.sep_id
        att = torch.arange(w + 2, device=dev) < (sizes + 2)[:, None]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.use_bf16 and dev.type == "cpu"):
            out = self.model(input_ids=inp, attention_mask=att.long()).last_hidden_state
        H[flat[valid]] = out[:, 1:w + 1][valid].float()
        return H.view(b, n, self.hidden_size) * mask.unsqueeze(-1)

    def parameter_groups(self):
        """embeddings; the lower half of the layers; the upper half ("encoder")."""
        names = [n for n, _ in self.named_parameters()]
        layer_ids = sorted({int(p.split(".layer.")[1].split(".")[0]) for p in names if ".layer." in p})
        upper = set(layer_ids[len(layer_ids) // 2:])
        groups = {"embeddings": [], "intermediate": [], "encoder": []}
        for n in names:
            if ".layer." in n:
                i = int(n.split(".layer.")[1].split(".")[0])
                groups["encoder" if i in upper else "intermediate"].append(n)
            elif "embeddings" in n:
                groups["embeddings"].append(n)
            else:
                groups["encoder"].append(n)
        return groups
