"""A stand-in for a project's submission handlers in the client's tests: a
loopback HTTP server that answers with the captured replies of BOINC's PHP
server, in the order queued, and records every request it gets."""

import email.parser
import email.policy
import os
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from submit_util import FIXTURES



def fixture_bytes(name):
    """A file of tests/fixtures/remote_submit (e.g. "gahp/01_ping.reply.xml")."""
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def fixture_text(name):
    return fixture_bytes(name).decode("utf-8")


@dataclass
class Part:
    """One field of a multipart/form-data body."""

    name: str
    filename: str
    data: bytes
    content_type: str


@dataclass
class Recorded:
    """A request as the server got it."""

    method: str
    path: str
    query: list
    headers: dict
    body: bytes
    parts: list = field(default_factory=list)

    @property
    def form(self):
        """{field: text} of a form-urlencoded or multipart body (files as bytes)."""
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/form-data"):
            return {p.name: (p.data if p.filename is not None else p.data.decode("utf-8"))
                    for p in self.parts}
        return dict(urllib.parse.parse_qsl(self.body.decode("ascii"), keep_blank_values=True))


def parse_multipart(content_type, body):
    """[Part] of a multipart/form-data body, read by Python's email parser."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("ascii") + b"\r\n\r\n" + body)
    assert message.is_multipart(), "not a multipart body"
    parts = []
    for part in message.iter_parts():
        parts.append(Part(name=part.get_param("name", header="content-disposition"),
                          filename=part.get_filename(), data=part.get_payload(decode=True),
                          content_type=part.get_content_type()))
    return parts


class Replay:
    """The server: ``url`` is a master URL (http://127.0.0.1:PORT/PROJECT/);
    ``queue()`` a reply; ``requests`` what came in."""

    def __init__(self):
        replies, requests = [], []
        self.replies, self.requests = replies, requests

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                split = urllib.parse.urlsplit(self.path)
                rec = Recorded(method=self.command, path=split.path,
                               query=urllib.parse.parse_qsl(split.query, keep_blank_values=True),
                               headers=dict(self.headers.items()), body=body)
                ctype = rec.headers.get("Content-Type", "")
                if ctype.startswith("multipart/form-data"):
                    rec.parts = parse_multipart(ctype, body)
                requests.append(rec)
                if not replies:
                    self.send_error(500, "no reply queued")
                    return
                status, headers, data = replies.pop(0)
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/PROJECT/" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def queue(self, data, content_type="text/xml;charset=UTF-8", headers=(), status=200):
        """Answer the next request with ``data`` (bytes, or a fixture name)."""
        if isinstance(data, str):
            data = fixture_bytes(data)
        self.replies.append((status, [("Content-Type", content_type)] + list(headers), data))

    def queue_file(self, name, filename):
        """Answer with fixture ``name`` as get_output.php sends a file."""
        self.queue(name, "application/octet-stream",
                   [("Content-Disposition", "attachment; filename=%s" % filename)])

    def close(self):
        self.server.shutdown()
        self.server.server_close()
