"""The launched app through its API, as gradio_client sees it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gradio_client.exceptions import AppError

from core.embedding import COMPONENTS

ALL = list(COMPONENTS)
ROOT = Path(__file__).resolve().parents[1]


def traces(plot) -> list[dict]:
    """The plot's traces from what the API returns for a gr.Plot."""
    return json.loads(plot["plot"])["data"]


def tokens_in(plot) -> set[str]:
    return {token for trace in traces(plot) for token in trace.get("hovertext") or ()}


def embed(client, a, b="", groups=ALL, labels=True, arrows=False):
    return client.predict(a, b, groups, labels, arrows, api_name="/embed")[:3]  # plot, summary, token table


def test_embed_returns_the_typed_tokens_in_five_groups(client):
    plot, info, table = embed(client, "The zebra grazed.", "Lions watched.")
    names = [t["name"] for t in traces(plot)]
    assert names == ALL
    assert {"zebra", "lions", "[CLS]", "[SEP]"} <= tokens_in(plot)
    assert "tokens" in info
    assert [row[0] for row in table["data"]][:3] == ["[CLS]", "the", "zebra"]


def test_embed_parameters_are_named_for_the_contract(client):
    params = [
        p["parameter_name"]
        for p in client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/embed"]["parameters"]
    ]
    assert params[:2] == ["sentence_a", "sentence_b"]


def test_arrows_add_an_addition_path(client):
    plot, _, _ = embed(client, "tip to tail", arrows=True)
    assert "addition path" in [t["name"] for t in traces(plot)]


def test_bad_settings_give_a_message_and_keep_the_session(client):
    before = embed(client, "same words")[2]
    # the slider refuses it first; core would say "d_model is 4,096; allowed values are 1 to 1,024"
    with pytest.raises(AppError, match=r"4096 is greater than maximum value 1024"):
        client.predict("wordpiece", 1000, 4096, 512, 2, 0, api_name="/settings")
    with pytest.raises(AppError, match=r"'bpe'.* is not in the list of choices"):
        client.predict("bpe", 1000, 16, 512, 2, 0, api_name="/settings")
    after = embed(client, "same words")[2]
    assert after == before


def test_sessions_do_not_share_settings(app_url, client):
    from gradio_client import Client

    other = Client(app_url, verbose=False)
    client.predict("wordpiece", 1000, 8, 512, 2, 0, api_name="/settings")
    mine = embed(client, "private words")[2]
    theirs = embed(other, "private words")[2]
    # the output column holds |output| = sqrt(d_model) under LayerNorm's identity affine
    assert mine["data"][1][-1] == pytest.approx(8**0.5, rel=1e-2)
    assert theirs["data"][1][-1] == pytest.approx(32**0.5, rel=1e-2)


def test_listing_button_sets_the_documents_layer(client):
    values = client.predict(api_name="/listing")
    assert list(values[:7]) == ["random", "word", 10, 2, 512, 2, 0]
    assert values[7] == "i am new to PyTorch i am having fun"


def test_bert_source_then_back(client):
    client.predict("bert", api_name="/source")
    _, _, table = embed(client, "The king spoke.")
    assert [row[1] for row in table["data"][:3]] == [101, 1996, 2332]
    # BERT's LayerNorm has learned gamma/beta, so output norms are no longer sqrt(d)
    assert table["data"][1][-1] != pytest.approx(384**0.5, rel=1e-2)
    client.predict("random", api_name="/source")
    assert embed(client, "The king spoke.")[2]["data"][1][-1] == pytest.approx(32**0.5, rel=1e-2)


def test_upload_a_matrix_then_type_row_numbers(client, tmp_path):
    import numpy as np
    from gradio_client import handle_file

    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(0).standard_normal((20, 6)).astype(np.float32))
    source, info, *_ = client.predict(handle_file(str(path)), api_name="/upload")
    assert source == "upload"
    assert "row numbers" in info and "6 dimensions" in info
    _, _, table = embed(client, "3 7 19")
    assert [row[1] for row in table["data"][1:4]] == [3, 7, 19]


def test_hostile_pickle_is_refused_and_nothing_changes(client, tmp_path):
    import pickle

    from gradio_client import handle_file

    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    path = tmp_path / "weights.pt"
    path.write_bytes(pickle.dumps(Payload()))
    before = embed(client, "safe and sound")[2]
    with pytest.raises(AppError, match="could run code|Python objects"):
        client.predict(handle_file(str(path)), api_name="/upload")
    assert not marker.exists()
    assert embed(client, "safe and sound")[2] == before


def test_training_in_one_session_leaves_another_alone(app_url, client):
    from gradio_client import Client

    other = Client(app_url, verbose=False)
    theirs_before = embed(other, "the cat and the dog")[2]
    loss_plot, summary = client.predict(30, "builtin", "", "", api_name="/train")
    assert len(traces(loss_plot)[0]["x"]["bdata"]) > 0
    assert "purity" in summary and "30 steps" in summary
    mine = embed(client, "the cat and the dog")
    assert "before training" in [t["name"] for t in traces(mine[0])]
    assert embed(other, "the cat and the dog")[2] == theirs_before
    client.predict(api_name="/reset")
    assert "before training" not in [t["name"] for t in traces(embed(client, "the cat")[0])]


@pytest.mark.parametrize(
    ("steps", "message"),
    [(0, "Training steps is 0; choose 1 to 2,000."), (-5, "Training steps is -5; choose 1 to 2,000.")],
)
def test_bad_training_steps_explain_the_range(client, steps, message):
    with pytest.raises(AppError) as refused:
        client.predict(steps, "builtin", "", "", api_name="/train")
    assert str(refused.value) == message  # the sentence itself, not wrapped or quoted


def test_huge_training_steps_are_capped(client):
    _, summary = client.predict(10**9, "mine", "a tiny corpus", "of two lines", api_name="/train")
    assert "Trained 2000 steps" in summary


def test_choosing_upload_without_a_file_keeps_the_tables(client):
    before = embed(client, "kept as it was")[2]
    source, info, *_ = client.predict("upload", api_name="/source")
    assert source == "random" and info.startswith("**Random")
    assert embed(client, "kept as it was")[2] == before


def test_fingerprint_changes_with_the_tables_and_only_then(client):
    first = client.predict(api_name="/fingerprint")
    assert client.predict(api_name="/fingerprint") == first
    client.predict("wordpiece", 1000, 16, 512, 2, 0, api_name="/settings")
    assert client.predict(api_name="/fingerprint") != first


def test_files_outside_the_app_are_not_served(app_url):
    import httpx

    app_file = str(Path(__file__).resolve().parents[1] / "app.py")
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
    from gradio_client import Client

    from ui import render  # the page's rendering calls the pipeline through this name

    real = render.explore

    def flaky(session, a, b, groups, **options):
        if a == "boom":
            raise RuntimeError("an unexpected fault inside the update")
        return real(session, a, b, groups, **options)

    monkeypatch.setattr(render, "explore", flaky)
    other = Client(app_url, verbose=False)
    before = client.predict(api_name="/fingerprint")
    with pytest.raises(AppError) as refused:
        embed(client, "boom")
    # the user sees no stack trace and no internals, only that it failed
    assert "Traceback" not in str(refused.value) and "unexpected fault" not in str(refused.value)
    assert client.predict(api_name="/fingerprint") == before
    assert "calm" in tokens_in(embed(client, "calm again")[0])
    assert "others" in tokens_in(embed(other, "others carry on")[0])


def test_importing_the_app_leaves_scikit_learn_and_the_presets_for_later():
    # scikit-learn is about 2 s of the server's start: `python app.py` imports it once the server is up
    code = ("import sys, app, core.presets as p; print('sklearn' in sys.modules, "
            "p._bert_source.cache_info().currsize, p._glove_source.cache_info().currsize)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"})
    assert done.stdout.split()[-3:] == ["False", "0", "0"]
