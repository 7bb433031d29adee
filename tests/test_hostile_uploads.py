"""Hostile files through the page's upload route: refused with a sentence, nothing run, nothing kept.

tests/test_uploads.py checks core.tables.uploads.read_upload on these files directly; here they
travel the way a stranger's file does: the page posts it to `explorer/upload` (ui/files.py), its
key and the file's name in headers, and the route streams it to a folder of its own, refuses it
once it passes the size limit, hands it to the tables' readers and deletes it, read or refused.
Each refused file is answered with a plain-text notice and the table source put back, must leave
the tab as it was (`Page.fingerprint`, which covers the visitor's own good upload, kept while it
draws other tables), run nothing (pickle payloads would create a marker file), keep nothing on
disk, and leave the server serving. The app runs in this test process: the RSS growth across
the whole hostile set is printed, measured, not asserted.
"""

from __future__ import annotations

import gc
import http.client
import io
import json
import logging
import os
import pickle
import re
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

import numpy as np
import psutil
import pytest
import torch
from safetensors.torch import save_file

from tests.appapi import Page, outputs
from tests.waiting import eventually

MARKER = "pwned"  # the file a payload would create, in the case's folder

# torch warns about pickle.dump's protocol just before it refuses the file
# one worker sends the whole set: the session, its warm-up and its memory baseline are made once,
# and the last test measures every file sent, none sent twice
pytestmark = [pytest.mark.filterwarnings("ignore:Detected pickle protocol"), pytest.mark.xdist_group("hostile-uploads")]


# --- files ------------------------------------------------------------------------------------


class ExecsCode:
    """Unpickling this executes Python that creates the marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('x')",)


class RunsCommand:
    """Unpickling this runs a shell command that creates the marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def table(rows: int = 10, width: int = 4) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((rows, width)).astype(np.float32)


def npy_bytes(array: np.ndarray, **kwargs) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, **kwargs)
    return buffer.getvalue()


def torch_bytes(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def safetensors_bytes(folder: Path, array: np.ndarray) -> bytes:
    save_file({"embedding": torch.from_numpy(array)}, folder / "scratch.safetensors")
    return (folder / "scratch.safetensors").read_bytes()


def safetensors_header(header: dict, data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def pt_zip_bomb(path: Path) -> None:
    # the layout of torch.save's zip, but with a DEFLATE entry: 50 MB of zeros in ~50 kB
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({}, protocol=2), zipfile.ZIP_STORED)
        archive.writestr("archive/data/0", bytes(50 * 2**20))


def npz_bomb(path: Path) -> None:
    with path.open("wb") as file:
        np.savez_compressed(file, table=np.zeros((5000, 2000), np.float32), more=np.zeros((3000, 1000), np.float32))


def object_array(folder: Path) -> np.ndarray:
    return np.array([ExecsCode(folder / MARKER), None], dtype=object)


def with_value(row: int, col: int, value: float) -> np.ndarray:
    array = table()
    array[row, col] = value
    return array


def write_bytes(data: Callable[[Path], bytes]) -> Callable[[Path, Path], None]:
    return lambda path, folder: path.write_bytes(data(folder))


# name -> (file name, how to write it into a folder, what the refusal says)
HOSTILE: dict[str, tuple[str, Callable[[Path, Path], None], str]] = {
    "pickle-exec": (
        "weights.pt",
        lambda path, folder: path.write_bytes(pickle.dumps(ExecsCode(folder / MARKER), protocol=2)),
        r"never loaded because loading them could run code on the server",
    ),
    "pickle-os-system-named-npy": (
        "table.npy",
        lambda path, folder: path.write_bytes(pickle.dumps(RunsCommand(folder / MARKER), protocol=4)),
        r"never loaded because loading them could run code on the server",
    ),
    "torch-zip-with-payload": (
        "model.pth",
        lambda path, folder: torch.save({"weight": torch.zeros(3, 2), "x": ExecsCode(folder / MARKER)}, path),
        r"never loaded because loading them could run code on the server",
    ),
    "object-dtype-npy": (
        "objects.npy",
        write_bytes(lambda folder: npy_bytes(object_array(folder), allow_pickle=True)),
        r"^this \.npy file holds Python objects \(dtype object\), which are never loaded",
    ),
    "pt-zip-bomb": (
        "bomb.pt",
        lambda path, folder: pt_zip_bomb(path),
        r"^this checkpoint's entry archive/data/0 is compressed; torch\.save never compresses",
    ),
    "npz-compressed": (
        "tables.npz",
        lambda path, folder: npz_bomb(path),
        r"^this file is a NumPy \.npz archive, which the explorer does not read; save the one table with numpy\.save",
    ),
    "safetensors-data-beyond-the-file": (
        "liar.safetensors",
        write_bytes(
            lambda folder: safetensors_header(
                {"t": {"dtype": "F32", "shape": [100_000, 4], "data_offsets": [0, 1_600_000]}}, bytes(16)
            )
        ),
        r"places t at bytes 0 to 1,600,000 of its data, but the file holds only 16 bytes of data",
    ),
    "safetensors-header-beyond-the-file": (
        "liar.safetensors",
        write_bytes(lambda folder: struct.pack("<Q", 10**6) + b'{"t": {}}'),
        r"says its header is 1,000,000 bytes long, but only 9 bytes follow",
    ),
    "safetensors-header-too-long": (
        "huge-header.safetensors",
        write_bytes(lambda folder: struct.pack("<Q", 10**9) + b'{"t": {}}'),
        r"says its header is 1,000,000,000 bytes long; headers of up to 1,048,576 bytes are allowed",
    ),
    "safetensors-too-many-tensors": (
        "many.safetensors",
        write_bytes(
            lambda folder: safetensors_header(
                {f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(10_000)}, b""
            )
        ),
        r"lists 10,000 tensors; at most 1,024 are allowed in one file",
    ),
    "truncated-pt": (
        "half.pt",
        write_bytes(lambda folder: half(torch_bytes(torch.from_numpy(table())))),
        r"damaged or cut off",
    ),
    "truncated-npy": (
        "half.npy",
        write_bytes(lambda folder: half(npy_bytes(table()))),
        r"^this \.npy file's header promises 160 bytes of numbers but the file holds \d+; the file is cut off\.$",
    ),
    "truncated-safetensors": (
        "half.safetensors",
        write_bytes(lambda folder: half(safetensors_bytes(folder, table()))),
        r"the file is damaged or cut off\.$",
    ),
    "random-bytes-named-npy": (
        "table.npy",
        write_bytes(lambda folder: np.random.default_rng(1).bytes(4096)),
        r"^this file is not in a format the explorer reads; accepted are a safetensors file",
    ),
    "empty-file": ("table.safetensors", write_bytes(lambda folder: b""), r"^the file is empty"),
    "nan": (
        "nan.npy",
        write_bytes(lambda folder: npy_bytes(with_value(3, 1, np.nan))),
        r"^row 3 contains NaN; every value must be a finite number\.$",
    ),
    "inf": (
        "inf.npy",
        write_bytes(lambda folder: npy_bytes(with_value(7, 0, -np.inf))),
        r"^row 7 contains an infinite value; every value must be a finite number\.$",
    ),
    "nan-in-word-vectors": (
        "glove.txt",
        lambda path, folder: path.write_text("the 1 2\ncat nan 3\n", encoding="utf-8"),
        r"^row 1 \(the word 'cat'\) contains NaN",
    ),
    "0-rows": (
        "empty.npy",
        write_bytes(lambda folder: npy_bytes(np.zeros((0, 4), np.float32))),
        r"^the table has no rows \(shape \(0, 4\)\); a table needs at least 2 rows",
    ),
    "1-row": (
        "one.npy",
        write_bytes(lambda folder: npy_bytes(np.zeros((1, 4), np.float32))),
        r"^the table has only 1 row \(shape \(1, 4\)\); a table needs at least 2 rows",
    ),
    "1-d": (
        "vector.pt",
        write_bytes(lambda folder: torch_bytes(torch.zeros(8))),
        r"^a table must be 2-D \(rows × width\); this one is 1-D with shape \(8,\)\.$",
    ),
    "3-d": (
        "cube.npy",
        write_bytes(lambda folder: npy_bytes(np.zeros((2, 3, 4), np.float32))),
        r"^a table must be 2-D \(rows × width\); this one is 3-D with shape \(2, 3, 4\)\.$",
    ),
    "ragged-word-vectors": (
        "vectors.txt",
        lambda path, folder: path.write_text("3 4\na 1 2 3 4\nb 5\nc 1 2 3 4\n", encoding="utf-8"),
        r"^line 3 has a word and 1 number, but the header says 4; every row must have the same width\.$",
    ),
    "non-utf8-word-vectors": (
        "vectors.txt",
        lambda path, folder: path.write_bytes("2 2\ncat 1 2\ncafé 3 4\n".encode("latin-1")),
        r"^the words must be UTF-8 text, but the file holds the byte 0xe9 where UTF-8 does not allow it",
    ),
}


def make(tmp_path: Path, case: str) -> tuple[Path, Path]:
    """The case's file in a folder of its own, and the marker a payload would create there."""
    folder = tmp_path / case
    folder.mkdir()
    name, write, _ = HOSTILE[case]
    write(folder / name, folder)
    return folder / name, folder / MARKER


# --- helpers ---------------------------------------------------------------------------------


def limit() -> int:
    """The upload route's limit on a file's bytes (the tables' readers' own)."""
    from ui.tablespanel import UPLOAD_LIMITS

    return UPLOAD_LIMITS.max_bytes


TOO_LARGE = "A table file is at most 200 MB; this one is larger."  # the sentence for a file past the limit


def over_the_limit(tmp_path: Path) -> Path:
    path = tmp_path / "huge.npy"
    with path.open("wb") as file:  # sparse: no disk blocks for the zeros
        file.seek(limit())
        file.write(b"\0")
    return path


def kept() -> list[Path]:
    """What the upload route holds on disk: each upload's folder, while it is read."""
    from ui.files import ROOT

    return sorted((ROOT / "uploads").glob("*")) if (ROOT / "uploads").exists() else []


def assert_refused(live: Page, path: Path, message: str) -> None:
    """The upload is answered with `message` as a notice; the table source is put back, the tables
    kept, and nothing of the file is left on disk."""
    out = live.upload(path)
    assert re.search(message, out.notice), out.notice
    assert out.value("table-source") == "random"
    assert kept() == []


_served = iter(range(10**6))


def assert_still_serves(live: Page) -> None:
    # a new sentence each time: an unchanged one redraws nothing
    out = live.send(sentence_a=f"still serving {next(_served)}", sentence_b="")
    table = out["token-table"]
    assert [row[0] for row in table["data"]][0] == "[CLS]" and len(table["data"]) == 5
    assert out["embed-info"].startswith("5 tokens")


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def post(app_url: str, key: str, content, name: str = "huge.npy", **headers) -> dict:
    """POST a body to the upload route as a client that ignores the page would, streamed if a file."""
    import httpx

    answer = httpx.post(f"{app_url}explorer/upload", content=content, timeout=120,
                        headers={"X-Explorer-Key": key, "X-File-Name": quote(name), **headers})
    return answer.json()


def send_over_the_limit(app_url: str, key: str, path: Path) -> dict:
    """The file streamed to the upload route whole, as a client that ignores the limit would."""
    with path.open("rb") as file:
        return post(app_url, key, file)


@pytest.fixture()
def faults():
    """The server's logged faults (uvicorn's error log) while the test runs."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def visitor(app_url):
    """One page that receives every hostile file: each refusal must leave it as it was."""
    return Page(app_url)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Every hostile file, written before memory is measured: case -> (file, payload marker)."""
    folder = tmp_path_factory.mktemp("hostile")
    return {case: make(folder, case) for case in HOSTILE} | {"over-the-limit": (over_the_limit(folder), Path())}


@pytest.fixture(scope="module")
def memory(app_url, visitor, hostile, tmp_path_factory) -> dict:
    """This process's RSS before the hostile set, and which hostile files were sent since.

    The app runs in this process. Every reader is used once on a good file first (each from a
    page of its own): readers import their libraries on first use (gensim adds ~10 MB),
    a one-time cost of the process that no hostile file causes. The files are written and
    the page opened before the baseline, so the test's own allocations are not counted.
    """
    folder = tmp_path_factory.mktemp("good")
    array = table()
    (folder / "t.npy").write_bytes(npy_bytes(array))
    (folder / "t.pt").write_bytes(torch_bytes(torch.from_numpy(array)))
    save_file({"t": torch.from_numpy(array)}, folder / "t.safetensors")
    (folder / "t.txt").write_text("".join(f"w{i} {' '.join(map(str, row))}\n" for i, row in enumerate(array)))
    for path in sorted(folder.iterdir()):
        out = Page(app_url).upload(path)
        assert out.notice == "" and out.value("tables-info").startswith("**Uploaded file**"), path
        assert kept() == [], path  # read, and gone from disk
    # the visitor has a good upload of its own, kept while it draws the random tables: no refused
    # file may replace it (the fingerprint covers it)
    assert visitor.upload(folder / "t.npy").notice == ""
    visitor.send(source="random")
    return {"before": rss(), "sent": set(), "fingerprint": visitor.fingerprint()}


# --- the cases --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_file_is_refused_and_changes_nothing(visitor, hostile, memory, case):
    path, marker = hostile[case]
    before = visitor.fingerprint()
    assert_refused(visitor, path, HOSTILE[case][2])
    memory["sent"].add(case)
    assert not marker.exists()
    assert visitor.fingerprint() == before
    assert_still_serves(visitor)


def test_one_byte_over_the_upload_limit_is_refused_while_it_streams(app_url, visitor, hostile, memory):
    """A client that sends a file larger than the limit is stopped by the route once the bytes
    pass it, with a sentence; one that says so in its Content-Length is refused before a byte of
    the body is read. Nothing is kept."""
    path, _ = hostile["over-the-limit"]
    assert limit() == 200 * 2**20
    assert path.stat().st_size == limit() + 1 and path.stat().st_blocks * 512 < 2**20  # sparse
    before = visitor.fingerprint()
    assert send_over_the_limit(app_url, visitor.key, path) == {"error": TOO_LARGE}
    memory["sent"].add("over-the-limit")
    assert kept() == []
    # its Content-Length says it: answered at once, though the body never comes
    address = urlsplit(app_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest("POST", "/explorer/upload")
        for header, value in (("Content-Length", str(limit() + 1)), ("X-Explorer-Key", visitor.key),
                              ("X-File-Name", "huge.npy")):
            connection.putheader(header, value)
        connection.endheaders()
        answer = connection.getresponse()
        assert json.loads(answer.read()) == {"error": TOO_LARGE}
    finally:
        connection.close()
    assert kept() == []
    assert visitor.fingerprint() == before
    assert_still_serves(visitor)


def test_a_server_path_that_was_never_uploaded_is_not_read(app_url, live, tmp_path, faults):
    """A name is only a name: a file named after a path on the server is its body, written in its
    upload's own folder, never that path read or written; a name that is no file name is a plain
    one; and the API, which takes a link's query, hands no file a caller names to the app."""
    import httpx

    secret = tmp_path / "secret.npy"
    secret.write_bytes(npy_bytes(table()))
    before = secret.read_bytes()
    body = npy_bytes(table(20, 6))
    for name in (str(secret), "/etc/passwd", "../../../../etc/passwd", "..", ".", "\x00.npy", "a" * 5000 + ".npy",
                 "<img src=x onerror=alert(1)>.npy"):
        answer = post(app_url, live.key, body, name)
        assert "values" in answer, (name, answer)
        info = outputs(answer["values"]).value("tables-info")
        assert "6 dimensions" in info and "row numbers 0 to 19" in info, (name, info)  # the body, not the path
        assert "<img" not in info and "root:" not in info, (name, info)
        assert kept() == [], name
        live.send(source="random")
    assert secret.read_bytes() == before
    assert faults == [], [record.getMessage() for record in faults]
    for path in (str(secret), "/etc/passwd", "../../../../etc/passwd"):
        payload = {"data": [{"path": path, "meta": {"_type": "gradio.FileData"}}]}
        event = httpx.post(f"{app_url}gradio_api/call/view", json=payload, timeout=30).json()["event_id"]
        stream = httpx.get(f"{app_url}gradio_api/call/view/{event}", timeout=30).text
        assert stream.startswith("event: error"), (path, stream)
        assert "root:" not in stream and "row numbers" not in stream, (path, stream)
    assert_still_serves(live)


def test_a_page_that_leaves_mid_file_leaves_nothing_on_disk_and_no_fault(app_url, live, faults):
    """A page closed while its file streams in: the route stops, deletes what came, and logs no
    fault (a page leaving is nobody's error)."""
    address = urlsplit(app_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    connection.putrequest("POST", "/explorer/upload")
    for header, value in (("Content-Length", str(2**20)), ("X-Explorer-Key", live.key), ("X-File-Name", "t.npy")):
        connection.putheader(header, value)
    connection.endheaders()
    connection.send(npy_bytes(table())[:100])
    assert eventually(lambda: kept() != [], timeout=30)  # it is streaming in
    connection.close()
    assert eventually(lambda: kept() == [], timeout=30)
    assert_still_serves(live)
    assert faults == [], [record.getMessage() for record in faults]


def test_the_hostile_set_leaves_the_visitor_s_session_as_it_was(app_url, visitor, hostile, memory):
    """After the cases above (sending any a selection skipped), the visitor's tables and view
    are those before the set: no refused file was kept. The process's RSS growth is printed,
    measured, not asserted (other tests in this process move it too)."""
    for case, (path, marker) in hostile.items():
        if case in memory["sent"]:
            continue
        if case == "over-the-limit":
            assert send_over_the_limit(app_url, visitor.key, path) == {"error": TOO_LARGE}
        else:
            assert_refused(visitor, path, HOSTILE[case][2])
            assert not marker.exists()
    assert_still_serves(visitor)
    assert kept() == []
    # the tables' half of the fingerprint (the view's changes with each sentence typed above)
    assert visitor.fingerprint().split("-")[-1] == memory["fingerprint"].split("-")[-1]
    print(f"\nRSS growth across the hostile set: {(rss() - memory['before']) / 2**20:.1f} MB")


def test_npy_content_named_safetensors_is_read_with_a_note(live, tmp_path):
    # the documented behaviour: the content decides the format, the name only earns a note
    path = tmp_path / "table.safetensors"
    path.write_bytes(npy_bytes(table(20, 6)))
    out = live.upload(path)
    info = out.value("tables-info").replace("\\", "")  # the file's notes are escaped for Markdown
    assert out.value("table-source") == "upload"
    assert "this file is a NumPy .npy file although its name ends in .safetensors." in info
    assert "6 dimensions" in info and "row numbers 0 to 19" in info
    rows = live.send(sentence_a="3 7 19", sentence_b="")["token-table"]
    assert [row[1] for row in rows["data"][1:4]] == [3, 7, 19]
