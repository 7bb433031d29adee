"""The Code tab in a real Chromium: what a person copies and downloads is the view's script, it
follows what they type, and run, it gives the points Plotly drew on the page; once trained on the
built-in corpus, the tab saves that corpus as the file the script reads.

Coordinates are read from the plot's data (`gd._fullData`), never from pixels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scripts import run_all

from core.drawing.code import CORPUS_FILE
from tests.browser import PLOT, settle
from tests.test_code import fetched
from ui.assets import ASSETS

pytestmark = pytest.mark.browser

CODE = "() => document.querySelector('#code-view .cm-content')?.innerText || ''"
# each group's drawn points with their customdata (a token's: id, position, segment; a segment row's: row)
DRAWN = f"""() => Object.fromEntries({PLOT}._fullData
    .filter(t => ['token', 'position', 'segment', 'sum', 'output'].includes(t.name))
    .map(t => [t.name, Array.from(t.x).map((x, i) => [...t.customdata[i].slice(0, 3), x, t.y[i]])]))"""


def drawn_points(page) -> dict[str, np.ndarray]:
    """The points Plotly drew, each group's in token order (the segment's: each token's row)."""
    drawn = {name: np.asarray(rows, dtype=np.float64) for name, rows in page.evaluate(DRAWN).items()}
    tokens = drawn["token"][np.argsort(drawn["token"][:, 1])]  # by position
    points = {}
    for name, rows in drawn.items():
        if name == "segment":
            by_row = {int(row[0]): row[3:] for row in rows}
            points[name] = np.array([by_row[int(segment)] for segment in tokens[:, 2]])
        else:
            points[name] = rows[np.argsort(rows[:, 1])][:, 3:]
    return points


def test_the_code_tab_copies_and_downloads_the_views_script_and_it_draws_what_the_page_drew(open_page, app_url):
    query = "source=bert&a=The+king+spoke.&b=A+queen+listened."
    page = open_page(f"{query}&view=code")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.wait_for_function(f"() => ({CODE})().includes('class Embedding')", timeout=60_000)
    script = fetched(app_url, query)[2]  # the same view's script from the route

    page.get_by_role("button", name="Copy").click()
    page.wait_for_function("() => document.querySelector('#code-status').textContent.includes('Copied')")
    assert page.evaluate("() => navigator.clipboard.readText()") == script
    with page.expect_download() as download:
        page.get_by_role("button", name="Download .py").click()
    assert download.value.suggested_filename == "embedding_view.py"
    downloaded = Path(download.value.path()).read_text(encoding="utf-8")
    assert downloaded == script

    page.get_by_role("tab", name="Plane").click()
    settle(page)
    got = run_all([downloaded])[0]
    assert "error" not in got, got
    for name, points in drawn_points(page).items():  # Plotly's points are float32
        assert np.abs(np.asarray(got["points"][name]) - points).max() <= 1e-5, name

    # typing changes the script as it changes the plot
    page.get_by_role("tab", name="Code").click()
    box = page.locator("#sentence-a textarea")
    box.fill("")
    box.type("The queen spoke.", delay=20)
    page.wait_for_function(f"() => ({CODE})().includes(\"A = 'The queen spoke.'\")", timeout=60_000)
    assert not page.locator("#code-corpus").is_visible()  # an untrained view's script reads no file

    # trained on the built-in corpus, the script reads it from a file beside it, which the tab saves
    page.get_by_role("tab", name="Train").click()
    page.locator("#train-steps input").fill("5")
    page.locator("#train-button").click()
    page.get_by_role("tab", name="Code").click()
    page.locator("#code-corpus").wait_for(state="visible", timeout=60_000)
    with page.expect_download() as download:
        page.get_by_role("button", name=f"Download {CORPUS_FILE}").click()
    assert download.value.suggested_filename == CORPUS_FILE
    assert Path(download.value.path()).read_bytes() == (ASSETS / "corpus.txt").read_bytes()
    assert "keep it beside embedding_view.py" in page.locator("#code-status").inner_text()
    assert page.errors == []
