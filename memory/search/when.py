"""Dates a question names, for time-aware recall of conversation turns (issue 7; R-QUERY).

"What did Maria donate in December 2023?", "What painting did Melanie show on October 13,
2023?", "他2023年5月去了哪里？", "五月三号我们聊了什么？": `mentioned_periods` finds the calendar
periods a query names explicitly — a day, a month or a year, in English or Chinese — and
`in_periods` tells whether a moment falls in one of them. Relative words (yesterday, last
week) are not dates here: they are matched as words (memory.search.text.temporal_expansions).

A turn is said on or after the day it talks about ("yesterday I went …" is said the next day),
so a period reaches TALKED_ABOUT_DAYS past its end; and it starts a day early, because moments
are compared by their UTC date and a turn said early in the morning east of UTC (up to +14 h) is
stored on the day before. A month or a day named without a year is that month or day of any year.
"""

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime

from memory.search.text import normalize

TALKED_ABOUT_DAYS = 7  # a turn about a day is said within a week of it
LEAD_DAYS = 1  # UTC dates: a local morning east of UTC is the previous UTC day
MAX_PERIODS = 8  # a query naming more dates than this is a list, not a question about a time
SCAN_CHARS = 500  # of a long query (a conversation), its latest characters are read for dates

_MONTHS = {name: number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name[:3]: number for name, number in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTHS = {name.casefold(): number for name, number in _MONTHS.items()}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# A month named alone is a month only after a word that introduces a time: "in May", not "May I".
_MONTH_CUE = r"(?:(?:in|during|since|until|till|by|of|early|late|mid|last|this|next|before|after|around|from)\s+|mid-)"

_ENGLISH = [
    re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR}\b)?"),  # October 13, 2023 / October 13
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?:,?\s+{_YEAR}\b)?"),  # 13 October 2023 / 1 February, 2023
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b"),  # December 2023
    re.compile(rf"\b{_MONTH_CUE}{_MONTH}\b"),  # in June
    re.compile(rf"\b(?:in|during|since|of)\s+{_YEAR}\b"),  # in 2023
    # 2023-05-03 / 2023-05, 2023/5/3 / 2023/5, 2023.5.3 (not 2023.5: a version number)
    re.compile(r"\b(?P<year>(?:19|20)\d\d)(?P<sep>[-/])(?P<month>0?[1-9]|1[0-2])(?:(?P=sep)(?P<day>[12]\d|3[01]|0?[1-9]))?\b"),
    re.compile(r"\b(?P<year>(?:19|20)\d\d)\.(?P<month>0?[1-9]|1[0-2])\.(?P<day>[12]\d|3[01]|0?[1-9])\b"),
    # 13/10/2023 or 10/13/2023: read only when one of the two numbers can only be the day
    re.compile(r"\b(?P<first>[12]\d|3[01]|0?[1-9])/(?P<second>[12]\d|3[01]|0?[1-9])/(?P<year>(?:19|20)\d\d)\b"),
]
_CN_NUMBER = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
              "十一": 11, "十二": 12}
_CN_MONTH = r"(?P<month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_CN_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9]|三十一?|二?十[一二三四五六七八九]?|[一二三四五六七八九])"
_CHINESE = [
    # 2023年5月3日 / 五月三号 / 5月; not the tail of a longer number ("13月")
    re.compile(rf"(?<![\d一二三四五六七八九十])(?:(?P<year>(?:19|20)\d\d)年)?{_CN_MONTH}月(?:{_CN_DAY}[日号])?"),
    re.compile(r"(?<!\d)(?P<year>(?:19|20)\d\d)年"),  # 2023年
]


@dataclass(frozen=True)
class Period:
    """A calendar period a query names: `year`, `month`, `day` (None: not named)."""

    year: int | None
    month: int | None = None
    day: int | None = None

    def contains(self, moment: date) -> bool:
        """Whether `moment` (a UTC date) falls in the period, from LEAD_DAYS before it to
        TALKED_ABOUT_DAYS after it (day numbers, so no date arithmetic can overflow)."""
        day = moment.toordinal()
        for year in (moment.year, moment.year - 1) if self.year is None else (self.year,):
            start, end = self._bounds(year)
            if start is not None and start.toordinal() - LEAD_DAYS <= day <= end.toordinal() + TALKED_ABOUT_DAYS:
                return True
        return False

    def _bounds(self, year: int) -> tuple[date | None, date]:
        try:
            if self.month is None:
                return date(year, 1, 1), date(year, 12, 31)
            if self.day is None:
                return date(year, self.month, 1), date(year, self.month, calendar.monthrange(year, self.month)[1])
            day = date(year, self.month, self.day)
            return day, day
        except ValueError:  # 30 February, a year out of range
            return None, date.min


def _modal_may(text: str, parts: dict) -> bool:
    """"which 2 may I bring": a number then "may" is a verb, unless a year or "of" makes it a
    date ("2 May 2023", "the 2nd of May")."""
    return parts.get("month") == "may" and text[0].isdigit() and not parts.get("year") and " of " not in text


def _day_and_month(parts: dict) -> dict | None:
    """13/10/2023 → day 13, month 10; 10/13/2023 → the same; 3/5/2023 (either) → None."""
    first, second = int(parts["first"]), int(parts["second"])
    if first > 12 >= second:
        return {**parts, "day": parts["first"], "month": parts["second"]}
    if second > 12 >= first:
        return {**parts, "day": parts["second"], "month": parts["first"]}
    return None


def _number(text: str | None) -> int | None:
    if not text:
        return None
    if text.isdigit():
        return int(text)
    if text in _CN_NUMBER:
        return _CN_NUMBER[text]
    tens, _, units = text.partition("十")
    return (_CN_NUMBER.get(tens, 1) if tens else 1) * 10 + (_CN_NUMBER.get(units, 0) if units else 0)


def mentioned_periods(text: str) -> list[Period]:
    """The calendar periods the last SCAN_CHARS characters of `text` name explicitly, in order
    of appearance, without repeats; none when they name more than MAX_PERIODS (a list of
    dates, not a question about a time). About 0.15 ms for 500 characters."""
    folded = normalize(text[-SCAN_CHARS:])
    found: list[tuple[int, Period]] = []
    taken: list[range] = []
    for pattern in (*_ENGLISH, *_CHINESE):
        for match in pattern.finditer(folded):
            if any(match.start() in span or match.end() - 1 in span for span in taken):
                continue  # a longer form already read these characters ("October 13, 2023" before "in 2023")
            parts = match.groupdict()
            if parts.get("first"):  # d/m/y or m/d/y
                parts = _day_and_month(parts)
                if parts is None:
                    continue
            elif _modal_may(match.group(0), parts):
                continue
            month = parts.get("month")
            month_number = _MONTHS.get(month.rstrip(".")) if month and not month[0].isdigit() and month[0] not in _CN_NUMBER \
                else _number(month)
            period = Period(year=_number(parts.get("year")), month=month_number, day=_number(parts.get("day")))
            if period.month is not None and not 1 <= period.month <= 12:
                continue
            if period.day is not None and not 1 <= period.day <= 31:
                continue
            taken.append(range(match.start(), match.end()))
            found.append((match.start(), period))
    periods = list(dict.fromkeys(period for _, period in sorted(found, key=lambda item: item[0])))
    return periods if len(periods) <= MAX_PERIODS else []


def in_periods(moment: datetime | date | None, periods: list[Period]) -> bool:
    """Whether `moment` falls in (or within TALKED_ABOUT_DAYS after) any of `periods`."""
    if moment is None or not periods:
        return False
    day = moment.date() if isinstance(moment, datetime) else moment
    return any(period.contains(day) for period in periods)
