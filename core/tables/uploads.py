"""Uploaded tables: a file from a stranger, read without trusting anything in it.

Students upload their own embedding tables to a Space the whole class shares, so every file is
treated as hostile until it has been checked: the content, never the name, picks the reader;
nothing in a file runs; each header is checked against the file's size and `UploadLimits`
before any library reads on its say-so; and every problem becomes a sentence (`read_upload`
gives the rules). A file holding BERT's embedding tables becomes a whole `BertEmbedding`
(through `core.model.checkpoints.bert_state_to_embedding`, the one mapping of BERT's names); a
file holding one 2-D table (a tensor, an array, word vectors) becomes a token table, with its
words when the file has them.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
import torch
from safetensors import safe_open

from core.model.checkpoints import RENAMES, bert_state_to_embedding, check_numbers
from core.model.embedding import BertEmbedding
from core.process import offload

Kind = Literal["bert", "token"]
Format = Literal["safetensors", "torch", "npy", "word2vec-text", "word2vec-binary"]

# how each format is named in notes
FORMATS: dict[Format, str] = {
    "safetensors": "a safetensors file",
    "torch": "a PyTorch checkpoint",
    "npy": "a NumPy .npy file",
    "word2vec-text": "a word-vector text file",
    "word2vec-binary": "a word2vec binary file",
}
# the formats a file name promises; ".bin" is used by PyTorch and by word2vec alike
SUFFIX_FORMATS: dict[str, tuple[Format, ...]] = {
    ".safetensors": ("safetensors",),
    ".pt": ("torch",),
    ".pth": ("torch",),
    ".bin": ("torch", "word2vec-binary"),
    ".npy": ("npy",),
    ".txt": ("word2vec-text",),
    ".vec": ("word2vec-text",),
}
ACCEPTED_FORMATS = (
    "a safetensors file (.safetensors), a PyTorch checkpoint saved with torch.save (.pt, .pth, "
    ".bin), a NumPy array saved with numpy.save (.npy), or word vectors in word2vec or GloVe "
    "format (text .txt/.vec, or word2vec binary .bin)"
)
ACCEPTED_CONTENTS = (
    f"one 2-D table (rows × width), or BERT's embedding tables {', '.join(RENAMES)} "
    f"(a 'bert.embeddings.' prefix is fine)"
)
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")

# enough of the file to recognise every format, and to hold the first row of a text file as
# wide as max_width allows (4096 numbers of up to 31 characters and a space)
HEAD_BYTES = 128 * 2**10
# rows left free after an uploaded token table, in the same storage: the app writes the rows of
# its three markers ([UNK], [CLS], [SEP]) there (`UploadedTable.token_table_with`), so taking in
# a table of up to 229 MiB holds one copy of it, not two (were the markers' rows a copy, every
# upload would briefly hold its table twice)
SPARE_ROWS = 3
# tensors one file may list: a whole BERT-large (about 400) fits, so a model uploads whole;
# each listed tensor costs Python objects before any check can look at it
MAX_TENSORS = 1_024
# a safetensors header is JSON parsed in one go, before anything in it can be checked: its
# length is bounded first, with room for MAX_TENSORS entries with long names
MAX_HEADER_BYTES = 2**20
# a checkpoint's zip holds about six files plus one per stored tensor
MAX_ZIP_ENTRIES = 2 * MAX_TENSORS
# zipfile and torch both read the whole central directory (46 bytes and a name per entry)
MAX_ZIP_DIRECTORY_BYTES = 2**20


@dataclass(frozen=True)
class UploadLimits:
    """How much one upload may hold; the Space is shared by a class, so nobody gets it all."""

    max_bytes: int = 200 * 2**20  # the file itself, bounded as it streams in (ui/files.py)
    max_rows: int = 500_000  # rows of a table: GloVe 6B's 400,000 words fit
    max_width: int = 4096  # numbers per row: four times BERT-large's 1024
    max_cells: int = 60_000_000  # rows × width, ~240 MB as float32

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_rows", "max_width", "max_cells"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}.")


# eq=False: tensors have no single truth value, so two uploads are equal only if they are one
@dataclass(frozen=True, eq=False)
class UploadedTable:
    """What an upload turned out to hold, checked and ready for the app."""

    kind: Kind  # "bert" (a whole embedding layer) or "token" (just a token table)
    format: Format  # what the content is, whatever the file's name says
    embedding: BertEmbedding | None  # kind "bert": the whole layer, in eval mode, float32
    # kind "token": (rows, width) float32, with SPARE_ROWS free rows after it in its storage
    token_table: torch.Tensor | None = field(repr=False)
    # word vectors: the words in row order; None for a bare matrix. kept out of repr
    # because GloVe has 400,000 of them
    words: tuple[str, ...] | None = field(repr=False)
    notes: tuple[str, ...] = ()  # plain sentences for the person who uploaded it
    # the file's content, hashed: pages that upload the same file share one table (core.tables.presets)
    digest: str = ""
    name: str = ""  # the file's name as it came (a script of the view names it: core/drawing/code.py)

    def token_table_with(self, more: torch.Tensor) -> torch.Tensor:
        """The token table with the rows `more` (at most SPARE_ROWS) after it, written into the
        free rows its storage has for them: no second copy of a table of up to 229 MiB.

        Every table made so shares those rows: pass the same `more` each time (the markers'
        rows are drawn from a fixed seed). A table made by hand, without the free rows, is copied.
        """
        table = self.token_table
        assert table is not None, "a token table: this upload holds a whole layer"
        rows, width = table.shape
        if not _is_room(table) or len(more) > SPARE_ROWS:
            return torch.cat([table, more])
        grown = table.new_empty(0).set_(table.untyped_storage(), 0, (rows + len(more), width))
        grown[rows:] = more
        return grown


def read_upload(path: str | Path, limits: UploadLimits = UploadLimits()) -> UploadedTable:
    """Read an uploaded embedding table of any accepted format.

    Raises `ValueError` with a sentence a student understands for every problem: an unknown
    or damaged file, a pickle that wants to run code, a table of the wrong shape, type or size,
    NaN or infinite values, ragged or duplicated word vectors. The rules:

    * **The content says what a file is, never its name.** The first bytes (zip, pickle, npy
      and safetensors signatures, a word2vec count line) pick the reader (`_sniff`); a name
      that disagrees only earns a note, so `vectors.npy` that is really safetensors still works
      and a pickle renamed `.txt` still goes through the pickle rules.
    * **Nothing in a file runs.** Pickles are opened only by `torch.load(weights_only=True)`,
      with no fallback; NumPy files only with `allow_pickle=False`. A file that needs more
      than tensors is refused.
    * **Headers are checked before data is read.** Each format's header (safetensors' JSON,
      the npy header, a checkpoint's zip directory, the word2vec count line) is read here and
      checked against the file's size and `limits` first, so a header that lies about sizes is
      caught before any library allocates, decompresses or parses on its say-so.
    * **Every problem is a sentence.** Libraries raise dozens of exception types on damaged
      files; all of them become a `ValueError` that says what was wrong and what is allowed.
    """
    upload = _Upload.open(Path(path), limits)
    fmt = _sniff(upload.head)
    notes = _name_notes(upload.path, fmt)
    found = _READERS[fmt](upload, limits)

    words = None
    if isinstance(found, _WordVectors):
        found, words = found.vectors, found.words
    elif isinstance(found, Mapping) and (lone := _lone_table(found)) is not None:
        found = lone
    if isinstance(found, torch.Tensor):
        table, more = _token_table(found, limits, words)
        return UploadedTable("token", fmt, None, table, words, (*notes, *more), upload.digest(), upload.path.name)
    embedding, more = _bert_layer(found, limits)
    del found  # the file's tensors: the layer holds its own copies, now moved one by one
    embedding.share_memory()  # into shared memory, which the heavy-work process maps (core.process.offload)
    return UploadedTable("bert", fmt, embedding, None, None, (*notes, *more), upload.digest(), upload.path.name)


def reading_bytes(path: str | Path, limits: UploadLimits = UploadLimits()) -> int:
    """The most memory `read_upload(path)` and taking in its table hold at once, from the
    file's size and header alone, so the memory budget can reserve it before anything is read.

    A float32 .npy file is read straight into its table's storage (the table, about the file's
    size); another .npy file is read whole, then converted into the table. Other formats are
    read by their libraries, then copied into a table with room for the markers: twice the file
    (for float32; a float16 checkpoint's float32 table is twice its size, so reading
    one holds up to three times the file, a moment beyond what was reserved). A file
    `read_upload` will refuse costs nothing here; it is refused there, with its reason.
    """
    try:
        upload = _Upload.open(Path(path), limits)
        if _sniff(upload.head) != "npy":
            return 2 * upload.size
        (rows, width), fortran_order, dtype, _ = _npy_header(upload, limits)
    except ValueError:
        return 0
    table = (rows + SPARE_ROWS) * width * 4
    return table if _reads_in_place(fortran_order, dtype) else table + rows * width * dtype.itemsize


def _room(rows: int, width: int) -> torch.Tensor:
    """An empty float32 (rows, width) table with SPARE_ROWS free rows after it in its storage,
    in shared memory, which the heavy-work process maps rather than copies (`core.process.offload`)."""
    return offload.shared_empty((rows + SPARE_ROWS) * width).view(rows + SPARE_ROWS, width)[:rows]


def _is_room(table: torch.Tensor) -> bool:
    """Whether `table` is one `_room` made: float32, at the start of a storage SPARE_ROWS rows longer."""
    rows, width = table.shape
    return (table.dtype == torch.float32 and table.is_contiguous() and table.storage_offset() == 0
            and table.untyped_storage().nbytes() == (rows + SPARE_ROWS) * width * 4)


# --- the file and what it is -------------------------------------------------------------------


@dataclass(frozen=True)
class _Upload:
    """An uploaded file that exists, is not empty and is within the size limit."""

    path: Path
    size: int
    head: bytes  # the first HEAD_BYTES, from which the format is recognised

    @classmethod
    def open(cls, path: Path, limits: UploadLimits) -> _Upload:
        if not path.is_file():
            raise ValueError(f"there is no file to read at {path}.")
        size = path.stat().st_size
        if size == 0:
            raise ValueError("the file is empty; upload a file that holds a table.")
        if size > limits.max_bytes:
            raise ValueError(
                f"the file is {size / 2**20:.1f} MB; files of up to {limits.max_bytes / 2**20:g} MB are allowed."
            )
        with path.open("rb") as file:
            head = file.read(HEAD_BYTES)
        return cls(path, size, head)

    def digest(self) -> str:
        """The content's SHA-256 (the file read once more, in pieces: cheap beside reading it)."""
        with self.path.open("rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()


# a word2vec header line: "<count> <dim>"
_COUNT_LINE = re.compile(rb"\s*(\d+)[ \t]+(\d+)\s*")
# control characters never found in a text file, and nearly always among raw float32 bytes
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _sniff(head: bytes) -> Format:
    """The format the first bytes announce; the file's name is never consulted."""
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "torch"  # a zip archive, torch.save's format since PyTorch 1.6
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    # before pickles: the low byte of safetensors' header length may be 0x80
    if head[8:9] == b"{":
        return "safetensors"  # an 8-byte little-endian header length, then the JSON header
    if head.startswith((b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")):
        return "torch"  # a bare pickle: torch.save's legacy format, or pickle.dump
    first, _, rest = head.partition(b"\n")
    count_line = _COUNT_LINE.fullmatch(first)
    if count_line is None:
        if _is_text_row(first):
            return "word2vec-text"  # GloVe: rows without a count line
        raise ValueError(f"this file is not in a format the explorer reads; accepted are {ACCEPTED_FORMATS}.")
    # both word2vec formats start with the same count line; a readable first row settles it,
    # otherwise bytes that no text holds do
    width = int(count_line[2])
    if _is_text_row(rest.partition(b"\n")[0], width) or not _looks_binary(rest):
        return "word2vec-text"
    return "word2vec-binary"


def _is_text_row(line: bytes, width: int | None = None) -> bool:
    """Whether a line reads as "word v1 v2 …" (with `width` values, when given)."""
    fields = line.rstrip().split(b" ")
    if len(fields) < 2 or (width is not None and len(fields) != width + 1):
        return False
    try:
        for value in fields[1:]:
            float(value)
    except ValueError:
        return False
    return True


def _looks_binary(data: bytes) -> bool:
    """Whether the bytes after a count line are raw float32s rather than text."""
    if _CONTROL_BYTES.search(data):
        return True
    try:
        # not final: the sample may end in the middle of a character
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return True
    return False


def _name_notes(path: Path, fmt: Format) -> list[str]:
    """A note when the file's name promises another format than its content has."""
    suffix = path.suffix.lower()
    if fmt in SUFFIX_FORMATS.get(suffix, (fmt,)):
        return []
    return [f"this file is {FORMATS[fmt]} although its name ends in {path.suffix}."]


# --- readers: each checks its format's header, then lets the format's own library read ---------


class _WordVectors(NamedTuple):
    words: tuple[str, ...]
    vectors: torch.Tensor  # (rows, width)


_Found = torch.Tensor | Mapping[str, torch.Tensor] | _WordVectors

# safetensors' dtype -> torch's name for it and its size in bytes; integers are listed so that
# a checkpoint's integer buffers (position_ids) pass, and a table of them gets a clear answer
_SAFETENSORS_DTYPES = {
    "F64": ("float64", 8),
    "F32": ("float32", 4),
    "F16": ("float16", 2),
    "BF16": ("bfloat16", 2),
    "F8_E4M3": ("float8_e4m3fn", 1),
    "F8_E5M2": ("float8_e5m2", 1),
    "I64": ("int64", 8),
    "I32": ("int32", 4),
    "I16": ("int16", 2),
    "I8": ("int8", 1),
    "U64": ("uint64", 8),
    "U32": ("uint32", 4),
    "U16": ("uint16", 2),
    "U8": ("uint8", 1),
    "BOOL": ("bool", 1),
}


def _read_safetensors(upload: _Upload, limits: UploadLimits) -> dict[str, torch.Tensor]:
    header = _safetensors_header(upload)
    if len(header) == 1:
        # a lone table is checked before its bytes are read
        ((dtype, shape),) = header.values()
        _check_shape(shape, limits)
        _check_dtype(dtype)
    try:
        with safe_open(upload.path, framework="pt", device="cpu") as file:
            return {key: file.get_tensor(key) for key in file.keys()}  # noqa: SIM118 (not a dict)
    except Exception:
        raise ValueError("this safetensors file could not be read; it is damaged.") from None


def _safetensors_header(upload: _Upload) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each tensor's dtype and shape, once the header has been checked against the file.

    The safetensors library checks its header too, but answers a lie with a bare exception;
    checking here first turns every inconsistency into a sentence.
    """
    length = int.from_bytes(upload.head[:8], "little")
    if length > MAX_HEADER_BYTES:
        raise ValueError(
            f"this safetensors file says its header is {length:,} bytes long; headers of up to "
            f"{MAX_HEADER_BYTES:,} bytes are allowed (room for {MAX_TENSORS:,} tensors)."
        )
    room = upload.size - 8
    if length > room:
        raise ValueError(
            f"this safetensors file says its header is {length:,} bytes long, but only {room:,} bytes "
            f"follow; the file is damaged or cut off."
        )
    with upload.path.open("rb") as file:
        file.seek(8)
        raw = file.read(length)
    # every tensor's entry has data_offsets: counting them costs nothing next to parsing
    listed = raw.count(b'"data_offsets"')
    if listed > MAX_TENSORS:
        raise ValueError(
            f"this safetensors file lists {listed:,} tensors; at most {MAX_TENSORS:,} are allowed in one file."
        )
    try:
        header = json.loads(raw)
    except Exception:  # bad UTF-8, bad JSON, or nesting deep enough to exhaust the stack
        raise ValueError("this safetensors file's header is not valid JSON; the file is damaged.") from None
    if not isinstance(header, dict):
        raise ValueError("this safetensors file's header is not a JSON object; the file is damaged.")
    data_size = room - length
    return {key: _safetensors_entry(key, entry, data_size) for key, entry in header.items() if key != "__metadata__"}


def _safetensors_entry(key: str, entry: object, data_size: int) -> tuple[str, tuple[int, ...]]:
    match entry:
        case {"dtype": str(dtype), "shape": [*shape], "data_offsets": [int(begin), int(end)]} if (
            all(_is_count(n) for n in (*shape, begin, end)) and begin <= end
        ):
            pass
        case _:
            raise ValueError(f"this safetensors file's entry for {key} is malformed; the file is damaged.")
    if dtype not in _SAFETENSORS_DTYPES:
        raise ValueError(
            f"{key} holds {dtype} values, a type the explorer does not read; tables must hold "
            f"floating-point numbers ({', '.join(FLOAT_DTYPES)})."
        )
    name, item_size = _SAFETENSORS_DTYPES[dtype]
    if end > data_size:
        raise ValueError(
            f"this safetensors file's header places {key} at bytes {begin:,} to {end:,} of its data, "
            f"but the file holds only {data_size:,} bytes of data; the file is damaged or cut off."
        )
    shape = tuple(shape)
    needed = math.prod(shape) * item_size
    if end - begin != needed:
        raise ValueError(
            f"{key} has shape {shape} of {name}, which takes {needed:,} bytes, but this safetensors "
            f"file's header gives it {end - begin:,}; the file is damaged."
        )
    return name, shape


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _read_torch(upload: _Upload, limits: UploadLimits) -> torch.Tensor | dict[str, torch.Tensor]:
    if upload.head.startswith(b"PK"):
        _check_zip(upload, limits)
    try:
        # weights_only=True and nothing else: the alternative runs whatever code the file carries
        loaded = torch.load(upload.path, map_location="cpu", weights_only=True)
    except Exception:
        # torch names truncation and forbidden objects alike ("Unsupported global"), so one
        # sentence covers both
        raise ValueError(
            "this file could not be read as a PyTorch checkpoint: it is damaged or cut off, or it "
            "holds Python objects other than tensors, which are never loaded because loading them "
            "could run code on the server. Save only tensors: torch.save(table, path) or "
            "torch.save(model.state_dict(), path)."
        ) from None
    if isinstance(loaded, torch.Tensor):
        return _plain_tensor(loaded, "the checkpoint's tensor")
    if isinstance(loaded, Mapping) and all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in loaded.items()
    ):
        return {key: _plain_tensor(value, key) for key, value in loaded.items()}
    raise ValueError(
        f"this checkpoint holds a {type(loaded).__name__}, not a tensor or a state dict of named "
        f"tensors; a file must hold {ACCEPTED_CONTENTS}."
    )


def _check_zip(upload: _Upload, limits: UploadLimits) -> None:
    """Refuse a zip whose entries could unpack to more than the file holds, before torch opens it.

    torch.save stores every entry uncompressed, so a compressed entry means the file was made
    some other way, and it could be a zip bomb: a few kilobytes that inflate to gigabytes.
    """
    entries, directory = _zip_directory(upload)
    if entries > MAX_ZIP_ENTRIES:
        raise ValueError(
            f"this checkpoint lists {entries:,} entries; a PyTorch checkpoint holds one per tensor and "
            f"a few more, and at most {MAX_ZIP_ENTRIES:,} are allowed."
        )
    if directory > MAX_ZIP_DIRECTORY_BYTES:
        raise ValueError(
            f"this checkpoint's list of entries takes {directory:,} bytes; at most "
            f"{MAX_ZIP_DIRECTORY_BYTES:,} are allowed (room for {MAX_ZIP_ENTRIES:,} entries)."
        )
    try:
        with zipfile.ZipFile(upload.path) as archive:
            entries = archive.infolist()
    except Exception:
        raise ValueError("this file is a zip archive that is damaged or cut off.") from None
    names = [entry.filename for entry in entries]
    if names and all(name.endswith(".npy") for name in names):
        raise ValueError(
            "this file is a NumPy .npz archive, which the explorer does not read; save the one "
            "table with numpy.save(path, table) as a .npy file."
        )
    if not any(name == "data.pkl" or name.endswith("/data.pkl") for name in names):
        raise ValueError(
            f"this file is a zip archive but not a PyTorch checkpoint (torch.save writes one holding "
            f"data.pkl); accepted are {ACCEPTED_FORMATS}."
        )
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED:
            raise ValueError(
                f"this checkpoint's entry {entry.filename} is compressed; torch.save never compresses, "
                f"and a compressed entry may unpack to far more than the upload limit. Save the "
                f"table again with torch.save."
            )
        if entry.file_size > upload.size:
            raise ValueError(
                f"this checkpoint's entry {entry.filename} claims {entry.file_size:,} bytes, more than "
                f"the whole file ({upload.size:,} bytes); the file is damaged."
            )
    total = sum(entry.file_size for entry in entries)
    if total > 2 * limits.max_bytes:
        raise ValueError(
            f"this checkpoint's entries add up to {total:,} bytes, more than the "
            f"{2 * limits.max_bytes:,} allowed; the file is damaged or made to exhaust memory."
        )


def _zip_directory(upload: _Upload) -> tuple[int, int]:
    """How many entries a zip's end record declares, and the bytes of its central directory,
    read before the directory is parsed.

    zipfile builds a Python object per entry, so a 200 MB archive of empty entries would cost
    gigabytes of memory before any other check could look at them; zipfile and torch read
    as many directory bytes as the end record says, so bounding both bounds their work.
    """
    # the end record is 22 bytes and a comment of up to 65,535 more, at the end of the file
    with upload.path.open("rb") as file:
        file.seek(max(0, upload.size - 22 - 0xFFFF))
        tail = file.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise ValueError("this file is a zip archive that is damaged or cut off.")
    # 0xFFFF and 0xFFFFFFFF mean "see the zip64 record": more than any checkpoint needs
    return int.from_bytes(tail[at + 10 : at + 12], "little"), int.from_bytes(tail[at + 12 : at + 16], "little")


def _plain_tensor(tensor: torch.Tensor, what: str) -> torch.Tensor:
    """A dense tensor that is not part of anyone's autograd graph (a saved Parameter is)."""
    if tensor.layout != torch.strided:
        raise ValueError(f"{what} is a sparse tensor; save it as a dense one (tensor.to_dense()).")
    return tensor.detach()


_NPY_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _npy_header(upload: _Upload, limits: UploadLimits) -> tuple[tuple[int, int], bool, np.dtype, int]:
    """A checked .npy file's shape, Fortran order, dtype and where its numbers start."""
    with upload.path.open("rb") as file:
        try:
            version = np.lib.format.read_magic(file)
            shape, fortran_order, dtype = _NPY_HEADER_READERS[version](file)
        except Exception:
            raise ValueError(
                "this .npy file's header is damaged, or uses a format version numpy.save does not "
                "write for plain arrays."
            ) from None
        data_start = file.tell()
    if dtype.hasobject:
        raise ValueError(
            "this .npy file holds Python objects (dtype object), which are never loaded because "
            "unpickling them could run code on the server; save a float array instead: "
            "numpy.save(path, table.astype('float32'))."
        )
    _check_shape(shape, limits)
    _check_dtype(dtype.name)
    needed = math.prod(shape) * dtype.itemsize
    if upload.size - data_start < needed:
        raise ValueError(
            f"this .npy file's header promises {needed:,} bytes of numbers but the file holds "
            f"{upload.size - data_start:,}; the file is cut off."
        )
    return shape, fortran_order, dtype, data_start


def _reads_in_place(fortran_order: bool, dtype: np.dtype) -> bool:
    """Whether a .npy file's numbers are the table's bytes as they are: float32 of this
    machine's byte order, row after row, which is what numpy.save writes for a float32 table."""
    return not fortran_order and dtype == np.dtype(np.float32)


def _read_npy(upload: _Upload, limits: UploadLimits) -> torch.Tensor:
    shape, fortran_order, dtype, data_start = _npy_header(upload, limits)
    table = _room(*shape)
    if _reads_in_place(fortran_order, dtype):
        # straight from the file into the table's storage: one copy of the table, never two
        with upload.path.open("rb") as file:
            file.seek(data_start)
            read = file.readinto(memoryview(table.numpy()).cast("B"))
        if read != table.numel() * 4:
            raise ValueError("this .npy file could not be read; it is damaged.")
        return table
    try:
        array = np.load(upload.path, allow_pickle=False)
    except Exception:
        raise ValueError("this .npy file could not be read; it is damaged.") from None
    # torch reads only the machine's own byte order
    table.copy_(torch.from_numpy(array.astype(array.dtype.newbyteorder("="), copy=False)))
    return table


def _read_word2vec_text(upload: _Upload, limits: UploadLimits) -> _WordVectors:
    count_line = _count_line(upload, limits)
    rows, width = _scan_text_rows(upload.path, count_line)
    _check_shape((rows, width), limits)
    return _read_with_gensim(upload.path, rows, binary=False, has_count_line=count_line is not None)


def _read_word2vec_binary(upload: _Upload, limits: UploadLimits) -> _WordVectors:
    count_line = _count_line(upload, limits)
    assert count_line is not None, "the binary format is recognised by its count line"
    rows, width = count_line
    # gensim allocates rows × width before reading; make sure the file can back that up
    needed = rows * (2 + 4 * width)  # each row: a word of at least one byte, a space, float32s
    held = upload.size - len(upload.head.partition(b"\n")[0]) - 1
    if needed > held:
        raise ValueError(
            f"the header promises {rows:,} words of {width:,} numbers, which take at least {needed:,} "
            f"bytes, but the file holds only {held:,} after its header; the file is damaged or cut off."
        )
    return _read_with_gensim(upload.path, rows, binary=True, has_count_line=True)


def _count_line(upload: _Upload, limits: UploadLimits) -> tuple[int, int] | None:
    """The (rows, width) a word2vec header announces, checked against the limits; None for GloVe."""
    match = _COUNT_LINE.fullmatch(upload.head.partition(b"\n")[0])
    if match is None:
        return None
    rows, width = int(match[1]), int(match[2])
    _check_shape((rows, width), limits)
    return rows, width


def _scan_text_rows(path: Path, count_line: tuple[int, int] | None) -> tuple[int, int]:
    """Count a text file's rows and check they all have the same width, before gensim reads it.

    gensim checks neither: a row with one number is silently repeated across the whole width,
    and one with too few makes numpy complain about broadcasting. Counting spaces is cheap.
    """
    width = count_line[1] if count_line else None
    rows = 0
    with path.open("rb") as file:
        if count_line:
            file.readline()
        for line_no, line in enumerate(file, start=2 if count_line else 1):
            if not line.strip():
                raise ValueError(f"line {line_no} is empty; every line must be a word and its numbers.")
            numbers = line.rstrip().count(b" ")
            _check_numbers_written(line, line_no)
            if width is None:
                width = numbers  # GloVe: the first row sets the width
            if numbers != width:
                if not line.endswith(b"\n"):
                    raise ValueError(f"the file ends in the middle of line {line_no}; it is cut off.")
                expected = "the header says" if count_line else "line 1 has"
                have = f"{numbers} number" if numbers == 1 else f"{numbers} numbers"
                raise ValueError(
                    f"line {line_no} has a word and {have}, but {expected} {width}; every row must have the same width."
                )
            rows += 1
    if count_line and rows != count_line[0]:
        why = "the file is cut off" if rows < count_line[0] else "the header must count every line"
        raise ValueError(f"the header says the file has {count_line[0]:,} words, but {rows:,} lines follow it; {why}.")
    assert width is not None, "the format was recognised from a first line"
    return rows, width


def _check_numbers_written(line: bytes, line_no: int) -> None:
    """Refuse numbers written as Python reads them but the format does not: gensim parses each with
    Python's float, which takes 1_000 and digits of any script, where word2vec and GloVe write
    plain ASCII decimals. A cheap look at the line; the value is named only when one is wrong."""
    values = line.partition(b" ")[2]
    if b"_" not in values and values.isascii():
        return
    wrong = next(v for v in values.split() if b"_" in v or not v.isascii()).decode("utf-8", "replace")
    shown = wrong if len(wrong) <= 24 else wrong[:23] + "…"
    raise ValueError(f"line {line_no} writes the number {shown!r}, which word-vector files do not: numbers are plain "
                     "decimals (1000, -0.25, 1e-3), with no underscores or digits of other scripts.")


def _read_with_gensim(path: Path, rows: int, *, binary: bool, has_count_line: bool) -> _WordVectors:
    """Parse checked word vectors with gensim, turning its exceptions into sentences."""
    from gensim.models import KeyedVectors  # here, because importing gensim takes seconds

    # gensim (through smart_open) decompresses by the file's name, and the name is the
    # uploader's choice: a link named by us makes it read exactly the bytes that were checked
    with tempfile.TemporaryDirectory() as folder:
        link = Path(folder) / "vectors"
        link.symlink_to(path.resolve())
        try:
            vectors = KeyedVectors.load_word2vec_format(
                str(link), binary=binary, no_header=not has_count_line, unicode_errors="strict"
            )
        except UnicodeDecodeError as err:
            raise ValueError(
                f"the words must be UTF-8 text, but the file holds the byte 0x{err.object[err.start]:02x} "
                f"where UTF-8 does not allow it; save the file with UTF-8 encoding."
            ) from None
        except ValueError as err:
            raise ValueError(
                f"a value could not be read as a number ({err}); each line must be a word followed by "
                f"numbers separated by single spaces."
            ) from None
        except EOFError:
            raise ValueError("the file ends before the last word its header counts; it is cut off.") from None
        except Exception:
            raise ValueError("this file could not be read as word vectors; it is damaged.") from None
    # gensim keeps the first of two equal words and leaves an empty row for the second
    if len(vectors.key_to_index) < rows:
        raise ValueError(
            f"the file has {rows:,} rows but only {len(vectors.key_to_index):,} different words; each "
            f"word may appear only once, since a word has one row."
        )
    return _WordVectors(tuple(vectors.index_to_key), torch.from_numpy(vectors.vectors))


_READERS: dict[Format, Callable[[_Upload, UploadLimits], _Found]] = {
    "safetensors": _read_safetensors,
    "torch": _read_torch,
    "npy": _read_npy,
    "word2vec-text": _read_word2vec_text,
    "word2vec-binary": _read_word2vec_binary,
}


# --- from tensors to a table -------------------------------------------------------------------


def _lone_table(state: Mapping[str, torch.Tensor]) -> torch.Tensor | None:
    """The token table when a state dict holds one tensor; None when it holds BERT's tables.

    One tensor is a token table whatever its name, so BERT's word_embeddings cut out on its own
    works too; several are accepted only as BERT's embedding layer.
    """
    if len(state) == 1:
        return next(iter(state.values()))
    if any(key == name or key.endswith(f".{name}") for key in state for name in RENAMES):
        return None
    if not state:
        raise ValueError(f"the file holds no tensors; it must hold {ACCEPTED_CONTENTS}.")
    keys = sorted(state)
    listed = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
    raise ValueError(f"the file holds {len(keys)} tensors ({listed}); it must hold {ACCEPTED_CONTENTS}.")


def _token_table(
    table: torch.Tensor, limits: UploadLimits, words: tuple[str, ...] | None
) -> tuple[torch.Tensor, list[str]]:
    """A checked (rows, width) float32 table, and a note if its numbers were converted."""
    _check_shape(tuple(table.shape), limits)
    dtype = _dtype_name(table.dtype)
    _check_dtype(dtype)
    if not _is_room(table):  # read by a library: copied into a room (a .npy file was read into one)
        table = _room(*table.shape).copy_(table)
    check_numbers(table, words=words)
    return table, _conversion_notes([dtype])


def _bert_layer(state: Mapping[str, torch.Tensor], limits: UploadLimits) -> tuple[BertEmbedding, list[str]]:
    """BERT's embedding layer, mapped by core.model.checkpoints after the checks only an upload needs."""
    floats = {key: tensor for key, tensor in state.items() if tensor.is_floating_point()}
    embedding = bert_state_to_embedding(state)  # checks every table it maps, NaN/Inf included
    for what, table in (
        ("the token table", embedding.tok_embed),
        ("the position table", embedding.pos_embed),
        ("the segment table", embedding.seg_embed),
    ):
        _check_limits(*table.weight.shape, limits, what)
    return embedding, _conversion_notes(_dtype_name(tensor.dtype) for tensor in floats.values())


def _check_shape(shape: tuple[int, ...], limits: UploadLimits) -> None:
    if len(shape) != 2:
        raise ValueError(f"a table must be 2-D (rows × width); this one is {len(shape)}-D with shape {shape}.")
    rows, width = shape
    if rows < 0 or width < 0:
        raise ValueError(f"the file gives the table the shape {shape}, and no size can be negative; the file is "
                         "damaged. A table is rows × width, each at least 1 (at least 2 rows).")
    if rows < 2:
        have = "no rows" if rows == 0 else "only 1 row"
        raise ValueError(
            f"the table has {have} (shape {shape}); a table needs at least 2 rows, because the plot "
            f"shows where rows lie relative to one another, and one row has nothing to compare with."
        )
    if width == 0:
        raise ValueError(f"the table's rows are empty (shape {shape}); each row needs at least 1 number.")
    _check_limits(rows, width, limits, "the table")


def _check_limits(rows: int, width: int, limits: UploadLimits, what: str) -> None:
    if width > limits.max_width:
        raise ValueError(f"{what} is {width:,} numbers wide; at most {limits.max_width:,} are allowed.")
    if rows > limits.max_rows:
        raise ValueError(f"{what} has {rows:,} rows; at most {limits.max_rows:,} are allowed.")
    if rows * width > limits.max_cells:
        raise ValueError(
            f"{what} has {rows:,} × {width:,} = {rows * width:,} numbers; at most {limits.max_cells:,} are allowed."
        )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_dtype(name: str) -> None:
    if name not in FLOAT_DTYPES:
        raise ValueError(
            f"the table holds {name} values; a table must hold floating-point numbers ({', '.join(FLOAT_DTYPES)})."
        )


def _conversion_notes(dtypes: Iterable[str]) -> list[str]:
    converted = sorted(set(dtypes) - {"float32"})
    return [f"{name} values were converted to float32." for name in converted]
