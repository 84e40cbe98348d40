"""The local DynamoDB emulator: moto's application served by waitress.

moto_server serves moto with werkzeug's development server, which closes the connection after
every response (no keep-alive) and starts a thread per connection. waitress keeps connections
open (HTTP/1.1 keep-alive) and hands requests to a fixed pool of threads, so a client's
requests do not each pay for a new TCP connection. moto keeps its state in this one process.

Usage: python moto_server.py HOST PORT
"""

import os
import sys

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from waitress import serve


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    # moto builds some URLs from the port it is served on, as moto_server sets it.
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    # Threads: moto holds the GIL for most of a request, so a few suffice for overlap of I/O.
    # connection_limit: every client of the local system keeps its own pool of connections.
    serve(app, host=host, port=port, threads=int(os.environ.get("MOTO_THREADS", "8")), connection_limit=1000, channel_timeout=120)


if __name__ == "__main__":
    main()
