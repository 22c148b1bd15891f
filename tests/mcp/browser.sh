#!/bin/sh
# A "browser" for sign-in tests: it opens the authorization address and follows the
# authorization server's redirects back to the app's loopback listener, as a browser
# does when the user approves (the test authorization servers approve at once).
# Output goes to stderr only: the app's own output stays its own.
exec curl --silent --show-error --location --max-redirs 5 --max-time 20 \
  --output /dev/null "$1" >&2
