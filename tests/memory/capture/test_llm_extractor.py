"""The LLM extractor against a fake OpenAI-compatible server the test starts on 127.0.0.1
(R-EXTRACT): the request it sends, a good answer, a 500, a timeout, non-JSON content, a fenced
answer, and the loose validation of what the model says."""

import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory.capture.base import ExtractionContext, ExtractorError, MessageView, NodeView
from memory.capture.extractors import extractor_for_settings
from memory.capture.llm_client import LLMConfig
from memory.capture.llm_extractor import LLMExtractor
from memory.capture.rules import RuleExtractor

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
AVOID = {"operation": "create", "explicit_user_intent": True, "reason": "用户明确要求记录长期饮食偏好",
         "node": {"scope": "user", "domain": "生活技能", "category_path": ["生活技能", "做饭", "饮食偏好"],
                  "type": "preference", "key": "avoid_ingredient", "value_json": "香菜", "title": "用户不吃香菜",
                  "source_message_ids": [41]}}


class FakeChat:
    """A chat-completions endpoint answering from a script: each entry is (status, body,
    delay in seconds); requests are recorded."""

    def __init__(self):
        self.script: list[tuple[int, str, float]] = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "body": json.loads(self.rfile.read(length))})
                status, body, delay = fake.script.pop(0) if fake.script else (500, "no answer scripted", 0)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body.encode())
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def answer(self, content, *, status: int = 200, delay: float = 0.0) -> None:
        """Script one completion whose message content is `content` (a dict becomes JSON)."""
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        body = json.dumps({"id": "c1", "object": "chat.completion", "model": "fake",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}]})
        self.script.append((status, body, delay))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def chat():
    fake = FakeChat()
    yield fake
    fake.close()


def extractor(chat, **options) -> LLMExtractor:
    return LLMExtractor(LLMConfig(base_url=chat.base_url, model="fake-model", api_key="sk-test"), **options)


def context(existing=()) -> ExtractionContext:
    messages = (MessageView(id=41, role="user", content="以后做饭别给我推荐香菜，我喜欢少油少辣。", created_at=NOW),
                MessageView(id=42, role="assistant", content="记住了。", created_at=NOW))
    return ExtractionContext(messages=messages, existing=tuple(existing), workspace_id="home", user_id="xiaoming",
                             session_id="cook-1", now=NOW)


def test_a_good_answer_becomes_the_extraction(chat):
    chat.answer({"operations": [AVOID]})
    extraction = extractor(chat).extract(context())
    assert extraction.extractor == "llm" and extraction.notes == []
    assert extraction.operations == [{**AVOID, "reason": "llm: 用户明确要求记录长期饮食偏好"}]


def test_the_request_carries_the_seed_prompt_the_window_and_the_key(chat):
    chat.answer({"operations": []})
    existing = NodeView(id=7, scope="user", type="preference", domain="生活技能", key="avoid_ingredient",
                        value_json="香菜", title="用户不吃香菜", content="")
    extractor(chat).extract(context([existing]))
    [request] = chat.requests
    body = request["body"]
    assert request["path"] == "/v1/chat/completions" and request["headers"]["Authorization"] == "Bearer sk-test"
    assert body["model"] == "fake-model" and body["response_format"] == {"type": "json_object"}
    system, user = (message["content"] for message in body["messages"])
    assert '{"operations": [<operation>, ...]}' in system and "avoid_ingredient" in system and "flavor_profile" in system
    assert "少辣 → {\"spicy\": \"low\"}" in system and "from now on" in system
    window = json.loads(user)
    assert window["now"] == NOW.isoformat() and window["has_workspace"] is True
    assert [message["id"] for message in window["messages"]] == [41, 42]
    assert window["active_memories"][0] == {"id": 7, "scope": "user", "type": "preference", "domain": "生活技能",
                                            "key": "avoid_ingredient", "value_json": "香菜", "title": "用户不吃香菜"}


def test_a_server_error_is_an_extractor_error(chat):
    chat.answer({"operations": []}, status=500)
    with pytest.raises(ExtractorError, match="500"):
        extractor(chat).extract(context())


def test_a_slow_endpoint_times_out_as_an_extractor_error(chat):
    chat.answer({"operations": []}, delay=1.0)
    started = time.monotonic()
    with pytest.raises(ExtractorError, match="Timeout"):
        extractor(chat, timeout=0.2).extract(context())
    assert time.monotonic() - started < 0.9


def test_content_that_is_not_json_is_an_extractor_error(chat):
    chat.answer("Sure! The user dislikes coriander.")
    with pytest.raises(ExtractorError, match="no JSON object"):
        extractor(chat).extract(context())


def test_an_answer_without_an_operations_list_is_an_extractor_error(chat):
    chat.answer({"memories": "none"})
    with pytest.raises(ExtractorError, match="no list of operations"):
        extractor(chat).extract(context())


def test_a_fenced_json_answer_is_read(chat):
    chat.answer("```json\n" + json.dumps({"operations": [AVOID]}, ensure_ascii=False) + "\n```")
    assert extractor(chat).extract(context()).operations[0]["node"]["value_json"] == "香菜"


def test_the_seed_shape_with_camel_case_nodes_is_read(chat):
    chat.answer({"summaryPatch": "…", "nodes": [
        {"operation": "create", "explicitUserIntent": True, "reason": "r",
         "node": {"type": "preference", "key": "flavor_profile", "valueJson": "少油少辣", "sourceMessageIds": [41]}},
        {"operation": "ignore", "node": {}},
    ]})
    extraction = extractor(chat).extract(context())
    assert extraction.operations == [{"operation": "create", "explicit_user_intent": True, "reason": "llm: r",
                                      "node": {"type": "preference", "key": "flavor_profile", "value_json": "少油少辣",
                                               "source_message_ids": [41]}}]
    assert extraction.notes == ["operations[1] dropped: operation 'ignore'"]


def test_loose_validation_drops_what_cannot_be_a_proposal(chat):
    chat.answer({"operations": [
        "remember coriander",
        {"node": {"type": "fact", "title": "no operation"}},
        {"operation": "create", "node": {"title": "no type"}},
        {"operation": "supersede", "target_id": 999, "node": {"title": "not shown"}},
        {"operation": "supersede", "target_id": "7", "confirm": True, "workspace_id": "elsewhere",
         "node": {"value_json": "葱", "source_message_ids": [41, "42", 5, 41], "session_id": "x"}},
        {"operation": "expire", "target_id": 7, "explicit_user_intent": "yes", "node": {"title": "ignored"}},
    ]})
    existing = NodeView(id=7, scope="user", type="preference", domain="生活技能", key="avoid_ingredient",
                        value_json="香菜", title="用户不吃香菜", content="")
    extraction = extractor(chat).extract(context([existing]))
    assert extraction.operations == [
        {"operation": "supersede", "explicit_user_intent": False, "reason": "llm: ", "target_id": 7,
         "node": {"value_json": "葱", "source_message_ids": [41, 42]}},
        {"operation": "expire", "explicit_user_intent": False, "reason": "llm: ", "target_id": 7},
    ]
    assert len(extraction.notes) == 5 and "source ids outside the window dropped" in extraction.notes[-1]


def test_an_empty_window_asks_nothing(chat):
    empty = ExtractionContext(messages=(), existing=(), workspace_id="", user_id="", session_id="s", now=NOW)
    assert extractor(chat).extract(empty).operations == [] and chat.requests == []


def test_the_settings_choose_the_extractor(settings, chat):
    settings.MEMORY_LLM_BASE_URL = ""
    assert isinstance(extractor_for_settings(), RuleExtractor)
    settings.MEMORY_LLM_BASE_URL = chat.base_url + "/"
    settings.MEMORY_LLM_MODEL = "fake-model"
    chosen = extractor_for_settings()
    assert isinstance(chosen, LLMExtractor) and chosen.config.base_url == chat.base_url and chosen.name == "llm"
