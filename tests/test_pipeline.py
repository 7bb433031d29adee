"""The pipeline from sentences to a scene, and the session that feeds it."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from core.model.embedding import COMPONENTS
from core.plane.pipeline import TABLE_HEADERS, explore
from core.tables.presets import LISTING_SETTINGS, Settings, random_source
from core.tables.session import Session


@pytest.fixture(scope="module")
def session():
    return Session.create()


def test_default_pair_gives_five_groups_in_one_plane(session):
    result = explore(session, "The cat sat on the mat.", "It was warm there.")
    enc, scene = result.encoding, result.scene
    assert enc.tokens[0] == "[CLS]" and enc.tokens.count("[SEP]") == 2
    assert tuple(scene.points) == COMPONENTS
    for group in COMPONENTS:
        assert scene.points[group].shape == (len(enc), 2)
        assert np.isfinite(scene.points[group]).all()
    assert 0 < scene.explained[0] <= 1 and 0 <= scene.explained[1] <= scene.explained[0]
    assert len(result.rows) == len(enc) and len(result.rows[0]) == len(TABLE_HEADERS)
    # the table's norms are the full-dimensional ones
    assert result.rows[1][0] == "the"
    assert result.rows[1][4] == pytest.approx(
        float(np.linalg.norm(session.model.tok_embed.weight[enc.ids[1]])), abs=1e-3
    )
    # every output vector is layer-normalised: norm sqrt(d) with gamma 1, beta 0
    d = session.settings.d_model
    assert scene.norms["output"] == pytest.approx(np.full(len(enc), np.sqrt(d)), rel=1e-3)


def test_same_token_same_token_vector_different_positions(session):
    result = explore(session, "bank bank", "")
    pts = result.scene.points
    assert np.allclose(pts["token"][1], pts["token"][2], atol=1e-5)
    assert not np.allclose(pts["position"][1], pts["position"][2], atol=1e-3)


def test_groups_can_be_switched_off_and_order_is_kept(session):
    result = explore(session, "hello world", "", groups=["output", "token"])
    assert tuple(result.scene.points) == ("token", "output")
    nothing = explore(session, "hello world", "", groups=[])
    assert nothing.scene.points == {}
    assert "No group is ticked" in nothing.scene.message
    with pytest.raises(ValueError, match="unknown group 'colour'"):
        explore(session, "hi", "", groups=["colour"])


def test_truncation_is_reported(session):
    small = session.with_tables("random", replace(session.settings, maxlen=8), session.positions)
    result = explore(small, "one two three four five six seven", "a b")
    assert len(result.encoding) == 8
    assert any("cut" in note for note in result.notes)


def test_one_segment_row_maps_b_to_segment_zero():
    one = Session.create(Settings(n_segments=1))
    result = explore(one, "left side", "right side")
    assert set(result.scene.segment_ids) == {0}
    assert any("1 segment row" in note for note in result.notes)


def test_listing_layer_on_the_document_sentence():
    listing = Session.create(LISTING_SETTINGS)
    assert listing.model.config.vocab_size == 10 and listing.model.config.d_model == 2
    result = explore(listing, "i am new to PyTorch i am having fun", "")
    assert result.encoding.ids == (8, 0, 1, 2, 3, 4, 0, 1, 5, 6, 9)
    # d_model 2: every output is (a, -a) with |a| close to 1, i.e. two points in the plane
    ids, seg = torch.tensor([result.encoding.ids]), torch.tensor([result.encoding.segment_ids])
    outputs = listing.model(ids, seg)[0]
    assert np.allclose(outputs[:, 0].abs().numpy(), 1, atol=1e-2)
    assert np.allclose(outputs.sum(dim=1).numpy(), 0, atol=1e-6)


def test_random_tables_are_seeded_shared_and_read_only():
    a = random_source(Settings(seed=7, d_model=8)).model
    b = random_source(Settings(seed=7, d_model=8)).model
    c = random_source(Settings(seed=8, d_model=8)).model
    assert a is b  # shared, not copied
    assert not np.allclose(a.tok_embed.weight.numpy(), c.tok_embed.weight.numpy())
    assert not any(p.requires_grad for p in a.parameters())
    fresh = Settings(seed=7, d_model=8)
    random_source.cache_clear()
    assert np.array_equal(random_source(fresh).model.tok_embed.weight.numpy(), a.tok_embed.weight.numpy())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"d_model": 0}, "d_model is 0; allowed values are 1 to 1,024"),
        ({"d_model": 4096}, "d_model is 4,096"),
        ({"maxlen": 1}, "maxlen is 1; allowed values are 3 to 2,048"),
        ({"n_segments": 0}, "n_segments is 0"),
        ({"seed": -1}, "seed is -1"),
        ({"seed": 2**40}, "seed is"),
        ({"d_model": 2.5}, "d_model must be a whole number"),
        ({"tokenizer": "bpe"}, "tokenizer must be one of wordpiece, word"),
    ],
)
def test_bad_settings_raise_and_leave_the_session_alone(session, changes, message):
    with pytest.raises(ValueError, match=message):
        session.with_tables("random", replace(session.settings, **changes), session.positions)
    assert session.settings == Settings()


def test_number_boxes_send_floats():
    assert Settings(d_model=16.0).d_model == 16


def test_session_is_shared_not_copied_by_deepcopy(session):
    import copy

    assert copy.deepcopy(session) is session


def test_a_word_table_trained_on_fewer_words_than_it_has_rows_names_its_other_rows():
    """Training fixes a random word table's vocabulary to its corpus's words; the table keeps its
    rows, so a selected token's neighbours may be rows no word names (the page raised IndexError)."""
    from core.model.training import Corpus, TrainConfig

    words = Session.create(Settings(tokenizer="word", vocab_size=400, d_model=8))
    trained = words.trained_on(Corpus(("the cat sat", "the dog ran", "a cat ran")), TrainConfig(steps=2))
    result = explore(trained, "the cat", "a dog", selected=2, k=20)
    names = [name for name, _ in result.neighbours["token"]]
    assert len(names) == 20 and any(name.startswith("row ") for name in names)
