"""What a blind student hears, in a real Chromium: a virtual screen reader (tests/screenreader.py)
listens to the page while the test presses the keys a student presses, and the tests read what it
said. Tab from the top of the page reaches the plane, heard with its tokens and the variance it
keeps; each arrow on it is heard as a phrase of its own, the sentences' tokens in reading order;
its structure is heard as a tree at three levels, each with its level (the plane, its groups by
name, the token group's tokens by word);
Next and Previous are heard with the step's title and text; nothing heard anywhere is markup.
Two pages in all: the plane's, and the tour's.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import pytest

from core.drawing.captions import markdown
from core.tables.presets import wordpiece
from core.view.tour import STEPS
from tests.browser import PLOT
from tests.screenreader import hear, heard, listen, screen_reader  # noqa: F401 (its fixture)

pytestmark = pytest.mark.browser

# an ampersand is drawn escaped (a hover text is markup): a listener must hear "&", never "&amp;"
SENTENCES = ("The king & the queen spoke.", "They smiled.")
MARKUP = ("<", "</", "&lt;", "&amp;", "class=", "style=")
GROUPS = ("token", "position", "segment", "sum", "output")


def markup_in(phrases: list[str]) -> list[str]:
    """The phrases a listener would hear markup in."""
    return [phrase for phrase in phrases if any(mark in phrase for mark in MARKUP)]


def spoken(text: str) -> str:
    """Text as a screen reader says it: its runs of white space one space."""
    return re.sub(r"\s+", " ", text).strip()


def test_tab_reaches_the_plane_which_is_heard_with_its_tokens_and_the_arrows_token_by_token(open_page, screen_reader):  # noqa: F811
    a, b = SENTENCES
    tokens = wordpiece().encode(a, b).tokens
    page = open_page(f"a={quote(a)}&b={quote(b)}", (1440, 900))
    # the plane's description is written once drawing has paused (assets/plotkeys.js)
    page.wait_for_function("() => document.querySelector('#plot-description')?.textContent.includes('tokens')",
                           timeout=30_000)
    listen(page, screen_reader)
    page.evaluate("() => document.activeElement?.blur()")  # the focus at the top of the page

    for _ in range(30):
        page.keyboard.press("Tab")
        if heard(page)[-1].startswith("plot, "):
            break
    else:
        pytest.fail(f"30 Tabs from the top of the page never reached the plot; heard last: {heard(page)[-5:]}")
    plane = heard(page)[-1]
    # what a sighted student reads off the axes' titles ("PC1 · 21.4%"), summed: what the plane keeps
    titles = page.evaluate(f"() => [{PLOT}._fullLayout.xaxis.title.text, {PLOT}._fullLayout.yaxis.title.text]")
    kept = sum(float(re.search(r"([\d.]+)%", title).group(1)) for title in titles)
    assert plane.startswith("plot, The embedding plane. Arrow keys move a ring"), plane
    assert f"{len(tokens)} tokens, in {len(GROUPS)} groups" in plane, plane
    assert f"keeping {kept:.1f}% of the variance" in plane, plane
    assert all(group in plane.split(" groups: ", 1)[1] for group in GROUPS), plane

    words = []
    for _ in tokens:  # the first arrow says where the ring starts: the first token
        said = len(heard(page))
        page.keyboard.press("ArrowRight")
        new = hear(page, said)[said:]
        assert len(new) == 1 and new[0].startswith("polite: "), new  # one phrase an arrow, from the live region
        words.append(new[0].removeprefix("polite: ").split(", position ")[0])
    assert words == list(tokens)  # "&" heard as itself

    # the plane's structure, a tree heard at three levels, each with its level: the plane, its groups
    # by name, the token group's tokens by word in reading order
    def walk(key: str) -> str:
        said = len(heard(page))
        page.keyboard.press(key)
        new = hear(page, said)[said:]
        assert len(new) == 1 and new[0].startswith("treeitem, "), (key, new)
        return new[0].removeprefix("treeitem, ")

    plane = walk("s")
    assert plane.startswith(f"Embedding plane: {len(tokens)} tokens in {len(GROUPS)} groups") and "level 1" in plane
    assert f"keeping {kept:.1f}% of the variance" in plane, plane
    groups = [walk("ArrowRight"), *(walk("ArrowDown") for _ in GROUPS[1:])]
    assert [g.split(" vectors: ")[0].lower() for g in groups] == list(GROUPS), groups
    assert all(", level 2, " in g for g in groups), groups
    for _ in GROUPS[1:]:
        walk("ArrowUp")
    page.keyboard.press("ArrowRight")  # the token group opened (a state, not a phrase: said by a reader as it likes)
    said = [walk("ArrowRight"), *(walk("ArrowDown") for _ in tokens[1:])]
    assert [s.split(", position ")[0] for s in said] == list(tokens), said
    assert all(", level 3, " in s for s in said), said
    assert walk("ArrowLeft").startswith("Token vectors: ")  # back up a level
    assert markup_in(heard(page)) == []
    assert page.errors == []


def test_next_and_previous_are_heard_with_the_step_s_title_and_text(open_page, screen_reader):  # noqa: F811
    def step_said(number: int) -> str:
        step = STEPS[number - 1]
        text = html.unescape(re.sub(r"<[^>]+>", "", markdown(step.text)))
        return spoken(f"polite: Step {number} of {len(STEPS)}: {step.title}. {text}")

    def press(key: str, number: int) -> None:
        """Press `key` and wait until step `number` is heard; nothing else is said meanwhile."""
        said = len(heard(page))
        page.keyboard.press(key)
        log = hear(page, said, f"polite: Step {number} of", timeout=60)
        assert [spoken(phrase) for phrase in log[said:]] == [step_said(number)]

    page = open_page()
    listen(page, screen_reader)
    page.locator("#tour-next").focus()
    assert heard(page)[-1] == "button, Next →"
    press("Enter", 1)
    press("Enter", 2)
    page.keyboard.press("Shift+Tab")  # past the step picker
    page.keyboard.press("Shift+Tab")
    assert heard(page)[-2:] == ["combobox, Go to step, 2, has popup listbox, not expanded", "button, ← Previous"]
    press("Enter", 1)
    assert markup_in(heard(page)) == []
    assert page.errors == []
