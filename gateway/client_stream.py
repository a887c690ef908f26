"""The HTTP side of :mod:`lakegate.gateway.client`: a query's streaming response read as an Arrow IPC stream,
with what its headers tell, and httpx's errors as the client's."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from typing import Any

import httpx
import pyarrow as pa

from lakegate.gateway.client_types import Error, InterfaceError, OperationalError, error_from_body

ARROW = "application/vnd.apache.arrow.stream"
READ_CHUNK = 1 << 16


class _ResponseReader(io.RawIOBase):
    """A streaming HTTP body as a raw file (short reads); wrapped in a BufferedReader for
    ``pyarrow.ipc.open_stream``, which expects every read to be full until the end."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = response.iter_bytes()
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buffer = chunk
        n = min(len(target), len(self._buffer))
        target[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n


@dataclass
class Answer:
    """An open query response: the Arrow stream reader and what the headers told."""

    response: httpx.Response
    reader: pa.ipc.RecordBatchStreamReader
    route: str | None
    rows: int | None
    truncated: bool | None
    elapsed_ms: float | None
    max_rows: int | None
    source_lsn: str | None = None  #: the source position the lake tables were read at


def header_int(response: httpx.Response, name: str) -> int | None:
    value = response.headers.get(name)
    return int(value) if value is not None and value.isdigit() else None


def open_answer(url: str, response: httpx.Response) -> Answer:
    """The opened Arrow stream of a query response (an error response is raised)."""
    if response.status_code != 200:
        raise error_from_body(response.status_code, response.read())
    if not response.headers.get("content-type", "").startswith(ARROW):
        raise InterfaceError(
            f"expected an Arrow stream from {url}/v1/query, got {response.headers.get('content-type')!r}"
        )
    try:
        reader = pa.ipc.open_stream(io.BufferedReader(_ResponseReader(response), READ_CHUNK))
    except (pa.ArrowException, OSError, httpx.HTTPError) as exc:
        raise OperationalError(f"the result stream from {url} could not be read: {exc}") from exc
    truncated = response.headers.get("x-lakegate-truncated")
    elapsed = response.headers.get("x-lakegate-elapsed-ms")
    return Answer(
        response,
        reader,
        response.headers.get("x-lakegate-route"),
        header_int(response, "x-lakegate-rows"),
        None if truncated is None else truncated == "true",
        float(elapsed) if elapsed else None,
        header_int(response, "x-lakegate-max-rows"),
        response.headers.get("x-lakegate-source-lsn"),
    )


def transport_error(url: str, exc: httpx.HTTPError) -> Error:
    if isinstance(exc, httpx.TimeoutException):
        return OperationalError(f"the gateway at {url} did not answer in time ({type(exc).__name__}): {exc}")
    if isinstance(exc, httpx.TransportError):
        return OperationalError(f"cannot reach the lakegate gateway at {url}: {exc or type(exc).__name__}")
    return InterfaceError(f"HTTP request to {url} failed: {exc}")


def caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside lakegate, so that a warning points at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("lakegate."):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level
