"""What the transport knows of each open page, kept beside its tab rather than in it.

A page reaches its tab (`core.serving.tabs.Tab`) two ways: gradio's events carry gradio's
session hash, and the page's own calls (`ui.direct`, `ui.classroutes`) carry the unguessable
key the server gave the page when it loaded. A `Channel` holds that key, what the page's
gradio components were last sent (so an unchanged value is not sent again), and the page's
direct call still waiting. The tab owns none of this: `core/` does not know how pages talk to it.
A channel lives as long as its tab; a key whose tab was forgotten, or replaced by a reload under
the same session, reaches nothing.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from dataclasses import dataclass, field

from core.serving.tabs import ENDED, Expired, Tab, Tabs

MAX_KEY = 64  # characters of a page's key, as a call may send it


@dataclass(eq=False)
class Channel:
    """One open page's transport state."""

    session: str | None  # the name its tab is kept by (gradio's session hash); None: a tab made in-process
    key: str = field(default_factory=lambda: secrets.token_urlsafe(24))  # the page's own calls name it by this
    # what each gradio component was last sent, as a fingerprint (`ui.events.track`)
    sent: dict = field(default_factory=dict, repr=False)
    # whether the token picker holds a list: filled when opened, emptied once when the tokens change
    listed: bool = False
    latest: int = 0  # the newest direct call's number: an older one still waiting is skipped
    waiting: dict | None = field(default=None, repr=False)  # the waiting direct call's change, which later ones join
    computed: float = float("inf")  # CPU seconds of the last direct call: a quick tab's next key runs in the loop
    answers: object = None  # the class's words its plane shows (`ui.render.answers_of`), None: none


class Channels:
    """Each tab's channel, and the tab a page's key names."""

    def __init__(self, tabs: Tabs) -> None:
        self.tabs = tabs
        self._of: weakref.WeakKeyDictionary[Tab, Channel] = weakref.WeakKeyDictionary()
        self._by_key: weakref.WeakValueDictionary[str, Channel] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def of(self, tab: Tab, session: str | None = None) -> Channel:
        """The tab's channel, made the first time it is asked for (`session`: the name its tab
        is kept by, when the caller knows it)."""
        with self._lock:
            channel = self._of.get(tab)
            if channel is None:
                channel = self._of[tab] = Channel(session)
                self._by_key[channel.key] = channel
            elif channel.session is None and session is not None:
                channel.session = session
            return channel

    def by_key(self, key: object) -> tuple[Tab, Channel]:
        """The tab and channel a page's key names, the tab touched as used. Raises `Expired` for
        anything else: a key is never guessed, and one of a forgotten tab is gone with it."""
        channel = self._by_key.get(key) if isinstance(key, str) and 0 < len(key) <= MAX_KEY else None
        if channel is None or channel.session is None:
            raise Expired(ENDED)
        tab = self.tabs.kept(channel.session)
        if self._of.get(tab) is not channel:  # the session's tab was made anew (a reload): this page's is gone
            raise Expired(ENDED)
        return tab, channel
