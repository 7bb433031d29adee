"""The main plot's wire format against its one fixture, tests/fixtures/wire.json.

The server must still send the fixture's compact figure for the fixture's scene; both readers
of it, core/drawing/wire.py (``expand``, ``table_rows``) and the page's script (assets/explorer.js,
``expand``, ``drawTable``), must turn it into the fixture's traces and token table. The
fixture's expected traces come from the whole figure, not from either reader. The columns are
described in core/drawing/wire.py's docstring. A change to the format on purpose: rewrite the fixture
with ``python -m tests.wire_fixture`` and read its diff.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from core.drawing.wire import MAX_NAMED, expand, table_rows
from tests.wire_fixture import compact_of, expanded_of, labels_of, load, scene_of, table_of

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SCRIPTS = (ASSETS / "labels.js", ASSETS / "move.js", ASSETS / "explorer.js")  # as the page loads them
STALE = "the code no longer sends tests/fixtures/wire.json's figure: if that is meant, run python -m tests.wire_fixture"


@pytest.fixture(scope="module")
def fixture() -> dict:
    return load()


def test_the_fixture_is_what_the_code_sends(fixture):
    scene = scene_of(fixture["scene"])
    assert compact_of(scene) == fixture["compact"], STALE
    assert expanded_of(scene) == fixture["expanded"], STALE
    assert table_of(scene) == fixture["table"], STALE
    assert labels_of(scene) == fixture["labels"], STALE


def test_the_fixture_exercises_every_column(fixture):
    """Piles, one longer than a hover names, a ## piece, markers, escaped text, a trace sent whole."""
    columns = fixture["compact"]["layout"]["meta"]["columns"]
    assert set(columns) == {"tokens", "id", "position", "segment", "symbol", "norm", "order", "piles"}
    assert max(len(pile) for piles in columns["piles"].values() for pile in piles) > MAX_NAMED
    assert {"&lt;", "&gt;", "&amp;"} <= set(columns["tokens"])
    assert {0, 2, "circle-open"} <= set(columns["symbol"])
    assert any("meta" not in trace for trace in fixture["compact"]["data"])


def test_core_wire_reads_the_fixture(fixture):
    compact = copy.deepcopy(fixture["compact"])
    expanded = expand(compact)
    assert expanded["data"] == fixture["expanded"]
    meta = expanded["layout"]["meta"]
    assert meta["labels"] == fixture["labels"] != fixture["compact"]["layout"]["meta"]["labels"]
    assert {**expanded["layout"], "meta": {**meta, "labels": None}} == {
        **fixture["compact"]["layout"], "meta": {**fixture["compact"]["layout"]["meta"], "labels": None}}
    assert table_rows(compact) == fixture["table"]
    assert compact == fixture["compact"], "expand changed the figure it was given"


@pytest.mark.browser
def test_the_pages_script_reads_the_fixture(browser, fixture):
    """assets/explorer.js (with assets/labels.js and assets/move.js) in a blank page (no app): its expand, its token
    table and the labels' texts."""
    page = browser.new_page()
    try:
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.set_content("<table id='token-table'><tbody></tbody></table>")
        for script in SCRIPTS:
            page.add_script_tag(content=script.read_text())
        sent = json.dumps(fixture["compact"])
        drawn = page.evaluate("""(sent) => {
            const figure = JSON.parse(sent);
            return JSON.parse(JSON.stringify(window.embeddingExplorer.expand(figure.data, figure.layout)));
        }""", sent)
        assert drawn == fixture["expanded"]
        labels = page.evaluate("(sent) => window.embeddingExplorer.labelsOf(JSON.parse(sent).layout.meta)", sent)
        assert labels == fixture["labels"]
        page.evaluate("(sent) => window.embeddingExplorer.drawTable(JSON.parse(sent).layout)", sent)
        shown = page.evaluate("""() => [...document.querySelectorAll('#token-table tbody tr')]
            .map(row => [...row.cells].map(cell => cell.textContent))""")
        assert shown == [[token, str(i), str(position), str(segment), *(f"{norm:.3f}" for norm in norms)]
                         for token, i, position, segment, *norms in fixture["table"]]
        assert errors == []
    finally:
        page.close()
