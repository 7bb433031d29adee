"""What the one-View design promises, through the launched app's route.

Every call of a page changes its tab's `View` on the server under the tab's lock, so the page,
the link (its Link button) and the tables cannot disagree — even while a training runs beside the
other calls, or when one button sets a whole layer at once.
"""

from __future__ import annotations

import io
import json
import threading
from urllib.parse import parse_qs, urlsplit

import numpy as np

from core.view.options import MAX_QUERY
from core.view.share import from_query
from core.view.state import DOCUMENT_SENTENCE
from tests.appapi import Outputs, Page
from tests.waiting import eventually

KING_A, KING_B = "The king spoke to the queen.", "A man listened."


def embed(page: Page, a: str, b: str = "") -> Outputs:
    return page.send(sentence_a=a, sentence_b=b)


def query(page: Page) -> tuple[str, str]:
    """What the page's Link button shows: the link's query string, and its notes (a link and notes
    the same as the last ones are not sent again: the page shows them already)."""
    page.send(link="http://host/")
    return urlsplit(page.shown.value("share-link")).query, page.shown.value("share-notes")


def link_of(page: Page) -> dict[str, list[str]]:
    return parse_qs(query(page)[0], keep_blank_values=True)


def test_changes_during_a_training_agree_with_the_page_and_the_link(live):
    embed(live, "the cat and the dog", "my aunt and my uncle")
    trained: list = []
    training = threading.Thread(target=lambda: trained.append(live.train(1500, "builtin")[0]))
    training.start()
    assert eventually(lambda: live.tab.job == "training", 60), "the training never began"
    # a table change must wait for the training: refused, and the radio shows the tables in use
    refused = live.send(source="glove")
    assert "Training is running for this page: the tables can change when it has finished." in refused.notice
    assert refused.value("table-source") == "random"
    # view changes apply at once
    assert live.freeze(True, False, False, False).notice == ""
    assert live.send(basis="vocabulary").notice == ""
    assert training.is_alive(), "the training ended before the other changes were sent; give it more steps"
    training.join(600)
    assert trained[0].notice == ""
    assert trained[0].value("train-summary").startswith("Trained 1500 steps")
    params = link_of(live)
    assert "source" not in params  # still the random tables
    assert params["freeze"] == ["token"] and params["basis"] == ["vocabulary"]
    # the session trained the tables the page shows, and draws them in the plane it names
    shown = embed(live, "the cat and the dog slept", "my aunt and my uncle")
    assert "faint points: before training" in shown["embed-info"]
    assert "whole vocabulary" in shown["variance-bars"]


def test_the_listing_button_sets_the_whole_layer_in_one_call(live):
    first = live.send(listing=True)
    assert first.notice == ""
    assert (first.value("tokenizer"), first.value("vocab-size"), first.value("d-model")) == ("word", 10, 2)
    assert first.value("sentence-a") == DOCUMENT_SENTENCE and first.value("sentence-b") == ""
    assert "tokens: 10 × 2," in first.value("tables-info")
    links = set()
    for _ in range(10):
        out = live.send(listing=True)
        assert out.notice == ""
        text, notes = query(live)
        links.add(text)
        params = parse_qs(text, keep_blank_values=True)
        assert params["tokenizer"] == ["word"] and params["vocab"] == ["10"] and params["d"] == ["2"]
        assert params["a"] == [DOCUMENT_SENTENCE] and params["b"] == [""]
        assert notes == ""
        # moved away (sentences and width), so the next press changes them again
        live.send(tokenizer="wordpiece", vocab_size=1000, d_model=8, maxlen=512, n_segments=2, seed=0)
        embed(live, "something else", "entirely")
    assert len(links) == 1


def test_the_selection_follows_its_token_through_edits(live):
    embed(live, KING_A, KING_B)
    picker = live.send(picker=True)["selected-token"]
    king = next(index for label, index in picker["choices"] if label.endswith(": king"))
    assert live.send(token=king).value("selected-token") == king
    # a word typed before "king" moves it one place on; the picker follows
    moved = embed(live, "The old king spoke to the queen.", KING_B)
    assert moved.value("selected-token") == king + 1
    assert moved.notice == ""
    assert parse_qs(query(live)[0])["token"] == [str(king + 1)]
    # deleting "king" lets it go, and says so
    gone = embed(live, "The old spoke to the queen.", KING_B)
    assert "The selected token 'king' is no longer in the sentences, so it was let go." in gone.notice
    assert gone.value("selected-token") == ""
    assert "token" not in link_of(live)


def test_a_refused_upload_keeps_the_tables(live, tmp_path):
    before = live.fingerprint()
    path = tmp_path / "nan.npy"
    table = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
    table[3, 1] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, table)
    path.write_bytes(buffer.getvalue())
    out = live.upload(path)
    assert out.notice == "row 3 contains NaN; every value must be a finite number."
    assert out.value("table-source") == "random"
    assert live.fingerprint() == before
    assert "source" not in link_of(live)
    assert from_query(link_of(live)).view.source == "random"


def test_every_change_writes_its_link_for_the_address_bar(live):
    """The address bar is the view: each change writes the link the Link button would make, as a
    new history entry for a discrete change and as the same entry rewritten while typing."""
    typed = embed(live, KING_A, KING_B)
    sent = json.loads(typed.value("address"))
    assert sent == {"query": query(live)[0], "push": False}
    assert from_query(parse_qs(sent["query"])).view.sentence_a == KING_A
    chosen = live.send(basis="vocabulary")
    sent = json.loads(chosen.value("address"))
    assert sent == {"query": query(live)[0], "push": True} and "basis=vocabulary" in sent["query"]
    # a change that changes nothing leaves the address (and the history) alone
    assert not embed(live, KING_A, KING_B).written("address")


def test_a_view_whose_link_is_too_long_for_an_address_keeps_the_last_one(live):
    long = "ü" * 9_000  # 54,000 characters once percent-encoded: past MAX_QUERY
    sent = json.loads(embed(live, long, long).value("address"))
    assert sent["query"] is None and len(query(live)[0]) > MAX_QUERY
