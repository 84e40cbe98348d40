"""moto_server with its requests handled one at a time.

moto's server answers each request on a thread of its own and its DynamoDB backend takes no
lock, so two conditional writes of one item that arrive together can both pass their
condition (measured: about 3 rounds in 1,000 of eight concurrent `attribute_not_exists`
puts had two winners). DynamoDB makes each conditional write atomic, and the project's
guarantees rest on that, so the emulator must too: one lock around every request.
Arguments are moto_server's own (-H host, -p port).
"""

import threading

from moto import server

_lock = threading.Lock()
_run_simple = server.run_simple


def _serial(app):
    def handle(environ, start_response):
        with _lock:
            # The whole body is produced under the lock: moto builds it before returning anyway.
            result = app(environ, start_response)
            try:
                return list(result)
            finally:
                # WSGI: the server would have closed the iterable it got; it now gets a list.
                if hasattr(result, "close"):
                    result.close()

    return handle


def run_simple(host, port, app, **kwargs):
    return _run_simple(host, port, _serial(app), **kwargs)


server.run_simple = run_simple

if __name__ == "__main__":
    server.main()
