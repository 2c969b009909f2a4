"""Trusting a manager by its certificate's SHA-256 fingerprint
(``HETPILOT_TLS_FINGERPRINT``, as ``hetpilot user add`` prints it), as the CLI does: the
TLS handshake still proves the server holds the certificate's key; instead of a CA, the
certificate itself must be the pinned one. It is checked right after the handshake,
before a byte of the request (and its token) is sent, by the sync and the asyncio client
alike."""

from __future__ import annotations

import hashlib
import ssl
from typing import Any, Iterable, Optional

import httpcore
import httpx

from .errors import HetpilotError


def parse_fingerprint(text: str) -> bytes:
    """64 hex digits, colons allowed, as the 32 bytes they spell."""
    digits = text.strip().replace(":", "")
    try:
        raw = bytes.fromhex(digits)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise HetpilotError(
            f"HETPILOT_TLS_FINGERPRINT: `{text[:80]}` is not a SHA-256 fingerprint "
            "(64 hex digits, colons allowed)"
        )
    return raw


def _check(der: Optional[bytes], pinned: bytes) -> Optional[str]:
    """Why the certificate ``der`` is not the pinned one; ``None`` when it is."""
    seen = hashlib.sha256(der or b"").digest()
    if seen == pinned:
        return None
    return f"the server's certificate has SHA-256 fingerprint {seen.hex()}, not the pinned {pinned.hex()}"


def _context() -> ssl.SSLContext:
    """TLS without CA checks: the pinned fingerprint stands in for them."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class _PinnedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, pinned: bytes) -> None:
        self._inner = inner
        self._pinned = pinned

    def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.start_tls(ssl_context, server_hostname, timeout)
        wrong = _check(stream.get_extra_info("ssl_object").getpeercert(True), self._pinned)
        if wrong:
            stream.close()
            raise httpcore.ConnectError(wrong)
        return _PinnedStream(stream, self._pinned)


class _PinnedBackend(httpcore.NetworkBackend):
    def __init__(self, pinned: bytes) -> None:
        self._inner = httpcore.SyncBackend()
        self._pinned = pinned

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: Optional[float] = None,
        local_address: Optional[str] = None,
        socket_options: Optional[Iterable[Any]] = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _PinnedStream(stream, self._pinned)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class PinnedTransport(httpx.HTTPTransport):
    """An HTTP(S) transport that trusts exactly the certificate of SHA-256 ``pinned``."""

    def __init__(self, pinned: bytes) -> None:
        context = _context()
        super().__init__(verify=context)
        self._pool = httpcore.ConnectionPool(
            ssl_context=context, network_backend=_PinnedBackend(pinned)
        )


class _AsyncPinnedStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, pinned: bytes) -> None:
        self._inner = inner
        self._pinned = pinned

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        wrong = _check(stream.get_extra_info("ssl_object").getpeercert(True), self._pinned)
        if wrong:
            await stream.aclose()
            raise httpcore.ConnectError(wrong)
        return _AsyncPinnedStream(stream, self._pinned)


class _AsyncPinnedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, pinned: bytes) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._pinned = pinned

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: Optional[float] = None,
        local_address: Optional[str] = None,
        socket_options: Optional[Iterable[Any]] = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _AsyncPinnedStream(stream, self._pinned)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class AsyncPinnedTransport(httpx.AsyncHTTPTransport):
    """:class:`PinnedTransport` for ``httpx.AsyncClient`` (asyncio, through anyio)."""

    def __init__(self, pinned: bytes) -> None:
        context = _context()
        super().__init__(verify=context)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context, network_backend=_AsyncPinnedBackend(pinned)
        )
