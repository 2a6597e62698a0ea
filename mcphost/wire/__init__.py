"""Byte codecs, sans-I/O: each is fed bytes and returns events (layer 1).

``framing`` splits newline-delimited JSON (stdio); ``http11`` writes HTTP/1.1 requests
and parses responses incrementally; ``sse`` parses Server-Sent Events; ``websocket``
frames and unframes RFC 6455 messages. Each bounds what the other side controls.
"""
