"""One chat-completions call to an OpenAI-compatible endpoint, under a total deadline.

Every model call memsteward makes (the ``openai`` evaluator of MeClear, LLM ``regen`` of
MemoRepair) goes through :meth:`ChatClient.complete`, which POSTs ``{base_url}/chat/completions``
with the standard library's :mod:`http.client` and reads the reply itself (the ``openai`` client
offers per-read timeouts only, and its errors may quote reply bodies), so that:

* **a total deadline bounds the call**: connect, upload, every read, every retry and every backoff
  sleep end ``deadline`` seconds after the call started. The body is read chunk by chunk and the
  clock is checked after each chunk, so a server trickling one byte at a time cannot stretch a
  call (a per-read ``timeout`` alone cannot promise that: each byte restarts it).
* **retries are bounded**: transient failures — a refused or dropped connection (also mid-body),
  a timeout, HTTP 429 (its ``Retry-After`` honoured when it fits the deadline), 5xx, and a body
  that is not a chat completion (not JSON, HTML, no ``choices``, no string ``content``) — are
  retried at most ``retries`` times with exponential backoff. Other 4xx are not retried.
* **errors leak nothing**: an :class:`EndpointError` names the endpoint URL, the HTTP status and
  what was wrong with the reply, never a request header, the API key or any of the response body
  (an endpoint may echo the request's headers back).
* **replies are bounded**: at most :data:`MAX_BODY` bytes are read;
* **replies can be archived**: with an :class:`~memsteward.archive.Archive`, a request already
  answered is served from it (no call), and every new reply is stored before it is returned.

The API key is read from the environment variable named by the endpoint's ``api_key_env``; a
loopback endpoint without a key is called without an ``Authorization`` header.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import os
import ssl
import time
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlparse

from .archive import Archive, ArchiveError, request_key
from .policy.endpoints import own_secret
from .policy.model import MAX_DEADLINE_S, Endpoint

MAX_BODY = 1 << 20  # bytes of one reply
MAX_RETRY_AFTER = 60.0  # seconds: a longer Retry-After fails the call instead of waiting


class EndpointError(Exception):
    """A model call failed for good (after its retries, or past its deadline).

    The message is safe to print and to store: it never quotes headers, keys or reply bodies.
    """

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts


class _Retryable(Exception):
    """One attempt failed in a way worth retrying (message is safe; ``wait`` from Retry-After)."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


class _Fatal(Exception):
    """One attempt failed in a way retrying cannot fix (message is safe)."""


def is_loopback(base_url: str) -> bool:
    """Whether an endpoint is on this machine (127.0.0.0/8, ::1, localhost)."""
    host = urlparse(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def default_deadline(endpoint: Endpoint, backoff: float) -> float:
    """The deadline when none is set: every attempt's timeout plus every backoff sleep."""
    attempts = endpoint.retries + 1
    return endpoint.timeout * attempts + backoff * (2 ** endpoint.retries - 1)


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def completion_text(body: bytes) -> str:
    """``choices[0].message.content`` of a chat-completion body (``_Retryable`` if malformed)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise _Retryable("the reply is not JSON") from None
    choices = doc.get("choices") if isinstance(doc, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Retryable("the reply has no choices")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if content is None and isinstance(message, dict) and "content" in message:
        return ""
    if not isinstance(content, str):
        raise _Retryable("the reply has no message content")
    return content


@dataclass
class ChatClient:
    """Chat completions against one endpoint with bounded retries and a total ``deadline``."""

    ROUTE: ClassVar[str] = "/chat/completions"

    endpoint: Endpoint
    deadline: float | None = None  # seconds per call; None: the endpoint's, else the default
    backoff: float = 0.2
    archive: Archive | None = None

    def __post_init__(self) -> None:
        if own_secret(self.endpoint.api_key_env):  # never memsteward's own secret as a Bearer token
            raise EndpointError(f"api_key_env {self.endpoint.api_key_env!r} is one of memsteward's own secrets", 0)
        key = os.environ.get(self.endpoint.api_key_env, "")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._url = self.endpoint.base_url.rstrip("/") + self.ROUTE
        parsed = urlparse(self._url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise EndpointError(f"endpoint {self.endpoint.base_url!r} is not an http(s) URL", 0)
        self._https = parsed.scheme == "https"
        self._host, self._port, self._path = parsed.hostname, parsed.port, parsed.path
        self.has_key = bool(key)

    @property
    def total(self) -> float:
        """The total deadline of one call, in seconds."""
        if self.deadline is not None:
            return min(self.deadline, MAX_DEADLINE_S)
        if self.endpoint.deadline is not None:
            return min(self.endpoint.deadline, MAX_DEADLINE_S)
        return min(default_deadline(self.endpoint, self.backoff), MAX_DEADLINE_S)

    def close(self) -> None:
        """Nothing is held between calls (one connection per attempt)."""

    def complete(self, model: str, messages: list[dict[str, str]], temperature: float,
                 seed: int | None = None) -> tuple[str, int]:
        """The reply text and the attempts it took; :class:`EndpointError` when it fails.

        An archived reply counts as the one call that produced it (a plan's cost says what the
        method needs, whether or not this run paid for it; the archive counts its ``hits``)."""
        payload: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if seed is not None:
            payload["seed"] = seed
        if self.archive is None:
            return self._call(payload)
        key = request_key(model, messages, temperature, seed)
        try:
            archived = self.archive.get(key)
        except ArchiveError as exc:
            raise EndpointError(f"archive: {exc}", 0) from None
        if archived is not None:
            return archived, 1
        if self.archive.replay_only:
            raise EndpointError(f"archive {self.archive.root}: no reply archived for request "
                                f"{key[:12]} (replay only)", 0)
        text, attempts = self._call(payload)
        try:
            self.archive.put(key, payload, text)
        except OSError as exc:
            raise EndpointError(f"archive {self.archive.root}: cannot store a reply ({exc.strerror})",
                                attempts) from None
        return text, attempts

    def _call(self, payload: dict[str, Any]) -> tuple[str, int]:
        body = json.dumps(payload, ensure_ascii=False).encode()
        end = time.monotonic() + self.total
        attempts = 0
        while True:
            attempts += 1
            try:
                return self._attempt(body, end), attempts
            except _Fatal as exc:
                raise EndpointError(f"{self._where()}: {exc}", attempts) from None
            except _Retryable as exc:
                reason = str(exc)
                wait = self.backoff * 2 ** (attempts - 1)
                if exc.wait is not None:
                    if exc.wait > MAX_RETRY_AFTER:
                        raise EndpointError(f"{self._where()}: {reason} (Retry-After "
                                            f"{exc.wait:.0f}s exceeds {MAX_RETRY_AFTER:.0f}s)",
                                            attempts) from None
                    wait = max(wait, exc.wait)
            left = end - time.monotonic()
            if attempts > self.endpoint.retries:
                raise EndpointError(f"{self._where()}: {reason} (after {attempts} attempts)", attempts)
            if left <= wait:
                raise EndpointError(f"{self._where()}: {reason}; the {self.total:g}s deadline "
                                    f"leaves no time for a retry (after {attempts} attempts)", attempts)
            time.sleep(wait)

    def _where(self) -> str:
        return f"endpoint {self._url}"

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _attempt(self, body: bytes, end: float) -> str:
        left = end - time.monotonic()
        if left <= 0:
            raise _Retryable(f"the {self.total:g}s deadline passed")
        conn = self._connection(min(self.endpoint.timeout, left))
        try:
            conn.request("POST", self._path, body=body, headers=self._headers)
            resp = conn.getresponse()
            status = resp.status
            wait = retry_after(resp.getheader("Retry-After"))
            data = self._read(resp, end)
        except TimeoutError:
            raise _Retryable(f"no reply within the {self.endpoint.timeout:g}s timeout") from None
        except (http.client.IncompleteRead, http.client.RemoteDisconnected, ConnectionResetError,
                ConnectionAbortedError, BrokenPipeError):
            raise _Retryable("the connection dropped before the reply was complete") from None
        except ssl.SSLError:
            raise _Retryable("TLS handshake failed") from None
        except http.client.HTTPException as exc:  # a reply that is not HTTP: name its type only
            raise _Retryable(f"the reply is not valid HTTP ({type(exc).__name__})") from None
        except OSError:
            raise _Retryable("cannot connect") from None
        finally:
            conn.close()
        if status == 429:
            raise _Retryable("rate limited (HTTP 429)", wait)
        if status >= 500:
            raise _Retryable(f"server error (HTTP {status})")
        if status in (401, 403):
            raise _Fatal(f"the request was refused (HTTP {status}; check the key in "
                         f"${self.endpoint.api_key_env})")
        if status != 200:
            raise _Fatal(f"the request was rejected (HTTP {status})")
        return self._parse(data)

    def _parse(self, data: bytes) -> str:
        return completion_text(data)

    def _read(self, resp: http.client.HTTPResponse, end: float) -> bytes:
        """The body, chunk by chunk, checking the size bound and the deadline after each chunk."""
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_BODY:
                raise _Fatal(f"the reply is larger than {MAX_BODY} bytes")
            chunks.append(chunk)
            if time.monotonic() > end:
                raise _Retryable(f"the reply did not complete within the {self.total:g}s deadline")
        expected = resp.getheader("Content-Length")
        if expected is not None and expected.isdigit() and size < int(expected):
            raise http.client.IncompleteRead(b"", int(expected) - size)
        return b"".join(chunks)
