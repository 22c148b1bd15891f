"""Start Arize Phoenix for the tests on loopback only.

Phoenix binds its HTTP server where PHOENIX_HOST says, but its gRPC OTLP receiver to
every interface ([::]:PORT) whatever the settings: a test machine must not offer a
receiver to its network. This launcher makes the gRPC server bind 127.0.0.1 instead,
then runs `phoenix serve` as the `phoenix` command would.
"""

import sys

import grpc.aio._server as aio_server

_add_insecure_port = aio_server.Server.add_insecure_port


def _loopback(self, address):
    host, _, port = address.rpartition(":")
    if host in ("[::]", "0.0.0.0", ""):
        address = f"127.0.0.1:{port}"
    return _add_insecure_port(self, address)


aio_server.Server.add_insecure_port = _loopback

from phoenix.server.main import main  # noqa: E402  (after the patch)

sys.argv = ["phoenix", "serve"]
sys.exit(main())
