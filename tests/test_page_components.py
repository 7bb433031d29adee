"""The page's components are declared (`ui.page.Page`): a panel cannot set a name the page does
not declare, and the page, once built, has every one it declares."""

from __future__ import annotations

import pytest

from ui.page import Page


def test_a_built_page_has_every_component_it_declares():
    import app

    page = app.demo.explorer
    assert [name for name in Page.__slots__ if not hasattr(page, name)] == []


def test_a_component_the_page_does_not_declare_cannot_be_set():
    page = Page()
    with pytest.raises(AttributeError, match="sentence_c"):
        page.sentence_c = None  # a typo of sentence_a, say
    page.sentence_a = None  # a declared one can
