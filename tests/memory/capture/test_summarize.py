"""The summary chain (R-EXTRACT; seed 000 链式摘要; scenarios S16, S20): the rule-based and
LLM summarizers, and summary_roll, which appends what they write."""

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from memory.capture.base import ExtractorError, MessageView, SummaryDraft
from memory.capture.llm_client import LLMConfig
from memory.capture.llm_summarizer import LLMSummarizer
from memory.capture.summarize import RuleSummarizer, summarizer_for_settings
from memory.capture.summary_fit import LIST_FIELDS, clip
from memory.capture.summary_roll import summary_roll
from memory.errors import NotFound
from memory.limits import SUMMARY_LIST_ITEM_MAX, SUMMARY_LIST_ITEMS_MAX
from memory.management.commands.replay import locomo_turns
from memory.models import AuditEvent, Message, Session, Summary
from memory.services.messages import MessageInput, messages_append
from memory.services.sessions import SessionRef
from tests.helpers import append

DEMO = Path(settings.BASE_DIR) / "demo" / "cooking_zh.json"
LOCOMO = Path(settings.SHARED_DATA_DIR) / "locomo" / "locomo5.json"
NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)

COOKING_EN = [
    ("user", "From now on don't give me cilantro when I cook, I hate it. I prefer low oil and not spicy."),
    ("assistant", "Got it: no cilantro, low oil, mild."),
    ("user", "What should I cook tonight?"),
    ("assistant", "Tomato and egg stir-fry: quick, little oil, no cilantro, not spicy."),
    ("user", "Cilantro is fine now, but not too much."),
    ("assistant", "OK, a little cilantro from now on."),
    ("user", "What should I cook tonight?"),
    ("assistant", "Tofu with a pinch of cilantro, and stir-fried greens with little oil."),
]


def views(*turns: tuple[str, str], speaker: str = "") -> tuple[MessageView, ...]:
    return tuple(MessageView(id=index + 1, role=role, content=content, created_at=NOW, speaker=speaker)
                 for index, (role, content) in enumerate(turns))


# The rule summarizer: budget and order


def test_a_rule_summary_reads_forward_even_when_compressed():
    messages = views(*[("user", f"第{n}件事：{'细节' * 20}。") for n in range(1, 21)])
    draft = RuleSummarizer().summarize(None, messages, max_chars=200)
    assert draft.summary.startswith("用户：第1件事") and draft.summary.endswith("细节。")
    assert draft.summary.index("第1件事") < draft.summary.index("第20件事")


def test_an_over_budget_text_keeps_its_first_line_shrinks_older_lines_and_marks_the_cut():
    previous = SummaryDraft(summary="\n".join([
        "Caroline: Hey Mel! Good to see you!",
        *[f"Melanie: Thanks! Day {n} was a long day of painting sunsets by the lake with the kids." for n in range(8)],
    ]))
    draft = RuleSummarizer().summarize(previous, views(("user", "Now tell me about the adoption interview.")),
                                       max_chars=300)
    lines = draft.summary.splitlines()
    assert len(draft.summary) <= 300
    assert lines[0] == "Caroline: Hey Mel! Good to see you!" and lines[1] == "…"
    assert lines[-1] == "User: Now tell me about the adoption interview."
    assert all(len(line) <= 80 for line in lines[2:-1])


def test_a_cut_mark_of_an_earlier_roll_stays_in_place():
    summarizer = RuleSummarizer()
    previous = None
    for n in range(12):
        previous = summarizer.summarize(previous, views(("user", f"Topic {n}: {'words ' * 15}")), max_chars=400)
    lines = previous.summary.splitlines()
    assert lines[0].startswith("User: Topic 0:") and lines[1] == "…" and lines.count("…") == 1
    assert lines[-1].startswith("User: Topic 11:")


def test_clip_keeps_whole_sentences_and_does_not_break_a_decimal():
    assert clip("第一句话。第二句很长很长很长很长很长。", 10) == "第一句话。"
    assert clip("Version 3.5 is out. The rest follows here.", 25) == "Version 3.5 is out."
    assert clip("one two three four five six", 12) == "one two…"
    assert len(clip("x" * 50, 10)) == 10


LONG_TURNS = [
    ("user", "我们在做一个记忆服务，必须支持中文和英文，预算有限，只能用 PostgreSQL 和 Redis。" * 3),
    ("assistant", "We decided to go with Django and Celery. The first migration is done. " * 3),
    ("user", "I prefer short answers. I still need to write the README and the deployment notes. " * 3),
    ("assistant", "登录页面报错了，日志里有 500 错误，需要排查。这是一个已知问题。" * 3),
]


def test_a_rule_summary_stays_within_max_chars_over_many_rolls():
    summarizer = RuleSummarizer()
    previous = None
    for _ in range(6):
        previous = summarizer.summarize(previous, views(*LONG_TURNS), max_chars=200)
        assert 0 < len(previous.summary) <= 200
        for name in LIST_FIELDS:
            items = getattr(previous, name)
            assert len(items) <= SUMMARY_LIST_ITEMS_MAX
            assert all(0 < len(item) <= SUMMARY_LIST_ITEM_MAX for item in items)
    assert previous.summary.startswith("用户：我们在做一个记忆服务") and "…" in previous.summary


def test_a_tiny_budget_still_gives_a_short_non_empty_summary():
    draft = RuleSummarizer().summarize(None, views(*LONG_TURNS), max_chars=12)
    assert 0 < len(draft.summary) <= 12


def test_a_budget_below_one_character_is_refused():
    with pytest.raises(ValueError):
        RuleSummarizer().summarize(None, views(("user", "hi")), max_chars=0)


def test_carried_over_items_are_deduplicated_and_the_newest_kept():
    previous = SummaryDraft(summary="older", preferences=[f"旧偏好{n}" for n in range(SUMMARY_LIST_ITEMS_MAX)]
                            + ["我喜欢少油少辣"])
    draft = RuleSummarizer().summarize(previous, views(("user", "我喜欢少油少辣！"), ("user", "我不吃香菜。")),
                                       max_chars=200)
    assert len(draft.preferences) == SUMMARY_LIST_ITEMS_MAX
    assert draft.preferences[-2:] == ["我喜欢少油少辣", "我不吃香菜"]
    assert draft.preferences.count("我喜欢少油少辣") == 1
    assert "旧偏好0" not in draft.preferences and "旧偏好1" not in draft.preferences


# Cues


def test_the_seed_conversation_gives_its_preferences_and_last_question():
    turns = [(turn["role"], turn["content"]) for turn in json.loads(DEMO.read_text(encoding="utf-8"))["turns"]]
    summarizer = RuleSummarizer()
    first = summarizer.summarize(None, views(*turns[:4]), max_chars=1000)
    draft = summarizer.summarize(first, views(*turns[4:]), max_chars=1000)
    assert any("香菜" in item and "别给我" in item for item in draft.preferences)
    assert any("少油少辣" in item for item in draft.preferences)
    assert any("香菜现在可以接受一点" in item for item in draft.preferences)
    assert draft.current_goal == "今晚吃什么？"
    assert draft.summary.index("别给我推荐香菜") < draft.summary.index("香菜拌豆腐")


def test_the_english_cooking_conversation_gives_its_preferences_and_last_question():
    draft = RuleSummarizer().summarize(None, views(*COOKING_EN), max_chars=1000)
    assert any("cilantro" in item and "hate" in item for item in draft.preferences)
    assert any("low oil" in item for item in draft.preferences)
    assert draft.current_goal == "What should I cook tonight?"


def test_cues_fill_every_list_in_chinese_and_english():
    draft = RuleSummarizer().summarize(None, views(
        ("user", "我对花生过敏。我们决定用 PostgreSQL。迁移已经完成了。还要写部署文档。登录页面报错了。"),
        ("user", "I'm allergic to peanuts. We decided to go with Redis. The migration is done. "
                 "I still need to write the docs. The login page doesn't work."),
    ), max_chars=1000)
    assert draft.constraints == ["我对花生过敏", "I'm allergic to peanuts"]
    assert draft.decisions == ["我们决定用 PostgreSQL", "We decided to go with Redis"]
    assert draft.completed_work == ["迁移已经完成了", "The migration is done"]
    assert draft.pending_work == ["还要写部署文档", "I still need to write the docs"]
    assert draft.known_issues == ["登录页面报错了", "The login page doesn't work"]


def test_questions_and_an_unnamed_assistant_give_no_preferences():
    draft = RuleSummarizer().summarize(None, views(
        ("user", "Do you like spicy food?"), ("assistant", "I love spicy food."), ("user", "你喜欢吃辣吗？"),
    ), max_chars=1000)
    assert draft.preferences == [] and draft.constraints == []


def test_named_speakers_label_the_lines_and_their_items():
    draft = RuleSummarizer().summarize(None, (
        MessageView(id=1, role="user", content="I love painting sunsets.", created_at=NOW, speaker="Caroline"),
        MessageView(id=2, role="assistant", content="I prefer pottery.", created_at=NOW, speaker="Melanie"),
    ), max_chars=1000)
    assert draft.summary == "Caroline: I love painting sunsets.\nMelanie: I prefer pottery."
    assert draft.preferences == ["Caroline: I love painting sunsets", "Melanie: I prefer pottery"]


def test_a_window_without_a_user_question_keeps_the_previous_goal():
    previous = SummaryDraft(summary="用户：今晚吃什么？", current_goal="今晚吃什么？")
    draft = RuleSummarizer().summarize(previous, views(("user", "香菜现在可以接受一点，但不要太多。")), max_chars=500)
    assert draft.current_goal == "今晚吃什么？"


# The LLM summarizer, against a local fake endpoint


class FakeChat(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - the http.server hook
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "body": body})
        status, payload = self.server.reply
        data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_llm():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    server.requests = []
    server.reply = (200, {})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def answer(content) -> dict:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def llm(server) -> LLMSummarizer:
    return LLMSummarizer(LLMConfig(base_url=f"http://127.0.0.1:{server.server_port}/v1", model="fake"), timeout=5)


def test_the_llm_summarizer_sends_the_previous_summary_and_new_messages_only(fake_llm):
    fake_llm.reply = (200, answer({
        "summary": "用户不吃香菜，喜欢少油少辣；问今晚吃什么。", "currentGoal": "今晚吃什么？",
        "preferences": ["不吃香菜", "少油少辣"], "constraints": [], "decisions": [], "completedWork": [],
        "pendingWork": ["推荐晚饭"], "knownIssues": [],
    }))
    previous = SummaryDraft(summary="用户：以后做饭别给我推荐香菜。", preferences=["不吃香菜"])
    draft = llm(fake_llm).summarize(previous, views(("user", "我喜欢少油少辣。"), ("user", "今晚吃什么？")),
                                    max_chars=300)
    assert draft == SummaryDraft(summary="用户不吃香菜，喜欢少油少辣；问今晚吃什么。", current_goal="今晚吃什么？",
                                 preferences=["不吃香菜", "少油少辣"], pending_work=["推荐晚饭"])
    request = fake_llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    sent = json.loads(request["body"]["messages"][1]["content"])
    assert sent["previousSummary"]["summary"] == "用户：以后做饭别给我推荐香菜。"
    assert [m["content"] for m in sent["newMessages"]] == ["我喜欢少油少辣。", "今晚吃什么？"]
    assert "300" in request["body"]["messages"][0]["content"]


def test_the_llm_summarizer_raises_on_a_server_error(fake_llm):
    fake_llm.reply = (500, {"error": "boom"})
    with pytest.raises(ExtractorError):
        llm(fake_llm).summarize(None, views(("user", "hi")), max_chars=300)


def test_the_llm_summarizer_raises_on_an_answer_that_is_not_json(fake_llm):
    fake_llm.reply = (200, answer("Sure! Here is your summary: the user said hi."))
    with pytest.raises(ExtractorError):
        llm(fake_llm).summarize(None, views(("user", "hi")), max_chars=300)


@pytest.mark.parametrize("reply", [{"currentGoal": "x"}, {"summary": "  "}, {"summary": "ok", "preferences": "spicy"}])
def test_the_llm_summarizer_raises_on_a_missing_summary_or_a_field_of_the_wrong_type(fake_llm, reply):
    fake_llm.reply = (200, answer(reply))
    with pytest.raises(ExtractorError):
        llm(fake_llm).summarize(None, views(("user", "hi")), max_chars=300)


def test_the_llm_summarizer_clips_oversized_fields(fake_llm):
    fake_llm.reply = (200, answer({
        "summary": "很长的摘要。" * 1000, "currentGoal": "g" * 5000,
        "preferences": [f"偏好{n}" * 300 for n in range(80)], "knownIssues": ["bad\u0000item", 7, None],
    }))
    draft = llm(fake_llm).summarize(None, views(("user", "hi")), max_chars=300)
    assert 0 < len(draft.summary) <= 300
    assert len(draft.current_goal) <= SUMMARY_LIST_ITEM_MAX
    assert len(draft.preferences) == SUMMARY_LIST_ITEMS_MAX
    assert all(len(item) <= SUMMARY_LIST_ITEM_MAX for item in draft.preferences)
    assert draft.preferences[-1].startswith("偏好79")
    assert draft.known_issues == ["baditem"]


def test_the_llm_summarizer_carries_over_lists_the_model_left_out(fake_llm):
    fake_llm.reply = (200, answer({"summary": "更新后的摘要。"}))
    previous = SummaryDraft(summary="旧摘要。", current_goal="今晚吃什么？", preferences=["不吃香菜"])
    draft = llm(fake_llm).summarize(previous, views(("user", "好的。")), max_chars=300)
    assert draft.preferences == ["不吃香菜"] and draft.current_goal == "今晚吃什么？"


def test_settings_choose_the_llm_summarizer_only_with_an_endpoint(settings):
    settings.MEMORY_LLM_BASE_URL = ""
    assert isinstance(summarizer_for_settings(), RuleSummarizer)
    settings.MEMORY_LLM_BASE_URL = "http://127.0.0.1:9/v1/"
    settings.MEMORY_LLM_MODEL = "qwen"
    chosen = summarizer_for_settings()
    assert isinstance(chosen, LLMSummarizer) and chosen.name == "llm"
    assert chosen.config.base_url == "http://127.0.0.1:9/v1" and chosen.config.model == "qwen"


# summary_roll: the chain in the database


def session_of(principal, session_id: str = "s1") -> Session:
    return Session.objects.get(team=principal.team, external_id=session_id)


def chain(session: Session) -> list[Summary]:
    return list(Summary.objects.filter(session=session).order_by("pk"))


def assert_chain_covers_every_message_once(session: Session) -> list[Summary]:
    summaries = chain(session)
    ids = list(Message.objects.filter(session=session).order_by("pk").values_list("pk", flat=True))
    covered = [pk for summary in summaries for pk in ids if summary.from_message_id <= pk <= summary.to_message_id]
    assert covered == ids
    assert summaries[0].parent_id is None and summaries[0].from_message_id == ids[0]
    for before, after in zip(summaries, summaries[1:], strict=False):
        assert after.parent_id == before.pk
        assert after.from_message_id == min(pk for pk in ids if pk > before.to_message_id)
    assert summaries[-1].to_message_id == ids[-1]
    return summaries


@dataclass
class JoiningSummarizer:
    """S20's stub: the new messages joined by "|", nothing else."""

    name: str = "join"

    def summarize(self, previous, messages, *, max_chars):
        return SummaryDraft(summary="|".join(message.content for message in messages)[:max_chars])


@dataclass
class SpySummarizer:
    """Records what each call received, then lets the rule summarizer answer."""

    name: str = "spy"
    calls: list[tuple[SummaryDraft | None, tuple[int, ...]]] = field(default_factory=list)

    def summarize(self, previous, messages, *, max_chars):
        self.calls.append((previous, tuple(message.id for message in messages)))
        return RuleSummarizer().summarize(previous, messages, max_chars=max_chars)


# S20: server order, whatever the client's clock says


def test_s20_summaries_follow_server_order_with_contiguous_ranges(principal):
    early = timezone.now() - timedelta(days=1)
    first = append(principal, "m1:你好", "m2:点一碗面", "m3:改成米饭")
    s1 = summary_roll(principal=principal, session=session_of(principal), summarizer=JoiningSummarizer(),
                      max_chars=500)
    second = append(principal, "m4", "m5") + append(principal, "m6:late", occurred_at=early)
    s2 = summary_roll(principal=principal, session=session_of(principal), summarizer=JoiningSummarizer(),
                      max_chars=500)
    assert s1.summary == "m1:你好|m2:点一碗面|m3:改成米饭"
    assert s2.summary == "m4|m5|m6:late"
    assert s2.parent_id == s1.pk
    assert (s1.from_message_id, s1.to_message_id) == (first[0].pk, first[2].pk)
    assert (s2.from_message_id, s2.to_message_id) == (second[0].pk, second[2].pk)


def test_s20_a_late_client_timestamp_does_not_move_a_message_forward_in_the_rule_summary(principal):
    append(principal, "我想先聊聊面条。", "然后看看米饭。")
    append(principal, "最后说说饺子。", occurred_at=timezone.now() - timedelta(days=3))
    summary = summary_roll(principal=principal, session=session_of(principal), summarizer=RuleSummarizer(),
                           max_chars=500)
    text = summary.summary
    assert text.index("面条") < text.index("米饭") < text.index("饺子")


# The chain: previous summary plus the new messages only


def test_three_rolls_make_a_linked_chain_each_from_the_previous_summary_and_new_messages(principal):
    spy = SpySummarizer()
    windows = []
    for start in (1, 4, 7):
        windows.append([m.pk for m in append(principal, *[f"第{n}条消息" for n in range(start, start + 3)])])
        summary_roll(principal=principal, session=session_of(principal), summarizer=spy, max_chars=1000)
    summaries = assert_chain_covers_every_message_once(session_of(principal))
    assert len(summaries) == 3
    assert [ids for _, ids in spy.calls] == [tuple(window) for window in windows]
    assert spy.calls[0][0] is None
    assert spy.calls[1][0].summary == summaries[0].summary
    assert spy.calls[2][0].summary == summaries[1].summary
    assert "第1条消息" in summaries[2].summary and "第9条消息" in summaries[2].summary


def test_a_roll_is_audited_as_a_summary_append(principal):
    append(principal, "hello")
    summary = summary_roll(principal=principal, session=session_of(principal), summarizer=RuleSummarizer(),
                           max_chars=300)
    event = AuditEvent.objects.get(event_type="memory.summary.appended")
    assert event.payload["summary_id"] == summary.pk


def test_a_roll_with_nothing_new_returns_none(principal):
    append(principal, "m1")
    session = session_of(principal)
    assert summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=300)
    assert summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=300) is None
    assert Summary.objects.count() == 1


def test_a_roll_reads_at_most_max_messages_and_leaves_the_rest_for_the_next(principal):
    append(principal, "m1", "m2", "m3", "m4", "m5")
    session = session_of(principal)
    while summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=300,
                       max_messages=2):
        pass
    summaries = assert_chain_covers_every_message_once(session)
    assert [s.to_message_id - s.from_message_id + 1 for s in summaries] == [2, 2, 1]


def test_a_roll_never_puts_a_system_message_into_the_summary(principal):
    """Found by a newcomer: the agent's system prompt ("Internal discount code STAFF-90 is never
    to be revealed") was copied into the summary and so into every later block. The range
    still covers it; a window of system messages alone appends nothing."""
    append(principal, "You are ShopBot. Internal discount code STAFF-90 is never to be revealed.", role="system")
    append(principal, "I like Nike running shoes.", "Which size fits me?")
    append(principal, "Also never mention STAFF-90.", role="system")
    session = session_of(principal)
    for summarizer in (RuleSummarizer(), JoiningSummarizer()):
        Summary.objects.all().delete()
        summary = summary_roll(principal=principal, session=session, summarizer=summarizer, max_chars=1000)
        assert "STAFF-90" not in summary.summary and "ShopBot" not in summary.summary
        assert "Nike" in summary.summary
        ids = list(Message.objects.filter(session=session).order_by("pk").values_list("pk", flat=True))
        assert (summary.from_message_id, summary.to_message_id) == (ids[0], ids[2])  # the trailing one waits
    append(principal, "System check.", role="system")
    assert summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=1000) is None
    append(principal, "Thanks!")
    summary = summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=1000)
    assert summary.from_message_id == ids[3] and "STAFF-90" not in summary.summary and "Thanks" in summary.summary
    assert_chain_covers_every_message_once(session)


def test_a_roll_that_loses_a_race_returns_none_and_keeps_the_chain_linear(principal):
    append(principal, "m1", "m2")
    session = session_of(principal)

    @dataclass
    class Racing:
        name: str = "racing"

        def summarize(self, previous, messages, *, max_chars):
            summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=max_chars)
            return SummaryDraft(summary="too late")

    assert summary_roll(principal=principal, session=session, summarizer=Racing(), max_chars=300) is None
    assert [s.summary for s in chain(session)] == ["User: m1\nUser: m2"]


def test_a_forgotten_session_is_not_summarised(principal):
    append(principal, "m1")
    Session.objects.filter(external_id="s1").update(deleted_at=timezone.now())
    assert summary_roll(principal=principal, session=session_of(principal), summarizer=RuleSummarizer(),
                        max_chars=300) is None


def test_another_teams_session_is_not_found(principal, other_principal):
    append(principal, "m1")
    with pytest.raises(NotFound):
        summary_roll(principal=other_principal, session=session_of(principal), summarizer=RuleSummarizer(),
                     max_chars=300)
    assert Summary.objects.count() == 0


def test_a_roll_fits_an_oversized_draft_into_the_limits(principal):
    append(principal, "m1")

    @dataclass
    class Verbose:
        name: str = "verbose"

        def summarize(self, previous, messages, *, max_chars):
            return SummaryDraft(summary="x" * 5000, preferences=["p" * 5000] * 2 + [f"p{n}" for n in range(60)])

    summary = summary_roll(principal=principal, session=session_of(principal), summarizer=Verbose(), max_chars=100)
    assert len(summary.summary) <= 100
    assert len(summary.preferences) == SUMMARY_LIST_ITEMS_MAX and summary.preferences[-1] == "p59"


def test_a_roll_through_the_llm_summarizer_appends_its_summary(principal, fake_llm):
    append(principal, "以后做饭别给我推荐香菜。")
    fake_llm.reply = (200, answer({"summary": "用户不吃香菜。", "preferences": ["不吃香菜"]}))
    summary = summary_roll(principal=principal, session=session_of(principal), summarizer=llm(fake_llm),
                           max_chars=300)
    assert summary.summary == "用户不吃香菜。" and summary.preferences == ["不吃香菜"]


def test_a_failed_llm_roll_appends_nothing(principal, fake_llm):
    append(principal, "hi")
    fake_llm.reply = (500, {})
    with pytest.raises(ExtractorError):
        summary_roll(principal=principal, session=session_of(principal), summarizer=llm(fake_llm), max_chars=300)
    assert Summary.objects.count() == 0


# A real conversation


@pytest.mark.skipif(not LOCOMO.exists(), reason="the shared LoCoMo data is not present (set MEMORY_SHARED_DATA)")
def test_a_locomo_conversation_rolled_every_8_messages_is_covered_once(principal):
    """The whole of conv-26 in one session (the replay splits it by LoCoMo session; one chain
    over all of it is the harder case for the budget)."""
    sample = next(item for item in json.loads(LOCOMO.read_text(encoding="utf-8")) if item["sample_id"] == "conv-26")
    turns = locomo_turns(sample)
    ref = SessionRef(session_id="conv-26", workspace_id="locomo", user_id="conv-26")
    session = None
    for start in range(0, len(turns), 8):
        messages_append(principal=principal, messages=[
            MessageInput(session=ref, role=turn["role"], content=turn["content"], metadata=turn["metadata"],
                         occurred_at=datetime.fromisoformat(turn["occurred_at"]))
            for turn in turns[start:start + 8]
        ])
        session = session or Session.objects.get(external_id="conv-26")
        assert summary_roll(principal=principal, session=session, summarizer=RuleSummarizer(), max_chars=2000)
    summaries = assert_chain_covers_every_message_once(session)
    assert len(summaries) == -(-len(turns) // 8)
    final = summaries[-1]
    assert len(final.summary) <= 2000 and final.summary.startswith("Caroline: ")
    print(f"\nLoCoMo conv-26: {len(turns)} messages, {len(summaries)} summaries; final summary "
          f"{len(final.summary)} characters, lists "
          + ", ".join(f"{name} {len(getattr(final, name))}" for name in LIST_FIELDS)
          + f"\n{final.summary}\ngoal: {final.current_goal}")


def test_a_goal_that_was_only_a_statement_moves_on_with_the_conversation():
    previous = SummaryDraft(summary="用户：你好", current_goal="你好")
    draft = RuleSummarizer().summarize(previous, views(("user", "我在准备周末的露营")), max_chars=500)
    assert draft.current_goal == "我在准备周末的露营"


@dataclass
class ForgetOnce:
    """Joins the messages (JoiningSummarizer), after running `forget` on its first call: a forget
    committed while the summarizer was reading."""

    forget: object
    name: str = "forget-once"
    calls: int = 0

    def summarize(self, previous, messages, *, max_chars):
        self.calls += 1
        if self.calls == 1:
            self.forget()
        text = "|".join(message.content for message in messages)
        return SummaryDraft(summary=((previous.summary + "|") if previous and previous.summary else "") + text)


def test_a_forget_made_while_the_summarizer_reads_the_window_keeps_its_turn_out_of_the_summary(principal, settings):
    """The summarizer runs outside any lock (an LLM may take seconds): a forget that hid a turn of
    the window meanwhile found no summary to strip, and the roll then appended one quoting the
    turn. The roll now reads the window again and drafts anew without the turn."""
    from memory.selectors.nodes import Owner
    from memory.services.forgetting import ForgetSelector, memory_forget
    from tests.memory.capture.test_rules_apply import capture

    settings.MEMORY_CAPTURE_THREADS = False
    owner = {"session_id": "s1", "workspace_id": "w1", "user_id": "u1"}
    [said], _ = capture(principal, "记住，我对花生过敏", owner=owner)
    append(principal, "今晚吃什么？", **owner)
    asked = said.node_links.get().node_id
    summarizer = ForgetOnce(lambda: memory_forget(principal=principal, mode="hard", reason="the user asked", confirm=True,
                                                  selector=ForgetSelector(owner=Owner(**owner), node_id=asked)))
    summary = summary_roll(principal=principal, session=session_of(principal), summarizer=summarizer, max_chars=500)
    assert (summarizer.calls, summary.summary) == (2, "今晚吃什么？")


def test_a_forget_that_strips_the_previous_summary_meanwhile_is_not_carried_on(principal, settings):
    """A review's find: the summarizer read the previous summary before a forget stripped it, and
    the next link carried the forgotten sentence on."""
    from memory.selectors.nodes import Owner
    from memory.services.forgetting import ForgetSelector, memory_forget
    from tests.memory.capture.test_rules_apply import capture

    settings.MEMORY_CAPTURE_THREADS = False
    owner = {"session_id": "s1", "workspace_id": "w1", "user_id": "u1"}
    [said], _ = capture(principal, "记住，我对花生过敏", owner=owner)
    session = session_of(principal)
    summary_roll(principal=principal, session=session, summarizer=JoiningSummarizer(), max_chars=500)
    append(principal, "今晚吃什么？", **owner)
    asked = said.node_links.get().node_id
    summarizer = ForgetOnce(lambda: memory_forget(principal=principal, mode="hard", reason="the user asked", confirm=True,
                                                  selector=ForgetSelector(owner=Owner(**owner), node_id=asked)))
    summary = summary_roll(principal=principal, session=session, summarizer=summarizer, max_chars=500)
    assert summarizer.calls == 2 and "花生" not in summary.summary and "今晚吃什么" in summary.summary
