"""The public API: a few documented functions, each taking what a link holds and answering what
the page would show. `gradio_client` and the page's "Use via API" list them with their docstrings.

    view(query)                  each group's plotted points, the tokens, the neighbours, the notes
    train(query, steps, corpus)  the same after a few steps of training, and the loss per step
    code(query)                  the view as a runnable Python script (also GET explorer/code?QUERY)
                                 (a trained tab's script reads GET explorer/corpus.txt, saved beside it)
    tour()                       the guided tour's steps: title, text and the query that opens each

`query` is a link's query string, what the address bar holds after "?" (`core.view.share`): it
is read as the page reads a link, in a tab of the call's own that is let go with the answer, so
an API call keeps no session and changes no page. Each call takes its turn in the app's fair
lines (`ui.admission`), counted as a new page of its address, as a page's calls are; gradio's
queue hands each on at once (`CONCURRENT`) and only bounds how many it holds (`QUEUED`).
"""

from __future__ import annotations

import json

import gradio as gr
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from core.drawing.captions import text_of
from core.drawing.code import CORPUS_FILE, recipe, script
from core.drawing.figures import LAYER_NEAR, NEIGHBOURS
from core.drawing.wire import expand, plotted_points, table_rows
from core.model.training import Corpus, TrainConfig
from core.serving.tabs import TABS, Tab
from core.view import share, tour
from core.view.options import COMPONENTS, CORPORA, LIMITS, MAX_QUERY, Refused, choice, whole
from core.view.state import View
from ui import render
from ui.admission import Busy, visitor_of_request, work_of
from ui.assets import ASSETS
from ui.route import JOBS, OFFLOAD, Live, link_shown

# gradio hands every API call on at once (an async wait, no thread), so each waits in the app's
# fair lines, where the account sees it and bounds it per address: calls left in gradio's own
# first-come line would let one address fill it and lock out everyone else's
CONCURRENT = None
QUEUED = 256  # API calls gradio holds at most before it hands them on; past it a call is refused at once
CODE_PATH, FILE_NAME = "/explorer/code", "embedding_view.py"
CORPUS_PATH = f"/explorer/{CORPUS_FILE}"


def opened(live: Live, link: share.Link) -> tuple[Tab, tuple[str, ...]]:
    """A tab of its own showing the link's view as a page opening would, untrained (or the default
    view, with a note saying why not), and the page's notes: the link's and the view's own."""
    tab = Tab()

    def show(view: View, notes: tuple[str, ...]) -> tuple[str, ...]:
        live.built_first(tab, lambda _: view)  # a large random layer is built in the heavy pool
        said = tab.apply(lambda _: view, lambda step: step.notes, tables=lambda session: session.restart(), whole=True)
        return (*notes, *said)

    return tab, link_shown(link, View(), show)


def answer_of(tab: Tab, notes: tuple[str, ...], page) -> dict:
    """What the page shows of the tab's view, as plain data."""
    view, session = tab.view, tab.session
    drawn = render.plane(page, view, session, tab.tokens)
    figure = expand(json.loads(drawn[page.plot]))
    return {
        "query": share.to_query(view)[0],
        "notes": list(notes),
        "tokens": [row[:4] for row in table_rows(figure)],  # token, id, position, segment
        "points": plotted_points(figure, also=(*NEIGHBOURS.values(), *([LAYER_NEAR.format(view.layer)]
                                                                        if view.layer else [])),
                                 groups=(*COMPONENTS, *([f"layer {view.layer}"] if view.layer else []))),
        "neighbours": {"token": drawn[page.near_token], "output": drawn[page.near_output]},
        "search": drawn[page.search_hits],
        "summary": text_of(drawn[page.info]),
    }


def declare(page) -> None:
    """The API's functions, on the page's Blocks (called inside it)."""
    live: Live = page.live

    async def view(query: str, request: gr.Request) -> dict:
        """What the page shows for a link's query (the address bar's text after "?", e.g.
        "source=bert&a=The+king+spoke.&token=2"): "points", each group's points as plotted, in token
        order ({group: [[x, y], …]}; at layer=K the tokens after encoder layer K under "layer K"; the
        selected token's neighbours under their own names);
        "tokens" ([token, id, position, segment] each); "neighbours" of the selected token by token
        and by output vector ([rank, word, cosine]); the search's matches; the summary line; and
        "notes", what the link asked for but could not have."""
        return await _called(live, request, lambda: answer_of(*opened(live, _link(query)), page), query)

    async def train(query: str, request: gr.Request, steps: int = 100, corpus: str = "builtin") -> dict:
        """The view of a link's query after `steps` gradient steps (1 to 2,000) on its tables, on the
        built-in corpus ("builtin") or its own sentences A and B ("mine"), as the page's Train does:
        what `view` answers of the trained tables, and "losses", the loss at each step."""
        def work() -> dict:
            count, text_of = whole(steps, "steps"), choice(corpus, "corpus", CORPORA)
            tab, notes = opened(live, _link(query))
            session, view = tab.session, tab.view
            text = (Corpus.builtin() if text_of == "builtin"
                    else Corpus.from_text(f"{view.sentence_a}\n{view.sentence_b}"))
            trained = JOBS.run(tab, "training", lambda: session.trained_on(text, TrainConfig(steps=count),
                                                                             run=OFFLOAD.call))
            tab.apply(lambda v: v, lambda step: None, tables=lambda current: current.adopt_training(trained))
            return {**answer_of(tab, notes, page), "losses": list(trained.training.losses)}

        weight = 1 + (steps if isinstance(steps, int) and not isinstance(steps, bool) else 1) / LIMITS["steps"][1]
        return await _called(live, request, work, query, weight=weight)

    async def code(query: str, request: gr.Request) -> str:
        """The view of a link's query as a short Python script that draws it (plain PyTorch, NumPy,
        scikit-learn and Plotly; `--json` prints each group's points): GET explorer/code?QUERY
        answers the same."""
        return await _called(live, request, lambda: written(live, _link(query)), query)

    def steps() -> list[dict]:
        """The guided tour's steps, in order: each one's number, title, text (Markdown) and the
        link query that opens it ("step=N")."""
        return [{"step": n, "title": step.title, "text": step.text, "query": f"step={n}"}
                for n, step in enumerate(tour.STEPS, 1)]

    for name, function in {"view": view, "train": train, "code": code, "tour": steps}.items():
        gr.api(function, api_name=name, concurrency_limit=CONCURRENT, concurrency_id="api")


def _link(query: object) -> share.Link:
    """The link a call's query string opens (text, as the address bar holds it after "?")."""
    if not isinstance(query, str):
        raise Refused(f"query is a link's query string (text), not {type(query).__name__}.")
    if len(query) > MAX_QUERY:  # said for a caller: the page's own sentence speaks of the view it keeps
        raise Refused(f"query is at most {MAX_QUERY:,} characters, as a link is; this one has {len(query):,}.")
    return share.from_address(query.lstrip("?"))


async def in_turn(live: Live, request, work, weight: float):
    """`work()` in a turn of the caller's address, counted as a new page of it (an API call and a
    script are each a page opened)."""
    TABS.new_tabs.take(getattr(getattr(request, "client", None), "host", None))
    answer = await live.turn(None, None, lambda: {"answer": work()}, visitor_of_request(request), weight, "work")
    return answer["answer"]


async def _called(live: Live, request, work, query: object, weight: float | None = None):
    """`work()` in the API caller's turn; a refusal becomes gradio's error, raised by its client with the sentence."""
    try:
        return await in_turn(live, request, work, weight or work_of(len(query) if isinstance(query, str) else 0))
    except (Refused, Busy, ValueError) as error:
        raise gr.Error(str(error)) from None


def written(live: Live, link: share.Link) -> str:
    """The script of the view `link` opens, with the page's notes (`# The link: …`), word for word."""
    tab, notes = opened(live, link)
    return script(recipe(tab.view, tab.session, notes))


def route(live: Live) -> Route:
    """`GET explorer/code?QUERY`: a link's script as `text/x-python`, in the caller's turn; a refusal is a sentence."""

    async def code(request: Request) -> Response:
        query = request.scope.get("query_string", b"").decode("latin-1")
        if len(query) > MAX_QUERY:
            return PlainTextResponse(f"This link is too long: a link to a view is at most {MAX_QUERY:,} characters "
                                     "after the question mark.", 414)
        try:
            text = await in_turn(live, request, lambda: written(live, share.from_address(query)), work_of(len(query)))
        except Busy as busy:
            return PlainTextResponse(str(busy), busy.status, headers={"Retry-After": str(busy.retry)})
        except Refused as error:
            return PlainTextResponse(str(error), 429)
        return Response(text, media_type="text/x-python; charset=utf-8",
                        headers={"Content-Disposition": f'inline; filename="{FILE_NAME}"'})

    return Route(CODE_PATH, code, methods=["GET"])


def corpus_route() -> Route:
    """`GET explorer/corpus.txt`: the built-in corpus, as a file to save beside a script trained on it
    (the file the app trains on, so the script's training reads what the page's read)."""
    body = (ASSETS / "corpus.txt").read_bytes()

    async def corpus(request: Request) -> Response:
        return Response(body, media_type="text/plain; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{CORPUS_FILE}"'})

    return Route(CORPUS_PATH, corpus, methods=["GET"])
