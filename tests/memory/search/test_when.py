"""Dates a question names (memory.search.when) and the time-aware ranking of earlier turns
they drive (memory.selectors.messages; issue 7, docs/retrieval.md)."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from memory.search.engine import Scored
from memory.search.when import MAX_PERIODS, Period, in_periods, mentioned_periods
from memory.selectors.messages import DATE_MATCH_SHARE, _in_named_periods, messages_search
from memory.selectors.nodes import Owner
from tests.helpers import append


@pytest.mark.parametrize(("text", "expected"), [
    ("What painting did Melanie show to Caroline on October 13, 2023?", [Period(2023, 10, 13)]),
    ("What did Gina find for her clothing store on 1 February, 2023?", [Period(2023, 2, 1)]),
    ("the 3rd of March 2024", [Period(2024, 3, 3)]),
    ("What workout class did Maria start in December 2023?", [Period(2023, 12)]),
    ("When did Melanie go camping in June?", [Period(None, 6)]),
    ("Sept. 9", [Period(None, 9, 9)]),
    ("How many times has Melanie gone to the beach in 2023?", [Period(2023)]),
    ("see 2023-05-03 and 2024-01", [Period(2023, 5, 3), Period(2024, 1)]),
    ("他2023年5月去了哪里？", [Period(2023, 5)]),
    ("五月三号我们聊了什么？", [Period(None, 5, 3)]),
    ("十二月二十五日的晚会", [Period(None, 12, 25)]),
    ("２０２３年１０月３１日", [Period(2023, 10, 31)]),  # full-width digits fold first
    ("on 2 May 2023, or the 3rd of May", [Period(2023, 5, 2), Period(None, 5, 3)]),
    ("2023/5/3 和 2023.05.04", [Period(2023, 5, 3), Period(2023, 5, 4)]),
    ("on 13/10/2023 or 10/14/2023", [Period(2023, 10, 13), Period(2023, 10, 14)]),
    ("What did I say on 3/3/2024?", [Period(2024, 3, 3)]),  # day and month alike: both readings agree
    ("What did we plan in mid-June?", [Period(None, 6)]),
])
def test_explicit_days_months_and_years_are_found_in_both_languages(text, expected):
    assert mentioned_periods(text) == expected


@pytest.mark.parametrize("text", [
    "May I ask what you did?", "I march every morning", "We met 13 times", "call 2023 people", "", "昨天去了哪里",
    "room 1999", "13月40日", "Which 2 may I bring?", "top 10 may help", "3/5/2023", "release 2023.10",
])
def test_words_that_only_look_like_dates_name_no_period(text):
    assert mentioned_periods(text) == []


def test_a_long_list_of_dates_is_not_a_question_about_a_time():
    many = ", ".join(f"{month} 2023" for month in ("January", "February", "March", "April", "June", "July", "August",
                                                    "September", "October"))
    assert len(many.split(",")) > MAX_PERIODS
    assert mentioned_periods(many) == []


def test_a_period_reaches_a_week_past_its_end_and_a_year_less_period_any_year():
    june = [Period(None, 6)]
    assert in_periods(date(2023, 6, 1), june) and in_periods(date(2021, 6, 30), june)
    assert in_periods(datetime(2023, 7, 7, 23, tzinfo=UTC), june)  # said within a week of June's end
    assert not in_periods(date(2023, 7, 8), june) and not in_periods(date(2023, 5, 30), june)
    day = [Period(2023, 10, 13)]
    assert in_periods(date(2023, 10, 13), day) and in_periods(date(2023, 10, 20), day)
    assert not in_periods(date(2023, 10, 11), day) and not in_periods(date(2023, 10, 21), day)
    assert not in_periods(date(2024, 10, 13), day)
    assert not in_periods(date(2023, 3, 1), [Period(2023, 2, 30)])  # no such day
    assert in_periods(date(2024, 1, 5), [Period(None, 12)])  # said early in January about December
    assert in_periods(date(2023, 10, 12), day)  # a morning east of UTC is the previous UTC day
    assert in_periods(date(9999, 12, 31), [Period(None, 12, 31)])  # the last day there is: no overflow
    assert in_periods(date(1, 1, 1), [Period(None, 1)]) and not in_periods(date(1, 1, 1), [Period(None, 12)])
    assert not in_periods(None, june) and not in_periods(date(2023, 6, 1), [])


def _said(principal, text: str, when: datetime, session_id: str):
    return append(principal, text, session_id=session_id, user_id="mel", workspace_id="home", occurred_at=when)[0]


def test_a_turn_said_in_the_named_month_outranks_an_equal_newer_one(principal):
    june = _said(principal, "We went camping at the lake.", datetime(2023, 6, 20, tzinfo=UTC), "s-june")
    september = _said(principal, "We went camping at the lake!", datetime(2023, 9, 2, tzinfo=UTC), "s-sept")
    owner = Owner(user_id="mel", workspace_id="home")

    def order(query: str) -> list[int]:
        return [hit.message.pk for hit in messages_search(principal=principal, session=None, owner=owner,
                                                          query_text=query, limit=5)]

    assert order("Where did we go camping?") == [september.pk, june.pk]  # equal scores: newest first
    assert order("Where did we go camping in June?") == [june.pk, september.pk]
    assert order("Where did we go camping in September 2023?") == [september.pk, june.pk]
    assert order("我们六月去哪里露营了？ camping") == [june.pk, september.pk]


def test_a_named_date_never_brings_a_turn_that_does_not_match_the_words(principal):
    matching = _said(principal, "We went camping at the lake.", datetime(2023, 9, 2, tzinfo=UTC), "s-sept")
    _said(principal, "The weather was fine.", datetime(2023, 6, 20, tzinfo=UTC), "s-june")
    found = messages_search(principal=principal, session=None, owner=Owner(user_id="mel", workspace_id="home"),
                            query_text="camping in June", limit=5)
    assert [hit.message.pk for hit in found] == [matching.pk]


def test_a_long_query_is_read_for_dates_in_its_latest_characters_only():
    early = "We met in June 2021. " + "Then we talked about other things. " * 40
    assert len(early) > 1000
    assert mentioned_periods(early) == []
    assert mentioned_periods(early + "What did we do in May 2023?") == [Period(2023, 5)]


def test_a_turn_in_the_named_period_scores_exactly_the_share_more_and_no_other_changes():
    def hits():
        return [Scored(pk=1, score=2.0, matched=("camp",), values={"occurred_at": None,
                                                                   "created_at": datetime(2023, 6, 3, tzinfo=UTC)}),
                Scored(pk=2, score=2.5, matched=("camp",), values={"occurred_at": datetime(2023, 9, 1, tzinfo=UTC),
                                                                   "created_at": datetime(2023, 6, 3, tzinfo=UTC)})]

    june = mentioned_periods("camping in June?")
    ranked = _in_named_periods(hits(), june, None)  # pk 1 by its created_at; pk 2 by its occurred_at
    assert [(item.pk, item.score) for item in ranked] == [(1, 2.0 * (1 + DATE_MATCH_SHARE)), (2, 2.5)]
    assert [(item.pk, item.score) for item in _in_named_periods(hits(), [], None)] == [(1, 2.0), (2, 2.5)]


def test_a_strong_match_outside_the_period_still_beats_a_weak_one_inside(principal):
    strong = _said(principal, "The camping trip to the lake with the kids, tent and canoe.",
                   datetime(2023, 9, 2, tzinfo=UTC), "s-sept")
    weak = _said(principal, "We talked about the weather.", datetime(2023, 6, 20, tzinfo=UTC), "s-june")
    found = messages_search(principal=principal, session=None, owner=Owner(user_id="mel", workspace_id="home"),
                            query_text="the camping trip to the lake with the kids, the tent and the canoe, "
                                       "and the weather, in June", limit=5)
    assert [hit.message.pk for hit in found] == [strong.pk, weak.pk]


def test_an_early_morning_turn_east_of_utc_counts_for_its_local_day(principal):
    shanghai = timezone(timedelta(hours=8))
    morning = _said(principal, "我们去了西湖划船。", datetime(2023, 5, 3, 7, 30, tzinfo=shanghai), "s-1")
    later = _said(principal, "我们去了西湖散步。", datetime(2023, 5, 20, 12, tzinfo=shanghai), "s-2")
    found = messages_search(principal=principal, session=None, owner=Owner(user_id="mel", workspace_id="home"),
                            query_text="五月三号我们去西湖做什么？", limit=5)
    assert [hit.message.pk for hit in found] == [morning.pk, later.pk]


def test_a_turn_dated_at_the_end_of_time_does_not_break_the_search(principal):
    far = _said(principal, "December plans: skiing.", datetime(9999, 12, 31, 12, tzinfo=UTC), "s-far")
    found = messages_search(principal=principal, session=None, owner=Owner(user_id="mel", workspace_id="home"),
                            query_text="What were our skiing plans in December?", limit=5)
    assert [hit.message.pk for hit in found] == [far.pk]
