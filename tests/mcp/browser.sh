#!/bin/sh
# The test session's $BROWSER (and the conformance driver's): opens the sign-in page
# and follows its redirects back to the app — browser.mjs on the Node the test kit
# installs beside this file. Its output goes to stderr: the app's stays its own.
here="$(cd "$(dirname "$0")" && pwd)"
exec "$here/node_modules/node/bin/node" "$here/browser.mjs" "$1" >&2
