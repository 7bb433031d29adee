"""Links, property-tested: any shareable view reads back as itself; any query reads without raising."""

from __future__ import annotations

import re
from dataclasses import fields
from urllib.parse import parse_qs

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.view.options import (
    BASES,
    COMPONENTS,
    LIMITS,
    MAX_FLIPS,
    MAX_SEARCH,
    PANELS,
    PARTS,
    POSITIONS,
    READINGS,
    SHAREABLE_SOURCES,
    THEMES,
    TOKENIZERS,
    VIEWS,
)
from core.view.share import PAGE_PARAMETERS, PARAMETERS, from_query, to_query
from core.view.state import SCREEN, View

# text a link must carry: unicode, the query string's own punctuation, newlines, markup
AWKWARD = "&=#%+?;/ \n\r\t,'\"<>[]()*_`\\é中🙂\u200b\u202e\x00"
texts = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(AWKWARD)), max_size=60)


def whole(name: str) -> st.SearchStrategy[int]:
    low, high = LIMITS[name]
    return st.integers(low, high)


def subset(names) -> st.SearchStrategy:
    return st.lists(st.sampled_from(names), unique=True).map(lambda chosen: tuple(n for n in names if n in chosen))


# one strategy per View field: the test below checks that none is missing
FIELDS = {
    "sentence_a": texts,
    "sentence_b": texts,
    "source": st.sampled_from(SHAREABLE_SOURCES),
    "tokenizer": st.sampled_from(list(TOKENIZERS)),
    "vocab_size": whole("vocab_size"),
    "d_model": whole("d_model"),
    "maxlen": whole("maxlen"),
    "n_segments": whole("n_segments"),
    "seed": whole("seed"),
    "positions": st.sampled_from(list(POSITIONS)),
    "frozen": st.frozensets(st.sampled_from(PARTS)),
    "groups": subset(COMPONENTS),
    "labels": st.booleans(),
    "arrows": st.booleans(),
    "shift": st.booleans(),
    "basis": st.sampled_from(list(BASES)),
    "background": whole("background"),
    "token": st.none() | whole("token"),
    "k": whole("k"),
    "flips": st.frozensets(whole("token"), max_size=MAX_FLIPS),
    "dims": whole("dims"),
    "search": st.text(max_size=MAX_SEARCH),
    "regex": st.booleans(),
    "shown": st.sampled_from(list(VIEWS)),
    "panel": st.sampled_from(list(PANELS)),
    "step": st.none() | whole("step"),
    "presenter": st.booleans(),
    "theme": st.sampled_from(list(THEMES)),
    "listing_seed": whole("seed"),
    "listing_bug": st.booleans(),
    "lookup_sentence": texts.filter(lambda text: text.strip()),  # a View refuses an empty one
    "lookup_dim": whole("lookup_dim"),
    "lookup_grad": st.booleans(),
    "answers": st.booleans(),
    "layer": whole("layer"),  # a link carries any layer; the tab shows it only on BERT's tables (core/plane/layers.py)
    "sound": st.booleans(),
    "reading": st.sampled_from(list(READINGS)),
}
views = st.fixed_dictionaries(FIELDS).map(lambda values: View(**values))


def test_every_field_of_a_view_is_generated():
    assert set(FIELDS) == {f.name for f in fields(View)} - set(SCREEN)  # a link never carries the screen


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views)
def test_any_shareable_view_reads_back_as_itself(view):
    query, notes = to_query(view)
    assert notes == ()
    link = from_query(parse_qs(query, keep_blank_values=True))
    assert link.view == view
    assert link.notes == ()


# --- hostile queries ---

KNOWN = list(PARAMETERS)
MARKUP = ["<img src=x onerror=alert(1)>", "[link](javascript:alert(1))", "**bold**", "<script>", "# title",
          "`code`", "&amp;", "\x00", "\ud800", "é" * 50, "1e309", "NaN", "-1", "99999999999999999999", "none", ""]
names = st.one_of(st.sampled_from(KNOWN), st.sampled_from(MARKUP), st.text(max_size=20))
# a repeated parameter arrives as a list (parse_qs, starlette's getlist); never an empty one
values = st.one_of(st.sampled_from(MARKUP), st.text(max_size=80),
                   st.lists(st.text(max_size=10), min_size=1, max_size=3), st.integers().map(str))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(names, values, max_size=12))
def test_any_query_reads_without_raising_and_names_each_parameter_it_ignored(params):
    link = from_query(params)
    assert isinstance(link.view, View)
    assert all(isinstance(note, str) and note for note in link.notes)
    for name, value in params.items():
        if name.startswith("__") or name in PAGE_PARAMETERS:
            continue  # gradio's own (?__theme=dark) and the page's (?class=…) pass silently
        if name not in KNOWN:
            assert f"Ignored unknown parameter {_shown(name)!r};" in "\n".join(link.notes), (name, link.notes)
        elif from_query({name: value}).notes:
            # a value the view cannot take alone is named with the parameter it came in
            assert any(note.startswith((f"Ignored {name}=", f"Ignored {name}:"))
                       or "in the link has" in note for note in link.notes), (name, value, link.notes)


def test_markup_in_a_parameter_is_quoted_back_as_text_not_rendered():
    """Notes are plain text; the page escapes them (tests/test_app.py checks the notice)."""
    link = from_query({"<img src=x onerror=alert(1)>": "1", "k": "**7**"})
    assert link.notes == (
        "Ignored unknown parameter '<img src=x onerror=alert(1)>'; links use " + ", ".join(KNOWN) + ".",
        "Ignored k=**7**: k must be a whole number from 0 to 50, not '**7**'.",
    )


def _shown(text: str) -> str:
    text = re.sub(r"[\ud800-\udfff]", "\ufffd", text)
    return text if len(text) <= 40 else text[:40] + "…"
