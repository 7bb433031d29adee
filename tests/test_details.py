"""core.drawing.details, the side tabs: position paths (this table beside sinusoidal), repeated words'
output cosines, what LayerNorm did (and the d_model = 2 collapse), and the token × token
cosine heatmap — each checked against the same numbers computed independently with numpy."""

from dataclasses import replace

import numpy as np
import pytest

from core.drawing.details import PATH_POSITIONS, layernorm_detail, positions_detail, similarity_detail
from core.model.projection import PCAProjection
from core.tables.presets import LISTING_SETTINGS, sinusoidal_table
from core.tables.session import Session

LISTING = "i am new to PyTorch i am having fun"


@pytest.fixture(scope="module")
def session():
    return Session.create()


@pytest.fixture(scope="module")
def listing():
    return Session.create(LISTING_SETTINGS)


def traces(figure: dict) -> dict[str, dict]:
    return {trace["name"]: trace for trace in figure["data"]}


def path_xy(trace: dict) -> np.ndarray:
    return np.column_stack([trace["x"], trace["y"]])


def numpy_outputs(session: Session, a: str, b: str) -> np.ndarray:
    """The layer's output vectors, rebuilt from its tables with numpy alone."""
    encoding, model = session.encode(a, b), session.model
    summed = (
        model.tok_embed.weight.numpy()[list(encoding.ids)].astype(np.float64)
        + model.pos_embed.weight.numpy()[list(encoding.positions)]
        + model.seg_embed.weight.numpy()[list(encoding.segment_ids)]
    )
    centred = summed - summed.mean(axis=1, keepdims=True)
    normed = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + model.norm.eps)
    return normed * model.norm.weight.numpy() + model.norm.bias.numpy()


def numpy_cosines(X: np.ndarray) -> np.ndarray:
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    return unit @ unit.T


# ---------------------------------------------------------------- positions


def test_two_position_panels_this_table_and_sinusoidal(session):
    detail = positions_detail(session, "the cat saw the dog", "")
    paths = [trace for trace in detail.figure["data"] if trace["mode"] == "lines+markers"]
    assert [trace["name"] for trace in paths] == ["this table (learned)", "sinusoidal"]
    assert [trace["name"] for trace in detail.figure["data"]] == [
        "this table (learned)", "this table (learned) ends", "sinusoidal", "sinusoidal ends"]
    # 7 tokens, but a path needs at least PATH_POSITIONS steps to show its shape
    for trace in paths:
        assert len(trace["x"]) == len(trace["y"]) == PATH_POSITIONS == 64
        np.testing.assert_array_equal(trace["customdata"], np.arange(64))  # in order
    assert detail.tokens == ("[CLS]", "the", "cat", "saw", "the", "dog", "[SEP]")


def test_position_paths_are_each_tables_own_pca(session):
    figure = traces(positions_detail(session, "the cat saw the dog", "").figure)
    d = session.settings.d_model
    sinusoidal = sinusoidal_table(64, d).weight.numpy()
    expected = PCAProjection().fit(sinusoidal).transform(sinusoidal)
    np.testing.assert_allclose(path_xy(figure["sinusoidal"]), expected, atol=1e-5)
    learned = session.model.pos_embed.weight.numpy()[:64]
    expected = PCAProjection().fit(learned).transform(learned)
    np.testing.assert_allclose(path_xy(figure["this table (learned)"]), expected, atol=1e-5)
    # the ends are labelled 0 and 63, at the path's first and last points
    ends = figure["sinusoidal ends"]
    assert ends["text"] == ["0", "63"]
    np.testing.assert_allclose(path_xy(ends), path_xy(figure["sinusoidal"])[[0, -1]])


def test_position_paths_follow_a_long_sentence_and_stop_at_the_table(session):
    long = " ".join(["word"] * 98)  # 100 tokens with the markers
    figure = traces(positions_detail(session, long, "").figure)
    assert len(figure["sinusoidal"]["x"]) == len(figure["this table (learned)"]["x"]) == 100
    short_table = session.with_tables("random", replace(session.settings, maxlen=32), session.positions)
    figure = traces(positions_detail(short_table, "a b c", "").figure)
    assert len(figure["sinusoidal"]["x"]) == len(figure["this table (learned)"]["x"]) == 32
    sinusoidal = sinusoidal_table(32, 32).weight.numpy()
    np.testing.assert_allclose(path_xy(figure["sinusoidal"]),
                               PCAProjection().fit(sinusoidal).transform(sinusoidal), atol=1e-5)


def test_sinusoidal_positions_name_their_own_panel(session):
    detail = positions_detail(session.with_tables("random", session.settings, "sinusoidal"), "a b", "")
    names = [trace["name"] for trace in detail.figure["data"] if trace["mode"] == "lines+markers"]
    assert names == ["this table (sinusoidal)", "sinusoidal"]
    figure = traces(detail.figure)
    # the same table twice: the same path
    np.testing.assert_allclose(path_xy(figure["this table (sinusoidal)"]), path_xy(figure["sinusoidal"]), atol=1e-6)


def test_a_repeated_word_gets_the_cosine_of_its_two_outputs(session):
    detail = positions_detail(session, "the cat saw the dog", "")
    assert len(detail.repeated) == 1  # [CLS] and [SEP] are not words repeated
    (the,) = detail.repeated
    assert the.token == "the" and the.positions == (1, 4)
    outputs = numpy_outputs(session, "the cat saw the dog", "")
    assert the.cosine == pytest.approx(numpy_cosines(outputs)[1, 4], abs=1e-5)
    assert the.cosine < 0.99  # one token row, yet two different vectors at two positions


# ---------------------------------------------------------------- LayerNorm


def test_layernorm_detail_of_a_wide_table(session):
    detail = layernorm_detail(session, "the cat sat", "on the mat")
    figure = traces(detail.figure)
    assert list(figure) == ["std before", "std after", "γ (scale)", "β (shift)"]
    assert "std" in detail.summary and "across its 32 dimensions" in detail.summary
    assert "(+1, −1)" not in detail.summary
    outputs = numpy_outputs(session, "the cat sat", "on the mat")
    np.testing.assert_allclose(figure["std after"]["y"], outputs.std(axis=1), atol=1e-4)
    # γ = 1, β = 0 in a fresh table: every output has std sqrt(var / (var + eps)), 1 to 1e-4
    np.testing.assert_allclose(figure["std after"]["y"], 1, atol=1e-4)
    np.testing.assert_array_equal(figure["γ (scale)"]["y"], np.ones(32))
    np.testing.assert_array_equal(figure["β (shift)"]["y"], np.zeros(32))


def test_layernorm_detail_of_the_listing_shows_the_collapse(listing):
    detail = layernorm_detail(listing, LISTING, "")
    figure = traces(detail.figure)
    assert "after (output)" in figure and "before (sum)" in figure
    after = path_xy(figure["after (output)"])
    assert after.shape == (11, 2)  # [CLS] + 9 words + [SEP]
    np.testing.assert_allclose(np.abs(after), 1, atol=1e-2)  # (±1, ∓1)
    np.testing.assert_allclose(after.sum(axis=1), 0, atol=1e-6)
    np.testing.assert_allclose(after, numpy_outputs(listing, LISTING, ""), atol=1e-5)
    assert "(+1, −1)" in detail.summary and "std" in detail.summary
    assert "across its 2 dimensions" in detail.summary


# ---------------------------------------------------------------- similarity


def test_similarity_heatmap_is_the_cosine_of_the_outputs(session):
    a, b = "the cat sat", "on the mat"
    figure = similarity_detail(session, a, b)
    (heatmap,) = figure["data"]
    assert heatmap["type"] == "heatmap"
    z = np.asarray(heatmap["z"])
    length = len(session.encode(a, b))
    assert z.shape == (length, length) == (9, 9)
    np.testing.assert_array_equal(z, z.T)
    np.testing.assert_array_equal(np.diag(z), 1)
    np.testing.assert_allclose(z, numpy_cosines(numpy_outputs(session, a, b)), atol=1e-5)
    assert (heatmap["zmin"], heatmap["zmax"]) == (-1.0, 1.0)


def test_similarity_of_the_same_word_at_two_positions_is_below_one(session):
    z = np.asarray(similarity_detail(session, "the cat saw the dog", "")["data"][0]["z"])
    detail = positions_detail(session, "the cat saw the dog", "")
    assert z[1, 4] == pytest.approx(detail.repeated[0].cosine, abs=1e-6)
    assert z[1, 4] < 0.99



def test_bert_position_zero_is_left_out_and_named_on_the_plot():
    bert = Session.create(source="bert")
    figure = positions_detail(bert, "The king spoke to the queen.", "A man and a woman listened.").figure
    learned, ends = figure["data"][0], figure["data"][1]
    np.testing.assert_array_equal(learned["customdata"], np.arange(1, PATH_POSITIONS))  # 1…63: no 0
    assert ends["text"] == ["1", str(PATH_POSITIONS - 1)]
    notes = [a["text"].replace("<br>", " ") for a in figure["layout"]["annotations"]]
    assert any(note.startswith("Left out: position 0 (length 2.36)") for note in notes)
    # with 0 gone the rest spread over both axes instead of one line
    xy = np.column_stack([learned["x"], learned["y"]])
    spread = np.ptp(xy, axis=0)
    assert spread.min() > 0.2 * spread.max()
    # sinusoidal positions all have one length: nothing left out
    np.testing.assert_array_equal(figure["data"][2]["customdata"], np.arange(PATH_POSITIONS))


def test_a_table_without_outliers_keeps_every_position(session):
    figure = positions_detail(session, "the cat sat", "on the mat").figure
    assert not any(a["text"].startswith("Left out") for a in figure["layout"]["annotations"])


def test_each_position_table_is_named_for_what_it_is_in_the_title_and_the_tables_line():
    """GloVe has no position table: its own is random, and neither the Positions view's title nor
    the line under the plot may call it learned. A trained random layer no longer means nothing."""
    from core.drawing.captions import tables_line
    from core.model.training import Corpus, TrainConfig

    glove = Session.create(source="glove")
    names = [trace["name"] for trace in positions_detail(glove, "the king", "").figure["data"]]
    assert names[0] == "this table (random, GloVe has none)" and not any("learned" in name for name in names)
    assert Session.create(source="bert").positions_name == "learned"
    assert replace(glove, positions="sinusoidal").positions_name == "sinusoidal"

    untrained = Session.create(replace(LISTING_SETTINGS, seed=5))
    trained = untrained.trained_on(Corpus.builtin(), TrainConfig(steps=2))
    assert "mean nothing yet" in tables_line(untrained)
    assert "mean nothing" not in tables_line(trained) and "trained here" in tables_line(trained)
    assert tables_line(replace(glove, trained=trained.trained)).endswith("Trained here since.")
