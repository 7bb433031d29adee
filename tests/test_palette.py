"""The themes' palettes: the projector's every text colour reads at 4.5:1 against its plot (WCAG AA),
computed from the colours themselves, and a figure or a side chart is drawn in the palette it is given."""

import numpy as np
import pytest

from core.drawing.charts import LOSS_LAYOUT, collapse_figure, loss_spec, positions_figure, similarity_figure
from core.drawing.figures import embedding_spec
from core.drawing.palette import LIGHT, PALETTES, PROJECTOR, contrast, luminance, rgb
from core.plane.scene import GROUPS, Scene
from core.view.options import THEMES

AA = 4.5  # WCAG 2.2 AA, normal text


def test_wcag_contrast_is_computed_as_the_standard_defines_it():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the grey just short of AA
    assert contrast("#fff", "white") == 1.0 and luminance("#808080") == pytest.approx(0.2159, abs=1e-4)
    assert rgb("rgb(17, 17, 17)") == rgb("rgba(17,17,17,0.5)") == rgb("#111") == (17, 17, 17)
    with pytest.raises(ValueError, match="#rrggbb"):
        rgb("teal")


def test_every_theme_has_a_palette():
    assert set(PALETTES) == set(THEMES)
    assert all(palette.name == name for name, palette in PALETTES.items())


def test_the_palettes_ground_is_the_plot_its_template_draws():
    for palette in PALETTES.values():
        layout = palette.template["layout"]
        assert rgb(layout["plot_bgcolor"]) == rgb(layout["paper_bgcolor"]) == rgb(palette.background)
        assert rgb(layout["font"]["color"]) == rgb(palette.ink)


def test_the_projector_is_a_dark_plot():
    assert luminance(PROJECTOR.background) < 0.01 < 0.9 < luminance(LIGHT.background)


def _texts(palette):
    """Every colour the plane writes text in: the groups' (their labels and legend), a class's words,
    the template's ink (ticks, titles, legend), the notes and the labels' count."""
    return {**{f"group {g}": c for g, c in palette.colours.items()}, "class": palette.class_ink, "ink": palette.ink,
            "note": palette.note_ink, "title": palette.title_ink, "count": palette.label_count,
            # the side charts': γ's line, their notes, their rules, the positions path's numbers
            "strong": palette.strong, "chart ink": palette.chart_ink, "rule": palette.rule,
            "last position": palette.position_scale[-1][1],
            # the encoder layer's group and its labels (core/plane/layers.py)
            "layer": palette.layer}


@pytest.mark.parametrize("name", list(_texts(PROJECTOR)))
def test_every_projector_text_colour_reads_at_aa_on_its_plot(name):
    colour = _texts(PROJECTOR)[name]
    assert contrast(colour, PROJECTOR.background) >= AA, f"{name} {colour}"


def test_the_projector_keeps_each_group_its_own_colour():
    assert list(PROJECTOR.colours) == list(LIGHT.colours) == list(GROUPS)
    assert len(set(PROJECTOR.colours.values()) | {PROJECTOR.class_ink}) == len(GROUPS) + 1


def test_the_light_palette_is_the_figures_own():
    spec = embedding_spec(_scene())  # drawn without a palette: the light theme's
    assert spec["layout"]["template"] is LIGHT.template
    assert {t["name"]: t["marker"]["color"] for t in spec["data"] if t["name"] in GROUPS} == dict(LIGHT.colours)


def _scene() -> Scene:
    rng = np.random.default_rng(1)
    n = 6
    tokens = ("[CLS]", "a", "b", "c", "d", "[SEP]")
    return Scene(tokens=tokens, ids=tuple(range(n)), positions=tuple(range(n)), segment_ids=(0,) * n,
                 special_mask=tuple(t.startswith("[") for t in tokens), continuation_mask=(False,) * n,
                 points={g: rng.standard_normal((n, 2)) for g in GROUPS}, norms={g: rng.random(n) for g in GROUPS},
                 explained=(0.5, 0.2), origin=np.zeros(2))


@pytest.mark.parametrize("palette", list(PALETTES.values()), ids=list(PALETTES))
def test_a_figure_is_drawn_in_its_palette(palette):
    spec = embedding_spec(_scene(), palette=palette, compact=True)
    assert spec["layout"]["template"] is palette.template
    drawn = {trace["name"]: trace["marker"]["color"] for trace in spec["data"] if trace["name"] in GROUPS}
    assert drawn == palette.colours
    labels = spec["layout"]["meta"]["labels"]
    assert {name: labels["colours"][name] for name in GROUPS} == palette.colours
    # the page's labels take the theme's halo and count: the light figure says nothing of them, as before
    assert spec["layout"]["meta"].get("ink") == (None if palette is LIGHT else
                                                 {"halo": PROJECTOR.label_halo, "count": PROJECTOR.label_count,
                                                  "ring": PROJECTOR.ring})


@pytest.mark.parametrize("palette", list(PALETTES.values()), ids=list(PALETTES))
def test_the_side_charts_are_drawn_in_their_palette(palette):
    rng = np.random.default_rng(2)
    tokens = ["a", "b", "c"]
    charts = [similarity_figure(tokens, np.eye(3), palette=palette),
              positions_figure({"learned": rng.standard_normal((5, 2))}, palette=palette),
              collapse_figure(rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), tokens, palette=palette),
              loss_spec([2.0, 1.0], steps=5, palette=palette)]
    assert all(chart["layout"]["template"] is palette.template for chart in charts)
    ends = next(trace for trace in charts[1]["data"] if trace["name"].endswith("ends"))
    assert ends["textfont"]["color"] == palette.position_scale[-1][1]
    drawn = {trace["name"]: trace["marker"]["color"] for trace in charts[2]["data"] if trace.get("marker")}
    assert (drawn["before (sum)"], drawn["after (output)"]) == (palette.colours["sum"], palette.colours["output"])
    assert charts[3]["data"][0]["line"]["color"] == palette.colours["token"]
    assert (loss_spec([1.0], palette=palette)["layout"] is LOSS_LAYOUT) == (palette is LIGHT)  # the light one shared
