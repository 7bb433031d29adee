"""How the benchmarks print: plain-text tables and the units of their figures.

A leaf module: `bench/run.py` and the measures import it, and it imports nothing of theirs, so
a measure run on its own (`python -m bench.X`) does not load the runner.
"""

from __future__ import annotations

import argparse
import collections
import math
from collections.abc import Callable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile: the least value with at least a fraction `q` of the values
    at or below it (NaN for none). The one definition every measure's p50 and p95 use."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else float("nan")


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    cells = [tuple(header), *(tuple(row) for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    print(title)
    for row in cells:
        padded = (cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
        print("  ".join(padded).rstrip())
    print(flush=True)


def tables_and_errors(tables: Sequence[tuple[str, Sequence[str], Sequence[Sequence[str]]]],
                      errors: Sequence[str]) -> None:
    """A measure's tables, then its failed calls: the six most common, and how many in all."""
    print()
    for title, header, rows in tables:
        table(title, header, rows)
    for error, count in collections.Counter(errors).most_common(6):
        print(f"  error ×{count}: {error}")
    if errors:
        print(f"  {len(errors)} failed page call(s) in all")


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def times(ratio: float) -> str:
    return f"{ratio:.2f}×"


def kb(n_bytes: float) -> str:
    return f"{n_bytes / 1024:.1f} KB"


def run_repeated(doc: str, measure: Callable[[int], dict], report: Callable[[dict], list], repeats: int) -> None:
    """A measure's command line: `--repeats N` runs, then its tables (`report` gives title,
    header and rows for each)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    args = parser.parse_args()
    for title, header, rows in report(measure(args.repeats)):
        table(title, header, rows)
