"""One server entry of ``mcp.json`` -> a :class:`~mcphost.config.model.ServerConfig`.

The schema has checked the entry's structure; what is left is what a schema cannot do:
which transport it is (``type``, fastmcp's ``transport``, Cline's ``transportType``, or
inferred from ``command``/``url``), expansion of every field that takes references, the
checks of expanded values (URLs, NULs and line breaks), ``envFile``, limits and roots.
"""

from __future__ import annotations

import math
import os.path
from collections.abc import Mapping
from typing import Any

from mcphost.policy import Backoff, RestartPolicy, RetryPolicy

from ..protocol import versions
from . import dotenv
from .expand import Expander
from .jsonpos import JSONPath
from .model import (
    DEFAULT_TIMEOUT,
    AuthSettings,
    FrozenDict,
    Limits,
    ServerConfig,
    TlsSettings,
    ToolFilter,
    parse_memory,
)
from .urls import host_problem

_TYPE_ALIASES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
    "websocket": "websocket",
    "ws": "websocket",
}

# Fields other clients write into server entries that mcphost accepts (the schema lists
# them) and ignores, with a note. They are never offered as "did you mean" suggestions.
# ("disabled" is honoured, "transport"/"transportType" are read as the type.)
_IGNORED_FIELDS = frozenset(
    {
        "description",
        "autoApprove",
        "alwaysAllow",
        "gallery",
        "version",
        "dev",
        "sandbox",
        "trust",
        "icon",
        "name",
    }
)
# Which fields belong to which kind of server. The schema enforces this for servers whose
# transport is given by "type" or inferred from command/url; the loader applies it when the
# type comes from fastmcp's "transport" or Cline's "transportType" (which the schema does
# not interpret).
_STDIO_ONLY = ("command", "args", "env", "envFile", "cwd", "limits")
_REMOTE_ONLY = ("url", "headers", "tls", "auth")
# A start-up timeout above this many seconds is most likely milliseconds: note it.
_SUSPICIOUS_TIMEOUT = 3600.0


class EntryLoader(Expander):
    """Builds servers from entries; the document-level checks are in ``load``."""

    def load_server(self, top: str, name: str, raw: Mapping[str, Any]) -> ServerConfig:
        """Build one server from its entry (whose structure the schema has validated)."""
        spath: JSONPath = (top, name)
        for key in raw:
            if key in _IGNORED_FIELDS:
                self.note((*spath, key), "ignored (a field of another MCP client)")

        def fp(*parts: str | int) -> JSONPath:
            return (*spath, *parts)

        enabled = raw.get("enabled", True)
        if "disabled" in raw:
            if "enabled" in raw and raw["enabled"] == raw["disabled"]:
                self.error(fp("disabled"), 'contradicts "enabled"', server=name)
            enabled = not raw["disabled"]
        self.lenient = not enabled

        kind, source = self.server_type(spath, raw, name)
        if "type" not in raw and ("transport" in raw or "transportType" in raw):
            # The schema applies these rules when the type is given by "type" or inferred
            # without "transport"/"transportType"; here they follow the type those give.
            self.check_kind(spath, raw, kind, source, name)

        command: str | None = None
        args: tuple[str, ...] = ()
        env: dict[str, str] = {}
        cwd: str | None = None
        url: str | None = None
        headers: dict[str, str] = {}
        tls: TlsSettings | None = None
        limits: Limits | None = None
        auth: AuthSettings | None = None
        if kind == "stdio":
            command = self.expand(fp("command"), raw["command"], name)
            if not command.strip():  # after expansion (the schema refuses a blank literal)
                self.error(fp("command"), "must not be empty", server=name)
            raw_args = raw.get("args", ())
            args = tuple(self.expand(fp("args", i), a, name) for i, a in enumerate(raw_args))
            if not raw_args and " " in raw["command"].strip() and "${" not in raw["command"]:
                self.note(
                    fp("command"),
                    'contains spaces and there are no "args": commands run without a shell, '
                    'so put the arguments in "args"',
                )
            if "envFile" in raw:
                env.update(self.env_file(fp("envFile"), raw["envFile"], name))
            for key, value in raw.get("env", {}).items():
                expanded = self.expand(fp("env", key), value, name)
                if "\0" in expanded:
                    self.error(fp("env", key), "contains a NUL character", server=name)
                if "\r" in expanded or "\n" in expanded:
                    # Legal (a PEM key), but most often a pasted value's line break: said, not refused.
                    self.note(fp("env", key), "contains a line break (CR or LF); is it meant to?")
                env[key] = expanded
            if "cwd" in raw:
                cwd = self.local_path(fp("cwd"), raw["cwd"], name)
            if raw.get("limits") is not None:
                limits = self.limits(fp("limits"), raw["limits"], name)
        else:
            url = self.expand(fp("url"), raw["url"], name)
            self.check_url(fp("url"), url, kind, name)
            for key, value in raw.get("headers", {}).items():
                expanded = self.expand(fp("headers", key), value, name)
                if any(c in expanded for c in "\r\n\0"):
                    self.error(
                        fp("headers", key),
                        "header value contains a line break or NUL character",
                        server=name,
                    )
                headers[key] = expanded
            if raw.get("tls") is not None:
                tls = self.tls(fp("tls"), raw["tls"], name)
            if raw.get("auth") is not None:
                auth = self.auth(fp("auth"), raw["auth"], name)
                if kind == "websocket" and auth.type != "bearer":
                    # The spec's authorization is for the HTTP transports.
                    self.error(fp("auth", "type"), 'a websocket server takes only a "bearer" auth', server=name)

        timeout = DEFAULT_TIMEOUT
        if "timeout" in raw:
            timeout = self.seconds(fp("timeout"), raw["timeout"], name)
            if timeout > _SUSPICIOUS_TIMEOUT:
                self.note(fp("timeout"), "is in seconds; this value looks like milliseconds")
        request_timeout = None
        if raw.get("requestTimeout") is not None:
            request_timeout = self.seconds(fp("requestTimeout"), raw["requestTimeout"], name)
        protocol = raw.get("protocol")  # one of the schema's words or versions
        if protocol is not None and kind in ("sse", "websocket") and _modern(protocol):
            self.error(fp("protocol"), f'a "{kind}" server speaks the handshake era only: "auto", "legacy" '
                       "or a version before 2026-07-28", server=name)
        shutdown_timeout = None
        if raw.get("shutdownTimeout") is not None:
            shutdown_timeout = self.seconds(fp("shutdownTimeout"), raw["shutdownTimeout"], name)

        dependencies: list[str] = []
        for i, dep in enumerate(raw.get("dependencies", ())):
            if dep == name:
                self.error(fp("dependencies", i), "a server cannot depend on itself", server=name)
            if dep not in dependencies:
                dependencies.append(dep)

        tools = ToolFilter()
        if raw.get("tools") is not None:
            tools = ToolFilter(
                allow=tuple(raw["tools"].get("allow", ())),
                deny=tuple(raw["tools"].get("deny", ())),
            )
        roots = tuple(
            self.root(fp("roots", i), r, name) for i, r in enumerate(raw.get("roots", ()))
        )
        self.lenient = False
        line = self.doc.line(spath, exact=True) if self.doc is not None else None
        return ServerConfig(
            name=name,
            type=kind,
            command=command,
            args=args,
            env=FrozenDict(env.items()),
            cwd=cwd,
            url=url,
            headers=FrozenDict(headers.items()),
            tls=tls,
            timeout=timeout,
            request_timeout=request_timeout,
            shutdown_timeout=shutdown_timeout,
            protocol=protocol,
            dependencies=tuple(dependencies),
            enabled=enabled,
            limits=limits,
            tools=tools,
            priority=int(raw.get("priority", 0)),
            domains=tuple(raw.get("domains", ())),
            roots=roots,
            line=line,
            inherit_env=bool(raw.get("inheritEnv", False)),
            cache_ttl=None if raw.get("cacheTtl") is None else self.seconds(fp("cacheTtl"), raw["cacheTtl"], name),
            log_level=raw["logLevel"].upper() if raw.get("logLevel") is not None else None,
            declared_capabilities=tuple(raw.get("capabilities", ())),
            retry=None if raw.get("retry") is None else _retry(raw["retry"]),
            restart=RestartPolicy() if raw.get("restart") is None else _restart(raw["restart"]),
            auth=auth,
        )

    def auth(self, fpath: JSONPath, raw: Mapping[str, Any], name: str) -> AuthSettings:
        """The ``auth`` object (its structure checked by the schema), every string expanded."""
        kind = raw["type"]
        values: dict[str, str] = {}
        for key in ("clientId", "clientSecret", "redirectUri", "clientMetadataUrl", "token", "privateKey", "assertion",
                    "idpTokenEndpoint", "idToken", "idpClientId", "idpClientSecret"):
            if key not in raw:
                continue
            value = self.expand((*fpath, key), raw[key], name)
            if key != "privateKey" and any(c in value for c in "\r\n\0"):
                self.error((*fpath, key), "contains a line break or NUL character", server=name)
            if not value and not self.lenient:
                self.error((*fpath, key), "is empty after expansion", server=name)
            values[key] = value
        for key in ("redirectUri", "clientMetadataUrl", "idpTokenEndpoint"):
            if key in values and not self.lenient:
                self.auth_url((*fpath, key), values[key], key == "clientMetadataUrl", name)
        granted = ("clientCredentials", "jwtBearer", "enterpriseManaged")
        idp = ("enterpriseManaged",)
        only = {"token": ("bearer",), "privateKey": ("clientCredentials",), "signingAlgorithm": ("clientCredentials",),
                "redirectUri": ("oauth",), "clientMetadataUrl": ("oauth",), "clientId": ("oauth", *granted),
                "clientSecret": ("oauth", *granted), "scopes": ("oauth", *granted), "assertion": ("jwtBearer",), "dpop": ("oauth", *granted),
                "idpTokenEndpoint": idp, "idToken": idp, "idpClientId": idp, "idpClientSecret": idp}
        for key, kinds in only.items():
            if key in raw and kind not in kinds:
                self.error((*fpath, key), f'does not apply to a "{kind}" auth', server=name)
        if kind == "clientCredentials" and "clientSecret" not in raw and "privateKey" not in raw:
            self.error(fpath, 'a "clientCredentials" auth needs "clientSecret" or "privateKey"', server=name)
        needs = {"jwtBearer": ("clientId", "assertion"), "enterpriseManaged": ("clientId", "idpTokenEndpoint", "idToken")}
        missing = [key for key in needs.get(kind, ()) if key not in raw]
        if missing:
            article = "an" if kind[0] in "aeiou" else "a"
            self.error(fpath, f'{article} "{kind}" auth needs ' + " and ".join(f'"{key}"' for key in missing),
                       server=name)
        if "idpClientSecret" in raw and "idpClientId" not in raw:
            self.error((*fpath, "idpClientSecret"), 'needs "idpClientId" (the client the secret belongs to)',
                       server=name)
        if "clientSecret" in raw and "clientId" not in raw:
            self.error((*fpath, "clientSecret"), 'needs "clientId" (the client the secret belongs to)', server=name)
        return AuthSettings(
            type=kind,
            client_id=values.get("clientId"),
            client_secret=values.get("clientSecret"),
            scopes=tuple(raw.get("scopes", ())),
            redirect_uri=values.get("redirectUri"),
            client_metadata_url=values.get("clientMetadataUrl"),
            token=values.get("token"),
            private_key=values.get("privateKey"),
            signing_algorithm=raw.get("signingAlgorithm"),
            assertion=values.get("assertion"),
            idp_token_endpoint=values.get("idpTokenEndpoint"),
            id_token=values.get("idToken"),
            idp_client_id=values.get("idpClientId"),
            idp_client_secret=values.get("idpClientSecret"),
            dpop=raw.get("dpop"),
        )

    def auth_url(self, fpath: JSONPath, value: str, metadata_document: bool, name: str) -> None:
        import urllib.parse  # urllib.parse (with ipaddress, ~0.4 MB): loaded by a URL, not by every host

        try:
            parts = urllib.parse.urlsplit(value)
        except ValueError:
            self.error(fpath, "not a valid URL", server=name)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            self.error(fpath, "expected an http:// or https:// URL", server=name)
        if metadata_document and (parts.scheme.lower() != "https" or parts.path in ("", "/")):
            # A Client ID Metadata Document's URL "MUST use the https scheme and contain a path".
            self.error(fpath, "expected an https:// URL with a path", server=name)

    def tls(self, fpath: JSONPath, raw: Mapping[str, Any], name: str) -> TlsSettings:
        """The ``tls`` object (its structure checked by the schema); paths as ``cwd``'s."""
        if "keyFile" in raw and "certFile" not in raw:
            self.error((*fpath, "keyFile"), 'needs "certFile" (the certificate the key belongs to)', server=name)
        files = {key: self.local_path((*fpath, key), raw[key], name)
                 for key in ("caFile", "certFile", "keyFile") if key in raw}
        return TlsSettings(verify=bool(raw.get("verify", True)), ca_file=files.get("caFile"),
                           cert_file=files.get("certFile"), key_file=files.get("keyFile"))

    def seconds(self, fpath: JSONPath, value: float, server: str) -> float:
        # The schema checks type and range; JSON has no infinity, but data built in code may.
        if not math.isfinite(value):
            self.error(fpath, "expected a finite number of seconds", server=server)
        return float(value)

    def check_kind(
        self, spath: JSONPath, raw: Mapping[str, Any], kind: str, source: str, name: str
    ) -> None:
        """The schema's rules on which fields a kind of server takes, for the given kind."""
        wrong: tuple[str, ...]
        if kind == "stdio":
            wrong, why = _REMOTE_ONLY, "only applies to http, sse and websocket servers"
        elif source == "url":
            wrong, why = _STDIO_ONLY, 'only applies to stdio servers (this one has a "url")'
        else:
            wrong, why = _STDIO_ONLY, f'only applies to stdio servers (this one is "{kind}")'
        for key in wrong:
            if key in raw:
                self.error((*spath, key), why, server=name)
        needed = "command" if kind == "stdio" else "url"
        if needed not in raw:
            what = "a stdio server" if kind == "stdio" else f'a "{kind}" server'
            self.error(spath, f'{what} needs "{needed}"', server=name)

    def server_type(self, spath: JSONPath, raw: Mapping[str, Any], name: str) -> tuple[str, str]:
        """Return the server's transport and where it came from (a field name).

        ``type`` wins, then fastmcp's ``transport``, then Cline's ``transportType`` (an
        unknown value of those two is noted and ignored); otherwise the type is inferred
        from ``command`` or ``url``. The schema has checked that ``type`` is a known keyword.
        """
        given: list[tuple[str, str]] = []
        for key in ("type", "transport", "transportType"):
            if key in raw:
                kind = _TYPE_ALIASES.get(raw[key].lower())
                if kind is None:
                    self.note((*spath, key), "unrecognised value ignored")
                    continue
                given.append((key, kind))
        if given:
            key, kind = given[0]
            for other_key, other in given[1:]:
                if other != kind and other_key == "transport":
                    self.error((*spath, other_key), f'contradicts "{key}" ({kind})', server=name)
            return kind, key
        # Inference. Without "transport"/"transportType" the schema has already refused an
        # entry with both or neither of command and url; with an unknown one, it is here.
        has_command = "command" in raw
        has_url = "url" in raw
        if has_command and has_url:
            self.error(
                spath,
                'has both "command" and "url": set "type" to say which transport to use',
                server=name,
            )
        if has_command:
            return "stdio", "command"
        if has_url:
            url = raw["url"]
            scheme = url.split(":", 1)[0].lower() if ":" in url else ""
            if scheme in ("ws", "wss"):
                return "websocket", "url"
            import urllib.parse  # urllib.parse (with ipaddress, ~0.4 MB): loaded by a URL, not by every host

            try:
                path = urllib.parse.urlsplit(url).path if "${" not in url else url
            except ValueError:
                path = url  # not a valid URL: check_url says so
            if path.rstrip("/").endswith("/sse"):
                return "sse", "url"
            return "http", "url"
        self.error(
            spath,
            'needs "command" (a stdio server) or "url" (an http, sse or websocket server)',
            server=name,
        )

    def check_url(self, fpath: JSONPath, url: str, kind: str, name: str) -> None:
        if self.lenient and "${" in url:
            return
        schemes = ("ws", "wss") if kind == "websocket" else ("http", "https")
        import urllib.parse  # urllib.parse (with ipaddress, ~0.4 MB): loaded by a URL, not by every host

        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError:
            self.error(fpath, "not a valid URL", server=name)
        if parts.scheme.lower() not in schemes or not parts.netloc:
            self.error(
                fpath,
                f"expected a {schemes[0]}:// or {schemes[1]}:// URL for a {kind} server",
                server=name,
            )
        try:
            parts.port  # noqa: B018 -- a port out of range raises here, not at connect time
        except ValueError as exc:
            self.error(fpath, f"not a valid URL: {exc}", server=name)
        # A host name the socket layer cannot encode (a label over 63 characters...) would
        # raise UnicodeError at connect time: it is refused here, with the field named.
        problem = host_problem(parts.hostname or "")
        if problem is not None:
            self.error(fpath, problem, server=name)

    def env_file(self, fpath: JSONPath, raw: str, name: str) -> dict[str, str]:
        if self.lenient:
            return {}  # a disabled server's envFile is not read (it may not exist)
        file_path = self.local_path(fpath, raw, name)
        shown = os.path.basename(file_path.rstrip("/\\")) or "envFile"
        if self.read_text is None:
            self.error(
                fpath, "cannot read the envFile: no read_text function was given", server=name
            )
        try:
            text = self.read_text(file_path)
        except (OSError, ValueError) as exc:
            self.error(fpath, f"cannot read {shown} ({type(exc).__name__})", server=name)
        try:
            return dotenv.parse(text)
        except dotenv.DotenvError as exc:
            self.error(fpath, f"{shown}:{exc.line}: {exc.reason}", server=name)
    def limits(self, fpath: JSONPath, raw: Mapping[str, Any], name: str) -> Limits | None:
        memory = None
        value = raw.get("memory")
        if value is not None:
            try:
                # The schema checks the form; the size itself ("0M"...) is checked here.
                memory = parse_memory(int(value) if isinstance(value, float) else value)
            except ValueError as exc:
                self.error((*fpath, "memory"), str(exc), server=name)
        cpu = raw.get("cpuSeconds")
        files = raw.get("openFiles")
        procs = raw.get("processes")
        if memory is None and cpu is None and files is None and procs is None:
            return None
        return Limits(
            memory_bytes=memory,
            cpu_seconds=None if cpu is None else int(cpu),
            open_files=None if files is None else int(files),
            processes=None if procs is None else int(procs),
        )


# The schema has checked the types and ranges of these: they cannot fail here.


def _modern(protocol: str) -> bool:
    return protocol == "modern" or versions.get(protocol).era == "modern"


def _backoff(raw: Mapping[str, Any] | None) -> Backoff:
    if not raw:
        return Backoff()
    default = Backoff()
    return Backoff(
        initial=float(raw.get("initial", default.initial)),
        maximum=float(raw.get("max", default.maximum)),
        multiplier=float(raw.get("multiplier", default.multiplier)),
        jitter=float(raw.get("jitter", default.jitter)),
    )


def _retry(raw: Mapping[str, Any]) -> RetryPolicy:
    return RetryPolicy(retries=int(raw.get("retries", 3)), backoff=_backoff(raw.get("backoff")))


def _restart(raw: Mapping[str, Any]) -> RestartPolicy:
    return RestartPolicy(
        policy=str(raw.get("policy", "never")),
        max_attempts=int(raw.get("maxAttempts", 3)),
        backoff=_backoff(raw.get("backoff")),
    )
