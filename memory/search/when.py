"""Dates a question names, for time-aware recall of conversation turns (issue 7; R-QUERY).

"What did Maria donate in December 2023?", "What painting did Melanie show on October 13,
2023?", "他2023年5月去了哪里？", "五月三号我们聊了什么？": `mentioned_periods` finds the calendar
periods a query names explicitly — a day, a month or a year, in English or Chinese — and
`in_periods` tells whether a moment falls in one of them.

Given the call's time `now`, it also reads relative periods ("yesterday", "last week", "3 days
ago", "上周", "三天前") as concrete ranges of days counted back from `now`'s date: a day
(yesterday, the day before yesterday / 前天, 大前天, N days ago), a week Monday to Sunday (last
week, N weeks ago), a weekend Saturday and Sunday (last weekend: the one before this week's
Monday), a calendar month (last month, N months ago) or year (last year / 去年, 前年, N years
ago). A period that holds `now` (today, this morning, this week, this month, this year, 今天,
今晚, 这周, 本月, 今年 …) is read only in a query that asks for a recap of what was said in
it and nothing else (`_only_recap`: "what did we talk about today?", "我们今天聊了什么？",
"remind me what I said this morning", "总结一下今天聊的"), as the days from its first to
`now`'s; otherwise it is not: "我今天想吃辣的" speaks of the present, and a boost of the turns
said lately would only push the latest chatter above an older turn that matches as well. "This
weekend" is never read (it is as often the coming one). Every period found counts:
"last weekend before April 10, 2023" names both. Vague words (recently, a few days ago, 以前,
上次) name none; they stay words to match (memory.search.text.temporal_expansions).

Days are those of the time zone the caller gives (the context call's `timezone`, an IANA name
such as Asia/Shanghai), UTC by default: `now` and every turn's time are read as dates there.
A turn about a named day is said on or after it ("yesterday I went …" is said the next day),
so a named period reaches TALKED_ABOUT_DAYS past its end; a relative one ends where it ends
(it is what was said then: every turn since would be lifted alike, up to today's). When the
caller gives no time zone, both start a day early: its dates are read in UTC, where a turn said
early in the morning east of UTC (up to +14 h) falls on the day before (a caller west of UTC
should give its zone: its evening turns fall on the next UTC day). A month or a day named
without a year is that month or day of any year.
"""

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from memory.search.text import normalize

TALKED_ABOUT_DAYS = 7  # a turn about a day is said within a week of it
LEAD_DAYS = 1  # without a known time zone: a local morning east of UTC is the previous UTC day
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
    # 13/10/2023 or 10/13/2023: read only when one of the two numbers can only be the day, or both are one
    re.compile(r"\b(?P<first>[12]\d|3[01]|0?[1-9])/(?P<second>[12]\d|3[01]|0?[1-9])/(?P<year>(?:19|20)\d\d)\b"),
]
_CN_NUMBER = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
              "十一": 11, "十二": 12}
_CN_MONTH = r"(?P<month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_CN_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9]|三十一?|二?十[一二三四五六七八九]?|[一二三四五六七八九])"
_CHINESE = [
    # 2023年5月3日 / 五月三号 / 5月; not the tail of a longer number ("13月")
    re.compile(rf"(?<![\d一二三四五六七八九十])(?:(?P<year>(?:19|20)\d\d)年)?{_CN_MONTH}月(?:{_CN_DAY}[日号])?"),
    re.compile(r"(?<!\d)(?P<year>(?:19|20)\d\d)年"),  # 2023年
]

# Relative periods (given `now`): a unit (day, week, weekend, month, year) and how many of them back.
_EN_NUMBER = {word: number for number, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())} | {"a": 1, "an": 1}
_DAYS_BACK = {"yesterday": 1, "last night": 1, "day before yesterday": 2, "昨天": 1, "昨晚": 1, "昨日": 1, "昨儿": 1,
              "昨儿个": 1, "前天": 2, "前晚": 2, "大前天": 3}
_YEARS_BACK = {"去年": 1, "前年": 2, "大前年": 3}
_UNITS = {"day": "day", "week": "week", "weekend": "weekend", "month": "month", "year": "year", "天": "day",
          "周": "week", "星期": "week", "礼拜": "week", "个星期": "week", "个礼拜": "week", "周末": "weekend",
          "月": "month", "个月": "month", "年": "year"}
_CN_COUNT = r"(?P<n>\d{1,4}|[一二三四五六七八九]?十[一二三四五六七八九]?|[一二三四五六七八九两])"
# Characters after which a Chinese relative word is most likely the end of another word: 上 in
# 赶上周末, 遇上周末, 比不上, 墙上月历, 晚上月亮 (and 加 but in 参加, 增加); 前 in 提前天数, 眼前天空,
# 几年前年底; 去 in 过去年轻人; and 大大前天. After any other character (妈妈昨天, 老板上周说,
# 比上周好, 参加上周的培训) it is read. What follows rules out the rest: 从前天天, 从前年轻, 去年检,
# 去年会, 上周围, 上周刊, 上个月饼, 月台.
_NOT_AFTER = {
    "上": "早晚马路身网天楼山海以之手脸会班车线台赶遇连碰爱戴桌墙算床街船头面不",
    "前": "提眼面以目向之门空当生事战大年",
    "去": "过失",
}
_POSSESSIVE = "".join(rf"(?<!\b{word}\s)" for word in ("my", "your", "his", "her", "its", "our", "their", "the"))
_RELATIVE = [
    # not "the last week of June", "my last year at school", "her last month of pregnancy"
    re.compile(rf"\b(?:(?P<days>(?:the\s+)?day\s+before\s+yesterday|yesterday|{_POSSESSIVE}last\s+night)"
               rf"|{_POSSESSIVE}(?P<which>last)\s+(?P<unit>weekend|week|month|year)(?!\s+of\b)"
               rf"|(?<![\d.,])(?P<n>\d{{1,4}}|{'|'.join(_EN_NUMBER)})\s+(?P<ago>day|week|month|year)s?\s+ago)\b"),
    # 上上周 and 大上周 are the week before last; nor the tail of a longer or decimal number
    re.compile(r"(?P<days>昨天|昨晚|昨日|昨儿个|昨儿)"
               rf"|(?<![{_NOT_AFTER['前']}])(?P<days_before>大前天|前天(?!天)|前晚)"
               rf"|(?<![{_NOT_AFTER['前']}])(?P<years_before>大前年|前年(?!轻))"
               rf"|(?<![{_NOT_AFTER['去']}])(?P<last_year>去年(?![检会货级]))"
               rf"|(?<![{_NOT_AFTER['上']}])(?<!(?<![参增])加)(?P<which>上上|大上|上)个?"
               r"(?P<unit>周末|周(?![围边到全期刊])|星期|礼拜|月(?![饼亮光球台]))"
               rf"|(?<![\d一二三四五六七八九十两百千万几.,]){_CN_COUNT}(?P<ago>天|周|个?星期|个?礼拜|个月|年)前"),
]

# A period that holds now (read only in a recap question, _only_recap): today and its parts, this week, month, year.
_PRESENT = [
    re.compile(r"\b(?:(?P<today>today|tonight|this\s+(?:morning|afternoon|evening))|this\s+(?P<unit>week|month|year))\b"),
    # 本 not ending another word (日本, 书本, 成本 …), 月 not starting one (月饼, 月刊 …)
    re.compile(r"(?P<today>今天|今日|今早|今晨|今晚|今儿)|(?:这|(?<![日书课版成资基根剧样账记原文脚范副标读])本)个?"
               r"(?P<unit>周(?![末围边到全期刊])|星期|礼拜|月(?![饼亮光球台刊]))|(?P<year>今年)"),
]
# A query that asks only what was said — a recap of the period and nothing else, the whole
# query: a recap cue (_RECAP_CUE: talk said or done, not to come — "what did we talk about",
# "what have we discussed", "what was I saying", "聊了什么", "说过哪些"; or a request to recap —
# recap, summary, remind, rundown, 总结, 回顾, 回忆) and no word but the period's and those of
# asking for a recap (_RECAP_WORDS_EN, _RECAP_WORDS_ZH). "What did we talk about today?",
# "我们今天聊了什么？", "Give me a summary of today's chat", "总结一下今天聊的". A query that
# also asks about something ("I have a headache today, what did I tell you I must never
# take?", "Can we talk today? What am I allergic to?", "今天老板说了什么我不明白", "What did we
# decide to do today?") is not one: its own words find the turns that answer it, from any time,
# and today's chatter placed before them would push them out (three newcomers' findings).
_RECAP_CUE = re.compile(
    r"\bdid\s+(?:we|i|you)\b.*\b(?:talk|discuss|chat|say|tell|mention|speak|ask|cover|decid|agree|shar|go)\w*\b"
    r"|\b(?:talked|discussed|chatted|said|told|mentioned|spoke|asked|covered|decided|agreed|shared|came\s+up"
    r"|(?:went|gone)\s+(?:over|through))\b"
    r"|\b(?:were|was)\s+(?:we|i|you)\s+\w+ing\b"
    r"|\b(?:recap|summary|summari[sz]e|sum\s+up|rundown|remind|catch\s+me\s+up|review|highlights?)\b"
    r"|总结|回顾|复盘|回忆"
    r"|(?:聊|说|讲|谈|讨论|沟通|交流|提|问(?!题)|商量|告诉)(?:[了过到的].*(?:什么|啥|哪)|(?:什么|啥)了)"
    r"|对话.*(?:什么|啥|哪)")
_RECAP_WORDS_EN = frozenset("""
    what which did do does have has had were are was is be been we i you me us our ours and about the a an of from so
    far else all any anything everything something can could please remind tell give show list summary summaries
    summarize summarise recap sum up talk talked talking talks discuss discussed discussing discussion discussions
    chat chats chatted chatting conversation conversations say said saying tell told telling mention mentioned speak
    spoke speaking ask asked cover covered go went gone over through decide decided deciding agree agreed end ended
    topic topics came come share shared rundown catch review highlight highlights message messages let lets s with
    between on in just earlier again thanks thank hey hi ok okay well now quick yesterday last night
    important interesting main key point points notable lot lots much many things stuff
    """.split())
_RECAP_WORDS_ZH = re.compile("|".join(sorted("""
    我们 咱们 咱俩 咱 我 你 俩 都 一下 帮我 帮 请 给我 把 跟 和 之间 聊天记录 聊天 记录 聊 说 讲 谈 讨论 沟通 交流 提 问 商量
    决定 告诉 了 过 到 的 什么 啥 哪些 哪儿 哪 多少 内容 话题 事情 事 问题 那件事 那些 东西 些 有 吗 呢 呀 啊 吧 是 来着
    总结 回顾 复盘 回忆 对话 早些时候 早上 上午 中午 下午 晚上 刚才 之前 所有 全部 一共 再 又 还 下 个 昨天
    重要 重点 要点 主要 很多 好多
    """.split(), key=len, reverse=True)))


def _only_recap(text: str) -> bool:
    """Whether `text` (folded) asks for a recap of what was said and nothing else."""
    if not _RECAP_CUE.search(text):
        return False
    rest = text
    for pattern in _PRESENT:
        rest = pattern.sub(" ", rest)
    return all(word in _RECAP_WORDS_EN for word in re.findall(r"\w+", _RECAP_WORDS_ZH.sub(" ", rest)))


def _reaches(day: int, start: date, end: date, lead: int, tail: int) -> bool:
    """Whether day number `day` (date.toordinal) is from `lead` days before `start` to `tail`
    days after `end` (day numbers, so no date arithmetic can overflow)."""
    return start.toordinal() - lead <= day <= end.toordinal() + tail


@dataclass(frozen=True)
class Period:
    """A calendar period a query names: `year`, `month`, `day` (None: not named)."""

    year: int | None
    month: int | None = None
    day: int | None = None

    def contains(self, moment: date, lead: int = LEAD_DAYS) -> bool:
        """Whether `moment` (a date) is in the period, from `lead` days before it to
        TALKED_ABOUT_DAYS after it."""
        day = moment.toordinal()
        for year in (moment.year, moment.year - 1) if self.year is None else (self.year,):
            start, end = self.bounds(year)
            if start is not None and _reaches(day, start, end, lead, TALKED_ABOUT_DAYS):
                return True
        return False

    def bounds(self, year: int) -> tuple[date | None, date]:
        """Its first and last day in `year` ((None, date.min) when there is no such day)."""
        try:
            if self.month is None:
                return date(year, 1, 1), date(year, 12, 31)
            if self.day is None:
                return date(year, self.month, 1), date(year, self.month, calendar.monthrange(year, self.month)[1])
            day = date(year, self.month, self.day)
            return day, day
        except ValueError:  # 30 February, a year out of range
            return None, date.min


@dataclass(frozen=True)
class DayRange:
    """A relative period resolved against a reference time: the days `start` to `end`, both
    included."""

    start: date
    end: date

    def contains(self, moment: date, lead: int = LEAD_DAYS) -> bool:
        """Whether `moment` (a date) is in the range, from `lead` days before it; no later. A
        turn said after it would be any turn said since, up to today's chatter, which "what did
        I say yesterday" does not ask for."""
        return _reaches(moment.toordinal(), self.start, self.end, lead, 0)


def local_date(moment: datetime | date, zone: tzinfo = UTC) -> date:
    """The date of `moment` in `zone` (default UTC); a naive datetime is taken as UTC, a date
    as it is."""
    if isinstance(moment, datetime):
        try:
            moment = moment.replace(tzinfo=moment.tzinfo or UTC).astimezone(zone)
        except OverflowError:  # within hours of the first or last moment there is
            pass
        return moment.date()
    return moment


def _days_back(unit: str, back: int, today: date) -> DayRange | None:
    """The `unit` ("day", "week", "weekend", "month", "year") `back` units before the one
    holding `today`; None for that one itself (back 0: see the module docstring) and before the
    first date there is."""
    if back < 1:
        return None
    if unit in ("month", "year"):
        months = today.year * 12 + today.month - 1 - (back * 12 if unit == "year" else back)
        year, month = divmod(months, 12)
        if year < 1:
            return None
        if unit == "year":
            return DayRange(date(year, 1, 1), date(year, 12, 31))
        return DayRange(date(year, month + 1, 1), date(year, month + 1, calendar.monthrange(year, month + 1)[1]))
    if unit == "day":
        start = end = today.toordinal() - back
    else:
        monday = today.toordinal() - today.weekday() - 7 * back
        start, end = (monday + 5, monday + 6) if unit == "weekend" else (monday, monday + 6)
    start = max(start, 1)
    return DayRange(date.fromordinal(start), date.fromordinal(end)) if start <= end else None


def _relative(match: re.Match, today: date) -> DayRange | None:
    parts = match.groupdict()
    days = parts["days"] or parts.get("days_before")
    if days:
        return _days_back("day", _DAYS_BACK[re.sub(r"^the ", "", re.sub(r"\s+", " ", days))], today)
    years = parts.get("years_before") or parts.get("last_year")
    if years:
        return _days_back("year", _YEARS_BACK[years], today)
    if parts["which"]:
        return _days_back(_UNITS[parts["unit"]], 2 if parts["which"] in ("上上", "大上") else 1, today)
    back = _EN_NUMBER[parts["n"]] if parts["n"] in _EN_NUMBER else _number(parts["n"])
    return _days_back(_UNITS[parts["ago"]], back, today)


def _present(match: re.Match, today: date) -> DayRange:
    """Today, or this week (from Monday), month or year, up to and including `today`."""
    parts = match.groupdict()
    unit = "year" if parts.get("year") else _UNITS.get(parts["unit"] or "", "day")
    if unit == "week":
        start = today - timedelta(days=today.weekday())
    elif unit == "month":
        start = today.replace(day=1)
    elif unit == "year":
        start = today.replace(month=1, day=1)
    else:
        start = today
    return DayRange(start, today)


def _modal_may(text: str, parts: dict) -> bool:
    """"which 2 may I bring": a number then "may" is a verb, unless a year or "of" makes it a
    date ("2 May 2023", "the 2nd of May")."""
    return parts.get("month") == "may" and text[0].isdigit() and not parts.get("year") and " of " not in text


def _day_and_month(parts: dict) -> dict | None:
    """13/10/2023 → day 13, month 10; 10/13/2023 → the same; 3/3/2024 → day 3 of March (both
    readings agree); 3/5/2023 (either) → None."""
    first, second = int(parts["first"]), int(parts["second"])
    if first > 12 >= second or first == second:
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


def _absolute(match: re.Match) -> Period | None:
    parts = match.groupdict()
    if parts.get("first"):  # d/m/y or m/d/y
        parts = _day_and_month(parts)
        if parts is None:
            return None
    elif _modal_may(match.group(0), parts):
        return None
    month = parts.get("month")
    month_number = _MONTHS.get(month.rstrip(".")) if month and not month[0].isdigit() and month[0] not in _CN_NUMBER \
        else _number(month)
    period = Period(year=_number(parts.get("year")), month=month_number, day=_number(parts.get("day")))
    if period.month is not None and not 1 <= period.month <= 12:
        return None
    if period.day is not None and not 1 <= period.day <= 31:
        return None
    return period


_TALKED = re.compile(r"\b(?:talk|discuss|chat|convers|recap|sum\s+up|summar)\w*|聊|讨论|谈|总结|回顾")
_BEYOND = re.compile(r"\b(?:everything|ever|before|earlier|previous(?:ly)?|last|all|so\s+far)\b"
                     r"|之前|以前|上次|所有|全部|一直|过去")


def asks_for_a_recap(text: str) -> bool:
    """Whether the last SCAN_CHARS characters of `text` ask for a recap of the talk and nothing
    else ("What did we talk about?", 我们聊了什么？, "Can you recap what we discussed?";
    _only_recap), whatever period they name; not of what was decided or told ("What did we
    decide?", 我告诉过你什么？), nor of more than now ("…everything I told you", 我们之前聊了什么)."""
    folded = normalize(text[-SCAN_CHARS:])
    return _only_recap(folded) and bool(_TALKED.search(folded)) and not _BEYOND.search(folded)


def mentioned_periods(text: str, now: datetime | date | None = None,
                      zone: tzinfo | None = None) -> list[Period | DayRange]:
    """The periods the last SCAN_CHARS characters of `text` name, in order of appearance,
    without repeats; none when they name more than MAX_PERIODS (a list of dates, not a
    question about a time). Calendar periods named explicitly always (`Period`); with `now`
    (the call's time, aware or naive UTC) also the relative ones, as days counted back from
    its date in `zone` (UTC when None; `DayRange`; the module docstring). R-QUERY. For 500 characters about 0.15 ms,
    0.25 ms with `now` (0.35 ms for a Chinese conversation that says 今天 and 上周 in every line)."""
    _, found = _scan(text, now, zone)
    periods = list(dict.fromkeys(period for _, _, period in found))
    return periods if len(periods) <= MAX_PERIODS else []


def without_relative_periods(text: str, now: datetime | date, zone: tzinfo | None = None) -> tuple[str, list[str]]:
    """`text` with the words that name a period relative to `now` ("yesterday", "last week",
    昨天, 上周 — what mentioned_periods reads with `now`, not a calendar date) blanked, and
    those words, in order; `text` as it is and [] when it names none. The last SCAN_CHARS
    characters come back normalised (memory.search.text.normalize), as the reading sees them.
    Such a word dates the question, not what was said: "yesterday" in a turn of March is
    another day than the question's (memory.selectors.messages uses it to score only)."""
    folded, found = _scan(text, now, zone)
    spans = [(start, end) for start, end, period in found if isinstance(period, DayRange)]
    if not spans:
        return text, []
    blanked = list(folded)
    for start, end in spans:
        blanked[start:end] = " " * (end - start)
    return text[:-SCAN_CHARS] + "".join(blanked), [folded[start:end] for start, end in sorted(spans)]


def _scan(text: str, now: datetime | date | None, zone: tzinfo | None
          ) -> tuple[str, list[tuple[int, int, Period | DayRange]]]:
    """The last SCAN_CHARS characters of `text`, folded, and the periods read in them with the
    span of the words that name each, in order of appearance."""
    folded = normalize(text[-SCAN_CHARS:])
    readers: list[tuple[re.Pattern, Callable[[re.Match], Period | DayRange | None]]] = [
        (pattern, _absolute) for pattern in (*_ENGLISH, *_CHINESE)]
    if now is not None:  # after the absolute forms: "2020年前" is the year 2020, not 2,020 years ago
        today, resolved = local_date(now, zone or UTC), {}

        def relative(match: re.Match) -> DayRange | None:  # a conversation says "今天" again and again
            if match.group(0) not in resolved:
                resolved[match.group(0)] = _relative(match, today)
            return resolved[match.group(0)]

        readers += [(pattern, relative) for pattern in _RELATIVE]
        if _only_recap(folded):
            readers += [(pattern, lambda match: _present(match, today)) for pattern in _PRESENT]
    found: list[tuple[int, int, Period | DayRange]] = []
    taken = bytearray(len(folded))  # 1: a character an earlier form read
    for pattern, read in readers:
        for match in pattern.finditer(folded):
            start, end = match.span()
            if taken[start] or taken[end - 1]:
                continue  # a longer form already read these characters ("October 13, 2023" before "in 2023")
            period = read(match)
            if period is None:
                continue
            taken[start:end] = b"\x01" * (end - start)
            found.append((start, end, period))
    return folded, sorted(found, key=lambda item: item[0])


def in_periods(moment: datetime | date | None, periods: Sequence[Period | DayRange], zone: tzinfo | None = None) -> bool:
    """Whether `moment` (its date in `zone`) falls in any of `periods`, up to its end (relative)
    or TALKED_ABOUT_DAYS after it (named); from LEAD_DAYS before it when the zone is not known
    (None: dates in UTC), from its first day when it is."""
    if moment is None or not periods:
        return False
    day, lead = local_date(moment, zone or UTC), LEAD_DAYS if zone is None else 0
    return any(period.contains(day, lead) for period in periods)


def _midnight(day: int, zone: tzinfo) -> datetime:
    """The first moment of day number `day` (date.toordinal, clamped to the calendar) in `zone`, in UTC."""
    day = min(max(day, 1), date.max.toordinal())
    try:
        return datetime.combine(date.fromordinal(day), time(), tzinfo=zone).astimezone(UTC)
    except OverflowError:  # within hours of the first or last moment there is
        return (datetime.min if day < 2 else datetime.max).replace(tzinfo=UTC)


def period_spans(periods: Sequence[Period | DayRange], now: datetime | date, zone: tzinfo | None = None, *,
                 talked_about: bool = True) -> list[tuple[datetime, datetime]]:
    """Per period, the moments `in_periods` accepts, as [start, end) in UTC: from LEAD_DAYS
    before it when the zone is not known, to its end (relative) or TALKED_ABOUT_DAYS after it
    (named; to its end too with `talked_about` False: what was said in the period itself). A
    calendar period named without a year spans its days in `now`'s year and the year before
    (in_periods accepts any year; a search by time reads the latest two). So a store can be
    asked for the turns said in the periods by time alone (R-QUERY)."""
    lead, today = LEAD_DAYS if zone is None else 0, local_date(now, zone or UTC)
    days: list[tuple[int, int]] = []
    for period in periods:
        if isinstance(period, DayRange):
            days.append((period.start.toordinal() - lead, period.end.toordinal() + 1))
            continue
        for year in (period.year,) if period.year is not None else (today.year, today.year - 1):
            start, end = period.bounds(year)
            if start is not None:
                days.append((start.toordinal() - lead, end.toordinal() + (TALKED_ABOUT_DAYS if talked_about else 0) + 1))
    return [(_midnight(start, zone or UTC), _midnight(end, zone or UTC)) for start, end in days]
