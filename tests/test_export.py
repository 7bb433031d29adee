"""Exports: each file read back with an ordinary reader holds exactly what the page showed."""

import csv
import io
import json
import re
from html.parser import HTMLParser

import numpy as np
import plotly
import pytest
import torch
from safetensors.numpy import load

from core.drawing.export import (
    CSV_HEADER,
    coordinates_csv,
    export_files,
    figure_html,
    vectors_safetensors,
)
from core.drawing.figures import ADDITION_PATH, embedding_spec
from core.drawing.plottable import rows
from core.model.embedding import COMPONENTS
from core.plane.pipeline import _vectors, explore
from core.plane.scene import Scene
from core.tables.session import Session


@pytest.fixture(scope="module")
def view():
    """A real update's scene and full vectors, computed as explore computes them."""
    session = Session.create()
    result = explore(session, "the cat sat", "on the mat")
    ids = torch.tensor([result.scene.ids])
    segments = torch.tensor([result.scene.segment_ids])
    return result.scene, _vectors(session.model, ids, segments)


def _scene_with_tokens(tokens: tuple[str, ...]) -> Scene:
    n = len(tokens)
    rng = np.random.default_rng(0)
    return Scene(
        tokens=tokens,
        ids=tuple(range(n)),
        positions=tuple(range(n)),
        segment_ids=(0,) * n,
        special_mask=(False,) * n,
        continuation_mask=(False,) * n,
        points={"token": rng.normal(size=(n, 2)).astype(np.float32)},
        norms={"token": np.ones(n, dtype=np.float32)},
        explained=(0.5, 0.25),
        origin=np.zeros(2),
    )


def test_csv_has_one_row_per_plotted_point(view):
    scene, _ = view
    rows = list(csv.DictReader(io.StringIO(coordinates_csv(scene))))
    assert tuple(rows[0]) == CSV_HEADER
    assert len(rows) == len(scene.points) * len(scene.tokens) == 5 * len(scene.tokens)
    for group in COMPONENTS:
        mine = [row for row in rows if row["group"] == group]
        assert [row["token"] for row in mine] == list(scene.tokens)
        assert [int(row["id"]) for row in mine] == list(scene.ids)
        assert [int(row["position"]) for row in mine] == list(scene.positions)
        assert [int(row["segment"]) for row in mine] == list(scene.segment_ids)
        xy = np.array([[float(row["x"]), float(row["y"])] for row in mine], dtype=np.float32)
        # the shortest float32 text reads back as exactly the same float32
        assert np.array_equal(xy, np.asarray(scene.points[group], dtype=np.float32))


def test_csv_keeps_tokens_with_commas_quotes_and_line_breaks():
    tokens = ("a,b", 'say "hi"', "two\nlines", "=1+1", "中文")
    text = coordinates_csv(_scene_with_tokens(tokens))
    assert [row["token"] for row in csv.DictReader(io.StringIO(text))] == list(tokens)


def test_csv_of_a_scene_with_no_groups_is_just_the_header():
    scene = _scene_with_tokens(("x",))
    empty = Scene(**{**scene.__dict__, "points": {}, "norms": {}})
    assert coordinates_csv(empty).strip() == ",".join(CSV_HEADER)


def test_safetensors_reads_back_the_full_vectors(view):
    scene, vectors = view
    loaded = load(vectors_safetensors(vectors, scene))
    assert set(loaded) == set(COMPONENTS) | {"ids", "positions", "segment_ids"}
    for group in COMPONENTS:
        assert loaded[group].dtype == np.float32 and loaded[group].shape == vectors[group].shape
        assert np.array_equal(loaded[group], vectors[group])
    for name in ("ids", "positions", "segment_ids"):
        assert loaded[name].dtype == np.int64
        assert loaded[name].tolist() == list(getattr(scene, name))


def test_safetensors_metadata_holds_the_tokens(view, tmp_path):
    safetensors = pytest.importorskip("safetensors")
    scene, vectors = view
    path = tmp_path / "v.safetensors"
    path.write_bytes(vectors_safetensors(vectors, scene))
    with safetensors.safe_open(str(path), framework="numpy") as f:
        metadata = f.metadata()
    assert tuple(json.loads(metadata["tokens"])) == scene.tokens
    assert json.loads(metadata["groups"]) == list(COMPONENTS)


def test_safetensors_refuses_vectors_that_do_not_fit_the_scene(view):
    scene, vectors = view
    with pytest.raises(ValueError, match=r"vectors\['sum'\] has shape \(3, 32\); expected \(9, d\)"):
        vectors_safetensors({**vectors, "sum": vectors["sum"][:3]}, scene)
    with pytest.raises(ValueError, match="unknown group 'ids'"):
        vectors_safetensors({"ids": vectors["sum"]}, scene)


def test_html_opens_offline_with_the_figure(view):
    scene, _ = view
    page = figure_html(embedding_spec(scene, arrows=True))
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert f"plotly.js v{plotly.offline.get_plotlyjs_version()}" in page  # the bundle is inlined
    # nothing is fetched: no script is loaded from a network address (the bundle itself only
    # names plotly's map-data server, which this figure never uses)
    assert '<script src="http' not in page
    assert not re.search(r"<script[^>]*\ssrc=", page)
    for name in (*COMPONENTS, ADDITION_PATH):
        assert f'"name":"{name}"' in page
    assert re.search(r'"toImageButtonOptions": ?\{"scale": ?3\}', page)


class _Tables(HTMLParser):
    """Each table of a page: its id, caption and rows, every row's cells' text (header cells too)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"id": dict(attrs).get("id"), "caption": "", "rows": [], "in": None})
        elif self.tables and tag in ("caption", "thead", "tbody"):
            self.tables[-1]["in"] = tag
        elif self.tables and tag == "tr":
            self.tables[-1]["rows"].append((self.tables[-1]["in"], []))
        elif self.tables and tag in ("th", "td"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self.cell is not None:
            self.tables[-1]["rows"][-1][1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)
        elif self.tables and self.tables[-1]["in"] == "caption":
            self.tables[-1]["caption"] += data


@pytest.mark.parametrize("split", [False, True], ids=["one-panel", "output-apart"])
def test_html_lists_every_drawn_point_in_a_table(view, split):
    """Under the plot, `table#plot-table`: a row per point of the five groups as drawn (a segment's
    one point for its tokens), each token's word, its coordinates within a thousandth of its group's
    spread, and the two points drawn nearest it on its own panel, named "word (group)"."""
    scene, _ = view
    spec = embedding_spec(scene, panels="split" if split else "one")
    parser = _Tables()
    parser.feed(figure_html(spec, scene.tokens))
    (table,) = [found for found in parser.tables if found["id"] == "plot-table"]
    header, *body = [cells for part, cells in table["rows"]]
    assert header == ["token", "position", "segment", "group", "x", "y", "nearest in the plot"]
    assert [part for part, _ in table["rows"]] == ["thead"] + ["tbody"] * len(body)
    drawn = [trace for trace in spec["data"] if trace["name"] in COMPONENTS]
    assert len(body) == sum(len(trace["x"]) for trace in drawn) == 4 * len(scene.tokens) + len(set(scene.segment_ids))
    kept = sum(float(t.split("·")[1].split("%")[0]) for t in (spec["layout"]["xaxis"]["title"]["text"],
                                                             spec["layout"]["yaxis"]["title"]["text"]))
    assert table["caption"] == (f"The plane's points: {len(scene.tokens)} tokens in 5 groups, "
                                f"a PCA plane keeping {kept:.1f}% of the variance")
    panel_of = {}
    for trace in drawn:
        rows = [row for row in body if row[3] == trace["name"]]
        xy = np.column_stack([trace["x"], trace["y"]]).astype(np.float64)
        spread = np.ptp(xy, axis=0).max()
        if trace["name"] == "segment":
            assert [row[0] for row in rows] == [f"segment {'AB'[s]}" for s in sorted(set(scene.segment_ids))]
        else:
            order = np.argsort(np.asarray(trace["customdata"])[:, 1])  # the rows go in the sentence's order
            xy = xy[order]
            assert [row[0] for row in rows] == list(scene.tokens)
            assert [int(row[1]) for row in rows] == list(scene.positions)
        table_xy = np.array([[float(row[4]), float(row[5])] for row in rows])
        assert np.abs(table_xy - xy).max() <= 0.001 * spread
        panel_of[trace["name"]] = trace.get("xaxis", "x")
    assert (panel_of["output"] == "x2") is split
    for row in body:  # two neighbours, each on the row's own panel
        near = row[6].split("), ")
        assert len(near) == 2
        groups = [name.rsplit("(", 1)[1].rstrip(")") for name in near]
        assert all(panel_of[group] == panel_of[row[3]] for group in groups), row


def test_the_table_lists_an_encoder_layer_s_group_but_no_other_trace(view):
    """A "layer K" group is listed as the five are; the vocabulary, the rings, the stars and the paths are
    not, nor a group hidden from the legend."""
    scene, _ = view
    spec = embedding_spec(scene, arrows=True)
    output = next(trace for trace in spec["data"] if trace["name"] == "output")
    others = [{**output, "name": name} for name in ("layer 3", "vocabulary", "selected token", "path: output → layer 3",
                                                    "nearest by token vector")]
    hidden = {**next(trace for trace in spec["data"] if trace["name"] == "sum"), "visible": "legendonly"}
    data = [trace for trace in spec["data"] if trace["name"] != "sum"] + [hidden, *others]
    listed = rows({**spec, "data": data}, scene.tokens)
    length = len(scene.tokens)
    assert [row["group"] for row in listed] == ["token"] * length + ["position"] * length + ["segment"] * 2 + \
        ["output"] * length + ["layer 3"] * length
    outputs = {row["position"]: row["name"] for row in listed if row["group"] == "output"}
    layer = [row for row in listed if row["group"] == "layer 3"]
    assert [row["token"] for row in layer] == list(scene.tokens)
    # drawn on its output's spot (a copy here): that point is the nearest, the output row listed first
    assert [row["nearest"][0] for row in layer] == [outputs[row["position"]] for row in layer]


def test_html_cannot_be_broken_out_of_by_a_token():
    scene = _scene_with_tokens(("</script><script>alert(1)</script>",))
    page = figure_html(embedding_spec(scene))
    assert "<script>alert(1)" not in page
    assert "<th scope=\"row\">&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;</th>" in page


def test_export_files_writes_three_files(view, tmp_path):
    scene, vectors = view
    spec = embedding_spec(scene)
    paths = export_files(tmp_path / "out", scene, vectors, spec, stem="cat-sat")
    assert [p.name for p in paths] == ["cat-sat.csv", "cat-sat.safetensors", "cat-sat.html"]
    assert paths[0].read_bytes() == coordinates_csv(scene).encode("utf-8")
    assert np.array_equal(load(paths[1].read_bytes())["output"], vectors["output"])
    assert paths[2].read_bytes() == figure_html(spec, scene.tokens).encode("utf-8")


@pytest.mark.parametrize("stem", ["", "../x", "a/b", ".hidden", "x" * 101, None])
def test_export_files_refuses_names_that_leave_the_directory(view, tmp_path, stem):
    scene, vectors = view
    with pytest.raises(ValueError, match="is not allowed; use 1 to 100 letters"):
        export_files(tmp_path, scene, vectors, embedding_spec(scene), stem=stem)
    assert list(tmp_path.iterdir()) == []


def test_a_refused_export_writes_nothing(view, tmp_path):
    scene, vectors = view
    with pytest.raises(ValueError):
        export_files(tmp_path, scene, {"sum": vectors["sum"][:2]}, embedding_spec(scene))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.browser
def test_the_html_writes_its_labels_as_the_page_does(view, browser, tmp_path):
    """Opened offline in Chromium, the exported figure places its labels with the page's own
    script: every point that wants one, beside it, none over a marker or another label."""
    from tests.browser import label_faults, labels_of

    scene, _ = view
    path = tmp_path / "figure.html"
    path.write_text(figure_html(embedding_spec(scene)))
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    try:
        page.goto(path.as_uri())
        page.wait_for_function("() => document.querySelectorAll('svg.label-layer .labels text').length > 0",
                               timeout=60_000)
        plot = "document.getElementById('embedding-figure')"
        written = page.evaluate(labels_of(plot))
        assert {"the ×2", "cat", "[CLS]"} <= {label["text"] for label in written}
        assert label_faults(page, plot) == []
    finally:
        page.close()


@pytest.mark.browser
def test_the_page_s_script_writes_the_same_table_from_the_drawn_figure(view, browser, tmp_path):
    """The page's table (assets/plottable.js), run on the exported figure as Chromium draws it, is the
    file's own (core/drawing/plottable.py) cell for cell: the two writers of one table agree."""
    from core.drawing.export import LABELS_JS

    scene, _ = view
    path = tmp_path / "figure.html"
    path.write_text(figure_html(embedding_spec(scene, panels="split"), scene.tokens))
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    cells = """(selector) => ({caption: document.querySelector(`${selector} caption`).textContent,
        rows: [...document.querySelectorAll(`${selector} tr`)].map(r => [...r.cells].map(c => c.textContent))})"""
    try:
        page.goto(path.as_uri())
        page.wait_for_function("() => document.getElementById('embedding-figure')?._fullData", timeout=60_000)
        written = page.evaluate(cells, "#plot-table")
        page.evaluate("() => document.querySelector('.plot-table-region').remove()")
        page.add_script_tag(content=(LABELS_JS.parent / "plottable.js").read_text())
        page.evaluate("""() => { const plot = document.getElementById('embedding-figure');
            window.embeddingPlotTable.attach(plot); window.embeddingPlotTable.drawn(null);
            window.embeddingPlotTable.show(false); }""")
        assert page.evaluate(cells, "#plot-table") == written
        assert len(written["rows"]) == 1 + 4 * len(scene.tokens) + 2
    finally:
        page.close()
