"""A minimal, fast stdlib MCP echo server for the benchmarks (stdio, newline-delimited JSON-RPC).

It answers ``initialize`` (echoing the requested protocol version), ``ping``, ``tools/list``
(one tool, ``echo``) and ``tools/call`` (the arguments come back as JSON text); every
notification is ignored. It reads stdin in large binary chunks and writes each batch of
responses with one ``os.write``, so that the server costs as little as possible and the
benchmark measures the client.

``--progress``: a ``tools/call`` carrying ``_meta.progressToken`` is preceded by one
``notifications/progress`` (progress 1 of 1).

Run: ``python benchmarks/echo_server.py [--progress]``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

try:
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    import json

    _encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def _dumps(obj: Any) -> bytes:
        return _encode(obj).encode("utf-8", "surrogatepass")

    _loads = json.loads

TOOL = {
    "name": "echo",
    "description": "Return the arguments as JSON text.",
    "inputSchema": {
        "type": "object",
        "properties": {"i": {"type": "integer"}},
        "additionalProperties": True,
    },
}

SERVER_INFO = {"name": "bench-echo", "version": "1.0.0"}


def _answer(msg: dict[str, Any], progress: bool, out: list[bytes]) -> None:
    method = msg.get("method")
    if "id" not in msg:
        return  # a notification, or a response to something we never asked: ignore
    rid = msg["id"]
    if method is None:
        return  # a response from the client: ignore
    params = msg.get("params") or {}
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        if progress:
            meta = params.get("_meta")
            if meta and "progressToken" in meta:
                out.append(
                    _dumps(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {
                                "progressToken": meta["progressToken"],
                                "progress": 1,
                                "total": 1,
                            },
                        }
                    )
                )
        result: Any = {"content": [{"type": "text", "text": _dumps(arguments).decode()}]}
    elif method == "ping":
        result = {}
    elif method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    else:
        out.append(
            _dumps(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"method not found: {method}"},
                }
            )
        )
        return
    out.append(_dumps({"jsonrpc": "2.0", "id": rid, "result": result}))


def serve(progress: bool = False) -> None:
    """Serve on fd 0/1 until stdin closes."""
    read = os.read
    write = os.write
    buf = b""
    while True:
        try:
            chunk = read(0, 1 << 20)
        except InterruptedError:  # pragma: no cover
            continue
        if not chunk:
            return
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out: list[bytes] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                msg = _loads(line)
            except ValueError:
                out.append(
                    _dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": None,
                            "error": {"code": -32700, "message": "parse error"},
                        }
                    )
                )
                continue
            for item in msg if type(msg) is list else (msg,):
                if type(item) is dict:
                    _answer(item, progress, out)
        if out:
            out.append(b"")
            data = memoryview(b"\n".join(out))
            while data:
                try:
                    n = write(1, data)
                except BrokenPipeError:
                    return
                data = data[n:]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    with contextlib.suppress(KeyboardInterrupt):
        serve(progress="--progress" in args)


if __name__ == "__main__":
    main()
