"""The English rule table of the rule-based extractor (R-EXTRACT; the seed's examples in English).

Patterns are case-insensitive. An item is one to four words ending at punctuation or at a
word that starts a new phrase ("cilantro when I cook" → cilantro); items that point at
something only the conversation knows (it, that, the color, my book) veto the match, so
"I love that!" or "I love your turtles" store nothing: precision over recall. The words the
table shares are in memory.capture.words_en, the rules about the user's own name, home and
work in memory.capture.facts_en.
"""

import re
from dataclasses import replace
from datetime import timedelta

from memory.capture.allergy_en import NONE_BUT, allergy, no_allergy
from memory.capture.facts_en import FACT_RULES, I_AM, SUBJECTS, favorite, said_as_fact
from memory.capture.rules_common import DAY, Finding, Language, Rule, Supposition, alternation, flavor_value
from memory.capture.words_en import (
    COOKING_WORDS,
    CUISINES,
    DENIAL,
    DIETS,
    END,
    END_WHOLE,
    FLAVOR_CUE,
    FLAVOR_RUN,
    FLAVORS,
    ITEM,
    NOT_A_TASK,
    NOT_REMINDED,
    PERSONAL_CIRCLE,
    POINTING,
    RETRACTION,
    SUPPOSE_FOLLOWS,
    SUPPOSE_HEDGE,
    SUPPOSE_THEN,
    TEXTS,
    clean,
    is_food,
    items,
    say,
)

__all__ = ["FLAVORS", "LANGUAGE", "TEXTS", "say"]  # what memory.capture.rules reads of a language table

# ---- builders: (match, message) -> findings -------------------------------------------------


def _avoid(match: re.Match[str], message: str) -> list[Finding]:
    """"don't recommend cilantro when I cook": food, or a cooking conversation."""
    found = items(match["item"], longest=3)
    if not found or not all(is_food(item) or COOKING_WORDS.search(message) for item in found):
        return []
    return [say("avoid", item.lower()) for item in found]


def _not_eat(match: re.Match[str], message: str) -> list[Finding]:
    return [say("avoid", item.lower()) for item in items(match["item"], longest=3)]


def _food_only(kind: str):
    def build(match: re.Match[str], message: str) -> list[Finding]:
        found = items(match["item"], longest=3)
        if not found or not all(is_food(item) for item in found):
            return []
        return [say(kind, item.lower()) for item in found]
    return build


def _limit(match: re.Match[str], message: str) -> list[Finding]:
    """"a little cilantro is fine now" → limit_ingredient {ingredient, amount: 少量}: the
    amount is the schema's word (seed 更新示例), so one value means one thing in both languages."""
    item = clean(match["item"], longest=3).lower()
    if not item or not (is_food(item) or COOKING_WORDS.search(message)):
        return []
    return [say("limit", item, value={"ingredient": item, "amount": "少量"})]


# The user's own negation right before the wish, with the words that may stand between: "I don't
# really like spicy food" and "I no longer want spicy food" do not want it (both were read as
# "prefers spicy food"); "Who doesn't love spicy food?" and "I don't just like it" are no negation.
_NEGATED = re.compile(r"\bI\s+(?:really\s+|just\s+|also\s+|still\s+)?(?:don'?t|do not|can'?t|cannot|won'?t|will not"
                      r"|never|no longer|rarely|hardly)"
                      r"(?:\s+(?:really|particularly|much|very|too|that|want|like|love|enjoy|eat|have|handle|need|care for|"
                      r"do|any|more|anymore))*\s*$", re.IGNORECASE)
_SOFTENED = re.compile(r"\b(?:really|particularly|that|too|much|rarely|hardly|cut back on|less)\b", re.IGNORECASE)
# Words right before the flavour that turn it away: "no spicy food please", "I'd like to avoid
# spicy food", "I need to cut out spicy food" (each was read as "prefers spicy food").
_AWAY = re.compile(r"\b(?:no|avoid|avoiding|cut out|cut back on|stop eating|quit|without|skip|less)\s*$", re.IGNORECASE)
_PAST = re.compile(r"\bused to\b|\bas a (?:kid|child)\b", re.IGNORECASE)  # "I used to love spicy food"


def _flavor(match: re.Match[str], message: str) -> list[Finding]:
    """"I like low oil and not too spicy" → flavor_profile {"oil": "low", "spicy": "low"};
    "I don't want spicy food" → {"spicy": "none"}, "I don't really like spicy food" → {"spicy":
    "low"} (a wish for more, negated, is none, or low when softened; any other negated wish is
    left alone)."""
    clause = match.string
    bare = clause.replace(match.group(0), "").strip(" ,.!?")
    if not (FLAVOR_CUE.search(clause) or not bare):
        return []
    value, phrases = flavor_value(match.group(0), FLAVORS)
    if not value:
        return []
    phrases = [phrase.lower() for phrase in phrases]
    if _PAST.search(clause[: match.start()]):
        return []
    negation = _NEGATED.search(clause[: match.start()]) or _AWAY.search(clause[: match.start()])
    if negation:
        if set(value.values()) != {"high"}:
            return []
        # "I don't want very spicy food" still wants some
        softened = bool(_SOFTENED.search(negation.group(0))) or match.group(0).lower().startswith(("very", "extra"))
        plain = [re.sub(r"^(?:very|extra)\s+", "", phrase) for phrase in phrases]
        words = ("less " if softened else "no ") + ", ".join(plain)
        return [say("flavor", words, value=dict.fromkeys(value, "low" if softened else "none"), entities=phrases)]
    return [say("flavor", ", ".join(phrases), value=value, entities=phrases)]


def _cuisine(match: re.Match[str], message: str) -> list[Finding]:
    return [say("cuisine", match["item"].capitalize())]


def _diet(match: re.Match[str], message: str) -> list[Finding]:
    if ended := match.groupdict().get("ended"):  # "I'm no longer vegetarian": ends the stored diet, if any
        if not said_as_fact(match, message):
            return []
        return [replace(say("diet_ended", ended.lower(), value={"no_longer": ended.lower()}), needs_target=True)]
    return [say("diet", match["item"].lower())]


PART_AILMENTS = {"stomach": "upset stomach", "tummy": "upset stomach", "head": "headache", "throat": "sore throat",
                 "tooth": "toothache", "back": "back pain"}
FEELINGS = ("sick", "unwell", "nauseous")


def _health(match: re.Match[str], message: str) -> list[Finding]:
    """"I have an upset stomach today" → health_condition "upset stomach" (session, expiring)."""
    part = match.groupdict().get("part")
    value = PART_AILMENTS[part.lower()] if part else match["ail"].lower()
    finding = say("health", value, said=match.string.strip())
    if value in FEELINGS:
        return [replace(finding, title=f"User feels {value}")]
    return [replace(finding, title=f"User has {'an' if value[0] in 'aeiou' else 'a'} {value}")]


def _like(kind: str):
    """A plain like or dislike, the whole phrase ("experimenting in the kitchen"); vetoed when
    the rest of the clause points at the conversation ("escaping to that world")."""
    def build(match: re.Match[str], message: str) -> list[Finding]:
        item = clean(match["item"], longest=6)
        rest = re.split(r"[,.;:!?]", match.string[match.end():], maxsplit=1)[0]
        if not item or POINTING & set(rest.lower().split()) - {"so", "very", "too", "much", "lot", "lots"}:
            return []
        return [say(kind, item)]
    return build


def _text(match: re.Match[str], *, longest: int = 14) -> str:
    text = match["x"].strip(" ,.;:!?\"'")
    words = text.split()
    if not 1 <= len(words) <= longest or words[0].lower() in {"it", "that", "this", "so", "something"}:
        return ""
    return text


def _note(match: re.Match[str], message: str) -> list[Finding]:
    """"Remember that I moved to Lisbon" → a note; "Remember that epic block in Game 7?" asks."""
    if match.string[match.end(): match.end() + 1] == "?":
        return []
    text = _text(match, longest=25)
    return [say("note", text[0].upper() + text[1:], entities=[])] if text and len(text.split()) >= 2 else []


def _decision(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match)
    finding = say("decision", text, entities=[]) if text else None
    return [replace(finding, kind="own_decision") if PERSONAL_CIRCLE.search(message) else finding] if finding else []


def _task(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match, longest=10)
    if (not text or NOT_A_TASK.match(text) or POINTING & set(text.lower().split()) - {"my", "our"}
            or NOT_REMINDED.search(match.string, 0, match.start())):
        return []
    finding = say("task", text, value={"task": text, "status": "open"}, entities=[])
    listed = re.match(r"\s*(?:todo|to-do|to do)\b", match.group(0), re.IGNORECASE)
    return [finding if listed else replace(finding, kind="own_task")]


_DETERMINER = re.compile(r"^(?:the|a|an|my|our|this|that|these|those)\s+", re.IGNORECASE)


def _task_done(match: re.Match[str], message: str) -> list[Finding]:
    """"I finished the report": closes the open task it names; stands alone only when it
    names something without pointing at the conversation ("finished this" does not)."""
    said = match["x"].strip()
    text = _DETERMINER.sub("", said)
    if not clean(text, longest=6):
        return []
    finding = say("task_done", text, value={"task": text, "status": "done"}, entities=[])
    return [replace(finding, needs_target=not clean(said, longest=6))]


def _correction(match: re.Match[str], message: str) -> list[Finding]:
    groups = match.groupdict()
    new = clean(groups["new"] or "", longest=5)
    old = clean(groups.get("old") or "", longest=5)
    if not new or old.lower() == new.lower() or (groups.get("old") and not old):
        return []
    return [say("correction", new, value={"from": old, "to": new} if old else {"to": new}, old=old or "?", entities=[new])]


def _rule(name: str, build, *patterns: str, **options) -> Rule:
    return Rule(name=f"en.{name}", patterns=tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns), build=build,
                **options)


PHRASE = r"[^,.;!?]{1,40}"
RULES = (
    _rule("health", _health,
          r"\bI\s+(?:have|'ve got|got|'ve had|have had)\s+(?:an?\s+|a bit of an?\s+|a slight\s+|a bad\s+)?"
          r"(?P<ail>upset stomach|stomach ache|stomachache|headache|migraine|cold|fever|sore throat|toothache|flu|cough"
          r"|hangover|tummy ache)\b",
          r"\bmy\s+(?P<part>stomach|tummy|head|throat|tooth|back)\s+(?:hurts|is upset|aches|is killing me)",
          rf"{I_AM}\s+(?:feeling\s+)?(?:a bit\s+|a little\s+)?(?P<ail>sick|unwell|nauseous)\b(?!\s+(?:of|and tired))",
          r"\bI\s+(?:feel|'m feeling)\s+(?:a bit\s+|a little\s+)?(?P<ail>sick|unwell|nauseous)\b(?!\s+(?:of|and tired))",
          subjects=SUBJECTS),
    # "I'm not allergic to anything", "I have no allergies", "I don't have any (food) allergies"
    # "…, except peanuts" names the one: an allergy (the second pattern of the allergy rule)
    _rule("no_allergy", no_allergy,
          rf"{I_AM}\s+not\s+allergic\s+to\s+any(?:thing|\s+food)\b{NONE_BUT}",
          rf"\bI\s+(?:have\s+no|don'?t\s+have\s+any|do\s+not\s+have\s+any)\s+(?:known\s+)?(?:food\s+)?allergies\b{NONE_BUT}",
          subjects=SUBJECTS),
    _rule("allergy", allergy,
          rf"{I_AM}(?:\s+(?:also|really|very|severely|quite|super|so|still|currently|now|actually|mildly|slightly|extremely"
          rf"|deathly|highly|seriously|badly|pretty|somewhat|kind of|kinda|a little|a bit)){{0,2}}\s+allergic\s+to\s+{ITEM}"
          rf"{END_WHOLE}",
          rf"\bI\s+have\s+(?:an?\s+)?{ITEM}\s+allerg(?:y|ies)\b",
          rf"(?:{I_AM}\s+not\s+allergic\s+to\s+any(?:thing|\s+food)|\bI\s+(?:have\s+no|don'?t\s+have\s+any)\s+"
          rf"(?:food\s+)?allergies)\s*,?\s+(?:except(?:\s+for)?|other than|besides|apart from|aside from)\s+{ITEM}"
          rf"{END_WHOLE}",
          subjects=SUBJECTS),
    _rule("diet", _diet,
          rf"(?:{I_AM}\s+no longer|\bI(?:'ve| have)?\s+(?:stopped|quit)\s+being)\s+(?:a\s+)?(?P<ended>{DIETS})\b",
          rf"{I_AM}\s+not\s+(?:a\s+)?(?P<ended>{DIETS})\s+any\s?more\b",
          rf"{I_AM}\s+(?:a\s+)?(?P<item>{DIETS})\b",
          subjects=SUBJECTS),
    _rule("flavor", _flavor, FLAVOR_RUN, subjects=SUBJECTS),
    _rule("limit", _limit,
          rf"\b(?:a little|a bit of|some|a small amount of|a touch of)\s+{ITEM}\s+(?:is|'s)\s+(?:fine|ok(?:ay)?|alright"
          r"|all right|acceptable)",
          rf"\bI\s+(?:can|could)\s+(?:have|eat|take|handle)\s+(?:a little|a bit of|some)\s+{ITEM}{END}"),
    _rule("avoid", _avoid,
          r"\b(?:don'?t|do not|never|please don'?t|stop)(?:\s+ever)?\s+(?:recommend(?:ing)?|suggest(?:ing)?|giv(?:e|ing) me"
          rf"|add(?:ing)?|put(?:ting)?|cook(?:ing)? with|serv(?:e|ing) me|includ(?:e|ing))\s+(?:any\s+)?{ITEM}{END}",
          rf"\bno\s+{ITEM}\s+(?:for me|please)\b"),
    _rule("not_eat", _not_eat, rf"\bI\s+(?:don'?t|do not|can'?t|cannot|never)\s+eat\s+(?:any\s+)?{ITEM}{END}"),
    _rule("not_have", _food_only("avoid"), rf"\bI\s+(?:can'?t|cannot)\s+(?:have|drink)\s+(?:any\s+)?{ITEM}{END}"),
    _rule("cuisine", _cuisine,
          rf"\bI\s+(?:really\s+)?(?:love|like|enjoy|prefer|adore)\s+(?P<item>{alternation(CUISINES)})\s+(?:food|cuisine"
          r"|dishes|cooking)\b", subjects=SUBJECTS),
    _rule("dislike_food", _food_only("avoid"),
          rf"\bI\s+(?:really\s+)?(?:hate|dislike|can'?t stand|don'?t like|do not like)\s+{ITEM}{END}"),
    _rule("like_food", _food_only("like_food"),
          rf"\bI\s+(?:really\s+)?(?:love|like|enjoy|adore)\s+(?:eating\s+)?{ITEM}{END}", subjects=SUBJECTS),
    _rule("correction", _correction,
          rf"\bnot\s+(?!only\b|just\b|because\b|that\b|to\b|so\b|as\b|even\b|really\b|sure\b|always\b|too\b|much\b"
          rf"|many\b|exactly\b)(?P<old>{PHRASE}?),?\s+but\s+(?:rather\s+)?(?P<new>{PHRASE})",
          rf"\bI\s+meant\s+(?!to\b|it\b|that\b|what\b|it'?s\b)(?P<new>{PHRASE}?)(?:,?\s+not\s+(?P<old>{PHRASE}))?(?=[,.;!?]|$)",
          rf"\bactually,?\s+(?:it'?s|it is|it was|that'?s|that is|make it)\s+(?P<new>{PHRASE}?),?\s+not\s+(?P<old>{PHRASE})",
          rf"\b(?:change|switch)\s+(?P<old>{PHRASE}?)\s+to\s+(?P<new>{PHRASE})", unit="sentence"),
    _rule("decision", _decision,
          r"\bwe(?:'ve| have)?\s+(?:finally\s+|just\s+)?(?:decided|agreed)\s+(?:to|on|that)\s+(?P<x>[^.!?;]{3,120})",
          r"\b(?:let'?s|we'?ll|we will|we'?re going to)\s+go\s+with\s+(?P<x>[^.!?;]{2,80})",
          r"^\s*decision\s*:\s*(?P<x>[^.!?;]{3,120})", unit="sentence"),
    _rule("task_done", _task_done,
          r"\b(?:I(?:'m| am)\s+(?:finally\s+)?done\s+with|I(?:'ve| have)?\s+(?:just\s+|finally\s+)?(?:finished|completed)"
          r"(?:\s+up)?(?:\s+with)?)\s+(?P<x>[^,.;!?]{2,60})",
          r"^\s*(?:done|finished)\s*:\s*(?P<x>[^.;!?]{2,60})"),
    _rule("task", _task,
          r"^\s*(?:todo|to-do|to do)\s*[:\-]\s*(?P<x>[^.;!?]{3,120})",
          r"\b(?:remind me to|I need to|I have to|I've got to|I must)\s+(?P<x>[^,.;!?]{3,80})"),
    _rule("fan", _like("like"), rf"\bI(?:'m| am)\s+(?:a\s+)?(?:big\s+|huge\s+|great\s+)?fan\s+of\s+{ITEM}{END}",
          rf"\bI(?:'m| am)\s+(?:really\s+|more\s+|so\s+|totally\s+)?into\s+{ITEM}{END}", generic=True,
          subjects=SUBJECTS),
    _rule("favorite", favorite,
          rf"\bmy\s+(?:all-time\s+)?favou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are)\s+{ITEM}{END_WHOLE}",
          generic=True),
    *FACT_RULES,
    _rule("like", _like("like"),
          rf"\bI\s+(?:really\s+|just\s+|absolutely\s+|also\s+|truly\s+)?(?:love|like|enjoy|adore)\s+{ITEM}{END_WHOLE}",
          generic=True, subjects=SUBJECTS),
    _rule("dislike", _like("dislike"),
          rf"\bI\s+(?:really\s+)?(?:hate|dislike|can'?t stand|don'?t like|do not like)\s+{ITEM}{END_WHOLE}", generic=True,
          subjects=SUBJECTS),
    _rule("note", _note, r"(?:^|(?<=[,;:!?]))\s*(?:please\s+)?remember(?:\s+that|\s*[:,])\s*(?P<x>[^.!?;]{3,200})",
          generic=True, unit="sentence", quoted=True),
)

# What may stand between a supposition's opener and the statement it governs, one token at a time
# (a single space each, so a run of spaces cannot be split many ways): time words, someone
# finding, saying or thinking it ("if it turns out", "if my doctor says", "if I find out").
_FINDER = (r"(?:I|it|you|they|he|she|someone|anyone|we|my \w+|the \w+) (?:\w+ )?(?:turns? out|turned out|think|thinks"
           r"|thought|believe|believes|discover|discovers|discovered|find out|finds out|found out|find|finds|found"
           r"|learn|learns|learned|tell me|tells me|told me|say|says|said|realize|realizes|decide|decides|confirm"
           r"|confirms)")
# "Say I'm vegan, what would you cook?": say opens one only where the sentence starts, or after
# ok, so, well ("I'd say I'm vegan mostly" is a hedge; "I eat mostly plants, say I'm vegetarian 90%
# of the time" an estimate).
_SUPPOSE_OPENS = (r"(?<!\bI )(?<!\bto )\bsuppose\b|\bsupposing\b|\bimagine\b|\bassuming\b|\blet's say\b"
                  r"|\blet us say\b|\bwhat if\b|\bin case\b|\bpretend(?:ing)?(?: that)?\b|\bhypothetically\b"
                  r"|(?<!\beven )\bif\b|\bunless\b|(?:^|(?<=\bok )|(?<=\bok, )|(?<=\bokay )|(?<=\bokay, )|(?<=\bso )|(?<=\bso, )"
                  r"|(?<=\bwell )|(?<=\bwell, )|(?<=\bnow )|(?<=\bnow, ))say\b")
SUPPOSED_BETWEEN = (rf"(?:\s|,|hypothetically|that|say|tomorrow|today|one day|someday|some day|later|suddenly"
                    rf"|at some point|there(?:'s| is| was) a chance|it(?:'s| is) possible|{_FINDER})*")

# "My husband hates cilantro, me too", "My wife is vegetarian and so am I", "Tom doesn't eat pork,
# neither do I": the user says the clause before of themselves (Language.me_too).
_ME_TOO = re.compile(r"(?P<before>[^,;]{2,119}?[^,;\s])(?:\s*+[,;]\s*+|\s++)(?:and\s+|but\s+)?(?:so am I|so do I|so can I"
                     r"|so have I|me too|me as well|I am too|I'm too|I do too|I am as well|I do as well|same here|same with me"
                     r"|same for me|neither do I|neither am I|neither can I|nor do I|nor am I|me neither|me either"
                     r"|I don't either|I'm not either|I can't either)[.!~\s]*", re.IGNORECASE)  # (me too? asks)
_NOT_EITHER = re.compile(r"\b(?:neither|nor|either)\b", re.IGNORECASE)
_NOT = re.compile(r"n't\b|\b(?:not|never|no)\b", re.IGNORECASE)
_ME_TOO_WORDS = re.compile(r"\b(?:too|so|neither|nor|same|either|as well)\b", re.IGNORECASE)  # a quick look first
_BASE_VERBS = (r"love|like|hate|eat|prefer|avoid|live|work|drink|enjoy|dislike|cook|need|want|follow|keep|go|stay|play"
               r"|speak|use|can't|cannot|can|won't|will|don't|do|have|are|were|aren't|weren't")
# Someone else, then what they do: "My husband hates", "My little sister is", "Tom and Anna love",
# "Many people are", "She's allergic" (the 's of a state only: not "My sister's husband").
_SOMEONE_DOES = re.compile(
    r"(?:(?i:my|our)\s+(?:\w+\s+)??\w+|(?!(?:Nobody|No|None|Nothing|Noone|Neither|Either)\b)[A-Z][a-z]+(?:\s+and\s+[A-Z][a-z]+)?"
    r"|(?i:he|she|they|both of them)|(?i:many|most|lots of|a lot of|some) people|(?i:everyone)(?: else)?)"
    r"(?:\s+(?P<adverb>(?:also|really|never|always|usually|sometimes|often|rarely|seldom|mostly|generally|just|totally"
    r"|absolutely|actually|definitely)\s+)?"
    rf"(?P<verb>is|was|has|does|doesn't|isn't|wasn't|hasn't|{_BASE_VERBS}|[a-z]+s)"
    r"|(?P<state>'s)(?=\s+(?:allergic|vegan|vegetarian|pescatarian|lactose|gluten|a|an|from|into|not)\b))(?=\s|$)")
_AS_THE_USER = {"is": "am", "are": "am", "'s": "am", "was": "was", "were": "was", "has": "have", "does": "do",
                "doesn't": "don't", "isn't": "am not", "aren't": "am not", "wasn't": "wasn't", "weren't": "wasn't",
                "hasn't": "haven't"}


def _first_person(verb: str) -> str:
    """The verb of "she hates", "he is", "they are" as said of the user (hate, am, am)."""
    lowered = verb.lower()
    if lowered in _AS_THE_USER:
        return _AS_THE_USER[lowered]
    if lowered.endswith("ies") and len(lowered) > 4:
        return lowered[:-3] + "y"
    if lowered.endswith(("ches", "shes", "sses", "xes", "zzes", "oes")):
        return lowered[:-2]
    if lowered.endswith("s") and not lowered.endswith(("ss", "us", "is")):
        return lowered[:-1]
    return lowered


def me_too(sentence: str) -> str:
    """`sentence` with a closing "me too" (so am I, neither do I) after a clause whose subject is
    someone else written out as that clause said of the user: "My husband hates cilantro, me too"
    → "My husband hates cilantro, I hate cilantro". Otherwise unchanged."""
    found = _ME_TOO.fullmatch(sentence) if _ME_TOO_WORDS.search(sentence) else None
    if not found or found["before"].rstrip().endswith("?"):
        return sentence
    # "neither do I" answers only what someone does not do ("me too" is said after both)
    if _NOT_EITHER.search(sentence, found.end("before")) and not _NOT.search(found["before"]):
        return sentence
    before = found["before"].strip()
    # the nearest statement: "Tom is a nurse and Anna is a teacher, me too" is the teacher's
    parts = re.split(r"\s+(?:and|but)\s+", before)
    does = next((match for match in (_SOMEONE_DOES.match(part) for part in reversed(parts)) if match), None)
    if does is None or re.match(r"(?:I|I'm|i|i'm)\b", parts[-1]):  # the user's own, last
        return sentence
    verb = does["verb"] or does["state"]
    return f"{before}, I {does['adverb'] or ''}{_first_person(verb)}{does.string[does.end():]}"


REQUEST_VERBS = r"(?:recommend|suggest|give me|serve|add|put|use|cook with|remind|book|schedule|send|include|mention)"
LANGUAGE = Language(
    code="en",
    rules=RULES,
    explicit=re.compile(
        r"(?:^|(?<=[,;:!?.]))\s*(?:please\s+)?remember(?:\s+that|\s*[:,]|\s+(?=I\b|I'm\b|my\b))|\bfrom now on\b"
        r"|\bgoing forward\b"
        r"|\bfrom (?:today|tomorrow) on\b|\bstarting (?:today|tomorrow|now)\b|\bmake a note\b|\bkeep in mind\b"
        rf"|(?:^|(?<=[,;:!?.]))\s*(?:please\s+)?(?:don'?t\s+ever|never(?:\s+ever)?|always)\s+{REQUEST_VERBS}\b",
        re.IGNORECASE),
    lasting=re.compile(r"\b(?:from now on|going forward|from (?:today|tomorrow) on|(?:starting|as of) (?:today|tomorrow|now)"
                       r"(?: on)?)\b", re.IGNORECASE),
    temporal=(
        (re.compile(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b", re.IGNORECASE), DAY),
        (re.compile(r"\btomorrow\b", re.IGNORECASE), 2 * DAY),
        (re.compile(r"\b(?:these days|for a few days|for the next few days|for a couple of days)\b", re.IGNORECASE), 3 * DAY),
        (re.compile(r"\bthis week\b", re.IGNORECASE), timedelta(days=7)),
        (re.compile(r"\b(?:for now|right now|at the moment|for the time being)\b", re.IGNORECASE), DAY),
    ),
    # "Suppose I'm allergic to shellfish", "If I'm vegetarian, what should I cook?", "If it turns out
    # I'm allergic…", "If my doctor says I'm allergic…": suppositions. Not "If anyone asks I'm
    # allergic to peanuts", "Not sure if this matters but I'm vegan", "If you're cooking I don't eat
    # cilantro" (SUPPOSED_BETWEEN); nor a hedge ("I suppose I'm vegetarian now", "You can assume
    # I'm vegan", "Even if I'm vegan I eat honey").
    supposition=Supposition(
        opens=re.compile(_SUPPOSE_OPENS, re.IGNORECASE),
        between=re.compile(SUPPOSED_BETWEEN, re.IGNORECASE),
        alone=re.compile(r"(?:just |purely )?(?:hypothetically|theoretically)(?: speaking)?|in theory|if so|let's pretend"
                         r"|let's say|suppose|imagine|what if", re.IGNORECASE),
        imagines=re.compile(r"suppose\b|supposing\b|imagine\b|let's say\b|let us say\b|what if\b|pretend\b"
                            r"|hypothetically\b", re.IGNORECASE),
        consequence=re.compile(r",|\bthen\b", re.IGNORECASE),
        # "If I get pregnant, I can't eat sushi": the consequence of a change or a state of the
        # user's ("If I get pregnant", "If I'm vegan", "If we move to Chengdu") is supposed too; not
        # of what they do ("If we order takeout", "If I'm cooking", "If we go out"), nor after a hedge
        # about the saying ("If I'm being honest", "In case I didn't mention it").
        condition=re.compile(rf"(?:{_SUPPOSE_OPENS})\s+(?:that\s+)?(?:I|we)(?:\s+(?:ever|really|do|did|actually|suddenly))?"
                             r"(?:\s+(?:get|got|become|became|turn|turned|end up|ended up|start|started|move|moved"
                             r"|go vegan|go vegetarian|go keto|find out|am|was|were|be|have been)\b"
                             r"|(?:'m|\s+am|'re|\s+are)(?!\s+\w+ing\b))",
                             re.IGNORECASE),
        hedge=SUPPOSE_HEDGE,
        then=SUPPOSE_THEN,
        follows=SUPPOSE_FOLLOWS,
        apart=re.compile(r"\b(?:but(?! also)|although|though|anyway|by the way|btw)\b", re.IGNORECASE),
        would=re.compile(r"\b(?:I|we)(?:'d|\s+would|\s+could|\s+might)\b", re.IGNORECASE),
    ),
    me_too=me_too,
    denial=DENIAL,
    retraction=RETRACTION,
)
