"""A virtual screen reader inside the browser tests: what a blind student hears, as the phrases it says.

axe checks the page's markup against rules; it cannot tell whether the plane, its keys and the tour
say anything a listener can follow. `@guidepup/virtual-screen-reader` reads a page's accessibility
tree itself (names, roles, descriptions, live regions) and keeps a log of every phrase it would
speak: on focus moving, and on a live region changing. It is an npm package, so it is fetched by the
test run, never kept in the repository: `npm install` into a cache outside the git tree (reused while
the versions are the same), bundled by esbuild into one script that puts `virtual` on `window`, and
added to a Playwright page once the page has loaded. Under CI a missing npm or a failed install
fails the tests that need it; elsewhere they skip, saying why (as a missing Chromium does).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

PACKAGES = {"@guidepup/virtual-screen-reader": "0.33.0", "esbuild": "0.28.2"}
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "embedding-explorer" / "screenreader"
# the bundle's entry: the package's one object, where a test's script reaches it
ENTRY = 'import { virtual } from "@guidepup/virtual-screen-reader";\nwindow.virtual = virtual;\n'
# a browser's script: the package's browser build, in a function of its own, nothing of node's left in it
BUNDLE = ["entry.js", "--bundle", "--format=iife", "--global-name=embeddingExplorerScreenReader", "--platform=browser",
          "--minify"]


class Unavailable(Exception):
    """npm is missing, or the package could not be installed or bundled."""


def _installed(folder: Path) -> bool:
    for name, version in PACKAGES.items():
        manifest = folder / "node_modules" / name / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text()).get("version") != version:
            return False
    return True


def _run(command: list[str], folder: Path, timeout: int) -> None:
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unavailable(f"{' '.join(command[:2])} failed: {error}") from error
    if done.returncode != 0:
        raise Unavailable(f"{' '.join(command[:2])} failed ({done.returncode}): {done.stderr.strip()[-800:]}")


def bundle(cache: Path = CACHE) -> str:
    """The virtual screen reader as one script for a page: installed and bundled on the first call
    with these versions (and this entry and these flags), read from the cache after. Two test workers
    building at once take turns (a lock file), so the second finds the first's bundle."""
    npm = shutil.which("npm")
    folder = cache / "+".join(f"{name.rsplit('/', 1)[-1]}-{version}" for name, version in PACKAGES.items())
    script = folder / f"virtual-{hashlib.sha256(' '.join([ENTRY, *BUNDLE]).encode()).hexdigest()[:12]}.js"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if script.exists() and _installed(folder):
            return script.read_text()
        if npm is None:
            raise Unavailable("npm is not installed here (apt-get install npm)")
        if not _installed(folder):
            _run([npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(folder),
                  *(f"{name}@{version}" for name, version in PACKAGES.items())], folder, timeout=300)
        (folder / "entry.js").write_text(ENTRY)
        _run([str(folder / "node_modules" / ".bin" / "esbuild"), *BUNDLE, f"--outfile={script.name}.part"], folder,
             timeout=120)
        (folder / f"{script.name}.part").replace(script)
        return script.read_text()


@pytest.fixture(scope="session")
def screen_reader() -> str:
    """The virtual screen reader's script; skips without npm, or fails under CI."""
    try:
        return bundle()
    except Unavailable as why:
        if os.environ.get("CI"):
            pytest.fail(f"the virtual screen reader is needed under CI: {why}")
        pytest.skip(f"the virtual screen reader is not available here: {why}; CI runs these")


def listen(page, script: str) -> None:
    """Start the virtual screen reader over the whole page (it reads the page as loaded: call after
    it is drawn). It then hears every focus change and every live region's change."""
    page.add_script_tag(content=script)
    page.evaluate("async () => { await window.virtual.start({container: document.body}); }")


def heard(page) -> list[str]:
    """Every phrase said since `listen`, in order: on the focus moving (a control's role, name, value
    and description) and on a live region's change ("polite: …")."""
    return page.evaluate("() => window.virtual.spokenPhraseLog()")


def hear(page, after: int, says: str = "", timeout: float = 30) -> list[str]:
    """Wait until a phrase starting with `says` has been said after the first `after` phrases; every
    phrase said. (The package's log is a promise's, which a page's wait cannot poll: this asks.)"""
    deadline = time.monotonic() + timeout
    while True:
        log = heard(page)
        if any(phrase.startswith(says) for phrase in log[after:]):
            return log
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing starting {says!r} heard in {timeout} s; heard last: {log[-5:]}")
        page.wait_for_timeout(50)
