"""Every public call raises only MCPHostError subclasses: the caller's own mistakes too."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost, MCPHostError, Permissions, RoutingError, UsageError
from mcphost.bounds import Bounds
from mcphost.host import observe
from mcphost.host.options import CHECKS
from mcphost.policy import Backoff, RestartPolicy, RetryPolicy


@pytest.fixture
async def host() -> Any:
    solo = {"name": "solo", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}}
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL, solo], "prompts": [{"name": "p"}]}))) as h:
        yield h


@pytest.mark.parametrize(
    "call",
    [
        lambda h: h.call_tool("a.echo", [("text", "x"), 5]),
        lambda h: h.call_tool("a.echo", 42),
        lambda h: h.call_tool("a.echo", {"text": object()}),
        lambda h: h.call_tool(None, {}),
        lambda h: h.call_tool("a.echo", {}, timeout="soon"),
        lambda h: h.get_prompt(7),
        lambda h: h.get_prompt("a.p", ["not", "a", "mapping"]),
        lambda h: h.get_resource(None),
        lambda h: h.complete({"type": "ref/nothing"}, {"name": "x", "value": ""}),
        lambda h: h.complete("not a mapping", {}),
        lambda h: h.set_log_level(None, "loud"),
        lambda h: h.set_roots([42]),
        lambda h: h.list_tasks("nobody"),
        lambda h: h.restart_server(3),
        lambda h: h.subscribe_resource(3.5),
    ],
)
async def test_bad_arguments_raise_the_tree(host: MCPHost, call: Any) -> None:
    with pytest.raises(MCPHostError):
        await call(host)
    # ... and the host still serves.
    assert (await host.call_tool("a.echo", {"text": "ok"}))["content"]


async def test_unserialisable_arguments_are_a_usage_error_naming_the_call(host: MCPHost) -> None:
    host.validate_arguments = False
    with pytest.raises(UsageError, match="tools/call: params are not JSON-serialisable") as info:
        await host.call_tool("a.echo", {"text": {1, 2}})
    assert info.value.server == "a"
    assert isinstance(info.value, ValueError)
    assert host.get_metrics()["a"]["pending"] == 0


@pytest.mark.parametrize("options", [{}, {"timeout": 5.0}], ids=["fast path", "full path"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
async def test_non_finite_numbers_are_refused_before_sending(host: MCPHost, options: dict[str, Any], bad: float) -> None:
    # orjson would write NaN as null: refused by both codecs, on the fused path of plain calls too.
    host.validate_arguments = False
    sent = host.get_metrics()["a"]["transport"]["messages_out"]
    with pytest.raises(UsageError, match="tools/call: params are not JSON-serialisable") as info:
        await host.call_tool("a.echo", {"text": "x", "n": [1, None, {"v": bad}]}, **options)
    assert info.value.server == "a"
    metrics = host.get_metrics()["a"]
    assert metrics["pending"] == 0 and metrics["transport"]["messages_out"] == sent  # nothing went out
    # A null that is really null is sent.
    assert (await host.call_tool("a.echo", {"text": "x", "n": None}, **options))["content"]


async def test_initialize_twice_and_bad_sources() -> None:
    host = MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})))
    async with host:
        with pytest.raises(UsageError, match="initialize"):
            await host.initialize()
    with pytest.raises(MCPHostError):
        await MCPHost(12345).initialize()  # type: ignore[arg-type]
    with pytest.raises(RoutingError, match="unknown server 'zz'"):
        await MCPHost(fake_config(a=fake({})), servers=["zz"]).initialize()


# -- every public method and option, found by introspection -------------------------------

#: Values no parameter of the API should choke on with anything but an MCPHostError.
BAD: list[Any] = [object(), 42, -1.5, "", "zz.nothing", None, ["x"], {"x": object()}, float("nan"), True, b"x"]
#: A plausible value for the parameters that name something, so that the other
#: parameters of a call are reached.
GOOD: dict[str, Any] = {"name": "a.echo", "tool_name": "a.echo", "server": "a", "query": "echo",
                        "provider": "openai", "uri": "fake://nothing"}
#: Without parameters there is no bad input to give; these change the host's state.
NO_INPUT = {"shutdown", "close", "kill", "disconnect_all", "connect_all", "reload", "get_metrics", "metrics_text"}


def _public_methods() -> list[str]:
    names = []
    for name in sorted(dir(MCPHost)):
        if name.startswith("_") or isinstance(inspect.getattr_static(MCPHost, name), property):
            continue
        if callable(getattr(MCPHost, name)):
            names.append(name)
    return names


def test_every_public_method_is_driven() -> None:
    untested = [n for n in _public_methods() if n not in NO_INPUT
                and not [p for p in inspect.signature(getattr(MCPHost, n)).parameters if p != "self"]]
    assert untested == []  # a method without parameters must be listed in NO_INPUT on purpose


async def _outcome(value: Any) -> None:
    if inspect.isawaitable(value):
        await asyncio.wait_for(asyncio.ensure_future(value), 10)


@pytest.mark.parametrize("method", [n for n in _public_methods() if n not in NO_INPUT])
async def test_every_public_method_raises_only_the_tree(host: MCPHost, method: str) -> None:
    params = [p for p in inspect.signature(getattr(MCPHost, method)).parameters.values() if p.name != "self"]
    leaks = []
    for target in params:
        for bad in BAD:
            # Every argument by keyword: the one under test bad, the other required ones
            # plausible (or bad too, when nothing plausible is known), the rest left out.
            kwargs = {p.name: bad if p is target else GOOD.get(p.name, bad) for p in params
                      if p is target or p.default is inspect.Parameter.empty}
            try:
                await _outcome(getattr(host, method)(**kwargs))
            except (MCPHostError, asyncio.CancelledError):
                pass
            except Exception as exc:  # what this test looks for
                leaks.append(f"{method}({target.name}={bad!r}): {type(exc).__name__}: {exc}")
    assert not leaks, "\n".join(leaks)
    # Nothing bad was taken in: the host still serves.
    assert (await host.call_tool("a.echo", {"text": "ok"}))["content"]


def test_every_constructor_option_has_a_check() -> None:
    options = [p for p in inspect.signature(MCPHost.__init__).parameters if p not in ("self", "config")]
    assert sorted(options) == sorted(CHECKS)


@pytest.mark.parametrize("option", sorted(CHECKS))
def test_every_bad_constructor_option_is_a_usage_error_in_the_constructor(option: str) -> None:
    leaks = []
    for bad in BAD:
        try:
            MCPHost(**{option: bad})
        except UsageError as exc:
            assert option in str(exc)
        except Exception as exc:  # what this test looks for
            leaks.append(f"{option}={bad!r}: {type(exc).__name__}: {exc}")
    assert not leaks, "\n".join(leaks)


@pytest.mark.parametrize(("options", "match"), [
    ({"validate_messages": "loud"}, "validate_messages"),
    ({"log_level": "LOUD"}, "log_level"),
    ({"bounds": "x"}, "bounds"),
    ({"request_timeout": "soon"}, "request_timeout"),
    ({"request_timeout": -1}, "request_timeout"),
    ({"max_pages": 5, "bounds": Bounds()}, "max_pages"),
    ({"retry": 3}, "retry"),
    ({"validate_output": "maybe"}, "validate_output"),
])
def test_one_class_for_every_bad_option(options: dict[str, Any], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        MCPHost(**options)


def test_good_options_are_accepted() -> None:
    MCPHost(request_timeout=None)  # "no timeout"
    MCPHost(max_pages=5)
    MCPHost(bounds=Bounds(max_pages=5), max_pages=5)  # the same value twice is no conflict
    assert MCPHost(bounds=Bounds(max_pages=7)).bounds.max_pages == 7


@pytest.mark.parametrize("make", [
    lambda v: Bounds(max_pages=v),
    lambda v: Bounds(max_list_items=v),
    lambda v: Backoff(initial=v),
    lambda v: Backoff(jitter=v),
    lambda v: RetryPolicy(retries=v),
    lambda v: RetryPolicy(backoff=v),
    lambda v: RetryPolicy(start_budget=v),
    lambda v: RestartPolicy(policy=v),
    lambda v: RestartPolicy(max_attempts=v),
    lambda v: Permissions([v]),
])
def test_option_classes_raise_usage_errors(make: Any) -> None:
    leaks = []
    for bad in [object(), -1, "", float("nan"), ["x"]]:
        try:
            make(bad)
        except UsageError as exc:
            assert isinstance(exc, ValueError)  # what they raised before: still caught
        except Exception as exc:  # what this test looks for
            leaks.append(f"{bad!r}: {type(exc).__name__}: {exc}")
    assert not leaks, "\n".join(leaks)


@pytest.mark.parametrize("method", ["on_call", "on_event", "on_log", "on_progress", "on_roots", "on_sampling",
                                    "on_elicitation", "register_callback"])
def test_a_handler_that_is_not_a_function_is_refused_when_given(method: str) -> None:
    with pytest.raises(UsageError, match=f"{method}\\(\\) takes a function, not int"):
        getattr(MCPHost(), method)(42)


# -- FR7.4: a request refused before sending leaves one log record, bounded ------------------


def _refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == "request_refused"]


@pytest.mark.parametrize(("call", "kind"), [
    (lambda h: h.call_tool("zz.nothing", {}), "RoutingError"),
    (lambda h: h.call_tool("a.nothing", {}), "RoutingError"),
    (lambda h: h.call_tool("a.echo", {"text": 5}), "ValidationError"),
    (lambda h: h.call_tool("a.echo", 42), "UsageError"),
    (lambda h: h.call_tool("a.solo", {}, task=True), "UsageError"),
    (lambda h: h.get_prompt("a.p", ["not", "a", "mapping"]), "UsageError"),
    (lambda h: h.get_resource("nothing://here"), "RoutingError"),
])
async def test_a_refused_request_leaves_one_record(host: MCPHost, caplog: pytest.LogCaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch, call: Any, kind: str) -> None:
    monkeypatch.setattr(observe, "_refusals", {"window": 0.0, "count": 0, "quiet": 0})
    caplog.set_level(logging.DEBUG, logger="mcphost")
    with pytest.raises(MCPHostError) as info:
        await call(host)
    records = _refusals(caplog)
    assert len(records) == 1 and type(info.value).__name__ == kind
    record = records[0]
    assert record.name == "mcphost.requests" and record.levelno == logging.INFO
    assert kind in record.getMessage() and str(info.value).splitlines()[0][:100] in record.getMessage()


async def test_refusal_records_are_bounded(host: MCPHost, caplog: pytest.LogCaptureFixture,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observe, "_refusals", {"window": 0.0, "count": 0, "quiet": 0})
    caplog.set_level(logging.DEBUG, logger="mcphost")
    long_name = "a." + "x" * 5000
    for _ in range(observe.REFUSALS_PER_MINUTE + 5):
        with pytest.raises(RoutingError):
            await host.call_tool(long_name, {})
    records = _refusals(caplog)
    assert len(records) == observe.REFUSALS_PER_MINUTE + 5  # one each...
    loud = [r for r in records if r.levelno == logging.INFO]
    assert len(loud) == observe.REFUSALS_PER_MINUTE  # ...but only so many at INFO a minute
    assert all(len(r.getMessage()) < observe.REFUSAL_LENGTH + 100 for r in records)


@pytest.mark.parametrize(("cls", "make"), [
    (Permissions, lambda: Permissions(["mcp:a:*"])),
    (RetryPolicy, RetryPolicy),
    (Backoff, Backoff),
    (RestartPolicy, RestartPolicy),
    (Bounds, Bounds),
])
def test_every_public_method_of_the_option_classes_raises_only_the_tree(cls: type, make: Any) -> None:
    leaks = []
    for name in sorted(dir(cls)):
        attr = inspect.getattr_static(cls, name)
        if name.startswith("_") or isinstance(attr, property) or not callable(getattr(cls, name)):
            continue
        method = getattr(make(), name)
        params = [p for p in inspect.signature(method).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for bad in BAD:
            try:
                method(*[bad] * len(params))
            except MCPHostError:
                pass
            except Exception as exc:  # what this test looks for
                leaks.append(f"{cls.__name__}.{name}({bad!r}): {type(exc).__name__}: {exc}")
    assert not leaks, "\n".join(leaks)
