"""One chat-completions call to an OpenAI-compatible endpoint, under a total deadline.

Every model call memsteward makes (the ``openai`` evaluator of MeClear, LLM ``regen`` of
MemoRepair, the ``openai`` embedder) goes through :meth:`ChatClient.complete` (or its ``_call``),
which sends the request with the official ``openai`` SDK (``chat.completions`` / ``embeddings``,
``with_raw_response``). The SDK is configured and wrapped, not reimplemented: its own retries are
off (``max_retries=0``; this module retries against the deadline), it is given every setting it
would otherwise read from the environment, and its HTTP client (``httpx2``, no proxies from the
environment, no redirects) sends through :class:`_Guard`, a transport that sees the final request
and the reply's bytes. So that:

* **a total deadline bounds the call**: connect, upload, every read, every retry and every backoff
  sleep end ``deadline`` seconds after the call started. The guard reads the body chunk by chunk
  and checks the clock after each chunk, so a server trickling one byte at a time cannot stretch a
  call (a per-read ``timeout``, all the SDK offers, cannot promise that: each byte restarts it).
* **retries are bounded**: transient failures — a refused or dropped connection (also mid-body),
  a timeout, HTTP 429 (its ``Retry-After`` honoured when it fits the deadline), 5xx, and a body
  that is not a chat completion (not JSON, HTML, no ``choices``, no string ``content``) — are
  retried at most ``retries`` times with exponential backoff. Other 4xx are not retried.
* **errors leak nothing**: an :class:`EndpointError` names the endpoint URL, the HTTP status and
  what was wrong with the reply, never a request header, the API key or any of the response body
  (an endpoint may echo the request's headers back); the SDK's exceptions, whose messages quote the
  body, are mapped by type and status only.
* **only this endpoint's key goes out**: the guard sends the request to the endpoint's own scheme,
  host and port only, drops every header but the SDK's plain protocol headers, and sets the
  endpoint's own identity headers itself: ``Authorization`` from ``api_key_env`` (``api-key`` for an
  Azure endpoint; none for a loopback endpoint without a key), and ``OpenAI-Organization`` /
  ``OpenAI-Project`` from the endpoint's ``organization`` / ``project``, so
  neither the SDK's environment (``OPENAI_ADMIN_KEY``, ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``,
  ``OPENAI_CUSTOM_HEADERS``, ``OPENAI_BASE_URL``) nor a proxy setting reaches a policy's endpoint.
* **replies are bounded**: at most :data:`MAX_BODY` bytes are read;
* **replies can be archived**: with an :class:`~memsteward.archive.Archive`, a request already
  answered is served from it (no call), and every new reply is stored before it is returned.

The API key is read from the environment variable named by the endpoint's ``api_key_env``; a
loopback endpoint without a key is called without an ``Authorization`` header.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlparse

from .archive import Archive, ArchiveError, request_key
from .policy.endpoints import own_secret
from .policy.model import MAX_DEADLINE_S, Endpoint

if TYPE_CHECKING:
    import httpx2
    import openai

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


#: request headers the guard lets through (the SDK's protocol headers); everything else is dropped
SENT_HEADERS = frozenset({"host", "accept", "accept-encoding", "content-type", "content-length", "connection",
                          "user-agent"})


class _Cut(Exception):
    """The guard stopped reading a reply (message is safe; ``retry``: worth another attempt)."""

    def __init__(self, message: str, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


def _guard_class() -> type:
    """:class:`_Guard`, built on first use (``httpx2`` is imported only when a model is called)."""
    import httpx2

    class Capped(httpx2.SyncByteStream):
        """A reply body that stops at the size bound and at the deadline (checked after each chunk)."""

        def __init__(self, inner: Any, end: float, total: float) -> None:
            self.inner, self.end, self.total = inner, end, total

        def __iter__(self) -> Iterator[bytes]:
            size = 0
            for chunk in self.inner:
                size += len(chunk)
                if size > MAX_BODY:
                    raise _Cut(f"the reply is larger than {MAX_BODY} bytes", retry=False)
                if time.monotonic() > self.end:
                    raise _Cut(f"the reply did not complete within the {self.total:g}s deadline", retry=True)
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class Guard(httpx2.BaseTransport):
        """The last step before the wire: the endpoint's origin only, plain headers, our key."""

        def __init__(self, origin: tuple[str, str, int | None], identity: dict[str, str]) -> None:
            self.inner = httpx2.HTTPTransport(trust_env=False, verify=ssl.create_default_context())
            self.origin, self.identity = origin, identity
            self.local = threading.local()  # (end, total) of the call running on this thread

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            url = request.url
            if (url.scheme, url.host, url.port) != self.origin:
                raise _Cut("the request left the endpoint's origin", retry=False)
            headers = {n: v for n, v in request.headers.items() if n.lower() in SENT_HEADERS}
            headers.update(self.identity)
            sent = httpx2.Request(request.method, url, headers=headers, stream=request.stream,
                                  extensions=request.extensions)  # the SDK's own request keeps its markers
            end, total = self.local.deadline
            reply = self.inner.handle_request(sent)
            return httpx2.Response(reply.status_code, headers=reply.headers, request=request,
                                   stream=Capped(reply.stream, end, total), extensions=reply.extensions)

        def close(self) -> None:
            self.inner.close()

    return Guard


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
        self._key = os.environ.get(self.endpoint.api_key_env, "")
        self._base = self.endpoint.base_url.rstrip("/")
        self._url = self._base + self.ROUTE
        parsed = urlparse(self._url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise EndpointError(f"endpoint {self.endpoint.base_url!r} is not an http(s) URL", 0)
        try:
            port = parsed.port
        except ValueError:
            raise EndpointError(f"endpoint {self.endpoint.base_url!r} has an invalid port", 0) from None
        self._origin = (parsed.scheme, parsed.hostname, port)
        self._identity = identity_headers(self.endpoint, self._key)
        self._sdk: openai.OpenAI | None = None
        self._guard: Any = None
        self._lock = threading.Lock()
        self.has_key = bool(self._key)

    @property
    def total(self) -> float:
        """The total deadline of one call, in seconds."""
        if self.deadline is not None:
            return min(self.deadline, MAX_DEADLINE_S)
        if self.endpoint.deadline is not None:
            return min(self.endpoint.deadline, MAX_DEADLINE_S)
        return min(default_deadline(self.endpoint, self.backoff), MAX_DEADLINE_S)

    def close(self) -> None:
        """Close the SDK client and its connections (a later call opens new ones)."""
        with self._lock:
            sdk, self._sdk = self._sdk, None
        if sdk is not None:
            sdk.close()

    def _client(self) -> openai.OpenAI:
        """The SDK client, made once: every setting given (none read from the environment)."""
        with self._lock:
            if self._sdk is None:
                import httpx2
                import openai

                self._guard = _guard_class()(self._origin, self._identity)
                http = httpx2.Client(transport=self._guard, trust_env=False, follow_redirects=False)
                ep = self.endpoint  # the guard sets the key and identity headers (below: what the SDK needs)
                common: dict[str, Any] = {"api_key": self._key or "unused", "admin_api_key": "",
                                          "organization": ep.organization or "", "max_retries": 0,
                                          "default_headers": {}, "http_client": http}
                if ep.api_version is not None:
                    self._sdk = openai.AzureOpenAI(azure_endpoint=self._base, api_version=ep.api_version, **common)
                else:
                    self._sdk = openai.OpenAI(project=ep.project or "", webhook_secret="", base_url=self._base,
                                              **common)
            return self._sdk

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
        self._client()  # made (and the SDK imported) before the clock starts
        end = time.monotonic() + self.total
        attempts = 0
        while True:
            attempts += 1
            try:
                return self._attempt(payload, end), attempts
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

    def _send(self, sdk: openai.OpenAI, payload: dict[str, Any], timeout: float) -> httpx2.Response:
        """One request through the SDK; the raw reply (its body read through the guard)."""
        raw = sdk.chat.completions.with_raw_response.create(**payload, timeout=timeout)
        return raw.http_response

    def _attempt(self, payload: dict[str, Any], end: float) -> str:
        left = end - time.monotonic()
        if left <= 0:
            raise _Retryable(f"the {self.total:g}s deadline passed")
        sdk = self._client()
        self._guard.local.deadline = (end, self.total)
        try:
            data = self._send(sdk, payload, min(self.endpoint.timeout, left)).content
        except Exception as exc:  # noqa: BLE001 (mapped by type; the SDK's messages quote bodies)
            raise _failure(exc, self.endpoint) from None
        return self._parse(data)

    def _parse(self, data: bytes) -> str:
        return completion_text(data)


def identity_headers(endpoint: Endpoint, key: str) -> dict[str, str]:
    """The headers that say who calls: the key (``Authorization: Bearer``, or Azure's ``api-key``)
    when there is one, and the endpoint's organization and project when it names them."""
    out: dict[str, str] = {}
    if key:
        out.update({"api-key": key} if endpoint.api_version is not None else {"Authorization": f"Bearer {key}"})
    if endpoint.organization:
        out["OpenAI-Organization"] = endpoint.organization
    if endpoint.project:
        out["OpenAI-Project"] = endpoint.project
    return out


def _cut_in(exc: BaseException) -> _Cut | None:
    """The guard's :class:`_Cut` behind an SDK exception, if any."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None or isinstance(seen, _Cut):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _failure(exc: Exception, endpoint: Endpoint) -> _Retryable | _Fatal:
    """What one failed attempt means, from the exception's type and the HTTP status only."""
    import httpx2
    import openai

    cut = _cut_in(exc)
    if cut is not None:
        return _Retryable(str(cut)) if cut.retry else _Fatal(str(cut))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429:
            return _Retryable("rate limited (HTTP 429)", retry_after(exc.response.headers.get("Retry-After")))
        if status >= 500:
            return _Retryable(f"server error (HTTP {status})")
        if status in (401, 403):
            return _Fatal(f"the request was refused (HTTP {status}; check the key in ${endpoint.api_key_env})")
        return _Fatal(f"the request was rejected (HTTP {status})")
    if isinstance(exc, openai.APITimeoutError):
        return _Retryable(f"no reply within the {endpoint.timeout:g}s timeout")
    cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError) else exc
    if isinstance(cause, httpx2.TimeoutException):
        return _Retryable(f"no reply within the {endpoint.timeout:g}s timeout")
    if isinstance(cause, httpx2.ConnectError):
        return _Retryable("cannot connect")
    if isinstance(cause, (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)):
        return _Retryable("the connection dropped before the reply was complete")
    if isinstance(cause, ssl.SSLError):
        return _Retryable("TLS handshake failed")
    if isinstance(cause, httpx2.HTTPError):  # a reply that is not HTTP: name its type only
        return _Retryable(f"the reply is not valid HTTP ({type(cause).__name__})")
    if isinstance(exc, (openai.OpenAIError, OSError)):
        return _Retryable(f"the request failed ({type(cause or exc).__name__})")
    raise exc
