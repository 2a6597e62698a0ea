"""The Prometheus text exposition format, version 0.0.4: a small data model and its renderer.

Layer 1 (no I/O): :func:`render` turns :class:`Family` values into the text a scraper reads
(``Content-Type: text/plain; version=0.0.4; charset=utf-8``, :data:`CONTENT_TYPE`).

What the format asks, and where it is done here:

- one ``# HELP`` and one ``# TYPE`` line per family, before its samples; help text escapes
  ``\\`` and newline (:func:`escape_help`);
- sample lines ``name{label="value",...} value``; label values escape ``\\``, ``"`` and
  newline (:func:`escape_label_value`);
- metric names match ``[a-zA-Z_:][a-zA-Z0-9_:]*`` and label names ``[a-zA-Z_][a-zA-Z0-9_]*``:
  anything else is replaced by ``_`` (:func:`sanitize_name`, :func:`sanitize_label_name`);
- a histogram is ``name_bucket{le="..."}`` series, cumulative and ending with
  ``le="+Inf"`` (equal to ``name_count``), then ``name_sum`` and ``name_count``;
- values are Go floats: ``+Inf``, ``-Inf``, ``NaN``; integral values are written without
  ``.0`` (``3``, not ``3.0``), others in Python's shortest round-trip form (``0.25``,
  ``1e-06``). ``le`` label values use the same form.

:func:`otel_name` maps an OpenTelemetry instrument name and unit to the Prometheus name the
OpenTelemetry-to-Prometheus compatibility rules give it (``mcp.client.operation.duration``,
``s`` -> ``mcp_client_operation_duration_seconds``; counters end in ``_total``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .histogram import DEFAULT_BOUNDS, Histogram

__all__ = [
    "CONTENT_TYPE",
    "Family",
    "MetricType",
    "Sample",
    "escape_help",
    "escape_label_value",
    "format_value",
    "otel_name",
    "render",
    "sanitize_label_name",
    "sanitize_name",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

MetricType = Literal["counter", "gauge", "histogram", "summary", "untyped"]
_TYPES = frozenset(("counter", "gauge", "histogram", "summary", "untyped"))

Labels = tuple[tuple[str, str], ...]

_BAD_NAME = re.compile(r"[^a-zA-Z0-9_:]")
_BAD_LABEL = re.compile(r"[^a-zA-Z0-9_]")


def sanitize_name(name: str) -> str:
    """``name`` as a valid metric name: ``[a-zA-Z_:][a-zA-Z0-9_:]*``."""
    name = _BAD_NAME.sub("_", name)
    if not name or name[0].isdigit():
        name = "_" + name
    return name


def sanitize_label_name(name: str) -> str:
    """``name`` as a valid label name: ``[a-zA-Z_][a-zA-Z0-9_]*``."""
    name = _BAD_LABEL.sub("_", name)
    if not name or name[0].isdigit():
        name = "_" + name
    return name


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value (or an ``le`` bound) as the format writes it."""
    if isinstance(value, int):  # bool is an int: True is 1
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # -0.0 becomes "0"
    return repr(float(value))


def _labels(labels: Mapping[str, str] | Labels | None) -> Labels:
    if not labels:
        return ()
    items = labels.items() if isinstance(labels, Mapping) else labels
    return tuple((str(k), str(v)) for k, v in items)


@dataclass(frozen=True)
class Sample:
    """One line: the family's name plus ``suffix`` (``""``, ``"_bucket"``, ``"_sum"``,
    ``"_count"``), its labels in order, and its value."""

    suffix: str
    labels: Labels
    value: float


@dataclass
class Family:
    """One metric family: its full name (a counter's ends in ``_total``), type, help and
    samples. Names are sanitised when rendered."""

    name: str
    type: MetricType
    help: str = ""
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise ValueError(f"unknown metric type {self.type!r}")

    def add(self, value: float, labels: Mapping[str, str] | Labels | None = None,
            suffix: str = "") -> Family:
        """One sample of a counter or gauge (or of any type, given its ``suffix``)."""
        self.samples.append(Sample(suffix, _labels(labels), value))
        return self

    def add_buckets(self, cumulative: Sequence[tuple[float, int]], total: float,
                    labels: Mapping[str, str] | Labels | None = None) -> Family:
        """One histogram series from its cumulative ``(le, count)`` pairs (ascending, the
        last ``(inf, count)``) and the sum of its values."""
        if not cumulative or cumulative[-1][0] != math.inf:
            raise ValueError("histogram buckets must end with le=+Inf")
        base = _labels(labels)
        series: list[Sample] = []
        previous = 0
        for le, count in cumulative:
            if count < previous:
                raise ValueError("histogram bucket counts must not decrease")
            previous = count
            series.append(Sample("_bucket", (*base, ("le", format_value(le))), count))
        series.append(Sample("_sum", base, total))
        series.append(Sample("_count", base, cumulative[-1][1]))
        self.samples.extend(series)  # all or nothing
        return self

    def add_histogram(self, histogram: Histogram, labels: Mapping[str, str] | Labels | None = None,
                      bounds: Iterable[float] = DEFAULT_BOUNDS) -> Family:
        """One histogram series from a :class:`Histogram`, with the given ``le`` bounds."""
        return self.add_buckets(histogram.cumulative_buckets(bounds), histogram.sum, labels)


def _sample_line(name: str, sample: Sample) -> str:
    if sample.labels:
        body = ",".join(
            f'{sanitize_label_name(k)}="{escape_label_value(v)}"' for k, v in sample.labels
        )
        return f"{name}{sample.suffix}{{{body}}} {format_value(sample.value)}\n"
    return f"{name}{sample.suffix} {format_value(sample.value)}\n"


def render(families: Iterable[Family]) -> str:
    """The exposition text of ``families``, in the order given."""
    out: list[str] = []
    for family in families:
        name = sanitize_name(family.name)
        if family.help:
            out.append(f"# HELP {name} {escape_help(family.help)}\n")
        out.append(f"# TYPE {name} {family.type}\n")
        out.extend(_sample_line(name, sample) for sample in family.samples)
    return "".join(out)


# The OpenTelemetry-to-Prometheus compatibility rules (OpenTelemetry specification,
# "Prometheus and OpenMetrics Compatibility": metric metadata, unit suffixes).
_UNITS = {
    "d": "days", "h": "hours", "min": "minutes", "s": "seconds", "ms": "milliseconds",
    "us": "microseconds", "ns": "nanoseconds",
    "By": "bytes", "KiBy": "kibibytes", "MiBy": "mebibytes", "GiBy": "gibibytes",
    "TiBy": "tebibytes", "KBy": "kilobytes", "MBy": "megabytes", "GBy": "gigabytes",
    "TBy": "terabytes", "B": "bytes", "KB": "kilobytes", "MB": "megabytes", "GB": "gigabytes",
    "TB": "terabytes", "m": "meters", "V": "volts", "A": "amperes", "J": "joules", "W": "watts",
    "g": "grams", "Cel": "celsius", "Hz": "hertz", "%": "percent",
}
_PER_UNITS = {
    "s": "second", "m": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month", "y": "year",
}
_ANNOTATION = re.compile(r"\{[^}]*\}")


def _unit_suffix(unit: str, metric_type: MetricType) -> str:
    unit = _ANNOTATION.sub("", unit).strip()  # "{request}" says what is counted: no unit
    if not unit:
        return ""
    if unit == "1":
        return "ratio" if metric_type == "gauge" else ""
    if "/" in unit:
        top, _, per = unit.partition("/")
        first = _UNITS.get(top, top) if top else ""
        second = _PER_UNITS.get(per, per)
        return f"{first}_per_{second}" if first else f"per_{second}"
    return _UNITS.get(unit, unit)


def otel_name(name: str, unit: str | None = None, metric_type: MetricType = "histogram") -> str:
    """The Prometheus name of an OpenTelemetry instrument: invalid characters (the dots)
    become ``_`` (runs of them one), the unit's suffix is appended unless the name already
    ends with it, and a counter's name ends in ``_total``."""
    base = re.sub(r"_+", "_", _BAD_NAME.sub("_", name))
    if unit:
        suffix = re.sub(r"_+", "_", _BAD_NAME.sub("_", _unit_suffix(unit, metric_type))).strip("_")
        if suffix and not base.endswith("_" + suffix):
            base = f"{base}_{suffix}"
    if metric_type == "counter" and not base.endswith("_total"):
        base += "_total"
    return sanitize_name(base)
