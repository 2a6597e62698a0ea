"""DESIGN §1: dependencies point downward only; the core does no I/O; each room keeps to itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcphost"

LAYER = {
    "errors": 0, "types": 0, "version": 0, "_json": 0, "bounds": 1,
    "wire": 1, "protocol": 1, "config": 1, "policy": 1, "logs": 1, "schema": 1, "metrics": 1, "cache": 1, "auth": 1,
    "transports": 2,
    "rpc": 3, "client": 3, "server": 3,
    "host": 4,
    "cli": 5, "compat": 5, "gateway": 5, "serve": 5, "__init__": 5, "__main__": 5,
}
# Modules of layer 1 must not touch the outside world.
FORBIDDEN_IN_CORE = {"asyncio", "subprocess", "socket", "time", "selectors", "signal",
                     "urllib.request", "http.client", "threading"}
# Rooms that must not import other rooms, whatever their layers (DESIGN §1 in words).
FORBIDDEN = {
    "wire": ("mcphost.protocol", "mcphost.client", "mcphost.host", "mcphost.rpc", "mcphost.transports"),
    "transports": ("mcphost.protocol", "mcphost.client", "mcphost.host", "mcphost.rpc"),
    "rpc": ("mcphost.client", "mcphost.host", "mcphost.protocol.legacy", "mcphost.protocol.versions",
            "mcphost.protocol.messages", "mcphost.protocol.lifecycle"),
    "host": ("mcphost.transports.stdio", "mcphost.transports.memory"),
    "client": ("mcphost.host", "mcphost.transports.stdio"),
    # The server session knows the peer and the protocol, never the client side or the host.
    "server": ("mcphost.client", "mcphost.host", "mcphost.transports.stdio"),
    # The gateway serves the host through its public API, like compat/.
    "gateway": ("mcphost.host", "mcphost.client", "mcphost.transports.stdio", "mcphost.compat", "mcphost.cli"),
}
# The threading module is allowed for a lock around a lazily built cache and for a
# thread-local recursion depth (no I/O either way).
THREADING_OK = {"protocol/messages.py", "schema/__init__.py", "schema/compiler.py", "schema/nodes.py",
                "schema/bounds.py", "schema/linear.py"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "testing":
            continue  # the fake server is a separate, stdlib-only program
        out.append((rel.parts[0].removesuffix(".py"), path))
    return out


def _dotted(path: Path) -> list[str]:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def _imports(path: Path) -> list[str]:
    """Every module imported by the file, as an absolute dotted name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _dotted(path)
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            if node.module is None or base == "mcphost":
                found += [f"{base}.{alias.name}" for alias in node.names]
            else:
                found.append(base)
    return found


def test_every_module_has_a_layer() -> None:
    unknown = {top for top, _ in _modules() if top not in LAYER}
    assert unknown == set()


def test_imports_point_downward() -> None:
    problems = []
    for top, path in _modules():
        mine = LAYER[top]
        rel = path.relative_to(PACKAGE).as_posix()
        for module in _imports(path):
            if module.startswith("mcphost."):
                target = module.split(".")[1]
                if target == "testing":
                    problems.append(f"{rel}: imports the fake server")
                elif target in LAYER and LAYER[target] > mine:
                    problems.append(f"{rel} (layer {mine}) imports {module} (layer {LAYER[target]})")
            elif mine == 1 and module.split(".")[0] in FORBIDDEN_IN_CORE | {"urllib", "http"}:
                if module == "threading" and rel in THREADING_OK:
                    continue
                if module.split(".")[0] in ("urllib", "http") and module not in FORBIDDEN_IN_CORE:
                    continue
                problems.append(f"{rel}: layer-1 module imports {module}")
    assert problems == []


def test_rooms_keep_to_themselves() -> None:
    problems = []
    for top, path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        for module in _imports(path):
            for forbidden in FORBIDDEN.get(top, ()):
                if module == forbidden or module.startswith(forbidden + "."):
                    problems.append(f"{rel} imports {module}")
    assert problems == []


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a file's code (docstrings left out: they may explain)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_rpc_knows_no_mcp_method() -> None:
    # The peer is role-neutral JSON-RPC: no MCP method name appears in its code.
    words = ("initialize", "notifications/", "tools/", "ping", "progressToken", "_meta")
    for path in (PACKAGE / "rpc").rglob("*.py"):
        for line, value in _code_strings(path):
            assert not any(w in value for w in words), f"{path.name}:{line} {value!r}"


def test_transports_know_no_mcp_method() -> None:
    # A transport moves messages: it never decides anything by a message's MCP method or
    # result (the handshake and its renewal are the client session's). The HTTP binding's
    # own words (Mcp-Session-Id, MCP-Protocol-Version) are the transport's.
    words = re.compile(r"(?<![A-Za-z])(initialize|initialized|ping|protocolVersion|progressToken)(?![A-Za-z])"
                       r"|(notifications|tools|resources|prompts|logging|sampling|elicitation|completion|tasks|roots)/")
    problems = [f"{path.relative_to(PACKAGE).as_posix()}:{line} {value!r}"
                for path in (PACKAGE / "transports").rglob("*.py")
                for line, value in _code_strings(path)
                if words.search(value)]
    assert problems == []


def test_nobody_reaches_a_transport_by_getattr() -> None:
    # What the layers above need of a transport is a typed member of the Transport contract
    # (with a default in BaseTransport), never found by duck typing.
    problems = []
    for _, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr", "setattr") and node.args
                    and "transport" in ast.unparse(node.args[0]).lower()):
                problems.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno} {ast.unparse(node)}")
    assert problems == []


def test_core_reads_no_environment() -> None:
    for top, path in _modules():
        if LAYER[top] == 1:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
                        and isinstance(node.value, ast.Name) and node.value.id == "os"):
                    raise AssertionError(f"{path.name}:{node.lineno} reads the environment")


def test_fake_server_is_standalone() -> None:
    for path in (PACKAGE / "testing").rglob("*.py"):
        for module in _imports(path):
            assert not module.startswith("mcphost.") or module.startswith("mcphost.testing"), (
                f"{path.name} imports {module}"
            )


def test_the_facade_stays_a_facade() -> None:
    # MCPHost holds named collaborators and delegates: each public method is one statement
    # (its docstring aside) handing the call to a collaborator. Only call_tool, the hot path,
    # is written out (DESIGN §1: "facade: public API only, holds named collaborators and
    # delegates"); the constructor builds the collaborators.
    tree = ast.parse((PACKAGE / "host" / "facade.py").read_text(encoding="utf-8"))
    host = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MCPHost")
    assert host.bases == [] and host.keywords == [], "MCPHost mixes nothing in: its base is object"
    written_out = {"__init__", "__aenter__", "call_tool"}
    long = []
    for node in host.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name in written_out:
            continue
        if any(isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        if len(body) > 1:
            long.append(node.name)
    assert long == [], f"MCPHost methods that do more than delegate: {long}"


def test_the_fast_path_makes_no_closure_cells() -> None:
    # A variable captured by an inner function becomes a cell, allocated on every call of
    # the outer one: on call_tool that was eight objects per call for the garbage collector.
    from mcphost.host.facade import MCPHost
    from mcphost.rpc.peer import Peer

    assert MCPHost.call_tool.__code__.co_cellvars == ()
    assert Peer.start_request.__code__.co_cellvars == ()
    assert Peer._dispatch.__code__.co_cellvars == ()


def test_compat_uses_only_the_public_api() -> None:
    """DESIGN §1: the documents' APIs are facades over what every user has (``mcphost``'s
    public names and ``mcphost.errors``): what they need of the host is public first."""
    import mcphost

    public = {f"mcphost.{name}" for name in mcphost.__all__} | {"mcphost", "mcphost.errors"}
    wrong = []
    for top, path in _modules():
        if top != "compat":
            continue
        for name in _imports(path):
            if name.startswith("mcphost") and name not in public and not name.startswith("mcphost.compat"):
                wrong.append(f"{path.name}: {name}")
    assert wrong == []


# The process room: only transports/stdio/ spawns, signals or reaps a process (issue 18).
STDIO_ROOM = "transports/stdio/"
# Names whose use means process handling: spawning, signalling a group, killing, reaping.
PROCESS_NAMES = {"killpg", "SIGKILL", "waitpid", "setsid", "setpgid", "subprocess_exec",
                 "create_subprocess_exec", "create_subprocess_shell", "subprocess_shell", "Popen"}


def _own_pid(node: ast.Call) -> bool:
    """``os.kill(os.getpid(), ...)``: the application's own signal handling (dying of
    SIGTERM after the shutdown it asked for), not a server's process."""
    first = node.args[0] if node.args else None
    return (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute)
            and first.func.attr == "getpid")


def test_process_handling_lives_only_in_the_stdio_room() -> None:
    problems = []
    for _, path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(STDIO_ROOM):
            continue
        for module in _imports(path):
            if module == "subprocess" or module.startswith("subprocess."):
                problems.append(f"{rel} imports subprocess")
            if module in ("mcphost.process", "mcphost.transports.stdio.process",
                          "mcphost.transports.stdio.platform"):
                problems.append(f"{rel} imports {module}")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in PROCESS_NAMES:
                problems.append(f"{rel}:{node.lineno} uses {node.attr}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "kill" and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "os" and not _own_pid(node):
                problems.append(f"{rel}:{node.lineno} signals a process (os.kill)")
    assert problems == []
    assert not (PACKAGE / "process.py").exists(), "process.py belongs in transports/stdio/"


def test_the_transport_contract_has_no_process_only_method() -> None:
    # A method that every transport but stdio answers with None is not the contract's:
    # the process-only facts are structured (Gone.process, Vitals.pid) or a no-op with a
    # meaning for every transport (kill_now: nothing was running).
    from mcphost.transports.base import Transport

    assert not hasattr(Transport, "process_group")
    assert {"vitals", "kill_now"} <= set(dir(Transport))

# -- the rules of issue 18: each in its own test, so each failure names one rule -------------


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _all_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_over_600_lines() -> None:
    # One concept per module; the schema keyword table is one concept and may stay long.
    too_big = {}
    for path in _all_modules():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > 600 and _rel(path) != "schema/keywords.py":
            too_big[_rel(path)] = lines
    assert too_big == {}, "\n".join(f"{name}: {n} lines" for name, n in too_big.items())


def _base_name(node: ast.expr) -> str:
    """``Generic[T]`` -> ``Generic``, ``typing.Protocol`` -> ``Protocol``, ``a.b.C`` -> ``C``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


_PLAIN_BASES = {"object", "Protocol", "TypedDict", "NamedTuple", "Enum", "IntEnum", "Generic"}


def _is_exception_name(name: str, local_exceptions: set[str]) -> bool:
    import builtins

    from mcphost import errors

    for namespace in (builtins, errors):
        value = getattr(namespace, name, None)
        if isinstance(value, type) and issubclass(value, BaseException):
            return True
    return name in local_exceptions


def test_no_mixin_classes_in_host() -> None:
    # DESIGN §1: the host is built from named collaborators, never from mixins; a class in
    # host/ derives from nothing but the typing and enum bases (or an exception class).
    problems = []
    for path in sorted((PACKAGE / "host").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local_exceptions: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            names = [_base_name(base) for base in node.bases]
            if names and all(_is_exception_name(n, local_exceptions) for n in names):
                local_exceptions.add(node.name)
                continue
            for name in names:
                if name not in _PLAIN_BASES:
                    problems.append(f"host/{path.name}:{node.lineno} class {node.name}({name})")
            if node.name == "MCPHost" and names and names != ["object"]:
                problems.append(f"host/{path.name}:{node.lineno} MCPHost has bases {names}")
    assert problems == [], "\n".join(problems)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_module_imports_a_private_name() -> None:
    # A leading underscore means "this module's own": another module that needs it needs a
    # public name. The codec switch module ``_json`` is the one private module name allowed.
    problems = []
    for path in _all_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level == 0 and not module.startswith("mcphost"):
                    continue  # another library's privates are its business
                parts = [p for p in module.split(".") if p and p != "mcphost"]
                problems += [f"{_rel(path)}:{node.lineno} from {'.' * node.level}{module} import {part}"
                             for part in parts if _private(part) and part != "_json"]
                problems += [f"{_rel(path)}:{node.lineno} from {'.' * node.level}{module} import {alias.name}"
                             for alias in node.names if _private(alias.name) and alias.name != "_json"]
            elif isinstance(node, ast.Import):
                problems += [f"{_rel(path)}:{node.lineno} import {alias.name}" for alias in node.names
                             if alias.name.startswith("mcphost")
                             and any(_private(p) and p != "_json" for p in alias.name.split("."))]
    assert problems == [], "\n".join(problems)


