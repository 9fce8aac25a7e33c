"""What the rule tables of the rule-based extractor are made of (R-EXTRACT; seed 000 抽取流程,
受控 Schema, 写入示例).

A language module (rules_zh, rules_en) is a table of Rules: a regular expression and a
builder that turns a match into Findings. A Finding says what the user said (kind, key,
value, the words for title and content) and nothing about where it goes: scope, expiry,
explicit intent and what it supersedes are decided once, for every language, by
memory.capture.rules.

KINDS is the second table: per kind, the node type, domain, controlled key, category and the
weights the seed's examples use (avoid_ingredient 0.98/0.9, flavor_profile 0.95/0.85).
"""

import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memory import schema_defaults

COOKING = schema_defaults.COOKING
GENERAL = "general"  # memory.services.node_input.DEFAULT_DOMAIN
DIET_PATH = ("生活技能", "做饭", "饮食偏好")
DAY = timedelta(hours=24)


@dataclass(frozen=True)
class Kind:
    """How a kind of statement is stored: type, domain, key ('' = one node per text),
    category, confidence and importance (0–1). `project`: it belongs to the workspace
    (decisions, tasks), not to the user. `temporary`: a passing state even without a time
    word, kept this long. `temporary_type`: the type it takes when temporary (a passing taste
    is a constraint, seed 冲突消解: 临时有效约束 > 长期偏好)."""

    type: str
    key: str = ""
    domain: str = GENERAL
    category_path: tuple[str, ...] = ()
    confidence: float = 0.8
    importance: float = 0.5
    project: bool = False
    temporary: timedelta | None = None
    temporary_type: str = ""


KINDS: dict[str, Kind] = {
    "avoid": Kind("preference", "avoid_ingredient", COOKING, DIET_PATH, 0.98, 0.9),
    "limit": Kind("preference", "limit_ingredient", COOKING, DIET_PATH, 0.95, 0.85),
    "like_food": Kind("preference", "preferred_ingredient", COOKING, DIET_PATH, 0.9, 0.6),
    "cuisine": Kind("preference", "preferred_cuisine", COOKING, DIET_PATH, 0.9, 0.6),
    "flavor": Kind("preference", "flavor_profile", COOKING, DIET_PATH, 0.95, 0.85, temporary_type="constraint"),
    "diet": Kind("preference", "dietary_restriction", COOKING, DIET_PATH, 0.95, 0.9),
    "allergy": Kind("constraint", "allergy", COOKING, DIET_PATH, 0.98, 0.95),
    "allergy_other": Kind("constraint", confidence=0.9, importance=0.8),
    # "I'm not allergic to anything", 我没有任何过敏: a fact, which an allergy said later replaces
    "no_allergy": Kind("fact", "no_allergies", confidence=0.85, importance=0.6),
    # "I'm no longer vegetarian", 我不再吃素了: ends the diet it names (needs_target), said as a fact
    "diet_ended": Kind("fact", confidence=0.9, importance=0.7),
    "health": Kind("constraint", "health_condition", COOKING, DIET_PATH, 0.9, 0.8, temporary=DAY),
    "like": Kind("preference", confidence=0.8, importance=0.5),
    "dislike": Kind("preference", confidence=0.8, importance=0.5),
    "favorite": Kind("preference", confidence=0.85, importance=0.5),
    "fact_lives": Kind("fact", "home", confidence=0.85, importance=0.6),
    "fact_works": Kind("fact", "workplace", confidence=0.85, importance=0.6),
    "fact_named": Kind("fact", confidence=0.85, importance=0.5),
    "fact_name": Kind("fact", "name", confidence=0.85, importance=0.7),
    "fact_job": Kind("fact", "occupation", confidence=0.85, importance=0.6),
    "note": Kind("fact", confidence=0.9, importance=0.7),
    "decision": Kind("decision", confidence=0.85, importance=0.7, project=True),
    # A decision of the user's own circle (PERSONAL_CIRCLE of each language): theirs, as own_task.
    "own_decision": Kind("decision", confidence=0.85, importance=0.7),
    "task": Kind("task", confidence=0.8, importance=0.6, project=True),
    # The user's own (remind me to, I need to, 提醒我, 我需要): theirs, not the workspace's, where
    # every other user of it would be told (seed: session for current tasks; the user's when asked).
    "own_task": Kind("task", confidence=0.8, importance=0.6),
    "task_done": Kind("task", confidence=0.8, importance=0.5, project=True),
    "correction": Kind("correction", confidence=0.9, importance=0.8),
}

# The user's own name, home, workplace and occupation: one value each (a key without a schema
# rule is one-valued), so a new one supersedes the old (我叫小红，不，我叫小绿; I moved to Berlin).
# The field each kind's value names, as capture's facts stored it before they had keys
# ({"lives": "杭州"}): such a keyless fact is replaced by a keyed one as well.
PROFILE_FIELDS = {"fact_lives": "lives", "fact_works": "works", "fact_name": "name", "fact_job": "job"}

# A new ingredient preference replaces an active one of these keys about the same ingredient.
REPLACES = {
    "avoid_ingredient": ("preferred_ingredient", "limit_ingredient"),
    "limit_ingredient": ("avoid_ingredient", "preferred_ingredient"),
    "preferred_ingredient": ("avoid_ingredient", "limit_ingredient"),
}


@dataclass(frozen=True)
class Finding:
    """One statement a rule understood. `item` is what it is about (香菜, cilantro, a task's
    text), used to find the memory it replaces; `old` is a correction's old value.
    `needs_target`: too vague to stand alone ("finished this"), kept only when it closes or
    corrects an active memory."""

    kind: str
    lang: str  # zh | en
    value: Any
    title: str
    content: str
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    item: str = ""
    old: str = ""
    rule: str = ""
    needs_target: bool = False  # worth proposing only as the successor of a memory it replaces
    key: str = ""  # the finding's own key where its kind has none (favorite_color): one value each

    @property
    def spec(self) -> Kind:
        return KINDS[self.kind]


@dataclass(frozen=True)
class Subjects:
    """Who a sentence speaks of, for the rules about the user's own tastes and health.

    `others` finds a mention of someone else (我女儿, 我妈, a pet, a friend; "my husband"),
    `user` a mention of the user (我; "I"), `lead` what may stand between the start of a clause
    and its subject (我, 我家的). A match is about someone else when the last such mention
    before it is in its own clause, or is the subject of an earlier clause, and the user is not
    named between that mention and the match's end: 我女儿今年六岁，对虾过敏 is the daughter's;
    我老公什么都能吃，我海鲜过敏 and 带女儿出去吃饭，不要放辣 are the user's. A question (a clause
    ending in "?": 你能吃辣吗？, or one `asking` finds: 谁不爱吃辣呢) states no taste either.

    With `topic_user` (facts: 住在杭州, 是一名护士 carried from 我叫小红), a match that begins its
    clause without naming the user is the user's only when the clause before it has the user as
    its subject, or names nobody and begins as `carries` says (a fact carried on itself): 我叫
    小红，住在杭州，是一名护士 but not 我老公比我大五岁，是医生, 我叫小红，小明是我男朋友，是医生, nor
    a sentence's first clause (住在楼下的邻居对猫过敏).

    `joint` (before, after): a mention joined to the user (before: the text up to it ends so,
    after: the text after it begins so) names them together, and so is no mention of someone
    else: 我和老公都不吃香菜, 我跟我女儿都对花生过敏 are the user's too.

    `named(before, match)`: whether what a clause says before a match names its subject, someone
    else (王小明不吃香菜); asked only when that is at most NAMED_LONGEST characters and the match
    does not begin with the user (阿姨，我住在杭州 speaks to her).

    Read once per sentence; each match costs a few binary searches, so a long message stays
    linear."""

    NAMED_LONGEST = 48

    others: re.Pattern[str]
    user: re.Pattern[str]
    lead: re.Pattern[str]
    asking: re.Pattern[str] | None = None
    topic_user: bool = False
    carries: re.Pattern[str] | None = None
    joint: tuple[re.Pattern[str], re.Pattern[str]] | None = None
    named: Callable[[str, str], bool] | None = None

    def _joined(self, sentence: str, mention: re.Match[str]) -> bool:
        if self.joint is None:
            return False
        before, after = self.joint
        return bool(before.search(sentence, max(0, mention.start() - 8), mention.start())
                    and after.match(sentence, mention.end()))

    def reader(self, sentence: str) -> Callable[[int, int], bool]:
        """`vetoed(start, end)` for matches of `sentence`: about someone else, or asked."""
        starts = [0] + [index + 1 for index, char in enumerate(sentence) if char == ","]
        ends: list[int] = []  # every mention's end, in order
        heads: list[int] = []  # the ends of mentions that are their clause's subject
        subject = [""] * len(starts)  # per clause: "other", "user" or "" (names nobody first)
        for mention in self.others.finditer(sentence):
            if self._joined(sentence, mention):
                continue
            ends.append(mention.end())
            index = bisect_right(starts, mention.start()) - 1
            if self.lead.fullmatch(sentence[starts[index]: mention.start()].strip()):
                heads.append(mention.end())
                subject[index] = "other"
        users = [mention.start() for mention in self.user.finditer(sentence)]
        earlier = [""] * len(starts)  # whose the clause before is: its subject, or carried on
        firsts = []  # where each clause's words begin
        for index, clause_start in enumerate(starts):
            while clause_start < len(sentence) and sentence[clause_start].isspace():
                clause_start += 1
            firsts.append(clause_start)
            if not subject[index] and self.user.match(sentence, clause_start):
                subject[index] = "user"
            carried = self.carries is not None and bool(self.carries.match(sentence, clause_start))
            if index + 1 < len(starts):
                earlier[index + 1] = subject[index] or (earlier[index] if carried else "")

        asked = []  # per clause: a question
        for index, clause_start in enumerate(starts):
            clause = sentence[clause_start: starts[index + 1] - 1 if index + 1 < len(starts) else len(sentence)]
            asked.append(clause.rstrip().endswith("?") or (self.asking is not None and bool(self.asking.search(clause))))

        def vetoed(start: int, end: int) -> bool:
            index = bisect_right(starts, start) - 1
            clause_start = starts[index]
            if asked[index]:
                return True
            if (self.named is not None and 0 < start - firsts[index] <= self.NAMED_LONGEST
                    and not self.user.match(sentence, start) and self.named(sentence[firsts[index]: start],
                                                                             sentence[start:end])):
                return True
            if self.topic_user and start == firsts[index]:
                if not self.user.match(sentence, start) and earlier[index] != "user":
                    return True
            found = [ends[i - 1] for i in (bisect_right(ends, start),) if i and ends[i - 1] > clause_start]
            found += [heads[i - 1] for i in (bisect_right(heads, start),) if i]
            if not found:
                return False
            mention_end = max(found)
            after = bisect_left(users, mention_end)
            return not (after < len(users) and users[after] < end)

        return vetoed


@dataclass(frozen=True)
class Rule:
    """A row of a language table: patterns (alternatives, each with the groups `build`
    reads) and `build(match, message)`, which returns the findings of one match ([] to veto
    it); `message` is the whole prepared message, for context words. A `generic` rule (plain
    likes, facts, notes) runs after every specific one, so where both match the same words the
    specific reading wins (我喜欢少油少辣 is a flavor, not a like). `unit`: matched against each
    clause, or the whole sentence (for patterns that span a comma: 不是X，是Y). `subjects`, for a
    rule about the user's own tastes and health: a match about someone else, or asked, is
    vetoed (Subjects). `quoted`: the rule keeps the words of its group `x` as said (a note); a
    question or a supposition with no consequence said so is no memory (Supposition.leaves_open)."""

    name: str
    patterns: tuple[re.Pattern[str], ...]
    build: Callable[[re.Match[str], str], list[Finding]]
    generic: bool = False
    unit: str = "clause"
    subjects: Subjects | None = None
    quoted: bool = False  # keeps the user's words as said (a note): a question or open supposition is none


@dataclass(frozen=True)
class Language:
    """A language module's tables: its rules in priority order; EXPLICIT, the words that show
    the user wants a lasting memory (记住, from now on); LASTING, phrases that make a time word
    the start of a lasting change (从今天开始, from today on); TEMPORAL, time words of a
    passing state with how long it lasts; SUPPOSITION, what makes a statement a supposition
    instead of a fact (Supposition); ME_TOO, a sentence with each clause that says "me too"
    written out as the clause before it said of the user (我老公不吃香菜，我也是 → 我老公不吃香菜,我也
    不吃香菜); RETRACTION, a clause that takes back what was just said (开玩笑的, just kidding),
    searched in each clause, its start where the taking back stands
    (memory.capture.reading.taken_back_before);
    DENIAL, words before a statement in its clause that deny saying it (我从来没说过, "I never
    said"): the statement is no one's."""

    code: str
    rules: tuple[Rule, ...]
    explicit: re.Pattern[str]
    lasting: re.Pattern[str]
    temporal: tuple[tuple[re.Pattern[str], timedelta], ...] = field(default=())
    supposition: "Supposition | None" = None
    me_too: Callable[[str], str] | None = None
    retraction: re.Pattern[str] | None = None
    denial: re.Pattern[str] | None = None


@dataclass(frozen=True)
class Supposition:
    """What makes a statement a supposition, which no rule may read as a fact (R-EXTRACT): 如果我
    对花生过敏怎么办, 假如我是素食者, "Suppose I'm allergic to shellfish", "If I'm vegetarian, what
    should I cook?".

    A word that `opens` a supposition (如果, 要是, if, what if) governs a statement only when what
    stands between them is `between` (fullmatch): the user and their adverbs (万一我本来就对花生
    过敏), or someone finding or thinking it ("if it turns out I'm allergic", 如果你发现我对花生
    过敏). Anything else means the supposition is about something else and the statement is said
    as a fact: "If anyone asks I'm allergic to peanuts", "Not sure if this matters but I'm
    vegetarian", 如果你推荐菜的话记住我对花生过敏, 如果没记错我对花生过敏. Only the nearest opener
    counts, in the statement's clause and at most WINDOW characters before it (so the cost of a
    long message stays linear). `after`: a mark right after the statement that makes it the
    condition (我不吃辣的话，你推荐什么; not 我吃海鲜的话会过敏, where 的话 is "when").

    A clause that is only a supposition (`alone`: "Hypothetically speaking, I'm allergic to
    peanuts", "If so, I'm vegan", 假如说，我是素食者) governs the clause after it. Words kept as
    said (a note) are supposed only when they imagine (`imagines`: "Remember, suppose I'm vegan",
    假如我是素食者) with no `consequence`; a condition is an instruction ("Remember: if the build
    fails ping me", 记住，万一我迟到了你们先开始).

    A statement said as the consequence of a supposition of the user's own (`condition`: 要是我怀孕
    了, "If I get pregnant") is supposed too: in the next clause when that clause starts as a
    consequence does (`follows`: 我就, 那我就; "I can't", "I'll", "then"), or after `then` in the
    condition's own clause (要是我怀孕了我就不能吃生鱼片). Only then: a fact in a clause after a
    condition stays a fact ("If we go out for dinner, I'm allergic to shellfish", 如果我点外卖，
    我都不要香菜), as does one after a hedge about the saying or a when-I-eat condition (`hedge`,
    searched in the condition: 如果我没看错, "If I'm being honest", "In case I didn't mention it",
    如果我吃花生，我就会过敏 says when). A statement the consequence's clause sets `apart` (but, 但是:
    "If I'm home tonight, I'll make pasta but I don't eat pork") is said as a fact."""

    WINDOW = 40

    opens: re.Pattern[str]
    between: re.Pattern[str]
    alone: re.Pattern[str]
    imagines: re.Pattern[str]
    consequence: re.Pattern[str]
    condition: re.Pattern[str]
    hedge: re.Pattern[str]
    then: re.Pattern[str]
    follows: re.Pattern[str]
    apart: re.Pattern[str]
    after: re.Pattern[str] | None = None
    would: re.Pattern[str] | None = None  # what the user would do then (我会, I'd), for leaves_open

    def governs(self, sentence: str, start: int, end: int) -> bool:
        """Whether the statement at sentence[start:end] is supposed."""
        if self.after is not None and self.after.match(sentence, end):
            return True
        comma = sentence.rfind(",", 0, start)
        low = max(comma + 1, start - self.WINDOW)
        opened = None
        for found in self.opens.finditer(sentence, low, start):
            opened = found
        if opened is not None:
            if self.between.fullmatch(sentence, opened.end(), start) is not None:
                return True
            return any(then.end() <= start and self.between.fullmatch(sentence, then.end(), start) is not None
                       and self._supposes_the_user(sentence[opened.start(): then.start()])
                       for then in self.then.finditer(sentence, opened.end(), end))  # (`then` may look ahead)
        if comma < 0 or start - comma > self.WINDOW:
            return False
        previous = sentence.rfind(",", 0, comma)
        before = sentence[previous + 1: comma].strip()
        if (0 < len(before) <= self.WINDOW and self.alone.fullmatch(before) is not None
                and self.between.fullmatch(sentence, comma + 1, start) is not None):
            return True
        return (len(before) <= self.WINDOW and self.follows.match(sentence[comma + 1: end].lstrip()) is not None
                and not self.apart.search(sentence, comma + 1, start)
                and self._supposes_the_user(before) and not self.then.search(before))

    def _supposes_the_user(self, clause: str) -> bool:
        """Whether `clause` (at most WINDOW characters) opens a supposition of the user's own that
        is no hedge (see the class doc)."""
        found = self.condition.match(clause)
        return found is not None and not self.hedge.search(clause, found.end())

    def leaves_open(self, text: str) -> bool:
        """Whether words kept as said imagine with no consequence (see the class doc), or imagine
        a change of the user's and what the user would do then (记住，要是我是素食者，我会多吃豆腐;
        "Remember, if I were vegetarian I'd eat more tofu": no memory, as without 记住)."""
        text = text.strip()
        opened = self.imagines.match(text)
        if opened is not None and not self.consequence.search(text, opened.end()):
            return True
        found = self.condition.match(text) if self.would is not None else None
        then = self.would.search(text, found.end()) if found is not None else None
        return then is not None and not self.hedge.search(text, found.end(), then.start())


def flavor_value(text: str, table: tuple[tuple[str, dict[str, str]], ...]) -> tuple[dict[str, str], list[str]]:
    """The controlled flavor_profile value of the flavor phrases in `text`, merged into one
    object, and the phrases as said, in order: 少油少辣 → ({"oil": "low", "spicy": "low"},
    ["少油", "少辣"]). Longer phrases win (不吃辣 before 吃辣)."""
    found: list[tuple[int, str, dict[str, str]]] = []
    rest = text
    for phrase, parts in sorted(table, key=lambda row: -len(row[0])):
        match = re.search(rf"(?<![a-z]){re.escape(phrase)}(?![a-z])", rest, re.IGNORECASE)
        if match:
            found.append((match.start(), match.group(0), parts))
            rest = rest[: match.start()] + "\x00" * len(phrase) + rest[match.end():]
    found.sort(key=lambda row: row[0])
    value: dict[str, str] = {}
    for _, _, parts in found:
        value.update(parts)
    return value, [phrase for _, phrase, _ in found]


def alternation(words) -> str:
    """A regex alternation of literal words, longest first (so 不吃辣 wins over 吃辣)."""
    return "|".join(re.escape(word) for word in sorted(set(words), key=len, reverse=True))


def value_strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in value_strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in value_strings(item)]
    return []


def replace_in(value: Any, old: str, new: str) -> Any:
    """`value` with `old` replaced by `new` in every string (case ignored)."""
    if isinstance(value, str):
        return re.sub(re.escape(old), lambda _: new, value, flags=re.IGNORECASE)
    if isinstance(value, dict):
        return {name: replace_in(item, old, new) for name, item in value.items()}
    if isinstance(value, list):
        return [replace_in(item, old, new) for item in value]
    return value


def same_text(left: str, right: str) -> bool:
    return bool(left) and left.strip().casefold() == right.strip().casefold()


def canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
