"""Make the README's pictures: the app launched here, opened in Debian's Chromium.

    python assets/screenshots.py          # writes assets/*.png
    python assets/screenshots.py class    # only assets/class.png (any of the names below)

Each picture is a link into the app (a view written as a query string), so what a picture
shows can be opened by anyone: the README's pictures are views of the app, not mock-ups.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PIL import Image  # noqa: E402

PAIR = "a=" + quote("The king spoke to the queen.") + "&b=" + quote("A man and a woman listened.")


def lecture_with_a_class(browser, url: str) -> None:
    """assets/class.png: the lecturer's page of a class on step 3 (its counts at the bottom),
    beside a student who wandered off, offered the way back."""
    from tests.browser import open_at, settle

    lecturer = open_at(browser, url, "step=2", (1440, 1000))
    lecturer.locator("#class-start").click()
    link = lecturer.locator("#class-student-link").input_value()
    students = [open_at(browser, url, link.split("?", 1)[1], (1440, 1000)) for _ in range(3)]
    lecturer.locator("#tour-next").click()
    settle(lecturer)
    wanderer = students[2]
    wanderer.locator("#sentence-a textarea").fill("the violin and the cello")
    wanderer.wait_for_function("() => document.querySelector('#class-follow') !== null", timeout=60_000)
    settle(wanderer)
    lecturer.wait_for_function("() => (document.getElementById('class-following') || {}).innerText === '2'",
                               timeout=60_000)
    tiles = [Image.open(io.BytesIO(page.screenshot())) for page in (lecturer, wanderer)]
    sheet = Image.new("RGB", (sum(t.width for t in tiles) + 24, max(t.height for t in tiles)), "white")
    sheet.paste(tiles[0], (0, 0))
    sheet.paste(tiles[1], (tiles[0].width + 24, 0))
    sheet.thumbnail((1800, 1800))
    sheet.save(ROOT / "assets" / "class.png")
    for page in (lecturer, *students):
        page.context.close()


# what the students of assets/poll.png send, a page each (up to three words a page)
ANSWERS = (("queen", "crown"), ("queen", "prince"), ("queen", "princess"), ("queen", "throne"),
           ("prince", "emperor"), ("crown", "kingdom", "ruler"))


def a_round_of_answers(browser, url: str) -> None:
    """assets/poll.png: the lecturer's page on the tour's BERT step, a round of answers in its plane
    (the class box's words under the tour's text), sent by six students' pages."""
    from tests.browser import open_at, settle

    lecturer = open_at(browser, url, "step=6", (1440, 900))
    lecturer.locator("#class-start").click()
    link = lecturer.locator("#class-student-link").input_value()
    students = [open_at(browser, url, link.split("?", 1)[1], (1024, 768)) for _ in ANSWERS]
    lecturer.locator("#poll-ready").select_option("Type a word you would put next to king.")
    lecturer.locator("#poll-ask").click()
    for student, words in zip(students, ANSWERS, strict=True):
        student.locator("#poll-answer").wait_for()
        for word in words:
            student.locator("#poll-answer").fill(word)
            student.locator("#poll-answer").press("Enter")
            student.wait_for_function("(word) => document.getElementById('poll-own').textContent.includes(word)",
                                      arg=word, timeout=60_000)
    sent = sum(len(words) for words in ANSWERS)
    lecturer.wait_for_function("(sent) => document.getElementById('poll-status').textContent.includes("
                               "`${sent} answers`)", arg=sent, timeout=60_000)
    lecturer.wait_for_function("() => document.querySelector('#embed-plot .js-plotly-plot').data.some("
                               "t => t.name === 'class' && t.hovertext.some(h => h.startsWith('queen ×4')))",
                               timeout=60_000)
    settle(lecturer)
    lecturer.evaluate("() => document.getElementById('main-row').scrollIntoView({block: 'start'})")
    tiles = [Image.open(io.BytesIO(lecturer.screenshot()))]
    lecturer.evaluate("() => { document.getElementById('class-banner').style.visibility = 'hidden'; }")
    tiles.append(Image.open(io.BytesIO(lecturer.locator("#class-box .poll").screenshot())))  # its box, below
    sheet = Image.new("RGB", (tiles[0].width + tiles[1].width + 24, max(t.height for t in tiles)), "white")
    sheet.paste(tiles[0], (0, 0))
    sheet.paste(tiles[1], (tiles[0].width + 24, 0))
    sheet.save(ROOT / "assets" / "poll.png")
    for page in (lecturer, *students):
        page.context.close()


def trained_as_code(browser, url: str, train) -> None:
    """assets/code.png: tour step 7 trained, beside its Code tab at the layer and its training."""
    from tests.browser import open_at, settle

    page = open_at(browser, url, "step=7&panel=train", (1440, 1000))
    train(page)
    settle(page)
    tiles = [Image.open(io.BytesIO(page.locator("#main-column").screenshot()))]
    page.get_by_role("tab", name="Code", exact=True).click()
    page.wait_for_function("() => document.querySelector('#code-view .cm-line')", timeout=60_000)
    settle(page)
    assert page.evaluate("""async () => {  // CodeMirror draws the lines in view: scroll until the module is drawn
        const scroller = document.querySelector('#code-view .cm-scroller');
        for (let top = 0; top < scroller.scrollHeight; top += 200) {
            scroller.scrollTop = top;
            await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
            const line = [...scroller.querySelectorAll('.cm-line')].find((l) => l.textContent.startsWith('class Emb'));
            if (line) {
                scroller.scrollTop += line.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
                return true;
            }
        }
        return false;
    }"""), "the script has no Embedding module"
    page.wait_for_timeout(300)  # CodeMirror draws the lines scrolled to on its next frame
    tiles.append(Image.open(io.BytesIO(page.locator("#main-column").screenshot())))
    tiles = [tile.crop((0, 0, tile.width, min(tile.height, 900))) for tile in tiles]
    sheet = Image.new("RGB", (sum(t.width for t in tiles) + 24, max(t.height for t in tiles)), "white")
    sheet.paste(tiles[0], (0, 0))
    sheet.paste(tiles[1], (tiles[0].width + 24, 0))
    sheet.thumbnail((1800, 1800))
    sheet.save(ROOT / "assets" / "code.png")
    page.context.close()


def main(only: tuple[str, ...] = ()) -> None:
    """Every picture, or those named in `only` (screenshot, lecture, presenter, phone, training,
    code, class, poll, views)."""
    from playwright.sync_api import sync_playwright

    import app
    from tests.browser import open_at, settle
    from tests.conftest import free_port, launch_chromium

    app.demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                    **app.LAUNCH_OPTIONS)
    url = app.demo.local_url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)

        def shot(name: str, query: str, viewport=(1440, 1000), full=False, then=None):
            if only and name not in only:
                return
            page = open_at(browser, url, query, viewport)
            if then is not None:
                then(page)
                settle(page)
            page.screenshot(path=str(ROOT / "assets" / f"{name}.png"), full_page=full)
            page.context.close()

        shot("screenshot", f"source=bert&{PAIR}&token=2&panel=view")
        shot("lecture", "step=6")
        shot("presenter", "step=4&presenter=1", (1920, 1080))
        def two_steps(page):  # as a student taps Next: the step's text above its plot, on one screen
            for _ in range(2):
                page.locator("#tour-next").click()
                settle(page)

        shot("phone", "", (390, 844), then=two_steps)

        def train(page):
            page.get_by_role("tab", name="Train").click()
            page.locator("#train-steps input").fill("150")
            page.locator("#train-button").click()
            page.wait_for_function("() => document.querySelector('#train-summary').innerText.includes('Trained')",
                                   timeout=300_000)

        shot("training", "step=7&panel=train", then=train)

        if not only or "code" in only:
            trained_as_code(browser, url, train)

        if not only or "class" in only:
            lecture_with_a_class(browser, url)
        if not only or "poll" in only:
            a_round_of_answers(browser, url)
        if only and "views" not in only:
            browser.close()
            app.demo.close()
            return
        # the side views, four in one picture
        tiles = []
        for tab in ("Positions", "LayerNorm", "Similarity", "The listing"):
            page = open_at(browser, url, "a=" + quote("the cat sat on the mat") + "&b=" +
                           quote("the dog chased the cat"), (1440, 1000))
            page.get_by_role("tab", name=tab, exact=True).click()
            settle(page)
            tile = Image.open(io.BytesIO(page.locator("#main-column").screenshot()))
            tiles.append(tile.crop((0, 0, tile.width, min(tile.height, 820))))  # the views, not the page below
            page.context.close()
        width = max(t.width for t in tiles)
        height = max(t.height for t in tiles)
        sheet = Image.new("RGB", (2 * width, 2 * height), "white")
        for i, tile in enumerate(tiles):
            sheet.paste(tile, ((i % 2) * width, (i // 2) * height))
        sheet.thumbnail((1600, 1600))
        sheet.save(ROOT / "assets" / "views.png")
        browser.close()
    app.demo.close()


if __name__ == "__main__":
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    main(tuple(sys.argv[1:]))
