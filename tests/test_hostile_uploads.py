"""Hostile files through the real /upload API: refused with a sentence, nothing run, nothing kept.

tests/test_uploads.py checks core.tables.uploads.read_upload on these files directly; here they
travel the way a stranger's file does: gradio_client uploads it, gradio stores it and hands
the path to the app's callback. Each refused file is answered with a plain-text notice and an
emptied upload box, must leave the session as it was (`/fingerprint`, which covers the
visitor's own good upload, kept while it draws other tables), run nothing (pickle payloads
would create a marker file), and leave the server serving. The app runs in this test process:
the RSS growth across the whole hostile set is printed, measured, not asserted.
"""

from __future__ import annotations

import gc
import io
import json
import os
import pickle
import re
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch
from appapi import call, fingerprint
from gradio_client import handle_file
from safetensors.torch import save_file

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


# --- helpers ----------------------------------------------------------------------------------


def over_the_limit(tmp_path: Path) -> Path:
    import app

    path = tmp_path / "huge.npy"
    with path.open("wb") as file:  # sparse: no disk blocks for the zeros
        file.seek(app.LAUNCH_OPTIONS["max_file_size"])
        file.write(b"\0")
    return path


def upload(client, path: Path):
    return call(client, "/upload", handle_file(str(path)))


def assert_refused(client, path: Path, message: str) -> None:
    """The upload is answered with `message` as a notice; the box is emptied, the tables kept."""
    out = upload(client, path)
    assert re.search(message, out.notice), out.notice
    assert out["upload-table"] is None and out.value("table-source") == "random"


_served = iter(range(10**6))


def assert_still_serves(client) -> None:
    # a new sentence each time: an unchanged one is answered with "no change"
    out = call(client, "/embed", f"still serving {next(_served)}", "")
    table = out["token-table"]
    assert [row[0] for row in table["data"]][0] == "[CLS]" and len(table["data"]) == 5
    assert out["embed-info"].startswith("5 tokens")


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def visitor(app_url):
    """One session that receives every hostile file: each refusal must leave it as it was."""
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Every hostile file, written before memory is measured: case -> (file, payload marker)."""
    folder = tmp_path_factory.mktemp("hostile")
    return {case: make(folder, case) for case in HOSTILE} | {"over-the-limit": (over_the_limit(folder), Path())}


@pytest.fixture(scope="module")
def memory(app_url, visitor, hostile, tmp_path_factory) -> dict:
    """This process's RSS before the hostile set, and which hostile files were sent since.

    The app runs in this process. Every reader is used once on a good file first (from a
    session of its own): readers import their libraries on first use (gensim adds ~10 MB),
    a one-time cost of the process that no hostile file causes. The files are written and
    the client made before the baseline, so the test's own allocations are not counted.
    """
    from gradio_client import Client

    warm = Client(app_url, verbose=False)
    folder = tmp_path_factory.mktemp("good")
    array = table()
    (folder / "t.npy").write_bytes(npy_bytes(array))
    (folder / "t.pt").write_bytes(torch_bytes(torch.from_numpy(array)))
    save_file({"t": torch.from_numpy(array)}, folder / "t.safetensors")
    (folder / "t.txt").write_text("".join(f"w{i} {' '.join(map(str, row))}\n" for i, row in enumerate(array)))
    for path in sorted(folder.iterdir()):
        out = upload(warm, path)
        assert out.notice == "" and out.value("tables-info").startswith("**Uploaded file**"), path
    # the visitor has a good upload of its own, kept while it draws the random tables: no refused
    # file may replace it (the fingerprint covers it)
    assert upload(visitor, folder / "t.npy").notice == ""
    call(visitor, "/source", "random")
    return {"before": rss(), "sent": set(), "fingerprint": fingerprint(visitor)}


def send_over_the_limit(app_url: str, path: Path):
    """POST the file to gradio's upload route directly, as a client that ignores the limit would."""
    import httpx

    with path.open("rb") as file:
        return httpx.post(f"{app_url}gradio_api/upload", files={"files": ("huge.npy", file)}, timeout=120)


# --- the cases --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_file_is_refused_and_changes_nothing(visitor, hostile, memory, case):
    path, marker = hostile[case]
    before = fingerprint(visitor)
    assert_refused(visitor, path, HOSTILE[case][2])
    memory["sent"].add(case)
    assert not marker.exists()
    assert fingerprint(visitor) == before
    assert_still_serves(visitor)


def test_one_byte_over_the_upload_limit_is_refused(app_url, visitor, hostile, memory):
    import app

    limit = app.LAUNCH_OPTIONS["max_file_size"]
    path, _ = hostile["over-the-limit"]
    assert path.stat().st_size == limit + 1 and path.stat().st_blocks * 512 < 2**20  # sparse
    before = fingerprint(visitor)
    # gradio_client compares the size with the app's max_file_size before sending anything
    with pytest.raises(ValueError, match=rf"exceeds the maximum file size of {limit} bytes"):
        upload(visitor, path)
    # a client that sends it anyway is stopped by the server once the bytes pass the limit
    response = send_over_the_limit(app_url, path)
    memory["sent"].add("over-the-limit")
    assert response.status_code == 413
    assert response.text == f"File size exceeded maximum allowed size of {limit} bytes."
    assert fingerprint(visitor) == before
    assert_still_serves(visitor)


def test_a_server_path_that_was_never_uploaded_is_not_read(app_url, visitor, tmp_path):
    # a raw API call naming a file on the server as if it had been uploaded: gradio must not
    # hand it to the app (the first is a valid table, so reading it would have succeeded)
    import httpx

    secret = tmp_path / "secret.npy"
    secret.write_bytes(npy_bytes(table()))
    for path in (str(secret), "/etc/passwd", "../../../../etc/passwd"):
        payload = {"data": [{"path": path, "meta": {"_type": "gradio.FileData"}}]}
        event = httpx.post(f"{app_url}gradio_api/call/upload", json=payload, timeout=30).json()["event_id"]
        stream = httpx.get(f"{app_url}gradio_api/call/upload/{event}", timeout=30).text
        assert stream.startswith("event: error"), (path, stream)
        assert "root:" not in stream and "row numbers" not in stream, (path, stream)
    assert_still_serves(visitor)


def test_the_hostile_set_leaves_the_visitor_s_session_as_it_was(app_url, visitor, hostile, memory):
    """After the cases above (sending any a selection skipped), the visitor's tables and view
    are those before the set: no refused file was kept. The process's RSS growth is printed,
    measured, not asserted (other tests in this process move it too)."""
    for case, (path, marker) in hostile.items():
        if case in memory["sent"]:
            continue
        if case == "over-the-limit":
            assert send_over_the_limit(app_url, path).status_code == 413
        else:
            assert_refused(visitor, path, HOSTILE[case][2])
            assert not marker.exists()
    assert_still_serves(visitor)
    # the tables' half of the fingerprint (the view's changes with each sentence typed above)
    assert fingerprint(visitor).split("-")[-1] == memory["fingerprint"].split("-")[-1]
    print(f"\nRSS growth across the hostile set: {(rss() - memory['before']) / 2**20:.1f} MB")


def test_npy_content_named_safetensors_is_read_with_a_note(client, tmp_path):
    # the documented behaviour: the content decides the format, the name only earns a note
    path = tmp_path / "table.safetensors"
    path.write_bytes(npy_bytes(table(20, 6)))
    out = upload(client, path)
    info = out.value("tables-info").replace("\\", "")  # the file's notes are escaped for Markdown
    assert out.value("table-source") == "upload"
    assert "this file is a NumPy .npy file although its name ends in .safetensors." in info
    assert "6 dimensions" in info and "row numbers 0 to 19" in info
    rows = call(client, "/embed", "3 7 19", "")["token-table"]
    assert [row[1] for row in rows["data"][1:4]] == [3, 7, 19]
