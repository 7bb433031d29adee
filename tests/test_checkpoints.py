"""Loading BERT checkpoints: parity with Hugging Face, the mapping's checks, and safe pickles."""

from __future__ import annotations

import contextlib
import json
import math
import pickle
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import BertConfig, BertModel

from core.model import checkpoints
from core.model.checkpoints import (
    ALLOWED_SUFFIXES,
    bert_preset,
    bert_state_to_embedding,
    minilm_dir,
)
from core.model.embedding import BertEmbedding, EmbeddingConfig
from core.tables import load_bert_embedding  # the documented name scripts outside the app use

# a BERT small enough to build in milliseconds; one encoder layer, so whole-model files have one
TINY = {
    "vocab_size": 50,
    "hidden_size": 8,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 16,
}


@pytest.fixture(scope="module")
def hf_model() -> BertModel:
    torch.manual_seed(0)
    model = BertModel(BertConfig(**TINY)).eval()
    with torch.no_grad():
        for parameter in model.embeddings.parameters():
            parameter.normal_()  # HF starts LayerNorm at (1, 0), which would hide a swapped weight and bias
    return model


@pytest.fixture()
def state(hf_model: BertModel) -> dict[str, torch.Tensor]:
    """The tiny layer's tables under the names a `BertModel` checkpoint gives them."""
    return {f"embeddings.{key}": value.clone() for key, value in hf_model.embeddings.state_dict().items()}


def assert_same_output(ours: BertEmbedding, theirs: torch.nn.Module, vocab_size: int, shape: tuple[int, int]) -> None:
    """The same output bit for bit, as the README claims: same sum order, same eps, eval mode."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab_size, shape, generator=generator)
    seg = torch.randint(0, 2, shape, generator=generator)
    with torch.no_grad():
        assert torch.equal(ours(x, seg), theirs(input_ids=x, token_type_ids=seg))


# each writer saves the model in one of the layouts people have, and returns what to load
def write_safetensors(model: BertModel, folder: Path) -> Path:
    # a pretraining checkpoint's names: "bert.embeddings.word_embeddings.weight", ...
    tensors = {f"bert.embeddings.{key}": value for key, value in model.embeddings.state_dict().items()}
    save_file(tensors, folder / "table.safetensors")
    return folder / "table.safetensors"


def write_pt(model: BertModel, folder: Path) -> Path:
    # the layer's own state dict, without a prefix
    torch.save(model.embeddings.state_dict(), folder / "table.pt")
    return folder / "table.pt"


def write_bin(model: BertModel, folder: Path) -> Path:
    # a whole model's state dict, encoder layer and pooler included
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder / "pytorch_model.bin"


def write_folder(model: BertModel, folder: Path) -> Path:
    # what save_pretrained leaves: model.safetensors beside config.json
    model.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("write", [write_safetensors, write_pt, write_bin, write_folder])
def test_loaded_layer_matches_hugging_face(
    write: Callable[[BertModel, Path], Path], hf_model: BertModel, tmp_path: Path
) -> None:
    ours = load_bert_embedding(write(hf_model, tmp_path))
    assert ours.config == EmbeddingConfig(50, 8, 16, 2, 1e-12)
    assert not ours.training
    assert all(parameter.dtype == torch.float32 for parameter in ours.parameters())
    assert_same_output(ours, hf_model.embeddings, vocab_size=50, shape=(3, 11))


def test_preset_matches_hugging_face_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hf = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True).embeddings.eval()
    assert_same_output(bert_preset(), hf, vocab_size=30522, shape=(2, 40))


def test_preset_is_minilm_loaded_once_and_frozen() -> None:
    preset = bert_preset()
    assert preset.tok_embed.weight.shape == (30522, 384)
    assert preset.pos_embed.weight.shape == (512, 384)
    assert preset.seg_embed.weight.shape == (2, 384)
    assert preset.norm.eps == 1e-12
    assert not preset.training
    assert not any(parameter.requires_grad for parameter in preset.parameters())
    assert bert_preset() is preset


@pytest.fixture()
def no_preset_yet():
    checkpoints._load_preset.cache_clear()
    yield
    checkpoints._load_preset.cache_clear()  # drop whatever the test cached; the next caller loads the real one


def test_two_first_calls_at_once_load_the_preset_once(
    no_preset_yet: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads, waiting = [], threading.Semaphore(0)

    class Watched:
        """The preset's lock, telling the test each time a caller reaches it."""

        def __init__(self) -> None:
            self.lock = threading.Lock()

        def __enter__(self):
            waiting.release()
            return self.lock.__enter__()

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    def slow_load(path: Path) -> BertEmbedding:
        loads.append(path)
        # the load goes on until the second caller has reached the lock: the race, forced (without
        # a lock, the second caller would be loading too, and the count below would say so)
        assert waiting.acquire(timeout=30) and waiting.acquire(timeout=30)
        return BertEmbedding(vocab_size=5, d_model=4)

    monkeypatch.setattr(checkpoints, "load_bert_embedding", slow_load)
    monkeypatch.setattr(checkpoints, "_PRESET_LOCK", Watched())
    both_ready = threading.Barrier(2)
    results = []

    def open_session() -> None:
        both_ready.wait()
        results.append(bert_preset())

    threads = [threading.Thread(target=open_session) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert results[0] is results[1]


def test_legacy_gamma_and_beta_are_layer_norm_weight_and_bias(state: dict[str, torch.Tensor]) -> None:
    weight = state.pop("embeddings.LayerNorm.weight")
    bias = state.pop("embeddings.LayerNorm.bias")
    state |= {"embeddings.LayerNorm.gamma": weight, "embeddings.LayerNorm.beta": bias}
    ours = bert_state_to_embedding(state)
    assert torch.equal(ours.norm.weight, weight)
    assert torch.equal(ours.norm.bias, bias)


def test_stored_position_and_token_type_buffers_are_ignored(state: dict[str, torch.Tensor]) -> None:
    # older checkpoints save these integer buffers; as tables they would be refused
    state["embeddings.position_ids"] = torch.arange(16).unsqueeze(0)
    state["embeddings.token_type_ids"] = torch.zeros(1, 16, dtype=torch.long)
    assert bert_state_to_embedding(state).config.maxlen == 16


def one_bad_value(value: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    table = torch.ones(50, 8, dtype=dtype)
    table[7, 3] = value
    return table


# (keys to replace in the tiny state, None to delete), and the message that must come back
BAD_STATES = {
    "wrong width": (
        {"embeddings.position_embeddings.weight": torch.ones(16, 4)},
        "embeddings.position_embeddings.weight has shape (16, 4) but the model expects (16, 8).",
    ),
    "not a table": (
        {"embeddings.token_type_embeddings.weight": torch.ones(8)},
        "embeddings.token_type_embeddings.weight has shape (8,) but the model expects a 2-D table",
    ),
    "layer norm too narrow": (
        {"embeddings.LayerNorm.bias": torch.ones(7)},
        "embeddings.LayerNorm.bias has shape (7,) but the model expects (8,).",
    ),
    "missing key": (
        {"embeddings.token_type_embeddings.weight": None},
        "embeddings.token_type_embeddings.weight is missing",
    ),
    "nan": (
        {"embeddings.word_embeddings.weight": one_bad_value(math.nan)},
        "row 7 of embeddings.word_embeddings.weight contains NaN; every value must be a finite number.",
    ),
    "inf": (
        {"embeddings.word_embeddings.weight": one_bad_value(-math.inf)},
        "row 7 of embeddings.word_embeddings.weight contains an infinite value",
    ),
    "float64 too large for float32": (
        {"embeddings.word_embeddings.weight": one_bad_value(1e300, torch.float64)},
        "row 7 of embeddings.word_embeddings.weight contains an infinite value",
    ),
    "integers": (
        {"embeddings.LayerNorm.weight": torch.ones(8, dtype=torch.long)},
        "embeddings.LayerNorm.weight holds torch.int64 values",
    ),
    "unknown key in the layer": (
        {"embeddings.projection.weight": torch.ones(8, 8)},
        "embeddings.projection.weight is not part of BERT's embedding layer",
    ),
    "same table twice": (
        {"bert.embeddings.word_embeddings.weight": torch.ones(50, 8)},
        "embeddings.word_embeddings.weight and bert.embeddings.word_embeddings.weight",
    ),
}


@pytest.mark.parametrize(("changes", "message"), BAD_STATES.values(), ids=BAD_STATES.keys())
def test_bad_state_is_refused_with_a_message_naming_the_key(
    state: dict[str, torch.Tensor], changes: dict[str, torch.Tensor | None], message: str
) -> None:
    for key, value in changes.items():
        if value is None:
            del state[key]
        else:
            state[key] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        bert_state_to_embedding(state)


def test_config_json_sets_eps_and_must_agree_with_the_tables(hf_model: BertModel, tmp_path: Path) -> None:
    folder = write_folder(hf_model, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"layer_norm_eps": 1e-5}))
    assert load_bert_embedding(folder).norm.eps == 1e-5

    (folder / "config.json").write_text(json.dumps(config | {"hidden_size": 16}))
    expected = "embeddings.word_embeddings.weight has shape (50, 8) but the model expects (50, 16)."
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_bert_embedding(folder)


def test_folder_prefers_model_safetensors(hf_model: BertModel, tmp_path: Path) -> None:
    write_folder(hf_model, tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(b"not a checkpoint")
    assert load_bert_embedding(tmp_path).config.vocab_size == 50


def test_unknown_extension_lists_the_allowed_formats(tmp_path: Path) -> None:
    path = tmp_path / "table.npy"
    path.write_bytes(b"\x93NUMPY")
    with pytest.raises(ValueError, match="allowed are") as error:
        load_bert_embedding(path)
    assert all(suffix in str(error.value) for suffix in (".safetensors", ".pt", ".pth", ".bin"))
    assert set(ALLOWED_SUFFIXES) == {".safetensors", ".pt", ".pth", ".bin"}


@pytest.mark.parametrize("name", ["table.safetensors", "table.pt", "table.bin"])
def test_damaged_file_is_a_value_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(b"hello, this is not a checkpoint")
    with pytest.raises(ValueError, match="is not a readable"):
        load_bert_embedding(path)


class WritesMarker:
    """A pickle payload: unpickling it runs `exec`, which writes a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], None], tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",)


def save_with_torch(payload: WritesMarker, path: Path) -> None:
    # looks like a checkpoint: a real table, and the payload beside it
    torch.save({"embeddings.word_embeddings.weight": torch.ones(50, 8), "extra": payload}, path)


def save_raw_pickle(payload: WritesMarker, path: Path) -> None:
    # protocol 2 is torch's own, so torch.load reads as far as the payload without a warning
    path.write_bytes(pickle.dumps(payload, protocol=2))


@pytest.mark.parametrize("save", [save_with_torch, save_raw_pickle])
def test_malicious_pickle_is_refused_and_never_run(
    save: Callable[[WritesMarker, Path], None], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "table.pt"
    save(WritesMarker(marker), path)
    with pytest.raises(ValueError, match="never loaded"):
        load_bert_embedding(path)
    assert not marker.exists()

    # the payload is real: loading without weights_only runs it (the raw pickle then fails to load)
    with contextlib.suppress(Exception):
        torch.load(path, map_location="cpu", weights_only=False)
    assert marker.exists()
