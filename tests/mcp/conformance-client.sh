#!/bin/sh
# The client the official MCP "$name" suite drives (client mode): `art` itself, as a
# user runs it. The suite appends its test server's URL and names the scenario in
# MCP_CONFORMANCE_SCENARIO (and gives what a scenario hands the user, such as a
# pre-registered client, in MCP_CONFORMANCE_CONTEXT); ART_BIN is the `art` binary under
# test. Each scenario asks what a user would: add the server, sign in when it asks
# (`art mcp login`), list its tools, call the one the scenario tests.
#
# The "browser" of a sign-in is `browser.sh` beside this file: the suite's authorization
# servers approve at once, so following their redirect back to `art` is the whole of
# what a user's browser does there.
set -eu
url="$1"
here="$(cd "$(dirname "$0")" && pwd)"
data="$(mktemp -d)"
art() { "$ART_BIN" --data-dir "$data" "$@"; }
# A name of the scenario's own: sign-ins are kept in the keychain by server name, and
# scenarios run side by side. Removing the server removes them.
name="c$(printf '%s' "$MCP_CONFORMANCE_SCENARIO" | cksum | cut -d' ' -f1)"
trap 'art mcp remove "$name" >/dev/null 2>&1; rm -rf "$data"' EXIT
export BROWSER="$here/browser.sh"

# A value of the scenario's context JSON (flat strings only).
context() {
  printf '%s' "${MCP_CONFORMANCE_CONTEXT:-}" \
    | sed -n "s/.*\"$1\" *: *\"\\([^\"]*\\)\".*/\\1/p"
}

case "$MCP_CONFORMANCE_SCENARIO" in
  auth/pre-registration)
    art mcp add "$name" --url "$url" --client-id "$(context client_id)" \
      --client-secret "$(context client_secret)" >&2 || true ;;
  auth/*)
    # The address the suite's authorization servers take as a Client ID Metadata
    # Document (they do not fetch it); servers that do not take one are registered with.
    art mcp add "$name" --url "$url" \
      --client-metadata-url https://conformance-test.local/client-metadata.json >&2 || true ;;
  *) art mcp add "$name" --url "$url" >&2 ;;
esac

case "$MCP_CONFORMANCE_SCENARIO" in
  initialize) art mcp tools "$name" ;;
  tools_call) art mcp call "$name" add_numbers '{"a": 19, "b": 23}' ;;
  sse-retry) art mcp call "$name" test_reconnection ;;
  # The question is asked on standard input: empty lines keep each field's default,
  # and send.
  elicitation-*) yes '' | art mcp call "$name" test_client_elicitation_defaults ;;
  auth/scope-step-up|auth/scope-retry-limit)
    # Signed in for what listing needs; a call that needs more asks for it (403
    # insufficient_scope): sign in again for it, then call again.
    art mcp login "$name" --wait 30
    art mcp tools "$name"
    if ! art mcp call "$name" test-tool '{}'; then
      art mcp login "$name" --wait 30
      art mcp call "$name" test-tool '{}'
    fi ;;
  auth/*)
    art mcp login "$name" --wait 30
    art mcp tools "$name" ;;
  *) art mcp tools "$name" ;;
esac
