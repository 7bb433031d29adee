"""A class's words in the plane (core/plane/classwords.py, the "class" traces of core/drawing/figures.py),
checked against the layer's own numbers: a word's point is its token rows' mean, put through the
layer as the first word of sentence A, projected with the plane the tokens are drawn in."""

import html

import numpy as np
import pytest
import torch

from core.drawing.figures import CLASS_TRACES, class_hover, class_names, embedding_spec
from core.plane.classwords import Answers, pieces_of
from core.plane.pipeline import explore_view
from core.plane.scene import ClassWords
from core.serving.tabs import session_for
from core.tables.session import Session
from core.view.state import View
from tests.test_shared_planes import planes_drawn

ANSWERS = Answers((("queen", 2), ("prince", 1), ("zzqqx", 1)), undrawn=0)


@pytest.fixture(scope="module")
def bert():
    view = View(source="bert")
    return view, session_for(view, Session.create())


def traces(spec: dict) -> dict:
    return {trace["name"]: trace for trace in spec["data"]}


def test_a_word_is_its_token_row_in_the_plane_of_the_tokens(bert):
    view, session = bert
    result = explore_view(view, session, answers=ANSWERS)
    placed = result.scene.answers
    assert placed.words == ("queen", "prince", "zzqqx") and placed.counts == (2, 1, 1)
    model = session.model
    for i, word in enumerate(placed.words):
        encoding = session.tokenizer.encode(word)  # [CLS] pieces [SEP], as the table tokenizes any text
        ids = torch.tensor([encoding.ids])
        with torch.no_grad():
            parts = model.components(ids, torch.zeros_like(ids))
        pieces = slice(1, len(encoding) - 1)
        token = parts["token"][0, pieces].mean(dim=0).numpy()
        np.testing.assert_allclose(placed.points["token"][i], result.projection.transform(token[None])[0],
                                   rtol=1e-5, atol=1e-6)
        if len(encoding) == 3:  # one piece: its sum and output are the layer's at position 1 of sentence A
            for group in ("sum", "output"):
                expected = result.projection.transform(parts[group][0, 1].numpy()[None])[0]
                np.testing.assert_allclose(placed.points[group][i], expected, rtol=1e-4, atol=1e-5)
    assert placed.pieces[2] == pieces_of(session, "zzqqx")[0] and len(placed.pieces[2]) > 1


def test_the_figure_draws_them_where_the_core_puts_them(bert):
    view, session = bert
    scene = explore_view(view, session, answers=ANSWERS).scene
    drawn = traces(embedding_spec(scene, compact=True))
    trace = drawn["class"]
    np.testing.assert_array_equal(trace["x"], scene.answers.points["token"][:, 0].astype(np.float32))
    np.testing.assert_array_equal(trace["y"], scene.answers.points["token"][:, 1].astype(np.float32))
    assert trace["hovertext"][0].startswith("queen ×2") and trace["hovertext"][1].startswith("prince ×1")
    assert "not in the vocabulary: split as z ##z" in trace["hovertext"][2]
    assert list(trace["customdata"]) == ["queen", "prince", "zzqqx"]
    assert trace["marker"]["size"][0] > trace["marker"]["size"][1]  # two answers: a larger marker
    assert {"class · sum", "class · output"} <= set(drawn)
    labels = embedding_spec(scene, compact=True)["layout"]["meta"]["labels"]
    assert labels["texts"]["class"][:2] == ["queen ×2", "prince ×1"]
    # the class's words get room first and each is written with its count, however far: on a
    # projector at step 6, "queen ×2" lost its spot to the step's star "queen" on the same point
    assert labels["order"][0] == "class" and labels["must"]["class"] == [0, 1, 2]


def test_only_the_shown_groups_get_a_class_trace(bert):
    view, session = bert
    scene = explore_view(view.with_(groups=("token", "position")), session, answers=ANSWERS).scene
    assert set(traces(embedding_spec(scene))) & set(CLASS_TRACES.values()) == {"class"}


def test_the_view_can_hide_them(bert):
    view, session = bert
    scene = explore_view(view.with_(answers=False), session, answers=ANSWERS).scene
    assert scene.answers is None and "class" not in traces(embedding_spec(scene))


def test_a_word_glove_does_not_know_is_listed_not_drawn():
    view = View(source="glove")
    session = session_for(view, Session.create())
    scene = explore_view(view, session, answers=Answers((("queen", 1), ("zzqqxv", 3)), undrawn=4)).scene
    assert scene.answers.words == ("queen",) and scene.answers.unplaced == (("zzqqxv", 3),)
    spec = embedding_spec(scene)
    assert len(traces(spec)["class"]["x"]) == 1
    notes = " ".join(note["text"] for note in spec["layout"]["annotations"]).replace("<br>", " ")
    assert "not in this vocabulary, not drawn: zzqqxv ×3" in notes
    assert "4 less frequent words counted, not drawn" in notes


def test_three_dimensions_draw_them_too(bert):
    view, session = bert
    result = explore_view(view.with_(dims=3), session, answers=ANSWERS)
    trace = traces(embedding_spec(result.scene))["class"]
    assert trace["type"] == "scatter3d" and len(trace["z"]) == 3
    assert trace["text"][0] == "queen ×2"


def test_words_are_escaped_in_hover_and_labels():
    words = ClassWords(words=("<b>x</b>", "a&b"), counts=(1, 2), pieces=(("<", "b", ">"), ("a&b",)),
                       points={"token": np.zeros((2, 2))})
    assert class_names(words) == ["&lt;b&gt;x&lt;/b&gt; ×1", "a&amp;b ×2"]
    hover = class_hover(words)
    assert hover[0].startswith("&lt;b&gt;x&lt;/b&gt; ×1<br>(3 pieces: &lt; b &gt;")
    assert "<b>" not in "".join(hover).replace("<br>", "")
    assert html.unescape(class_names(words)[0]) == "<b>x</b> ×1"


def test_every_drawn_word_is_one_point(bert):
    view, session = bert
    many = Answers(tuple((f"word{i}", 1) for i in range(200)), undrawn=50)
    scene = explore_view(view, session, answers=many).scene
    spec = embedding_spec(scene)
    assert len(traces(spec)["class"]["x"]) == 200
    assert any("50 less frequent words" in note["text"].replace("<br>", " ") for note in spec["layout"]["annotations"])


def test_pages_that_show_the_same_words_share_one_drawing(bert, monkeypatch):
    """A class's followers show one lesson with one round's words: the plane is drawn once for all
    of them (`ui.render.plane`), and again only when the words change."""
    import app
    from core.drawing import shared
    from ui import render

    page = app.demo.explorer
    view, session = bert
    drawn = planes_drawn(monkeypatch)
    shared.forget()
    first = [render.plane(page, view, session, revision=n, answers=ANSWERS) for n in (1, 2, 3)]
    assert len(drawn) == 1 and all('"name":"class"' in out[page.plot] for out in first)
    fewer = Answers((("queen", 2),))
    assert "prince" in first[0][page.plot]
    assert "prince" not in render.plane(page, view, session, answers=fewer)[page.plot]
    assert len(drawn) == 2
    assert '"name":"class"' not in render.plane(page, view, session)[page.plot]  # no round: no class trace
