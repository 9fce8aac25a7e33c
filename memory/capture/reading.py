"""Reading the user's words into findings (R-EXTRACT), for memory.capture.rules: a message
prepared (NFKC, traditional folded to simplified, quotes made plain), cut into sentences and
clauses; every finding of the language tables in a sentence (sentence_findings), with what a
"me too" says of the user (findings_with_me_too), how long a passing state lasts (duration_of)
and the words that show a lasting intent (explicit_marker)."""

import re
import unicodedata
from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from os.path import commonprefix

import opencc

from memory.capture import rules_en, rules_zh
from memory.capture.rules_common import Finding, Rule

LANGUAGES = (rules_zh.LANGUAGE, rules_en.LANGUAGE)
# Specific rules first, the generic fallbacks (plain likes, notes) after them.
RULES: tuple[Rule, ...] = tuple(
    [rule for language in LANGUAGES for rule in language.rules if not rule.generic]
    + [rule for language in LANGUAGES for rule in language.rules if rule.generic]
)
SUPPOSITIONS = tuple(language.supposition for language in LANGUAGES if language.supposition is not None)
_T2S = opencc.OpenCC("t2s")
_SENTENCE_END = re.compile(r"(?<=[。!?;\n])|(?<=\.)\s+")


_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


_SURROGATE = re.compile("[\ud800-\udfff]")


def prepare(text: str) -> str:
    """NFKC (full-width → half-width, ，→ ","), typographic apostrophes as "'" (don’t → don't, as
    phones type it) and simplified characters; case is kept. A lone surrogate (JSON "\\ud800"
    parses to one) becomes U+FFFD: the converter cannot encode it."""
    text = _SURROGATE.sub("\ufffd", unicodedata.normalize("NFKC", text))
    return _T2S.convert(text.translate(_QUOTES))


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


def _clauses(sentence: str) -> list[tuple[int, str]]:
    """(offset, clause) pairs of a sentence split at commas."""
    result, start = [], 0
    for part in sentence.split(","):
        result.append((start, part))
        start += len(part) + 1
    return result


def duration_of(sentence: str) -> timedelta | None:
    """How long a passing state said in `sentence` lasts (今天 → 24 h), or None. A time word
    that starts a lasting change (从今天开始, from today on) does not count."""
    found = []
    for language in LANGUAGES:
        text = language.lasting.sub(" ", sentence)
        found += [duration for pattern, duration in language.temporal if pattern.search(text)]
    return max(found) if found else None


# Where a sentence turns to something else: a time word says how long only the statements of its
# own part last (我对花生过敏，但是今天吃了一点没事 is a lasting allergy; "I love sushi, but
# tonight I want pizza" a lasting taste).
_TURNS = (*(language.supposition.apart for language in LANGUAGES if language.supposition is not None),
          re.compile(r",\s*(?:但(?!是)|然而|however\b|yet\b|whereas\b)", re.IGNORECASE))


def part_of(sentence: str, start: int) -> str:
    """The part of `sentence` (split where it turns: _TURNS) that holds the character at `start`."""
    cuts = sorted({match.start() for pattern in _TURNS for match in pattern.finditer(sentence)} - {0})
    at = bisect_left(cuts, start + 1)
    return sentence[cuts[at - 1] if at else 0: cuts[at] if at < len(cuts) else len(sentence)]


_SENTENCE_MARKS = " 。！？!?.;；~…"
_QUOTED = frozenset(rule.name for rule in RULES if rule.quoted)


def findings_with_me_too(said: str, before: str, text: str) -> list[tuple[Finding, timedelta | None]]:
    """The findings of the sentence `said` of the prepared message `text`, each with how long the
    passing state it says lasts (duration_of), and those its "me too" says of the user
    (said_of_the_user_too): only those of the words written out, read where they stand in the
    message (so a joke or a retraction after them still counts), with the time words of what
    they repeat (我老公这周不吃辣。我也是。 lasts the week), and no note (a note keeps the user's
    words as said, not the sentence written out)."""
    found = [(finding, duration_of(part_of(said, start))) for start, finding in sentence_findings_at(said, text)]
    read, written = said_of_the_user_too(said, before)
    if written != read:
        since = written.rfind(",", 0, len(commonprefix([read, written])) + 1) + 1  # the clause written out
        until = written.find(",", since)
        duration = duration_of(written[:until] if until >= 0 else written)
        found += [(finding, duration) for finding in sentence_findings(written, text.replace(said, written, 1),
                                                                       since=since, until=until if until >= 0 else len(written))
                  if finding.rule not in _QUOTED]
    return found


def said_of_the_user_too(sentence: str, before: str = "") -> tuple[str, str]:
    """(what was read, the same with its "me too" clauses written out: Language.me_too). A
    sentence that only says "me too" (我老公不吃香菜。我也是。 "My husband hates cilantro. Me
    too.") is read after the last clause of the sentence `before` it, but not after a question
    ("Does he hate cilantro? Me too" says nothing of what he does)."""
    last = before.rstrip(_SENTENCE_MARKS).rsplit(",", 1)[-1].strip()
    for language in LANGUAGES:
        if language.me_too is None:
            continue
        written = language.me_too(sentence)
        if written != sentence:
            return sentence, written
        if last and not before.rstrip().endswith(("?", "？")):
            joined = f"{last},{sentence}"
            written = language.me_too(joined)
            if written != joined:
                return joined, written
    return sentence, sentence


# What may stand before a retraction that opens a sentence (哈哈，开玩笑的; "No, just kidding").
_LAUGHTER = re.compile(r"(?:[\W哈呵嘿嘻哎啊嗯哦噢]|好吧|好啦|算了"
                       r"|\b(?:ha(?:ha)+|lol|lmao|hehe|oops|ok|okay|sorry|nah|no|well)\b)*", re.IGNORECASE)
DENIALS = tuple((language.denial, language.supposition.apart) for language in LANGUAGES
                if language.denial is not None and language.supposition is not None)
DENIAL_WINDOW = 40  # characters before a statement read for a denial (a long clause stays linear)
RETRACTIONS = tuple(language.retraction for language in LANGUAGES if language.retraction is not None)


_DOUBTED = re.compile(r"\s*(?:that\s+)?(?:我)?", re.IGNORECASE)  # between a doubt and what it doubts: nothing else


def _denied(sentence: str, start: int) -> bool:
    """Whether the statement at `start` is one the user denies saying, right before it in its
    clause (我从来没说过我爱吃寿司, "I never said I love sushi"; not "I never said it before but
    I'm allergic to peanuts": Supposition.apart stands between)."""
    clause_start = max(sentence.rfind(",", 0, start) + 1, start - DENIAL_WINDOW)
    for denial, apart in DENIALS:
        last = max(denial.finditer(sentence, clause_start, start), key=lambda found: found.end(), default=None)
        if last is None or apart.search(sentence, last.end(), start):
            continue
        if not last.groupdict().get("doubt") or _DOUBTED.fullmatch(sentence, last.end(), start):
            return True
    return False


def taken_back_before(sentence: str) -> int:
    """Where the last clause of `sentence` that takes back what was just said (Language.retraction:
    我不吃香菜，开玩笑的; "I hate cilantro, just kidding") stands, or -1: every statement before it
    in the sentence is taken back. 0 when the sentence opens with one ("Just kidding, I love it"),
    which takes back the sentence before it too (RuleExtractor.extract)."""
    for offset, clause in reversed(_clauses(sentence)):
        for retraction in RETRACTIONS:
            match = retraction.search(clause)
            if match:
                at = offset + match.start()
                return 0 if _LAUGHTER.fullmatch(sentence[:at]) else at
    return -1


# "Remember …?" asking whether the listener recalls something ("Remember that epic block in Game 7?")
# is no request to keep anything. One about the user still is ("Remember that I hate cilantro? Don't
# put it in anything."), as a tag after a request is ("Remember that I'm vegan, ok?"), and 记住了吗？
_RECALL = re.compile(r"remember", re.IGNORECASE)
_ABOUT_ME = re.compile(r"\b(?:I|I'm|I'd|I've|my|me|mine)\b", re.IGNORECASE)
_TAG_QUESTION = re.compile(r"(?:\b(?:ok|okay|alright|all right|right|got it|will you|please)|好吗|好不好|行吗|行不行"
                           r"|可以吗|知道吗|明白吗|听到没|好么)\W*$", re.IGNORECASE)


def _asks_to_recall(text: str, match: re.Match[str]) -> bool:
    """Whether the lasting-intent words at `match` ask the listener to recall, in a question."""
    if not _RECALL.search(match.group(0)):
        return False
    end = _SENTENCE_END.search(text, match.end())
    sentence = text[match.start(): end.start() if end else len(text)].rstrip()
    return sentence.endswith("?") and not _TAG_QUESTION.search(sentence[:-1]) and not _ABOUT_ME.search(sentence)


def explicit_marker(text: str) -> str:
    """The lasting-intent words of a message (记住, from now on …), or ''; not a question asking
    whether the listener remembers ("Remember that epic block in Game 7?")."""
    for language in LANGUAGES:
        for match in language.explicit.finditer(text):
            if not _asks_to_recall(text, match):
                return match.group(0).strip(" ,.;:!?")
    return ""


# A question said as words to keep: 吗 (not a tag on a statement: 好吗, 行吗, 可以吗), 怎么办, or
# 呢 after a question word (我明天几点开会呢; not 我还没吃饭呢).
_ASKED = re.compile(r"(?:(?<!好)(?<!行)(?<!可以)吗|怎么办|(?:什么|几|哪|谁|怎么|多少)[^,]*呢)\W*$")


def _asks_or_supposes(words: str, sentence: str, end: int) -> bool:
    """Whether words a rule keeps as said ask (记住，我明天几点开会呢?) or suppose with no
    consequence (记住，如果我对花生过敏怎么办; "Remember, suppose I'm vegan")."""
    return (sentence[end: end + 1] == "?" or bool(_ASKED.search(words))
            or any(supposition.leaves_open(words) for supposition in SUPPOSITIONS))


def sentence_findings(sentence: str, message: str, *, since: int = 0, until: int | None = None) -> list[Finding]:
    """Every finding of the rule tables in one sentence, in text order (sentence_findings_at)."""
    return [finding for _, finding in sentence_findings_at(sentence, message, since=since, until=until)]


def sentence_findings_at(sentence: str, message: str, *, since: int = 0,
                         until: int | None = None) -> list[tuple[int, Finding]]:
    """Every finding of the rule tables in one sentence, in text order. A match may not overlap
    an earlier one (不吃辣 is a flavor, not the ingredient 辣; 记住，我对花生过敏 is an allergy,
    not a note), nor be about someone else where the rule speaks of the user (Rule.subjects,
    read over the whole sentence), nor be supposed (如果我对花生过敏怎么办; Supposition), whatever
    the rule, nor denied (Language.denial), nor taken back (taken_back_before). Only the matches
    starting between `since` and `until` are kept (the words a "me too" wrote out). Each comes with
    the offset in `sentence` where its match starts."""
    until = len(sentence) if until is None else until
    since = max(since, taken_back_before(sentence))
    found: list[tuple[int, Finding]] = []
    taken: list[tuple[int, int]] = []  # the spans of the findings so far, in order (they never overlap)
    readers: dict[int, Callable[[int, int], bool]] = {}
    clauses = _clauses(sentence)

    def overlaps(start: int, end: int) -> bool:
        at = bisect_left(taken, (start, start))
        return (at < len(taken) and taken[at][0] < end) or (at > 0 and taken[at - 1][1] > start)

    for rule in RULES:
        units = [(0, sentence)] if rule.unit == "sentence" else clauses
        for offset, unit in units:
            for pattern in rule.patterns:
                for match in pattern.finditer(unit):
                    start, end = offset + match.start(), offset + match.end()
                    if start == end or not since <= start < until or overlaps(start, end):
                        continue
                    if rule.subjects is not None:
                        if id(rule.subjects) not in readers:
                            readers[id(rule.subjects)] = rule.subjects.reader(sentence)
                        if readers[id(rule.subjects)](start, end):
                            continue
                    if any(supposition.governs(sentence, start, end) for supposition in SUPPOSITIONS):
                        continue
                    if _denied(sentence, start):
                        continue
                    if rule.quoted and _asks_or_supposes(match["x"], sentence, end):
                        continue
                    findings = rule.build(match, message)
                    if findings:
                        insort(taken, (start, end))
                        found += [(start, replace(finding, rule=rule.name)) for finding in findings]
    return sorted(found, key=lambda pair: pair[0])
