"""A deliberately faulty MCP server over stdio, for the client's fault tests only (the
behaviour tests use the real servers). Python's standard library only.

    python3 fault_server.py MODE

MODE is what goes wrong:
  exit-on-init   writes a line to stderr and exits with code 3 on `initialize`
  garbage        writes non-JSON lines and malformed JSON-RPC before each real answer
  crash-on-call  exits (code 1) when a tool is called
  hang-on-call   never answers a tool call (and records `notifications/cancelled`
                 to stderr when it arrives)
  big-result     answers a call with a 50 MB text result
  input-required answers a call with an `input_required` result (MCP 2026-07-28): a
                 question for a name; the call sent again with the answer and the
                 `requestState` greets that name (a wrong state is an error)
  big-resource   offers one resource, `file:///big.txt`, of 50 MB of text
  spawn-child    starts a grandchild (`sleep 600`) in its process group, then works
  bad-schema     also lists `broken`, a tool whose input schema is not a JSON Schema
  paged          lists its tools one per page (`nextCursor`): `echo`, then `echo2`
  changing       after the first call, adds `echo2` and sends
                 `notifications/tools/list_changed`
  old-version    answers `initialize` with a protocol version no client supports
  hang-on-init   reads its input and never answers, not even `initialize`
  not-mcp        prints a usage text on stdout and never answers (a program that
                 is not an MCP server)
  ok             works: one tool, `echo`
"""

import json
import subprocess
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"

ECHO = {
    "name": "echo",
    "description": "Echoes its message.",
    "inputSchema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, result):
    if MODE == "garbage":
        sys.stdout.write("this is not JSON\n")
        sys.stdout.write('{"jsonrpc": "2.0", "id": \n')
        sys.stdout.write('{"jsonrpc": "1.0", "nonsense": true}\n')
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


BIG = 50 * 1024 * 1024

ECHO2 = dict(ECHO, name="echo2", description="Echoes its message, again.")
grown = False


def main():
    global grown
    if MODE == "hang-on-init":
        for _ in sys.stdin:
            pass
        return
    if MODE == "not-mcp":
        sys.stdout.write("Usage: fault_server.py MODE\n")
        sys.stdout.flush()
        for _ in sys.stdin:
            pass
        return
    if MODE == "spawn-child":
        subprocess.Popen(["sleep", "600"])
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize":
            if MODE == "exit-on-init":
                sys.stderr.write("fault server: refusing to start\n")
                sys.stderr.flush()
                sys.exit(3)
            answer(request_id, {
                "protocolVersion": "1999-01-01" if MODE == "old-version" else message["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "resources": {}} if MODE == "big-resource" else {"tools": {}},
                "serverInfo": {"name": "fault-server", "version": "1.0"},
            })
        elif method == "tools/list" and MODE == "paged":
            cursor = (message.get("params") or {}).get("cursor")
            if cursor is None:
                answer(request_id, {"tools": [ECHO], "nextCursor": "page-2"})
            else:
                answer(request_id, {"tools": [ECHO2]})
        elif method == "tools/list":
            tools = [ECHO, ECHO2] if grown else [ECHO]
            if MODE == "bad-schema":
                tools.append({"name": "broken", "description": "Cannot be validated.",
                              "inputSchema": {"type": "object", "properties": {"x": {"type": "nonsense"}}}})
            answer(request_id, {"tools": tools})
        elif method == "resources/list":
            answer(request_id, {"resources": [{"uri": "file:///big.txt", "name": "big.txt",
                                               "mimeType": "text/plain", "size": BIG}]})
        elif method == "resources/read":
            uri = message["params"]["uri"]
            answer(request_id, {"contents": [{"uri": uri, "mimeType": "text/plain",
                                              "text": "word " * (BIG // 5)}]})
        elif method == "tools/call":
            if MODE == "crash-on-call":
                sys.stderr.write("fault server: crashing mid-call\n")
                sys.stderr.flush()
                sys.exit(1)
            if MODE == "hang-on-call":
                continue
            params = message["params"]
            if MODE == "input-required" and "inputResponses" not in params:
                answer(request_id, {"resultType": "input_required", "requestState": "round-1",
                                    "inputRequests": {"who": {"method": "elicitation/create", "params": {
                                        "mode": "form", "message": "Who is asking?",
                                        "requestedSchema": {"type": "object",
                                                            "properties": {"name": {"type": "string"}},
                                                            "required": ["name"]}}}}})
                continue
            if MODE == "input-required":
                if params.get("requestState") != "round-1":
                    send({"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": -32602, "message": "requestState was not echoed"}})
                    continue
                said = params["inputResponses"]["who"]
                text = ("Hello, " + said["content"]["name"]) if said["action"] == "accept" \
                    else "No name (" + said["action"] + ")"
                answer(request_id, {"content": [{"type": "text", "text": text}]})
                continue
            if MODE == "big-result":
                text = "x" * (50 * 1024 * 1024)
            else:
                text = message["params"]["arguments"]["message"]
            answer(request_id, {"content": [{"type": "text", "text": text}]})
            if MODE == "changing" and not grown:
                grown = True
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        elif method == "notifications/cancelled":
            sys.stderr.write("cancelled " + json.dumps(message["params"].get("requestId")) + "\n")
            sys.stderr.flush()
        elif request_id is not None:
            answer(request_id, {})


main()
