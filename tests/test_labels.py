"""Which points ask for a written label, in what order (core/drawing/labels.py): one label for points that
coincide, the words that must be written first, and the same texts whether the figure is sent
whole or compact. Where the page writes them is checked in Chromium, from the page's DOM
(tests/test_browser_lecture.py, tests/test_browser.py)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from core.drawing.figures import embedding_spec
from core.drawing.labels import group_texts, legible, pile_label
from core.drawing.wire import expand, figure_json
from core.plane.scene import Neighbourhood
from core.plane.search import SEARCH
from tests.test_figures import TOKENS, make_scene


@pytest.mark.parametrize(("names", "label"), [
    (["the"], "the"),
    (["[SEP]", "[SEP]"], "[SEP] ×2"),
    (["the", "cat"], "the, cat"),
    (["a", "b", "c"], "a, b, c"),
    (["i", "am", "i", "new", "to", "am", "fun"], "i ×2, am ×2 +3"),
])
def test_a_shared_point_gets_one_label_naming_its_tokens(names, label):
    assert pile_label(names) == label


def test_a_pile_is_labelled_on_its_first_point_only():
    assert group_texts(["a", "b", "a", "c"], [[0, 2]]) == ["a ×2", "b", "", "c"]
    assert group_texts(["x", "y"], []) == ["x", "y"]


@pytest.mark.parametrize(("name", "label"), [
    (".", "“.”"), (",", "“,”"), ("?!", "“?!”"), ("$", "“$”"), ("&amp;", "“&amp;”"), ("&lt;", "“&lt;”"),
    ("the", "the"), ("[SEP]", "[SEP]"), ("##s", "##s"), ("a.", "a."), ("3", "3"), ("&amp;lt;", "&amp;lt;"), ("", ""),
])
def test_a_token_of_punctuation_alone_is_quoted_where_a_label_names_it(name, label):
    """". ×2" read "×2" from the back of a room: a full stop (any token of punctuation or symbols
    alone, escaped as labels are sent) is quoted; a word, a marker, a number or a piece is not."""
    assert legible(name) == label


def test_a_pile_of_full_stops_reads_as_a_quoted_stop_and_its_count():
    assert pile_label([".", "."]) == "“.” ×2"
    assert pile_label(["the", ".", ".", ",", "cat"]) == "the, “.” ×2 +2"
    assert group_texts([".", "the", ".", ","], [[0, 2]]) == ["“.” ×2", "the", "", "“,”"]


def test_the_plot_quotes_a_full_stop_and_its_hover_names_it_as_typed():
    scene = make_scene(tokens=("[CLS]", "it", "ended", ".", "[SEP]"))
    spec = embedding_spec(scene)
    written = labels_of(scene)["texts"]["token"]  # in drawing order
    assert "“.”" in written and "." not in written
    token = next(trace for trace in spec["data"] if trace["name"] == "token")
    assert "." in token["hovertext"] and "“.”" not in token["hovertext"]
    turned = replace(scene, points={group: np.column_stack([xy, xy[:, :1]]) for group, xy in scene.points.items()},
                     origin=np.append(scene.origin, 0.0), explained=(*scene.explained, 0.0))  # PC1 to PC3
    three = next(trace for trace in embedding_spec(turned)["data"] if trace.get("name") == "token")
    assert "“.”" in three["text"]


def labels_of(scene, **options) -> dict:
    return embedding_spec(scene, **options)["layout"]["meta"]["labels"]


def test_coinciding_points_of_a_group_ask_for_one_label():
    scene = make_scene()
    token = scene.points["token"].copy()
    token[TOKENS.index("[SEP]")] = token[len(TOKENS) - 1]  # both [SEP]s on one point, as one row is
    labels = labels_of(replace(scene, points={**scene.points, "token": token}))
    assert labels["texts"]["token"].count("[SEP] ×2") == 1 and "[SEP]" not in labels["texts"]["token"]
    assert labels["texts"]["sum"].count("[SEP]") == 2  # the sums of the two do not coincide


def test_named_words_positions_and_the_selection_must_be_written():
    scene = replace(make_scene(), selected=TOKENS.index("embed"))
    labels = labels_of(scene, named={"the", "3", "nowhere"})
    written = {group: [labels["texts"][group][j] for j in points] for group, points in labels["must"].items()}
    assert written == {"token": ["the", "embed"], "output": ["the", "embed"], "sum": ["the", "embed"],
                       "position": ["3"]}
    assert labels_of(make_scene())["must"] == {}


def test_stars_and_the_searched_word_come_before_the_groups():
    scene = make_scene()
    near = Neighbourhood(selected=1, points={"token": np.zeros((2, 2))}, labels={"token": ("queen", "monarch")},
                         cosines={"token": np.ones(2, np.float32)})
    layer = {"name": SEARCH, "x": np.zeros(2), "y": np.zeros(2), "text": ["king", "&lt;k&gt;"],
             "marker": {"color": "#555"}}
    labels = labels_of(replace(scene, neighbourhood=near), layer=layer, named={"monarch"})
    assert labels["order"] == ["segment", "nearest by token vector", SEARCH, "token", "output", "sum", "position"]
    assert labels["must"]["nearest by token vector"] == [1]  # the star the text names
    assert labels["must"][SEARCH] == [0]  # the word searched for: its cross is always named
    assert labels["texts"][SEARCH] == ["king", "&lt;k&gt;"]
    assert labels["colours"][SEARCH] == "#555"


def test_a_compact_figure_reads_its_texts_from_the_columns_as_the_whole_one_sends_them():
    scene = make_scene()
    token = scene.points["token"].copy()
    token[1] = token[6]  # a pile of two different tokens
    scene = replace(scene, points={**scene.points, "token": token}, selected=2)
    compact = json.loads(figure_json(embedding_spec(scene, compact=True, named={"the"})))
    whole = json.loads(figure_json(embedding_spec(scene, named={"the"})))
    sent = compact["layout"]["meta"]["labels"]["texts"]
    assert set(sent) == {"segment"}  # the token groups' texts are not sent twice
    assert expand(compact)["layout"]["meta"]["labels"] == whole["layout"]["meta"]["labels"]
    assert "the, tom &amp; jerry" in whole["layout"]["meta"]["labels"]["texts"]["token"]
