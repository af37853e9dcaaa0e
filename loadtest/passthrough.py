"""The cheapest possible extender (issue 36, item 3's floor): a bare pass-through on Python's
standard-library HTTP server, keeping connections alive as kube-scheduler does. Filter passes
every node sent, prioritize scores them all alike; it binds nothing (kube-scheduler binds).

    python -m loadtest.passthrough PORT
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The answer in one segment, sent at once: unbuffered, the headers and the body would go in
    # two writes and the second wait for the client's delayed ACK (40 ms).
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        names = body.get("NodeNames") or []
        answer: Any
        if self.path.endswith("/filter"):
            answer = {"NodeNames": names, "FailedNodes": {}, "Error": ""}
        elif self.path.endswith("/prioritize"):
            answer = [{"Host": name, "Score": 0} for name in names]
        else:
            self.send_error(404)
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.passthrough", description=__doc__)
    parser.add_argument("port", type=int, help="the loopback port to serve on")
    port = parser.parse_args(argv).port
    ThreadingHTTPServer(("127.0.0.1", port), _Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
