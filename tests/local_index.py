"""A local package index for tests: serves recorded PyPI answers (tests/data/index/NAME.json) at /simple/NAME/ on
127.0.0.1 the way PyPI does (PEP 691 JSON), and records the requests it gets."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from execrepobench.builder.live.index import ACCEPT

RECORDED = Path(__file__).parent / "data" / "index"


def recorded(name: str) -> dict:
    return json.loads((RECORDED / f"{name}.json").read_text(encoding="utf-8"))


class LocalIndex:
    """A local index: serves tests/data/index/NAME.json at /simple/NAME/ as PEP 691 JSON, records requests."""

    def __init__(self, content_type: str = ACCEPT, api_version: str | None = None) -> None:
        self.requests: list[tuple[str, str]] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                index.requests.append((self.path, self.headers.get("Accept", "")))
                name = self.path.strip("/").split("/")[-1]
                if not (RECORDED / f"{name}.json").is_file():
                    self.send_error(404)
                    return
                data = recorded(name)
                if api_version:
                    data["meta"]["api-version"] = api_version
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


