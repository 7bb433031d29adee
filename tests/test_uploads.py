"""read_upload: every accepted format round-trips, and every bad file gets a sentence.

The files are real: written by torch.save, numpy.save, safetensors and gensim, or crafted byte
by byte where a hostile file is the point (pickles that run commands, zip bombs, headers that
lie about sizes).
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from gensim.models import KeyedVectors
from safetensors.torch import save_file

from core.model.checkpoints import minilm_dir
from core.tables.uploads import SPARE_ROWS, UploadLimits, read_upload, reading_bytes

# torch warns about pickle.dump's protocol just before it refuses the file
pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

WORDS = ("the", "cat", "sat", "on", "café", "mat", "and", "purred", ".", "!")


@pytest.fixture()
def table() -> torch.Tensor:
    return torch.randn(len(WORDS), 4, generator=torch.Generator().manual_seed(0))


def save_npy(path: Path, array: np.ndarray, **kwargs) -> None:
    # through a file object, because numpy.save adds ".npy" to any other name
    with path.open("wb") as file:
        np.save(file, array, **kwargs)


def save_word2vec(path: Path, table: torch.Tensor, binary: bool) -> None:
    vectors = KeyedVectors(table.shape[1])
    vectors.add_vectors(list(WORDS), table.numpy())
    vectors.save_word2vec_format(str(path), binary=binary)


def save_glove(path: Path, table: torch.Tensor) -> None:
    rows = (" ".join([word, *(repr(float(x)) for x in row)]) for word, row in zip(WORDS, table, strict=True))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def save_safetensors_header(path: Path, header: dict, data: bytes) -> None:
    """A safetensors file written by hand, so its header can say anything."""
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


# file name -> how to write a table under that name, and the format read_upload should find
WRITERS: dict[str, tuple[Callable[[Path, torch.Tensor], None], str]] = {
    "table.safetensors": (lambda path, t: save_file({"embedding": t}, path), "safetensors"),
    "table.pt": (lambda path, t: torch.save(t, path), "torch"),
    "state.pth": (lambda path, t: torch.save({"weight": t}, path), "torch"),
    "legacy.bin": (lambda path, t: torch.save(t, path, _use_new_zipfile_serialization=False), "torch"),
    "table.npy": (lambda path, t: save_npy(path, t.numpy()), "npy"),
    "vectors.txt": (lambda path, t: save_word2vec(path, t, binary=False), "word2vec-text"),
    "vectors.bin": (lambda path, t: save_word2vec(path, t, binary=True), "word2vec-binary"),
    "glove.txt": (save_glove, "word2vec-text"),
}


# --- every format round-trips ------------------------------------------------------------------


@pytest.mark.parametrize("name", WRITERS)
def test_a_table_round_trips(tmp_path, table, name):
    write, fmt = WRITERS[name]
    write(tmp_path / name, table)
    upload = read_upload(str(tmp_path / name))
    assert (upload.kind, upload.format, upload.embedding, upload.notes) == ("token", fmt, None, ())
    assert upload.words == (WORDS if fmt.startswith("word2vec") else None)
    assert upload.token_table.dtype == torch.float32
    assert torch.equal(upload.token_table, table)


def test_header_less_glove_text_by_hand(tmp_path):
    path = tmp_path / "glove.6B.3d.txt"
    path.write_text("the 0.5 -1.25 3\ncafé 1 2 3\n. -0.5 0 1e-3\n", encoding="utf-8")
    upload = read_upload(path)
    assert upload.format == "word2vec-text"
    assert upload.words == ("the", "café", ".")
    assert torch.equal(upload.token_table, torch.tensor([[0.5, -1.25, 3], [1, 2, 3], [-0.5, 0, 1e-3]]))


def test_a_compressed_looking_name_does_not_make_gensim_decompress(tmp_path, table):
    # gensim picks a decompressor by the file's name; the bytes are plain text
    save_glove(tmp_path / "vectors.txt.gz", table)
    assert torch.equal(read_upload(tmp_path / "vectors.txt.gz").token_table, table)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_float_types_are_converted_with_a_note(tmp_path, table, dtype):
    save_file({"embedding": table.to(dtype)}, tmp_path / "table.safetensors")
    upload = read_upload(tmp_path / "table.safetensors")
    name = str(dtype).removeprefix("torch.")
    assert upload.notes == (f"{name} values were converted to float32.",)
    assert torch.equal(upload.token_table, table.to(dtype).float())


def test_a_saved_parameter_loads_without_its_gradient(tmp_path, table):
    torch.save(torch.nn.Parameter(table), tmp_path / "parameter.pt")
    assert not read_upload(tmp_path / "parameter.pt").token_table.requires_grad


# --- a table is held once --------------------------------------------------------------------


def _storage(tensor: torch.Tensor) -> tuple[int, int]:
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


@pytest.mark.parametrize("name", WRITERS)
def test_every_token_table_has_free_rows_for_the_markers_after_it(tmp_path, table, name):
    """The app adds three markers' rows to an uploaded table: they go into free rows of the
    table's own storage, so the table (up to 229 MiB) is never held twice while it is taken in."""
    write, _ = WRITERS[name]
    write(tmp_path / name, table)
    upload = read_upload(tmp_path / name)
    rows, width = table.shape
    assert upload.token_table.storage_offset() == 0
    assert _storage(upload.token_table)[1] == (rows + SPARE_ROWS) * width * 4
    markers = torch.randn(SPARE_ROWS, width)
    grown = upload.token_table_with(markers)
    assert _storage(grown) == _storage(upload.token_table)  # the same memory, not a copy
    assert torch.equal(grown, torch.cat([table, markers]))
    assert torch.equal(upload.token_table, table)  # the upload's own view is unchanged


def test_a_table_made_by_hand_is_copied_not_written_past_its_end(table):
    """Only a table read with room after it is grown in place: a bare tensor's storage ends at
    its last row, and a slice's next rows belong to someone else."""
    from core.tables.uploads import UploadedTable

    whole = torch.randn(len(WORDS) + SPARE_ROWS, 4)
    before = whole.clone()
    for made in (table, whole[1 : len(WORDS) + 1]):
        upload = UploadedTable("token", "npy", None, made, None, ())
        grown = upload.token_table_with(torch.ones(SPARE_ROWS, 4))
        assert _storage(grown)[0] != _storage(made)[0]
        assert torch.equal(grown[: len(made)], made) and torch.equal(grown[len(made) :], torch.ones(SPARE_ROWS, 4))
    assert torch.equal(whole, before)


@pytest.mark.parametrize(
    ("array", "direct"),
    [
        (np.arange(24, dtype=np.float32).reshape(6, 4), True),
        (np.arange(24, dtype=np.float16).reshape(6, 4), False),
        (np.asfortranarray(np.arange(24, dtype=np.float32).reshape(6, 4)), False),
        (np.arange(24, dtype=">f4").reshape(6, 4), False),
        (np.arange(24, dtype=np.float64).reshape(6, 4), False),
    ],
    ids=["float32", "float16", "fortran-order", "big-endian", "float64"],
)
def test_an_npy_file_reads_right_and_says_what_reading_it_holds(tmp_path, array, direct):
    """A float32 .npy file in C order is read straight into its table: reading it holds the
    table alone. Any other is read whole, then converted, and the budget is told both."""
    save_npy(tmp_path / "t.npy", array)
    upload = read_upload(tmp_path / "t.npy")
    assert torch.equal(upload.token_table, torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)))
    table_bytes = (6 + SPARE_ROWS) * 4 * 4
    assert reading_bytes(tmp_path / "t.npy") == table_bytes + (0 if direct else array.nbytes)


def test_reading_bytes_of_other_formats_is_twice_the_file_and_nothing_for_a_refused_one(tmp_path, table):
    torch.save(table, tmp_path / "t.pt")
    assert reading_bytes(tmp_path / "t.pt") == 2 * (tmp_path / "t.pt").stat().st_size
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    (tmp_path / "empty.npy").write_bytes(b"")
    save_npy(tmp_path / "wide.npy", np.zeros((3, 9), dtype=np.float32))
    for refused in ("bad.npy", "empty.npy", "missing.npy", "wide.npy"):
        assert reading_bytes(tmp_path / refused, UploadLimits(max_width=8)) == 0
        with pytest.raises(ValueError):
            read_upload(tmp_path / refused, UploadLimits(max_width=8))


def test_a_cut_off_float32_npy_file_is_refused(tmp_path):
    save_npy(tmp_path / "t.npy", np.zeros((6, 4), dtype=np.float32))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-8])
    with pytest.raises(ValueError, match="cut off"):
        read_upload(tmp_path / "cut.npy")


# --- BERT's embedding layer --------------------------------------------------------------------


def bert_state(prefix: str = "bert.embeddings.", vocab: int = 50, d: int = 8, maxlen: int = 16) -> dict:
    g = torch.Generator().manual_seed(1)
    return {
        f"{prefix}word_embeddings.weight": torch.randn(vocab, d, generator=g),
        f"{prefix}position_embeddings.weight": torch.randn(maxlen, d, generator=g),
        f"{prefix}token_type_embeddings.weight": torch.randn(2, d, generator=g),
        f"{prefix}LayerNorm.weight": 1 + 0.1 * torch.randn(d, generator=g),
        f"{prefix}LayerNorm.bias": 0.1 * torch.randn(d, generator=g),
        f"{prefix}position_ids": torch.arange(maxlen).unsqueeze(0),  # the buffer checkpoints carry
    }


def assert_layer_holds(embedding, state: dict, prefix: str = "bert.embeddings.") -> None:
    pairs = [
        (embedding.tok_embed.weight, "word_embeddings.weight"),
        (embedding.pos_embed.weight, "position_embeddings.weight"),
        (embedding.seg_embed.weight, "token_type_embeddings.weight"),
        (embedding.norm.weight, "LayerNorm.weight"),
        (embedding.norm.bias, "LayerNorm.bias"),
    ]
    for parameter, name in pairs:
        assert torch.equal(parameter, state[prefix + name].float()), name


def test_bert_tables_in_safetensors_become_the_whole_layer(tmp_path):
    state = bert_state()
    save_file(state, tmp_path / "bert.safetensors")
    upload = read_upload(tmp_path / "bert.safetensors")
    assert (upload.kind, upload.format, upload.notes) == ("bert", "safetensors", ())
    assert upload.token_table is None and upload.words is None
    assert_layer_holds(upload.embedding, state)
    assert upload.embedding.config.eps == 1e-12  # BERT's, not PyTorch's default
    assert not upload.embedding.training


def test_a_half_precision_bert_state_dict_in_a_checkpoint(tmp_path):
    state = {key: t.half() if t.is_floating_point() else t for key, t in bert_state("").items()}
    torch.save(state, tmp_path / "pytorch_model.bin")
    upload = read_upload(tmp_path / "pytorch_model.bin")
    assert (upload.kind, upload.format) == ("bert", "torch")
    assert upload.notes == ("float16 values were converted to float32.",)
    assert_layer_holds(upload.embedding, state, prefix="")


def test_a_whole_bert_model_uploads_as_its_embedding_layer():
    upload = read_upload(minilm_dir() / "model.safetensors")  # encoder layers and all
    assert upload.kind == "bert"
    assert upload.embedding.tok_embed.weight.shape == (30522, 384)


def test_one_tensor_is_a_token_table_whatever_its_name(tmp_path, table):
    save_file({"bert.embeddings.word_embeddings.weight": table}, tmp_path / "words.safetensors")
    assert read_upload(tmp_path / "words.safetensors").kind == "token"


def test_an_incomplete_bert_layer_names_what_is_missing(tmp_path):
    state = bert_state()
    del state["bert.embeddings.position_embeddings.weight"]
    save_file(state, tmp_path / "bert.safetensors")
    with pytest.raises(ValueError, match="position_embeddings.weight is missing"):
        read_upload(tmp_path / "bert.safetensors")


def test_nan_in_a_bert_table_names_the_key_and_row(tmp_path):
    state = bert_state()
    state["bert.embeddings.position_embeddings.weight"][5, 3] = float("nan")
    save_file(state, tmp_path / "bert.safetensors")
    message = r"^row 5 of bert\.embeddings\.position_embeddings\.weight contains NaN"
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / "bert.safetensors")


def test_bert_tables_are_held_to_the_limits(tmp_path):
    save_file(bert_state(vocab=50), tmp_path / "bert.safetensors")
    with pytest.raises(ValueError, match="the token table has 50 rows; at most 40 are allowed"):
        read_upload(tmp_path / "bert.safetensors", UploadLimits(max_rows=40))


# --- the content decides the format ------------------------------------------------------------


@pytest.mark.parametrize(
    ("writer", "name", "fmt", "what"),
    [
        ("table.safetensors", "table.npy", "safetensors", "a safetensors file"),
        ("table.npy", "table.pt", "npy", "a NumPy .npy file"),
        ("table.pt", "table.TXT", "torch", "a PyTorch checkpoint"),
        ("vectors.txt", "vectors.bin", "word2vec-text", "a word-vector text file"),
    ],
)
def test_a_name_that_contradicts_the_content_earns_a_note(tmp_path, table, writer, name, fmt, what):
    WRITERS[writer][0](tmp_path / name, table)
    upload = read_upload(tmp_path / name)
    assert upload.format == fmt
    assert upload.notes == (f"this file is {what} although its name ends in {Path(name).suffix}.",)
    assert torch.equal(upload.token_table, table)


@pytest.mark.parametrize(("writer", "name"), [("table.pt", "pytorch_model.bin"), ("table.npy", "table.dat")])
def test_a_name_that_fits_or_says_nothing_earns_no_note(tmp_path, table, writer, name):
    WRITERS[writer][0](tmp_path / name, table)
    assert read_upload(tmp_path / name).notes == ()


def test_a_safetensors_header_length_that_looks_like_a_pickle(tmp_path, table):
    # a header 640 bytes long starts with 0x80 0x02, the first bytes of a protocol 2 pickle
    raw = json.dumps({"t": {"dtype": "F32", "shape": [10, 4], "data_offsets": [0, 160]}}).encode()
    data = struct.pack("<Q", 640) + raw.ljust(640) + table.numpy().tobytes()
    assert data.startswith(b"\x80\x02")
    (tmp_path / "t.safetensors").write_bytes(data)
    assert torch.equal(read_upload(tmp_path / "t.safetensors").token_table, table)


# --- pickles never run -------------------------------------------------------------------------


class RunsCommand:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


class ExecsCode:
    """Unpickling this executes Python that creates a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').close()",)


def dump_pickle(path: Path, payload: object, protocol: int) -> None:
    with path.open("wb") as file:
        pickle.dump(payload, file, protocol=protocol)


PAYLOADS = {
    "pickle protocol 2": lambda path, evil, t: dump_pickle(path, evil, protocol=2),
    "pickle protocol 5": lambda path, evil, t: dump_pickle(path, {"weight": t, "x": evil}, protocol=5),
    "torch zip": lambda path, evil, t: torch.save({"weight": t, "x": evil}, path),
    "torch legacy": lambda path, evil, t: torch.save([t, evil], path, _use_new_zipfile_serialization=False),
}


@pytest.mark.parametrize("payload", [RunsCommand, ExecsCode])
@pytest.mark.parametrize("container", PAYLOADS)
@pytest.mark.parametrize("name", ["model.pt", "vectors.txt"])
def test_a_pickle_that_would_run_code_is_refused_and_never_runs(tmp_path, table, payload, container, name):
    marker = tmp_path / "pwned"
    path = tmp_path / name
    PAYLOADS[container](path, payload(marker), table)
    with pytest.raises(ValueError, match="never loaded because loading them could run code"):
        read_upload(path)
    assert not marker.exists()


def test_the_payloads_are_live(tmp_path, table):
    # the refusal above means something only if an ordinary unpickler would run them
    for payload in (RunsCommand, ExecsCode):
        marker = tmp_path / payload.__name__
        pickle.loads(pickle.dumps(payload(marker), protocol=2))
        assert marker.exists()


def test_an_object_array_is_refused_without_being_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    save_npy(tmp_path / "objects.npy", np.array([ExecsCode(marker), None], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"holds Python objects \(dtype object\)"):
        read_upload(tmp_path / "objects.npy")
    assert not marker.exists()


# --- zip archives ------------------------------------------------------------------------------


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({}, protocol=2), zipfile.ZIP_STORED)
        archive.writestr("archive/data/0", bytes(50 * 2**20))  # 50 MB of zeros in ~50 kB
    assert path.stat().st_size < 2**20
    with pytest.raises(ValueError, match="entry archive/data/0 is compressed; torch.save never compresses"):
        read_upload(path)


def claim_sizes(path: Path, size: int) -> None:
    """Make every entry of a zip's central directory claim `size` uncompressed bytes."""
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at != -1:
        struct.pack_into("<I", data, at + 24, size)  # the uncompressed size field
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(data)


def test_a_checkpoint_entry_larger_than_the_file_is_refused(tmp_path, table):
    path = tmp_path / "table.pt"
    torch.save(table, path)
    claim_sizes(path, path.stat().st_size + 1)
    with pytest.raises(ValueError, match=r"claims [\d,]+ bytes, more than the whole file"):
        read_upload(path)


def test_checkpoint_entries_adding_up_to_too_much_are_refused(tmp_path, table):
    # each entry claims the whole file, so together they claim several times it
    path = tmp_path / "table.pt"
    torch.save(table, path)
    size = path.stat().st_size
    claim_sizes(path, size)
    with pytest.raises(ValueError, match=r"entries add up to [\d,]+ bytes, more than the [\d,]+ allowed"):
        read_upload(path, UploadLimits(max_bytes=size))


def test_a_zip_listing_too_many_entries_is_refused_before_its_directory_is_parsed(tmp_path, table):
    path = tmp_path / "table.pt"
    torch.save(table, path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<H", data, data.rfind(b"PK\x05\x06") + 10, 60_000)  # entries in total
    path.write_bytes(data)
    with pytest.raises(ValueError, match="lists 60,000 entries; .* at most 2,048 are allowed"):
        read_upload(path)


def test_a_zip_directory_larger_than_allowed_is_refused_before_it_is_parsed(tmp_path, table):
    path = tmp_path / "table.pt"
    torch.save(table, path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, data.rfind(b"PK\x05\x06") + 12, 50 * 2**20)  # bytes of the directory
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"list of entries takes 52,428,800 bytes; at most 1,048,576 are allowed"):
            read_upload(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_an_npz_archive_is_refused_with_what_to_do_instead(tmp_path, table):
    np.savez(tmp_path / "tables.npz", table=table.numpy())
    with pytest.raises(ValueError, match=r"NumPy \.npz archive.*numpy\.save\(path, table\)"):
        read_upload(tmp_path / "tables.npz")


def test_a_zip_that_is_not_a_checkpoint_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "notes.pt", "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(ValueError, match="zip archive but not a PyTorch checkpoint"):
        read_upload(tmp_path / "notes.pt")


# --- what a checkpoint may hold ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        ({}, "the file holds no tensors; it must hold one 2-D table"),
        ({"a": torch.zeros(2, 2), "b": torch.zeros(2, 2)}, r"2 tensors \(a, b\); it must hold one 2-D table"),
        ([torch.zeros(2, 2)], "holds a list, not a tensor or a state dict"),
        ({"state_dict": {"w": torch.zeros(2, 2)}}, "holds a dict, not a tensor or a state dict"),
        (torch.zeros(3, 3).to_sparse(), "is a sparse tensor"),
    ],
)
def test_a_checkpoint_must_hold_one_table_or_bert_tables(tmp_path, contents, message):
    torch.save(contents, tmp_path / "checkpoint.pt")
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / "checkpoint.pt")


def test_several_unknown_tensors_are_listed_with_what_is_accepted(tmp_path):
    save_file({f"layer{i}": torch.zeros(2, 2) for i in range(7)}, tmp_path / "model.safetensors")
    message = r"7 tensors \(layer0, .*layer4 and 2 more\).*word_embeddings\.weight"
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / "model.safetensors")


# --- the values of a table ---------------------------------------------------------------------


def test_nan_names_the_first_bad_row(tmp_path):
    array = np.ones((20, 4), dtype=np.float32)
    array[17, 2] = array[19, 0] = np.nan
    save_npy(tmp_path / "table.npy", array)
    with pytest.raises(ValueError, match=r"^row 17 contains NaN; every value must be a finite number\.$"):
        read_upload(tmp_path / "table.npy")


def test_infinity_names_the_first_bad_row(tmp_path, table):
    table[3, 1] = -float("inf")
    torch.save(table, tmp_path / "table.pt")
    with pytest.raises(ValueError, match=r"^row 3 contains an infinite value"):
        read_upload(tmp_path / "table.pt")


def test_a_float64_value_too_large_for_float32_is_refused(tmp_path):
    array = np.ones((3, 2))
    array[1, 1] = 1e300
    save_npy(tmp_path / "table.npy", array)
    with pytest.raises(ValueError, match="row 1 contains an infinite value"):
        read_upload(tmp_path / "table.npy")


@pytest.mark.parametrize("writer", ["npy", "safetensors", "bert"])
def test_a_finite_value_too_large_for_the_layers_arithmetic_is_refused_naming_it(tmp_path, writer):
    """3e38 is a finite float32, but the layer's sum and LayerNorm's squares overflow it: the
    sentence says which row holds what, and what is allowed, not that it is NaN or infinite."""
    from core.model.checkpoints import MAX_VALUE

    array = np.ones((8, 4), dtype=np.float32)
    array[5, 2] = 3e38
    if writer == "npy":
        save_npy(tmp_path / "table.npy", array)
        where = "row 5"
    elif writer == "safetensors":
        save_file({"table": torch.from_numpy(array)}, str(tmp_path / "table.npy"))
        where = "row 5"
    else:
        layer = torch.nn.Embedding(8, 4)
        state = {"embeddings.word_embeddings.weight": torch.from_numpy(array),
                 "embeddings.position_embeddings.weight": torch.ones(6, 4),
                 "embeddings.token_type_embeddings.weight": torch.ones(2, 4),
                 "embeddings.LayerNorm.weight": torch.ones(4), "embeddings.LayerNorm.bias": layer.weight[0].detach()}
        save_file(state, str(tmp_path / "table.npy"))
        where = "row 5 of embeddings.word_embeddings.weight"
    with pytest.raises(ValueError) as refused:
        read_upload(tmp_path / "table.npy")
    assert str(refused.value) == (f"{where} holds 3e+38; every value must lie between -1e+12 and 1e+12, so that the "
                                  "layer's sums and squares stay within float32's range.")
    array[5, 2] = -MAX_VALUE  # as large as allowed: taken
    save_npy(tmp_path / "edge.npy", array)
    assert read_upload(tmp_path / "edge.npy").token_table[5, 2] == -MAX_VALUE


def test_a_npy_header_with_a_negative_size_is_refused_as_damaged(tmp_path):
    """numpy writes no negative sizes, but its header reader takes one: (-1, 16) is a damaged
    file, not a table of one row."""
    path = tmp_path / "table.npy"
    save_npy(path, np.zeros((4, 16), dtype=np.float32))
    path.write_bytes(path.read_bytes().replace(b"(4, 16)", b"(-1, 16)"))
    with pytest.raises(ValueError) as refused:
        read_upload(path)
    assert str(refused.value).startswith("the file gives the table the shape (-1, 16), and no size can be negative")
    assert "1 row" not in str(refused.value)


@pytest.mark.parametrize(("written", "shown"), [("1_000", "1_000"), ("３", "３"), ("1_0e5", "1_0e5"),
                                                ("٣.٥", "٣.٥")])
def test_numbers_python_reads_but_word_vector_files_never_write_are_refused(tmp_path, written, shown):
    """gensim reads each number with Python's float, which takes underscores and digits of any
    script; word2vec's and GloVe's readers take plain decimals only."""
    (tmp_path / "vectors.txt").write_text(f"cat 1 2\ndog 3 {written}\nfox 5 6\n", encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        read_upload(tmp_path / "vectors.txt")
    assert str(refused.value) == (f"line 2 writes the number {shown!r}, which word-vector files do not: numbers are "
                                  "plain decimals (1000, -0.25, 1e-3), with no underscores or digits of other "
                                  "scripts.")
    (tmp_path / "plain.txt").write_text("cat 1 2\ndog 3 1000\nfox -0.25 1e-3\n", encoding="utf-8")
    assert read_upload(tmp_path / "plain.txt").token_table[1, 1] == 1000


def test_a_bad_word_vector_names_its_word(tmp_path):
    (tmp_path / "vectors.txt").write_text("2 2\ncat 1 2\ndog nan 4\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^row 1 \(the word 'dog'\) contains NaN"):
        read_upload(tmp_path / "vectors.txt")


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.arange(12).reshape(6, 2), r"holds int64 values; a table must hold floating-point"),
        (np.ones((6, 2), dtype=bool), "holds bool values"),
        (np.ones((6, 2), dtype=np.complex64), "holds complex64 values"),
        (np.zeros(50, dtype=np.float32), r"2-D \(rows × width\); this one is 1-D with shape \(50,\)"),
        (np.zeros((2, 3, 4), dtype=np.float32), r"this one is 3-D with shape \(2, 3, 4\)"),
        (np.zeros((0, 4), dtype=np.float32), r"no rows \(shape \(0, 4\)\); a table needs at least 2 rows"),
        (np.zeros((1, 4), dtype=np.float32), r"has only 1 row .* at least 2 rows, because"),
        (np.zeros((5, 0), dtype=np.float32), r"rows are empty \(shape \(5, 0\)\)"),
    ],
)
def test_a_table_must_be_a_2d_float_table_of_two_rows_or_more(tmp_path, array, message):
    save_npy(tmp_path / "table.npy", array)
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / "table.npy")


def test_an_integer_tensor_is_refused(tmp_path):
    torch.save(torch.arange(12).reshape(6, 2), tmp_path / "ids.pt")
    with pytest.raises(ValueError, match="holds int64 values; a table must hold floating-point numbers"):
        read_upload(tmp_path / "ids.pt")


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (UploadLimits(max_width=3), "the table is 4 numbers wide; at most 3 are allowed"),
        (UploadLimits(max_rows=9), "the table has 10 rows; at most 9 are allowed"),
        (UploadLimits(max_cells=39), "the table has 10 × 4 = 40 numbers; at most 39 are allowed"),
        (UploadLimits(max_bytes=100), r"the file is 0\.0 MB; files of up to .* MB are allowed"),
    ],
)
@pytest.mark.parametrize("name", WRITERS)
def test_limits_are_enforced_in_every_format(tmp_path, table, limits, message, name):
    WRITERS[name][0](tmp_path / name, table)
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / name, limits)


def test_limits_must_be_positive_whole_numbers():
    with pytest.raises(ValueError, match="max_rows must be a whole number of at least 1"):
        UploadLimits(max_rows=0)


# --- headers are checked before data is read ---------------------------------------------------


def test_an_npy_header_promising_a_huge_table_is_refused_before_reading(tmp_path):
    with (tmp_path / "huge.npy").open("wb") as file:
        header = {"descr": "<f4", "fortran_order": False, "shape": (1_000_000, 1_000)}
        np.lib.format.write_array_header_1_0(file, header)
        file.write(bytes(16))
    with pytest.raises(ValueError, match="1,000,000 rows; at most 500,000"):
        read_upload(tmp_path / "huge.npy")


def test_a_safetensors_header_claiming_more_data_than_the_file_holds(tmp_path):
    header = {"t": {"dtype": "F32", "shape": [1000, 4], "data_offsets": [0, 16000]}}
    save_safetensors_header(tmp_path / "t.safetensors", header, bytes(16))
    with pytest.raises(ValueError, match=r"places t at bytes 0 to 16,000 .* holds only 16 bytes of data"):
        read_upload(tmp_path / "t.safetensors")


def test_a_safetensors_header_longer_than_the_file(tmp_path):
    raw = b'{"t": {}}'
    (tmp_path / "t.safetensors").write_bytes(struct.pack("<Q", 10**6) + raw)
    with pytest.raises(ValueError, match=r"says its header is 1,000,000 bytes long, but only 9 bytes follow"):
        read_upload(tmp_path / "t.safetensors")


def refusal_peak(path: Path, message: str) -> int:
    """The refusal of `path` must match `message`; returns the peak of Python memory it took."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=message):
            read_upload(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_safetensors_header_length_is_refused_before_it_is_read(tmp_path):
    # a tiny file claiming a 100 MB header: refused for its length, not read, not parsed
    (tmp_path / "t.safetensors").write_bytes(struct.pack("<Q", 100 * 2**20) + b'{"t": {}}')
    message = r"says its header is 104,857,600 bytes long; headers of up to 1,048,576 bytes are allowed"
    assert refusal_peak(tmp_path / "t.safetensors", message) < 2**20


def test_a_safetensors_header_listing_too_many_tensors_is_refused_before_it_is_parsed(tmp_path):
    entry = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
    header = {f"t{i}": entry for i in range(5_000)}  # 300 kB of JSON: within the length allowed
    save_safetensors_header(tmp_path / "many.safetensors", header, b"")
    message = "lists 5,000 tensors; at most 1,024 are allowed in one file"
    # parsing it would build tens of thousands of Python objects; counting takes one bytes object
    assert refusal_peak(tmp_path / "many.safetensors", message) < 2 * (tmp_path / "many.safetensors").stat().st_size


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}, "takes 16 bytes, but .* gives it 12"),
        ({"dtype": "F32", "shape": [-2, 2], "data_offsets": [0, 16]}, "entry for t is malformed"),
        ({"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 0]}, "entry for t is malformed"),
        ({"dtype": "F32", "shape": "2x2", "data_offsets": [0, 16]}, "entry for t is malformed"),
        ({"dtype": "F4", "shape": [2, 2], "data_offsets": [0, 2]}, "F4 values, a type the explorer does not"),
        ({"dtype": "I32", "shape": [2, 2], "data_offsets": [0, 16]}, "holds int32 values"),
    ],
)
def test_a_safetensors_header_must_be_consistent(tmp_path, entry, message):
    save_safetensors_header(tmp_path / "t.safetensors", {"t": entry}, bytes(16))
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / "t.safetensors")


# --- word vectors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3 4\na 1 2 3 4\nb 5\nc 1 2 3 4\n", "line 3 has a word and 1 number, but the header says 4"),
        ("a 1 2\nb 1 2 3\n", "line 2 has a word and 3 numbers, but line 1 has 2"),
        ("a 1 2\n\nb 1 2\n", "line 2 is empty"),
        ("3 2\na 1 2\nb 3 4\na 5 6\n", "3 rows but only 2 different words; each word may appear only once"),
        ("5 2\na 1 2\nb 3 4\n", "the file has 5 words, but 2 lines follow it; the file is cut off"),
        ("2 2\na 1 2\nb 3 4\nc 5 6\n", "2 words, but 3 lines follow it; the header must count every line"),
        ("2 2\na 1 x\nb 3 4\n", r"could not be read as a number \(.*'x'\)"),
        ("1000000 50\na 1 2\n", "the table has 1,000,000 rows; at most 500,000 are allowed"),
        ("3 5000\na 1 2\n", "the table is 5,000 numbers wide; at most 4,096"),
    ],
)
def test_word_vector_text_problems(tmp_path, text, message):
    (tmp_path / "vectors.txt").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_upload(tmp_path / "vectors.txt")


def test_word_vector_text_must_be_utf8(tmp_path):
    (tmp_path / "vectors.txt").write_bytes("2 2\ncat 1 2\ncafé 3 4\n".encode("latin-1"))
    with pytest.raises(ValueError, match="must be UTF-8 text, but the file holds the byte 0xe9"):
        read_upload(tmp_path / "vectors.txt")


def test_word2vec_binary_words_must_be_utf8(tmp_path):
    floats = struct.pack("<2f", 1.0, 2.0)
    (tmp_path / "vectors.bin").write_bytes(b"2 2\ncat " + floats + b"\ncaf\xe9 " + floats + b"\n")
    with pytest.raises(ValueError, match="must be UTF-8 text"):
        read_upload(tmp_path / "vectors.bin")


def test_a_word2vec_binary_header_promising_more_than_the_file_holds(tmp_path):
    (tmp_path / "vectors.bin").write_bytes(b"1000 50\ncat " + bytes(200))
    with pytest.raises(ValueError, match="promises 1,000 words of 50 numbers, which take at least 202,000"):
        read_upload(tmp_path / "vectors.bin")


# --- damaged and unknown files -----------------------------------------------------------------


@pytest.mark.parametrize("name", WRITERS)
def test_a_file_cut_in_half_gets_a_sentence(tmp_path, table, name):
    path = tmp_path / name
    WRITERS[name][0](path, table)
    data = path.read_bytes()
    cut = len(data) // 2
    if name == "glove.txt":
        # with no count line, a cut at the end of a row leaves a valid shorter file, so only a
        # cut inside a row can be noticed: it leaves the last row short
        cut = data.rindex(b" ", 0, cut)
    path.write_bytes(data[:cut])
    with pytest.raises(ValueError, match="cut off|damaged"):
        read_upload(path)


def test_an_empty_file(tmp_path):
    (tmp_path / "table.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        read_upload(tmp_path / "table.pt")


def test_random_bytes(tmp_path):
    (tmp_path / "table.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ValueError, match="not in a format the explorer reads; accepted are a safetensors"):
        read_upload(tmp_path / "table.safetensors")


def test_plain_text_that_is_no_table(tmp_path):
    (tmp_path / "notes.txt").write_text("hello world\nthis is not a table\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not in a format the explorer reads"):
        read_upload(tmp_path / "notes.txt")


def test_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="there is no file to read"):
        read_upload(tmp_path / "nothing.pt")
