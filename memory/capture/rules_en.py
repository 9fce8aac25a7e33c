"""The English rule table of the rule-based extractor (R-EXTRACT; the seed's examples in English).

Patterns are case-insensitive. An item is one to four words ending at punctuation or at a
word that starts a new phrase ("cilantro when I cook" → cilantro); items that point at
something only the conversation knows (it, that, the color, my book) veto the match, so
"I love that!" or "I love your turtles" store nothing: precision over recall.
"""

import re
from dataclasses import replace
from datetime import timedelta

from memory.capture.rules_common import DAY, Finding, Language, Rule, Subjects, alternation, flavor_value

FOOD = set(
    """cilantro coriander onion onions garlic ginger peanut peanuts nuts shellfish shrimp shrimps prawns crab lobster
    fish seafood pork beef lamb chicken meat eggs egg milk dairy cheese butter gluten wheat soy tofu mushroom mushrooms
    tomato tomatoes pepper peppers chili chilli chilies olives celery eggplant broccoli cauliflower spinach kale avocado
    mayo mayonnaise msg sugar chocolate coconut strawberries bananas bacon ham sausage cucumber beans lentils rice pasta
    bread noodles sushi lactose sesame cream yogurt honey coffee alcohol wine beer mustard ketchup anchovies tuna salmon
    oysters clams mussels squid pineapple mango durian licorice cinnamon curry spice spices""".split()
)
CUISINES = ("Italian Chinese Mexican Thai Japanese Indian French Korean Sichuan Cantonese Vietnamese Greek Spanish "
            "Mediterranean Turkish Lebanese Ethiopian Moroccan American Southern Cajun").split()
COOKING_WORDS = re.compile(r"\b(?:cook\w*|recipes?|dish(?:es)?|food|meals?|dinner|lunch|breakfast|eat\w*|kitchen|menu)\b",
                           re.IGNORECASE)

FLAVORS = (
    ("not too spicy", {"spicy": "low"}), ("not very spicy", {"spicy": "low"}), ("less spicy", {"spicy": "low"}),
    ("mildly spicy", {"spicy": "low"}), ("a little spicy", {"spicy": "low"}), ("not spicy", {"spicy": "none"}),
    ("no spice", {"spicy": "none"}), ("non-spicy", {"spicy": "none"}), ("nothing spicy", {"spicy": "none"}),
    ("very spicy", {"spicy": "high"}), ("extra spicy", {"spicy": "high"}), ("spicy food", {"spicy": "high"}),
    ("low oil", {"oil": "low"}), ("less oil", {"oil": "low"}), ("little oil", {"oil": "low"}),
    ("not oily", {"oil": "low"}), ("not greasy", {"oil": "low"}), ("low salt", {"salt": "low"}),
    ("less salt", {"salt": "low"}), ("low sodium", {"salt": "low"}), ("not too salty", {"salt": "low"}),
)
_FLAVOR = alternation(phrase for phrase, _ in FLAVORS)
FLAVOR_RUN = rf"\b(?:{_FLAVOR})(?:\s*(?:,|and|&|but|with)?\s*(?:{_FLAVOR}))*"
FLAVOR_CUE = re.compile(r"\b(?:like|love|prefer|want|keep it|make it|go for|please|should be|need|enjoy)\b", re.IGNORECASE)

# Words that end an item: the next phrase begins ("cilantro when I cook", "cockroaches as well").
END = (r"(?=\s+(?:when|while|in|for|to|because|anymore|any more|please|again|at|with|if|as|too|either|ever|though|since"
       r"|so|or|but|now|from|on|lately|today|tonight|tomorrow)\b|\s*[,.;:!?)\"]|\s*$)")
# After a place one moved to: a time may follow ("I moved to Berlin last year").
MOVE_END = (r"(?=\s+(?:last|this|in|on|a|an|two|three|few|several|recently|since|with|and|but|so|because|for|years?"
            r"|months?|ago|now|nowadays|today|these|before|after|during|right)\b|\s*[,.;:!?)\"]|\s*$)")
# A stricter end for things that must stay whole ("animals with fur").
END_WHOLE = r"(?=\s+(?:as well|too|also|either|though|so|but|which|and I)\b|\s*[,.;:!?)\"]|\s*$)"
ITEM = r"(?P<item>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,5}?)"
_POINTING = set(
    """i me my mine you your yours it its that this these those them they their theirs he him his she her hers we us our
    ours what how when where why who which there here all everything something anything nothing everyone someone
    anyone so very too much lot lots way kind sort one ones thing things stuff""".split()
)
# Words an item cannot start with: a determiner that points back, a clause ("the things I love
# makes writing fun": "makes …" is not what is loved), a conjunction.
_BAD_START = {"the", "to", "being", "seeing", "hearing", "knowing", "having", "getting", "doing", "going", "not", "no",
              "if", "and", "or", "but", "just", "really", "is", "are", "was", "were", "makes", "made", "has", "have",
              "gives", "brings", "keeps", "helps", "means", "can", "will", "would", "every", "each"}
_STRIP_START = re.compile(r"^(?:a|an|some|any|most|all kinds of|eating|to eat)\s+", re.IGNORECASE)

TEXTS = {
    # kind: (title, content, tags); {item} is filled in
    "avoid": ("User avoids {item}", "Avoid {item} in recipe suggestions.", ("avoid", "recipes")),
    "limit": ("User accepts a little {item}", "A little {item} is fine, but not too much.", ("avoid", "recipes")),
    "like_food": ("User likes {item}", "Recipes with {item} are welcome.", ("likes", "recipes")),
    "cuisine": ("User likes {item} food", "Prefer {item} dishes in recipe suggestions.", ("cuisine", "recipes")),
    "flavor": ("User prefers {item}", "Prefer {item} in recipe suggestions.", ("taste", "recipes")),
    "diet": ("User is {item}", "Recipe suggestions must suit it: the user is {item}.", ("diet", "recipes")),
    "allergy": ("User is allergic to {item}", "Never suggest {item}.", ("allergy", "recipes")),
    "allergy_other": ("User is allergic to {item}", "The user said they are allergic to {item}.", ("allergy",)),
    "health": ("User has {item}", "The user said: {said}", ("health", "temporary")),
    "like": ("User likes {item}", "The user said they like {item}.", ("likes",)),
    "dislike": ("User dislikes {item}", "The user said they dislike {item}.", ("likes",)),
    "favorite": ("User's favorite {what} is {item}", "The user said their favorite {what} is {item}.", ("likes",)),
    "fact_lives": ("User lives in {item}", "The user said they live in {item}.", ("home",)),
    "fact_works": ("User works at {item}", "The user said they work at {item}.", ("work",)),
    "fact_named": ("User's {what} is named {item}", "The user's {what} is named {item}.", ("family",)),
    "fact_name": ("User's name is {item}", "The user said their name is {item}.", ("name",)),
    "fact_job": ("User is a {item}", "The user said they are a {item}.", ("work",)),
    "note": ("{item}", "The user asked to remember: {item}", ("remember",)),
    "decision": ("Decision: {item}", "Decided: {item}", ("decision",)),
    "task": ("To do: {item}", "To do: {item}", ("task",)),
    "task_done": ("Done: {item}", "Done: {item}", ("task", "done")),
    "correction": ("Correction: {old} → {item}", "The user corrected: {item}, not {old}.", ("correction",)),
}


def clean(text: str, *, longest: int = 4) -> str:
    """The item in `text` (articles dropped, lower-cased words kept as said), or '' when it is
    not a self-contained item."""
    text = _STRIP_START.sub("", text.strip(" '\"")).strip()
    words = text.lower().split()
    if not 1 <= len(words) <= longest or words[0] in _BAD_START or _POINTING & set(words):
        return ""
    if not re.fullmatch(r"[\w' -]+", text) or any(char.isdigit() for char in text):
        return ""
    return text


def items(text: str, *, longest: int = 4) -> list[str]:
    """The items of a list ("peanuts and shellfish" → both); [] if any part is not an item."""
    parts = [clean(part, longest=longest) for part in re.split(r",|\band\b|\bor\b|&", text) if part.strip()]
    return parts if parts and all(parts) else []


def is_food(item: str) -> bool:
    words = item.lower().split()
    return bool(words) and (item.lower() in FOOD or words[-1] in FOOD or words[-1] == "food")


def say(kind: str, item: str, *, value=None, old: str = "", said: str = "", what: str = "", entities=None) -> Finding:
    """A Finding of `kind` about `item`, in this table's words (TEXTS)."""
    title, content, tags = TEXTS[kind]
    words = {"item": item, "old": old, "said": said, "what": what}
    return Finding(kind=kind, lang="en", value=item if value is None else value, title=title.format(**words),
                   content=content.format(**words), tags=tags, entities=tuple(entities if entities is not None else [item]),
                   item=item, old=old)


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
    return [say("diet", match["item"].lower())]


def _allergy(match: re.Match[str], message: str) -> list[Finding]:
    found = items(match["item"], longest=6)
    if not found:
        return []
    if all(is_food(item) for item in found):
        return [say("allergy", item.lower()) for item in found]
    whole = clean(match["item"], longest=6)
    return [say("allergy_other", whole, entities=found)] if whole else []


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
        if not item or _POINTING & set(rest.lower().split()) - {"so", "very", "too", "much", "lot", "lots"}:
            return []
        return [say(kind, item)]
    return build


PLACE = r"(?-i:[A-Z][\w'-]*(?:\s+(?:[A-Z][\w'-]*|of|de|la))*)"  # capitalised: Paris, New York, Bank of America
NAME = r"(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
KIN = ("dog|cat|puppy|kitten|pet|turtle|bird|horse|son|daughter|kid|baby|wife|husband|partner|boyfriend|girlfriend|brother"
       "|sister|mom|mother|dad|father|friend|best friend")


# Words that make "I'm a … driver" something else than a job (a good driver, a student driver).
_NOT_A_JOB = (r"(?:terrible|good|bad|great|horrible|awful|lousy|decent|better|worse|designated|backseat|student|fan|fake"
              r"|wannabe|pretend|aspiring)\b")
OCCUPATIONS = ("nurse|doctor|physician|surgeon|dentist|vet|teacher|professor|lecturer|engineer|developer|programmer"
               "|designer|lawyer|attorney|accountant|chef|driver|student|writer|author|journalist|editor"
               "|police officer|firefighter|scientist|researcher|analyst|consultant|pharmacist|manager|architect"
               "|photographer|artist|musician|actor|actress|translator|librarian|electrician|plumber|carpenter"
               "|farmer|soldier|pilot|paramedic|therapist|counselor|psychologist|social worker|data scientist|freelancer")

# An occupation of the list with up to two words before it ("software engineer"), whole.
_JOB = (rf"(?P<item>(?:(?!{_NOT_A_JOB})[a-z]+\s+){{0,2}}?(?:{OCCUPATIONS}))"
        r"(?=\s+(?:and|at|in|for|with|from|since|by|but|so|now)\b|\s*[,.;:!?)\"]|\s*$)")


def _name(match: re.Match[str], message: str) -> list[Finding]:
    """"My name is Alice" / "call me Al" → a fact: the user's own name."""
    item = match["item"].strip()
    return [say("fact_name", item, value={"name": item})] if item.lower() not in _POINTING else []


# What makes a statement about one's home or work no fact: before it in the sentence, a
# supposition, someone else's word ("My boss thinks I moved to Lisbon"; not "I told you I work at
# Google"), a dream or a quotation; after it in the message, a joke ("I'm a nurse, just kidding").
_NOT_SO_BEFORE = re.compile(r"\b(?:if|imagine|suppose|supposing|pretend|pretending|unless|dreamt|dreamed|dream|wish)\b"
                            r"|(?<!\bI )\b(?:thinks?|thought|says?|said|told|tells|believes?|believed)\b|[\"“]",
                            re.IGNORECASE)
_JOKING = re.compile(r"\b(?:just kidding|kidding|joking|jk|in my dreams?|role-?play(?:ing)?|you play)\b", re.IGNORECASE)
# A move told as a past chapter: "I moved to Lisbon in 2010 and then to Berlin", "…for six months
# but came back"; "When I moved to Lisbon, I…" tells of that time.
_MOVED_ON = re.compile(r"\b(?:then|came back|moved back|went back|for (?:\w+ )?(?:days?|weeks?|months?|years?))\b",
                       re.IGNORECASE)
_MOVED_THEN = re.compile(r"\b(?:when|once|after|before|since|until|as soon as)\s*$", re.IGNORECASE)
# Abbreviations a sentence may have been cut at ("St. Louis" → "St"): no place of their own.
_CUT_SHORT = re.compile(r"(?:^|\s)(?:St|Dr|Mt|Ft|Mr|Mrs|Ms|Jr|Sr|[A-Z])$")


def _not_so(match: re.Match[str], message: str) -> bool:
    """Whether `match` states nothing about the user: see _NOT_SO_BEFORE and _JOKING, or a
    question ("I work at Google?")."""
    at = message.find(match.string)
    after = message[at + match.end():] if at >= 0 else match.string[match.end():]
    return bool(_NOT_SO_BEFORE.search(match.string[: match.start()]) or _JOKING.search(after)
                or match.string[match.end():].lstrip().startswith("?"))


def _job(match: re.Match[str], message: str) -> list[Finding]:
    """"I'm a nurse" / "I am a software engineer" → a fact: what the user does."""
    if _not_so(match, message):
        return []
    item = " ".join(match["item"].lower().split())
    return [say("fact_job", item, value={"job": item})]


# Who a flavour is for (rules_common.Subjects): "My kids don't want spicy food" is the kids'.
SUBJECTS = Subjects(others=re.compile(rf"\b(?:my|our)\s+(?:{KIN})s?\b|\b(?:he|she|they)\b", re.IGNORECASE),
                    user=re.compile(r"\bI\b|\bme\b"), lead=re.compile(r""))


def _favorite(match: re.Match[str], message: str) -> list[Finding]:
    item, what = clean(match["item"]), clean(match["what"], longest=2)
    return [say("favorite", item, what=what.lower())] if item and what else []


def _fact(kind: str):
    """A plain fact about the user ("I live in Lisbon", "my dog is called Max")."""
    def build(match: re.Match[str], message: str) -> list[Finding]:
        item = match["item"].strip() if kind != "works" or match["item"][:1].isupper() else clean(match["item"])
        if not item or len(item.split()) > 4 or item.lower() in _POINTING:
            return []
        if kind in ("lives", "works") and (_not_so(match, message) or _CUT_SHORT.search(item)):
            return []
        moved = kind == "lives" and "move" in match.group(0).lower()
        if moved and (_MOVED_ON.search(match.string[match.end():]) or _MOVED_THEN.search(match.string[: match.start()])):
            return []
        what = (match.groupdict().get("what") or "").lower()
        return [say(f"fact_{kind}", item, value={kind: item, **({"who": what} if what else {})}, what=what)]
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
    return [say("decision", text, entities=[])] if text else []


_ABSTRACT = re.compile(r"^(?:be|feel|stay|keep|relax|calm|chill|rest|focus|find a|figure|think|take a break|remember"
                       r"|get over|move on|take care|go|get going|run|leave|talk|say|tell|know|see|admit)\b", re.IGNORECASE)


def _task(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match, longest=10)
    if not text or _ABSTRACT.match(text) or _POINTING & set(text.lower().split()) - {"my", "our"}:
        return []
    return [say("task", text, value={"task": text, "status": "open"}, entities=[])]


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


I_AM = r"\bI(?:'m| am)"
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
    _rule("allergy", _allergy,
          rf"{I_AM}(?:\s+(?:also|really|very|severely|quite|super|so))?\s+allergic\s+to\s+{ITEM}{END_WHOLE}",
          rf"\bI\s+have\s+(?:an?\s+)?{ITEM}\s+allerg(?:y|ies)\b", subjects=SUBJECTS),
    _rule("diet", _diet,
          rf"{I_AM}\s+(?:a\s+)?(?P<item>vegetarian|vegan|pescatarian|lactose intolerant|gluten-free|dairy-free)\b",
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
    _rule("favorite", _favorite,
          rf"\bmy\s+(?:all-time\s+)?favou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are)\s+{ITEM}{END_WHOLE}",
          generic=True),
    _rule("fact", _fact("lives"), rf"\bI(?:\s+now)?(?:\s+live|'ve lived|\s+have lived)\s+in\s+(?P<item>{PLACE}){MOVE_END}",
          generic=True, subjects=SUBJECTS),
    _rule("fact", _fact("works"), rf"\bI\s+(?:now\s+)?work\s+(?:at|for)\s+(?P<item>{PLACE}){END_WHOLE}", generic=True,
          subjects=SUBJECTS),
    # A move is a new home: "I moved to Berlin last year", "we've just moved to Lisbon".
    _rule("fact", _fact("lives"),
          rf"\b(?:I|we)(?:\s+have|'ve)?\s+(?:just\s+|recently\s+|finally\s+|since\s+)?(?:moved|relocated)"
          rf"\s+(?:back\s+)?(?:from\s+{PLACE}\s+)?to\s+(?P<item>{PLACE}){MOVE_END}", generic=True, subjects=SUBJECTS),
    # ("Call me …" is as often "call me back", "call me Monday": not read.)
    _rule("fact", _name, rf"^\s*(?:hi,?\s+|hello,?\s+)?my\s+name\s+is\s+(?P<item>{NAME}){END_WHOLE}", generic=True,
          subjects=SUBJECTS),
    _rule("fact", _job,
          rf"^\s*(?:and\s+|but\s+|so\s+|well,?\s+)?{I_AM}\s+(?:also\s+|now\s+)?an?\s+{_JOB}",
          rf"\bI\s+(?:now\s+)?work\s+as\s+an?\s+{_JOB}", generic=True, subjects=SUBJECTS),
    _rule("fact", _fact("named"),
          rf"\bmy\s+(?P<what>{KIN})(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+named|\s+called)\s+(?P<item>{NAME})\b",
          generic=True),
    _rule("like", _like("like"),
          rf"\bI\s+(?:really\s+|just\s+|absolutely\s+|also\s+|truly\s+)?(?:love|like|enjoy|adore)\s+{ITEM}{END_WHOLE}",
          generic=True, subjects=SUBJECTS),
    _rule("dislike", _like("dislike"),
          rf"\bI\s+(?:really\s+)?(?:hate|dislike|can'?t stand|don'?t like|do not like)\s+{ITEM}{END_WHOLE}", generic=True,
          subjects=SUBJECTS),
    _rule("note", _note, r"(?:^|(?<=[,;:!?]))\s*(?:please\s+)?remember(?:\s+that|\s*[:,])\s*(?P<x>[^.!?;]{3,200})",
          generic=True, unit="sentence"),
)

REQUEST_VERBS = r"(?:recommend|suggest|give me|serve|add|put|use|cook with|remind|book|schedule|send|include|mention)"
LANGUAGE = Language(
    code="en",
    rules=RULES,
    explicit=re.compile(
        r"(?:^|(?<=[,;:!?.]))\s*(?:please\s+)?remember(?:\s+that|\s*[:,])|\bfrom now on\b|\bgoing forward\b"
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
)
