"""The 2026-07-28 era of the fake server: stateless requests, discover, MRTR, listen streams.

Chosen by the spec key ``era`` (or ``--era``): ``legacy`` (the handshake era only),
``modern`` (2026-07-28 only: ``initialize`` is an unknown method) or ``both`` (dual-era: a
connection that answered ``initialize`` stays legacy, one that answered ``server/discover``
refuses ``initialize`` from then on, as modern-only servers do). Every modern request is judged
on its own ``_meta`` (spec A.6): version, capabilities and log level come from it, results
carry ``resultType``, ``serverInfo`` and, where cacheable, ``ttlMs``/``cacheScope``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Callable
from typing import cast

from .common import (
    COMPACT,
    INVALID_PARAMS,
    JSON,
    LOG_LEVELS,
    META_CAPS,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    MODERN_VERSIONS,
    TASKS_EXTENSION,
    UNSUPPORTED_VERSION,
    Call,
    Msg,
    RpcError,
)
from .core import ServerCore

Handler = Callable[[Call], "Msg | None"]

#: The 2026-07-28 methods (spec A.3) -> the server's method that answers each.
MODERN_ROUTES = {
    "server/discover": "m_discover",
    "subscriptions/listen": "m_listen",
    "tools/list": "m_tools_list",
    "tools/call": "m_tools_call",
    "prompts/list": "m_prompts_list",
    "prompts/get": "m_prompts_get",
    "resources/list": "m_resources_list",
    "resources/templates/list": "m_templates_list",
    "resources/read": "m_resources_read",
    "completion/complete": "m_complete",
    "tasks/get": "m_task_get",
    "tasks/update": "m_task_update",
    "tasks/cancel": "m_task_cancel",
}

#: Results that carry the caching hints (spec A.7, CacheableResult).
CACHEABLE = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list",
     "resources/templates/list", "resources/read"}
)

#: The client capability an input request needs (spec A.8).
INPUT_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}

#: Filter key of subscriptions/listen -> (notification, server capability it needs).
LISTEN_KEYS = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources"),
}
MAX_LISTENS = 64
MAX_RESOURCE_SUBSCRIPTIONS = 1000

# A per-process key: requestState is signed so that an altered echo is caught (spec A.8:
# the client echoes it byte for byte).
_STATE_KEY = os.urandom(16)


class Modern(ServerCore):
    """Routes and answers requests of the 2026-07-28 era."""

    def _is_modern(self, call: Call) -> bool:
        if self.era == "legacy":
            return False
        if self.era == "modern":
            return True
        with self._cond:
            state = self.connection_era
        if state is not None:
            return state == "modern"
        if call.method == "server/discover":
            return True
        meta = call.params.get("_meta")
        return call.method != "initialize" and isinstance(meta, dict) and META_VERSION in meta

    def route_modern(self, call: Call) -> Msg | None:
        name = MODERN_ROUTES.get(call.method)
        if name is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {call.method}")
        self._check_meta(call)
        call.modern = True
        if call.method in ("prompts/get", "resources/read"):
            interim = self._entry_round(call)
            if interim is not None:
                return self._decorate(call, interim)
        handler = cast(Handler, getattr(self, name))
        result = handler(call)
        return None if result is None else self._decorate(call, result)

    def _check_meta(self, call: Call) -> None:
        """Spec A.6: ``_meta`` with version and capabilities on every request."""
        meta = call.params.get("_meta")
        if not isinstance(meta, dict):
            raise RpcError(INVALID_PARAMS, "params._meta is required (2026-07-28)")
        version = meta.get(META_VERSION)
        if not isinstance(version, str):
            raise RpcError(INVALID_PARAMS, f"params._meta[{META_VERSION!r}] is required")
        caps = meta.get(META_CAPS)
        if not isinstance(caps, dict):
            raise RpcError(INVALID_PARAMS, f"params._meta[{META_CAPS!r}] is required")
        supported = self.supported_versions()
        reject = int(self.spec.get("rejectVersionTimes") or 0)
        with self._cond:
            forced = self._version_rejections < reject
            if forced:
                self._version_rejections += 1
        if forced or version not in supported:
            raise RpcError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version: {version}",
                {"supported": supported, "requested": version},
            )
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LOG_LEVELS:
            raise RpcError(INVALID_PARAMS, f"Invalid log level: {level!r}")
        call.caps = caps
        call.level = level
        self.record({"event": "meta", "method": call.method, "capabilities": caps,
                     "clientInfo": meta.get(META_CLIENT_INFO), "logLevel": level})

    def supported_versions(self) -> list[str]:
        return [str(v) for v in self.spec.get("supportedVersions") or MODERN_VERSIONS]

    def _decorate(self, call: Call, result: Msg) -> Msg:
        out = dict(result)
        spec = self.spec
        out.setdefault("resultType", "complete")
        if spec.get("omitResultType") and out["resultType"] == "complete":
            del out["resultType"]
        if call.method in CACHEABLE and out.get("resultType", "complete") == "complete":
            hints = self._cache_hints(call.method)
            if hints is not None:
                out.update(hints)
        if not spec.get("omitServerInfo"):
            info = {"name": spec.get("name", "fake-mcp"), "version": spec.get("version", "1.0.0")}
            out["_meta"] = {**(out.get("_meta") or {}), META_SERVER_INFO: info}
        return out

    def _cache_hints(self, method: str) -> Msg | None:
        """``ttlMs``/``cacheScope`` from the spec key ``cache`` (per method, or for all)."""
        cache = self.spec.get("cache")
        if cache is False:
            return None  # a server that (wrongly) leaves them out
        table = cache if isinstance(cache, dict) else {}
        entry = table.get(method)
        if not isinstance(entry, dict):
            entry = table
        return {
            "ttlMs": entry.get("ttlMs", 0),
            "cacheScope": entry.get("cacheScope", "private"),
        }

    def modern_capabilities(self) -> Msg:
        caps = dict(self.capabilities())
        if self.spec.get("capabilities") is not None:
            return caps
        if caps.pop("tasks", None) is not None:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    # ------------------------------------------------------------------ methods

    def m_discover(self, call: Call) -> Msg:
        if self.spec.get("discoverError") is not None:
            err = dict(self.spec["discoverError"])
            raise RpcError(int(err.get("code", -32603)), str(err.get("message", "")), err.get("data"))
        if self.era == "both":
            # Set before the answer is written, so nothing the client sends after it can race.
            with self._cond:
                self.connection_era = self.connection_era or "modern"
        result: Msg = {
            "supportedVersions": self.supported_versions(),
            "capabilities": self.modern_capabilities(),
        }
        if self.spec.get("instructions") is not None:
            result["instructions"] = self.spec["instructions"]
        return result

    def m_listen(self, call: Call) -> Msg | None:
        """``subscriptions/listen``: acknowledge, then stream until cancelled or shut down."""
        wanted = call.params.get("notifications")
        if not isinstance(wanted, dict):
            raise RpcError(INVALID_PARAMS, "params.notifications must be an object")
        caps = self.modern_capabilities()
        honoured: Msg = {}
        for key, (_method, cap) in LISTEN_KEYS.items():
            if wanted.get(key) is True and (caps.get(cap) or {}).get("listChanged"):
                honoured[key] = True
        uris = wanted.get("resourceSubscriptions")
        if isinstance(uris, list) and (caps.get("resources") or {}).get("subscribe"):
            honoured["resourceSubscriptions"] = [str(u) for u in uris[:MAX_RESOURCE_SUBSCRIPTIONS]]
        with self._cond:
            if len(self.listeners) >= MAX_LISTENS:
                raise RpcError(INVALID_PARAMS, f"at most {MAX_LISTENS} open subscriptions")
            self.listeners[call.id] = (call, honoured)
        self.record({"event": "listen", "id": call.id, "notifications": honoured})
        sub = {META_SUBSCRIPTION: call.id}
        self.notify(
            "notifications/subscriptions/acknowledged",
            {"_meta": sub, "notifications": honoured},
            call,
        )
        # ``listenCloseAfter`` (s): end every stream gracefully after that long, so clients
        # can be tested re-opening it; otherwise it stays open until cancelled or shutdown.
        end_after = self.spec.get("listenCloseAfter")
        timeout = float(end_after) if end_after is not None else None
        try:
            with self._cond:
                self._cond.wait_for(lambda: call.cancelled or self.closing, timeout)
        finally:
            with self._cond:
                self.listeners.pop(call.id, None)
        self.record({"event": "listenEnd", "id": call.id, "cancelled": call.cancelled})
        if call.cancelled and not self.closing:
            return None
        return {"_meta": dict(sub)}

    def changed(self, method: str, params: Msg | None, call: Call | None) -> None:
        """A list changed or a resource was updated: tell the legacy client, or the listeners."""
        with self._cond:
            legacy = self.era == "legacy" or self.connection_era == "legacy"
            subscribed = self.subscriptions
            listeners = list(self.listeners.values())
        uri = (params or {}).get("uri")
        if legacy:
            if method != "notifications/resources/updated" or uri in subscribed:
                self.notify(method, params, call)
        for listen, honoured in listeners:
            if method == "notifications/resources/updated":
                if uri not in (honoured.get("resourceSubscriptions") or ()):
                    continue
            elif not any(honoured.get(k) and m == method for k, (m, _c) in LISTEN_KEYS.items()):
                continue
            out = dict(params or {})
            out["_meta"] = {META_SUBSCRIPTION: listen.id}
            self.notify(method, out, listen)

    # --------------------------------------------------------------------- MRTR

    def _entry_round(self, call: Call) -> Msg | None:
        """MRTR for ``prompts/get`` / ``resources/read`` of entries with ``inputRounds``."""
        if call.method == "prompts/get":
            key, items = call.params.get("name"), self.prompts
            entry = next((p for p in items if p.get("name") == key), None)
        else:
            key, items = call.params.get("uri"), self.resources
            entry = next((r for r in items if r.get("uri") == key), None)
        if entry is None or not entry.get("inputRounds"):
            return None
        interim, _ = self.input_round(call, list(entry["inputRounds"]), f"{call.method}:{key}",
                                      bool(entry.get("inputOptional")))
        return interim

    def input_round(self, call: Call, rounds: list[Msg], owner: str,
                    optional: bool = False) -> tuple[Msg | None, Msg]:
        """One step of a multi-round-trip request (spec A.8).

        Returns ``(interim, responses)``: an ``InputRequiredResult`` to send while rounds are
        left, else ``(None, every response collected)``. The round reached and the responses
        so far travel in ``requestState`` (signed, so a changed echo is refused with -32602);
        without a state the round is the number of leading rounds fully answered. A retry that
        lacks some of the round's responses gets the round again (SEP-2322: re-request).
        ``optional``: input requests the client has no capability for are left out.
        """
        raw_state = call.params.get("requestState")
        responses = call.params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise RpcError(INVALID_PARAMS, "inputResponses must be an object")
        given: Msg = dict(responses or {})
        if raw_state is not None:
            n, collected = _open_state(raw_state, owner)
            if n < 1 or n > len(rounds):
                raise RpcError(INVALID_PARAMS, "requestState does not belong to this request")
            asked = _asked(call, rounds[n - 1], optional)
            if all(k in given for k in asked):
                collected.update({k: given[k] for k in asked})
            else:
                n -= 1  # ask for the same round again
        else:
            n, collected = 0, {}
            while n < len(rounds) and all(k in given for k in _asked(call, rounds[n], optional)):
                collected.update({k: given[k] for k in _asked(call, rounds[n], optional)})
                n += 1
        bad = sorted(k for k, v in given.items() if not isinstance(v, dict))
        if bad:
            raise RpcError(INVALID_PARAMS, f"inputResponses {bad} must be result objects")
        self.record({"event": "inputResponses", "owner": owner, "round": n,
                     "keys": sorted(given), "state": raw_state is not None})
        if n >= len(rounds):
            return None, collected
        requests = _asked(call, rounds[n], optional)
        needed = {INPUT_CAPABILITY.get(str(r.get("method"))) for r in requests.values()}
        lacking = sorted(c for c in needed if c is not None and c not in call.caps)
        if lacking and not self.spec.get("ignoreClientCapabilities"):
            raise RpcError(
                MISSING_CAPABILITY,
                f"This request needs the client capabilities {lacking}",
                {"requiredCapabilities": {c: {} for c in lacking}},
            )
        interim: Msg = {"resultType": "input_required"}
        if requests:
            interim["inputRequests"] = requests
        if not self.spec.get("omitRequestState"):
            interim["requestState"] = _seal_state(owner, n + 1, collected)
        return interim, collected


def _asked(call: Call, requests: Msg, optional: bool) -> Msg:
    """A round's input requests; ``optional``: only those the client has a capability for."""
    if not optional:
        return requests
    return {k: r for k, r in requests.items()
            if INPUT_CAPABILITY.get(str(r.get("method")), "") in call.caps
            or str(r.get("method")) not in INPUT_CAPABILITY}


def _seal_state(owner: str, n: int, collected: Msg) -> str:
    body = json.dumps({"o": owner, "n": n, "c": collected}, separators=COMPACT).encode("utf-8")
    text = base64.urlsafe_b64encode(body).decode("ascii")
    mac = hmac.new(_STATE_KEY, text.encode("ascii"), hashlib.sha256).hexdigest()[:16]
    return f"{text}.{mac}"


def _open_state(raw: JSON, owner: str) -> tuple[int, Msg]:
    if isinstance(raw, str) and "." in raw:
        text, mac = raw.rsplit(".", 1)
        good = hmac.new(_STATE_KEY, text.encode("ascii", "replace"), hashlib.sha256).hexdigest()[:16]
        if hmac.compare_digest(mac, good):
            data = json.loads(base64.urlsafe_b64decode(text.encode("ascii")))
            if data.get("o") == owner:
                return int(data["n"]), dict(data["c"])
    raise RpcError(INVALID_PARAMS, "requestState was not echoed byte for byte")

