"""Asks `kubectl-krply mcp` through the official MCP Python SDK's stdio client,
as an assistant's client would (tests/it/mcp.rs).

    python ask.py CALLS.json [--legacy] -- COMMAND [ARGS...]

CALLS.json is a list of {"tool": NAME, "arguments": {...}}. Prints one JSON
object: the server's name and version, the protocol version agreed, the tools
listed (name, description, input schema, annotations), and each call's result
(is_error, the text of each content block, the structured content). With
--legacy the client opens the session with the `initialize` handshake of the
protocol versions before 2026-07-28, as older clients do.
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters


async def main(calls_path: str, legacy: bool, command: list[str]) -> None:
    calls = json.load(open(calls_path))
    server = StdioServerParameters(command=command[0], args=command[1:], env=None)
    out = {"calls": []}
    with anyio.fail_after(120):
        mode = "legacy" if legacy else "auto"
        async with Client(server, read_timeout_seconds=60, mode=mode) as client:
            info = client.server_info
            out["server"] = {"name": info.name, "version": info.version} if info else None
            out["protocol_version"] = client.protocol_version
            out["instructions"] = client.instructions
            listed = await client.list_tools()
            out["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                    "read_only": bool(t.annotations and t.annotations.read_only_hint),
                }
                for t in listed.tools
            ]
            for call in calls:
                result = await client.call_tool(call["tool"], call.get("arguments") or {})
                out["calls"].append(
                    {
                        "tool": call["tool"],
                        "is_error": bool(result.is_error),
                        "texts": [c.text for c in result.content if getattr(c, "type", "") == "text"],
                        "structured": result.structured_content,
                    }
                )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    sep = sys.argv.index("--")
    anyio.run(main, sys.argv[1], "--legacy" in sys.argv[2:sep], sys.argv[sep + 1 :])
