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
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                       "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                       "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
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


def _modern_tools() -> list[Msg]:
    """The tools the 2026-07-28 scenarios (0.2.0) call: MRTR, capabilities, list changes."""
    name = {"user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])}
    sampling = {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
        "maxTokens": 50}}
    roots = {"method": "roots/list", "params": {}}
    color = {"favorite_color": _elicit("What is your favorite color?",
                                       {"color": {"type": "string"}}, ["color"])}
    confirm = {"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}

    def rounds(*each: Msg, optional: bool = False) -> Msg:
        return {"inputRounds": list(each), "inputOptional": optional}

    return [
        _tool("test_input_required_result_elicitation", "Asks for a name (MRTR)", rounds(name)),
        _tool("test_input_required_result_sampling", "Asks for a completion (MRTR)",
              rounds({"llm_greeting": sampling})),
        _tool("test_input_required_result_list_roots", "Asks for the roots (MRTR)",
              rounds({"client_roots": roots})),
        _tool("test_input_required_result_request_state", "Round with request state (MRTR)",
              rounds(confirm)),
        _tool("test_input_required_result_multiple_inputs", "Three input requests in one round",
              rounds({**name, "llm_greeting": sampling, "client_roots": roots})),
        _tool("test_input_required_result_multi_round", "Two rounds of input (MRTR)",
              rounds(name, color)),
        _tool("test_input_required_result_tampered_state", "Rejects a changed requestState",
              rounds(confirm)),
        _tool("test_input_required_result_capabilities", "Asks only what the client can answer",
              rounds({**name, "llm_greeting": sampling}, optional=True)),
        _tool("test_missing_capability", "Needs the sampling capability",
              rounds({"llm_greeting": sampling})),
        _tool("test_streaming_elicitation", "Asks for input on its response stream",
              {**rounds(name), "progress": 2}),
        _tool("test_logging_tool", "Logs (only with a logLevel in _meta)",
              {"log": [{"level": "info", "data": "step 1"}, {"level": "info", "data": "step 2"}],
               "result": _text("logged")}),
        _tool("test_custom_headers_server", "A tool whose region argument travels in a header",
              {"echo": True},
              {"type": "object", "properties": {
                  "region": {"type": "string", "x-mcp-header": "Region"},
                  "query": {"type": "string"}}, "required": ["region"]}),
        _tool("test_trigger_tool_change", "Announces a tools list change",
              {"listChanged": ["tools"], "result": _text("tools changed")}),
        _tool("test_trigger_prompt_change", "Announces a prompts list change",
              {"listChanged": ["prompts"], "result": _text("prompts changed")}),
        _tool("test_trigger_resource_change", "Announces a resources list change",
              {"listChanged": ["resources"], "result": _text("resources changed")}),
    ]


def _task_tools() -> list[Msg]:
    """The fixtures of the tasks extension scenarios (0.2.0, ``tasks-*``)."""
    def task(name: str, description: str, support: str, behavior: Msg,
             schema: Msg | None = None) -> Msg:
        return {**_tool(name, description, behavior, schema), "execution": {"taskSupport": support}}

    name = {"user_name": _elicit("What is your name?", {"name": {"type": "string"}}, ["name"])}
    confirm = {"confirm": _elicit("Delete it?", {"confirm": {"type": "boolean"}}, ["confirm"])}
    both = {"first": _elicit("First value?", {"value": {"type": "string"}}),
            "second": _elicit("Second value?", {"value": {"type": "string"}})}
    return [
        _tool("greet", "Greets (sync only)", {"template": "Hello, {name}!"},
              {"type": "object", "properties": {"name": {"type": "string"}}}),
        task("slow_compute", "Sleeps `seconds`, then answers (a task)", "optional",
             {"delayArg": "seconds", "template": "Computed after {seconds} seconds"},
             {"type": "object", "properties": {"seconds": {"type": "number"}}}),
        task("failing_job", "A task whose tool reports an error", "required",
             {"isError": "The job failed"}),
        task("protocol_error_job", "A task that fails with a JSON-RPC error", "required",
             {"error": {"code": -32603, "message": "Internal error in the job"}}),
        task("confirm_delete", "A task that asks for a confirmation", "optional",
             {"inputRounds": [confirm]}),
        task("multi_input", "A task that asks two things at once", "optional",
             {"inputRounds": [both]}),
        task("test_tool_with_task", "Asks for a name (MRTR), then runs as a task", "required",
             {"inputRounds": [name], "inputBeforeTask": True}),
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
        {"name": "test_input_required_result_prompt", "description": "A prompt that asks first",
         "messages": [{"role": "user", "content": "A prompt made with the user's context."}],
         "inputRounds": [{"prompt_context": _elicit(
             "What context should the prompt use?", {"context": {"type": "string"}})}]},
    ]


def conformance_spec() -> Msg:
    """The spec (``--script conformance``); ``era`` and the rest can be merged over it."""
    return {
        "name": "mcphost-fake-conformance",
        "version": "1.0.0",
        "tools": _tools() + _modern_tools() + _task_tools(),
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
