"""The fake server over Streamable HTTP: a small stdlib asyncio HTTP/1.1 server (spec A.10).

``python -m mcphost.testing --http PORT`` serves the same scripted behaviours at ``/mcp``
(port 0: any free port; the URL is the first line on stdout). Legacy era: ``initialize``
opens a session (``Mcp-Session-Id``), requests are answered as SSE (``httpJson: true``: JSON),
with a priming event and ``retry`` from 2025-11-25 on, GET opens the standalone stream, any
stream resumes with ``Last-Event-ID``, DELETE ends the session. Modern era (2026-07-28):
stateless POSTs checked against the ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
and ``Mcp-Param-*`` headers (a mismatch is 400 with -32020), JSON answers (SSE when a
notification comes before the answer), closing the connection cancels, GET and DELETE are 405.

Everything a client sends is bounded before it costs anything: header and body sizes,
connections, sessions, one GET stream per session, and every stream's history; ``Host`` and
``Origin`` must name this machine (DNS rebinding). A bad client can hurt only itself.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sys
import uuid

from .common import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON,
    META_CAPS,
    META_VERSION,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_VERSION,
    Msg,
)
from .http_session import HttpServer, Stream
from .modern import MODERN_ROUTES

PATH = "/mcp"
MAX_HEAD = 64 * 1024
MAX_BODY = 4 * 1024 * 1024
MAX_CONNECTIONS = 256
MAX_SESSIONS = 64
HEAD_TIMEOUT = 60.0
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
REASONS = {200: "OK", 202: "Accepted", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 411: "Length Required",
           413: "Payload Too Large", 415: "Unsupported Media Type", 431: "Header Too Large",
           500: "Internal Server Error", 503: "Service Unavailable"}
#: Error codes of the 2026-07-28 era answered with an HTTP status other than 200.
MODERN_STATUS = {HEADER_MISMATCH: 400, MISSING_CAPABILITY: 400, UNSUPPORTED_VERSION: 400,
                 METHOD_NOT_FOUND: 404}
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
         "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


class Request:
    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class HttpError(Exception):
    def __init__(self, status: int, code: int, message: str, rid: JSON = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = _error(rid, code, message)


class HttpFront:
    """Accepts connections and routes each request to a session or to the modern server."""

    def __init__(self, spec: Msg, host: str = "127.0.0.1", port: int = 0) -> None:
        self.spec = spec
        self.host = host
        self.port = port
        self.era = str(spec.get("era") or "legacy")
        self.sessions: dict[str, HttpServer] = {}
        self.modern: HttpServer | None = None
        self.connections = 0
        self.max_body = int(spec.get("httpMaxBody") or MAX_BODY)
        self.max_sessions = int(spec.get("httpMaxSessions") or MAX_SESSIONS)
        self.url = ""

    async def start(self) -> asyncio.base_events.Server:
        server = await asyncio.start_server(self._client, self.host, self.port, limit=MAX_HEAD)
        port = server.sockets[0].getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{host}:{port}{PATH}"
        if self.era != "legacy":
            self.modern = HttpServer(self.spec, "modern", asyncio.get_running_loop())
        return server

    # ------------------------------------------------------------ connections

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if self.connections > MAX_CONNECTIONS:
                return
            keep = True
            while keep:
                try:
                    req = await asyncio.wait_for(self._read(reader), HEAD_TIMEOUT)
                except HttpError as exc:
                    await _send(writer, exc.status, {}, exc.body, keep=False)
                    return
                except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError,
                        asyncio.LimitOverrunError, ValueError):
                    return
                if req is None:
                    return
                try:
                    keep = await self._handle(req, reader, writer)
                except HttpError as exc:
                    await _send(writer, exc.status, {}, exc.body, keep=True)
                except (ConnectionError, OSError):
                    raise
                except Exception as exc:  # a bug here must not take the server down
                    body = _error(None, -32603, f"{type(exc).__name__}: {exc}")
                    await _send(writer, 500, {}, body, keep=False)
                    return
        except (ConnectionError, OSError):
            pass
        finally:
            self.connections -= 1
            with contextlib.suppress(Exception):
                writer.close()

    async def _read(self, reader: asyncio.StreamReader) -> Request | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise
        except asyncio.LimitOverrunError:
            raise HttpError(431, INVALID_REQUEST, "request head too large") from None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise HttpError(400, INVALID_REQUEST, "bad request line")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers.setdefault(name.strip().lower(), value.strip())
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await self._chunked(reader)
        else:
            try:
                length = int(headers.get("content-length", "0"))
            except ValueError:
                raise HttpError(400, INVALID_REQUEST, "bad Content-Length") from None
            if length < 0:
                raise HttpError(400, INVALID_REQUEST, "bad Content-Length")
            if length > self.max_body:
                raise HttpError(413, INVALID_REQUEST, f"body over {self.max_body} bytes")
            body = await reader.readexactly(length)
        return Request(parts[0].upper(), parts[1], headers, body)

    async def _chunked(self, reader: asyncio.StreamReader) -> bytes:
        body = bytearray()
        while True:
            line = (await reader.readuntil(b"\r\n")).split(b";")[0].strip()
            try:
                size = int(line or b"0", 16)
            except ValueError:
                raise HttpError(400, INVALID_REQUEST, "bad chunk size") from None
            if size == 0:
                await reader.readuntil(b"\r\n")
                return bytes(body)
            if len(body) + size > self.max_body:
                raise HttpError(413, INVALID_REQUEST, f"body over {self.max_body} bytes")
            body += await reader.readexactly(size)
            await reader.readexactly(2)

    # ---------------------------------------------------------------- routing

    async def _handle(self, req: Request, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> bool:
        if req.path.split("?")[0] != PATH:
            raise HttpError(404, INVALID_REQUEST, f"not found: {req.path} (the endpoint is {PATH})")
        self._check_origin(req)
        sid = req.headers.get("mcp-session-id")
        if req.method == "POST":
            return await self._post(req, sid, reader, writer)
        if req.method == "GET" and sid is not None and self.era != "modern":
            return await self._get(req, self._session(sid), reader, writer)
        if req.method == "DELETE" and sid is not None and self.era != "modern":
            session = self._session(sid)
            session.shutdown()
            del self.sessions[sid]
            await _send(writer, 200, {}, b"", keep=True)
            return True
        if req.method in ("GET", "DELETE") and self.era == "legacy":
            raise HttpError(400, INVALID_REQUEST, "Mcp-Session-Id header is required")
        raise HttpError(405, INVALID_REQUEST, f"{req.method} is not allowed here")

    def _check_origin(self, req: Request) -> None:
        allowed = set(self.spec.get("allowedHosts") or LOCAL_HOSTS)
        host = req.headers.get("host", "")
        origin = req.headers.get("origin")
        names = [_hostname(host)] + ([_hostname(origin.split("://", 1)[-1])] if origin else [])
        if any(name not in allowed for name in names):
            raise HttpError(403, INVALID_REQUEST, "Host or Origin is not this machine")

    def _session(self, sid: str) -> HttpServer:
        session = self.sessions.get(sid)
        if session is None:
            raise HttpError(404, INVALID_REQUEST, "Session not found")
        return session

    async def _post(self, req: Request, sid: str | None, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> bool:
        ctype = req.headers.get("content-type", "")
        if "application/json" not in ctype:
            raise HttpError(415, INVALID_REQUEST, "Content-Type must be application/json")
        try:
            body = json.loads(req.body)
        except ValueError as exc:
            raise HttpError(400, PARSE_ERROR, f"Parse error: {exc}") from None
        msgs = body if isinstance(body, list) else [body]
        if not msgs or not all(isinstance(m, dict) for m in msgs):
            raise HttpError(400, INVALID_REQUEST, "a JSON-RPC message or batch is required")
        first = msgs[0]
        if sid is not None and self.era != "modern":
            session = self._session(sid)
            self._check_version_header(req, session)
            return await self._answer(req, session, msgs, isinstance(body, list), reader, writer)
        if first.get("method") == "initialize" and self.era != "modern" and len(msgs) == 1:
            return await self._initialize(req, first, reader, writer)
        if self.modern is None:
            raise HttpError(400, INVALID_REQUEST, "Mcp-Session-Id header is required")
        if isinstance(body, list):
            raise HttpError(400, INVALID_REQUEST, "no batches in 2026-07-28")
        if "method" in first and "id" in first:
            _check_modern_headers(req, first, self.modern, self.spec)
        return await self._answer(req, self.modern, msgs, False, reader, writer)

    def _check_version_header(self, req: Request, session: HttpServer) -> None:
        version = req.headers.get("mcp-protocol-version")
        if version is not None and version not in SUPPORTED_VERSIONS:
            raise HttpError(400, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {version}")

    async def _initialize(self, req: Request, msg: Msg, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> bool:
        if len(self.sessions) >= self.max_sessions:
            raise HttpError(503, INVALID_REQUEST, f"at most {self.max_sessions} sessions")
        session = HttpServer(self.spec, "legacy", asyncio.get_running_loop())
        sid = uuid.uuid4().hex
        self.sessions[sid] = session
        stream = session.new_stream(sse=False)
        session.feed(msg, stream)
        await _until_done(stream)
        response = _responses(stream)
        if "error" in response[0]:
            del self.sessions[sid]
            headers = {}
        else:
            headers = {"Mcp-Session-Id": sid}
        return await self._reply(req, stream, response[0], headers, writer)

    async def _answer(self, req: Request, server: HttpServer, msgs: list[Msg], batch: bool,
                      reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        requests = [m for m in msgs if "method" in m and "id" in m]
        if not requests:
            for m in msgs:
                server.feed(m, None)
            await _send(writer, 202, {}, b"", keep=True)
            return True
        mode = self._mode(req, server)
        stream = server.new_stream(sse=mode != "json")
        for m in msgs:
            server.feed(m, stream if m in requests else None)
        if mode == "lazy":
            # 2026-07-28: JSON if the answer comes first (with its HTTP status), SSE as soon as
            # a notification comes first; the client closing the connection cancels either way.
            watcher = asyncio.ensure_future(reader.read(1))
            while not stream.events and not watcher.done():
                stream.wake.clear()
                waiter = asyncio.ensure_future(stream.wake.wait())
                await asyncio.wait({waiter, watcher}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
            gone = watcher.done() and not watcher.cancelled() and watcher.result() == b""
            watcher.cancel()  # before answering: a client sends nothing more until answered
            if gone:
                server.cancel(stream)
                return False
            only_answers = len(_responses(stream)) == len(stream.events)
            mode = "json" if stream.done and only_answers else "sse"
        if mode == "sse":
            return await self._sse(req, server, stream, 0, reader, writer, prime=True)
        await _until_done(stream)
        answers = _responses(stream)
        return await self._reply(req, stream, answers if batch else answers[0], {}, writer)

    def _mode(self, req: Request, server: HttpServer) -> str:
        """How requests are answered: ``json``, ``sse``, or (modern) ``lazy``."""
        if "text/event-stream" not in req.headers.get("accept", "text/event-stream"):
            return "json"
        if self.spec.get("httpJson"):
            return "json"
        if self.spec.get("httpSse") or not server.rename:
            return "sse"
        return "lazy"

    async def _reply(self, req: Request, stream: Stream, answer: JSON, headers: dict[str, str],
                     writer: asyncio.StreamWriter) -> bool:
        status = 200
        if stream.renames and isinstance(answer, dict) and "error" in answer:
            status = MODERN_STATUS.get(answer["error"].get("code"), 200)
        body = json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        await _send(writer, status, {"Content-Type": "application/json", **headers}, body, True)
        return True

    async def _get(self, req: Request, session: HttpServer, reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter) -> bool:
        if "text/event-stream" not in req.headers.get("accept", ""):
            raise HttpError(405, INVALID_REQUEST, "GET needs Accept: text/event-stream")
        last = req.headers.get("last-event-id")
        stream, after = session.standalone, 0
        if last is not None:
            number, _, seq = last.partition("-")
            found = session.streams.get(int(number)) if number.isdigit() else None
            if found is None or not seq.isdigit():
                raise HttpError(400, INVALID_REQUEST, f"unknown Last-Event-ID {last!r}")
            stream, after = found, int(seq)
        if stream.attached:
            raise HttpError(409, INVALID_REQUEST, "this stream is already open")
        return await self._sse(req, session, stream, after, reader, writer, prime=last is None)

    async def _sse(self, req: Request, server: HttpServer, stream: Stream, after: int,
                   reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   prime: bool) -> bool:
        head = ("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                "Cache-Control: no-cache\r\nConnection: close\r\n\r\n")
        writer.write(head.encode("ascii"))
        resumable = not server.rename
        if prime and resumable and (server.protocol_version or "") >= "2025-11-25":
            retry = int(self.spec.get("sseRetry", 1000))
            writer.write(f"id: {stream.event_id(after)}\nretry: {retry}\ndata: \n\n".encode())
        stream.attached = True
        watcher = asyncio.ensure_future(reader.read(1))  # end of input: the client left
        sent = after
        try:
            while True:
                if stream.closed_early:
                    # Checked before writing: the server closed the stream before answering,
                    # and what came after the close is for the resumed stream.
                    stream.closed_early = False
                    break
                for seq, data in list(stream.events):
                    if seq > sent:
                        line = f"id: {stream.event_id(seq)}\n" if resumable else ""
                        writer.write(f"{line}event: message\ndata: ".encode() + data + b"\n\n")
                        sent = seq
                await writer.drain()
                if (stream.done and sent >= stream.seq) or server.closed:
                    break
                if watcher.done():
                    if not resumable:
                        server.cancel(stream)  # 2026-07-28: closing the stream cancels
                    break
                stream.wake.clear()
                waiter = asyncio.ensure_future(stream.wake.wait())
                await asyncio.wait({waiter, watcher}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        finally:
            stream.attached = False
            watcher.cancel()
        return False


def _check_modern_headers(req: Request, msg: Msg, server: HttpServer, spec: Msg) -> None:
    """The 2026-07-28 transport rules: headers must repeat the body (else 400, -32020)."""
    given = msg.get("params")
    params: Msg = given if isinstance(given, dict) else {}
    meta = params.get("_meta")
    rid = msg.get("id")
    if msg.get("method") not in MODERN_ROUTES:
        return  # answered 404 with -32601 by the server
    if (not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str)
            or not isinstance(meta.get(META_CAPS), dict)):
        raise HttpError(400, INVALID_PARAMS,
                        "params._meta with protocolVersion and clientCapabilities is required", rid)
    if spec.get("headerChecks") is False:
        return
    method = str(msg.get("method"))
    expect = {"mcp-protocol-version": meta[META_VERSION], "mcp-method": method}
    if method in NAMED:
        expect["mcp-name"] = str(params.get(NAMED[method]))
    for name, value in expect.items():
        got = req.headers.get(name)
        if got is None:
            raise HttpError(400, HEADER_MISMATCH, f"missing header {name}", rid)
        if _decode(got) != value:
            raise HttpError(400, HEADER_MISMATCH,
                            f"header {name} {got!r} does not match the body", rid)
    if method == "tools/call":
        tool = server.find_tool(params.get("name"))
        args = params.get("arguments")
        for header, value in _param_headers(tool, args if isinstance(args, dict) else {}):
            got = req.headers.get("mcp-param-" + header.lower())
            if value is None:
                continue
            if got is None or _decode(got) != value:
                raise HttpError(400, HEADER_MISMATCH,
                                f"header Mcp-Param-{header} does not match", rid)


def _param_headers(tool: Msg | None, args: Msg) -> list[tuple[str, str | None]]:
    """(header name, expected value) for each valid ``x-mcp-header`` of the tool's schema."""
    out: list[tuple[str, str | None]] = []
    seen: set[str] = set()

    def walk(schema: JSON, value: JSON) -> None:
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict):
            return
        for key, sub in props.items():
            inner = value.get(key) if isinstance(value, dict) else None
            name = sub.get("x-mcp-header") if isinstance(sub, dict) else None
            if isinstance(name, str) and _valid_header(name, sub) and name.lower() not in seen:
                seen.add(name.lower())
                out.append((name, _encode(inner)))
            walk(sub, inner)

    walk((tool or {}).get("inputSchema"), args)
    return out


def _valid_header(name: str, schema: Msg) -> bool:
    token = "!#$%&'*+-.^_`|~"
    ok_name = bool(name) and all(c.isascii() and (c.isalnum() or c in token) for c in name)
    return ok_name and schema.get("type") in ("string", "integer", "boolean")


def _encode(value: JSON) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _decode(value: str) -> str:
    """A header value, with the ``=?base64?...?=`` form of 2026-07-28 undone."""
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except ValueError:
            return value
    return value


def _hostname(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.split(":")[0]


async def _until_done(stream: Stream) -> None:
    while not stream.done:
        stream.wake.clear()
        await stream.wake.wait()


def _responses(stream: Stream) -> list[Msg]:
    out = []
    for _seq, data in stream.events:
        with contextlib.suppress(ValueError):
            msg = json.loads(data)
            if isinstance(msg, dict) and "method" not in msg:
                out.append(msg)
    return out


def _error(rid: JSON, code: int, message: str) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return json.dumps(body).encode("utf-8")


async def _send(writer: asyncio.StreamWriter, status: int, headers: dict[str, str], body: bytes,
                keep: bool) -> None:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}"]
    if body and "Content-Type" not in headers:
        headers = {**headers, "Content-Type": "application/json"}
    headers = {**headers, "Content-Length": str(len(body)),
               "Connection": "keep-alive" if keep else "close"}
    lines += [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


def serve_http(spec: Msg, host: str, port: int) -> int:
    """Run the fake server over HTTP until killed; the URL is the first line on stdout."""

    async def main() -> None:
        front = HttpFront(spec, host, port)
        server = await front.start()
        sys.stdout.write(front.url + "\n")
        sys.stdout.flush()
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0
