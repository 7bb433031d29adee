"""Tables in memory the heavy-work process maps, instead of receiving a copy.

An uploaded table is the largest thing a visitor can make the server hold (up to 229 MiB). A
training crossed it to the heavy-work process (`core.process.offload`) by value: a pickled copy on this
side, the unpickled one on the other. A table made by `empty` lives in an anonymous file in
memory (`memfd_create`) that this process maps; the heavy-work process is handed the file itself
(its descriptor, over their socket: `core.process.offload`) and maps the same pages copy-on-write
(`mapped`), so crossing copies nothing and reading a row there costs no memory here.

The file lives while a tensor over its memory does: `segment_of` finds it from any view of it,
and it closes with the last view. Linux only (`os.memfd_create`); tables made elsewhere are plain
memory and cross by value.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from typing import NamedTuple

import torch

SHARED = hasattr(os, "memfd_create")  # Linux: tables can be shared with the heavy-work process


class Segment(NamedTuple):
    """A file in memory behind one of this process's tables."""

    fd: int  # this process's descriptor of the file
    size: int  # bytes
    key: int  # its inode: names it to the other process while it is mapped


# the first address of each mapping -> its segment
_SEGMENTS: dict[int, Segment] = {}
_LOCK = threading.Lock()


def empty(count: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """`count` uninitialised numbers of `dtype` (1-D) in memory the heavy-work process can map;
    plain memory where it cannot be shared."""
    nbytes = count * torch.empty(0, dtype=dtype).element_size()
    if not SHARED or nbytes == 0:
        return torch.empty(count, dtype=dtype)
    fd = os.memfd_create("explorer-table", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, nbytes)
        mapping = mmap.mmap(fd, nbytes)
    except OSError:
        os.close(fd)
        raise
    tensor = torch.frombuffer(mapping, dtype=dtype, count=count)  # holds `mapping` while any view lives
    address = tensor.untyped_storage().data_ptr()
    with _LOCK:
        _SEGMENTS[address] = Segment(fd, nbytes, os.fstat(fd).st_ino)
    weakref.finalize(mapping, _forget, address, fd)
    return tensor


def _forget(address: int, fd: int) -> None:
    with _LOCK:
        _SEGMENTS.pop(address, None)
    os.close(fd)


def segment_of(tensor: torch.Tensor) -> Segment | None:
    """The file in memory behind `tensor`'s storage, if `empty` made it."""
    with _LOCK:
        return _SEGMENTS.get(tensor.untyped_storage().data_ptr())


def moved(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of `tensor` in shareable memory (contiguous, same dtype and shape)."""
    copy = empty(tensor.numel(), tensor.dtype).view(tensor.shape)
    return copy.copy_(tensor)


def mapped(fd: int, size: int) -> torch.Tensor:
    """The file `fd` (another process's segment) mapped here copy-on-write, as bytes: reading
    shares its pages, and a write here never reaches the process that made it. `fd` is closed."""
    try:
        mapping = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    return torch.frombuffer(mapping, dtype=torch.uint8, count=size)


def view(storage: torch.UntypedStorage, dtype: torch.dtype, offset: int, shape: tuple[int, ...],
         stride: tuple[int, ...]) -> torch.Tensor:
    """A tensor of `dtype` over `storage`, at `offset` elements with `shape` and `stride`."""
    return torch.empty(0, dtype=dtype).set_(storage, offset, shape, stride)
