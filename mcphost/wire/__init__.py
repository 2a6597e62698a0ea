"""Byte codecs, sans-I/O: each is fed bytes and returns events (layer 1).

``framing`` splits newline-delimited JSON (stdio). The HTTP/1.1, SSE and WebSocket codecs
of the remote transports live here too.
"""
