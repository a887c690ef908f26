"""The installed layout: one top-level name (``lakegate``), and the import arrows of the design.

The repository keeps ``gateway/``, ``ingest/`` and ``connectors/`` at the top; installed they are
``lakegate.gateway``, ``lakegate.ingest`` and ``lakegate.connectors``. Code that imported them by their folder
names would work in a source checkout and break (or load a module twice) when installed, so no file may.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lakegate", "gateway", "ingest", "connectors")
FOLDER_NAMES = {"gateway", "ingest", "connectors"}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.lineno, node.module))
    return out


def _sources(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))]


def test_no_import_by_folder_name() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: import {name}"
        for path in _sources(*PACKAGES, "tests", "bench", "compose")
        for line, name in _imports(path)
        if name.split(".")[0] in FOLDER_NAMES
    ]
    assert not bad, "import these as lakegate.<package>:\n" + "\n".join(bad)


def test_import_arrows() -> None:
    """connectors imports no sibling; the client side imports nothing of the server; nothing imports upward."""
    allowed = {"connectors": ("lakegate.connectors",), "ingest": ("lakegate.connectors", "lakegate.ingest")}
    bad = []
    for folder, ok in allowed.items():
        for path in _sources(folder):
            bad += [
                f"{path.relative_to(ROOT)}:{line}: {name}"
                for line, name in _imports(path)
                if name.split(".")[0] == "lakegate" and not name.startswith(ok)
            ]
    client_side = sorted(p.name for p in (ROOT / "gateway").glob("cli*.py"))  # cli*.py and client*.py
    heavy = ("duckdb", "pyiceberg", "sqlglot", "fastapi", "uvicorn", "psycopg", "lakegate.connectors")
    for name in client_side:
        path = ROOT / "gateway" / name
        bad += [
            f"{path.relative_to(ROOT)}:{line}: {mod}" for line, mod in _imports(path) if mod.startswith(heavy)
        ]
    assert not bad, "imports against the layering rules:\n" + "\n".join(bad)


def test_public_names_live_in_lakegate() -> None:
    import lakegate

    assert lakegate.ProgrammingError.__module__.startswith("lakegate.")
    assert lakegate.connect.__module__ == "lakegate"


@pytest.mark.slow
def test_wheel_has_one_top_level_name(tmp_path: Path) -> None:
    """A built wheel puts exactly one package into site-packages: lakegate (with gateway, ingest, connectors)."""
    source = tmp_path / "src"  # a copy: an in-tree build would leave build/ and *.egg-info in the checkout
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("lakegate-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"lakegate"}, top
    for module in (
        "gateway/service.py",
        "ingest/worker.py",
        "connectors/postgres/cdc.py",
        "gateway/client.py",
    ):
        assert f"lakegate/{module}" in names


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] != "lakegate":
        parts.insert(0, "lakegate")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (also under ``if TYPE_CHECKING:``), not inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    nodes: list[ast.stmt] = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If):
            nodes += node.body + node.orelse
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
    return out


def test_no_import_cycles() -> None:
    modules = {_module_name(p): p for p in _sources(*PACKAGES)}
    graph = {
        name: {m for m in _top_level_imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
