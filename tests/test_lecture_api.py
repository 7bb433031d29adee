"""The lecture features through the launched app's API, as gradio_client sees them.

Neighbours of a selected token, the segment shift, presenter mode, the three PCA planes
(this sentence, whole vocabulary, frozen) with the vocabulary drawn behind, Refit, segment
flips, the two documents' walk-throughs (/listing_run, /lookup), links (/share), exports and
the guided tour. Each `client` is its own browser tab: `gr.State` values (the session, the
flips, the tour step) live in it between calls, and another client never sees them.
"""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from core import tour
from core.embedding import COMPONENTS
from core.share import ViewState

ALL = list(COMPONENTS)
A = "The cat sat on the mat."
B = "It was warm there."
OTHER_B = "Completely different words arrived here tonight, quite late."
RANDOM_OUTPUT_NORM = 32**0.5  # |output| = sqrt(d_model) under a fresh LayerNorm, d_model 32 by default
# what /next_step and /previous_step return, in order (view_api leaves out the gr.State and gr.Tabs outputs)
TOUR_OUTPUTS = (
    "sentence_a", "sentence_b", "source", "positions", "groups", "labels", "arrows", "shift", "basis",
    "background", "freeze_token", "freeze_position", "freeze_segment", "freeze_norm", "token", "k", "presenter",
    "tour_text", "tables_info", "params", "link_notes", "loss_plot", "train_summary",
)


# helpers: calling the endpoints and reading what they return


def embed(client, a=A, b=B, groups=ALL, *, labels=True, arrows=False, shift=False, presenter=False, token="", k=10):
    """All seven outputs of /embed: plot, summary, token table, picker update, two neighbour tables, variance."""
    return client.predict(a, b, groups, labels, arrows, shift, presenter, token, k, api_name="/embed")


def figure(plot) -> dict:
    """The figure from what the API returns for a gr.Plot."""
    return json.loads(plot["plot"])


def names(plot) -> list[str]:
    return [trace.get("name") for trace in figure(plot)["data"]]


def trace(plot, name: str) -> dict:
    found = [t for t in figure(plot)["data"] if t.get("name") == name]
    assert len(found) == 1, f"expected one trace named {name!r}, got {names(plot)}"
    return found[0]


def decode(array) -> np.ndarray:
    """A plotly typed array ({"dtype": "f4", "bdata": base64, "shape": "L, 4"}) or a plain list, as numpy."""
    if isinstance(array, list):
        return np.asarray(array)
    values = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    if "shape" in array:
        values = values.reshape(tuple(int(n) for n in array["shape"].split(",")))
    return values


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


def fingerprint(client) -> str:
    return client.predict(api_name="/fingerprint")


def tour_view(outputs) -> dict:
    assert len(outputs) == len(TOUR_OUTPUTS)
    return dict(zip(TOUR_OUTPUTS, outputs, strict=True))


def index_of(table, token: str, segment: int) -> int:
    return next(row[2] for row in table["data"] if row[0] == token and row[3] == segment)


# 1. neighbours of the selected token


@pytest.mark.parametrize("k", [1, 7])
def test_neighbour_tables_list_k_entries_by_falling_cosine(client, k):
    out = embed(client, token=2, k=k)  # 2: "cat" in [CLS] the cat sat ...
    by_token, by_output = out[4], out[5]
    for listed in (by_token, by_output):
        assert listed["headers"] == ["#", "token", "cosine"]
        rows = listed["data"]
        assert [row[0] for row in rows] == list(range(1, k + 1))
        cosines = [row[2] for row in rows]
        assert all(-1 <= c <= 1 for c in cosines)
        assert cosines == sorted(cosines, reverse=True)
        # the token itself and the markers are left out: "cat" is trivially nearest to "cat"
        assert not {"cat", "[CLS]", "[SEP]"} & {row[1] for row in rows}
    shown = names(out[0])
    for name in ("nearest by token vector", "nearest by output vector", "selected token"):
        assert name in shown
    assert len(decode(trace(out[0], "nearest by token vector")["x"])) == k


def test_no_selected_token_gives_empty_neighbour_tables(client):
    out = embed(client, token="")
    assert out[4]["data"] == [] and out[5]["data"] == []
    assert not {"nearest by token vector", "nearest by output vector", "selected token"} & set(names(out[0]))


def test_a_token_that_is_not_a_number_is_refused(client):
    before = fingerprint(client)
    with pytest.raises(AppError, match="Pick a token") as refused:
        embed(client, token="abc")
    assert "'abc'" in str(refused.value)
    assert fingerprint(client) == before


def test_token_picker_offers_none_and_every_token(client):
    # opened (its focus event): the list for the sentences now in the boxes
    update, table = client.predict(A, B, api_name="/picker"), embed(client)[2]
    tokens = [row[0] for row in table["data"]]
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2
    expected = [["none", ""], *([f"{i}: {token}", i] for i, token in enumerate(tokens))]
    assert [list(choice) for choice in update["choices"]] == expected
    # a keystroke with a token selected keeps the list in step, since it shows that entry's
    # text; with none selected, it leaves the list to the next opening
    assert [list(choice) for choice in embed(client, token=2)[3]["choices"]] == expected
    assert "choices" not in (embed(client)[3] or {})


# 2. segment shift and presenter mode


def test_segment_shift_is_drawn_for_sentence_b_only(client):
    assert "segment shift" in names(embed(client, shift=True)[0])
    assert "segment shift" not in names(embed(client, shift=False)[0])
    assert "segment shift" not in names(embed(client, b="", shift=True)[0])  # no B token, nothing shifted


def test_presenter_mode_enlarges_markers_and_type(client):
    normal, large = (figure(embed(client, presenter=on)[0]) for on in (False, True))
    size = {}
    for name, fig in (("normal", normal), ("large", large)):
        token = next(t for t in fig["data"] if t["name"] == "token")
        size[name] = (token["marker"]["size"], fig["layout"]["font"]["size"])
    assert size["large"][0] > size["normal"][0]
    assert size["large"][1] > size["normal"][1]


# 3. the plane: this sentence, whole vocabulary, frozen


def test_sentence_plane_moves_sentence_a_when_b_changes(client):
    """The control for the fixed planes below: refitted on every change, A's points move with B."""
    first, second = embed(client, b=B), embed(client, b=OTHER_B)
    a_positions = positions_in_a(first[2])
    assert not np.allclose(points_of(first[0], a_positions), points_of(second[0], a_positions), atol=1e-3)
    assert "vocabulary" not in axis_titles(first[0])[0] and "frozen" not in axis_titles(first[0])[0]


def test_vocabulary_plane_keeps_sentence_a_fixed_while_b_changes(client):
    client.predict("bert", api_name="/source")
    assert client.predict("vocabulary", A, B, ALL, api_name="/basis") == ()
    first, second = embed(client, b=B), embed(client, b=OTHER_B)
    a_positions = positions_in_a(first[2])
    assert a_positions == positions_in_a(second[2]) == set(range(9))  # [CLS] the cat sat on the mat . [SEP]
    np.testing.assert_allclose(points_of(first[0], a_positions), points_of(second[0], a_positions), atol=1e-6)
    for title in (*axis_titles(first[0]), *axis_titles(second[0])):
        assert "of the vocabulary" in title
    assert "whole vocabulary" in first[6]  # the variance bar's title


def test_frozen_plane_is_the_plane_of_the_moment_and_stays(client):
    before = embed(client, b=B)
    client.predict("frozen", A, B, ALL, api_name="/basis")
    same, other = embed(client, b=B), embed(client, b=OTHER_B)
    a_positions = positions_in_a(before[2])
    # frozen now: what "this sentence" showed, and the same points whatever B says next
    np.testing.assert_allclose(points_of(same[0], a_positions), points_of(before[0], a_positions), atol=1e-5)
    np.testing.assert_allclose(points_of(other[0], a_positions), points_of(same[0], a_positions), atol=1e-6)
    assert all("of the frozen view" in title for title in axis_titles(other[0]))


def test_an_unknown_basis_is_refused_and_changes_nothing(client):
    client.predict("vocabulary", A, B, ALL, api_name="/basis")
    before = fingerprint(client)
    with pytest.raises(AppError) as refused:
        client.predict("nonsense", A, B, ALL, api_name="/basis")
    message = str(refused.value)
    assert "'nonsense'" in message
    assert all(name in message for name in ("sentence", "vocabulary", "frozen"))
    assert fingerprint(client) == before
    assert "of the vocabulary" in axis_titles(embed(client)[0])[0]


def test_freezing_with_no_group_ticked_is_refused(client):
    before = fingerprint(client)
    with pytest.raises(AppError, match="No group is ticked"):
        client.predict("frozen", A, B, [], api_name="/basis")
    assert fingerprint(client) == before
    assert "frozen" not in axis_titles(embed(client)[0])[0]


# 4. the vocabulary behind the tokens


def test_background_needs_a_fixed_plane(client):
    assert client.predict(5, api_name="/background") == ""


def test_background_draws_berts_most_frequent_words_in_the_vocabulary_plane(client):
    client.predict("bert", api_name="/source")
    client.predict("vocabulary", A, B, ALL, api_name="/basis")
    behind = json.loads(client.predict(50, api_name="/background"))
    assert behind["type"] == "scattergl" and behind["name"] == "vocabulary"
    x, y = decode(behind["x"]), decode(behind["y"])
    assert len(x) == len(y) == len(behind["hovertext"]) == 50
    assert behind["hovertext"][0] == "the"
    # the same plane as the tokens: the background's "the" sits under the typed "the"'s token point
    out = embed(client)
    typed = points_by_position(out[0], "token")[index_of(out[2], "the", 0)]
    np.testing.assert_allclose((x[0], y[0]), typed, atol=1e-5)
    assert client.predict(0, api_name="/background") == ""


@pytest.mark.parametrize(("n", "message"), [(-1, "minimum value 0"), (400_004, "maximum value 400,?003")])
def test_background_size_out_of_range_is_refused(client, n, message):
    client.predict("vocabulary", A, B, ALL, api_name="/basis")
    with pytest.raises(AppError, match=message):
        client.predict(n, api_name="/background")


# 5. Refit


def test_refit_of_the_vocabulary_plane_changes_nothing(client):
    client.predict("vocabulary", A, B, ALL, api_name="/basis")
    before, points = fingerprint(client), embed(client)[0]
    assert client.predict(A, B, ALL, api_name="/refit") == ()
    assert fingerprint(client) == before
    after = embed(client)[0]
    everyone = set(points_by_position(points, "token"))
    np.testing.assert_allclose(points_of(after, everyone), points_of(points, everyone), atol=1e-6)


def test_refit_of_the_frozen_plane_fits_the_current_sentences(client):
    new_a = "Lions watched the zebra graze."
    own_plane = embed(client, a=new_a, b=OTHER_B)  # what "this sentence" shows for the new pair
    client.predict("frozen", A, B, ALL, api_name="/basis")
    kept = embed(client, a=new_a, b=OTHER_B)  # the new pair in the old pair's plane
    everyone = set(points_by_position(kept[0], "token"))
    assert not np.allclose(points_of(kept[0], everyone), points_of(own_plane[0], everyone), atol=1e-3)
    before = fingerprint(client)
    client.predict(new_a, OTHER_B, ALL, api_name="/refit")
    assert fingerprint(client) != before
    refitted = embed(client, a=new_a, b=OTHER_B)
    np.testing.assert_allclose(points_of(refitted[0], everyone), points_of(own_plane[0], everyone), atol=1e-5)
    assert "of the frozen view" in axis_titles(refitted[0])[0]


# 6. flipping a token's segment


def test_flip_gives_a_token_the_other_segment_in_this_session(client):
    before = embed(client)[2]
    warm = index_of(before, "warm", 1)
    # the flips live in the session's gr.State, which is no API output: the call answers nothing
    assert client.predict(warm, A, B, api_name="/flip") == ()
    out = embed(client)
    expected = segments(before)
    expected[warm] = 0
    assert segments(out[2]) == expected
    assert "Segment flipped: 'warm'" in out[1]
    client.predict(warm, A, B, api_name="/flip")  # a second flip gives it back
    assert segments(embed(client)[2]) == segments(before)


def test_a_flip_is_ignored_once_the_text_moves_its_token(client):
    warm = index_of(embed(client)[2], "warm", 1)
    client.predict(warm, A, B, api_name="/flip")
    edited = embed(client, b="Nobody was there.")  # position `warm` now holds "there"
    assert edited[2]["data"][warm][0] == "there"
    assert segments(edited[2]) == [0] * 9 + [1] * 5
    assert "Segment flipped" not in edited[1]


@pytest.mark.parametrize(("token", "message"), [("", "Select a token"), (99, "Token 99 is not in this sentence pair")])
def test_flip_without_a_token_of_the_pair_is_refused(client, token, message):
    with pytest.raises(AppError, match=message):
        client.predict(token, A, B, api_name="/flip")
    assert "Segment flipped" not in embed(client)[1]


# 7. the first listing, run


def test_listing_run_prints_the_shape_and_explains_the_bug(client):
    printout, facts, plot = client.predict(0, True, api_name="/listing_run")
    assert "torch.Size([2, 3, 2])" in printout
    assert "pos_embed" in facts and "is None" in facts
    assert len(figure(plot)["data"]) > 0
    fixed_printout, fixed_facts, _ = client.predict(0, False, api_name="/listing_run")
    assert "pos_embed" in fixed_facts and "is None" not in fixed_facts
    assert client.predict(0, True, api_name="/listing_run")[0] == printout  # the seed decides everything
    assert client.predict(1, True, api_name="/listing_run")[0] != printout


@pytest.mark.parametrize(("seed", "message"), [(-1, "minimum value 0"), ("x", "Seed must be a number")])
def test_listing_run_refuses_a_bad_seed(client, seed, message):
    with pytest.raises(AppError, match=message):
        client.predict(seed, False, api_name="/listing_run")


# 8. the lookup table, step by step


def test_lookup_walks_the_documents_sentence(client):
    vocabulary, code, printout, summary = client.predict(
        "i am new to PyTorch i am having fun", 3, True, api_name="/lookup"
    )
    assert vocabulary["headers"] == ["word", "count", "id"]
    assert vocabulary["data"] == [
        ["i", 2, 0], ["am", 2, 1], ["new", 1, 2], ["to", 1, 3], ["PyTorch", 1, 4], ["having", 1, 5], ["fun", 1, 6],
    ]
    assert "[0, 1, 2, 3, 4, 0, 1, 5, 6]" in summary
    assert "tensor([[0.1000, 0.2000, 0.3000]" in printout
    assert "nn.Embedding(len(vocab), 3)" in code
    assert "rows: **0, 1, 2, 3, 4, 5, 6**" in summary


def test_lookup_with_a_frozen_weight_changes_no_row(client):
    summary = client.predict("i am new to PyTorch i am having fun", 3, False, api_name="/lookup")[3]
    assert "rows: **none**" in summary and "stayed `None`" in summary


@pytest.mark.parametrize(
    ("sentence", "dim", "message"),
    [("", 3, "The sentence is empty"), ("i am new", 17, "greater than maximum value 16")],
)
def test_lookup_refuses_what_it_cannot_walk(client, sentence, dim, message):
    with pytest.raises(AppError, match=message):
        client.predict(sentence, dim, True, api_name="/lookup")


# 9. links


def share(client, *, source="bert", **changes):
    values = {
        "sentence_a": "Hello there, world & co.", "sentence_b": "", "source": source, "positions": "sinusoidal",
        "groups": ["token", "sum"], "labels": False, "arrows": True, "shift": True, "basis": "vocabulary",
        "background_n": 100, "token_frozen": True, "position_frozen": False, "segment_frozen": False,
        "norm_frozen": True, "token": 3, "k": 7, "presenter": True, **changes,
    }
    return client.predict(*values.values(), api_name="/share")


def read_link(query: str) -> ViewState:
    state, notes = ViewState.from_query(parse_qs(query, keep_blank_values=True))
    assert notes == ()
    return state


def test_share_writes_a_link_that_reads_back_to_the_same_view(client):
    query = share(client)
    assert "b=&" in query  # an empty sentence B is a value of its own
    assert read_link(query) == ViewState(
        "Hello there, world & co.", "", "bert", "sinusoidal", ("token", "sum"), False, True, True, "vocabulary",
        100, frozenset({"token", "norm"}), 3, 7, None, True,
    )


def test_a_link_cannot_carry_an_upload(client):
    query = share(client, source="upload")
    assert "source=" not in parse_qs(query, keep_blank_values=True) and "upload" not in query
    assert read_link(query).source == "random"


def test_share_carries_this_sessions_tour_step(client):
    assert "step=" not in share(client)
    client.predict(api_name="/next_step")
    assert parse_qs(share(client))["step"] == ["1"]


# 10. exports


def test_export_writes_coordinates_vectors_and_the_figure(client):
    groups = ["token", "sum"]
    result = client.predict(A, B, groups, True, False, False, False, "", 10, api_name="/export")
    paths = result["value"] if isinstance(result, dict) else result  # gradio 6 answers a gr.File update
    files = {Path(path).suffix: Path(path) for path in paths}
    assert set(files) == {".csv", ".safetensors", ".html"} and all(p.is_file() for p in files.values())
    out = embed(client, groups=groups)
    table = out[2]["data"]

    with files[".csv"].open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == ["group", "token", "id", "position", "segment", "x", "y"]
        rows = list(reader)
    assert len(rows) == len(groups) * len(table)
    assert [row["group"] for row in rows] == [g for g in groups for _ in table]
    assert [[row["token"], int(row["id"]), int(row["position"]), int(row["segment"])] for row in rows[: len(table)]] \
        == [r[:4] for r in table]
    plotted = points_by_position(out[0], "sum")
    for row in rows[len(table):]:
        assert (np.float32(row["x"]), np.float32(row["y"])) == pytest.approx(plotted[int(row["position"])], abs=1e-5)

    from safetensors.numpy import load_file

    vectors = load_file(files[".safetensors"])
    # every group's full vectors, the unplotted ones too: only the CSV is limited to the plotted groups
    for group in ALL:
        assert vectors[group].shape == (len(table), 32) and vectors[group].dtype == np.float32
    assert vectors["ids"].tolist() == [r[1] for r in table]
    assert np.linalg.norm(vectors["sum"], axis=1) == pytest.approx([r[7] for r in table], abs=1e-3)

    assert files[".html"].stat().st_size > 1_000_000  # plotly.js inlined: opens without a network
    html = files[".html"].read_text(encoding="utf-8")
    assert "Plotly.newPlot" in html and '"name":"sum"' in html


# 11. the guided tour


def test_next_starts_the_tour_at_step_one(client):
    view = tour_view(client.predict(api_name="/next_step"))
    state = tour.STEPS[0].state
    assert (view["sentence_a"], view["sentence_b"]) == (state.sentence_a, state.sentence_b)
    assert view["groups"] == list(state.groups) and view["source"] == state.source
    assert "Step 1 of 7" in view["tour_text"] and tour.STEPS[0].title in view["tour_text"]


def test_previous_on_the_first_step_stays_there(client):
    client.predict(api_name="/next_step")
    view = tour_view(client.predict(api_name="/previous_step"))
    assert view["tour_text"].startswith("**Step 1 of 7")
    assert view["sentence_a"] == tour.STEPS[0].state.sentence_a


def test_walking_the_tour_sets_each_step(client):
    for number, step in enumerate(tour.STEPS, 1):
        view = tour_view(client.predict(api_name="/next_step"))
        state = step.state
        assert f"Step {number} of {len(tour.STEPS)}: {step.title}" in view["tour_text"]
        assert (view["sentence_a"], view["sentence_b"], view["source"], view["basis"]) == (
            state.sentence_a, state.sentence_b, state.source, state.basis,
        )
        assert [view[f"freeze_{part}"] for part in ("token", "position", "segment", "norm")] == [
            part in state.frozen for part in ("token", "position", "segment", "norm")
        ]
        if number == 6:  # BERT's tables, in the session: not the random ones
            token = view["token"]["value"]
            out = embed(client, state.sentence_a, state.sentence_b, view["groups"], token=token, k=10)
            assert out[2]["data"][token][0] == "king"
            assert all(row[-1] != pytest.approx(RANDOM_OUTPUT_NORM, rel=1e-2) for row in out[2]["data"])
            assert {"kings", "queen", "monarch"} <= {row[1] for row in out[4]["data"]}
            assert "of the vocabulary" in axis_titles(out[0])[0]
        elif number == 7:
            out = embed(client, state.sentence_a, state.sentence_b, view["groups"])
            assert out[2]["data"][1][-1] == pytest.approx(RANDOM_OUTPUT_NORM, rel=1e-2)
    last = tour_view(client.predict(api_name="/next_step"))  # past the end: stays on the last step
    assert last["tour_text"].startswith(f"**Step {len(tour.STEPS)} of {len(tour.STEPS)}")


def test_a_tour_step_clears_segment_flips(client):
    first = tour_view(client.predict(api_name="/next_step"))
    a, b, groups = first["sentence_a"], first["sentence_b"], first["groups"]
    plain = segments(embed(client, a, b, groups)[2])
    dog = index_of(embed(client, a, b, groups)[2], "dog", 1)
    client.predict(dog, a, b, api_name="/flip")
    assert segments(embed(client, a, b, groups)[2]) != plain  # the flip took
    second = tour_view(client.predict(api_name="/next_step"))
    assert (second["sentence_a"], second["sentence_b"]) == (a, b)
    assert segments(embed(client, a, b, second["groups"])[2]) == plain


# 12. sessions are private


def test_one_clients_plane_and_flips_stay_in_its_session(app_url, client):
    other = Client(app_url, verbose=False)
    theirs_before = embed(other)
    warm = index_of(theirs_before[2], "warm", 1)
    client.predict("vocabulary", A, B, ALL, api_name="/basis")
    client.predict(warm, A, B, api_name="/flip")
    mine = embed(client)
    assert "of the vocabulary" in axis_titles(mine[0])[0]
    assert segments(mine[2])[warm] == 0
    theirs = embed(other)
    assert all("vocabulary" not in title for title in axis_titles(theirs[0]))
    assert segments(theirs[2]) == segments(theirs_before[2]) and segments(theirs[2])[warm] == 1
    assert axis_titles(theirs[0]) == axis_titles(theirs_before[0])
    assert fingerprint(client) != fingerprint(other)


def test_a_tour_step_shows_the_source_tables_untrained(client):
    client.predict(20, "builtin", "", "", api_name="/train")
    assert "before training" in names(embed(client)[0])
    step = tour_view(client.predict(api_name="/next_step"))
    assert step["loss_plot"] is None and step["train_summary"] == ""
    assert "before training" not in names(embed(client, step["sentence_a"], step["sentence_b"])[0])
