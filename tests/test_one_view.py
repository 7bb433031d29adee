"""What the one-View design promises, through the launched app's API.

Every event of a tab changes that tab's `View` on the server under its lock, so the page,
the link (`/share`) and the tables cannot disagree — even while a training runs beside the
other events, or when one button sets a whole layer at once.
"""

from __future__ import annotations

import io
import json
import time
from urllib.parse import parse_qs

import numpy as np
from appapi import call, embed, fingerprint, named, query
from gradio_client import handle_file

from core.view.options import MAX_QUERY
from core.view.share import from_query
from core.view.state import DOCUMENT_SENTENCE

KING_A, KING_B = "The king spoke to the queen.", "A man listened."


def link_of(client) -> dict[str, list[str]]:
    text, _ = query(client)
    return parse_qs(text, keep_blank_values=True)


def wait_for_job(client, name: str, timeout: float = 60) -> None:
    """Until the tab's heavy job (`core.serving.tabs.Tab.job`) is `name`: the training has begun."""
    from ui.events import TABS

    tab = TABS.get(client.session_hash)
    deadline = time.monotonic() + timeout
    while tab.job != name:
        assert time.monotonic() < deadline, f"the tab's job never became {name!r}"
        time.sleep(0.05)


def test_events_during_a_training_agree_with_the_page_and_the_link(client):
    embed(client, "the cat and the dog", "my aunt and my uncle")
    job = client.submit(1500, "builtin", api_name="/train")
    wait_for_job(client, "training")
    # a table change must wait for the training: refused, and the radio shows the tables in use
    refused = call(client, "/source", "glove")
    assert "Training is running for this page: the tables can change when it has finished." in refused.notice
    assert refused.value("table-source") == "random"
    # view changes apply at once
    assert call(client, "/freeze", True, False, False, False).notice == ""
    assert call(client, "/basis", "vocabulary").notice == ""
    assert not job.done(), "the training ended before the other events were sent; give it more steps"
    trained = named("/train", job.result(timeout=600))
    assert trained.notice == ""
    assert trained.value("train-summary").startswith("Trained 1500 steps")
    params = link_of(client)
    assert "source" not in params  # still the random tables
    assert params["freeze"] == ["token"] and params["basis"] == ["vocabulary"]
    # the session trained the tables the page shows, and draws them in the plane it names
    shown = embed(client, "the cat and the dog slept", "my aunt and my uncle")
    assert "faint points: before training" in shown["embed-info"]
    assert "whole vocabulary" in shown["variance-bars"]


def test_the_listing_button_sets_the_whole_layer_in_one_event(client):
    first = call(client, "/listing")
    assert first.notice == ""
    assert (first.value("tokenizer"), first.value("vocab-size"), first.value("d-model")) == ("word", 10, 2)
    assert first.value("sentence-a") == DOCUMENT_SENTENCE and first.value("sentence-b") == ""
    assert "tokens: 10 × 2," in first.value("tables-info")
    links = set()
    for _ in range(10):
        out = call(client, "/listing")
        assert out.notice == ""
        text, notes = query(client)
        links.add(text)
        params = parse_qs(text, keep_blank_values=True)
        assert params["tokenizer"] == ["word"] and params["vocab"] == ["10"] and params["d"] == ["2"]
        assert params["a"] == [DOCUMENT_SENTENCE] and params["b"] == [""]
        assert notes == ""
        # moved away (sentences and width), so the next press changes them again
        call(client, "/settings", "wordpiece", 1000, 8, 512, 2, 0)
        embed(client, "something else", "entirely")
    assert len(links) == 1


def test_the_selection_follows_its_token_through_edits(client):
    embed(client, KING_A, KING_B)
    picker = client.predict(api_name="/picker")
    king = next(index for label, index in picker["choices"] if label.endswith(": king"))
    assert call(client, "/select", king).value("selected-token") == king
    # a word typed before "king" moves it one place on; the picker follows
    moved = embed(client, "The old king spoke to the queen.", KING_B)
    assert moved.value("selected-token") == king + 1
    assert moved.notice == ""
    assert parse_qs(query(client)[0])["token"] == [str(king + 1)]
    # deleting "king" lets it go, and says so
    gone = embed(client, "The old spoke to the queen.", KING_B)
    assert "The selected token 'king' is no longer in the sentences, so it was let go." in gone.notice
    assert gone.value("selected-token") == ""
    assert "token" not in link_of(client)


def test_a_refused_upload_empties_the_box_and_keeps_the_tables(client, tmp_path):
    before = fingerprint(client)
    path = tmp_path / "nan.npy"
    table = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
    table[3, 1] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, table)
    path.write_bytes(buffer.getvalue())
    out = call(client, "/upload", handle_file(str(path)))
    assert out.notice == "row 3 contains NaN; every value must be a finite number."
    assert out["upload-table"] is None
    assert out.value("table-source") == "random"
    assert fingerprint(client) == before
    assert "source" not in link_of(client)
    assert from_query(link_of(client)).view.source == "random"


def test_every_change_writes_its_link_for_the_address_bar(client):
    """The address bar is the view: each event writes the link `/share` would make, as a new
    history entry for a discrete change and as the same entry rewritten while typing."""
    typed = embed(client, KING_A, KING_B)
    sent = json.loads(typed.value("address"))
    assert sent == {"query": query(client)[0], "push": False}
    assert from_query(parse_qs(sent["query"])).view.sentence_a == KING_A
    chosen = call(client, "/basis", "vocabulary")
    sent = json.loads(chosen.value("address"))
    assert sent == {"query": query(client)[0], "push": True} and "basis=vocabulary" in sent["query"]
    # an event that changes nothing leaves the address (and the history) alone
    assert not embed(client, KING_A, KING_B).written("address")


def test_a_view_whose_link_is_too_long_for_an_address_keeps_the_last_one(client):
    long = "ü" * 9_000  # 54,000 characters once percent-encoded: past MAX_QUERY
    sent = json.loads(embed(client, long, long).value("address"))
    assert sent["query"] is None and len(query(client)[0]) > MAX_QUERY
