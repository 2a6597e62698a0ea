"""Checkers for the ``format`` keyword (JSON Schema 2020-12 validation, section 7.3).

Formats are annotations unless the caller asks for assertion (``format_assert=True``).
Each checker takes a string and says whether it is valid; non-strings always pass (a
format only constrains strings). Everything is stdlib: ``re``, ``ipaddress``, ``datetime``
and the ``idna``/``punycode`` codecs. Regular expressions here are Python ones compiled
with ``re.ASCII`` so ``\\d`` never accepts non-ASCII digits.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

__all__ = ["FORMATS"]

_A = re.ASCII

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z", _A)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))\Z", _A)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def is_date(s: str) -> bool:
    """RFC 3339 ``full-date``."""
    m = _DATE.match(s)
    if m is None:
        return False
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not 1 <= mo <= 12:
        return False
    days = 29 if mo == 2 and _leap(y) else _DAYS[mo - 1]
    return 1 <= d <= days


def is_time(s: str) -> bool:
    """RFC 3339 ``full-time`` (an offset is required; leap seconds only at 23:59:60Z)."""
    m = _TIME.match(s)
    if m is None:
        return False
    h, mi, sec = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if h > 23 or mi > 59 or sec > 60:
        return False
    if m.group(6):
        oh, om = int(m.group(7)), int(m.group(8))
        if oh > 23 or om > 59:
            return False
        sign = 1 if m.group(6) == "+" else -1
        total = (h * 60 + mi - sign * (oh * 60 + om)) % (24 * 60)
        h, mi = divmod(total, 60)
    return sec < 60 or (h == 23 and mi == 59)


def is_date_time(s: str) -> bool:
    """RFC 3339 ``date-time`` (``T`` or ``t`` separator)."""
    if len(s) < 11 or s[10] not in "Tt":
        return False
    return is_date(s[:10]) and is_time(s[11:])


_DURATION = re.compile(
    r"P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
    r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)\Z",
    _A,
)


def is_duration(s: str) -> bool:
    """RFC 3339 appendix A ``duration``."""
    return _DURATION.match(s) is not None


_IPV4 = re.compile(r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}\Z", _A)


def is_ipv4(s: str) -> bool:
    """Dotted-quad IPv4 (RFC 2673 section 3.2), no leading zeros."""
    return _IPV4.match(s) is not None


_IPV6_CHARS = re.compile(r"[0-9A-Fa-f:.]+\Z", _A)


def is_ipv6(s: str) -> bool:
    """RFC 4291 section 2.2 IPv6 text form (no zone id)."""
    if not _IPV6_CHARS.match(s):
        return False
    if "." in s:
        tail = s.rsplit(":", 1)[-1]
        if not is_ipv4(tail):
            return False
    import ipaddress  # loaded by the first IPv6 address checked, not by every host

    try:
        ipaddress.IPv6Address(s)
    except ValueError:
        return False
    return True


_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z", _A)


def _a_label_ok(label: str) -> bool:
    """An ``xn--`` label: valid, canonical Punycode of a valid U-label (RFC 5891 5.3)."""
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
        canonical = decoded.encode("punycode").decode("ascii")
    except (UnicodeError, ValueError):
        return False
    if canonical != label[4:].lower():
        return False
    return bool(decoded) and _u_label_ok(decoded) and _bidi_ok([decoded])


def is_hostname(s: str) -> bool:
    """RFC 1123 host name; ``xn--`` labels must be valid Punycode (RFC 5891)."""
    if not s or len(s) > 253 or not s.isascii():
        return False
    for label in s.split("."):
        if not _LABEL.match(label):
            return False
        if label[2:4] == "--":
            if label[:4].lower() != "xn--" or not _a_label_ok(label):
                return False
    return True


# RFC 5892 section 2.6: exceptions that are PVALID or DISALLOWED whatever their category.
_IDN_PVALID = {"\u00df", "\u03c2", "\u06fd", "\u06fe", "\u0f0b", "\u3007"}
_IDN_DISALLOWED = {"\u0640", "\u07fa", "\u302e", "\u302f", "\u3031", "\u3032", "\u3033",
                   "\u3034", "\u3035", "\u303b"}
_CONTEXTO = {"\u00b7", "\u0375", "\u05f3", "\u05f4", "\u30fb"}


def _virama_before(label: str, i: int) -> bool:
    return i > 0 and unicodedata.combining(label[i - 1]) == 9


def _joining_context(label: str, i: int) -> bool:
    # RFC 5892 A.1, approximated: ZWNJ between two letters of a joining script (Arabic,
    # Syriac, N'Ko, ...), skipping transparent marks.
    def joining(c: str) -> bool:
        return "\u0600" <= c <= "\u08ff" and unicodedata.category(c)[0] == "L"

    before = [c for c in label[:i] if unicodedata.category(c) != "Mn"]
    after = [c for c in label[i + 1 :] if unicodedata.category(c) != "Mn"]
    return bool(before) and bool(after) and joining(before[-1]) and joining(after[0])


def _u_label_ok(label: str) -> bool:
    """IDNA2008 (RFC 5891/5892) U-label rules, approximating the derived property table."""
    if not label or label.startswith("-") or label.endswith("-") or label[2:4] == "--":
        return False
    if unicodedata.category(label[0])[0] == "M" or unicodedata.normalize("NFC", label) != label:
        return False
    for i, ch in enumerate(label):
        if ch in _IDN_PVALID:
            continue
        if ch in _IDN_DISALLOWED:
            return False
        if ch == "\u200d":
            if not _virama_before(label, i):
                return False
            continue
        if ch == "\u200c":
            if not (_virama_before(label, i) or _joining_context(label, i)):
                return False
            continue
        if ch in _CONTEXTO:
            if not _contexto_ok(label, i, ch):
                return False
            continue
        if ch.isascii():
            if not (ch.isalnum() or ch == "-") or ch.isupper():
                return False
            continue
        cat = unicodedata.category(ch)
        if cat[0] in "ZCSP" or cat in ("Lt", "Lu", "Lm") or ch != ch.lower():
            return False
    arabic = any("\u0660" <= c <= "\u0669" for c in label)
    extended = any("\u06f0" <= c <= "\u06f9" for c in label)
    return not (arabic and extended)


def _contexto_ok(label: str, i: int, ch: str) -> bool:
    if ch == "\u00b7":
        return 0 < i < len(label) - 1 and label[i - 1] == "l" == label[i + 1]
    if ch == "\u0375":
        nxt = label[i + 1] if i + 1 < len(label) else ""
        return bool(nxt) and ("\u0370" <= nxt <= "\u03ff" or "\u1f00" <= nxt <= "\u1fff")
    if ch in "\u05f3\u05f4":
        return i > 0 and "\u0590" <= label[i - 1] <= "\u05ff"
    # KATAKANA MIDDLE DOT: some Hiragana, Katakana or Han character in the label.
    return any(
        "\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"
        for c in label
        if c != "\u30fb"
    )


_RTL = {"R", "AL", "AN"}


def _bidi_ok(labels: list[str]) -> bool:
    """RFC 5893 section 2: the Bidi rule, applied when any label has right-to-left text."""
    classes = [[unicodedata.bidirectional(c) for c in label] for label in labels]
    if not any(_RTL.intersection(cl) for cl in classes):
        return True
    for cl in classes:
        if not cl:
            continue
        if cl[0] not in ("L", "R", "AL"):
            return False
        tail = [c for c in cl if c != "NSM"] or cl
        if cl[0] in ("R", "AL"):
            allowed = {"R", "AL", "AN", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"}
            if not set(cl) <= allowed or tail[-1] not in ("R", "AL", "EN", "AN"):
                return False
            if "EN" in cl and "AN" in cl:
                return False
        else:
            allowed = {"L", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"}
            if not set(cl) <= allowed or tail[-1] not in ("L", "EN"):
                return False
    return True


def is_idn_hostname(s: str) -> bool:
    """Internationalised host name (RFC 5890), approximating IDNA2008's tables."""
    if not s:
        return False
    s = re.sub("[\u3002\uff0e\uff61]", ".", s)
    labels = s.split(".")
    total = 0
    for label in labels:
        if label.isascii():
            if not _LABEL.match(label):
                return False
            if label[2:4] == "--" and (label[:4].lower() != "xn--" or not _a_label_ok(label)):
                return False
            total += len(label) + 1
            continue
        if not _u_label_ok(label):
            return False
        try:
            encoded = len(label.encode("punycode")) + 4
        except UnicodeError:
            return False
        if encoded > 63:
            return False
        total += encoded + 1
    return total - 1 <= 253 and _bidi_ok(labels)


_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL = re.compile(rf"(?:{_ATOM}(?:\.{_ATOM})*|\"(?:[^\"\\\r\n]|\\.)*\")\Z", _A)


def _email(s: str, idn: bool) -> bool:
    local, at, domain = s.rpartition("@")
    if not at or not local or not domain:
        return False
    if idn:
        ascii_local = "".join("a" if ord(c) > 127 else c for c in local)
    else:
        ascii_local = local
    if not _LOCAL.match(ascii_local):
        return False
    if domain.startswith("[") and domain.endswith("]"):
        inner = domain[1:-1]
        if inner.lower().startswith("ipv6:"):
            return is_ipv6(inner[5:])
        return is_ipv4(inner)
    if idn:
        # RFC 6531 mailboxes are compared after normalisation; a domain not in NFC is
        # still a valid way to write the address.
        return is_idn_hostname(unicodedata.normalize("NFC", domain))
    return is_hostname(domain)


def is_email(s: str) -> bool:
    """RFC 5321 section 4.1.2 mailbox (dot-atom or quoted local part)."""
    return _email(s, False)


def is_idn_email(s: str) -> bool:
    """RFC 6531 internationalised mailbox."""
    return _email(s, True)


# RFC 3986 appendix A, as regular expressions.
_HEX = "[0-9A-Fa-f]"
_PCT = f"%{_HEX}{_HEX}"
_UNRES = r"A-Za-z0-9\-._~"
_SUBD = r"!$&'()*+,;="
_UCS = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef\U00010000-\U0001fffd\U00020000-\U0002fffd"
    "\U00030000-\U0003fffd\U00040000-\U0004fffd\U00050000-\U0005fffd\U00060000-\U0006fffd"
    "\U00070000-\U0007fffd\U00080000-\U0008fffd\U00090000-\U0009fffd\U000a0000-\U000afffd"
    "\U000b0000-\U000bfffd\U000c0000-\U000cfffd\U000d0000-\U000dfffd\U000e1000-\U000efffd"
)


def _uri_regexes(iri: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    unres = _UNRES + (_UCS if iri else "")
    pchar = f"(?:[{unres}{_SUBD}:@]|{_PCT})"
    query = f"(?:{pchar}|[/?]|[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd])*" if iri else f"(?:{pchar}|[/?])*"
    frag = f"(?:{pchar}|[/?])*"
    userinfo = f"(?:[{unres}{_SUBD}:]|{_PCT})*"
    ipv6 = r"\[[0-9A-Fa-f:.]+\]|\[[vV][0-9A-Fa-f]+\.[" + _UNRES + _SUBD + r":]+\]"
    reg = f"(?:[{unres}{_SUBD}]|{_PCT})*"
    host = f"(?:{ipv6}|{reg})"
    authority = f"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    seg = f"{pchar}*"
    seg_nz = f"{pchar}+"
    seg_nz_nc = f"(?:[{unres}{_SUBD}@]|{_PCT})+"
    path_abempty = f"(?:/{seg})*"
    path_absolute = f"/(?:{seg_nz}(?:/{seg})*)?"
    hier = f"(?://{authority}{path_abempty}|{path_absolute}|{seg_nz}(?:/{seg})*|)"
    scheme = "[A-Za-z][A-Za-z0-9+.-]*"
    absolute = re.compile(f"{scheme}:{hier}(?:\\?{query})?(?:#{frag})?\\Z")
    rel_part = f"(?://{authority}{path_abempty}|{path_absolute}|{seg_nz_nc}(?:/{seg})*|)"
    relative = re.compile(f"{rel_part}(?:\\?{query})?(?:#{frag})?\\Z")
    return absolute, relative


@functools.cache
def _uri_patterns(iri: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    # Compiled on first use: these patterns take most of this module's import time, and
    # most schemas never assert a URI format.
    return _uri_regexes(iri)


def _authority_ok(s: str) -> bool:
    # An IP literal in the authority must be a real IPv6 address.
    start = s.find("//")
    if start < 0:
        return True
    auth = s[start + 2 :].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    host = auth.rsplit("@", 1)[-1]
    if host.startswith("[") and "]" in host and host[1:2] not in ("v", "V"):
        return is_ipv6(host[1 : host.index("]")])
    return True


def is_uri(s: str) -> bool:
    """RFC 3986 absolute URI (with optional fragment)."""
    return _uri_patterns(False)[0].match(s) is not None and _authority_ok(s)


def is_uri_reference(s: str) -> bool:
    """RFC 3986 URI or relative reference."""
    absolute, relative = _uri_patterns(False)
    return (absolute.match(s) is not None or relative.match(s) is not None) and _authority_ok(s)


def is_iri(s: str) -> bool:
    """RFC 3987 IRI."""
    return _uri_patterns(True)[0].match(s) is not None and _authority_ok(s)


def is_iri_reference(s: str) -> bool:
    """RFC 3987 IRI reference."""
    absolute, relative = _uri_patterns(True)
    return (absolute.match(s) is not None or relative.match(s) is not None) and _authority_ok(s)


_VARSPEC = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?"
_TEMPLATE = re.compile(
    rf"(?:[^\x00-\x20\x7f\"%<>\\^`{{|}}]|%[0-9A-Fa-f]{{2}}|\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\}})*\Z"
)


def is_uri_template(s: str) -> bool:
    """RFC 6570 URI template (level 4 syntax)."""
    return _TEMPLATE.match(s) is not None


_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z", _A)


def is_uuid(s: str) -> bool:
    """RFC 4122 UUID in its hyphenated text form."""
    return _UUID.match(s) is not None


_JSON_POINTER = re.compile(r"(?:/(?:[^/~]|~[01])*)*\Z")
_REL_POINTER = re.compile(r"(?:0|[1-9][0-9]*)(?:[+-](?:[1-9][0-9]*))?(?:#|(?:/(?:[^/~]|~[01])*)*)\Z", _A)


def is_json_pointer(s: str) -> bool:
    """RFC 6901 JSON pointer."""
    return _JSON_POINTER.match(s) is not None


def is_relative_json_pointer(s: str) -> bool:
    """Relative JSON pointer (draft-handrews-relative-json-pointer-01)."""
    return _REL_POINTER.match(s) is not None


def _is_ecma_regex(s: str) -> bool:
    # The regex engine is loaded by the first value checked as a regex (the compiler's
    # reasoning: most schemas never need it).
    from mcphost.schema.regex import is_ecma_regex

    return is_ecma_regex(s)


#: format name → checker of a string.
FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": is_date_time,
    "date": is_date,
    "time": is_time,
    "duration": is_duration,
    "email": is_email,
    "idn-email": is_idn_email,
    "hostname": is_hostname,
    "idn-hostname": is_idn_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "uri": is_uri,
    "uri-reference": is_uri_reference,
    "iri": is_iri,
    "iri-reference": is_iri_reference,
    "uri-template": is_uri_template,
    "uuid": is_uuid,
    "regex": _is_ecma_regex,
    "json-pointer": is_json_pointer,
    "relative-json-pointer": is_relative_json_pointer,
}
