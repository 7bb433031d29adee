"""The encoder: parity with Hugging Face's BertModel, the checked mapping, the shared loader, and
what the layers do to "bank"."""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import BertConfig, BertModel

from core.model import checkpoints
from core.model.checkpoints import (
    bert_encoder,
    bert_preset,
    bert_state_to_embedding,
    bert_state_to_encoder,
    encoder_config,
    load_bert_encoder,
    minilm_dir,
)
from core.model.embedding import BertEmbedding
from core.model.encoder import Encoder, EncoderConfig, encode
from core.model.tokenizer import WordPieceTokenizer
from core.tables.presets import bert_source

# a BERT small enough to build in milliseconds, with more than one layer and more than one head
TINY = {
    "vocab_size": 50,
    "hidden_size": 16,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 32,
}
RIVER, MONEY = "the bank of the river", "money in the bank"
# two sentences long enough that the pair is cut to 128 tokens, the benchmark's size
LONG_A = "a student types a sentence and the explorer shows how each word moves through the layers " * 6
LONG_B = "the lecturer follows the path of the word bank from the river to the money in the vault " * 6


@pytest.fixture(scope="module")
def tiny() -> BertModel:
    torch.manual_seed(0)
    model = BertModel(BertConfig(**TINY, attn_implementation="eager")).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                # HF starts LayerNorm at (1, 0) and biases at 0, which would hide a swapped weight
                # and bias, or norm1 swapped with norm2
                parameter.normal_()
    return model


@pytest.fixture()
def tiny_state(tiny: BertModel) -> dict[str, torch.Tensor]:
    return {key: value.clone() for key, value in tiny.state_dict().items()}


@pytest.fixture(scope="module")
def wordpiece() -> WordPieceTokenizer:
    return WordPieceTokenizer()


@pytest.fixture(scope="module")
def minilm() -> BertModel:
    """Transformers' own model of the installed checkpoint, as it loads by default (sdpa attention)."""
    return BertModel.from_pretrained(str(minilm_dir()), local_files_only=True).eval()


def ids(wordpiece: WordPieceTokenizer, a: str, b: str = "", maxlen: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    encoding = wordpiece.encode(a, b, maxlen=maxlen)
    return torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids])  # (1, L) each


def hugging_face(model: BertModel, x: torch.Tensor, seg: torch.Tensor, mask: torch.Tensor | None = None):
    with torch.no_grad():
        return model(input_ids=x, token_type_ids=seg, attention_mask=mask,
                     output_hidden_states=True, output_attentions=True)


def assert_close(ours: tuple[torch.Tensor, ...], theirs: tuple[torch.Tensor, ...], atol: float = 1e-5) -> None:
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape, k
        assert (a - b).abs().max().item() <= atol, f"hidden state or attention {k} differs by {(a - b).abs().max()}"


def test_tiny_random_bert_through_the_mapping_matches_hugging_face(tiny: BertModel,
                                                                   tiny_state: dict[str, torch.Tensor]) -> None:
    embedding = bert_state_to_embedding(tiny_state)
    encoder = bert_state_to_encoder(tiny_state, encoder_config(tiny.config.to_dict()))
    assert encoder.config == EncoderConfig(n_layers=2, d_model=16, n_heads=4, d_ff=32, eps=1e-12)
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(0, 50, (1, 11), generator=generator)
    seg = (torch.arange(11) >= 5).long().unsqueeze(0)  # two segments: A is 5 tokens, B is 6
    theirs = hugging_face(tiny, x, seg)
    ours = encode(embedding, encoder, x, seg, per_head=True)
    assert len(ours.hidden_states) == 3 and len(ours.attentions) == 2
    assert_close(ours.hidden_states, theirs.hidden_states)
    assert_close(ours.attentions, theirs.attentions)
    # what the page shows: the mean over heads, each row a distribution over the tokens
    mean = encode(embedding, encoder, x, seg).attentions
    assert_close(mean, tuple(a.mean(dim=1) for a in theirs.attentions))
    assert all(torch.allclose(a.sum(dim=-1), torch.ones(1, 11)) for a in mean)


def test_padding_mask_matches_hugging_face(tiny: BertModel, tiny_state: dict[str, torch.Tensor]) -> None:
    embedding = bert_state_to_embedding(tiny_state)
    encoder = bert_state_to_encoder(tiny_state, encoder_config(tiny.config.to_dict()))
    x = torch.tensor([[1, 7, 8, 9, 2, 10, 11, 2], [1, 12, 2, 13, 2, 0, 0, 0]])
    seg = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]])
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])
    theirs = hugging_face(tiny, x, seg, mask)
    ours = encode(embedding, encoder, x, seg, mask, per_head=True)
    assert_close(ours.hidden_states, theirs.hidden_states)
    assert_close(ours.attentions, theirs.attentions)
    assert all((a[1, :, :, 5:] == 0).all() for a in ours.attentions)  # no weight on padding
    # the unpadded sequence alone gives its real tokens the same vectors
    alone = encode(embedding, encoder, x[1:, :5], seg[1:, :5])
    assert_close(alone.hidden_states, tuple(h[1:, :5] for h in ours.hidden_states))


def test_installed_checkpoint_matches_hugging_face_within_1e_5(minilm: BertModel,
                                                               wordpiece: WordPieceTokenizer) -> None:
    for a, b, length in ((RIVER, MONEY, 12), (LONG_A, LONG_B, 128)):
        x, seg = ids(wordpiece, a, b, maxlen=128)
        assert x.shape == (1, length) and seg.unique().tolist() == [0, 1]
        ours = encode(bert_preset(), bert_encoder(), x, seg)
        assert len(ours.hidden_states) == 7
        assert_close(ours.hidden_states, hugging_face(minilm, x, seg).hidden_states)


def test_installed_checkpoint_matches_eager_attention_bit_for_bit(wordpiece: WordPieceTokenizer) -> None:
    """Against the same arithmetic (eager attention, not the fused kernel), not one bit differs:
    the same order of operations, the same eps, exact GELU, a float32 softmax."""
    eager = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True, attn_implementation="eager").eval()
    x, seg = ids(wordpiece, LONG_A, LONG_B, maxlen=128)
    theirs = hugging_face(eager, x, seg)
    ours = encode(bert_preset(), bert_encoder(), x, seg, per_head=True)
    assert all(torch.equal(a, b) for a, b in zip(ours.hidden_states, theirs.hidden_states, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(ours.attentions, theirs.attentions, strict=True))


def test_hidden_state_0_is_the_page_s_embedding_output(minilm: BertModel, wordpiece: WordPieceTokenizer) -> None:
    """Layer 0 is today's page: the app's BERT tables (the shared source every session reads)."""
    source = bert_source()
    encoding = source.tokenizer.encode(RIVER, MONEY)
    x, seg = torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids])
    with torch.no_grad():
        page = source.model.components(x, seg)["output"]  # (1, L, 384)
    ours = encode(source.model, bert_encoder(), x, seg)
    assert torch.equal(ours.hidden_states[0], page)
    assert torch.equal(ours.hidden_states[0], hugging_face(minilm, x, seg).hidden_states[0])


def cosines(wordpiece: WordPieceTokenizer, a: str, b: str, together: bool) -> list[float]:
    """The cosine of the two "bank"s at each depth: the sentences as one pair, or each alone."""
    if together:
        x, seg = ids(wordpiece, a, b)
        first, second = (x[0] == wordpiece.token_to_id("bank")).nonzero()[:, 0].tolist()
        states = [(h[0, first], h[0, second]) for h in encode(bert_preset(), bert_encoder(), x, seg).hidden_states]
    else:
        (xa, sa), (xb, sb) = ids(wordpiece, a), ids(wordpiece, b)
        at = [int((x[0] == wordpiece.token_to_id("bank")).nonzero()[0]) for x in (xa, xb)]
        alone = [encode(bert_preset(), bert_encoder(), x, s).hidden_states for x, s in ((xa, sa), (xb, sb))]
        states = [(ha[0, at[0]], hb[0, at[1]]) for ha, hb in zip(*alone, strict=True)]
    return [torch.cosine_similarity(u, v, dim=0).item() for u, v in states]


def test_bank_by_the_river_and_bank_for_money_drift_apart(wordpiece: WordPieceTokenizer) -> None:
    """Each sentence read alone, the layers move the two senses of "bank" apart."""
    cos = cosines(wordpiece, RIVER, MONEY, together=False)
    assert cos[0] - cos[6] > 0.1
    assert cos[0] == pytest.approx(0.966, abs=1e-3) and cos[6] == pytest.approx(0.853, abs=1e-3)


def test_in_one_pair_the_two_banks_draw_together(wordpiece: WordPieceTokenizer) -> None:
    """Read as one pair ([CLS] river [SEP] money [SEP], as the page reads A and B), each "bank"
    attends to both sentences' context, and the two end closer at layer 6 than at layer 0.
    (transformers gives the same numbers: it is the model, not this module.)"""
    cos = cosines(wordpiece, RIVER, MONEY, together=True)
    assert cos[0] == pytest.approx(0.931, abs=1e-3) and cos[6] == pytest.approx(0.953, abs=1e-3)
    assert cos[6] > cos[0]


def test_shared_encoder_is_minilm_loaded_once_and_frozen() -> None:
    encoder = bert_encoder()
    assert encoder.config == EncoderConfig(n_layers=6, d_model=384, n_heads=12, d_ff=1536, eps=1e-12)
    assert not encoder.training
    assert all(not p.requires_grad and p.dtype == torch.float32 for p in encoder.parameters())
    assert sum(p.numel() for p in encoder.parameters()) == 6 * 1_774_464  # every weight of six layers
    assert bert_encoder() is encoder


def test_many_first_calls_at_once_read_the_checkpoint_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = []

    def slow_load(folder: Path) -> Encoder:
        loads.append(folder)
        time.sleep(0.2)  # long enough for every other caller to arrive while this one reads
        return Encoder(EncoderConfig(n_layers=1, d_model=4, n_heads=2, d_ff=8))

    monkeypatch.setattr(checkpoints, "load_bert_encoder", slow_load)
    # the loader's own code with an empty cache, as in a new process (the real cache is kept for later tests)
    monkeypatch.setattr(checkpoints, "_load_encoder", functools.cache(checkpoints._load_encoder.__wrapped__))
    ready = threading.Barrier(8)  # eight tabs opening at the same moment

    def open_tab(_: int) -> Encoder:
        ready.wait()
        return bert_encoder()

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(open_tab, range(8)))
    assert len(loads) == 1
    assert all(result is results[0] for result in results) and isinstance(results[0], Encoder)


# one weight of the tiny model's state replaced (None: deleted), and the message that must come back
BAD_WEIGHTS = [
    pytest.param("encoder.layer.1.intermediate.dense.weight", torch.ones(16, 32),
                 "encoder.layer.1.intermediate.dense.weight has shape (16, 32) but the model expects (32, 16).",
                 id="wrong shape"),
    pytest.param("encoder.layer.1.attention.output.LayerNorm.bias", None,
                 "encoder.layer.1.attention.output.LayerNorm.bias is missing from the checkpoint", id="missing"),
    pytest.param("encoder.layer.0.attention.self.distance_embedding.weight", torch.ones(31, 4),
                 "encoder.layer.0.attention.self.distance_embedding.weight is not part of a BERT encoder layer",
                 id="unknown key in a layer"),
    pytest.param("encoder.layer.2.output.dense.bias", torch.ones(16),
                 "encoder.layer.2.output.dense.bias belongs to layer 2, but the encoder has 2 layers (0 to 1).",
                 id="a layer too many"),
    pytest.param("bert.encoder.layer.0.output.dense.bias", torch.ones(16),
                 "encoder.layer.0.output.dense.bias and bert.encoder.layer.0.output.dense.bias are the same weight",
                 id="same weight twice"),
    pytest.param("encoder.layer.0.attention.self.key.bias", torch.ones(16, dtype=torch.long),
                 "encoder.layer.0.attention.self.key.bias holds torch.int64 values; encoder weights hold floating",
                 id="integers"),
    pytest.param("encoder.layer.0.attention.self.value.weight", torch.full((16, 16), float("nan")),
                 "row 0 of encoder.layer.0.attention.self.value.weight contains NaN", id="nan"),
]


@pytest.mark.parametrize(("key", "value", "message"), BAD_WEIGHTS)
def test_bad_state_is_refused_with_a_message_naming_the_key(
    tiny: BertModel, tiny_state: dict[str, torch.Tensor], key: str, value: torch.Tensor | None, message: str
) -> None:
    state = {name: tensor for name, tensor in (tiny_state | {key: value}).items() if tensor is not None}
    with pytest.raises(ValueError, match=re.escape(message)):
        bert_state_to_encoder(state, encoder_config(tiny.config.to_dict()))


def test_pretraining_names_and_legacy_layer_norm_names_load(tiny: BertModel,
                                                            tiny_state: dict[str, torch.Tensor]) -> None:
    renamed = {}
    for key, value in tiny_state.items():
        key = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        renamed[f"bert.{key}"] = value
    encoder = bert_state_to_encoder(renamed, encoder_config(tiny.config.to_dict()))
    assert torch.equal(encoder.layers[1].norm2.bias, tiny_state["encoder.layer.1.output.LayerNorm.bias"])
    assert torch.equal(encoder.layers[0].attn.w_q.weight, tiny_state["encoder.layer.0.attention.self.query.weight"])
    # its own copy: changing the caller's tensor leaves the encoder as it was
    tiny_state["encoder.layer.0.attention.self.query.weight"].zero_()
    assert encoder.layers[0].attn.w_q.weight.abs().sum() > 0


def test_a_saved_folder_loads_from_safetensors_and_never_from_a_pickle(tiny: BertModel, tmp_path: Path) -> None:
    tiny.save_pretrained(tmp_path)
    encoder = load_bert_encoder(tmp_path)
    assert not encoder.training and encoder.config.n_heads == 4
    assert torch.equal(encoder.layers[1].ffn.w_2.weight, tiny.encoder.layer[1].output.dense.weight)

    (tmp_path / "model.safetensors").unlink()
    torch.save(tiny.state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match=re.escape("has no model.safetensors; the encoder's weights are read "
                                                   "from safetensors only, never from a pickle.")):
        load_bert_encoder(tmp_path)


@pytest.mark.parametrize(("setting", "message"), [
    ({"hidden_act": "gelu_new"}, "config.json's hidden_act is 'gelu_new'; this encoder implements BERT's 'gelu' only."),
    ({"position_embedding_type": "relative_key"}, "config.json's position_embedding_type is 'relative_key'"),
    ({"num_attention_heads": 3}, "d_model 16 does not split into 3 heads"),
])
def test_a_config_this_encoder_would_compute_wrongly_is_refused(
    tiny: BertModel, tmp_path: Path, setting: dict, message: str
) -> None:
    save_file({key: value.contiguous() for key, value in tiny.state_dict().items()}, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text(json.dumps(tiny.config.to_dict() | setting))
    with pytest.raises(ValueError, match=re.escape(message)):
        load_bert_encoder(tmp_path)


def test_wrong_widths_and_masks_are_sentences(tiny: BertModel, tiny_state: dict[str, torch.Tensor]) -> None:
    encoder = bert_state_to_encoder(tiny_state, encoder_config(tiny.config.to_dict()))
    with pytest.raises(ValueError, match=re.escape("the embedding layer's vectors have width 8 but the "
                                                   "encoder reads width 16")):
        encode(BertEmbedding(vocab_size=50, d_model=8), encoder, torch.tensor([[1, 2]]), torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match=re.escape("the mask has shape (1, 3) but the input has (1, 2)")):
        encoder(torch.zeros(1, 2, 16), torch.ones(1, 3))
