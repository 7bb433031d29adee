"""The launched app through its API, as gradio_client sees it."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from appapi import ALL, call, embed, figure, fingerprint, query, tokens, trace_names
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

ROOT = Path(__file__).resolve().parents[1]
# torch warns about pickle.dump's protocol just before it refuses the hostile file
pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")


def tokens_in(plot) -> set[str]:
    return {token for trace in figure(plot)["data"] for token in trace.get("hovertext") or ()}


def settings(client, tokenizer="wordpiece", vocab_size=1000, d_model=32, maxlen=512, n_segments=2, seed=0):
    return call(client, "/settings", tokenizer, vocab_size, d_model, maxlen, n_segments, seed)


def test_embed_returns_the_typed_tokens_in_five_groups(client):
    out = embed(client, "The zebra grazed.", "Lions watched.")
    assert trace_names(out["embed-plot"]) == ALL
    assert {"zebra", "lions", "[CLS]", "[SEP]"} <= tokens_in(out["embed-plot"])
    assert "tokens" in out["embed-info"]
    assert tokens(out["token-table"])[:3] == ["[CLS]", "the", "zebra"]


def test_a_keystroke_writes_every_output_it_declares_and_sends_the_plot_compact(client):
    """An output left out of an answer costs gradio a rebuilt component and API schema (ui/render.py):
    a keystroke writes each of its outputs; the plot's groups share one set of token columns."""
    from appapi import output_ids, unchanged

    from core.drawing.wire import table_rows

    raw = dict(zip(output_ids("/embed"), client.predict("A new sentence.", "And one more.", api_name="/embed"),
                   strict=True))
    assert [name for name, value in raw.items() if unchanged(value)] == []
    sent = json.loads(raw["embed-plot"])
    assert [row[0] for row in table_rows(sent)] == ["[CLS]", "a", "new", "sentence", ".", "[SEP]", "and", "one",
                                                     "more", ".", "[SEP]"]
    assert not any("hovertext" in trace for trace in sent["data"] if trace["name"] in ("token", "sum", "output"))


def test_endpoints_take_only_their_own_widgets(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    params = {name: [p["parameter_name"] for p in e["parameters"]] for name, e in endpoints.items()}
    assert params["/embed"] == ["sentence_a", "sentence_b"]
    assert params["/export"] == ["sentence_a", "sentence_b"]
    assert params["/source"] == ["source"]
    assert params["/positions"] == ["positions"]
    assert params["/basis"] == ["basis"]
    assert params["/train"] == ["steps", "corpus"]
    assert params["/settings"] == ["tokenizer", "vocab_size", "d_model", "maxlen", "n_segments", "seed"]
    assert params["/freeze"] == ["token", "position", "segment", "norm"]
    for name in ("/refit", "/share", "/reset", "/listing", "/picker", "/flip", "/next_step", "/previous_step"):
        assert params[name] == [], name


def test_arrows_add_an_addition_path(client):
    call(client, "/arrows", True)
    assert "addition path" in trace_names(embed(client, "tip to tail")["embed-plot"])


def test_settings_the_widgets_refuse_give_a_message_and_keep_the_session(client):
    embed(client, "same words")
    before = fingerprint(client)
    with pytest.raises(AppError, match=r"^Value 4096 is greater than maximum value 1024\.$"):
        settings(client, d_model=4096)
    with pytest.raises(AppError, match=r"'bpe'.* is not in the list of choices"):
        settings(client, tokenizer="bpe")
    assert fingerprint(client) == before


def test_sessions_do_not_share_settings(app_url, client):
    other = Client(app_url, verbose=False)
    settings(client, d_model=8)
    mine = embed(client, "private words")["token-table"]
    theirs = embed(other, "private words")["token-table"]
    # the output column holds |output| = sqrt(d_model) under LayerNorm's identity affine
    assert mine["data"][1][-1] == pytest.approx(8**0.5, rel=1e-2)
    assert theirs["data"][1][-1] == pytest.approx(32**0.5, rel=1e-2)


def test_listing_button_sets_the_documents_layer(client):
    call(client, "/source", "bert")
    out = call(client, "/listing")
    values = [out.value(name) for name in ("table-source", "tokenizer", "vocab-size", "d-model")]
    assert values == ["random", "word", 10, 2]
    assert out.value("sentence-a") == "i am new to PyTorch i am having fun"
    assert "tokens: 10 × 2," in out.value("tables-info")


def test_bert_source_then_back(client):
    call(client, "/source", "bert")
    table = embed(client, "The king spoke.")["token-table"]
    assert [row[1] for row in table["data"][:3]] == [101, 1996, 2332]
    # BERT's LayerNorm has learned gamma/beta, so output norms are no longer sqrt(d)
    assert table["data"][1][-1] != pytest.approx(384**0.5, rel=1e-2)
    out = call(client, "/source", "random")
    assert out["token-table"]["data"][1][-1] == pytest.approx(32**0.5, rel=1e-2)


def test_upload_a_matrix_then_type_row_numbers(client, tmp_path):
    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(0).standard_normal((20, 6)).astype(np.float32))
    out = call(client, "/upload", handle_file(str(path)))
    assert out.value("table-source") == "upload" and out.notice == ""
    assert "row numbers" in out.value("tables-info") and "6 dimensions" in out.value("tables-info")
    table = embed(client, "3 7 19")["token-table"]
    assert [row[1] for row in table["data"][1:4]] == [3, 7, 19]


def test_hostile_pickle_is_refused_and_nothing_changes(client, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    path = tmp_path / "weights.pt"
    path.write_bytes(pickle.dumps(Payload()))
    embed(client, "safe and sound")
    before = fingerprint(client)
    out = call(client, "/upload", handle_file(str(path)))
    assert "never loaded because loading them could run code on the server" in out.notice
    assert out["upload-table"] is None and out.value("table-source") == "random"
    assert not marker.exists()
    assert fingerprint(client) == before


def test_training_in_one_session_leaves_another_alone(app_url, client):
    other = Client(app_url, verbose=False)
    theirs_before = embed(other, "the cat and the dog")["token-table"]
    embed(client, "the cat and the dog")
    out = call(client, "/train", 30, "builtin")
    assert len(figure(out["loss-plot"])["data"][0]["x"]["bdata"]) > 0
    summary = out.value("train-summary")
    assert "purity" in summary and "30 steps" in summary
    assert "before training" in trace_names(out["embed-plot"])
    assert embed(other, "the cat and the dog, again")["token-table"]["data"][:5] == theirs_before["data"][:5]
    out = call(client, "/reset")
    assert "before training" not in trace_names(out["embed-plot"])
    assert out.value("train-summary") == "" and out.value("loss-plot") is None


@pytest.mark.parametrize(("steps", "message"), [(0, "Value 0 is less than minimum value 1."),
                                                (-5, "Value -5 is less than minimum value 1."),
                                                (10**9, "Value 1000000000 is greater than maximum value 2000.")])
def test_training_steps_out_of_range_are_refused_by_the_box(client, steps, message):
    before = fingerprint(client)
    with pytest.raises(AppError) as refused:
        call(client, "/train", steps, "builtin")
    assert str(refused.value) == message  # the sentence itself, not wrapped or quoted
    assert fingerprint(client) == before


def test_choosing_upload_without_a_file_keeps_the_tables(client):
    embed(client, "kept as it was")
    before = fingerprint(client)
    out = call(client, "/source", "upload")
    assert out.notice == "No file uploaded yet: upload a table first, then choose 'Uploaded file'."
    assert out.value("table-source") == "random"
    assert fingerprint(client) == before
    assert "source" not in query(client)[0]


def test_a_notice_is_plain_text(client):
    out = call(client, "/select", "<img src=x onerror=alert(1)>")
    assert "<img" not in out["notice"] and "&lt;img" in out["notice"]
    assert out.notice.startswith("token must be a whole number from 0 to 2,047, not '<img src=x onerror=")


def test_fingerprint_covers_the_view_and_the_tables_and_changes_only_with_them(client):
    first = fingerprint(client)
    assert fingerprint(client) == first
    call(client, "/arrows", True)
    arrows = fingerprint(client)
    # "view hash-tables hash": a view setting changes the first part only
    assert arrows != first and arrows.split("-")[-1] == first.split("-")[-1]
    call(client, "/arrows", True)
    assert fingerprint(client) == arrows  # the same value again changes nothing
    settings(client, d_model=16)
    assert fingerprint(client).split("-")[-1] != first.split("-")[-1]


def test_files_outside_the_app_are_not_served(app_url):
    import httpx

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


def test_a_crashing_callback_leaves_every_session_working(app_url, client, monkeypatch):
    from core.plane import pipeline

    real = pipeline.explore

    def flaky(session, a, b, groups, **options):
        if a == "boom":
            raise RuntimeError("an unexpected fault inside the update")
        return real(session, a, b, groups, **options)

    monkeypatch.setattr(pipeline, "explore", flaky)
    other = Client(app_url, verbose=False)
    embed(client, "calm before")
    before = fingerprint(client)
    with pytest.raises(AppError) as refused:
        embed(client, "boom")
    # the user sees no stack trace and no internals, only that it failed
    assert "Traceback" not in str(refused.value) and "unexpected fault" not in str(refused.value)
    assert fingerprint(client) == before
    assert "calm" in tokens_in(embed(client, "calm again")["embed-plot"])
    assert "others" in tokens_in(embed(other, "others carry on")["embed-plot"])
    # the failed change was not swapped in: the link still names the sentence before it
    assert "boom" not in query(client)[0]


def test_importing_the_app_leaves_scikit_learn_and_the_presets_for_later():
    # scikit-learn is about 2 s of the server's start: `python app.py` imports it once the server is up
    code = ("import sys, app, core.tables.presets as p; print('sklearn' in sys.modules, "
            "p._bert_source.cache_info().currsize, p._glove_source.cache_info().currsize)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"})
    assert done.stdout.split()[-3:] == ["False", "0", "0"]
