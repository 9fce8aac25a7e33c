"""The user's own name, home, workplace, occupation and favorites in English (R-EXTRACT): the builders
that memory.capture.rules_en's table calls for them, who a sentence speaks of (SUBJECTS), and
what makes such a statement no fact (a supposition, someone else's word, a joke, a past chapter,
a place cut short).
"""

import re
from dataclasses import replace

from memory.capture.rules_common import Finding, Rule, Subjects
from memory.capture.words_en import END_WHOLE, MOVE_END, POINTING, clean, say
from memory.key_spelling import favorite_key

PLACE = r"(?-i:[A-Z][\w'-]*(?:\s+(?:[A-Z][\w'-]*|of|de|la))*)"  # capitalised: Paris, New York, Bank of America
# "the" before a place of two or more words, left out of it: "at the University of Michigan" →
# University of Michigan, "the Apple Store". One word after it is rather an idiom ("I live in the
# Moment", "I work for the Man"). Lower case: "The Hague" keeps its "The".
THE = r"(?-i:the\s+(?=[A-Z][\w'-]*\s+(?:[A-Z]|of\s)))?"
NAME = r"(?-i:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
KIN = ("dog|cat|puppy|kitten|pet|turtle|bird|horse|son|daughter|kid|baby|wife|husband|partner|boyfriend|girlfriend|brother"
       "|sister|mom|mother|dad|father|friend|best friend")


# Words that make "I'm a … driver" something else than a job (a good driver, a student driver).
_NOT_A_JOB = (r"(?:terrible|good|bad|great|horrible|awful|lousy|decent|better|worse|designated|backseat|student|fan|fake"
              r"|wannabe|pretend|aspiring|former|ex|retired|future)\b")
OCCUPATIONS = ("nurse|doctor|physician|surgeon|dentist|vet|teacher|professor|lecturer|engineer|developer|programmer"
               "|designer|lawyer|attorney|accountant|chef|driver|student|writer|author|journalist|editor"
               "|police officer|firefighter|scientist|researcher|analyst|consultant|pharmacist|manager|architect"
               "|photographer|artist|musician|actor|actress|translator|librarian|electrician|plumber|carpenter"
               "|farmer|soldier|pilot|paramedic|therapist|counselor|psychologist|social worker|data scientist|freelancer"
               "|nurse practitioner|general practitioner|family practitioner|medical practitioner|veterinarian|mechanic"
               "|cashier|barista|receptionist|technician|caregiver|midwife|tutor")

# An occupation of the list with up to two words before it ("software engineer"), whole.
JOB = (rf"(?P<item>(?:(?!{_NOT_A_JOB})[a-z]+\s+){{0,2}}?(?:{OCCUPATIONS}))"
        r"(?=\s+(?:and|at|in|for|with|from|since|by|but|so|now)\b|\s*[^\w\s'&/-]|\s*$)")


# The same, before " at" the place where it is done ("a nurse practitioner at Kaiser"); a student's
# school is no workplace. (Not " for": a nurse for Halloween, a caregiver for Mom, a tutor for SAT.)
JOB_AT = rf"(?P<job>(?:(?!{_NOT_A_JOB})[a-z]+\s+){{0,2}}?(?:{OCCUPATIONS}))(?<!student)\s+at"


def own_name(match: re.Match[str], message: str) -> list[Finding]:
    """"My name is Alice" / "call me Al" → a fact: the user's own name."""
    item = match["item"].strip()
    if item.lower() in POINTING or _not_so(match, message):
        return []  # ("My name is Alice, just kidding")
    return [say("fact_name", item, value={"name": item})]


# What makes a statement about one's home or work no fact: before it in the sentence, a
# supposition, someone else's word ("My boss thinks I moved to Lisbon"; not "I told you I work at
# Google"), a dream or a quotation, a question without its mark ("Can I live in Boston"); after it
# in the message, a joke ("I'm a nurse, just kidding").
_NOT_SO_BEFORE = re.compile(r"\b(?:can|could|should|would|shall|may|might|do|did)\s*$"
                            r"|\b(?:if|imagine|suppose|supposing|pretend|pretending|unless|dreamt|dreamed|dream|wish|maybe"
                            r"|perhaps|probably|apparently|supposedly|rumou?r|game)\b"
                            r"|(?<!\bI )\b(?:thinks?|thought|says?|said|told|tells|believes?|believed)\b|[\"“]",
                            re.IGNORECASE)
_JOKING = re.compile(r"\b(?:just kidding|kidding|joking|jk|lol|in my dreams?|role-?play(?:ing)?|you play)\b",
                     re.IGNORECASE)
# A move told as a past chapter: "I moved to Lisbon in 2010 and then to Berlin", "…for six months
# but came back"; "When I moved to Lisbon, I…" tells of that time.
_MOVED_ON = re.compile(r"\b(?:then|came back|moved back|went back|for (?:\w+ )?(?:days?|weeks?|months?|years?))\b",
                       re.IGNORECASE)
_MOVED_THEN = re.compile(r"\b(?:when|once|after|before|since|until|as soon as)\s*$", re.IGNORECASE)
# Calendar words read as a place ("I live with my parents in August"): none. A stay said after
# a home ("I live with a host family in Tokyo this semester"): no home.
_CALENDAR = re.compile(r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
                       r"|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Spring|Summer|Autumn|Fall|Winter)$")
_STAY = re.compile(r"^\W*(?:this|for the|over the|during the)\s+(?:semester|term|summer|winter|week|weekend|month"
                   r"|holidays?|vacation)\b", re.IGNORECASE)
# Abbreviations a sentence may have been cut at ("St. Louis" → "St"): no place of their own.
_CUT_SHORT = re.compile(r"(?:^|\s)(?:St|Dr|Mt|Ft|Mr|Mrs|Ms|Jr|Sr|[A-Z])$")


def _not_so(match: re.Match[str], message: str) -> bool:
    """Whether `match` states nothing about the user: see _NOT_SO_BEFORE and _JOKING (in the rest
    of its sentence), or a question ("I work at Google?")."""
    at = message.find(match.string)
    after = re.split(r"[.!?;\n]", message[at + match.end():] if at >= 0 else match.string[match.end():])[0]
    return bool(_NOT_SO_BEFORE.search(match.string[: match.start()]) or _JOKING.search(after)
                or match.string[match.end():].lstrip().startswith("?"))


def said_as_fact(match: re.Match[str], message: str) -> bool:
    """Whether `match` states something of the user as so (not _not_so)."""
    return not _not_so(match, message)


def own_job(match: re.Match[str], message: str, group: str = "item") -> list[Finding]:
    """"I'm a nurse" / "I am a software engineer" → a fact: what the user does; not in a game, a
    question or a job since left (_job_not_now)."""
    if _not_so(match, message) or _job_not_now(match, message):
        return []
    item = " ".join(match[group].lower().split())
    return [say("fact_job", item, value={"job": item})]


# Who a flavour is for (rules_common.Subjects): "My kids don't want spicy food" is the kids'.
SUBJECTS = Subjects(others=re.compile(rf"\b(?:my|our)\s+(?:{KIN})s?\b|\b(?:he|she|they)\b", re.IGNORECASE),
                    user=re.compile(r"\bI\b|\bme\b"), lead=re.compile(r""))


def fact_builder(kind: str, group: str = "item"):
    """A plain fact about the user ("I live in Lisbon", "my dog is called Max")."""
    def build(match: re.Match[str], message: str) -> list[Finding]:
        item = match[group].strip() if kind != "works" or match[group][:1].isupper() else clean(match[group])
        if not item or len(item.split()) > 4 or item.lower() in POINTING:
            return []
        if kind in ("lives", "works") and (_not_so(match, message) or _CUT_SHORT.search(item) or _CALENDAR.match(item)):
            return []
        if kind == "lives" and _STAY.search(match.string[match.end():]):
            return []
        moved = kind == "lives" and "move" in match.group(0).lower()
        if moved and (_MOVED_ON.search(match.string[match.end():]) or _MOVED_THEN.search(match.string[: match.start()])):
            return []
        what = (match.groupdict().get("what") or "").lower()
        return [say(f"fact_{kind}", item, value={kind: item, **({"who": what} if what else {})}, what=what)]
    return build


# Around a job said with its place: a game or role play anywhere in the message ("Let's play a
# game. I'm a doctor at Mercy."), a question or a job left later in the sentence ("Should I work as
# a barista at Starbucks, or keep looking?", "…but I quit last week").
_GAME = re.compile(r"\b(?:play(?:ing)? a game|let's play|pretend|role-?play(?:ing)?|you(?:'re| are) my patient|halloween"
                   r"|costume|dress(?:ed|ing)? up|in my (?:story|novel|book|dream|game))\b", re.IGNORECASE)
# ...or a job to come, or gone ("…, or at least I will be next month", "…, well, I was until June").
_LEFT = re.compile(r"\?|\b(?:quit|resigned|retired|left|laid off|fired|used to|will be|going to be|until|was"
                   r"|next (?:week|month|year))\b", re.IGNORECASE)
# "a nurse at heart", "a chef at home", "a teacher at best": no job.
_NO_JOB_AT = re.compile(r"\s*at (?:heart|home|best|most|least|times)\b", re.IGNORECASE)


def _job_not_now(match: re.Match[str], message: str) -> bool:
    """Whether a job said in `match` is no job the user has now: _GAME, _LEFT."""
    at = message.find(match.string)
    rest = message[at + match.end():] if at >= 0 else match.string[match.end():]
    return bool(_GAME.search(message) or _LEFT.search(re.split(r"[.!;\n]", rest)[0]) or _NO_JOB_AT.match(rest))


def job_at(match: re.Match[str], message: str) -> list[Finding]:
    """"I'm a nurse practitioner at Kaiser" / "I work as a barista at Starbucks" → what the user
    does and where (JOB_AT): both facts, each by its own builder's checks."""
    job = own_job(match, message, group="job")
    return fact_builder("works")(match, message) + job if job else []


def works_as(match: re.Match[str], message: str) -> list[Finding]:
    """"I work at Google" → where the user works; "…as a software engineer" → what they do too."""
    works = fact_builder("works")(match, message)
    return works + (own_job(match, message, group="job") if works and match["job"] else [])


def _fact_rule(build, *patterns: str, **options) -> Rule:
    return Rule(name="en.fact", patterns=tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns), build=build,
                **options)


I_AM = r"\bI(?:'m| am)"
# Whom one lives with, between "live" and "in": "with my parents", "with our two dogs", "with them".
_WITH = r"(?:with\s+(?:(?:my|our|a|an|two|three|four)\s+(?:[a-z'-]+\s+){1,4}?|(?:him|her|them)\s+))?"

# The user's name, home, workplace, occupation and those they name, in rules_en's table order.
FACT_RULES = (
    # "I live with my parents in Boston": those they live with, then the place.
    _fact_rule(fact_builder("lives"), rf"\bI(?:\s+now)?(?:\s+live|'ve lived|\s+have lived)\s+{_WITH}in\s+{THE}"
          rf"(?P<item>{PLACE}){MOVE_END}", generic=True, subjects=SUBJECTS),
    _fact_rule(works_as, rf"\bI\s+(?:now\s+)?work\s+(?:at|for)\s+{THE}(?P<item>{PLACE})"
                         rf"(?:\s+as\s+an?\s+{JOB.replace('(?P<item>', '(?P<job>', 1)}|{END_WHOLE}|(?=\s+as\s+an?\s))",
               generic=True, subjects=SUBJECTS),
    _fact_rule(job_at,
          rf"(?:(?:^\s*(?:and\s+|but\s+|so\s+|well,?\s+|actually,?\s+|yeah,?\s+|yes,?\s+)?|\band\s+){I_AM}\s+"
          rf"(?:also\s+|now\s+|currently\s+|working\s+as\s+)?|\bI\s+(?:now\s+|currently\s+)?work\s+as\s+)an?\s+"
          rf"{JOB_AT}\s+{THE}(?P<item>{PLACE}){END_WHOLE}", generic=True, subjects=SUBJECTS),
    # A move is a new home: "I moved to Berlin last year", "we've just moved to Lisbon".
    _fact_rule(fact_builder("lives"),
          rf"\b(?:I|we)(?:\s+have|'ve)?\s+(?:just\s+|recently\s+|finally\s+|since\s+)?(?:moved|relocated)"
          rf"\s+(?:back\s+)?(?:from\s+{PLACE}\s+)?to\s+(?P<item>{PLACE}){MOVE_END}", generic=True, subjects=SUBJECTS),
    # ("Call me …" is as often "call me back", "call me Monday": not read.)
    _fact_rule(own_name, rf"^\s*(?:hi,?\s+|hello,?\s+)?my\s+name\s+is\s+(?P<item>{NAME}){END_WHOLE}", generic=True,
          subjects=SUBJECTS),
    _fact_rule(own_job,
          rf"^\s*(?:and\s+|but\s+|so\s+|well,?\s+)?{I_AM}\s+(?:also\s+|now\s+)?an?\s+{JOB}",
          rf"\bI\s+(?:now\s+)?work\s+as\s+an?\s+{JOB}", generic=True, subjects=SUBJECTS),
    _fact_rule(fact_builder("named"),
          rf"\bmy\s+(?P<what>{KIN})(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+named|\s+called)\s+(?P<item>{NAME})\b",
          generic=True),
)


_HEDGED_ITEM = re.compile(r"^(?:usually|probably|still|definitely|always|now|currently|really|actually|maybe)\s+")  # not Now Now


# What the favorite does or how it is, not which one it is: "My favorite team is losing / back /
# closed / amazing / the best". Lower-case only: "My favorite movie is Up" names one.
_STATE_WORDS = frozenset("""on off out back over in away here there gone done lost dead sick ill hurt injured ruined broken
    closed open finished cancelled canceled sold missing amazing awesome great good bad terrible awful excellent fantastic
    wonderful beautiful cute delicious tasty expensive cheap fine nice cool fun boring perfect overrated underrated popular
    famous available unavailable late early busy hard easy ready better worse best worst same also always never""".split())
_SUPERLATIVE = re.compile(r"^(?:best|worst|greatest|latest|biggest|oldest|newest|most|least|same|one|only|first|last)$")
# -ing words that name a thing; any -ing word names what a hobby, sport or part is ("hiking").
_NOUN_ING = frozenset("""spring pudding stuffing dumpling wedding king ring string building evening morning wing icing
    frosting filling topping dressing seasoning clothing painting bedding ending beginning ceiling""".split())
_ACTIVITY_WHAT = frozenset("""hobby activity sport pastime exercise workout part thing chore subject class skill job
    game genre style way""".split())


def _a_state(item: str, what: str) -> bool:
    """Whether a favorite's `item` says how it is or what it does (_STATE_WORDS), not which it is."""
    words = item.split()
    first = words[0]
    if first.lower() == "the":
        return len(words) == 1 or bool(_SUPERLATIVE.match(words[1]))
    if first != first.lower():
        return False
    if first in _STATE_WORDS or (len(words) == 1 and len(first) >= 5 and first.endswith("ed")):
        return True
    return first.endswith("ing") and first not in _NOUN_ING and what.split()[-1] not in _ACTIVITY_WHAT


def favorite(match: re.Match[str], message: str) -> list[Finding]:
    """"My favorite color is blue" → one value of favorite_color, which a new one supersedes; not
    asked, nor someone else's word ("My son thinks my favorite color is green"), nor how the
    favorite is ("My favorite team is losing": _a_state). "the Lakers" is kept as said."""
    said = _HEDGED_ITEM.sub("", match["item"]).strip()
    named = re.sub(r"^the\s+", "", said, flags=re.IGNORECASE)
    item, what = clean(named), clean(match["what"], longest=2).lower()
    if not item or not what or not said_as_fact(match, message) or _a_state(said, what):
        return []
    item = said if named != said else item
    key = favorite_key(what)  # favourite colours, favorite movies: the same key as an agent's fav_colour
    return [replace(say("favorite", item, what=key.removeprefix("favorite_").replace("_", " ")), key=key)]
