"""The official conformance suite's reference server contract, as a fake server spec.

The suite's *server* scenarios (``conformance server --url``) call tools, prompts and
resources by the names of its reference "everything" server and check the shape of what
comes back. :func:`conformance_spec` declares them with the fake server's ordinary spec keys,
so ``python -m mcphost.testing --http 0 --script conformance`` passes them; nothing in the
server itself knows about the suite.
"""

from __future__ import annotations

from .common import Msg

# A 1x1 PNG and a tiny WAV, base64 (content only has to be well-formed base64 of that type).
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
OBJECT = {"type": "object", "properties": {}}

EMBEDDED = {
    "type": "resource",
    "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                 "text": "This is an embedded resource content."},
}
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}


def _tool(name: str, description: str, behavior: Msg, schema: Msg | None = None) -> Msg:
    return {"name": name, "description": description, "inputSchema": schema or OBJECT,
            "behavior": behavior}


def _text(text: str) -> Msg:
    return {"content": [{"type": "text", "text": text}]}


def _elicit(message: str, properties: Msg, required: list[str] | None = None) -> Msg:
    schema: Msg = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"method": "elicitation/create",
            "params": {"message": message, "requestedSchema": schema}}


def _tools() -> list[Msg]:
    defaults = {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verified?", "default": True},
    }
    enums = {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"}]},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "items": {
            "type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"}]}},
    }
    schema_2020 = {
        "$schema": SCHEMA_2020_12,
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }
    sampling = {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Test prompt"}}],
        "maxTokens": 100}}
    return [
        _tool("test_simple_text", "Returns simple text content",
              {"result": _text("This is a simple text response for testing.")}),
        _tool("test_image_content", "Returns image content",
              {"result": {"content": [IMAGE]}}),
        _tool("test_audio_content", "Returns audio content",
              {"result": {"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}}),
        _tool("test_embedded_resource", "Returns an embedded resource",
              {"result": {"content": [EMBEDDED]}}),
        _tool("test_multiple_content_types", "Returns text, image and resource content",
              {"result": {"content": [{"type": "text", "text": "Multiple content types:"},
                                      IMAGE, EMBEDDED]}}),
        _tool("test_tool_with_logging", "Sends log messages while it runs",
              {"log": [{"level": "info", "data": "Tool execution started", "logger": "test"},
                       {"level": "info", "data": "Tool processing data", "logger": "test"},
                       {"level": "info", "data": "Tool execution completed", "logger": "test"}],
               "result": _text("Tool with logging executed successfully")}),
        _tool("test_error_handling", "Always returns an error result",
              {"isError": "This tool intentionally returns an error for testing"}),
        _tool("test_tool_with_progress", "Reports progress",
              {"progress": 3, "progressInterval": 0.02,
               "result": _text("Tool with progress completed")}),
        _tool("test_sampling", "Asks the client for an LLM completion",
              {"request": sampling},
              {"type": "object", "properties": {"prompt": {"type": "string"}},
               "required": ["prompt"]}),
        _tool("test_elicitation", "Asks the user for information",
              {"request": _elicit("Please provide your information", {
                  "username": {"type": "string", "description": "Your username"},
                  "email": {"type": "string", "description": "Your email address"}},
                  ["username", "email"])},
              {"type": "object", "properties": {"message": {"type": "string"}},
               "required": ["message"]}),
        _tool("test_elicitation_sep1034_defaults", "Elicitation with a default for each type",
              {"request": _elicit("Please review and update the form fields with defaults",
                                  defaults)}),
        _tool("test_elicitation_sep1330_enums", "Elicitation with every enum schema form",
              {"request": _elicit("Please select options from the enum fields", enums)}),
        _tool("json_schema_2020_12_tool", "A tool whose input schema uses JSON Schema 2020-12",
              {"echo": True}, schema_2020),
        _tool("test_reconnection", "Closes its SSE stream mid-call, then answers (SEP-1699)",
              {"closeStream": True, "delay": 0.2,
               "result": _text("Reconnection test completed")}),
    ]


def _prompts() -> list[Msg]:
    return [
        {"name": "test_simple_prompt", "description": "A simple prompt without arguments",
         "messages": [{"role": "user", "content": "This is a simple prompt for testing."}]},
        {"name": "test_prompt_with_arguments", "description": "A prompt with arguments",
         "arguments": [{"name": "arg1", "description": "First argument", "required": True},
                       {"name": "arg2", "description": "Second argument", "required": True}],
         "messages": [{"role": "user",
                       "content": "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"}]},
        {"name": "test_prompt_with_embedded_resource",
         "description": "A prompt with an embedded resource",
         "arguments": [{"name": "resourceUri", "description": "URI of the resource",
                        "required": True}],
         "messages": [{"role": "user", "content": {
             "type": "resource", "resource": {"uri": "test://example-resource",
                                              "mimeType": "text/plain",
                                              "text": "Embedded resource content for testing."}}},
                      {"role": "user", "content": "Please process the embedded resource above."}]},
        {"name": "test_prompt_with_image", "description": "A prompt with image content",
         "messages": [{"role": "user", "content": IMAGE},
                      {"role": "user", "content": "Please analyze the image above."}]},
    ]


def conformance_spec() -> Msg:
    """The spec (``--script conformance``); ``era`` and the rest can be merged over it."""
    return {
        "name": "mcphost-fake-conformance",
        "version": "1.0.0",
        "tools": _tools(),
        "prompts": _prompts(),
        "resources": [
            {"uri": "test://static-text", "name": "Static Text Resource",
             "description": "A static text resource for testing", "mimeType": "text/plain",
             "text": "This is the content of the static text resource."},
            {"uri": "test://static-binary", "name": "Static Binary Resource",
             "description": "A static binary resource (image) for testing",
             "mimeType": "image/png", "blob": PNG},
            {"uri": "test://watched-resource", "name": "Watched Resource",
             "description": "A resource for subscription tests", "mimeType": "text/plain",
             "text": "Watched resource content."},
        ],
        "resourceTemplates": [
            {"uriTemplate": "test://template/{id}/data", "name": "Resource Template",
             "description": "A resource template with a parameter",
             "mimeType": "application/json", "text": '{"id":"{id}","data":"Data for ID: {id}"}'},
        ],
        "completions": {"test_prompt_with_arguments": {
            "arg1": ["testValue1", "testValue2", "other"], "arg2": ["testValue2"]}},
    }
