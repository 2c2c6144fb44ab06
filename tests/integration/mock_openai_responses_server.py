#!/usr/bin/python3
"""A scripted OpenAI Responses API server for the Codex integration test.

POST /v1/responses (streamed as server-sent events, or not):
  * a request that offers the `apply_patch` tool and whose last input item
    is the user's prompt (not a tool output) gets one call of it: a patch
    that adds model_new.py with the content of the stored solution given on
    the command line (a custom_tool_call when the tool is a freeform one, a
    function_call with {"input": patch} when it is a function) — or, with
    FIRST_SOLUTION given (refinement rounds), adds FIRST_SOLUTION until a
    user message holds kgym's feedback ("## Verification of your previous
    candidate"), then replaces it with the solution;
  * any other request (after the tool output, or a side request) gets a
    short text message.
  Every answer reports usage of 1000 input (200 of them cached) and 50
  output tokens.
GET /v1/models lists one model; any other path gets a 404. Every request is
appended to LOG as one JSON line. Listens on 127.0.0.1 on a free port and
writes the port to PORT_FILE once it accepts connections.

Each logged request says whether its input holds kgym's feedback
("feedback") and an earlier apply_patch call of this server ("earlier_turn":
the session was continued).

usage: mock_openai_responses_server.py SOLUTION_FILE PORT_FILE LOG [FIRST_SOLUTION_FILE]
"""
import json
import time

from mock_api import FEEDBACK, MockHandler, scripted_args, serve, text_of

SOLUTION, PORT_FILE, LOG, FIRST = scripted_args()
USAGE = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 200},
         "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1050}


def patch_adding(path, text):
    lines = text.splitlines()
    return "\n".join(["*** Begin Patch", f"*** Add File: {path}"] + ["+" + line for line in lines] +
                     ["*** End Patch"]) + "\n"


def patch_replacing(path, old, new):
    lines = ["*** Begin Patch", f"*** Update File: {path}", "@@"]
    lines += ["-" + line for line in old.splitlines()] + ["+" + line for line in new.splitlines()]
    return "\n".join(lines + ["*** End Patch"]) + "\n"


def is_prompt(item):
    return isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == "user"


def tool_named(tools, name):
    for tool in tools or []:
        if tool.get("name") == name or tool.get("function", {}).get("name") == name:
            return tool
    return None


class Handler(MockHandler):
    log = LOG

    def not_found(self):
        self.send_json(404, {"error": {"message": f"{self.path} is not mocked", "type": "invalid_request_error"}})

    def do_GET(self):
        self.record({"method": "GET", "path": self.path})
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            return self.send_json(200, {"object": "list", "data": [{"id": "kgym-mock", "object": "model"}]})
        self.not_found()

    def do_POST(self):
        request = self.read_json()
        items = request.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        tools = request.get("tools") or []
        entry = {"method": "POST", "path": self.path, "model": request.get("model"),
                 "stream": bool(request.get("stream")),
                 "tools": [f"{t.get('type')}:{t.get('name') or t.get('function', {}).get('name')}" for t in tools],
                 "input_items": [i.get("type", "message") for i in items if isinstance(i, dict)]}
        if not self.path.split("?")[0].endswith("/responses"):
            self.record(dict(entry, answer="404"))
            return self.not_found()
        patch_tool = tool_named(tools, "apply_patch")
        call = patch_tool is not None and bool(items) and is_prompt(items[-1])
        feedback = any(is_prompt(i) and FEEDBACK in text_of(i.get("content")) for i in items)
        earlier = any(isinstance(i, dict) and i.get("type") in ("custom_tool_call", "function_call") and
                      i.get("name") == "apply_patch" for i in items)
        self.record(dict(entry, answer="tool_call" if call else "text", feedback=feedback, earlier_turn=earlier))
        n = len(items)
        if call:
            if FIRST is None:
                patch = patch_adding("model_new.py", SOLUTION)
            elif not feedback:
                patch = patch_adding("model_new.py", FIRST)
            else:
                patch = patch_replacing("model_new.py", FIRST, SOLUTION)
            if patch_tool.get("type") == "custom":
                item = {"type": "custom_tool_call", "id": f"ctc_kgym_{n}", "status": "completed",
                        "call_id": f"call_kgym_{n}", "name": "apply_patch", "input": patch}
            else:
                item = {"type": "function_call", "id": f"fc_kgym_{n}", "status": "completed",
                        "call_id": f"call_kgym_{n}", "name": "apply_patch", "arguments": json.dumps({"input": patch})}
        else:
            item = {"type": "message", "id": f"msg_kgym_{n}", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "model_new.py is written.", "annotations": []}]}
        response = {"id": f"resp_kgym_{n}", "object": "response", "created_at": int(time.time()),
                    "status": "completed", "model": request.get("model", "kgym-mock"),
                    "output": [item], "usage": USAGE}
        if not request.get("stream"):
            return self.send_json(200, response)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        started = dict(response, status="in_progress", output=[], usage=None)
        events = [{"type": "response.created", "response": started},
                  {"type": "response.in_progress", "response": started}]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            opening = dict(item, status="in_progress", content=[])
            part = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "output_index": 0, "content_index": 0}
            events += [{"type": "response.output_item.added", "output_index": 0, "item": opening},
                       dict(ids, type="response.content_part.added", part=part),
                       dict(ids, type="response.output_text.delta", delta=text),
                       dict(ids, type="response.output_text.done", text=text),
                       dict(ids, type="response.content_part.done", part=dict(part, text=text))]
        else:
            events.append({"type": "response.output_item.added", "output_index": 0,
                           "item": dict(item, status="in_progress")})
        events += [{"type": "response.output_item.done", "output_index": 0, "item": item},
                   {"type": "response.completed", "response": response}]
        for number, event in enumerate(events):
            event["sequence_number"] = number
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    serve(Handler, PORT_FILE)
