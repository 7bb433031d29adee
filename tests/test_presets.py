"""Table sources and the session changes built on them."""

import numpy as np
import pytest
import torch

from core.model.training import Corpus, TrainConfig
from core.plane.pipeline import explore
from core.serving.tabs import session_for
from core.tables.presets import (
    MAX_TABLE_BYTES,
    PRESET_MAXLEN,
    Settings,
    glove_source,
    random_source,
    sinusoidal_table,
    upload_source,
    with_positions,
)
from core.tables.session import Session
from core.tables.uploads import UploadedTable
from core.view.state import View


@pytest.fixture(scope="module")
def bert():
    return Session.create(source="bert")


def test_bert_preset_is_shared_and_uses_wordpiece(bert):
    other = Session.create(source="bert")
    assert other.model is bert.model  # one copy per process
    assert bert.model.config.vocab_size == 30522 and bert.model.config.d_model == 384
    assert bert.model.config.eps == 1e-12
    enc = bert.encode("The king spoke.", "")
    assert enc.ids[:3] == (101, 1996, 2332)


def test_glove_preset_words_and_special_rows():
    source = glove_source()
    model = source.model
    assert model.config.vocab_size == 400_003 and model.config.d_model == 50
    assert model.config.maxlen == PRESET_MAXLEN
    enc = source.tokenizer.encode("the king zzzqqq", "", maxlen=512)
    assert enc.ids[1:3] == (0, source.tokenizer.vocab["king"])
    assert enc.n_unknown == 1
    assert any("[UNK]" in note for note in source.notes)
    # the special rows sit at the table's scale, not far outside it
    scale = model.tok_embed.weight[:400_000].norm(dim=1).mean()
    assert model.tok_embed.weight[400_000:].norm(dim=1).max() < 3 * scale


def test_glove_neighbours_of_king_are_royal():
    table = glove_source().model.tok_embed.weight
    vocab = glove_source().tokenizer.vocab
    king = table[vocab["king"]]
    sims = torch.nn.functional.cosine_similarity(table[:50_000], king.unsqueeze(0))
    top = set(sims.topk(6).indices.tolist())  # once: inside the comprehension it ran per word, 400,000 times
    nearest = {w for w, i in vocab.items() if i in top}
    assert {"queen", "prince"} & nearest


def test_sinusoidal_table_matches_the_formula():
    table = sinusoidal_table(50, 7).weight
    p, i = 13, 2
    assert table[p, 2 * i].item() == pytest.approx(np.sin(p / 10000 ** (2 * i / 7)), abs=1e-6)
    assert table[p, 2 * i + 1].item() == pytest.approx(np.cos(p / 10000 ** (2 * i / 7)), abs=1e-6)
    assert table.shape == (50, 7) and not table.requires_grad


@pytest.mark.parametrize("kind", ["random", "sinusoidal"])
def test_position_choice_swaps_only_positions(bert, kind):
    swapped = with_positions(bert.base, kind, seed=0)
    assert swapped.model.tok_embed is bert.model.tok_embed  # shared, not copied
    assert swapped.model.seg_embed is bert.model.seg_embed
    assert not torch.equal(swapped.model.pos_embed.weight, bert.model.pos_embed.weight)
    assert with_positions(bert.base, "learned", 0) is bert.base
    with pytest.raises(ValueError, match="positions must be one of learned, random, sinusoidal"):
        with_positions(bert.base, "spiral", 0)


def test_upload_of_a_bare_matrix_uses_row_numbers_and_remakes_tables_at_its_width(bert):
    table = torch.randn(40, 6)
    upload = UploadedTable("token", "npy", None, table, None, ())
    source = upload_source(upload, bert.source, seed=0)
    assert source.model.config.d_model == 6 and source.model.config.vocab_size == 43
    assert torch.equal(source.model.tok_embed.weight[:40], table)
    assert any("new random position and segment tables" in n for n in source.notes)
    assert any("row numbers" in n for n in source.notes)
    enc = source.tokenizer.encode("0 5 39 40", "", maxlen=512)
    assert enc.ids[1:4] == (0, 5, 39) and enc.n_unknown == 1


def test_one_content_shares_its_tables_but_each_copy_keeps_its_own_notes(bert, tmp_path):
    """Pages uploading the same file share its tables (by content hash); what a copy's name
    earned (a note that the name misleads) is that copy's, not the next page's."""
    from core.tables.uploads import read_upload

    table = np.random.default_rng(5).normal(size=(20, 6)).astype(np.float32)
    np.save(tmp_path / "table.npy", table)
    (tmp_path / "table.safetensors").write_bytes((tmp_path / "table.npy").read_bytes())
    plain = upload_source(read_upload(tmp_path / "table.npy"), bert.source, seed=0)
    misnamed = upload_source(read_upload(tmp_path / "table.safetensors"), bert.source, seed=0)
    assert misnamed.model.tok_embed is plain.model.tok_embed  # one table for both
    name_note = "although its name ends in .safetensors"
    assert any(name_note in n for n in misnamed.notes)
    assert not any(name_note in n for n in plain.notes)
    again = upload_source(read_upload(tmp_path / "table.npy"), bert.source, seed=0)
    assert again.notes == plain.notes


def test_an_uploaded_table_and_its_markers_rows_are_one_storage(bert, tmp_path):
    """Taking in a file's table adds the markers' rows in the room the reader left after it,
    so the session holds the table the file was read into, not a copy of it."""
    from core.tables.uploads import read_upload

    table = np.random.default_rng(7).normal(size=(50, 6)).astype(np.float32)
    np.save(tmp_path / "rows.npy", table)
    upload = read_upload(tmp_path / "rows.npy")
    weight = upload_source(upload, bert.source, seed=0).model.tok_embed.weight
    assert weight.untyped_storage().data_ptr() == upload.token_table.untyped_storage().data_ptr()
    assert torch.equal(weight[:50], torch.from_numpy(table)) and weight.shape == (53, 6)
    assert 0.5 < float(weight[50:].std() / weight[:50].std()) < 2  # at the table's scale


def test_upload_with_words_keeps_current_tables_when_widths_match():
    session = Session.create(Settings(d_model=4))
    upload = UploadedTable("token", "word2vec-text", None, torch.randn(3, 4), ("red", "green", "blue"), ())
    after = session.with_upload(upload)
    assert after.source.key == "upload"
    assert after.model.pos_embed is session.model.pos_embed
    assert after.encode("blue red", "").ids[1:3] == (2, 0)
    back = after.with_tables("random", after.settings, after.positions).with_tables("upload", after.settings,
                                                                                  after.positions)
    assert back.model.tok_embed is after.model.tok_embed  # the upload is kept for switching back


def test_choosing_upload_without_a_file_explains(bert):
    with pytest.raises(ValueError, match="No file uploaded yet"):
        bert.with_tables("upload", bert.settings, bert.positions)
    assert session_for(View(source="bert"), bert) is bert  # re-choosing keeps the session (and any training)
    with pytest.raises(ValueError, match="the table source must be one of"):
        bert.with_tables("word2vec", bert.settings, bert.positions)


def test_training_makes_a_private_copy_and_reset_restores(bert):
    small = Session.create(Settings(d_model=8)).with_frozen({"position"})
    trained = small.trained_on(Corpus.builtin(), TrainConfig(steps=5))
    assert trained.training.steps == 5
    assert trained.model is not small.model
    assert torch.equal(trained.model.pos_embed.weight, small.model.pos_embed.weight)  # frozen
    assert not torch.equal(trained.model.tok_embed.weight, small.model.tok_embed.weight)
    assert small.model is small.source.model  # the shared tables never change
    assert trained.reset().model is small.model
    before = explore(trained, "the cat", "").scene
    assert before.previous is not None and set(before.previous) == set(before.points)


def test_parameter_counts_follow_the_toggles():
    session = Session.create(Settings(d_model=4, maxlen=10, n_segments=2))
    total = 30522 * 4 + 10 * 4 + 2 * 4 + 2 * 4
    assert session.parameter_counts() == (total, total)
    assert session.with_frozen({"token", "norm"}).parameter_counts() == (10 * 4 + 2 * 4, total)
    with pytest.raises(ValueError, match="no part called 'embedding'"):
        session.with_frozen({"embedding"})


def test_word_level_random_table_trains_on_the_corpus_vocabulary():
    session = Session.create(Settings(tokenizer="word", vocab_size=200, d_model=8))
    trained = session.trained_on(Corpus.builtin(), TrainConfig(steps=3))
    assert trained.tokenizer is not None and "cat" in trained.tokenizer.vocab
    assert trained.encode("the cat", "").ids[2] == trained.tokenizer.vocab["cat"]
    assert trained.reset().tokenizer is None


def test_a_word_vocabulary_is_capped_at_wordpiece_size_so_one_layer_fits_its_budget():
    assert Settings(tokenizer="word", vocab_size=30522, d_model=1024, maxlen=2048).table_bytes <= MAX_TABLE_BYTES
    with pytest.raises(ValueError, match="^vocab_size is 30,523; allowed values are 4 to 30,522.$"):
        Settings(tokenizer="word", vocab_size=30523)


def test_random_sources_are_cached_and_the_cache_can_be_cleared():
    settings = Settings(d_model=3, seed=11)
    assert random_source(settings) is random_source(settings)
    random_source.cache_clear()
    assert random_source.nbytes == 0
    assert torch.equal(random_source(settings).model.tok_embed.weight, random_source(settings).model.tok_embed.weight)
