"""What the scripted mock LLM API servers in this directory share.

mock_anthropic_server.py, mock_openai_responses_server.py and
mock_openai_server.py are run by the e2e tests as
`/usr/bin/python3 <server>.py SOLUTION_FILE PORT_FILE LOG [FIRST_SOLUTION_FILE]`
and import from here: the reading of those arguments, kgym's feedback
heading, the text of a message's content, a base request handler (HTTP/1.1,
silent, JSON answers, one JSON line per request in LOG) and the serving
loop (127.0.0.1 on a free port, written to PORT_FILE once it accepts
connections). Standard library only.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FEEDBACK = "## Verification of your previous candidate"


def read(path):
    with open(path) as f:
        return f.read()


def scripted_args():
    """(solution, port_file, log, first) from the command line.

    first is the content of FIRST_SOLUTION_FILE, None when it is not given.
    """
    solution = read(sys.argv[1])
    first = read(sys.argv[4]) if len(sys.argv) > 4 else None
    return solution, sys.argv[2], sys.argv[3], first


def text_of(content):
    """All text of a system prompt or message content (string or blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class MockHandler(BaseHTTPRequestHandler):
    """A silent HTTP/1.1 handler; a subclass sets `log` to the LOG path."""
    protocol_version = "HTTP/1.1"
    log = None

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def record(self, entry):
        """Append entry to the log as one JSON line."""
        with open(self.log, "a") as log:
            log.write(json.dumps(entry) + "\n")

    def read_json(self):
        """The JSON body of the request ({} when it is empty)."""
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"{}")


def serve(handler_class, port_file):
    """Serve forever on 127.0.0.1 on a free port, written to port_file once listening."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_class)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()
