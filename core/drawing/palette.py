"""The colours a figure is drawn in, one `Palette` per theme of the page (`View.theme`).

The light theme is the page as it always was (plotly_white, the Okabe–Ito groups); the projector
theme is a dark plot on a dark page whose every label and legend text reads at 4.5:1 or more
against the plot (WCAG AA), since a projector in a lit hall washes out what is faint. A figure
takes its palette from the view, so the page, its PNG and its export are drawn alike; `contrast`
is the WCAG ratio the tests check every projector colour with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import plotly.io as pio

_KEPT = ("font", "hovermode", "hoverlabel", "paper_bgcolor", "plot_bgcolor", "xaxis", "yaxis")


def _template(name: str, **layout) -> dict:
    """Plotly's template `name` for a 2-D scatter plot only: the full template also styles heatmaps,
    maps, 3-D scenes, …, which would add kilobytes to every update and, since plotly walks it when
    serialising, most of a small figure's build time."""
    kept = {key: value for key, value in pio.templates[name].layout.to_plotly_json().items() if key in _KEPT}
    return {"layout": {**kept, **layout}}


def _template_3d(template: dict, name: str, **scene) -> dict:
    """The 2-D template with the 3-D scene's part of plotly's template `name` (its axes' colours)."""
    axes = pio.templates[name].layout.scene.to_plotly_json()
    return {"layout": {**template["layout"], "scene": {**axes, **scene}}}


@dataclass(frozen=True)
class Palette:
    """Every colour a figure of the page is drawn in (sizes are the audience's: figures.py `_Scale`)."""

    name: str  # its key in THEMES (core.view.options)
    plotly: str  # the plotly template it starts from (a script of the view names it: core/drawing/code.py)
    background: str  # the plot's and the figure's ground, #rrggbb: what every text is measured against
    ink: str  # the figure's own text (ticks, axis titles, legend): the template's font colour
    colours: Mapping[str, str]  # a colour per group of the plane (token, position, segment, sum, output)
    template: dict  # the 2-D template (plotly's, cut to what a scatter plot reads)
    template_3d: dict
    note_fill: str  # behind the plot's notes, so a point under one does not blur its text
    note_ink: str  # the marker key's and the class notes' text
    message_fill: str  # behind the projection's message, in the template's ink
    title_ink: str  # the panels' titles and the magnification note
    ring: str  # the selected token's ring
    class_fill: str  # a class's words (core/plane/classwords.py): the one colour the groups leave free
    class_ink: str  # their outline and labels
    # the tokens after encoder layer K (core/plane/layers.py), their labels, and their faint paths from layer 0
    layer: str = "#332288"  # Paul Tol's indigo: darker than the token blue, apart from the output's purple
    layer_path: str = "rgba(51,34,136,0.35)"
    label_halo: str = "#fff"  # the outline round each label the page writes (assets/labels.js)
    label_count: str = "#666"  # "12 of 30 labelled", under the plot
    # the side charts (core/drawing/charts.py)
    strong: str = "#000000"  # LayerNorm's γ: the one line in no group's colour but the ink's
    chart_ink: str = "#444444"  # a chart's notes, and the collapse's two targets
    rule: str = "#666666"  # a chart's reference lines (std 1, the collapse's diagonal)
    # light to dark orange (the position group's hue) on a light plot, dark to light on a dark one: the
    # path's direction reads without a legend, and its last position's number in the strongest
    position_scale: tuple = ((0.0, "#FDD0A2"), (0.5, "#F16913"), (1.0, "#7F2704"))


# Okabe–Ito: distinguishable with every common form of colour blindness
_LIGHT_GROUPS = {
    "token": "#0072B2",     # blue
    "position": "#E69F00",  # orange
    "segment": "#009E73",   # bluish green
    "sum": "#D55E00",       # vermillion
    "output": "#CC79A7",    # reddish purple
}
_LIGHT_TEMPLATE = _template("plotly_white")
LIGHT = Palette(
    name="light", plotly="plotly_white", background="#ffffff", ink="#2a3f5f", colours=_LIGHT_GROUPS,
    template=_LIGHT_TEMPLATE,
    template_3d=_template_3d(_LIGHT_TEMPLATE, "plotly_white"),
    note_fill="rgba(255,255,255,0.8)", note_ink="#666", message_fill="rgba(255,255,255,0.85)",
    title_ink="#444", ring="#222",
    class_fill="rgba(86,180,233,0.55)",  # Okabe–Ito's sky blue
    class_ink="#00406b",  # dark enough to read on white (WCAG AA)
)

# the same hues, lighter where Okabe–Ito's are too dark on black (blue 3.6:1, vermillion 4.9:1 is
# too near the line for a washed-out projector); the token group takes the sky blue, so a class's
# words take Okabe–Ito's yellow, the one colour left free
_PROJECTOR_GROUND = "#111111"  # plotly_dark's
_PROJECTOR_GROUPS = {
    "token": "#56B4E9",     # sky blue
    "position": "#E69F00",  # orange
    "segment": "#00C896",   # bluish green
    "sum": "#FF7F2A",       # vermillion
    "output": "#E58FC0",    # reddish purple
}
_PROJECTOR_TEMPLATE = _template("plotly_dark", paper_bgcolor=_PROJECTOR_GROUND, plot_bgcolor=_PROJECTOR_GROUND)
PROJECTOR = Palette(
    name="projector", plotly="plotly_dark", background=_PROJECTOR_GROUND, ink="#f2f5fa", colours=_PROJECTOR_GROUPS,
    template=_PROJECTOR_TEMPLATE, template_3d=_template_3d(_PROJECTOR_TEMPLATE, "plotly_dark"),
    note_fill="rgba(17,17,17,0.8)", note_ink="#c8c8c8", message_fill="rgba(17,17,17,0.85)",
    title_ink="#e0e0e0", ring="#f2f2f2",
    class_fill="rgba(240,228,66,0.55)", class_ink="#F0E442",
    label_halo=_PROJECTOR_GROUND, label_count="#c8c8c8",
    layer="#A99CFF", layer_path="rgba(169,156,255,0.4)",  # the indigo, lightened: 8.0:1 on the ground
    strong="#f2f5fa", chart_ink="#e0e0e0", rule="#aaaaaa",
    position_scale=((0.0, "#7F2704"), (0.5, "#F16913"), (1.0, "#FDD0A2")),
)

# the layer group's marker, a shape no other group draws (a [CLS]/[SEP] keeps its diamond, a ## piece is open);
# plotly's 3-D scene has no hexagon, so there it is a square
LAYER_MARKER, LAYER_MARKER_3D = "hexagon", "square"

PALETTES = MappingProxyType({palette.name: palette for palette in (LIGHT, PROJECTOR)})


def palette(theme: str) -> Palette:
    """The palette of a view's theme (a key of core.view.options.THEMES)."""
    return PALETTES[theme]


def luminance(colour: str) -> float:
    """WCAG 2.2's relative luminance of "#rgb", "#rrggbb", "rgb(r,g,b)" or "white"."""
    r, g, b = rgb(colour)
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r / 255, g / 255, b / 255)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(one: str, other: str) -> float:
    """WCAG 2.2's contrast ratio of two colours, from 1 to 21 (AA asks 4.5 of text)."""
    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def rgb(colour: str) -> tuple[int, int, int]:
    """A CSS colour as written here or by a browser's computed style: #rgb, #rrggbb, rgb(), rgba()
    (its alpha ignored) or white; a ValueError for anything else."""
    text = colour.strip().lower()
    if text == "white":
        return 255, 255, 255
    if text.startswith("#") and len(text) in (4, 7):
        digits = text[1:] if len(text) == 7 else "".join(c * 2 for c in text[1:])
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if text.startswith(("rgb(", "rgba(")) and text.endswith(")"):
        parts = text[text.index("(") + 1:-1].replace("/", ",").replace(" ", ",").split(",")
        values = [float(part) for part in parts if part]
        return round(values[0]), round(values[1]), round(values[2])
    raise ValueError(f"colour {colour!r}: write it as #rgb, #rrggbb or rgb(r, g, b)")
