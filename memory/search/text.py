"""Normalise and tokenise Chinese, English and mixed text for keyword search (R-QUERY).

normalize: NFKC (full-width → half-width), case-fold, traditional → simplified (OpenCC t2s).
Tokens, the standard CJK-analyzer approach:
- a run of letters/digits of non-CJK scripts is one word (`staging`, `50`, `pytest`);
- a run of CJK characters gives its character bigrams, plus every character as a unigram
  so that one-character queries still match. Runs never join across punctuation or script
  changes, so `发布前先跑pytest再推到Staging环境` yields `pytest`, `staging`, `环境`, … and
  `少油，少辣` never yields `油少`.
Words of ASCII letters are reduced to their Snowball English stem (PyStemmer), in the index
and in queries alike, so `painted` finds `paint`.
A query uses bigrams for CJK runs of two or more characters, the unigram for a
one-character run, and drops English stop words and bigrams of two Chinese function words
(CJK_FUNCTION_CHARACTERS), the latter only when something else is left.
"""

import hashlib
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator

import opencc
import Stemmer

_T2S = opencc.OpenCC("t2s")

# Han (with extensions and compatibility forms) and kana, written without spaces between words;
# with Hangul syllables, which are spaced (아버지가 방에 ≠ 아버지 가방에), the CJK scripts.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK = _UNSPACED + "\uac00-\ud7af"
CJK_RANGES = _CJK  # for a character class: [{CJK_RANGES}]
_RUNS = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")

MAX_WORD_LENGTH = 64  # longer "words" (hashes, base64 blobs) are not indexed
MAX_INDEX_TOKENS = 32_000  # per document; beyond it the head and tail are kept
MAX_QUERY_TOKENS = 512  # a long query (a whole dialogue) keeps its last distinct tokens (the latest turns)
FIELD_SEPARATOR = " | "  # between fields of one document; never part of a token
OWNER_TOKEN_PREFIX = "zzo"
# Owner tokens and concept tokens (memory.search.concepts: zzc + a thesaurus code) are never
# searchable as text.
_OWNER_TOKEN = re.compile(rf"{OWNER_TOKEN_PREFIX}\d.*|zzc[a-l][a-z](?:\d\d(?:[a-z](?:\d\d)?)?)?")

ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves s t d ll m o re ve y
    """.split()
)


_STEMMERS = threading.local()  # a PyStemmer object is not safe to share between threads


def stem(word: str) -> str:
    """The Snowball English stem of a word of ASCII letters; any other word as it is."""
    if not (word.isascii() and word.isalpha()):
        return word
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer("english")
    return stemmer.stemWord(word)


def normalize(text: str) -> str:
    """NFKC, case-fold and fold traditional Chinese to simplified. Length may change.

    Deliberately not memoised: a per-process cache of normal forms would keep the text of a
    hard-forgotten memory in every worker until evicted (R-STORE: nothing derived from it may
    remain), for ~0.4 ms of CPU a context call (131 calls on a LoCoMo question)."""
    return _T2S.convert(unicodedata.normalize("NFKC", text).casefold())


def _runs(normalized: str) -> Iterator[tuple[str, str]]:
    for match in _RUNS.finditer(normalized):
        cjk, word = match.groups()
        if cjk:
            yield "cjk", cjk
        elif len(word) <= MAX_WORD_LENGTH:
            yield "word", word


# How notes are compared (note_words). After NFKC, which makes full-width ，；：！ ASCII, a
# separator that ends a word (tea. / Fridays: / 开心，) only punctuates; one standing alone or
# starting a word (use ; as / .env / ,5) is part of what is said. Quotes and brackets of CJK
# text and typographic double quotes only enclose. Never folded: ? (a question is not a
# statement), brackets ( ) [ ] { }, the hyphen-minus, symbols (= < > + # % @ / $ € ° emoji …).
_SEPARATORS = frozenset(".,;:!—、。")
_ENCLOSERS = frozenset("“”„‚«»‹›「」『』【】《》〈〉〔〕")
_ASCII_QUOTES = frozenset("'\"")  # enclose only beside Han or kana (用户说"好"); else 5' and 5" differ
_SEPARATOR_RUN = re.compile("[" + re.escape("".join(sorted(_SEPARATORS))) + "]+")
_ENCLOSER = re.compile("[" + re.escape("".join(sorted(_ENCLOSERS | _ASCII_QUOTES))) + "]")
_SPACES = re.compile(r"\s+")
_NOTE_FOLDS = {0xFE0E: None, 0xFE0F: None, 0x200B: None,  # variation selectors, zero-width space
               0x2018: "'", 0x2019: "'",  # typographic apostrophes: doesn’t is doesn't
               0x2013: "-", 0x2212: "-"}  # en dash and minus sign: 3–5 is 3-5, −5 is -5
# Forms NFKC would make plain digits, written out first so that they stay apart: 10⁶ is not
# 106, 选①② is not 选12.
_KEPT_FORMS = {**{ord(ch): f"^{digit}" for digit, ch in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")},
               **{0x2460 + number - 1: f"({number})" for number in range(1, 21)}}
# A full-width separator is typed with its own spacing (an input method writes "Note：meeting"
# for "Note: meeting"): before a letter it ends the word before it. Not before a digit, where
# NFKC's ASCII reading stays (比例1：2 is 比例1:2).
_WIDE_SEPARATOR = re.compile(r"([，；：！])(?=[^\W\d_])")
_BOUNDARY = "\x00"  # where a separator was: between two words it stays a space (不是，5点 is not 不是5点)
_SPACE_BESIDE_UNSPACED = re.compile(rf"(?<=[{_UNSPACED}]) | (?=[{_UNSPACED}])")
_GAPS = re.compile(r"[ \x00]+")
_LOOSE_BOUNDARY = re.compile(r"(?<!\w)\x00|\x00(?!\w)")  # not between two words: a plain space
_UNSPACED_CHAR = re.compile(rf"[{_UNSPACED}]")


def _unspaced(ch: str) -> bool:
    return _UNSPACED_CHAR.match(ch) is not None


def _separators(run: re.Match) -> str:
    """A run of separators (…, !!, 。) as it reads: a boundary where it ends a word or sits
    beside Han or kana, else itself (part of what is said)."""
    text, start, end = run.string, run.start(), run.end()
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if _unspaced(before) or _unspaced(after) or (before.isalnum() and after.isspace()):
        return _BOUNDARY
    return run.group()


def _enclosers(mark: re.Match) -> str:
    """A quote or bracket that only encloses reads as nothing; an ASCII quote does so only
    beside Han or kana."""
    text, index = mark.string, mark.start()
    if mark.group() not in _ASCII_QUOTES:
        return ""
    before = text[index - 1] if index else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    return "" if _unspaced(before) or _unspaced(after) else mark.group()


def note_words(text: str) -> str:
    """`text` as notes are compared (R-STORE): its normal form (memory.search.text.normalize)
    without the marks that only punctuate it (see _SEPARATORS and _ENCLOSERS above), emoji
    variation selectors, or spacing beside Han and kana; typographic apostrophes and dashes
    read as ASCII; spacing folded to one space. "「用户 不吃香菜」" and "用户不吃香菜！", "I like
    tea." and "i like  TEA!", "doesn’t" and "doesn't", "Note：meeting" and "Note: meeting" read
    the same; "-5°C" and "5°C", "不是，5点" and "不是5点", "use ; as the delimiter" and "use , as
    the delimiter", "from .env" and "from env", "Friday?" and "Friday.", "C#" and "C", "x != y"
    and "x = y", "10%" and "10", "3.5" and "35" do not. Empty for a text of nothing but such
    marks and spacing."""
    normal = normalize(_WIDE_SEPARATOR.sub(r"\1 ", text.translate(_KEPT_FORMS))).translate(_NOTE_FOLDS)
    marked = _SEPARATOR_RUN.sub(_separators, _ENCLOSER.sub(_enclosers, _SPACES.sub(" ", normal)))
    gaps = _LOOSE_BOUNDARY.sub(" ", _GAPS.sub(lambda gap: _BOUNDARY if _BOUNDARY in gap.group() else " ", marked))
    return " ".join(_SPACE_BESIDE_UNSPACED.sub("", gaps).replace(_BOUNDARY, " ").split())


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_tokens(text: str) -> list[str]:
    """All tokens of `text` for the index, in order: words, CJK bigrams, then CJK unigrams."""
    tokens: list[str] = []
    unigrams: list[str] = []
    for kind, run in _runs(normalize(text)):
        if kind == "word":
            tokens.append(stem(run))
        else:
            tokens.extend(_bigrams(run))
            unigrams.extend(run)
    tokens.extend(unigrams)
    return tokens


def query_tokens(text: str, limit: int | None = MAX_QUERY_TOKENS) -> list[str]:
    """Distinct tokens of a query, in order of their latest appearance (bigrams for CJK; no
    stop words, and no bigram of two Chinese function words unless the query has nothing
    else): the last `limit` of them (None: all) — a long query is a conversation whose latest
    turns matter most, and a word said again lately counts as recent."""
    seen: dict[str, None] = {}
    stopped: list[str] = []

    def add(token: str) -> None:
        seen.pop(token, None)
        seen[token] = None

    for kind, run in _runs(normalize(text)):
        if kind == "word":
            if run not in ENGLISH_STOP_WORDS and not _OWNER_TOKEN.fullmatch(run):
                word = stem(run)
                if not _OWNER_TOKEN.fullmatch(word):  # "zzchhs" stems to a concept token's shape
                    add(word)
        elif len(run) == 1:
            add(run)
        else:
            for gram in _bigrams(run):
                if _function_bigram(gram):
                    stopped.append(gram)
                else:
                    add(gram)
    if not seen:  # a query of function words alone ("因为") still finds them
        for gram in stopped:
            add(gram)
    tokens = list(seen)
    return tokens if limit is None else tokens[max(0, len(tokens) - limit):]


LINE_DECAY = 0.8  # a conversation as a query: each earlier line weighs this much less than the next
LINE_WEIGHT_FLOOR = 0.2


def query_token_weights(text: str) -> dict[str, float]:
    """For a query of several lines (a conversation, latest line last): each token's weight
    by the latest line it appears in, LINE_DECAY per line back, never under
    LINE_WEIGHT_FLOOR; what the user said last matters most. Empty for a one-line query
    (every token weighs 1)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return {}
    weights: dict[str, float] = {}
    for back, line in enumerate(reversed(lines)):
        weight = max(LINE_WEIGHT_FLOOR, LINE_DECAY**back)
        for token in query_tokens(line, None):
            weights.setdefault(token, weight)
        for token in cjk_unigrams(line):
            weights.setdefault(token, weight)
    return weights


def _bounded(tokens: list[str], budget: int) -> list[str]:
    if len(tokens) <= budget:
        return tokens
    distinct = list(dict.fromkeys(tokens))
    if len(distinct) <= budget:
        return distinct
    half = budget // 2
    return distinct[:half] + distinct[-(budget - half) :]


def document_tokens(fields: Iterable[str], owners: Iterable[str] = (), concepts: list[str] | None = None) -> str:
    """The `search_tokens` column for a document made of `fields` (title, content, …).

    Fields are separated by FIELD_SEPARATOR so scoring can weigh them; `concepts` (tokens
    already made and bounded, memory.search.concepts), when given, are one more field after
    them, even empty; the owner tokens (see owner_token) come last, as a field of their own
    that scoring ignores. A very long document keeps its distinct tokens from the head and the
    tail (MAX_INDEX_TOKENS in all, the text fields only), so the end of a long text stays
    searchable; the stored text itself is never shortened.
    """
    field_tokens = [index_tokens(field) for field in fields]
    total = sum(len(tokens) for tokens in field_tokens)
    if total > MAX_INDEX_TOKENS:
        share = max(1, MAX_INDEX_TOKENS // max(1, len(field_tokens)))
        field_tokens = [_bounded(tokens, share) for tokens in field_tokens]
    if concepts is not None:  # bounded by their maker, outside the text fields' share
        field_tokens.append(concepts)
    owner_field = list(owners)
    if owner_field:
        field_tokens.append(owner_field)
    return FIELD_SEPARATOR.join(" ".join(tokens) for tokens in field_tokens)


def owner_token(team_id: int, kind: str, value: object = "") -> str:
    """A token naming who owns a row, indexed with its text so that a search can be limited
    to the caller's reach inside the index itself.

    kind: "t" the team, "g" the team's global memory, "s" a session (by pk), "w" a
    workspace, "u" an end user, "p" a (workspace, user) pair; string ids are hashed so the
    token stays one lower-case alphanumeric word on both databases.
    """
    if kind in ("t", "g"):
        return f"{OWNER_TOKEN_PREFIX}{team_id}{kind}"
    if kind == "s":
        return f"{OWNER_TOKEN_PREFIX}{team_id}s{int(value)}"
    if kind not in ("w", "u", "p"):
        raise ValueError(f"unknown owner kind {kind!r}")
    digest = hashlib.sha1(str(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{OWNER_TOKEN_PREFIX}{team_id}{kind}{digest}"


def episodic_token(team_id: int, workspace_id: str, user_id: str) -> str:
    """The owner token of all messages of one end user in one workspace (episodic recall)."""
    return owner_token(team_id, "p", f"{workspace_id}\x1f{user_id}")


def json_strings(value: object) -> Iterator[str]:
    """Every string leaf (and object key) of a JSON value, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield str(value)


_WHEN = re.compile(
    r"\b(when|what (?:date|day|time|year|month)|how long ago|which (?:year|month|day))\b"
    r"|什么时候|哪天|哪一天|几号|何时|哪年|哪个月"
)
TEMPORAL_CUES = """
yesterday today tomorrow tonight last ago week weekend month year recently earlier morning afternoon evening night
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december
""".split()
TEMPORAL_CUES_ZH = "昨天 今天 明天 前天 上周 上个 去年 今年 最近 周末 早上 晚上 月份 星期 礼拜".split()


def temporal_expansions(text: str) -> list[str]:
    """Tokens of words that date an event (yesterday, last week, 上周 …), for a query that
    asks when something happened (temporal query expansion); none for other queries."""
    if not _WHEN.search(normalize(text)):
        return []
    tokens = [stem(word) for word in TEMPORAL_CUES] + [token for word in TEMPORAL_CUES_ZH for token in _bigrams(word)]
    return list(dict.fromkeys(tokens))



# Characters that carry grammar rather than topic (particles, pronouns, the commonest verbs):
# no backoff to them.
CJK_STOP_CHARACTERS = frozenset("的了是我你他她它们在有不就也都和很会要说去到得着过"
                                "这那个吗呢吧啊哦嗯呀么什怎一上下来还没对把被让给跟从与而但")


# Characters that are function words on their own — pronouns, particles, demonstratives and
# question words, the copula, 就 也 都 很 和 在 有, 一 and 个, the negations 不 没. A bigram of two
# of them is grammar (我们, 什么, 这个, 是我, 一个, 不是, 没有): a query does not look for rows by
# it, as it does not look for English stop words, but it still counts at FUNCTION_BIGRAM_SHARE
# of its weight on the rows the other words find (function_bigrams; the index keeps it).
# Narrower than CJK_STOP_CHARACTERS on purpose: 过去, 得到 and 本地 are words that name something.
CJK_FUNCTION_CHARACTERS = frozenset("我你他她它们的了是就也都很和在有吗呢吧啊哦嗯呀么什怎这那个一不没")
FUNCTION_BIGRAM_SHARE = 0.5


def _function_bigram(gram: str) -> bool:
    return gram[0] in CJK_FUNCTION_CHARACTERS and gram[1] in CJK_FUNCTION_CHARACTERS


def function_bigrams(text: str, limit: int = MAX_QUERY_TOKENS) -> list[str]:
    """The distinct bigrams of two Chinese function words in `text`, in order of appearance:
    what query_tokens leaves out, to score the rows found by the other tokens (an expansion
    of memory.search.engine.rank). The last `limit` of them."""
    found = list(dict.fromkeys(gram for kind, run in _runs(normalize(text)) if kind == "cjk"
                               for gram in _bigrams(run) if _function_bigram(gram)))
    return found[max(0, len(found) - limit):]


def cjk_unigrams(text: str, limit: int = MAX_QUERY_TOKENS) -> list[str]:
    """The distinct Chinese (CJK) characters of a query's runs of two or more, but for
    CJK_STOP_CHARACTERS, in order of appearance: the last `limit`. A unigram backoff for
    the query's bigrams (memory.search.engine.rank's expansions)."""
    seen: dict[str, None] = {}
    for kind, run in _runs(normalize(text)):
        if kind == "cjk" and len(run) > 1:
            seen.update(dict.fromkeys(char for char in run if char not in CJK_STOP_CHARACTERS))
    tokens = list(seen)
    return tokens[max(0, len(tokens) - limit):]
