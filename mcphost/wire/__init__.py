"""Byte codecs, sans-I/O: each is fed bytes and returns events (layer 1).

``framing`` splits newline-delimited JSON (stdio); ``http11`` parses HTTP/1.1 responses
incrementally and ``http11_request`` writes the requests; ``sse`` parses Server-Sent Events; ``websocket``
frames and unframes RFC 6455 messages. Each bounds what the other side controls.
"""
