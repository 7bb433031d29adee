"""core.plane.search: words of the whole vocabulary (not only the sentences), bounded queries, and
a layer for the main plot, checked through its data."""

import numpy as np
import plotly.io as pio
import pytest

from core.drawing.wire import figure_json
from core.plane.pipeline import explore
from core.plane.search import MAX_HITS, MAX_QUERY, SEARCH, search
from core.tables.presets import Settings
from core.tables.session import Session

A, B = "The king spoke to the queen.", "A man and a woman listened."


@pytest.fixture(scope="module")
def bert():
    return Session.create(source="bert")


@pytest.fixture(scope="module")
def plane(bert):
    return explore(bert, A, B).projection


def test_a_word_not_in_the_sentences_is_found_with_its_neighbours(bert, plane):
    result = search(bert, "princess", projection=plane)
    assert "princess" not in bert.encode(A, B).tokens
    assert result.hits[0].word == "princess" and result.hits[0].id == bert.tokenizer.token_to_id("princess")
    np.testing.assert_allclose(result.hits[0].point,
                               plane.transform(bert.model.tok_embed.weight[[result.hits[0].id]].detach().numpy())[0],
                               atol=1e-6)
    words = [word for word, _ in result.neighbours]
    assert len(words) == 10 and "princess" not in words and "prince" in words[:3]
    cosines = [cosine for _, cosine in result.neighbours]
    assert cosines == sorted(cosines, reverse=True) and all(0 < c < 1 for c in cosines)
    assert result.neighbour_points.shape == (10, 2)


def test_the_layer_is_one_trace_of_hits_and_neighbours_that_plotly_accepts(bert, plane):
    result = search(bert, "princess", projection=plane)
    trace = result.trace
    assert trace["name"] == SEARCH and trace["type"] == "scatter" and len(trace["x"]) == 1 + len(result.neighbours)
    assert trace["text"][0] == "princess" and trace["marker"]["symbol"][0] == "x"
    spec = {"data": [trace], "layout": {}}
    assert pio.from_json(figure_json(spec)).data[0].name == SEARCH  # validates every property


def test_plain_text_ranks_the_exact_word_then_prefixes(bert):
    result = search(bert, "King", limit=5)
    assert [hit.word for hit in result.hits][:3] == ["king", "kingdom", "kings"]
    assert result.truncated and len(result.hits) == 5 and result.trace is None  # no plane given


def test_a_regular_expression_matches_whole_entries(bert):
    result = search(bert, "colou?r", regex=True, k=0)
    assert {hit.word for hit in result.hits} == {"color", "colour"} and result.neighbours == ()


@pytest.mark.parametrize("pattern", ["(a+)+b", "(a|ab)*c", r"(a)\1", "(?=a)b", "a?a?a?a?", "["])
def test_dangerous_or_broken_patterns_are_refused_with_a_sentence(bert, pattern):
    with pytest.raises(ValueError, match="pattern|repeat"):
        search(bert, pattern, regex=True)


def test_queries_and_limits_are_bounded(bert):
    with pytest.raises(ValueError, match=f"at most {MAX_QUERY}"):
        search(bert, "a" * (MAX_QUERY + 1))
    with pytest.raises(ValueError, match=f"choose 1 to {MAX_HITS}"):
        search(bert, "a", limit=MAX_HITS + 1)
    assert search(bert, "").hits == ()
    assert "No entry" in search(bert, "qqqqzzzz").message


def test_in_three_dimensions_the_layer_is_a_scatter3d(bert):
    projection = explore(bert, A, B, components=3).projection
    trace = search(bert, "princess", projection=projection).trace
    assert trace["type"] == "scatter3d" and len(trace["z"]) == len(trace["x"])


def test_a_random_word_table_has_nothing_to_search():
    session = Session.create(Settings(tokenizer="word", vocab_size=10, d_model=2))
    assert session.tokenizer is None
    result = search(session, "cat")
    assert result.hits == () and "no vocabulary" in result.message


def test_a_search_scans_the_vocabulary_once_per_table_and_query(bert, plane, monkeypatch):
    """Typing on with a search in the view (or opening a link that carries one) redraws it
    without scanning the vocabulary again; another table, or another query, scans."""
    import core.plane.search as module
    from core.model.training import Corpus, TrainConfig

    scans = []
    scan = module._regex_matches
    monkeypatch.setattr(module, "_regex_matches", lambda *args: scans.append(args[2]) or scan(*args))
    first = search(bert, "prin.*ss", regex=True, projection=plane)
    again = search(bert, "prin.*ss", regex=True, projection=plane)
    assert scans == ["prin.*ss"]
    assert [h.word for h in again.hits] == [h.word for h in first.hits] and again.neighbours == first.neighbours
    np.testing.assert_array_equal(np.stack([h.point for h in again.hits]), np.stack([h.point for h in first.hits]))
    search(bert, "prin.*e", regex=True, projection=plane)
    assert scans == ["prin.*ss", "prin.*e"]
    trained = bert.trained_on(Corpus.builtin(), TrainConfig(steps=2))  # its own token table: scanned anew
    moved = search(trained, "prin.*ss", regex=True, projection=plane)
    assert scans == ["prin.*ss", "prin.*e", "prin.*ss"]
    expected = plane.transform(trained.model.tok_embed.weight[[moved.hits[0].id]].detach().numpy())[0]
    np.testing.assert_allclose(moved.hits[0].point, expected, atol=1e-6)


def test_the_scans_of_a_table_are_forgotten_with_it(bert):
    import gc

    import core.plane.search as module
    from core.model.training import Corpus, TrainConfig

    trained = bert.trained_on(Corpus.builtin(), TrainConfig(steps=2))
    search(trained, "queen")
    assert trained.model.tok_embed in module._CACHE
    kept = len(module._CACHE)
    del trained
    gc.collect()
    assert len(module._CACHE) == kept - 1
