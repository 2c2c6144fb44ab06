#!/usr/bin/python3
"""A scripted OpenAI-compatible chat server for the opencode integration test.

POST /v1/chat/completions (streamed or not):
  * a request with tools whose conversation has no tool result yet gets one
    tool call: `write` with filePath model_new.py and the content of the
    stored solution given on the command line;
  * any other request (after the tool result, or a title/summary request
    without tools) gets a short text answer.
Every request is appended to LOG as one JSON line. Listens on 127.0.0.1 on a
free port and writes the port to PORT_FILE once it accepts connections.

usage: mock_openai_server.py SOLUTION_FILE PORT_FILE LOG
"""
import json
import time

from mock_api import MockHandler, scripted_args, serve

SOLUTION, PORT_FILE, LOG, _ = scripted_args()


def has_tool_result(messages):
    return any(m.get("role") == "tool" for m in messages)


def tool_name(tools, wanted):
    """The name of the tool the client calls `wanted` (exact, else by suffix)."""
    names = [t.get("function", {}).get("name", "") for t in tools or []]
    for name in names:
        if name == wanted:
            return name
    for name in names:
        if name.lower().endswith(wanted):
            return name
    return None


class Handler(MockHandler):
    log = LOG

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self.send_json(200, {"object": "list", "data": [{"id": "kgym-mock", "object": "model"}]})
        self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        request = self.read_json()
        messages = request.get("messages", [])
        write = tool_name(request.get("tools"), "write")
        call = write is not None and not has_tool_result(messages)
        self.record({"path": self.path, "tools": [t.get("function", {}).get("name") for t in request.get("tools") or []],
                     "messages": len(messages), "answer": "tool_call" if call else "text"})
        if not self.path.endswith("/chat/completions"):
            return self.send_json(404, {"error": {"message": "not found"}})
        usage = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}
        created = int(time.time())
        if call:
            arguments = json.dumps({"filePath": "model_new.py", "content": SOLUTION})
            delta = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": "call_kgym_1", "type": "function", "function": {"name": write, "arguments": arguments}}]}
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": "model_new.py is written."}
            finish = "stop"
        if not request.get("stream"):
            message = {k: v for k, v in delta.items() if v is not None}
            if call:
                message["content"] = None
            return self.send_json(200, {"id": "chatcmpl-kgym", "object": "chat.completion", "created": created,
                                        "model": request.get("model", "kgym-mock"),
                                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                        "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        base = {"id": "chatcmpl-kgym", "object": "chat.completion.chunk", "created": created,
                "model": request.get("model", "kgym-mock")}
        chunks = [dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
                  dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]),
                  dict(base, choices=[], usage=usage)]
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    serve(Handler, PORT_FILE)
