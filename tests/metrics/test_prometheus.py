"""The Prometheus text exposition format 0.0.4: exact text, escaping, names, values."""

from __future__ import annotations

import math

import pytest

from mcphost.metrics import Metrics
from mcphost.metrics.exposition import DURATION, ERRORS, families
from mcphost.metrics.histogram import Histogram
from mcphost.metrics.prometheus import (
    CONTENT_TYPE,
    Family,
    Sample,
    escape_help,
    escape_label_value,
    format_value,
    otel_name,
    render,
    sanitize_label_name,
    sanitize_name,
)


def test_a_small_example_exactly() -> None:
    h = Histogram()
    for v in (0.004, 0.03, 0.03, 0.7, 12.0):
        h.record(v)
    text = render([
        Family("mcphost_up", "gauge", "Servers that are ready.").add(2),
        Family("mcphost_restarts_total", "counter", "Restarts.").add(3, {"server": "fs"}).add(0, {"server": "git"}),
        Family("rpc_seconds", "histogram", "Durations.").add_histogram(
            h, {"server": "fs"}, bounds=(0.01, 0.1, 1.0)
        ),
    ])
    assert text == (
        "# HELP mcphost_up Servers that are ready.\n"
        "# TYPE mcphost_up gauge\n"
        "mcphost_up 2\n"
        "# HELP mcphost_restarts_total Restarts.\n"
        "# TYPE mcphost_restarts_total counter\n"
        'mcphost_restarts_total{server="fs"} 3\n'
        'mcphost_restarts_total{server="git"} 0\n'
        "# HELP rpc_seconds Durations.\n"
        "# TYPE rpc_seconds histogram\n"
        'rpc_seconds_bucket{server="fs",le="0.01"} 1\n'
        'rpc_seconds_bucket{server="fs",le="0.1"} 3\n'
        'rpc_seconds_bucket{server="fs",le="1"} 4\n'
        'rpc_seconds_bucket{server="fs",le="+Inf"} 5\n'
        'rpc_seconds_sum{server="fs"} 12.764\n'
        'rpc_seconds_count{server="fs"} 5\n'
    )
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_escaping() -> None:
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert escape_help('back\\slash "quoted"\nnext') == 'back\\\\slash "quoted"\\nnext'
    text = render([
        Family("x", "gauge", "line one\nline \\ two").add(1, {"path": 'C:\\tmp\\"a"\nb'}),
    ])
    assert text == (
        "# HELP x line one\\nline \\\\ two\n"
        "# TYPE x gauge\n"
        'x{path="C:\\\\tmp\\\\\\"a\\"\\nb"} 1\n'
    )
    assert text.count("\n") == 3  # no raw newline leaks into a line


def test_names_are_sanitised() -> None:
    assert sanitize_name("mcp.client.operation-duration") == "mcp_client_operation_duration"
    assert sanitize_name("9lives") == "_9lives"
    assert sanitize_name("ns:metric_1") == "ns:metric_1"
    assert sanitize_name("") == "_"
    assert sanitize_label_name("gen_ai.tool.name") == "gen_ai_tool_name"
    assert sanitize_label_name("a:b") == "a_b"
    assert sanitize_label_name("1x") == "_1x"
    text = render([Family("my.metric", "counter").add(1, {"tool.name": "é"})])
    assert text == '# TYPE my_metric counter\nmy_metric{tool_name="é"} 1\n'


def test_values() -> None:
    assert format_value(3) == "3"
    assert format_value(3.0) == "3"
    assert format_value(-0.0) == "0"
    assert format_value(True) == "1"
    assert format_value(0.25) == "0.25"
    assert format_value(1e-06) == "1e-06"
    assert format_value(1e20) == "1e+20"
    assert format_value(math.inf) == "+Inf"
    assert format_value(-math.inf) == "-Inf"
    assert format_value(math.nan) == "NaN"
    assert float(format_value(0.1 + 0.2)) == 0.1 + 0.2  # round-trips


def test_the_data_model() -> None:
    family = Family("f", "gauge")
    family.add(1.5, (("b", "2"), ("a", "1")))  # label order is kept
    family.add(2, None)
    assert family.samples == [Sample("", (("b", "2"), ("a", "1")), 1.5), Sample("", (), 2)]
    assert render([family]) == '# TYPE f gauge\nf{b="2",a="1"} 1.5\nf 2\n'
    assert render([]) == ""
    with pytest.raises(ValueError):
        Family("f", "bogus")  # type: ignore[arg-type]
    hist = Family("h", "histogram")
    with pytest.raises(ValueError):
        hist.add_buckets([(1.0, 2)], 1.0)  # no +Inf
    with pytest.raises(ValueError):
        hist.add_buckets([(1.0, 2), (math.inf, 1)], 1.0)  # not cumulative
    hist.add_buckets([(0.5, 1), (math.inf, 2)], 1.25, {"k": "v"})
    assert render([hist]) == (
        "# TYPE h histogram\n"
        'h_bucket{k="v",le="0.5"} 1\n'
        'h_bucket{k="v",le="+Inf"} 2\n'
        'h_sum{k="v"} 1.25\n'
        'h_count{k="v"} 2\n'
    )


def test_empty_histogram_series() -> None:
    text = render([Family("h", "histogram").add_histogram(Histogram(), bounds=(1.0,))])
    assert text == '# TYPE h histogram\nh_bucket{le="1"} 0\nh_bucket{le="+Inf"} 0\nh_sum 0\nh_count 0\n'


@pytest.mark.parametrize(
    ("name", "unit", "kind", "want"),
    [
        ("mcp.client.operation.duration", "s", "histogram", "mcp_client_operation_duration_seconds"),
        ("mcp.server.session.duration", "s", "histogram", "mcp_server_session_duration_seconds"),
        ("http.client.request.body.size", "By", "histogram", "http_client_request_body_size_bytes"),
        ("mcphost.requests", "{request}", "counter", "mcphost_requests_total"),
        ("mcphost.requests_total", None, "counter", "mcphost_requests_total"),
        ("latency_seconds", "s", "histogram", "latency_seconds"),
        ("cpu.utilization", "1", "gauge", "cpu_utilization_ratio"),
        ("events", "1", "counter", "events_total"),
        ("net.io", "By/s", "gauge", "net_io_bytes_per_second"),
        ("queue..depth", None, "gauge", "queue_depth"),
        ("rss", "MiBy", "gauge", "rss_mebibytes"),
    ],
)
def test_otel_name(name: str, unit: str | None, kind: str, want: str) -> None:
    assert otel_name(name, unit, kind) == want  # type: ignore[arg-type]


def test_otel_name_default_arguments() -> None:
    assert otel_name("mcp.client.operation.duration", unit="s") == "mcp_client_operation_duration_seconds"


def test_the_families_of_a_host() -> None:
    m = Metrics()
    read = m.tool("read_file")
    read.record_result(0.004, False)
    read.record_result(0.3, True)
    read.record(2.0, error="boom", kind="server_error")
    m.method("prompts/get").record(0.05, error="slow", timeout=True)
    fams = families({"fs": m}, bounds=(0.1, 1.0))
    assert [f.name for f in fams] == [DURATION, ERRORS]
    assert DURATION == "mcp_client_operation_duration_seconds"
    assert ERRORS == "mcphost_operation_errors_total"
    text = render(fams)
    tool = 'mcp_server="fs",mcp_method_name="tools/call",gen_ai_tool_name="read_file"'
    method = 'mcp_server="fs",mcp_method_name="prompts/get"'
    assert f'{DURATION}_bucket{{{tool},le="0.1"}} 1\n' in text
    assert f'{DURATION}_bucket{{{tool},le="1"}} 2\n' in text
    assert f'{DURATION}_bucket{{{tool},le="+Inf"}} 3\n' in text
    assert f"{DURATION}_count{{{tool}}} 3\n" in text
    assert f"{DURATION}_count{{{method}}} 1\n" in text
    assert f'{ERRORS}{{{tool},error_type="server_error"}} 1\n' in text
    assert f'{ERRORS}{{{tool},error_type="is_error"}} 1\n' in text
    assert f'{ERRORS}{{{method},error_type="timeout"}} 1\n' in text
    assert "cancelled" not in text  # kinds that never happened are left out
    assert families({}) [0].samples == []
