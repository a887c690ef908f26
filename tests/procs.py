"""Running lakegate commands in subprocesses for tests (crashes, signals, the CLI)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from lakegate import settings as settings_mod


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config(settings: settings_mod.Settings, path: Path) -> Path:
    """A TOML file equivalent to ``settings`` (the subset tests use)."""
    lines = ["[lake]"]
    lines += [f"{k} = {toml_value(getattr(settings.lake, k))}" for k in ("name", "catalog_uri", "warehouse")]
    for src in settings.sources:
        lines += ["", "[[sources]]"]
        lines += [
            f"{k} = {toml_value(getattr(src, k))}"
            for k in ("name", "kind", "dsn", "replicate", "slot", "publication", "allow_privileged_role")
        ]
    lines += ["", "[ingest]"]
    for key in ("commit_interval", "max_batch_rows", "unbounded_numeric"):
        lines.append(f"{key} = {toml_value(getattr(settings.ingest, key))}")
    lines += ["", "[gateway]"]
    for key in ("host", "port", "tokens", "max_rows", "timeout"):
        lines.append(f"{key} = {toml_value(getattr(settings.gateway, key))}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _path_for(module: str) -> dict[str, str]:
    """A module of the tests package needs the repository on the path (lakegate itself is installed)."""
    if not module.startswith("tests."):
        return {}
    root = str(Path(__file__).resolve().parent.parent)
    return {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}


class Proc:
    """A lakegate subprocess whose output goes to a log file."""

    def __init__(
        self, args: list[str], log: Path, env: dict[str, str] | None = None, module: str = "lakegate"
    ) -> None:
        """``module``: what ``python -m`` runs (tests.killpoint wraps lakegate with a kill point)."""
        self.log_path = log
        self._log = open(log, "ab")  # noqa: SIM115 - closed in wait()/kill()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **_path_for(module), **(env or {})},
            start_new_session=True,
        )

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(30)

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        finally:
            if self.popen.poll() is not None and not self._log.closed:
                self._log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_output(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            if self.popen.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(
            f"{text!r} did not appear in the output (exit {self.popen.poll()}):\n{self.output()[-3000:]}"
        )
