"""A question that names a time and little else finds what was said then (R-QUERY, R-CTX;
memory.selectors.messages._said_in_periods, memory.search.when.period_spans)."""

from datetime import UTC, date, datetime, timedelta
from unittest import mock
from zoneinfo import ZoneInfo

from memory.search.when import DayRange, Period, period_spans
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.messages import messages_search
from memory.selectors.nodes import Owner
from memory.selectors.retrievals import explain_item
from memory.services.forget import session_forget
from memory.services.sessions import SessionRef
from tests.helpers import append

OWNER = Owner(workspace_id="home", user_id="mel")


def said(principal, text, when, session_id, user_id="mel"):
    return append(principal, text, session_id=session_id, user_id=user_id, workspace_id="home", occurred_at=when)[0]


def search(principal, query, *, limit=10, now=None, zone=None, owner=OWNER, session=None):
    return messages_search(principal=principal, session=session, owner=owner, query_text=query, limit=limit,
                           now=now, zone=zone)


def test_a_question_naming_only_a_day_gets_the_longest_turns_said_that_day_in_the_order_said(principal):
    short = said(principal, "Hi Mel!", datetime(2023, 5, 8, 9, tzinfo=UTC), "s-may")
    long = said(principal, "I finally signed up for the pottery class downtown.", datetime(2023, 5, 8, 9, 5, tzinfo=UTC),
                "s-may")
    later = said(principal, "We did our taxes together, it took all evening long.",
                 datetime(2023, 5, 14, tzinfo=UTC), "s-later")  # within the week a named day is talked about
    said(principal, "The garden is full of tomatoes now.", datetime(2023, 7, 1, tzinfo=UTC), "s-july")
    hits = search(principal, "What did we talk about on May 8, 2023?")
    assert [(hit.message.pk, hit.why, hit.matched) for hit in hits] == [(short.pk, "said_then", ()),
                                                                        (long.pk, "said_then", ())]
    assert later.pk not in [hit.message.pk for hit in hits]
    assert [hit.message.pk for hit in search(principal, "What did we talk about on May 8, 2023?", limit=1)] \
        == [long.pk]  # the longest of the day


def test_turns_said_then_come_before_the_words_hits_from_other_times(principal):
    """A question's words ("talk", "聊", a year's digits) are found all over a conversation."""
    for number in range(7):
        said(principal, f"Let us talk about the weather, number {number}.", datetime(2025, 1, 1 + number, tzinfo=UTC),
             "s-2025")
    that_day = said(principal, "My sister visited us with her twins.", datetime(2023, 5, 8, tzinfo=UTC), "s-may")
    hits = search(principal, "What did we talk about on May 8, 2023?")
    assert (hits[0].message.pk, hits[0].why) == (that_day.pk, "said_then")
    assert len(hits) == 8 and {hit.why for hit in hits[1:]} == {"relevant"}
    assert [hit.message.pk for hit in search(principal, "What did we talk about on May 8, 2023?", limit=1)] \
        == [that_day.pk]


def test_a_hit_of_the_words_in_the_period_keeps_its_place_and_the_turns_said_then_follow_it(principal):
    camping_then = said(principal, "We went camping at the lake.", datetime(2023, 5, 8, 8, tzinfo=UTC), "s-may")
    that_day = said(principal, "My sister visited us with her twins.", datetime(2023, 5, 8, 9, tzinfo=UTC), "s-may")
    camping_later = said(principal, "Camping again next summer, at the lake with a canoe and a tent!",
                         datetime(2023, 9, 2, tzinfo=UTC), "s-sept")
    hits = search(principal, "Did we go camping on May 8, 2023?")
    assert [(hit.message.pk, hit.why) for hit in hits] == [(camping_then.pk, "relevant"), (that_day.pk, "said_then"),
                                                           (camping_later.pk, "relevant")]


def test_a_chinese_question_naming_a_date_or_yesterday_finds_the_turns_of_that_day(principal):
    that_day = said(principal, "下午带孩子去游乐场玩了两个小时", datetime(2024, 3, 3, 7, tzinfo=UTC), "s-1")
    said(principal, "晚饭做了红烧肉", datetime(2024, 2, 20, 11, tzinfo=UTC), "s-2")
    assert [hit.message.pk for hit in search(principal, "2024年3月3日聊了什么？")] == [that_day.pk]
    now = datetime(2024, 3, 4, 12, tzinfo=UTC)
    assert [hit.message.pk for hit in search(principal, "昨天说过什么？", now=now, zone=ZoneInfo("Asia/Shanghai"))] \
        == [that_day.pk]
    # a day named without a year: the latest such day (this year's or last year's)
    assert [hit.message.pk for hit in search(principal, "3月3日聊了什么？", now=datetime(2025, 1, 10, tzinfo=UTC))] \
        == [that_day.pk]
    assert search(principal, "3月3日聊了什么？", now=datetime(2026, 1, 10, tzinfo=UTC)) == []


def test_turns_said_then_keep_to_the_callers_reach(principal, other_principal):
    day = datetime(2023, 5, 8, 10, tzinfo=UTC)
    mine = said(principal, "I bought a new bike.", day, "s-mine")
    said(principal, "Another user's turn that day.", day, "s-other", user_id="jon")
    said(principal, "A turn of a deleted conversation.", day, "s-gone")
    session_forget(principal=principal, ref=SessionRef("s-gone", "home", "mel"), mode="soft")
    append(other_principal, "Another team's turn that day.", session_id="s-mine", user_id="mel", workspace_id="home",
           occurred_at=day)
    append(principal, "Another workspace's turn that day.", session_id="s-w2", user_id="mel", workspace_id="w2",
           occurred_at=day)
    hits = search(principal, "What happened on May 8, 2023?")
    assert [hit.message.pk for hit in hits] == [mine.pk]
    # a caller without an end user reaches its own session only
    hits = search(principal, "What happened on May 8, 2023?", owner=Owner(), session=mine.session)
    assert [hit.message.pk for hit in hits] == [mine.pk]


def test_the_recent_window_is_not_repeated_and_a_question_without_a_time_or_words_finds_nothing(principal):
    day = datetime(2023, 5, 8, 10, tzinfo=UTC)
    first = said(principal, "We planned the trip to Kyoto.", day, "s-1")
    second = said(principal, "We booked the hotel near the station.", day + timedelta(minutes=1), "s-1")
    hits = messages_search(principal=principal, session=None, owner=OWNER, query_text="What happened on May 8, 2023?",
                           limit=10, exclude_ids={second.pk})
    assert [hit.message.pk for hit in hits] == [first.pk]
    assert search(principal, "what?") == []


def test_the_context_block_shows_and_explains_the_turns_said_then(principal):
    turn = said(principal, "I adopted a cat called Miso.", datetime(2023, 5, 8, 10, tzinfo=UTC), "s-old")
    context = context_build(principal=principal, request=ContextRequest(
        owner=Owner(workspace_id="home", user_id="mel", session_id="s-new"), query="What happened on 8 May 2023?"))
    assert "- [2023-05-08] user: I adopted a cat called Miso." in context.block
    refs = [item.ref for item in context.items if item.section == "earlier_messages"]
    assert [(ref["id"], ref["why"]) for ref in refs] == [(turn.pk, "said_then")]
    assert explain_item(refs[0]) == "said at the time the query names"


def test_period_spans_are_the_moments_in_periods_accepts():
    day = Period(2023, 5, 8)
    assert period_spans([day], datetime(2024, 1, 1, tzinfo=UTC)) == [
        (datetime(2023, 5, 7, tzinfo=UTC), datetime(2023, 5, 16, tzinfo=UTC))]  # a day's lead, a week after
    shanghai = ZoneInfo("Asia/Shanghai")
    assert period_spans([day], datetime(2024, 1, 1, tzinfo=UTC), shanghai) == [
        (datetime(2023, 5, 7, 16, tzinfo=UTC), datetime(2023, 5, 15, 16, tzinfo=UTC))]
    yesterday = DayRange(date(2024, 3, 3), date(2024, 3, 3))
    assert period_spans([yesterday], datetime(2024, 3, 4, tzinfo=UTC), shanghai) == [
        (datetime(2024, 3, 2, 16, tzinfo=UTC), datetime(2024, 3, 3, 16, tzinfo=UTC))]
    assert period_spans([Period(None, 3, 3)], datetime(2025, 1, 10, tzinfo=UTC), shanghai) == [
        (datetime(2025, 3, 2, 16, tzinfo=UTC), datetime(2025, 3, 10, 16, tzinfo=UTC)),
        (datetime(2024, 3, 2, 16, tzinfo=UTC), datetime(2024, 3, 10, 16, tzinfo=UTC))]
    assert period_spans([Period(None, 2, 29)], datetime(2026, 1, 1, tzinfo=UTC)) == []  # no 29 February in 2025/2026


def test_period_spans_at_the_ends_of_the_calendar_do_not_overflow():
    edges = [Period(1, 1, 1), DayRange(date(1, 1, 1), date(1, 1, 1)), DayRange(date.max, date.max)]
    for zone in (None, ZoneInfo("Pacific/Kiritimati"), ZoneInfo("America/Los_Angeles")):
        spans = period_spans(edges, date.max, zone)
        assert len(spans) == 3 and all(start <= end for start, end in spans)


def test_a_date_only_question_through_the_context_call_does_not_read_its_own_clock(principal):
    turn = said(principal, "We painted the fence blue.", datetime(2023, 6, 20, 18, tzinfo=UTC), "s-june")
    owner = Owner(workspace_id="home", user_id="mel", session_id="new")
    with mock.patch("memory.selectors.context_gather.timezone", **{"now.return_value": datetime(2023, 6, 21, tzinfo=UTC)}):
        context = context_build(principal=principal, request=ContextRequest(owner=owner, query="what did we do yesterday?"))
    assert [item.obj.pk for item in context.items if item.section == "earlier_messages"] == [turn.pk]
    assert [item.obj.pk for item in context_build(principal=principal, request=ContextRequest(
        owner=owner, query="what did we do yesterday?")).items if item.section == "earlier_messages"] == []


def test_a_turn_said_then_that_asks_something_keeps_its_reason_beside_its_follow_up(principal):
    asked = said(principal, "Shall we paint the fence this weekend?", datetime(2023, 6, 10, 9, tzinfo=UTC), "s-jun")
    reply = said(principal, "Yes, let us buy the paint on Saturday.", datetime(2023, 6, 10, 9, 1, tzinfo=UTC), "s-jun")
    hits = search(principal, "June 10, 2023?")
    assert [(hit.message.pk, hit.why) for hit in hits][:1] == [(asked.pk, "said_then")]
    assert hits[0].followup is not None and hits[0].followup.pk == reply.pk


def test_turns_of_the_week_after_a_named_day_do_not_keep_out_the_turns_said_that_day(principal):
    for day in range(9, 14):
        said(principal, f"Let us talk about the weather again, day {day}.", datetime(2023, 5, day, tzinfo=UTC), "s-week")
    that_day = said(principal, "We planted basil and mint.", datetime(2023, 5, 8, 10, tzinfo=UTC), "s-may")
    hits = search(principal, "What did we talk about on May 8, 2023?", limit=5, zone=UTC)
    assert (hits[0].message.pk, hits[0].why) == (that_day.pk, "said_then")


def test_without_a_time_zone_the_turns_of_the_named_utc_day_come_before_those_of_the_day_before(principal):
    said(principal, "A long turn of the evening before, about the garden and the roses and the fence.",
         datetime(2023, 5, 7, 12, tzinfo=UTC), "s-7")
    that_day = said(principal, "We planted basil.", datetime(2023, 5, 8, 9, tzinfo=UTC), "s-8")
    hits = search(principal, "What did we talk about on May 8, 2023?", limit=1)
    assert [hit.message.pk for hit in hits] == [that_day.pk]


def test_a_new_session_asking_what_was_said_today_gets_todays_turns_from_the_other_sessions(principal):
    """An agent that starts a new session and asks what was talked about today (R-QUERY)."""
    now = datetime(2025, 6, 11, 18, tzinfo=UTC)
    said(principal, "Yesterday's long plan: paint the fence, then the shed, then the gate.",
         datetime(2025, 6, 10, 12, tzinfo=UTC), "s-tue")
    morning = said(principal, "We booked the dentist for Friday at nine.", datetime(2025, 6, 11, 9, tzinfo=UTC), "s-am")
    noon = said(principal, "Lunch was the noodle place by the river.", datetime(2025, 6, 11, 12, tzinfo=UTC), "s-noon")
    asked = said(principal, "Hello again!", now - timedelta(minutes=1), "s-new")
    new = Owner(workspace_id="home", user_id="mel", session_id="s-new")
    for question in ("What did we talk about today?", "我们今天聊了什么？", "总结一下今天聊的"):
        hits = search(principal, question, now=now, zone=UTC)
        assert [(hit.message.pk, hit.why) for hit in hits] == [
            (morning.pk, "said_then"), (noon.pk, "said_then"), (asked.pk, "said_then")], question
        with mock.patch("memory.selectors.context_gather.timezone", **{"now.return_value": now}):
            context = context_build(principal=principal, request=ContextRequest(owner=new, query=question,
                                                                                timezone="UTC"))
        assert [(item.obj.pk, item.ref["why"]) for item in context.items if item.section == "earlier_messages"] == [
            (morning.pk, "said_then"), (noon.pk, "said_then")], question  # the new session's own turn is recent
    for statement in ("I feel tired today. Shall we cook noodles?", "我今天和朋友聊了很多"):
        assert "said_then" not in {hit.why for hit in search(principal, statement, now=now, zone=UTC)}, statement


def test_a_question_that_only_mentions_today_keeps_the_older_turns_that_answer_it(principal):
    """Found by a newcomer: today's chatter took every slot before the turn that answers."""
    now = datetime(2026, 11, 30, 18, tzinfo=UTC)
    job = said(principal, "My boss is awful and I hate my job; I am thinking about quitting.",
               datetime(2026, 9, 10, tzinfo=UTC), "s-sep")
    allergy = said(principal, "我对花生严重过敏，任何礼物或零食都不能含花生。", datetime(2026, 9, 11, tzinfo=UTC), "s-sep")
    penicillin = said(principal, "The doctor said I must never take penicillin, it nearly killed me last year.",
                      datetime(2026, 11, 24, tzinfo=UTC), "s-nov")
    drug = said(principal, "医生说我绝对不能吃青霉素，去年差点出事。", datetime(2026, 11, 24, 1, tzinfo=UTC), "s-nov")
    for number in range(8):
        said(principal, f"Chatter number {number} about slow-cooked pork belly with a long and winding story.",
             datetime(2026, 11, 30, 9, number, tzinfo=UTC), f"s-today-{number}")
    for question, answer in (("My boss told me today that I'm fired, what should I do about my job?", job),
                             ("我今天和朋友聊了很多，你觉得什么礼物好？花生的可以吗？", allergy),
                             ("I have a headache today, what did I tell you about penicillin?", penicillin),
                             ("我今天头疼，我跟你说过青霉素能不能吃？", drug),
                             ("I have to ask you something today. What about penicillin?", penicillin)):
        hits = search(principal, question, now=now, zone=UTC, limit=5)
        assert hits[0].message.pk == answer.pk and "said_then" not in {hit.why for hit in hits}, question


def test_what_did_we_talk_about_is_this_conversation_not_other_greetings(principal):
    """A newcomer's: "What did we talk about?" filled the budget with "Hey, long time no talk!"
    from other conversations, and the conversation's own recent turns were dropped."""
    for number in range(6):
        said(principal, f"Hey Mel! Long time no talk, number {number}! What have you talked about lately?",
             datetime(2025, 1, 1 + number, tzinfo=UTC), f"s-old-{number}")
    turns = [said(principal, text, datetime(2025, 6, 11, 9, minute, tzinfo=UTC), "s-now")
             for minute, text in enumerate(["We planned the pottery class for Saturday.",
                                            "And we picked the blue glaze for the bowls."])]
    here = Owner(workspace_id="home", user_id="mel", session_id="s-now")
    for question in ("What did we talk about?", "我们聊了什么？", "Can you recap what we discussed?"):
        context = context_build(principal=principal, request=ContextRequest(owner=here, query=question,
                                                                                   budget={"max_chars": 400}))
        assert [item for item in context.items if item.section == "earlier_messages"] == [], question
        assert sorted(item.obj.pk for item in context.items if item.section == "recent_messages") == [turn.pk for turn in turns]
    # ...a question with words of its own, about more than this conversation, or about what was
    # decided or told, still finds the other conversations' turns
    for question in ("What did we talk about lately?", "Give me a summary of everything we talked about",
                     "What did we talk about before?"):
        context = context_build(principal=principal, request=ContextRequest(owner=here, query=question))
        assert [item for item in context.items if item.section == "earlier_messages"] != [], question
