"""An MCP server (``mcp`` 2.3.0 ``MCPServer``, streamable HTTP at ``/mcp``) exposing every fixture
the official conformance suite's server scenarios call, plus ``whoami``.

Why a fixture server of our own: the conformance runner (``@modelcontextprotocol/conformance``)
checks a server by calling tools, resources and prompts with fixed names and inspecting the answers,
so the app behind ``protect(..., protocol="mcp")`` must have them all for the suite to say anything
about the middleware.  Each fixture returns what that scenario's checks look for (the runner's
scenario descriptions and assertions in ``dist/index.js``): text, image, audio and embedded-resource
content, log and progress notifications sent during a call, sampling and elicitation requests sent
back to the client, a tool whose SSE stream is closed mid-call (resumption through the event store),
static, binary and templated resources, subscriptions, prompts with arguments, images and embedded
resources, ``logging/setLevel`` and ``completion/complete``.

``whoami`` reports the caller as the MCP SDK sees it (``get_access_token()``, which the SDK's auth
context or mudrika's middleware fills) and the policy principal a mudrika middleware leaves in
``scope["state"]["mudrika.principal"]``, so later tests can check what the protected app learnt.

The SDK marks logging and sampling deprecated as of protocol 2026-07-28 and its convenience methods
(``Context.log``, ``ServerSession.create_message``) warn; the suite turns warnings into errors in
every thread, so these fixtures send the same messages through the un-deprecated
``send_notification`` / ``send_request``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import struct
import wave
import zlib
from collections import deque
from collections.abc import Mapping
from typing import Any, Final

import mcp.types as types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from starlette.applications import Starlette

__all__ = [
    "JSON_SCHEMA_2020_12_TOOL",
    "MCP_PATH",
    "PRINCIPAL_STATE_KEY",
    "RETRY_INTERVAL_MS",
    "MemoryEventStore",
    "build_everything_server",
    "everything_app",
]

MCP_PATH: Final = "/mcp"
#: Where a mudrika middleware leaves the policy principal (``scope["state"][...]``).
PRINCIPAL_STATE_KEY: Final = "mudrika.principal"
#: The name the json-schema-2020-12 scenario looks up in ``tools/list``.
JSON_SCHEMA_2020_12_TOOL: Final = "json_schema_2020_12_tool"
#: The SSE ``retry`` (ms) the server suggests in priming events: how long a client whose stream was
#: closed mid-call waits before it reconnects with ``Last-Event-ID``.
RETRY_INTERVAL_MS: Final = 200

_STEP_DELAY = 0.05  # the pause the logging and progress scenarios ask for between notifications
_LOG_LEVELS: Final[tuple[types.LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_WATCHED_RESOURCE: Final = "test://watched-resource"
_COMPLETIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "arg1": ("paris", "park", "party", "test", "testValue1"),
    "arg2": ("world", "wonder", "testValue2"),
}


# --- binary fixtures ------------------------------------------------------------------------------


def _png_1x1_red() -> bytes:
    """The smallest valid PNG: one red pixel (8-bit RGB), built so no binary file is committed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then R G B
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    """10 ms of 8 kHz mono 8-bit silence as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * 80)
    return buffer.getvalue()


_PNG: Final = _png_1x1_red()
_PNG_B64: Final = base64.b64encode(_PNG).decode()
_WAV_B64: Final = base64.b64encode(_wav_silence()).decode()


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _image() -> types.ImageContent:
    return types.ImageContent(type="image", data=_PNG_B64, mime_type="image/png")


# --- resumability ---------------------------------------------------------------------------------


class MemoryEventStore(EventStore):
    """The SSE events of every stream, kept in memory (the newest ``capacity``), for replay.

    The SDK resumes a stream only through an event store: with one configured it opens each POST
    stream with a priming event (an id, no data) and, when ``Context.close_sse_stream()`` ends a
    stream mid-call, stores what the call still sends, so a client reconnecting with
    ``Last-Event-ID`` gets the rest.  That is what the ``test_reconnection`` tool exercises.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._events: deque[tuple[EventId, StreamId, types.JSONRPCMessage | None]] = deque(maxlen=capacity)
        self._counter = 0

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        self._counter += 1
        event_id = str(self._counter)
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        events = list(self._events)
        position = next((i for i, (event_id, _, _) in enumerate(events) if event_id == last_event_id), None)
        if position is None:
            return None
        stream_id = events[position][1]
        for event_id, stream, message in events[position + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


# --- the server -------------------------------------------------------------------------------------


class _LogLevels:
    """The minimum level ``logging/setLevel`` chose, per MCP session (``Mcp-Session-Id``).

    A stateless server has no session to remember a level for, so there every level is sent."""

    _MAX_SESSIONS = 1024

    def __init__(self) -> None:
        self._levels: dict[str, int] = {}

    def set(self, session_id: str | None, level: types.LoggingLevel) -> None:
        if session_id is None:
            return
        if len(self._levels) >= self._MAX_SESSIONS and session_id not in self._levels:
            self._levels.pop(next(iter(self._levels)))
        self._levels[session_id] = _LOG_LEVELS.index(level)

    def allows(self, session_id: str | None, level: types.LoggingLevel) -> bool:
        minimum = self._levels.get(session_id, 0) if session_id is not None else 0
        return _LOG_LEVELS.index(level) >= minimum


def _session_id(request: Any) -> str | None:
    """The ``Mcp-Session-Id`` of the HTTP request carrying a message (None when stateless)."""
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get("mcp-session-id")
    return value if isinstance(value, str) else None


def _describe_principal(principal: object) -> dict[str, Any] | None:
    """A JSON view of a mudrika policy principal (duck-typed: subject, roles, permissions, did)."""
    if principal is None:
        return None
    return {
        "subject": getattr(principal, "subject", None),
        "roles": sorted(getattr(principal, "roles", ())),
        "permissions": sorted(getattr(principal, "permissions", ())),
        "did": getattr(principal, "did", None),
    }


def _json_schema_2020_12_tool() -> Tool:
    """A tool whose advertised ``inputSchema`` uses 2020-12 keywords (``$schema``, ``$defs``,
    ``$ref``, ``additionalProperties``): the scenario checks the SDK passes them through verbatim."""

    def json_schema_2020_12_tool(name: str | None = None, address: dict[str, str] | None = None) -> str:
        return json.dumps({"name": name, "address": address}, sort_keys=True)

    tool = Tool.from_function(
        json_schema_2020_12_tool,
        name=JSON_SCHEMA_2020_12_TOOL,
        description="Tool with JSON Schema 2020-12 features",
    )
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }
    return tool.model_copy(update={"parameters": schema})


def build_everything_server() -> MCPServer:
    """A fresh server with every conformance fixture (no state shared between calls)."""
    server = MCPServer(
        name="mudrika-mcp-everything",
        version="1.0.0",
        instructions="Conformance fixtures for mudrika's MCP resource-server tests.",
        tools=[_json_schema_2020_12_tool()],
    )
    log_levels = _LogLevels()

    async def send_log(ctx: Context, level: types.LoggingLevel, message: str) -> None:
        request = ctx.request_context
        if not log_levels.allows(_session_id(request.request), level):
            return
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=level, data=message, logger="everything")
        )
        await request.session.send_notification(notification, related_request_id=request.request_id)

    # --- tools: content types ---

    @server.tool(description="Returns one text block.", structured_output=False)
    def test_simple_text() -> types.CallToolResult:
        return _text("This is a simple text response for testing.")

    @server.tool(description="Returns a 1x1 red PNG image.", structured_output=False)
    def test_image_content() -> types.CallToolResult:
        return types.CallToolResult(content=[_image()])

    @server.tool(description="Returns a short WAV clip of silence.", structured_output=False)
    def test_audio_content() -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.AudioContent(type="audio", data=_WAV_B64, mime_type="audio/wav")]
        )

    @server.tool(description="Returns an embedded text resource.", structured_output=False)
    def test_embedded_resource() -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=resource)])

    @server.tool(description="Returns text, an image and an embedded resource.", structured_output=False)
    def test_multiple_content_types() -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}),
        )
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="Multiple content types test:"),
                _image(),
                types.EmbeddedResource(type="resource", resource=resource),
            ]
        )

    @server.tool(description="Always fails, reported as a tool error (isError).")
    def test_error_handling() -> str:
        raise ToolError("This tool intentionally returns an error for testing")

    # --- tools: notifications during a call ---

    @server.tool(description="Sends three info log notifications while it runs.", structured_output=False)
    async def test_tool_with_logging(ctx: Context) -> types.CallToolResult:
        await send_log(ctx, "info", "Tool execution started")
        await asyncio.sleep(_STEP_DELAY)
        await send_log(ctx, "info", "Tool processing data")
        await asyncio.sleep(_STEP_DELAY)
        await send_log(ctx, "info", "Tool execution completed")
        return _text("Tool with logging executed successfully")

    @server.tool(description="Reports progress 0, 50 and 100 of 100 while it runs.", structured_output=False)
    async def test_tool_with_progress(ctx: Context) -> types.CallToolResult:
        for step, progress in enumerate((0, 50, 100)):
            if step:
                await asyncio.sleep(_STEP_DELAY)
            await ctx.report_progress(progress, 100, f"step {step + 1} of 3")
        return _text("Tool with progress executed successfully")

    @server.tool(
        description="Closes its SSE stream mid-call; the result arrives when the client resumes.",
        structured_output=False,
    )
    async def test_reconnection(ctx: Context) -> types.CallToolResult:
        await ctx.close_sse_stream()
        await asyncio.sleep(_STEP_DELAY)
        return _text("Reconnection test completed successfully")

    # --- tools: requests back to the client ---

    @server.tool(description="Asks the client's LLM (sampling/createMessage) to answer a prompt.")
    async def test_sampling(prompt: str, ctx: Context) -> types.CallToolResult:
        request = ctx.request_context
        capabilities = request.session.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise ToolError("the client does not support sampling")
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        result = await request.session.send_request(
            types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=[message], max_tokens=100)
            ),
            types.CreateMessageResult,
            metadata=ServerMessageMetadata(related_request_id=request.request_id),
        )
        content = result.content
        answer = content.text if isinstance(content, types.TextContent) else content.model_dump_json()
        return _text(f"LLM response: {answer}")

    async def elicit(ctx: Context, message: str, schema: dict[str, Any]) -> types.CallToolResult:
        request = ctx.request_context
        capabilities = request.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            raise ToolError("the client does not support elicitation")
        result = await request.session.elicit_form(message, schema, related_request_id=request.request_id)
        return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}")

    @server.tool(description="Asks the user (elicitation/create) for a username and an email address.")
    async def test_elicitation(message: str, ctx: Context) -> types.CallToolResult:
        schema = {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }
        return await elicit(ctx, message, schema)

    @server.tool(description="Elicits a form whose fields all carry defaults (SEP-1034).")
    async def test_elicitation_sep1034_defaults(ctx: Context) -> types.CallToolResult:
        schema = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": True},
            },
            "required": [],
        }
        return await elicit(ctx, "Please review these defaults", schema)

    @server.tool(description="Elicits a form with the five enum shapes of SEP-1330.")
    async def test_elicitation_sep1330_enums(ctx: Context) -> types.CallToolResult:
        options = ["option1", "option2", "option3"]
        schema = {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        }
        return await elicit(ctx, "Please pick some options", schema)

    # --- the caller ---

    @server.tool(description="Reports the caller as the server sees it: access token and policy principal.")
    def whoami(ctx: Context) -> str:
        access = get_access_token()
        request = ctx.request_context.request
        scope: Mapping[str, Any] = getattr(request, "scope", {})
        state = scope.get("state") or {}
        authorization = getattr(request, "headers", {}).get("authorization")
        return json.dumps(
            {
                "access_token": None
                if access is None
                else {
                    "client_id": access.client_id,
                    "subject": access.subject,
                    "scopes": sorted(access.scopes),
                    "resource": access.resource,
                    "expires_at": access.expires_at,
                    "issuer": (access.claims or {}).get("iss"),
                },
                "principal": _describe_principal(state.get(PRINCIPAL_STATE_KEY)),
                "authorization_scheme": None if authorization is None else authorization.split(" ", 1)[0],
            },
            sort_keys=True,
        )

    # --- resources ---

    @server.resource(
        "test://static-text",
        name="static-text",
        description="A fixed text resource.",
        mime_type="text/plain",
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary",
        name="static-binary",
        description="A fixed binary resource (a 1x1 PNG).",
        mime_type="image/png",
    )
    def static_binary() -> bytes:
        return _PNG

    @server.resource(
        "test://template/{id}/data",
        name="template-data",
        description="JSON data for the id in the URI.",
        mime_type="application/json",
    )
    def template_data(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource(
        _WATCHED_RESOURCE,
        name="watched-resource",
        description="A resource clients may subscribe to.",
        mime_type="text/plain",
    )
    def watched_resource() -> str:
        return "Watched resource content"

    # --- prompts ---

    @server.prompt(description="A prompt without arguments.")
    def test_simple_prompt() -> list[Message]:
        return [UserMessage("This is a simple prompt for testing.")]

    @server.prompt(description="A prompt with two required arguments.")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
        return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @server.prompt(description="A prompt that embeds the resource named by its argument.")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:  # noqa: N803 - the wire name
        resource = types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            UserMessage(types.EmbeddedResource(type="resource", resource=resource)),
            UserMessage("Please process the embedded resource above."),
        ]

    @server.prompt(description="A prompt with an image.")
    def test_prompt_with_image() -> list[Message]:
        return [UserMessage(_image()), UserMessage("Please analyze the image above.")]

    # --- protocol handlers MCPServer has no decorator for ---

    # MCPServer has no decorator for these (and its ``completion()`` decorator is untyped), so they
    # go straight to the low-level server it wraps.
    lowlevel = server._lowlevel_server

    async def complete(
        ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Completes the arguments of ``test_prompt_with_arguments`` from a fixed list, by prefix."""
        ref, argument = params.ref, params.argument
        values: list[str] = []
        if isinstance(ref, types.PromptReference) and ref.name == "test_prompt_with_arguments":
            values = [
                value for value in _COMPLETIONS.get(argument.name, ()) if value.startswith(argument.value)
            ]
        return types.CompleteResult(
            completion=types.Completion(values=values, total=len(values), has_more=False)
        )

    async def set_level(
        ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        log_levels.set(_session_id(ctx.request), params.level)
        return types.EmptyResult()

    async def subscribe(
        ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        _known_subscription(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        _known_subscription(str(params.uri))
        return types.EmptyResult()

    lowlevel.add_request_handler("completion/complete", types.CompleteRequestParams, complete)
    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    return server


def _known_subscription(uri: str) -> None:
    """Subscriptions are accepted for the watched resource only: no fixture ever changes, so there
    is no update to send, and a subscription to anything else is a client error."""
    if uri != _WATCHED_RESOURCE:
        raise MCPError(types.INVALID_PARAMS, f"not a subscribable resource: {uri}")


def everything_app(*, stateless: bool = False) -> Starlette:
    """The fixture server as an ASGI app (route ``/mcp``; its lifespan runs the session manager, so
    serve it with lifespan on).

    Stateful by default, with an in-memory event store so SSE streams can be resumed; stateless mode
    has no sessions and so nothing to resume.  DNS-rebinding protection stays on (host 127.0.0.1:
    ``Host``/``Origin`` must name the loopback)."""
    server = build_everything_server()
    if stateless:
        return server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True)
    return server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        event_store=MemoryEventStore(),
        retry_interval=RETRY_INTERVAL_MS,
    )
