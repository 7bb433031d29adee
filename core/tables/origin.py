"""Where a layer's tables came from, as a script reads them again (`core.drawing.code`).

A session records, with each upload, the file and the tables of the page it came to (`Upload`
over a `Layer`), so the page's script can rebuild the same layer outside the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.view.state import WORDPIECE_VOCAB_SIZE, Settings

if TYPE_CHECKING:
    from core.tables.uploads import UploadedTable

MARKERS = ("[UNK]", "[CLS]", "[SEP]")  # the rows a word table adds after its words, in this order
SPARE_ROWS = len(MARKERS)
PRESET_MAXLEN = 512  # the position rows of BERT's table, and of GloVe's random one (core.tables.presets)
PRESETS = {"bert": (WORDPIECE_VOCAB_SIZE, 384), "glove": (400_003, 50)}  # their token tables' rows and width


@dataclass(frozen=True)
class Layer:
    """Which tables a layer has: a source's (a seeded random layer, BERT's, GloVe's, or an uploaded
    file's over the tables of the page it came to) and the position table chosen for it."""

    source: str
    settings: Settings
    positions: str
    upload: Upload | None = None

    @property
    def width(self) -> int:
        if self.source in PRESETS:
            return PRESETS[self.source][1]
        return self.upload.width if self.source == "upload" else self.settings.d_model

    @property
    def words(self) -> str:
        """How its tokenizer reads text: "wordpiece", "counter" (Counter of the typed words),
        "vocab" (a list of words: GloVe's, a file's) or "rows" (row numbers)."""
        if self.source == "random":
            return "wordpiece" if self.settings.tokenizer == "wordpiece" else "counter"
        if self.source != "upload":
            return "wordpiece" if self.source == "bert" else "vocab"
        file = self.upload
        if file.rows == WORDPIECE_VOCAB_SIZE and not file.words:
            return "wordpiece"
        return "vocab" if file.words else "rows"

    @property
    def rows(self) -> int:
        """Rows of its token table."""
        if self.source == "random":
            return self.settings.table_rows
        if self.source in PRESETS:
            return PRESETS[self.source][0]
        return self.upload.rows + (0 if self.words == "wordpiece" else SPARE_ROWS)

    @property
    def sizes(self) -> tuple[int, int]:
        """Rows of its position and segment tables (a token table's upload keeps its page's)."""
        if self.source == "upload":
            file = self.upload
            return (file.maxlen, file.segments) if file.kind == "bert" else file.over.sizes
        return (self.settings.maxlen, self.settings.n_segments) if self.source == "random" else (PRESET_MAXLEN, 2)

    @property
    def maxlen(self) -> int:
        return self.sizes[0]

    @property
    def segments(self) -> int:
        return self.sizes[1]

    @property
    def bert_norm(self) -> bool:
        """Whether its LayerNorm is a BERT checkpoint's (eps 1e-12)."""
        if self.source == "upload":
            file = self.upload
            return file.kind == "bert" or (file.width == file.over.width and file.over.bert_norm)
        return self.source == "bert"


@dataclass(frozen=True)
class Upload:
    """An uploaded file, as a script reads it again (`core.tables.uploads.UploadedTable`): its name,
    format and shape, and the layer whose position, segment and LayerNorm tables it keeps."""

    name: str
    format: str  # a `core.tables.uploads.Format`
    kind: str  # "bert": a whole layer; "token": a token table
    words: bool  # whether its rows have words (word vectors)
    rows: int  # of its token table, without the markers' rows
    width: int
    maxlen: int  # "bert": its own position table's rows
    segments: int
    over: Layer  # the tables of the page it came to
    seed: int  # their random tables' seed: new position and segment tables are drawn from it (+1, +2)


def upload_origin(upload: UploadedTable, tables: tuple[str, Settings, str], base: Upload | None) -> Upload:
    """How a script reads `upload` again, come to a page whose `tables` are (source, settings,
    positions), over `base`, the file those tables came from when they are an upload's."""
    source, settings, positions = tables
    over = Layer(source, settings, positions, base if source == "upload" else None)
    if upload.kind == "bert":
        config = upload.embedding.config
        rows, width, maxlen, segments = config.vocab_size, config.d_model, config.maxlen, config.n_segments
    else:
        (rows, width), maxlen, segments = upload.token_table.shape, 0, 0
    return Upload(upload.name or "table", upload.format, upload.kind, upload.words is not None, rows, width, maxlen,
                  segments, over, settings.seed)
