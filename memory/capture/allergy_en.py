"""Reading an English allergy statement (R-EXTRACT), for memory.capture.rules_en's table: "I'm
allergic to shellfish", "I have a peanut allergy" (an allergy, or one to something no food list
knows: allergy_other), and "no allergies" ("I'm not allergic to anything", "I have no
allergies": the fact no_allergies, which an allergy said later replaces), but for the one an
exception names ("…, except shellfish")."""

import re

from memory.capture.rules_common import Finding
from memory.capture.words_en import clean, is_food, items, say


def allergy(match: re.Match[str], message: str) -> list[Finding]:
    found = items(match["item"], longest=6)
    if not found:
        return []
    if all(is_food(item) for item in found):
        return [say("allergy", item.lower()) for item in found]
    whole = clean(match["item"], longest=6)
    return [say("allergy_other", whole, entities=found)] if whole else []


_BUT_FOR = re.compile(r"\W*(?:well\s+)?(?:except(?:\s+for)?|other than|besides|apart from|aside from)\s+"
                      r"(?P<x>[a-z][\w' -]{1,40}?)\W*$", re.IGNORECASE)


def no_allergy(match: re.Match[str], message: str) -> list[Finding]:
    """"I have no allergies" → no_allergies; "…, except shellfish" (after a pause) → that allergy."""
    at = message.find(match.string)
    rest = re.split(r"[!?;\n]|\.(?!\.)", message[at + match.end(): at + match.end() + 80])[0] if at >= 0 else ""
    but_for = _BUT_FOR.match(rest)
    if but_for:
        found = items(but_for["x"], longest=6)
        return [say("allergy", item.lower()) if is_food(item) else say("allergy_other", item) for item in found]
    return [say("no_allergy", "none", value="none", entities=[])]


# What may not follow "no allergies" in the no-allergy rule: an exception, which the allergy rule reads.
NONE_BUT = r"(?!\W*(?:well\s+)?(?:except|other than|besides|apart from|aside from)\b)"
