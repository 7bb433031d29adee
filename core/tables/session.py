"""One user's state: which tables they look at, what is frozen, what they trained.

A `Session` is immutable. Every change builds a new one, so a change that fails halfway
leaves the old session untouched — the app swaps the new one in only when it is complete.
Tables come from `core.tables.presets` and are shared read-only; the only table a session owns is
the copy it trained.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

from core.model.embedding import BertEmbedding
from core.model.projection import PCAProjection
from core.model.tokenizer import Encoding, WordLevelTokenizer, WordPieceTokenizer
from core.model.training import PARTS, Corpus, Run, TrainConfig, TrainResult, train_copy, training_bytes
from core.process.memory import BUDGET
from core.tables.origin import upload_origin
from core.tables.presets import (
    Settings,
    Source,
    preset,
    upload_source,
    with_positions,
)
from core.tables.uploads import UploadedTable
from core.view.options import BASES, POSITIONS, SOURCES, Refused


@dataclass(frozen=True)
class Session:
    settings: Settings
    base: Source  # the chosen tables as they come
    source: Source  # the same with the chosen position table
    positions: str = "learned"
    frozen: frozenset[str] = frozenset()
    uploaded: Source | None = None  # the last uploaded file, kept so the user can switch back
    trained: BertEmbedding | None = None  # this session's own trained copy
    # random word tables have no vocabulary of their own: training fixes one from the corpus
    trained_tokenizer: WordLevelTokenizer | None = field(default=None, repr=False)
    training: TrainResult | None = None
    basis: str = "sentence"  # a key of BASES: which plane the vectors are drawn in
    frozen_basis: PCAProjection | None = field(default=None, repr=False)  # the plane kept while typing
    # the last pair encoded and its encoding: an update encodes its sentences twice (to follow the
    # selection, then to draw), and an encoding is immutable
    _last: tuple | None = field(default=None, init=False, compare=False, repr=False)

    @classmethod
    def create(cls, settings: Settings | None = None, source: str = "random") -> Session:
        settings = settings or Settings()
        base = preset(source, settings)
        return cls(settings, base, base)

    def __deepcopy__(self, memo: dict) -> Session:
        # gradio deep-copies a state's initial value for each new visitor; a session is
        # immutable and its tables are read-only, so sharing it is safe and copies nothing
        return self

    @property
    def model(self) -> BertEmbedding:
        return self.trained if self.trained is not None else self.source.model

    @property
    def tokenizer(self) -> WordPieceTokenizer | WordLevelTokenizer | None:
        return self.trained_tokenizer or self.source.tokenizer

    def tables(self) -> tuple:
        """What decides the tables, in the terms of `core.view.state.View.tables`."""
        return (self.base.key, self.settings, self.positions)

    @property
    def positions_name(self) -> str:
        """What the position table is, in a few words, for the Positions view's title and the tables'
        line: a chosen kind by its name, the source's own by what it is (GloVe's is random: it has none)."""
        return self.base.own_positions if self.positions == "learned" else POSITIONS[self.positions].split(" (")[0]

    @property
    def fixed(self) -> frozenset[str]:
        """Parts training leaves alone: the frozen ones, and sinusoidal positions, which are fixed."""
        return self.frozen | ({"position"} if self.positions == "sinusoidal" else set())

    def encode(self, a: str, b: str) -> Encoding:
        last = self._last
        if last is not None and last[0] == (a, b):
            return last[1]
        maxlen = self.model.config.maxlen
        if self.tokenizer is not None:
            encoding = self.tokenizer.encode(a, b, maxlen=maxlen)
        else:  # the second document builds its vocabulary from the text it embeds
            tokenizer = WordLevelTokenizer.from_text(f"{a}\n{b}", max_size=self.settings.vocab_size)
            encoding = tokenizer.encode(a, b, maxlen=maxlen)
        object.__setattr__(self, "_last", ((a, b), encoding))  # one tuple, swapped whole: safe across threads
        return encoding

    # every change below returns a new session; tables changes discard training

    def with_tables(self, source: str, settings: Settings, positions: str) -> Session:
        """The tables a view names: a source, the random tables' settings, a position table."""
        if source not in SOURCES:
            raise Refused(f"the table source must be one of {', '.join(SOURCES)}, not {source!r}.")
        if source == "upload":
            if self.uploaded is None:
                raise Refused("No file uploaded yet: upload a table first, then choose 'Uploaded file'.")
            base = self.uploaded
        else:
            base = preset(source, settings)
        return self._with_tables(base, settings=settings, positions=positions)

    def adopt_training(self, trained: Session) -> Session:
        """This session with the tables `trained` learned (a training that ran beside other changes)."""
        if trained.tables() != self.tables():
            raise Refused("The tables changed while training ran, so its result was set aside.")
        return replace(self, trained=trained.trained, trained_tokenizer=trained.trained_tokenizer,
                       training=trained.training)

    def with_upload(self, upload: UploadedTable) -> Session:
        uploaded = upload_source(upload, self.source, self.settings.seed)
        uploaded = replace(uploaded, origin=upload_origin(upload, self.tables(), self.base.origin))
        return replace(self._with_tables(uploaded), uploaded=uploaded)

    def with_basis(self, basis: str, frozen: PCAProjection | None = None) -> Session:
        """Draw in another plane; "frozen" keeps ``frozen``, the plane of the moment it was chosen."""
        if basis not in BASES:
            raise ValueError(f"the basis must be one of {', '.join(BASES)}, not {basis!r}.")
        if basis == "frozen" and frozen is None:
            raise Refused("a frozen basis needs the plane to keep; fit one on the current sentence first.")
        return replace(self, basis=basis, frozen_basis=frozen if basis == "frozen" else None)

    def with_frozen(self, parts: Collection[str]) -> Session:
        unknown = [p for p in parts if p not in PARTS]
        if unknown:
            raise ValueError(f"there is no part called {unknown[0]!r}; the parts are {', '.join(PARTS)}.")
        return replace(self, frozen=frozenset(parts))

    def trained_on(
        self,
        corpus: Corpus,
        config: TrainConfig,
        progress: Callable[..., None] | None = None,
        stop: Callable[[], bool] | None = None,
        run: Callable[..., tuple[BertEmbedding, TrainResult]] | None = None,
    ) -> Session:
        """Train a private copy of the current tables (continuing any earlier training); `stop`
        as in `core.model.training.train`. `run(train_copy, …, progress=, stop=)` does the training
        (`core.process.offload.Offload.call` does it in another process); by default here. What it
        holds (`core.model.training.training_bytes`) is reserved in the memory budget first: past the
        budget it is refused with a sentence, `Refused`, and nothing changes.

        `progress(step, steps, losses)` is also passed `frame=`, a session with the tables of
        that step, at a fifth, two, three and four fifths of the way (`core.model.training.train_copy`)."""
        tokenizer = self.tokenizer or WordLevelTokenizer.from_text(
            "\n".join(corpus.sentences), max_size=self.settings.vocab_size
        )

        def trained(model: BertEmbedding, result: TrainResult | None) -> Session:
            return replace(self, trained=model, trained_tokenizer=tokenizer if self.source.tokenizer is None else None,
                           training=result)

        def reported(step: int, steps: int, losses: tuple[float, ...], frame: BertEmbedding | None = None) -> None:
            progress(step, steps, losses, **({} if frame is None else {"frame": trained(frame, None)}))

        arguments = (self.model, self.fixed, corpus, tokenizer, config)
        with BUDGET.reserve(training_bytes(*arguments), "this training's copies of its tables"):
            model, result = (run or _here)(train_copy, *arguments,
                                           progress=reported if progress is not None else None, stop=stop)
        done = Run(result.steps, self.fixed, corpus.sentences, corpus.sentences == Corpus.builtin().sentences)
        return trained(model, replace(result, runs=(*(self.training.runs if self.training else ()), done)))

    def restart(self) -> Session:
        """Untrained tables and the sentence's own plane: how a link or a tour step begins."""
        return replace(self.reset(), basis="sentence", frozen_basis=None)

    def reset(self) -> Session:
        """Back to the source tables, as they were before any training."""
        return replace(self, trained=None, trained_tokenizer=None, training=None)

    def fingerprint(self) -> str:
        """A short hash of everything that decides what this session shows.

        Tests compare it before and after a refused request: equal means the request
        changed nothing. Tables are hashed by content, so a silent edit would show.
        """
        digest = hashlib.sha256()
        digest.update(repr((self.settings, self.base.key, self.positions, sorted(self.frozen), self.basis)).encode())
        if self.frozen_basis is not None:
            digest.update(self.frozen_basis.components_.tobytes())
        digest.update(repr(self.training.losses if self.training else None).encode())
        # the last upload too: the page can switch back to it, so a refused file must not replace it
        for model in (self.model, *(() if self.uploaded is None else (self.uploaded.model,))):
            for tensor in model.state_dict().values():
                digest.update(tensor.detach().contiguous().numpy().tobytes())
        return digest.hexdigest()[:16]

    def parameter_counts(self) -> tuple[int, int]:
        """(trainable, total) parameters under the current freeze toggles."""
        # the source's shapes: a trained token table holds only its touched rows as parameters
        model = self.source.model
        sizes = {part: sum(p.numel() for p in getattr(model, attr).parameters()) for part, attr in PARTS.items()}
        return sum(n for part, n in sizes.items() if part not in self.fixed), sum(sizes.values())

    def _with_tables(self, base: Source, *, settings: Settings | None = None, positions: str | None = None):
        settings = settings or self.settings
        positions = positions or self.positions
        if positions not in POSITIONS:
            raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, not {positions!r}.")
        new = replace(
            self.reset(),
            settings=settings,
            base=base,
            positions=positions,
            source=with_positions(base, positions, settings.seed),
        )
        if new.frozen_basis is not None and new.frozen_basis.n_features_ != new.model.config.d_model:
            # a plane of another width cannot hold these vectors: back to the sentence's own
            new = replace(new, basis="sentence", frozen_basis=None)
        return new


def _here(function: Callable, *args, **hooks):
    return function(*args, **hooks)
