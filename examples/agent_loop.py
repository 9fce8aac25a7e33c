"""An agent loop on the memory service, end to end (seed 000 默认自动检索 + 按需 Memory Tool;
R-CTX, R-TOOLS, R-API).

Each user turn: append the user's message → fetch the memory context for it → call an
OpenAI-compatible chat model with that context and the memory tools from GET /api/v1/tools →
execute the model's tool calls through memory_client → append the assistant's answer → report
which injected memories the answer used (retrieval feedback, for the KPIs).

    pip install ./clients/python
    MEMORY_API_KEY=mk_... python examples/agent_loop.py "记住，我对花生过敏" "今晚吃什么？"

Environment: MEMORY_URL (default http://127.0.0.1:8000), MEMORY_API_KEY (required),
OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL (any OpenAI-compatible endpoint). Without
OPENAI_BASE_URL the loop starts a small deterministic stand-in model on 127.0.0.1 (standard
library only): asked to remember something ("remember …", "记住…") it calls
memory_propose_update; otherwise it answers from the memories it was given, citing them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from memory_client import Context, MemoryAPIError, MemoryClient, MemoryClientError

DEFAULT_TURNS = ("记住，我对花生过敏", "今晚吃什么？")
MAX_TOOL_ROUNDS = 4
CITE = re.compile(r"\[memory:(\d+)\]")
SYSTEM = """You are a helpful assistant with long-term memory.

What the memory service recalls for this turn:
{block}

Memories you may cite (write [memory:ID] after a sentence that uses one):
{references}

When the user explicitly asks you to remember something, store it with memory_propose_update
(operation "create", scope "user", explicit_user_intent true). Use memory_search or memory_get
to look something up, memory_forget when the user asks you to forget."""


# ---- the stand-in model (used when no OPENAI_BASE_URL is set) ------------------------------

REMEMBER = re.compile(r"^\s*(?:please\s+)?(?:remember|记住|记得)(?:\s+that)?[\s,，:：]*(?P<what>.+?)[\s.。!！]*$",
                      re.IGNORECASE | re.DOTALL)
LISTED = re.compile(r"^\[memory:(\d+)\] -? ?(.*)$", re.MULTILINE)


def _node_type(text: str) -> str:
    if re.search(r"过敏|不吃|不要|allerg|never|don't|do not|avoid", text, re.IGNORECASE):
        return "constraint"
    if re.search(r"喜欢|爱吃|偏好|like|love|prefer", text, re.IGNORECASE):
        return "preference"
    return "fact"


def stand_in_reply(request: dict[str, Any]) -> dict[str, Any]:
    """A chat completion for `request` (OpenAI's shape), decided by rules, never by chance."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {"role": "user", "content": ""}
    user_text = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    chinese = bool(re.search(r"[\u4e00-\u9fff]", user_text))
    tool_names = {tool.get("function", {}).get("name") for tool in request.get("tools") or ()}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    wanted = REMEMBER.match(user_text)
    if last.get("role") == "tool":
        outcome = json.loads(last.get("content") or "{}")
        title = (outcome.get("node") or {}).get("title", "")
        if outcome.get("accepted"):
            message["content"] = f"好的，我记住了：{title}。" if chinese else f"OK, I will remember that: {title}."
        else:
            reason = outcome.get("reason") or (outcome.get("error") or {}).get("code", "error")
            message["content"] = f"这条没能记下（{reason}）。" if chinese else f"I could not store that ({reason})."
    elif wanted and "memory_propose_update" in tool_names:
        what = wanted.group("what").strip()
        if chinese:  # a memory speaks of the user in the third person: 我对花生过敏 → 用户对花生过敏
            what = re.sub(r"^我", "用户", what)
        arguments = {"operation": "create", "explicit_user_intent": True, "reason": "the user asked to remember it",
                     "node": {"scope": "user", "type": _node_type(what), "title": what}}
        message["tool_calls"] = [{"id": f"call_{len(messages)}", "type": "function",
                                  "function": {"name": "memory_propose_update", "arguments": json.dumps(arguments,
                                                                                                       ensure_ascii=False)}}]
    else:
        system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        listed = LISTED.findall(system)[:3]
        if listed:
            lines = [f"{text} [memory:{node_id}]" for node_id, text in listed]
            intro = "我记得这些和你的问题有关：" if chinese else "Here is what I remember that matters:"
            message["content"] = intro + "\n" + "\n".join(f"- {line}" for line in lines)
        else:
            message["content"] = "关于这个我还没有记住什么。" if chinese else "I have nothing stored about that yet."
    return {"id": f"standin-{len(messages)}", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", "stand-in"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}]}


class _StandInHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._answer(404, {"error": {"message": f"no such endpoint: {self.path}"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._answer(400, {"error": {"message": "the body is not JSON"}})
            return
        self._answer(200, stand_in_reply(request))

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the transcript is the output
        pass


def start_stand_in() -> tuple[ThreadingHTTPServer, str]:
    """Serve the stand-in on 127.0.0.1 (a free port) on a daemon thread; returns (server, base URL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandInHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


# ---- the loop ----------------------------------------------------------------------------------


@dataclass
class Turn:
    """What one turn did: message ids, the context call, tool calls and the feedback sent."""

    user_text: str
    user_message_id: int = 0
    retrieval_id: int | None = None
    injected_ids: tuple[int, ...] = ()
    tool_calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    answer: str = ""
    answer_message_id: int = 0
    used_ids: tuple[int, ...] = ()


def system_prompt(context: Context) -> str:
    references = "\n".join(f"[memory:{item.id}] {item.text}" for item in context.items if item.kind == "node")
    return SYSTEM.format(block=context.block or "(nothing yet)", references=references or "(none)")


def run_tool(memory: MemoryClient, name: str, arguments: dict[str, Any], *, who: dict[str, str],
             message_id: int) -> dict[str, Any]:
    """Execute one tool call through the client. The identity is the agent's, never the
    model's: workspace, user and session are set here, and a new memory cites the user's
    message it came from. Refusals and API errors go back to the model as data."""
    methods = {"memory_search": memory.search, "memory_get": memory.get, "memory_propose_update": memory.propose,
               "memory_forget": memory.forget}
    if name not in methods:
        return {"error": {"code": "unknown_tool", "message": f"no tool named {name!r}"}}
    arguments = {**arguments, **who}
    node = arguments.get("node")
    if name == "memory_propose_update" and isinstance(node, dict) and arguments.get("operation") in ("create", "supersede"):
        arguments["node"] = {"source_message_ids": [message_id], **node}
    try:
        return dict(methods[name](**arguments).raw)
    except TypeError as error:
        return {"error": {"code": "bad_arguments", "message": str(error)}}
    except MemoryAPIError as error:
        return {"error": {"code": error.code, "message": error.message, "fields": error.details}}


def chat(llm: httpx.Client, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One chat completion; returns the assistant message (content and/or tool_calls)."""
    response = llm.post("chat/completions", json={"model": model, "messages": messages, "tools": tools})
    response.raise_for_status()
    return response.json()["choices"][0]["message"]


def agent_turn(memory: MemoryClient, llm: httpx.Client, model: str, text: str, *, who: dict[str, str],
               tools: list[dict[str, Any]], say: Any = print) -> Turn:
    """One user turn through the whole cycle; `say` prints the transcript."""
    session = who["session_id"]
    owner = {"workspace_id": who["workspace_id"], "user_id": who["user_id"]}
    turn = Turn(user_text=text)
    say(f"\nuser: {text}")
    turn.user_message_id = memory.append_message(session, "user", text, **owner).ids[0]
    context = memory.context(session, query=text, **owner)
    turn.retrieval_id, turn.injected_ids = context.retrieval_id, context.used_memory_ids
    say(f"  [memory] message {turn.user_message_id} appended; context {turn.retrieval_id}: "
        f"{len(context.block)} characters, memories {list(turn.injected_ids)}")
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(context)},
                                      {"role": "user", "content": text}]
    for _ in range(MAX_TOOL_ROUNDS):
        reply = chat(llm, model, messages, tools)
        calls = reply.get("tool_calls") or []
        if not calls:
            turn.answer = (reply.get("content") or "").strip()
            break
        messages.append({"role": "assistant", "content": reply.get("content"), "tool_calls": calls})
        for call in calls:
            name = call["function"]["name"]
            try:
                arguments = json.loads(call["function"].get("arguments") or "{}")
            except ValueError:
                arguments = {}
            outcome = run_tool(memory, name, arguments, who=who, message_id=turn.user_message_id)
            turn.tool_calls.append((name, arguments, outcome))
            say(f"  [tool] {name} {json.dumps(arguments, ensure_ascii=False)}")
            say(f"         → {_outcome_line(outcome)}")
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                             "content": json.dumps(outcome, ensure_ascii=False, default=str)})
    say(f"assistant: {turn.answer}")
    turn.answer_message_id = memory.append_message(session, "assistant", turn.answer or "(no answer)",
                                                   parent_id=turn.user_message_id, **owner).ids[0]
    cited = {int(node_id) for node_id in CITE.findall(turn.answer)}
    turn.used_ids = tuple(node_id for node_id in turn.injected_ids if node_id in cited)
    if turn.retrieval_id is not None:
        memory.retrieval_feedback(turn.retrieval_id, list(turn.used_ids), helpful=True if turn.used_ids else None)
    say(f"  [memory] answer appended as message {turn.answer_message_id}; feedback: used {list(turn.used_ids)}")
    return turn


def _outcome_line(outcome: dict[str, Any]) -> str:
    if "error" in outcome:
        return f"error {outcome['error'].get('code')}: {outcome['error'].get('message')}"
    if "accepted" in outcome:
        if outcome["accepted"]:
            return f"accepted: node {outcome.get('node_id')} ({'created' if outcome.get('created') else outcome.get('reason')})"
        return f"refused: {outcome.get('reason')} — {outcome.get('message')}"
    return json.dumps(outcome, ensure_ascii=False, default=str)[:200]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run user turns through an agent with memory.")
    parser.add_argument("turns", nargs="*", help=f"user messages, one per turn (default: {' / '.join(DEFAULT_TURNS)})")
    parser.add_argument("--workspace", default="home")
    parser.add_argument("--user", default="xiaoming")
    parser.add_argument("--session", default=f"agent-loop-{time.strftime('%Y%m%d-%H%M%S')}")
    args = parser.parse_args(argv)
    if not os.environ.get("MEMORY_API_KEY"):
        parser.error("set MEMORY_API_KEY (printed by `make run`; or: manage.py create_agent_key demo)")
    base_url, model = os.environ.get("OPENAI_BASE_URL", ""), os.environ.get("OPENAI_MODEL", "")
    stand_in = None
    if not base_url:
        stand_in, base_url = start_stand_in()
        model = model or "stand-in"
    elif not model:
        parser.error("OPENAI_BASE_URL is set: set OPENAI_MODEL too")
    who = {"workspace_id": args.workspace, "user_id": args.user, "session_id": args.session}
    headers = {"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"} if os.environ.get("OPENAI_API_KEY") else {}
    memory_url = os.environ.get("MEMORY_URL", "http://127.0.0.1:8000")
    print(f"memory: {memory_url}  model: {model} at {base_url}{' (local stand-in)' if stand_in else ''}")
    print(f"workspace {args.workspace}, user {args.user}, session {args.session}")
    try:
        with MemoryClient(memory_url) as memory, httpx.Client(base_url=base_url.rstrip("/") + "/", headers=headers,
                                                              timeout=120) as llm:
            tools = list(memory.tools().tools)
            for text in args.turns or DEFAULT_TURNS:
                agent_turn(memory, llm, model, text, who=who, tools=tools)
    except (MemoryClientError, httpx.HTTPError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        if stand_in is not None:
            stand_in.shutdown()
    print(f"\nSee the memories in the dashboard: {memory_url}/ (Memories, user {args.user}).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
