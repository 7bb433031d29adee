"""bench/ without an import cycle: the runner imports the measures, never the other way round.

`python -m bench.run` imports each measure; a measure run on its own (`python -m bench.X`) must
not load the runner, and bench/report.py (tables and units) is a leaf every one of them may
import. Read from the source, so nothing heavy is imported here.
"""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_imports(path: Path) -> set[str]:
    """The bench modules a file imports, anywhere in it (inside functions too), as "bench.X"."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("bench.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "bench":
                found |= {f"bench.{alias.name}" for alias in node.names}
            elif node.module.startswith("bench."):
                found.add(node.module)
    return found


def test_no_measure_imports_the_runner():
    importers = sorted(path.name for path in BENCH.glob("*.py") if "bench.run" in bench_imports(path))
    assert importers == []


def test_report_is_a_leaf():
    assert bench_imports(BENCH / "report.py") == set()


def test_the_reader_sees_imports():
    """The check itself: the runner's own imports of the measures are found."""
    assert {"bench.report", "bench.update_latency", "bench.lecture"} <= bench_imports(BENCH / "run.py")


def test_the_one_percentile_is_the_nearest_rank():
    """Every measure's p50 and p95 come from bench/report.py's one definition."""
    from bench.report import percentile

    values = [float(n) for n in range(1, 21)]  # 1 … 20
    assert percentile(values, 0.95) == 19.0 and percentile(values, 0.5) == 10.0
    assert percentile([3.0, 1.0, 2.0], 1.0) == 3.0 and percentile([5.0], 0.0) == 5.0
    assert percentile([], 0.95) != percentile([], 0.95)  # NaN: no values, no percentile
