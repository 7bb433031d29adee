"""The launched app through the page's route, as the page's script sees it, and its public API."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import numpy as np
import pytest

from tests.appapi import ALL, Page, figure, tokens, trace_names

ROOT = Path(__file__).resolve().parents[1]
# torch warns about pickle.dump's protocol just before it refuses the hostile file
pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")


def tokens_in(plot) -> set[str]:
    return {token for trace in figure(plot)["data"] for token in trace.get("hovertext") or ()}


def embed(page: Page, a: str, b: str = ""):
    return page.send(sentence_a=a, sentence_b=b)


def query(page: Page) -> dict[str, list[str]]:
    """The parameters of the link the page's Link button shows (the same link again is not sent again)."""
    page.send(link="http://host/")
    link = page.shown.value("share-link")
    return parse_qs(urlsplit(link).query, keep_blank_values=True)


def test_embed_returns_the_typed_tokens_in_five_groups(live):
    out = embed(live, "The zebra grazed.", "Lions watched.")
    assert trace_names(out["embed-plot"]) == ALL
    assert {"zebra", "lions", "[CLS]", "[SEP]"} <= tokens_in(out["embed-plot"])
    assert "tokens" in out["embed-info"]
    assert tokens(out["token-table"])[:3] == ["[CLS]", "the", "zebra"]


def test_a_keystroke_sends_the_plot_compact_its_groups_sharing_one_set_of_token_columns(live):
    """The plot is most of a keystroke's answer: its tokens' text travels once, in the columns the
    token table is drawn from, not again as each group's hover text."""
    from core.drawing.wire import table_rows

    sent = json.loads(live.post({"key": live.key, "change": {"sentence_a": "A new sentence.",
                                                             "sentence_b": "And one more."}})["values"]["embed-plot"])
    assert [row[0] for row in table_rows(sent)] == ["[CLS]", "a", "new", "sentence", ".", "[SEP]", "and", "one",
                                                     "more", ".", "[SEP]"]
    assert not any("hovertext" in trace for trace in sent["data"] if trace["name"] in ("token", "sum", "output"))


def test_the_public_api_is_four_functions_each_taking_a_link_s_query(api):
    """The API is designed, not inherited from the page's events: `view`, `train`, `code` and
    `tour`, each documented, and no hidden endpoint beside them."""
    endpoints = api.view_api(print_info=False, return_format="dict")
    assert endpoints["unnamed_endpoints"] == {}
    params = {name: [p["parameter_name"] for p in e["parameters"]] for name, e in endpoints["named_endpoints"].items()}
    assert params == {"/view": ["query"], "/train": ["query", "steps", "corpus"], "/code": ["query"], "/tour": []}


def test_arrows_add_an_addition_path(live):
    live.send(arrows=True)
    assert "addition path" in trace_names(embed(live, "tip to tail")["embed-plot"])


def test_settings_out_of_their_range_give_a_message_and_keep_the_session(live):
    embed(live, "same words")
    before = live.fingerprint()
    assert live.send(d_model=4096).notice == "d_model is 4,096; allowed values are 1 to 1,024."
    assert live.send(tokenizer="bpe").notice == "tokenizer must be one of wordpiece, word, not 'bpe'."
    assert live.fingerprint() == before


def test_sessions_do_not_share_settings(app_url, live):
    other = Page(app_url)
    live.send(d_model=8)
    mine = embed(live, "private words")["token-table"]
    theirs = embed(other, "private words")["token-table"]
    # the output column holds |output| = sqrt(d_model) under LayerNorm's identity affine
    assert mine["data"][1][-1] == pytest.approx(8**0.5, rel=1e-2)
    assert theirs["data"][1][-1] == pytest.approx(32**0.5, rel=1e-2)


def test_listing_button_sets_the_documents_layer(live):
    live.send(source="bert")
    out = live.send(listing=True)
    values = [out.value(name) for name in ("table-source", "tokenizer", "vocab-size", "d-model")]
    assert values == ["random", "word", 10, 2]
    assert out.value("sentence-a") == "i am new to PyTorch i am having fun"
    assert "tokens: 10 × 2," in out.value("tables-info")


def test_bert_source_then_back(live):
    live.send(source="bert")
    table = embed(live, "The king spoke.")["token-table"]
    assert [row[1] for row in table["data"][:3]] == [101, 1996, 2332]
    # BERT's LayerNorm has learned gamma/beta, so output norms are no longer sqrt(d)
    assert table["data"][1][-1] != pytest.approx(384**0.5, rel=1e-2)
    out = live.send(source="random")
    assert out["token-table"]["data"][1][-1] == pytest.approx(32**0.5, rel=1e-2)


def test_upload_a_matrix_then_type_row_numbers(live, tmp_path):
    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(0).standard_normal((20, 6)).astype(np.float32))
    out = live.upload(path)
    assert out.value("table-source") == "upload" and out.notice == ""
    assert "row numbers" in out.value("tables-info") and "6 dimensions" in out.value("tables-info")
    table = embed(live, "3 7 19")["token-table"]
    assert [row[1] for row in table["data"][1:4]] == [3, 7, 19]


def test_hostile_pickle_is_refused_and_nothing_changes(live, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    path = tmp_path / "weights.pt"
    path.write_bytes(pickle.dumps(Payload()))
    embed(live, "safe and sound")
    before = live.fingerprint()
    out = live.upload(path)
    assert "never loaded because loading them could run code on the server" in out.notice
    assert out.value("table-source") == "random"
    assert not marker.exists()
    assert live.fingerprint() == before


def test_training_in_one_session_leaves_another_alone(app_url, live):
    other = Page(app_url)
    theirs_before = embed(other, "the cat and the dog")["token-table"]
    embed(live, "the cat and the dog")
    out, _ = live.train(30, "builtin")
    assert len(figure(out["loss-plot"])["data"][0]["x"]["bdata"]) > 0
    summary = out.value("train-summary")
    assert "purity" in summary and "30 steps" in summary
    assert "before training" in trace_names(out["embed-plot"])
    assert embed(other, "the cat and the dog, again")["token-table"]["data"][:5] == theirs_before["data"][:5]
    out = live.send(reset=True)
    assert "before training" not in trace_names(out["embed-plot"])
    assert out.value("train-summary") == "" and out.value("loss-plot") is None


@pytest.mark.parametrize(("steps", "message"), [(0, "steps is 0; allowed values are 1 to 2,000."),
                                                (-5, "steps is -5; allowed values are 1 to 2,000."),
                                                (2.5, "steps must be a whole number from 1 to 2,000, not 2.5.")])
def test_training_steps_out_of_range_are_refused_with_a_sentence(live, steps, message):
    before = live.fingerprint()
    out, _ = live.train(steps, "builtin")
    assert out.notice == message  # the sentence itself, not wrapped or quoted
    assert live.fingerprint() == before


def test_more_steps_than_a_page_runs_at_once_train_the_most_it_runs_and_say_so(app_url, live):
    """Steps past the limit are not refused: the page trains the most one press runs, and says so.
    The training is left at its first answer: the page going away cancels it."""
    from core.view.options import LIMITS
    from tests.waiting import eventually

    high = LIMITS["steps"][1]
    with httpx.stream("POST", f"{app_url}explorer/live", timeout=120,
                      json={"key": live.key, "change": {"train": {"steps": 10**9, "corpus": "builtin"}}}) as going:
        first = next(json.loads(line[5:]) for line in going.iter_lines() if line.startswith("data:"))["values"]
    assert first["train-summary"] == f"Training {high:,} steps…"
    assert f"1,000,000,000 steps is more than this page runs at once; training {high:,}." in first["notice"]
    assert eventually(lambda: live.tab.job is None, 60) and live.tab.session.training is None


def test_choosing_upload_without_a_file_keeps_the_tables(live):
    embed(live, "kept as it was")
    before = live.fingerprint()
    out = live.send(source="upload")
    assert out.notice == "No file uploaded yet: upload a table first, then choose 'Uploaded file'."
    assert out.value("table-source") == "random"
    assert live.fingerprint() == before
    assert "source" not in query(live)


def test_a_notice_is_plain_text(live):
    out = live.send(token="<img src=x onerror=alert(1)>")
    assert "<img" not in out["notice"] and "&lt;img" in out["notice"]
    assert out.notice.startswith("token must be a whole number from 0 to 2,047, not '<img src=x onerror=")


def test_fingerprint_covers_the_view_and_the_tables_and_changes_only_with_them(live):
    first = live.fingerprint()
    assert live.fingerprint() == first
    live.send(arrows=True)
    arrows = live.fingerprint()
    # "view hash-tables hash": a view setting changes the first part only
    assert arrows != first and arrows.split("-")[-1] == first.split("-")[-1]
    live.send(arrows=True)
    assert live.fingerprint() == arrows  # the same value again changes nothing
    live.send(d_model=16)
    assert live.fingerprint().split("-")[-1] != first.split("-")[-1]


def test_files_outside_the_app_are_not_served(app_url):
    app_file = str(ROOT / "app.py")
    for path in ("/etc/passwd", app_file):
        response = httpx.get(f"{app_url}gradio_api/file={path}")
        assert response.status_code == 403, (path, response.status_code)
    response = httpx.get(f"{app_url}gradio_api/file=../../../../etc/passwd")
    assert response.status_code in (403, 404) and "root:" not in response.text


def test_installed_versions_carry_the_security_fixes():
    from importlib.metadata import version

    from packaging.version import Version

    assert Version(version("torch").split("+")[0]) >= Version("2.10")
    assert Version(version("gradio")) >= Version("6.25")


def test_a_crashing_change_leaves_every_session_working(app_url, live, monkeypatch):
    from core.plane import pipeline

    real = pipeline.explore

    def flaky(session, a, b, groups, **options):
        if a == "boom":
            raise RuntimeError("an unexpected fault inside the update")
        return real(session, a, b, groups, **options)

    monkeypatch.setattr(pipeline, "explore", flaky)
    other = Page(app_url)
    embed(live, "calm before")
    before = live.fingerprint()
    failed = httpx.post(f"{app_url}explorer/live", json={"key": live.key, "change": {"sentence_a": "boom"}},
                        timeout=60)
    # the user sees no stack trace and no internals, only that it failed
    assert failed.status_code == 500
    assert "Traceback" not in failed.text and "unexpected fault" not in failed.text
    assert live.fingerprint() == before
    assert query(live)["a"] == ["calm before"]  # the failed change was not swapped in: the link names the one before
    assert "calm" in tokens_in(embed(live, "calm again")["embed-plot"])
    assert "others" in tokens_in(embed(other, "others carry on")["embed-plot"])


def test_importing_the_app_leaves_scikit_learn_and_the_presets_for_later():
    # scikit-learn is about 2 s of the server's start: `python app.py` imports it once the server is up
    code = ("import sys, app, core.tables.presets as p; print('sklearn' in sys.modules, "
            "p._bert_source.cache_info().currsize, p._glove_source.cache_info().currsize)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"})
    assert done.stdout.split()[-3:] == ["False", "0", "0"]
