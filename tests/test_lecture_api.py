"""The lecture features through the launched app's route, as the page's script drives them.

Neighbours of a selected token, the segment shift, presenter mode, the three PCA planes
(this sentence, whole vocabulary, frozen) with the vocabulary drawn behind, Refit, segment
flips, the two documents' walk-throughs (the listing run, the lookup), links, exports and
the guided tour. Each `live` is its own browser tab (tests/appapi.py `Page`): its `View` and
session live on the server between calls, and another page never sees them. A change names
only what the person set, so a test sets the view one control at a time, as a person does;
an answer brings only what changed, so what the page shows is what it holds (`Page.shown`).
A slide author reads a tour step's view through the public API (`tour`, `view`), and gets
what the page shows for it.
"""

from __future__ import annotations

import csv
import json
import uuid
from urllib.parse import parse_qs

import numpy as np
import pytest
from appapi import ALL, Outputs, Page, decode, exported

from core.view import tour
from core.view.share import from_query
from core.view.state import View

A = "The cat sat on the mat."
B = "It was warm there."
OTHER_B = "Completely different words arrived here tonight, quite late."
RANDOM_OUTPUT_NORM = 32**0.5  # |output| = sqrt(d_model) under a fresh LayerNorm, d_model 32 by default
HOST = "http://lecture.example/"  # the page's own address, which its link is made of


# helpers: changing the view and reading what the page shows


def embed(live: Page, a=A, b=B, *, token=None, **changes) -> Outputs:
    """Set the given controls (view fields, one call each), type the sentences (and select
    `token`), and return what the page shows then: every value it holds, each as the last answer
    that wrote it left it (an answer brings only what changed)."""
    for name, value in changes.items():
        live.send(**{name: value})
    live.send(sentence_a=a, sentence_b=b)
    if token is not None:
        live.send(token=token)
    return Outputs(live.shown)


def showing(live: Page, elem_id: str):
    """What the page shows in a widget: the last value it was sent, or the one it was built with."""
    if live.shown.written(elem_id):
        return live.shown.value(elem_id)
    import app

    return app.demo.explorer.live.by_id[elem_id].value


def query(live: Page) -> tuple[str, str]:
    """What the page's link button writes: the link's query string (after the page's own
    address) and its notes."""
    live.send(link=HOST)
    link = live.shown.value("share-link")
    assert link.startswith(HOST), link
    return link.removeprefix(HOST).removeprefix("?"), live.shown.value("share-notes")


def figure(plot) -> dict:
    """The figure from what the page is sent for the main plot or a chart."""
    return json.loads(plot["plot"])


def names(plot) -> list[str]:
    return [trace.get("name") for trace in figure(plot)["data"]]


def trace(plot, name: str) -> dict:
    found = [t for t in figure(plot)["data"] if t.get("name") == name]
    assert len(found) == 1, f"expected one trace named {name!r}, got {names(plot)}"
    return found[0]


def points_by_position(plot, group: str) -> dict[int, tuple[float, float]]:
    """A group's points keyed by token position (customdata column 1): traces draw tokens in their own order.

    The segment trace has one point per segment row (customdata column 0); each position gets
    its token's segment's point, the token's segment read from the token trace (column 2)."""
    if group == "segment":
        rows = trace(plot, "segment")
        xy = zip(decode(rows["customdata"])[:, 0], decode(rows["x"]), decode(rows["y"]), strict=True)
        shared = {int(r): (float(x), float(y)) for r, x, y in xy}
        return {int(p): shared[int(s)] for p, s in decode(trace(plot, "token")["customdata"])[:, 1:3]}
    t = trace(plot, group)
    positions = decode(t["customdata"])[:, 1].astype(int)
    return {int(p): (float(x), float(y)) for p, x, y in zip(positions, decode(t["x"]), decode(t["y"]), strict=True)}


def points_of(plot, positions, groups=ALL) -> np.ndarray:
    """(groups, positions, 2): the points of the given tokens in every group, for comparing two plots."""
    return np.asarray([[points_by_position(plot, g)[p] for p in sorted(positions)] for g in groups])


def positions_in_a(table) -> set[int]:
    """Positions of the tokens in segment 0: [CLS], sentence A and its [SEP]."""
    return {row[2] for row in table["data"] if row[3] == 0}


def segments(table) -> list[int]:
    return [row[3] for row in table["data"]]


def axis_titles(plot) -> tuple[str, str]:
    layout = figure(plot)["layout"]
    return layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]


def index_of(table, token: str, segment: int) -> int:
    return next(row[2] for row in table["data"] if row[0] == token and row[3] == segment)


def unique(text: str) -> str:
    """A sentence this test has not typed yet (an unchanged one redraws nothing)."""
    return f"{text} {uuid.uuid4().hex[:6]}"


# 1. neighbours of the selected token


@pytest.mark.parametrize("k", [1, 7])
def test_neighbour_tables_list_k_entries_by_falling_cosine(live, k):
    out = embed(live, token=2, k=k)  # 2: "cat" in [CLS] the cat sat ...
    by_token, by_output = out["neighbours-token"], out["neighbours-output"]
    for listed in (by_token, by_output):
        assert listed["headers"] == ["#", "token", "cosine"]
        rows = listed["data"]
        assert [row[0] for row in rows] == list(range(1, k + 1))
        cosines = [row[2] for row in rows]
        assert all(-1 <= c <= 1 for c in cosines)
        assert cosines == sorted(cosines, reverse=True)
        # the token itself and the markers are left out: "cat" is trivially nearest to "cat"
        assert not {"cat", "[CLS]", "[SEP]"} & {row[1] for row in rows}
    shown = names(out["embed-plot"])
    for name in ("nearest by token vector", "nearest by output vector", "selected token"):
        assert name in shown
    assert len(decode(trace(out["embed-plot"], "nearest by token vector")["x"])) == k


def test_no_selected_token_gives_empty_neighbour_tables(live):
    out = embed(live)
    assert out["neighbours-token"]["data"] == [] and out["neighbours-output"]["data"] == []
    assert not {"nearest by token vector", "nearest by output vector", "selected token"} & set(names(out["embed-plot"]))


def test_a_token_that_is_not_a_number_is_refused(live):
    embed(live, token=2)
    before = live.fingerprint()
    out = live.send(token="abc")
    assert out.notice == "token must be a whole number from 0 to 2,047, not 'abc'."
    assert out.value("selected-token") == 2  # the picker is put back
    assert live.fingerprint() == before


def test_token_picker_offers_none_and_every_token(live):
    table = embed(live)["token-table"]
    update = live.send(picker=True)["selected-token"]  # opened (its focus): the tab's tokens now
    tokens = [row[0] for row in table["data"]]
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2
    expected = [["none", ""], *([f"{i}: {token}", i] for i, token in enumerate(tokens))]
    assert [list(choice) for choice in update["choices"]] == expected
    # selecting keeps the list in step, since it shows that entry's text
    assert [list(choice) for choice in live.send(token=2)["selected-token"]["choices"]] == expected


def test_a_selection_past_the_end_is_let_go_with_a_note(live):
    embed(live)
    out = live.send(token=99)
    assert out.notice == "Token 99 is past the end of the sentences (0 to 14), so it was let go."
    assert out.value("selected-token") == ""


# 2. segment shift and presenter mode


def test_segment_shift_is_drawn_for_sentence_b_only(live):
    assert "segment shift" in names(embed(live, shift=True)["embed-plot"])
    assert "segment shift" not in names(embed(live, shift=False)["embed-plot"])
    assert "segment shift" not in names(embed(live, b="", shift=True)["embed-plot"])  # no B token, nothing shifted


def test_presenter_mode_enlarges_markers_and_type(live):
    normal, large = (figure(embed(live, presenter=on)["embed-plot"]) for on in (False, True))
    size = {}
    for name, fig in (("normal", normal), ("large", large)):
        token = next(t for t in fig["data"] if t["name"] == "token")
        size[name] = (token["marker"]["size"], fig["layout"]["font"]["size"])
    assert size["large"][0] > size["normal"][0]
    assert size["large"][1] > size["normal"][1]


# 3. the plane: this sentence, whole vocabulary, frozen


def test_sentence_plane_moves_sentence_a_when_b_changes(live):
    """The control for the fixed planes below: refitted on every change, A's points move with B."""
    first, second = embed(live, b=B), embed(live, b=OTHER_B)
    a_positions = positions_in_a(first["token-table"])
    assert not np.allclose(points_of(first["embed-plot"], a_positions), points_of(second["embed-plot"], a_positions),
                           atol=1e-3)
    assert "vocabulary" not in axis_titles(first["embed-plot"])[0]
    assert "frozen" not in axis_titles(first["embed-plot"])[0]


def test_vocabulary_plane_keeps_sentence_a_fixed_while_b_changes(live):
    live.send(source="bert")
    assert live.send(basis="vocabulary").notice == ""
    first, second = embed(live, b=B), embed(live, b=OTHER_B)
    a_positions = positions_in_a(first["token-table"])
    assert a_positions == positions_in_a(second["token-table"]) == set(range(9))  # [CLS] the cat sat on the mat . [SEP]
    np.testing.assert_allclose(points_of(first["embed-plot"], a_positions),
                               points_of(second["embed-plot"], a_positions), atol=1e-6)
    for title in (*axis_titles(first["embed-plot"]), *axis_titles(second["embed-plot"])):
        assert "of the vocabulary" in title
    assert "whole vocabulary" in first["variance-bars"]


def test_frozen_plane_is_the_plane_of_the_moment_and_stays(live):
    before = embed(live, b=B)
    live.send(basis="frozen")
    same, other = embed(live, b=B), embed(live, b=OTHER_B)
    a_positions = positions_in_a(before["token-table"])
    # frozen now: what "this sentence" showed, and the same points whatever B says next
    np.testing.assert_allclose(points_of(same["embed-plot"], a_positions),
                               points_of(before["embed-plot"], a_positions), atol=1e-5)
    np.testing.assert_allclose(points_of(other["embed-plot"], a_positions),
                               points_of(same["embed-plot"], a_positions), atol=1e-6)
    assert all("of the frozen view" in title for title in axis_titles(other["embed-plot"]))


def test_an_unknown_basis_is_refused_with_the_allowed_ones_and_changes_nothing(live):
    live.send(basis="vocabulary")
    before = live.fingerprint()
    out = live.send(basis="nonsense")
    assert out.notice == "basis must be one of sentence, vocabulary, frozen, not 'nonsense'."
    assert out.value("basis") == "vocabulary"  # the radio is put back
    assert live.fingerprint() == before
    assert "of the vocabulary" in axis_titles(embed(live, a=unique(A))["embed-plot"])[0]


def test_freezing_with_no_group_ticked_is_refused(live):
    live.send(groups=[])
    before = live.fingerprint()
    out = live.send(basis="frozen")
    assert "No group is ticked" in out.notice
    assert out.value("basis") == "sentence"
    assert live.fingerprint() == before


# 4. the vocabulary behind the tokens


def test_background_needs_a_fixed_plane(live):
    live.send(background=5)
    assert showing(live, "background-data") == ""


def test_background_draws_berts_most_frequent_words_in_the_vocabulary_plane(live):
    live.send(source="bert")
    live.send(basis="vocabulary")
    behind = json.loads(live.send(background=50).value("background-data"))
    assert behind["type"] == "scatter" and behind["name"] == "vocabulary"  # SVG up to 5,000: drawn under the tokens
    x, y = decode(behind["x"]), decode(behind["y"])
    assert len(x) == len(y) == len(behind["hovertext"]) == 50
    assert behind["hovertext"][0] == "the"
    # the same plane as the tokens: the background's "the" sits under the typed "the"'s token point
    out = embed(live)
    typed = points_by_position(out["embed-plot"], "token")[index_of(out["token-table"], "the", 0)]
    np.testing.assert_allclose((x[0], y[0]), typed, atol=1e-5)
    assert live.send(background=0).value("background-data") == ""
    assert "background" not in parse_qs(query(live)[0])  # none drawn: the link says nothing of it


@pytest.mark.parametrize(("n", "message"), [(-1, "background is -1; allowed values are 0 to 5,000."),
                                            (5_001, "background is 5,001; allowed values are 0 to 5,000.")])
def test_background_size_out_of_range_is_refused(live, n, message):
    live.send(basis="vocabulary")
    before = live.fingerprint()
    out = live.send(background=n)
    assert out.notice == message
    assert out.value("background-size") == 0  # the box is put back
    assert live.fingerprint() == before


# 5. Refit


def test_refit_of_the_vocabulary_plane_changes_nothing(live):
    live.send(basis="vocabulary")
    points = embed(live)["embed-plot"]
    before = live.fingerprint()
    live.send(refit=True)
    assert live.fingerprint() == before
    after = embed(live, a=A + " ")["embed-plot"]
    everyone = set(points_by_position(points, "token"))
    np.testing.assert_allclose(points_of(after, everyone), points_of(points, everyone), atol=1e-6)


def test_refit_of_the_frozen_plane_fits_the_current_sentences(live):
    new_a = "Lions watched the zebra graze."
    own_plane = embed(live, a=new_a, b=OTHER_B)  # what "this sentence" shows for the new pair
    embed(live)
    live.send(basis="frozen")  # the plane of A and B
    kept = embed(live, a=new_a, b=OTHER_B)  # the new pair in the old pair's plane
    everyone = set(points_by_position(kept["embed-plot"], "token"))
    assert not np.allclose(points_of(kept["embed-plot"], everyone), points_of(own_plane["embed-plot"], everyone),
                           atol=1e-3)
    before = live.fingerprint()
    live.send(refit=True)
    assert live.fingerprint() != before
    refitted = embed(live, a=new_a, b=OTHER_B)
    np.testing.assert_allclose(points_of(refitted["embed-plot"], everyone),
                               points_of(own_plane["embed-plot"], everyone), atol=1e-5)
    assert "of the frozen view" in axis_titles(refitted["embed-plot"])[0]


def test_refit_redraws_the_plane_at_once(live):
    embed(live)
    live.send(basis="frozen")
    embed(live, a="Lions watched the zebra graze.", b=OTHER_B)
    assert live.send(refit=True).written("embed-plot")


# 6. flipping a token's segment


def test_flip_gives_the_selected_token_the_other_segment(live):
    before = embed(live)["token-table"]
    warm = index_of(before, "warm", 1)
    live.send(token=warm)
    out = live.send(flip=True)
    expected = segments(before)
    expected[warm] = 0
    assert segments(out["token-table"]) == expected
    assert "Segment flipped: 'warm'" in out["embed-info"].replace("\\", "")
    assert parse_qs(query(live)[0])["flip"] == [str(warm)]  # a link carries it
    assert segments(live.send(flip=True)["token-table"]) == segments(before)  # a second flip gives it back


def test_a_flip_follows_its_token_and_is_let_go_with_it(live):
    warm = index_of(embed(live)["token-table"], "warm", 1)
    live.send(token=warm)
    live.send(flip=True)
    moved = embed(live, b="It was very warm there.")  # "warm" one place on: its flip goes with it
    assert segments(moved["token-table"])[warm + 1] == 0 and segments(moved["token-table"])[warm] == 1
    edited = embed(live, b="Nobody was there.")  # "warm" gone: the flip is let go, and the note says so
    assert segments(edited["token-table"]) == [0] * 9 + [1] * 5
    assert "'warm' is no longer in the sentences, so its segment flip was let go." in edited.notice
    assert "Segment flipped" not in edited["embed-info"]


def test_flip_without_a_selected_token_is_refused(live):
    embed(live)
    before = live.fingerprint()
    out = live.send(flip=True)
    assert out.notice.startswith("Select a token first")
    assert live.fingerprint() == before


# 7. the first listing, run


def test_listing_run_prints_the_shape_and_explains_the_bug(live):
    live.send(shown="listing")
    live.send(listing_seed=0, listing_bug=True)
    printout, facts = showing(live, "listing-output"), showing(live, "listing-facts")
    assert "torch.Size([2, 3, 2])" in printout
    assert "pos_embed" in facts and "is None" in facts
    assert len(figure(showing(live, "listing-plot"))["data"]) > 0
    live.send(listing_bug=False)
    fixed = showing(live, "listing-facts")
    assert "pos_embed" in fixed and "is None" not in fixed
    live.send(listing_bug=True)
    assert showing(live, "listing-output") == printout  # the seed decides everything
    live.send(listing_seed=1)
    assert showing(live, "listing-output") != printout


def test_listing_run_draws_nothing_while_its_tab_is_closed(live):
    out = live.send(listing_seed=3, listing_bug=True)
    assert not out.written("listing-output")
    assert parse_qs(query(live)[0])["listing_seed"] == ["3"]  # the view holds it for when the tab opens


@pytest.mark.parametrize(("seed", "message"), [
    (-1, "seed is -1; allowed values are 0 to 2,147,483,647."),
    ("x", "seed must be a whole number from 0 to 2,147,483,647, not 'x'."),
])
def test_listing_run_refuses_a_bad_seed(live, seed, message):
    live.send(shown="listing")
    before = live.fingerprint()
    out = live.send(listing_seed=seed, listing_bug=True)
    assert out.notice == message
    assert out.value("listing-seed") == 0 and live.fingerprint() == before


# 8. the lookup table, step by step


def test_lookup_walks_the_documents_sentence(live):
    live.send(shown="lookup")
    live.send(lookup_sentence="i am new to PyTorch i am having fun", lookup_dim=3, lookup_grad=False)
    live.send(lookup_grad=True)
    vocabulary, code = showing(live, "lookup-vocab"), showing(live, "lookup-code")
    printout, summary = showing(live, "lookup-output"), showing(live, "lookup-info")
    assert vocabulary["headers"] == ["word", "count", "id"]
    assert vocabulary["data"] == [
        ["i", 2, 0], ["am", 2, 1], ["new", 1, 2], ["to", 1, 3], ["PyTorch", 1, 4], ["having", 1, 5], ["fun", 1, 6],
    ]
    assert "[0, 1, 2, 3, 4, 0, 1, 5, 6]" in summary
    assert "tensor([[0.1000, 0.2000, 0.3000]" in printout
    assert "nn.Embedding(len(vocab), 3)" in code
    assert "rows: **0, 1, 2, 3, 4, 5, 6**" in summary


def test_lookup_with_a_frozen_weight_changes_no_row(live):
    live.send(shown="lookup")
    summary = live.send(lookup_sentence="i am new to PyTorch i am having fun", lookup_dim=3,
                        lookup_grad=False).value("lookup-info")
    assert "rows: **none**" in summary and "stayed `None`" in summary


def test_lookup_width_out_of_range_is_refused_by_its_box(live):
    before = live.fingerprint()
    out = live.send(lookup_sentence="i am new", lookup_dim=17, lookup_grad=True)
    assert out.notice == "lookup_dim is 17; allowed values are 1 to 16."
    assert out.value("lookup-dim") == 3 and live.fingerprint() == before


def test_lookup_refuses_an_empty_sentence_with_a_notice(live):
    live.send(shown="lookup")
    before = live.fingerprint()
    out = live.send(lookup_sentence="", lookup_dim=3, lookup_grad=True)
    assert "The sentence is empty" in out.notice
    assert live.fingerprint() == before


# 9. links


def test_share_writes_a_link_that_reads_back_to_the_same_view(live):
    live.send(source="bert")
    live.send(positions="sinusoidal")
    live.freeze(True, False, False, True)
    embed(live, "Hello there, world & co.", "", groups=["token", "sum"], labels=False, arrows=True, shift=True,
          basis="vocabulary", background=100, k=7, presenter=True, token=3)
    text, notes = query(live)
    assert notes == ""
    assert "b=&" in text  # an empty sentence B is a value of its own
    link = from_query(parse_qs(text, keep_blank_values=True))
    assert link.notes == ()
    assert link.view == View(
        sentence_a="Hello there, world & co.", sentence_b="", source="bert", positions="sinusoidal",
        groups=("token", "sum"), labels=False, arrows=True, shift=True, basis="vocabulary", background=100,
        frozen=frozenset({"token", "norm"}), token=3, k=7, presenter=True,
    )


def test_a_link_cannot_carry_an_upload(live, tmp_path):
    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(0).standard_normal((20, 6)).astype(np.float32))
    assert live.upload(path).value("table-source") == "upload"
    text, notes = query(live)
    assert "source" not in parse_qs(text, keep_blank_values=True) and "upload" not in text
    assert "A link cannot carry an uploaded file" in notes
    assert from_query(parse_qs(text, keep_blank_values=True)).view.source == "random"


def test_share_carries_this_sessions_tour_step(live):
    assert "step=" not in query(live)[0]
    live.send(move=1)
    assert query(live)[0] == "step=1"


# 10. exports


def test_export_writes_coordinates_vectors_and_the_figure(app_url, live, tmp_path):
    groups = ["token", "sum"]
    live.send(groups=groups)
    live.send(sentence_a=A, sentence_b=B)
    result = live.send(export=True)
    assert result.notice == ""
    files = {}
    for name, data in exported(app_url, result).items():  # as the browser downloads them
        files[name.rsplit(".", 1)[-1]] = tmp_path / name
        (tmp_path / name).write_bytes(data)
    assert set(files) == {"csv", "safetensors", "html"}
    out = embed(live)
    table = out["token-table"]["data"]

    with files["csv"].open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == ["group", "token", "id", "position", "segment", "x", "y"]
        rows = list(reader)
    assert len(rows) == len(groups) * len(table)
    assert [row["group"] for row in rows] == [g for g in groups for _ in table]
    assert [[row["token"], int(row["id"]), int(row["position"]), int(row["segment"])] for row in rows[: len(table)]] \
        == [r[:4] for r in table]
    plotted = points_by_position(out["embed-plot"], "sum")
    for row in rows[len(table):]:
        assert (np.float32(row["x"]), np.float32(row["y"])) == pytest.approx(plotted[int(row["position"])], abs=1e-5)

    from safetensors.numpy import load_file

    vectors = load_file(files["safetensors"])
    # every group's full vectors, the unplotted ones too: only the CSV is limited to the plotted groups
    for group in ALL:
        assert vectors[group].shape == (len(table), 32) and vectors[group].dtype == np.float32
    assert vectors["ids"].tolist() == [r[1] for r in table]
    assert np.linalg.norm(vectors["sum"], axis=1) == pytest.approx([r[7] for r in table], abs=1e-3)

    assert files["html"].stat().st_size > 1_000_000  # plotly.js inlined: opens without a network
    html = files["html"].read_text(encoding="utf-8")
    assert "Plotly.newPlot" in html and '"name":"sum"' in html


# 11. the guided tour


def test_next_starts_the_tour_at_step_one(live):
    out = live.send(move=1)
    view = tour.STEPS[0].view
    assert (showing(live, "sentence-a"), showing(live, "sentence-b")) == (view.sentence_a, view.sentence_b)
    assert showing(live, "groups") == list(view.groups) and showing(live, "table-source") == view.source
    assert f"Step 1 of {len(tour.STEPS)}" in out.value("tour-text") and tour.STEPS[0].title in out.value("tour-text")


def test_previous_on_the_first_step_stays_there(live):
    live.send(move=1)
    out = live.send(move=-1)
    assert out.value("tour-text").startswith(f"Step 1 of {len(tour.STEPS)}")
    assert showing(live, "sentence-a") == tour.STEPS[0].view.sentence_a


def test_walking_the_tour_sets_each_step(live):
    for number, step in enumerate(tour.STEPS, 1):
        out = live.send(move=1)
        view = step.view
        assert f"Step {number} of {len(tour.STEPS)}: {step.title}" in out.value("tour-text")
        assert tuple(showing(live, elem_id) for elem_id in ("sentence-a", "sentence-b", "table-source", "basis")) == (
            view.sentence_a, view.sentence_b, view.source, view.basis,
        )
        assert [showing(live, f"freeze-{part}") for part in ("token", "position", "segment", "norm")] == [
            part in view.frozen for part in ("token", "position", "segment", "norm")
        ]
        assert query(live)[0] == f"step={number}"  # page and link agree
        shown = live.shown
        if number == 6:  # BERT's tables, in the session: not the random ones
            token = showing(live, "selected-token")
            assert shown["token-table"]["data"][token][0] == "king"
            assert all(row[-1] != pytest.approx(RANDOM_OUTPUT_NORM, rel=1e-2) for row in shown["token-table"]["data"])
            assert {"kings", "queen", "monarch"} <= {row[1] for row in shown["neighbours-token"]["data"]}
            assert "of the vocabulary" in axis_titles(shown["embed-plot"])[0]
        elif number == 7:
            assert shown["token-table"]["data"][1][-1] == pytest.approx(RANDOM_OUTPUT_NORM, rel=1e-2)
        elif number == 8:  # BERT's tables through the encoder, each sentence read on its own
            assert "layer 6" in names(shown["embed-plot"])
            assert "each sentence read on" in json.loads(showing(live, "context-plot"))["layout"]["title"]["text"]
    last = live.send(move=1)  # past the end: stays on the last step
    assert last.value("tour-text").startswith(f"Step {len(tour.STEPS)} of {len(tour.STEPS)}")


def test_a_tour_step_clears_segment_flips(live):
    first = live.send(move=1)
    plain = segments(first["token-table"])
    dog = index_of(first["token-table"], "dog", 1)
    live.send(token=dog)
    assert segments(live.send(flip=True)["token-table"]) != plain  # the flip took
    live.send(move=1)
    assert showing(live, "sentence-a") == first.value("sentence-a")
    assert segments(live.shown["token-table"]) == plain


def test_a_slide_author_reads_each_tour_step_through_the_api_as_the_page_shows_it(app_url, api):
    """A lecturer preparing slides lists the tour (`tour`) and reads each step's view (`view` of
    the step's query): its tokens, points and neighbours are what a page opened at that step shows."""
    steps = api.predict(api_name="/tour")
    assert [(each["step"], each["title"], each["query"]) for each in steps] == [
        (n, step.title, f"step={n}") for n, step in enumerate(tour.STEPS, 1)]
    for each in steps:
        answer = api.predict(each["query"], api_name="/view")
        shown = Page(app_url, each["query"]).opened
        assert answer["notes"] == [] and answer["query"] == each["query"]
        assert answer["tokens"] == [row[:4] for row in shown["token-table"]["data"]], each["title"]
        for group, points in answer["points"].items():
            if group in ALL:
                drawn = points_by_position(shown["embed-plot"], group)
                np.testing.assert_allclose(points, [drawn[p] for p in sorted(drawn)], atol=1e-6, err_msg=group)
        if each["step"] == 6:  # the king's neighbours in BERT's token table, as the page lists them
            assert answer["neighbours"]["token"] == shown["neighbours-token"]["data"]
            assert {"kings", "queen", "monarch"} <= {row[1] for row in answer["neighbours"]["token"]}


# 12. sessions are private


def test_one_pages_plane_and_flips_stay_in_its_session(app_url, live):
    other = Page(app_url)
    theirs_before = embed(other)
    warm = index_of(theirs_before["token-table"], "warm", 1)
    embed(live)
    live.send(basis="vocabulary")
    live.send(token=warm)
    mine = live.send(flip=True)
    assert "of the vocabulary" in axis_titles(mine["embed-plot"])[0]
    assert segments(mine["token-table"])[warm] == 0
    theirs = embed(other)
    assert all("vocabulary" not in title for title in axis_titles(theirs["embed-plot"]))
    assert segments(theirs["token-table"])[warm] == 1
    assert live.fingerprint() != other.fingerprint()
    assert "flip" not in query(other)[0] and "basis" not in query(other)[0]


def test_a_tour_step_shows_the_source_tables_untrained(live):
    embed(live)
    trained, _ = live.train(20, "builtin")
    assert "before training" in names(trained["embed-plot"])
    step = live.send(move=1)
    assert step.value("loss-plot") is None and step.value("train-summary") == ""
    assert "before training" not in names(step["embed-plot"])
