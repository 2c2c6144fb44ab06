#!/usr/bin/python3
"""A scripted Anthropic Messages API server for the Claude Code integration test.

POST /v1/messages (streamed as server-sent events, or not):
  * a request that offers the `Write` tool and whose last message is the
    user's prompt (not a tool_result) gets one tool_use: Write with file_path
    <working directory>/model_new.py (the directory named in the system
    prompt; Claude Code's Write wants an absolute path) and the content of
    the stored solution given on the command line — or, with FIRST_SOLUTION
    given (refinement rounds), of FIRST_SOLUTION until a user message holds
    kgym's feedback ("## Verification of your previous candidate");
  * any other request (after the tool result, or a side request: a title,
    a quota check, a small-model call without tools) gets a short text
    answer.
  Every answer reports usage of 1000 input and 50 output tokens.
POST /v1/messages/count_tokens answers {"input_tokens": 1000}; any other
path gets a 404 in Anthropic's error shape. Every request is appended to LOG
as one JSON line. Listens on 127.0.0.1 on a free port and writes the port to
PORT_FILE once it accepts connections.

Each logged request says whether the conversation holds kgym's feedback
("feedback") and an earlier Write of this server ("earlier_turn": the
session was continued).

usage: mock_anthropic_server.py SOLUTION_FILE PORT_FILE LOG [FIRST_SOLUTION_FILE]
"""
import json
import os
import re

from mock_api import FEEDBACK, MockHandler, scripted_args, serve, text_of

SOLUTION, PORT_FILE, LOG, FIRST = scripted_args()
USAGE = {"input_tokens": 1000, "output_tokens": 50}


def is_prompt(message):
    """A user message that is a prompt, not a tool_result."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    return not (isinstance(content, list) and
                any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content))


def earlier_write(messages):
    return any(m.get("role") == "assistant" and isinstance(m.get("content"), list) and
               any(isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Write"
                   for b in m["content"])
               for m in messages)


def working_directory(request):
    texts = [text_of(request.get("system"))] + [text_of(m.get("content")) for m in request.get("messages", [])]
    for text in texts:
        found = re.search(r"[Ww]orking directory:\s*(/\S+)", text)
        if found:
            return found.group(1)
    return None


def write_schema(tools):
    for tool in tools or []:
        if tool.get("name") == "Write":
            return tool.get("input_schema", {})
    return None


class Handler(MockHandler):
    log = LOG

    def not_found(self):
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"{self.path} is not mocked"}})

    def do_GET(self):
        self.record({"method": "GET", "path": self.path, "answer": "404"})
        self.not_found()

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        request = self.read_json()
        path = self.path.split("?")[0]
        tools = [t.get("name") for t in request.get("tools") or []]
        messages = request.get("messages", [])
        entry = {"method": "POST", "path": self.path, "model": request.get("model"),
                 "stream": bool(request.get("stream")), "tools": tools, "messages": len(messages)}
        if path.endswith("/messages/count_tokens"):
            self.record(dict(entry, answer="count"))
            return self.send_json(200, {"input_tokens": 1000})
        if not path.endswith("/messages"):
            self.record(dict(entry, answer="404"))
            return self.not_found()
        schema = write_schema(request.get("tools"))
        cwd = working_directory(request)
        call = schema is not None and cwd is not None and bool(messages) and is_prompt(messages[-1])
        feedback = any(m.get("role") == "user" and FEEDBACK in text_of(m.get("content")) for m in messages)
        entry.update(answer="tool_use" if call else "text", cwd=cwd,
                     write_input=sorted((schema or {}).get("properties", {})),
                     feedback=feedback, earlier_turn=earlier_write(messages))
        self.record(entry)
        if call:
            content = FIRST if FIRST is not None and not feedback else SOLUTION
            block = {"type": "tool_use", "id": f"toolu_kgym_{len(messages)}", "name": "Write",
                     "input": {"file_path": os.path.join(cwd, "model_new.py"), "content": content}}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": "model_new.py is written."}
            stop = "end_turn"
        model = request.get("model", "claude-mock")
        message = {"id": f"msg_kgym_{len(messages)}", "type": "message", "role": "assistant", "model": model,
                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": USAGE}
        if not request.get("stream"):
            return self.send_json(200, message)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        start = dict(message, content=[], stop_reason=None, usage={"input_tokens": USAGE["input_tokens"], "output_tokens": 1})
        if block["type"] == "tool_use":
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events = [("message_start", {"type": "message_start", "message": start}),
                  ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
                  ("ping", {"type": "ping"}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": USAGE["output_tokens"]}}),
                  ("message_stop", {"type": "message_stop"})]
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    serve(Handler, PORT_FILE)
