"""core.drawing.charts, checked through each figure's data: real plotly, escaped tokens, the right numbers."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from core.drawing.charts import (
    HOVER_TEXT_MAX,
    SIMILARITY_SCALE,
    collapse_figure,
    layernorm_figure,
    positions_figure,
    similarity_figure,
    variance_bars,
)
from core.drawing.palette import LIGHT
from core.drawing.wire import figure_json
from core.model.measures import cosine_matrix, layernorm_stats

ROOT = Path(__file__).resolve().parents[1]
MARKUP = "<b>x</b>"
ESCAPED = "&lt;b&gt;x&lt;/b&gt;"
TOKENS = ["[CLS]", "the", MARKUP, "the", "tom & jerry", "[SEP]"]


def checked(spec: dict) -> dict:
    """The spec is real plotly (it validates) and serialises; returns the JSON plotly.js receives."""
    assert set(spec) <= {"data", "layout", "config"}
    assert spec["layout"]["template"] is LIGHT.template
    go.Figure({"data": spec["data"], "layout": spec["layout"]})  # validates every property name and value
    return json.loads(figure_json(spec))


def texts(spec: dict) -> list[str]:
    """Every string a figure shows as text, hover text or tick label."""
    found = []
    for trace in spec["data"]:
        for key in ("text", "hovertext"):
            value = trace.get(key)
            if isinstance(value, list):
                found += [item for row in value for item in (row if isinstance(row, list) else [row])]
    for key, axis in spec["layout"].items():
        if key.startswith(("xaxis", "yaxis")):
            found += axis.get("ticktext", [])
    return found


def assert_escaped(spec: dict) -> None:
    shown = texts(spec)
    assert not any(MARKUP in text or "tom & jerry" in text for text in shown)
    assert any(ESCAPED in text for text in shown) and any("tom &amp; jerry" in text for text in shown)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def stats(rng):
    summed = (rng.standard_normal((len(TOKENS), 12)) * 2).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, 12).astype(np.float32), rng.normal(0, 0.2, 12).astype(np.float32)
    output = torch.nn.functional.layer_norm(torch.from_numpy(summed), (12,), torch.from_numpy(gamma),
                                            torch.from_numpy(beta), 1e-12).numpy()
    return layernorm_stats(summed, output, gamma, beta)


@pytest.fixture
def collapse_points():
    """A d_model = 2 layer's sums and outputs, as in the first listing."""
    torch.manual_seed(0)
    sums = torch.randn(len(TOKENS), 2) * 1.5
    return sums.numpy(), torch.nn.LayerNorm(2)(sums).detach().numpy()


# variance_bars


def bars(page: str) -> list[tuple[str, str, str]]:
    """(kind, value label, name) of each bar in variance_bars' HTML."""
    return re.findall(r'variance-column (\w[\w-]*)".*?variance-value">([^<]*)<.*?variance-name">([^<]*)<', page)


def test_variance_bars_highlight_the_shown_bars_and_write_percent():
    ratios = [0.41, 0.22, 0.1, 0.08, 0.05, 0.04, 0.03, 0.02, 0.02, 0.01, 0.01, 0.01]
    page = variance_bars(ratios)
    found = bars(page)
    assert [name for _, _, name in found] == [f"PC{i}" for i in range(1, 11)]  # twelve ratios, ten bars
    assert [kind for kind, _, _ in found] == ["drawn", "drawn"] + ["left-out"] * 8
    assert [value for _, value, _ in found][:4] == ["41%", "22%", "10%", "8.0%"]
    heights = [float(h) for h in re.findall(r"height: ([\d.]+)%", page)]
    assert heights[0] == 100 and heights == sorted(heights, reverse=True)  # the largest fills the chart
    assert heights[1] == pytest.approx(100 * 0.22 / 0.41, abs=0.1)
    assert '<p class="variance-title">Explained variance</p>' in page
    assert "PC1 41.0%" in page  # the aria-label reads every bar out
    assert [kind for kind, _, _ in bars(variance_bars(ratios[:3], shown=1))] == ["drawn", "left-out", "left-out"]
    assert [kind for kind, _, _ in bars(variance_bars(ratios[:2], shown=5))] == ["drawn", "drawn"]


def test_variance_bars_escape_the_title_and_say_when_there_is_no_basis():
    page = variance_bars([], title="<b>mine</b>")
    assert bars(page) == [] and "no basis yet" in page
    assert "&lt;b&gt;mine&lt;/b&gt;" in page and "<b>" not in page


@pytest.mark.parametrize(("ratios", "shown", "match"), [
    ([[0.5, 0.2]], 2, "flat list"),
    ([0.5, float("nan")], 2, "finite numbers from 0 to 1"),
    ([1.5], 2, "from 0 to 1"),
    ([-0.2], 2, "from 0 to 1"),
    ([0.5], -1, "shown is -1"),
    ([0.5], 1.5, "whole number"),
])
def test_variance_bars_refuse_bad_input(ratios, shown, match):
    with pytest.raises(ValueError, match=match):
        variance_bars(ratios, shown=shown)


# similarity_figure


def test_similarity_figure_is_a_square_heatmap_with_escaped_repeated_tokens(rng):
    matrix = cosine_matrix(rng.standard_normal((len(TOKENS), 5)))
    spec = similarity_figure(TOKENS, matrix)
    sent = checked(spec)
    (heatmap,) = spec["data"]
    assert heatmap["type"] == "heatmap" and sent["data"][0]["z"]["shape"] == "6, 6"
    assert heatmap["z"].shape == (6, 6) and heatmap["z"].dtype == np.float32
    assert (heatmap["zmin"], heatmap["zmax"]) == (-1.0, 1.0)
    np.testing.assert_array_equal(heatmap["x"], np.arange(6))
    np.testing.assert_array_equal(heatmap["y"], np.arange(6))
    xaxis, yaxis = spec["layout"]["xaxis"], spec["layout"]["yaxis"]
    # "the" twice stays two rows: integer positions, tokens only as labels
    assert xaxis["tickvals"] == list(range(6)) and xaxis["ticktext"] == yaxis["ticktext"]
    assert xaxis["ticktext"][2] == ESCAPED and xaxis["ticktext"].count("the") == 2
    assert yaxis["autorange"] == "reversed" and yaxis["scaleanchor"] == "x"
    assert heatmap["text"][2][4] == f"{ESCAPED} · tom &amp; jerry"
    assert "%{text}: cos %{z:.2f}" in heatmap["hovertemplate"]
    assert_escaped(spec)


def test_similarity_colours_run_blue_to_white_to_red():
    scale = SIMILARITY_SCALE
    assert scale[0][0] == 0 and scale[-1][0] == 1 and scale[5] == [0.5, "rgb(247,247,247)"]
    red = [int(c) for c in scale[-1][1][4:-1].split(",")]
    blue = [int(c) for c in scale[0][1][4:-1].split(",")]
    assert red[0] > red[2] and blue[2] > blue[0]  # +1 is red, −1 is blue


def test_similarity_figure_thins_labels_and_hover_text_for_long_inputs(rng):
    length = 200
    tokens = [f"t{i}" for i in range(length)]
    spec = similarity_figure(tokens, cosine_matrix(rng.standard_normal((length, 4))))
    checked(spec)
    ticks = spec["layout"]["xaxis"]
    assert 16 <= len(ticks["tickvals"]) <= 64
    step = ticks["tickvals"][1]
    assert ticks["tickvals"] == list(range(0, length, step))
    assert ticks["ticktext"] == [tokens[i] for i in ticks["tickvals"]]
    assert length > HOVER_TEXT_MAX and "text" not in spec["data"][0]
    # 64 tokens: every label
    assert len(similarity_figure(tokens[:64], np.eye(64))["layout"]["xaxis"]["ticktext"]) == 64


def test_similarity_figure_without_tokens():
    spec = similarity_figure([], np.zeros((0, 0)))
    checked(spec)
    assert spec["data"] == [] and spec["layout"]["annotations"][0]["text"] == "no tokens yet"


@pytest.mark.parametrize("matrix", [np.zeros((3, 4)), np.zeros((4, 4)), np.zeros(9), np.zeros((3, 3, 1))])
def test_similarity_figure_refuses_a_matrix_that_does_not_fit_the_tokens(matrix):
    with pytest.raises(ValueError, match=r"must be \(3, 3\)"):
        similarity_figure(["a", "b", "c"], matrix)


def test_similarity_figure_refuses_nan():
    with pytest.raises(ValueError, match="finite"):
        similarity_figure(["a"], np.array([[np.nan]]))


# positions_figure


def test_positions_figure_draws_one_equal_scaled_subplot_per_table(rng):
    paths = {"learned": rng.standard_normal((20, 2)), "sinusoidal": rng.standard_normal((30, 2))}
    spec = positions_figure(paths, {"learned": [0.3, 0.11, 0.05], "sinusoidal": [0.5]})
    checked(spec)
    layout = spec["layout"]
    lines = [t for t in spec["data"] if t["mode"] == "lines+markers"]
    labels = [t for t in spec["data"] if t["mode"] == "text"]
    assert [(t["xaxis"], t["yaxis"]) for t in lines] == [("x", "y"), ("x2", "y2")]
    assert [len(t["x"]) for t in lines] == [20, 30] and lines[0]["x"].dtype == np.float32
    np.testing.assert_array_equal(lines[1]["marker"]["color"], np.arange(30))  # light to dark with position
    assert "position %{customdata}" in lines[0]["hovertemplate"]
    assert [t["text"] for t in labels] == [["0", "19"], ["0", "29"]]
    np.testing.assert_allclose(labels[0]["x"], np.float32(paths["learned"][[0, -1], 0]))
    (left, right) = layout["xaxis"]["domain"], layout["xaxis2"]["domain"]
    assert 0 <= left[0] < left[1] < right[0] < right[1] <= 1
    assert layout["yaxis"]["scaleanchor"] == "x" and layout["yaxis2"]["scaleanchor"] == "x2"
    assert layout["yaxis2"]["anchor"] == "x2" and layout["xaxis2"]["anchor"] == "y2"
    assert [note["text"] for note in layout["annotations"]] == ["learned · PC1+PC2 41%", "sinusoidal · PC1 50%"]


def test_positions_figure_edge_cases(rng):
    one = positions_figure({"<i>mine</i>": np.zeros((1, 2))})
    checked(one)
    assert one["data"][1]["text"] == ["0"]
    assert one["layout"]["annotations"][0]["text"] == "&lt;i&gt;mine&lt;/i&gt;"
    none = positions_figure({})
    checked(none)
    assert none["data"] == [] and none["layout"]["annotations"][0]["text"] == "no positions yet"
    checked(positions_figure({"empty": np.zeros((0, 2))}))


@pytest.mark.parametrize("points", [np.zeros((5, 3)), np.zeros(5), np.full((2, 2), np.nan)])
def test_positions_figure_refuses_points_that_are_not_finite_pairs(points):
    with pytest.raises(ValueError, match=r"paths\['learned'\]"):
        positions_figure({"learned": points})


# layernorm_figure


def test_layernorm_figure_shows_std_per_token_and_gamma_beta_per_dimension(stats):
    spec = layernorm_figure(stats, TOKENS)
    checked(spec)
    before, after, gamma, beta = spec["data"]
    assert [t["type"] for t in spec["data"]] == ["bar", "bar", "scatter", "scatter"]
    np.testing.assert_array_equal(before["x"], np.arange(len(TOKENS)))
    np.testing.assert_array_equal(before["y"], stats.std_before)
    np.testing.assert_allclose(after["y"], stats.std_after)
    assert (before["marker"]["color"], after["marker"]["color"]) == (LIGHT.colours["sum"], LIGHT.colours["output"])
    assert (gamma["xaxis"], gamma["yaxis"], beta["xaxis"]) == ("x2", "y2", "x2")
    assert len(gamma["x"]) == len(beta["y"]) == 12
    np.testing.assert_array_equal(gamma["y"], stats.gamma)
    assert spec["layout"]["xaxis"]["ticktext"][2] == ESCAPED
    assert spec["layout"]["barmode"] == "group"
    assert_escaped(spec)


def test_layernorm_figure_refuses_mismatched_tokens(stats):
    with pytest.raises(ValueError, match="5 tokens but the statistics cover 6"):
        layernorm_figure(stats, TOKENS[:5])
    with pytest.raises(ValueError, match="LayerNormStats"):
        layernorm_figure({"std_before": []}, [])


# collapse_figure


def test_collapse_figure_draws_the_exact_two_dimensional_picture(collapse_points):
    before, after = collapse_points
    spec = collapse_figure(before, after, TOKENS)
    checked(spec)
    traces = {t["name"]: t for t in spec["data"]}
    np.testing.assert_allclose(traces["before (sum)"]["x"], before[:, 0])
    np.testing.assert_allclose(traces["after (output)"]["y"], after[:, 1])
    assert traces["before (sum)"]["marker"]["color"] == LIGHT.colours["sum"]
    assert traces["after (output)"]["marker"]["color"] == LIGHT.colours["output"]
    # the outputs really are (1, −1) or (−1, 1): the figure shows the listing's ±1
    np.testing.assert_allclose(np.abs(after), 1, atol=1e-3)
    marks = traces["(1, −1) and (−1, 1)"]
    assert list(zip(marks["x"], marks["y"], strict=True)) == [(1, -1), (-1, 1)]
    line = traces["x + y = 0"]
    assert line["line"]["dash"] == "dash"
    np.testing.assert_allclose(line["x"] + line["y"], 0)
    reach = spec["layout"]["xaxis"]["range"][1]
    assert reach >= np.abs(np.concatenate([before, after])).max() and line["x"][1] == pytest.approx(reach)
    assert spec["layout"]["yaxis"]["range"] == spec["layout"]["xaxis"]["range"]
    assert spec["layout"]["yaxis"]["scaleanchor"] == "x"
    moves = traces["LayerNorm"]
    assert len(moves["x"]) == 3 * len(TOKENS) and np.isnan(moves["x"][2::3]).all()  # one segment per token
    assert traces["before (sum)"]["text"][2] == ESCAPED
    assert_escaped(spec)


@pytest.mark.parametrize(("before", "after", "tokens", "match"), [
    (np.zeros((6, 3)), np.zeros((6, 3)), TOKENS, r"\(N, 2\)"),
    (np.zeros((6, 2)), np.zeros((5, 2)), TOKENS, "one output"),
    (np.zeros((6, 2)), np.zeros((6, 2)), TOKENS[:2], "2 tokens but 6 vectors"),
    (np.zeros(2), np.zeros(2), ["a"], r"\(N, 2\)"),
])
def test_collapse_figure_refuses_shapes_that_are_not_two_dimensional_pairs(before, after, tokens, match):
    with pytest.raises(ValueError, match=match):
        collapse_figure(before, after, tokens)


# every figure


def every_figure(presenter: bool, stats, collapse_points, rng) -> dict[str, dict]:
    matrix = cosine_matrix(rng.standard_normal((len(TOKENS), 3)))
    return {
        "similarity": similarity_figure(TOKENS, matrix, presenter=presenter),
        "positions": positions_figure({"learned": rng.standard_normal((8, 2))}, presenter=presenter),
        "layernorm": layernorm_figure(stats, TOKENS, presenter=presenter),
        "collapse": collapse_figure(*collapse_points, TOKENS, presenter=presenter),
    }


def sizes(spec: dict) -> tuple[list[float], list[float]]:
    """Marker sizes and line widths of every trace that has them."""
    markers = [t["marker"]["size"] for t in spec["data"] if "size" in t.get("marker", {})]
    lines = [t["line"]["width"] for t in spec["data"] if "width" in t.get("line", {})]
    return markers, lines


def test_presenter_makes_fonts_markers_lines_and_figures_bigger(stats, collapse_points, rng):
    normal = every_figure(False, stats, collapse_points, rng)
    large = every_figure(True, stats, collapse_points, rng)
    for name in normal:
        small, big = normal[name]["layout"], large[name]["layout"]
        assert (small["font"]["size"], big["font"]["size"]) == (12, 20), name
        assert big["height"] > small["height"], name
        (small_markers, small_lines), (big_markers, big_lines) = sizes(normal[name]), sizes(large[name])
        assert all(b > s for s, b in zip(small_markers + small_lines, big_markers + big_lines, strict=True)), name
        checked(large[name])
    assert sizes(large["collapse"])[0] and sizes(large["positions"])[1]  # the comparison was not empty


def test_figures_send_numbers_as_typed_arrays(stats, collapse_points, rng):
    for name, spec in every_figure(False, stats, collapse_points, rng).items():
        sent = checked(spec)
        numbers = [trace[key] for trace in sent["data"] for key in ("x", "y", "z") if key in trace]
        assert any(isinstance(value, dict) and value.get("dtype") in ("f4", "i4") for value in numbers), name


def test_charts_need_neither_torch_nor_gradio():
    check = "import core.drawing.charts, sys; assert 'torch' not in sys.modules and 'gradio' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], cwd=ROOT, check=True)


def test_positions_figure_draws_the_given_indices_and_a_note():
    from core.drawing.charts import positions_figure

    points = np.arange(8, dtype=np.float32).reshape(4, 2)
    figure = positions_figure({"learned": points}, indices={"learned": [1, 2, 3, 4]},
                              notes={"learned": "Left out: position <0>"})
    path, ends = figure["data"]
    np.testing.assert_array_equal(path["customdata"], [1, 2, 3, 4])
    assert ends["text"] == ["1", "4"] and path["marker"]["cmax"] == 4
    assert "Left out: position &lt;0&gt;" in [a["text"] for a in figure["layout"]["annotations"]]
    with pytest.raises(ValueError, match="indices"):
        positions_figure({"learned": points}, indices={"learned": [1, 2]})


@pytest.mark.parametrize("presenter", [False, True])
def test_a_positions_note_is_under_its_panel_in_room_made_for_it(presenter):
    """Over the plot, the note covered the path's first points: it hangs from the panel's bottom,
    under its tick labels, and the figure grows by what it takes, so the plot keeps its height."""
    from core.drawing.charts import NOTE_LINE, positions_figure

    points = np.arange(8, dtype=np.float32).reshape(4, 2)
    plain = positions_figure({"learned": points, "sinusoidal": points}, presenter=presenter)["layout"]
    long = "Left out: position 0 (length 2.36), over 3× the typical length 0.43; the others would flatten."
    layout = positions_figure({"learned": points, "sinusoidal": points}, presenter=presenter,
                              notes={"learned": long})["layout"]
    note = next(a for a in layout["annotations"] if a["text"].startswith("Left out"))
    font = layout["font"]["size"]
    assert (note["yref"], note["y"], note["yanchor"]) == ("paper", 0.0, "top")  # hung from the plot's bottom
    assert -note["yshift"] >= NOTE_LINE * font + 4  # below the tick labels
    lines = note["text"].count("<br>") + 1
    assert lines >= 2 and layout["margin"]["b"] >= -note["yshift"] + lines * NOTE_LINE * note["font"]["size"]
    plot_height = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert plot_height == plain["height"] - plain["margin"]["t"] - plain["margin"]["b"]


def test_on_a_phone_the_positions_titles_take_two_lines_and_the_plot_keeps_its_height():
    from core.drawing.charts import positions_figure

    points = np.arange(8, dtype=np.float32).reshape(4, 2)
    paths, explained = {"this table (learned)": points, "sinusoidal": points}, {"sinusoidal": [0.3, 0.08]}
    wide = positions_figure(paths, explained)["layout"]
    narrow = positions_figure(paths, explained, narrow=True)["layout"]
    assert [note["text"] for note in narrow["annotations"]] == ["this table (learned)", "sinusoidal<br>PC1+PC2 38%"]
    assert narrow["margin"]["t"] > wide["margin"]["t"]
    assert narrow["height"] - narrow["margin"]["t"] == wide["height"] - wide["margin"]["t"]


def test_the_similarity_heatmap_grows_with_the_sentence_to_be_read_from_a_room():
    from core.drawing.charts import SIMILARITY_MAX_PX, SIMILARITY_MIN_PX, similarity_figure

    short = similarity_figure(["a", "b"], np.eye(2))["layout"]["height"]
    long = similarity_figure([f"t{i}" for i in range(25)], np.eye(25))["layout"]["height"]
    huge = similarity_figure([f"t{i}" for i in range(300)], np.eye(300))["layout"]["height"]
    assert short == SIMILARITY_MIN_PX and short < long < huge == SIMILARITY_MAX_PX
