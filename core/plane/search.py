"""Find words in the current token table's vocabulary, place them in the plane, list their neighbours.

The vocabulary is the tokenizer's (``tokens_by_id``: 30,522 WordPiece entries for BERT,
400,003 words for GloVe), not only the words typed. A query comes from a browser or the API,
so it is bounded before any work: at most ``MAX_QUERY`` characters, at most ``MAX_HITS``
matches collected, words longer than ``MAX_WORD`` characters never tried, and a regular
expression only from a subset whose cost per word is polynomial and small (`_vetted`). A scan
is done once per token table and query (``_found``): typing on with a search in the view, or a
link that carries one, redraws without scanning again. Every refusal is a sentence saying
what is allowed.
"""

from __future__ import annotations

import html
import re
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from core.model.projection import PCAProjection
from core.model.tokenizer import CLS, SEP, UNK
from core.plane.neighbours import in_table
from core.tables.session import Session
from core.view.options import MAX_HITS, MAX_REGEX_WORD, MAX_REPEATS, MAX_SEARCH, MAX_WORD, REGEX_SECONDS

try:  # Python 3.11+: the regex parser behind re, used only to vet a pattern's structure
    import re._constants as _constants
    import re._parser as _parser
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _constants  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

MAX_QUERY = MAX_SEARCH  # characters in a query or pattern: the page's one limit
CACHED_QUERIES = 16  # searches kept per token table (see _found)
DEFAULT_LIMIT = 10
SEARCH = "search"  # the figure layer's trace name
SEARCH_COLOUR = "#000000"

_ATOMIC = getattr(_constants, "ATOMIC_GROUP", None)  # (?>…), Python 3.11+
_REPEATS = {_constants.MAX_REPEAT, _constants.MIN_REPEAT, getattr(_constants, "POSSESSIVE_REPEAT", None)} - {None}
_FORBIDDEN = {_constants.GROUPREF, _constants.GROUPREF_EXISTS, _constants.ASSERT, _constants.ASSERT_NOT}
_BRANCHING = {_constants.BRANCH}
# token table -> its recent searches' scans; forgets a table (a trained one) when it is gone
_CACHE: weakref.WeakKeyDictionary[nn.Module, OrderedDict] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


@dataclass(frozen=True)
class SearchHit:
    """One vocabulary entry that matched."""

    word: str
    id: int
    point: np.ndarray | None  # (dims,) where its token vector lands in the current plane


@dataclass(frozen=True)
class SearchResult:
    """What a query found: matches, the first match's neighbours, and a layer for the main plot."""

    query: str
    hits: tuple[SearchHit, ...]
    neighbours: tuple[tuple[str, float], ...] = ()  # the first hit's k nearest entries by cosine
    neighbour_points: np.ndarray | None = None  # (k, dims) their token vectors in the plane
    truncated: bool = False  # more entries matched than the limit
    message: str = ""  # plain text for the page: nothing found, why a pattern was refused, …
    trace: dict | None = field(default=None, repr=False)  # a plotly trace to add to the main plot


def search(session: Session, query: str, *, regex: bool = False, limit: int = DEFAULT_LIMIT, k: int = 10,
           projection: PCAProjection | None = None) -> SearchResult:
    """Entries of the current token table's vocabulary matching ``query``.

    Plain text: the entry spelled exactly so (case-insensitively) first, then entries that
    start with it, then entries that contain it, in id order (BERT's and GloVe's ids run
    roughly from frequent to rare). ``regex=True``: entries the whole of which match the
    pattern (``re.fullmatch``, case-insensitive), from the vetted subset (`_vetted`).

    limit: matches to return, 1 to ``MAX_HITS``. k: neighbours of the first match, found by
    cosine in the full space (``core.plane.neighbours.nearest``), markers and the word itself left
    out. projection: the plane the main plot is drawn in (``Exploration.projection``); with
    it each hit and neighbour gets its point there, and ``trace`` is a layer to add to the
    figure (in the token panel: the search is over token vectors), every entry named; the
    figure writes the names that fit (``core.drawing.figures.embedding_spec(layer=…)``).

    Raises ValueError for a query that is not allowed (too long, a pattern outside the
    subset, a bad limit); a query that simply finds nothing returns no hits and a message.
    """
    if not isinstance(query, str):
        raise ValueError(f"the search is a piece of text, not {type(query).__name__}.")
    query = query.strip()
    if len(query) > MAX_QUERY:
        raise ValueError(f"the search has {len(query)} characters; at most {MAX_QUERY} are allowed.")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_HITS:
        raise ValueError(f"the number of matches is {limit!r}; choose 1 to {MAX_HITS}.")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_HITS:
        raise ValueError(f"the number of neighbours is {k!r}; choose 0 to {MAX_HITS}.")
    if not query:
        return SearchResult(query, (), message="Type a word to search the vocabulary.")
    tokenizer = session.tokenizer
    if tokenizer is None:
        return SearchResult(query, (), message="This random table has no vocabulary of its own yet "
                                               "(its rows are named by the typed text), so there is nothing to search.")
    names = tokenizer.tokens_by_id
    tokens = session.model.tok_embed
    ids, truncated, found = _found(tokens, tokenizer, query, regex, limit, k)
    if not ids:
        return SearchResult(query, (), message=f"No entry of this vocabulary matches {query!r}.")

    near = [id_ for id_, _ in found]
    with torch.no_grad():  # the few rows shown, not the whole table
        vectors = tokens(torch.tensor(list(ids) + near)).numpy()
    points = projection.transform(vectors) if projection is not None else None
    hits = tuple(SearchHit(names[i], i, None if points is None else points[n]) for n, i in enumerate(ids))
    neighbours = tuple((names[id_], cosine) for id_, cosine in found)
    near_points = points[len(ids):] if points is not None and found else None
    trace = _layer(hits, neighbours, near_points) if projection is not None else None
    more = f" (the first {limit} shown)" if truncated else ""
    return SearchResult(query, hits, neighbours, near_points, truncated,
                        f"{len(hits)} entr{'y' if len(hits) == 1 else 'ies'} found{more}.", trace)


def _found(tokens: nn.Module, tokenizer, query: str, regex: bool, limit: int,
           k: int) -> tuple[tuple[int, ...], bool, tuple[tuple[int, float], ...]]:
    """The matching ids, whether there are more, and the first one's k neighbours (id, cosine):
    the scan of the vocabulary, done once per table and query.

    A search stays in the view while its owner types, and a link carries it to whoever opens
    it, so every redraw asks again; the scan (up to ``REGEX_SECONDS`` for a slow pattern) and
    the neighbours over the whole table are kept per token table (`tokens`: a preset's, shared,
    or a trained one, which never changes once trained), the newest ``CACHED_QUERIES`` of each.
    """
    key = (id(tokenizer), query, regex, limit, k)  # a table is read through one tokenizer; the id is a guard
    with _CACHE_LOCK:
        kept = _CACHE.setdefault(tokens, OrderedDict())
        if key in kept:
            kept.move_to_end(key)
            return kept[key]
    names = tokenizer.tokens_by_id
    rows = min(len(names), tokens.num_embeddings)
    ids, truncated = (_regex_matches(names, rows, query, limit) if regex
                      else _text_matches(tokenizer, names, rows, query, limit))
    markers = {tokenizer.token_to_id(t) for t in (CLS, SEP, UNK)} - {None}
    near = ()
    if ids and k:
        with torch.no_grad():
            query_row = tokens(torch.tensor([ids[0]])).numpy()[0]
        near = in_table(tokens, query_row, k, exclude={ids[0], *markers}, first=rows)
    answer = (tuple(ids), truncated, tuple((n.id, round(n.cosine, 3)) for n in near))
    with _CACHE_LOCK:
        kept[key] = answer
        while len(kept) > CACHED_QUERIES:
            kept.popitem(last=False)
    return answer


def _text_matches(tokenizer, names, rows: int, query: str, limit: int) -> tuple[list[int], bool]:
    """Exact spelling first, then prefixes, then substrings, each in id order."""
    needle = query.lower()
    exact = tokenizer.token_to_id(query)
    if exact is None and needle != query:
        exact = tokenizer.token_to_id(needle)
    found = [exact] if exact is not None and exact < rows else []
    starts, contains = [], []
    for id_ in range(rows):
        name = names[id_]
        if len(name) > MAX_WORD or id_ in found:
            continue
        lowered = name.lower()
        if lowered == needle and not found:
            found.append(id_)
        elif lowered.startswith(needle):
            starts.append(id_)
        elif needle in lowered and len(contains) <= limit:
            contains.append(id_)
        if len(starts) > limit:
            break
    ordered = found + starts + contains
    return ordered[:limit], len(ordered) > limit


def _regex_matches(names, rows: int, pattern: str, limit: int) -> tuple[list[int], bool]:
    """Ids whose entry the whole pattern matches, in id order; True when there may be more."""
    compiled = _vetted(pattern)
    found = []
    deadline = time.perf_counter() + REGEX_SECONDS
    for id_ in range(rows):
        name = names[id_]
        if len(name) <= MAX_REGEX_WORD and compiled.fullmatch(name):
            found.append(id_)
            if len(found) > limit:
                return found[:limit], True
        if id_ % 256 == 255 and time.perf_counter() > deadline:
            return found, True  # a slow pattern: what it found in the time allowed
    return found, False


def _vetted(pattern: str) -> re.Pattern:
    """The compiled pattern, or a ValueError if it could backtrack catastrophically.

    A regular expression could take exponential time on a crafted pattern (``(a+)+b``), and
    Python's ``re`` has no timeout, so patterns are restricted to a subset whose cost per word
    is polynomial and small: no repeat inside a repeat, no alternation inside a repeat, no
    back-references or look-arounds, at most ``MAX_REPEATS`` repeats (``.*.*.*.*x`` costs a
    power of the word's length per repeat), tried on words of at most ``MAX_REGEX_WORD``
    characters; and the scan stops after ``REGEX_SECONDS``, saying how far it got.
    """
    try:
        parsed = _parser.parse(pattern, re.IGNORECASE)
    except re.error as error:
        raise ValueError(f"the pattern {pattern!r} is not a valid regular expression: {error}.") from None
    _check(parsed, inside_repeat=False)
    repeats = _count_repeats(parsed)
    if repeats > MAX_REPEATS:
        raise ValueError(f"the pattern has {repeats} repeats (*, +, ?, {{m,n}}); at most {MAX_REPEATS} are allowed.")
    return re.compile(pattern, re.IGNORECASE)


def _count_repeats(items) -> int:
    count = 0
    for op, value in items:
        if op in _REPEATS:
            count += 1 + _count_repeats(value[2])
        elif op == _constants.BRANCH:
            count += sum(_count_repeats(branch) for branch in value[1])
        elif op == _constants.SUBPATTERN:
            count += _count_repeats(value[-1])
        elif _ATOMIC is not None and op == _ATOMIC:
            count += _count_repeats(value)
    return count


def _check(items, *, inside_repeat: bool) -> None:
    for op, value in items:
        if op in _FORBIDDEN:
            raise ValueError("back-references and look-arounds are not allowed in a search pattern; "
                             "use letters, ., classes like [a-z], groups, | and repeats (*, +, ?, {m,n}).")
        if op in _REPEATS:
            if inside_repeat:
                raise ValueError("a repeat inside a repeat, like (a+)+, can take forever to match; "
                                 "write the pattern without nesting repeats.")
            _check(value[2], inside_repeat=True)
        elif op in _BRANCHING:
            if inside_repeat:
                raise ValueError("alternatives inside a repeat, like (a|ab)*, can take forever to match; "
                                 "use a class like [ab]* or move the | outside the repeat.")
            for branch in value[1]:
                _check(branch, inside_repeat=inside_repeat)
        elif op == _constants.SUBPATTERN:
            _check(value[-1], inside_repeat=inside_repeat)
        elif _ATOMIC is not None and op == _ATOMIC:
            _check(value, inside_repeat=inside_repeat)


def _layer(hits: tuple[SearchHit, ...], neighbours: tuple[tuple[str, float], ...],
           near_points: np.ndarray | None) -> dict:
    """The found entries (crosses) and the first one's neighbours (small diamonds) as one trace."""
    points = [hit.point for hit in hits]
    words = [hit.word for hit in hits]
    about = ["found" for _ in hits]
    if near_points is not None:
        points += list(near_points)
        words += [word for word, _ in neighbours]
        about += [f"near {html.escape(hits[0].word, quote=False)}: cosine {cosine:.3f}" for _, cosine in neighbours]
    xyz = np.asarray(points, dtype=np.float32)
    escaped = [html.escape(word, quote=False) for word in words]
    trace = {
        "type": "scatter" if xyz.shape[1] == 2 else "scatter3d",
        "name": SEARCH,
        "legendgroup": SEARCH,
        "x": xyz[:, 0],
        "y": xyz[:, 1],
        "mode": "markers+text",
        "text": escaped,
        "textposition": "top center",
        "marker": {"symbol": ["x"] * len(hits) + ["diamond"] * (len(points) - len(hits)),
                   "size": [12] * len(hits) + [7] * (len(points) - len(hits)), "color": SEARCH_COLOUR},
        "textfont": {"color": SEARCH_COLOUR},
        "hovertext": [f"{word} · {note}" for word, note in zip(escaped, about, strict=True)],
        "hoverinfo": "text",
    }
    if xyz.shape[1] == 3:  # scatter3d: no text position "top center", its own symbol names
        trace["z"] = xyz[:, 2]
        del trace["textposition"]
        trace["marker"]["symbol"] = ["x"] * len(hits) + ["diamond-open"] * (len(points) - len(hits))
    return trace
