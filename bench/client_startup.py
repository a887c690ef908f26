"""Start-up of ``lakegate sql -c 'SELECT 1'``: wall time of the whole command (interpreter start, imports,
argument parsing, one query over HTTP, printing) against a running gateway, in the full install (this
environment) and in a client-only install (``pip install lakegate`` into a fresh virtual environment: httpx and
pyarrow only), each beside the interpreter's own start (``python -c pass``) measured in the same run.

Then the heaviest imports of the command in each environment (``python -X importtime``), which is where the
time goes. Usage::

    pip install -e '.[bench]'
    python -m bench.client_startup [--runs 15] [--client-venv DIR] [--also NAME=PYTHON]  # DIR made if missing
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import start_postgres

ROOT = Path(__file__).resolve().parent.parent


def start_gateway(root: Path, dsn: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = root / "lakegate.toml"
    config.write_text(
        f'[lake]\ncatalog_uri = "sqlite:///{root}/catalog.db"\nwarehouse = "{root}/warehouse"\n'
        f'[[sources]]\nname = "pg"\ndsn = "{dsn}"\nallow_privileged_role = true\n[gateway]\nport = {port}\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "lakegate", "serve", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("lakegate serve did not start")


def client_venv(path: Path) -> Path:
    """A virtual environment with ``pip install lakegate`` (no extras) from a copy of this checkout."""
    if (path / "bin" / "lakegate").exists():
        return path
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "src"
        listed = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        for name in listed.stdout.splitlines():
            if (ROOT / name).is_file():
                (source / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, source / name)
        subprocess.run([str(path / "bin" / "pip"), "install", "--quiet", str(source)], check=True)
    return path


def timed(command: list[str], runs: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system) of ``command`` over ``runs`` runs, after one
    unmeasured run. CPU time is the steadier figure on a shared machine: waiting for a core is not in it."""
    subprocess.run(command, check=True, capture_output=True)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def heaviest_imports(python: Path, url: str, top: int = 10) -> list[tuple[str, float]]:
    """Imports of ``lakegate sql -c 'SELECT 1'`` up to three levels deep by cumulative time (ms), heaviest
    first (nested ones are inside their parents' figures)."""
    done = subprocess.run(
        [str(python), "-X", "importtime", "-m", "lakegate", "sql", "--url", url, "-c", "SELECT 1"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),  # not the checkout: `-m lakegate` would find its lakegate/ folder first
    )
    if done.returncode:
        raise RuntimeError(f"lakegate sql failed: {done.stderr[-2000:]}")
    out = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _, cumulative, name = line.split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        if cumulative.strip().isdigit() and depth <= 2:
            out.append(("  " * depth + name.strip(), int(cumulative) / 1000))
    return sorted(out, key=lambda item: -item[1])[:top]


def site_packages_mb(python: Path) -> float:
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    total = sum(f.stat().st_size for f in Path(site).rglob("*") if f.is_file() and not f.is_symlink())
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--client-venv", type=Path, help="client-only environment (default: a temporary one)")
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=PYTHON",
        help="another environment's interpreter to measure, e.g. an install of an earlier version",
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lakegate-startup-"))
    server = start_postgres(root)
    gateway, url = start_gateway(root, server.dsn())
    try:
        envs = {"full install": Path(sys.executable)}
        venv = client_venv(args.client_venv or root / "client-venv")
        envs["client-only install"] = venv / "bin" / "python"
        envs |= {name: Path(python) for name, _, python in (a.partition("=") for a in args.also)}
        print(f"lakegate sql -c 'SELECT 1' against {url}: median of {args.runs} runs, seconds (wall / CPU)\n")
        print(f"{'environment':<22} {'python -c pass':>16} {'lakegate sql':>16} {'site-packages':>14}")
        for name, python in envs.items():
            bare = timed([str(python), "-c", "pass"], args.runs)
            lakegate = str(Path(python).parent / "lakegate")
            sql = timed([lakegate, "sql", "--url", url, "-c", "SELECT 1"], args.runs)
            size = site_packages_mb(Path(python))
            print(
                f"{name:<22} {bare[0]:>7.3f} / {bare[1]:.3f} {sql[0]:>7.3f} / {sql[1]:.3f} {size:>10.0f} MB"
            )
        for name, python in envs.items():
            print(f"\nheaviest imports, {name} (cumulative ms):")
            for module, ms in heaviest_imports(Path(python), url):
                print(f"  {module:<40} {ms:8.1f}")
    finally:
        gateway.send_signal(signal.SIGTERM)
        gateway.wait(30)
        server.stop()
        if not os.environ.get("KEEP"):
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
