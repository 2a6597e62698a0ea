"""What a tool of the fake server does when called: its ``behavior`` spec key.

Echo, a fixed result or error, ``isError``, delays, progress, logs, notifications, requests
to the client (sampling, elicitation, roots, tasks), mutation of the lists, exit, hang,
huge results. Each waits on the shared condition, so a cancellation ends it at once.
"""

from __future__ import annotations

import json
import re
import time

from .common import COMPACT, JSON, LOG_LEVELS, RELATED_TASK, TERMINAL, Call, Msg, dumps
from .core import ServerCore


class Behaviours(ServerCore):
    """Runs tools and asks the client things."""

    def run_tool(self, call: Call, tool: Msg) -> tuple[str, Msg] | None:
        """Run a tool's behaviour; None means "send nothing" (cancelled, hang)."""
        b: Msg = tool.get("behavior") or {"echo": True}
        args = call.params.get("arguments") or {}
        collected: Msg | None = None
        if call.modern and (b.get("request") is not None or b.get("inputRounds")):
            # 2026-07-28: no server->client requests; they become MRTR rounds (spec A.8).
            interim, collected = self.input_round(
                call, mrtr_rounds(b), "tool:" + str(tool.get("name")), bool(b.get("inputOptional"))
            )
            if interim is not None:
                return ("result", interim)
        if b.get("closeStream"):
            self.close_stream(call)  # HTTP: the client must resume with Last-Event-ID
        if b.get("delayArg") is not None:
            # The delay is one of the call's arguments, e.g. {"delayArg": "seconds"}.
            delay = args.get(b["delayArg"]) if isinstance(args, dict) else None
            if isinstance(delay, (int, float)) and delay > 0 and self.wait_cancelled(
                call, min(float(delay), 3600.0)
            ):
                return None
        if b.get("delay") and self.wait_cancelled(call, float(b["delay"])):
            return None
        for n in b.get("notify") or []:
            self.notify(str(n["method"]), n.get("params"), call)
        for entry in b.get("log") or []:
            self._emit_log(call, entry)
        interval = float(b.get("progressInterval") or 0)
        if b.get("progress") and self._send_progress(call, int(b["progress"]), interval):
            return None
        if b.get("mutate"):
            self._mutate(b["mutate"], call)
        for uri in b.get("updated") or []:
            self.changed("notifications/resources/updated", {"uri": uri}, call)
        for kind in b.get("listChanged") or []:
            self.changed(f"notifications/{kind}/list_changed", None, call)
        structured: Msg | None = None
        if collected is not None:
            reqs = b.get("request")
            if reqs is None:
                structured = {"inputResponses": collected}
            else:
                answers = [{"response": collected.get(f"r{i}")} for i in range(_count(reqs))]
                structured = {"responses": answers} if isinstance(reqs, list) else answers[0]
        elif b.get("request") is not None:
            reqs = b["request"]
            answers = self.request_client(reqs if isinstance(reqs, list) else [reqs], call)
            if call.cancelled:
                return None
            structured = {"responses": answers} if isinstance(reqs, list) else answers[0]
        if b.get("requestTask") is not None:
            structured = self._request_task(dict(b["requestTask"]), call)
            if call.cancelled:
                return None
        if b.get("exit") is not None:
            if b.get("stderr") is not None:
                self._stderr_write(b["stderr"])
            self._exit_now(int(b["exit"]))
        if b.get("hang"):
            self.wait_cancelled(call, None)
            return None
        if b.get("waitCancelled"):
            self.wait_cancelled(call, None)
            if call.cancelled and not self.closing:
                self.record({"event": "waitCancelled", "requestId": call.id, "reason": call.reason})
            return None
        if call.cancelled:
            return None
        if b.get("error") is not None:
            return ("error", dict(b["error"]))
        if b.get("result") is not None:
            return ("result", b["result"])
        if b.get("isError") is not None:
            return (
                "result",
                {"content": [{"type": "text", "text": str(b["isError"])}], "isError": True},
            )
        if b.get("huge") is not None:
            return ("result", {"content": [{"type": "text", "text": "x" * int(b["huge"])}]})
        if b.get("template") is not None:
            # Text with {argument} placeholders filled from the call's arguments.
            values = {str(k): str(v) for k, v in (args if isinstance(args, dict) else {}).items()}
            text = re.sub(r"\{([A-Za-z0-9_]+)\}", lambda m: values.get(m.group(1), m.group(0)),
                          str(b["template"]))
            return ("result", {"content": [{"type": "text", "text": text}]})
        if structured is not None:
            text = json.dumps(structured, separators=COMPACT)
            return (
                "result",
                {"content": [{"type": "text", "text": text}], "structuredContent": structured},
            )
        result: Msg = {"content": [{"type": "text", "text": json.dumps(args, separators=COMPACT)}]}
        if tool.get("outputSchema") is not None:
            result["structuredContent"] = args
        return ("result", result)

    def _request_task(self, spec: Msg, call: Call) -> Msg:
        """Ask the client to run a request as a task (2025-11-25), then follow it.

        ``spec``: ``{method, params?, ttl?, cancel?, list?}``. Returns what happened:
        ``created`` (the client's answer), ``statuses`` (each polled status), ``cancel`` /
        ``list`` answers when asked for, and ``outcome`` (the ``tasks/result`` answer).
        """
        params = dict(spec.get("params") or {})
        params["task"] = {"ttl": spec["ttl"]} if "ttl" in spec else {}
        created = self.request_client([{"method": spec["method"], "params": params}], call)[0]
        out: Msg = {"created": created}
        task = (created.get("response") or {}).get("task")
        if not isinstance(task, dict) or call.cancelled:
            return out
        ident = {"taskId": task.get("taskId")}
        if spec.get("cancel"):
            out["cancel"] = self.request_client([{"method": "tasks/cancel", "params": ident}], call)[0]
        statuses: list[JSON] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not call.cancelled:
            got = self.request_client([{"method": "tasks/get", "params": ident}], call)[0]
            status = (got.get("response") or {}).get("status")
            statuses.append(status)
            if status in TERMINAL or status is None:
                break
            time.sleep(0.02)
        out["statuses"] = statuses
        if spec.get("list"):
            out["list"] = self.request_client([{"method": "tasks/list"}], call)[0]
        out["outcome"] = self.request_client([{"method": "tasks/result", "params": ident}], call)[0]
        return out

    def _emit_log(self, call: Call, entry: Msg) -> None:
        level = str(entry.get("level", "info"))
        with self._cond:
            threshold = self.log_level
        if call.modern:
            threshold = call.level
            if threshold is None:
                return  # 2026-07-28: no logLevel in _meta, no log messages (spec A.7)
        if threshold is not None and _level_index(level) < _level_index(threshold):
            return
        params: Msg = {"level": level, "data": entry.get("data")}
        if entry.get("logger") is not None:
            params["logger"] = entry["logger"]
        self.notify("notifications/message", params, call)

    def _send_progress(self, call: Call, n: int, interval: float) -> bool:
        """Send ``n`` progress notifications; True if the call got cancelled meanwhile."""
        meta = call.params.get("_meta") or {}
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is None:
            return False
        for i in range(1, n + 1):
            if interval > 0 and self.wait_cancelled(call, interval):
                return True
            if call.cancelled:
                return True
            self.notify(
                "notifications/progress",
                {
                    "progressToken": token,
                    "progress": i,
                    "total": n,
                    "message": f"step {i} of {n}",
                },
                call,
            )
        return False

    def _mutate(self, change: Msg, call: Call) -> None:
        sent = []
        with self._cond:
            if "tools" in change:
                self.tools = list(change["tools"])
                sent.append("notifications/tools/list_changed")
            if "prompts" in change:
                self.prompts = list(change["prompts"])
                sent.append("notifications/prompts/list_changed")
            if "resources" in change or "resourceTemplates" in change:
                if "resources" in change:
                    self.resources = list(change["resources"])
                if "resourceTemplates" in change:
                    self.templates = list(change["resourceTemplates"])
                sent.append("notifications/resources/list_changed")
        for method in sent:
            self.changed(method, None, call)

    def request_client(self, reqs: list[Msg], call: Call | None) -> list[Msg]:
        """Send requests to the client concurrently and wait for every answer.

        Each answer is ``{"response": result}`` or ``{"error": error}``; ``{}`` when the
        call was cancelled (or stdin closed) before the client answered.
        """
        ids = []
        lines = []
        with self._cond:
            for req in reqs:
                self._next_id += 1
                rid = self._next_id
                self.pending[rid] = None
                ids.append(rid)
                msg: Msg = {"jsonrpc": "2.0", "id": rid, "method": str(req.get("method"))}
                params = req.get("params")
                if call is not None and call.task_id is not None:
                    params = dict(params or {})
                    meta = dict(params.get("_meta") or {})
                    meta[RELATED_TASK] = {"taskId": call.task_id}
                    params["_meta"] = meta
                if params is not None:
                    msg["params"] = params
                lines.append(dumps(msg))
        for rid, req in zip(ids, reqs):
            params = req.get("params")
            as_task = isinstance(params, dict) and isinstance(params.get("task"), dict)
            self.record({"event": "request", "id": rid, "method": str(req.get("method")),
                         "task": as_task})
        self.write_raw(lines, call)

        def done() -> bool:
            if self.closing or (call is not None and call.cancelled):
                return True
            return all(self.pending[i] is not None for i in ids)

        answers: list[Msg] = []
        with self._cond:
            self._cond.wait_for(done)
            for rid in ids:
                resp = self.pending.pop(rid, None)
                if resp is None:
                    answers.append({})
                elif "error" in resp:
                    answers.append({"error": resp["error"]})
                else:
                    answers.append({"response": resp.get("result")})
        return answers


def mrtr_rounds(b: Msg) -> list[Msg]:
    """A behaviour's MRTR rounds: ``inputRounds``, or its ``request`` (one round, keys r0..)."""
    if b.get("inputRounds"):
        return [dict(r) for r in b["inputRounds"]]
    reqs = b["request"]
    items = reqs if isinstance(reqs, list) else [reqs]
    return [{f"r{i}": dict(req) for i, req in enumerate(items)}]


def _count(reqs: JSON) -> int:
    return len(reqs) if isinstance(reqs, list) else 1


def _level_index(level: JSON) -> int:
    try:
        return LOG_LEVELS.index(str(level))
    except ValueError:
        return 0

