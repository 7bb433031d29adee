"""The selected token's neighbours at encoder layer K (core/plane/pipeline.py `_layer_neighbours`): the tokens
of the pair nearest it after layer K by the cosine of their layer-K vectors, as transformers' own MiniLM-L6
computes hidden state K; starred on their layer-K points, its own layer-K point ringed, the list under the
neighbours saying "after layer K"; at layer 0 the vocabulary's neighbours as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from core.drawing.captions import layer_neighbours_text
from core.drawing.figures import LAYER_NEAR, NEIGHBOURS, SELECTED, embedding_spec
from core.model.checkpoints import minilm_dir
from core.plane.layers import apart_at
from core.plane.pipeline import explore
from core.plane.scene import LAYER
from core.tables.session import Session

RIVER, ROBBED = "the river bank was muddy", "the bank was robbed"


@pytest.fixture(scope="module")
def bert() -> Session:
    return Session.create(source="bert")


@pytest.fixture(scope="module")
def hugging_face():
    from transformers import BertModel

    return BertModel.from_pretrained(str(minilm_dir()), local_files_only=True, attn_implementation="eager").eval()


def _hidden(model, ids: list[int], segments: list[int]) -> np.ndarray:
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([segments]), output_hidden_states=True)
    return torch.cat(out.hidden_states).numpy().astype(np.float64)  # (layers + 1, L, d)


def _their_states(model, bert: Session, reading: str) -> np.ndarray:
    """Hidden states 0 to 6 of the pair as transformers computes them: one sequence, or each sentence on its own."""
    encoding = bert.encode(RIVER, ROBBED)
    split = apart_at(encoding.tokens, reading)
    if split is None:
        return _hidden(model, list(encoding.ids), list(encoding.segment_ids))
    a = _hidden(model, list(encoding.ids[:split]), [0] * split)
    alone = [encoding.ids[0], *encoding.ids[split:]]
    return np.concatenate([a, _hidden(model, alone, [0] * len(alone))[:, 1:]], axis=1)


@pytest.mark.parametrize(("layer", "reading"), [(6, "apart"), (3, "pair"), (1, "apart")])
@pytest.mark.parametrize("selected", [3, 8])  # the river's bank, the robbed one
def test_the_neighbours_at_layer_k_are_the_pair_s_tokens_by_the_cosine_of_hugging_face_s_hidden_state_k(
        bert, hugging_face, layer, reading, selected):
    run = explore(bert, RIVER, ROBBED, selected=selected, k=4, layer=layer, reading=reading)
    states = _their_states(hugging_face, bert, reading)[layer]
    unit = states / np.linalg.norm(states, axis=1, keepdims=True)
    theirs = unit @ unit[selected]  # every token's cosine with the selected one, computed apart from the app
    near = run.scene.neighbourhood
    assert set(near.points) == {LAYER} and near.selected == selected and len(near.tokens) == 4
    assert np.abs(near.cosines[LAYER] - theirs[list(near.tokens)]).max() < 1e-5
    words = [i for i, special in enumerate(run.scene.special_mask) if not special and i != selected]
    assert set(near.tokens) <= set(words)  # neither itself nor a marker
    best = sorted(words, key=lambda i: -theirs[i])[:4]  # the same four, in the same order (up to near ties)
    assert [round(theirs[i], 4) for i in near.tokens] == [round(theirs[i], 4) for i in best]
    assert near.labels[LAYER] == tuple(f"{run.scene.tokens[i]} ({i})" for i in near.tokens)
    assert run.neighbours == {LAYER: tuple((label, round(float(c), 3)) for label, c in
                                           zip(near.labels[LAYER], near.cosines[LAYER], strict=True))}
    # their stars are their layer-K points, and the selected token's layer-K point is ringed
    points = np.asarray(run.scene.hidden.points[-1], dtype=np.float32)
    figure = embedding_spec(run.scene, panels="split")
    stars = next(t for t in figure["data"] if t["name"] == LAYER_NEAR.format(layer))
    group = next(t for t in figure["data"] if t["name"] == f"layer {layer}")
    assert (stars.get("xaxis"), stars.get("yaxis")) == (group.get("xaxis"), group.get("yaxis"))
    assert np.array_equal(np.column_stack([stars["x"], stars["y"]]), points[list(near.tokens)])
    assert np.allclose(stars["customdata"], near.cosines[LAYER])
    assert f"nearest to bank after layer {layer}" in stars["hovertemplate"]
    rings = np.concatenate([np.column_stack([t["x"], t["y"]]) for t in figure["data"] if t["name"] == SELECTED])
    assert any(np.array_equal(ring, points[selected]) for ring in rings)
    assert not [t for t in figure["data"] if t["name"] in NEIGHBOURS.values()]  # no vocabulary's neighbours
    said = layer_neighbours_text(run.scene).replace("\\", "")
    assert said.startswith(f"Nearest to **bank** after layer {layer}, by the cosine of the pair's "
                           f"layer-{layer} vectors")
    for label, cosine in zip(near.labels[LAYER], near.cosines[LAYER], strict=True):
        assert f"{label} {cosine:.3f}" in said


def test_at_layer_0_the_neighbours_are_the_vocabulary_s_as_before_and_k_0_at_layer_k_still_rings(bert):
    run = explore(bert, RIVER, ROBBED, selected=3, k=5)
    assert set(run.neighbours) == set(run.scene.neighbourhood.points) == {"token", "output"}
    assert layer_neighbours_text(run.scene) == ""
    names = [t["name"] for t in embedding_spec(run.scene)["data"]]
    assert set(NEIGHBOURS.values()) <= set(names) and not [n for n in names if n.startswith("nearest after")]
    # k = 0 at layer K: no neighbours, but its layer-K point is ringed with its token and output points
    still = explore(bert, RIVER, ROBBED, selected=3, k=0, layer=2)
    assert still.neighbours is None and still.scene.neighbourhood is None
    figure = embedding_spec(still.scene, panels="one")
    (ring,) = [t for t in figure["data"] if t["name"] == SELECTED]
    assert len(ring["x"]) == 3 and [ring["x"][-1], ring["y"][-1]] == list(
        np.asarray(still.scene.hidden.points[-1], dtype=np.float32)[3])
    assert not [t for t in embedding_spec(explore(bert, RIVER, ROBBED, k=0, layer=2).scene)["data"]
                if t["name"] == SELECTED]


def test_in_the_3d_view_the_layer_s_neighbours_and_ring_turn_with_it(bert):
    run = explore(bert, RIVER, ROBBED, selected=8, k=3, layer=4, components=3)
    figure = embedding_spec(run.scene)
    stars = next(t for t in figure["data"] if t["name"] == LAYER_NEAR.format(4))
    points = np.asarray(run.scene.hidden.points[-1], dtype=np.float32)
    assert stars["type"] == "scatter3d"
    assert np.array_equal(np.column_stack([stars[a] for a in "xyz"]), points[list(run.scene.neighbourhood.tokens)])
    (ring,) = [t for t in figure["data"] if t["name"] == SELECTED]
    assert np.array_equal(np.column_stack([ring[a] for a in "xyz"])[-1], points[8])


def test_the_html_export_stars_the_same_tokens_with_the_same_cosines(bert, tmp_path):
    """The exported figure is the page's: at layer K its stars are the pair's nearest tokens after layer K."""
    from core.drawing.export import export_view
    from core.view.state import View

    view = View(sentence_a=RIVER, sentence_b=ROBBED, source="bert", layer=6, reading="apart", token=3, k=3)
    run = explore(bert, RIVER, ROBBED, selected=3, k=3, layer=6, reading="apart")
    files = export_view(tmp_path / "export", view, bert)
    page = Path(next(path for path in files if path.endswith(".html"))).read_text(encoding="utf-8")
    assert '"name":"nearest after layer 6"' in page and '"name":"nearest by token vector"' not in page
    for label in run.scene.neighbourhood.labels[LAYER]:
        assert f'"{label}"' in page
    assert "nearest to bank after layer 6" in page
