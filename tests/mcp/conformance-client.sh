#!/bin/sh
# The client the official MCP conformance suite drives (client mode): `art` itself, as a
# user runs it. The suite appends its test server's URL and names the scenario in
# MCP_CONFORMANCE_SCENARIO; ART_BIN is the `art` binary under test. Each scenario asks
# what a user would: add the server, list its tools, call the one the scenario tests.
set -eu
url="$1"
data="$(mktemp -d)"
trap 'rm -rf "$data"' EXIT
art() { "$ART_BIN" --data-dir "$data" "$@"; }
art mcp add conformance --url "$url" >&2
case "$MCP_CONFORMANCE_SCENARIO" in
  initialize) art mcp tools conformance ;;
  tools_call) art mcp call conformance add_numbers '{"a": 19, "b": 23}' ;;
  sse-retry) art mcp call conformance test_reconnection ;;
  elicitation-*) art mcp call conformance test_client_elicitation_defaults ;;
  *) art mcp tools conformance ;;
esac
