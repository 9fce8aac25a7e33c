"""The words the English rule table shares (memory.capture.rules_en, facts_en): foods,
cuisines and flavours, where an item ends, what an item looks like, and the table's own wording
of each kind of memory (TEXTS, say).
"""

import re

from memory.capture.rules_common import Finding, alternation

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

# Tags after a statement, which end an item ("I don't eat pork ok", "allergic to shellfish haha").
# (lower-case, "right" only asking and "lol" only last: "Yeah Yeah Yeahs", "I like turning right", "playing LoL").
TAGS = (r"(?-i:anyway|anyways|ok|okay|right(?=\s*\?)|lol(?=\W*$)|lmao(?=\W*$)|rofl(?=\W*$)|ha(?:ha)+|he(?:he)+|yeah|tbh"
        r"|honestly|btw|you know)")
# Words that end an item: the next phrase begins ("cilantro when I cook", "cockroaches as well").
END = (rf"(?=\s+(?:when|while|in|for|to|because|anymore|any more|please|again|at|with|if|as|too|either|ever|though|since"
       rf"|so|or|but|now|right now|right away|from|on|lately|today|tonight|tomorrow|these days|this week|nowadays"
       rf"|currently|{TAGS})\b|\s*[^\w\s'&/-]|\s*$)")
# After a place one moved to: a time may follow ("I moved to Berlin last year").
MOVE_END = (r"(?=\s+(?:last|this|in|on|a|an|two|three|few|several|recently|since|with|and|but|so|because|for|years?"
            r"|months?|ago|now|nowadays|today|these|before|after|during|right)\b|\s*[^\w\s'&/-]|\s*$)")
# A stricter end for things that must stay whole ("animals with fur"); a condition may follow
# ("I'm allergic to shellfish if that helps", "…in case you cook"), or a time that ends the clause
# ("allergic to beef at the moment": the time says how long it lasts, Language.temporal; not "Right
# Now by Van Halen", "living in the now", "sushi every now and then").
END_WHOLE = (rf"(?=\s+(?:as well|too|also|either|though|so|but|which|and I|if|in case|unless|{TAGS})\b"
             r"|(?<!\bthe)(?<!\bevery)\s+(?-i:at the moment|for now|right now|for the time being|these days|lately|currently"
             r"|nowadays|now|today|tonight|this week)(?:\s*(?:[^\w\s'&/-]|$)|\s+(?:because|so|but|and|since|as|though|until"
             r"|which|when|thanks)\b)"
             rf"|\s*[^\w\s'&/-]|\s*$)")
ITEM = r"(?P<item>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,5}?)"
POINTING = set(
    """i me my mine you your yours it its that this these those them they their theirs he him his she her hers we us our
    ours what how when where why who which there here all everything something anything nothing everyone someone
    anyone so very too much lot lots way kind sort one ones thing things stuff""".split()
)
# Words an item cannot start with: a determiner that points back, a clause ("the things I love
# makes writing fun": "makes …" is not what is loved), a conjunction.
BAD_START = {"the", "to", "being", "seeing", "hearing", "knowing", "having", "getting", "doing", "going", "not", "no",
              "if", "and", "or", "but", "just", "really", "is", "are", "was", "were", "makes", "made", "has", "have",
              "gives", "brings", "keeps", "helps", "means", "can", "will", "would", "every", "each"}
STRIP_START = re.compile(r"^(?:a|an|some|any|most|all kinds of|eating|to eat)\s+", re.IGNORECASE)

TEXTS = {
    # kind: (title, content, tags); {item} is filled in
    "avoid": ("User avoids {item}", "Avoid {item} in recipe suggestions.", ("avoid", "recipes")),
    "limit": ("User accepts a little {item}", "A little {item} is fine, but not too much.", ("avoid", "recipes")),
    "like_food": ("User likes {item}", "Recipes with {item} are welcome.", ("likes", "recipes")),
    "cuisine": ("User likes {item} food", "Prefer {item} dishes in recipe suggestions.", ("cuisine", "recipes")),
    "flavor": ("User prefers {item}", "Prefer {item} in recipe suggestions.", ("taste", "recipes")),
    "diet_ended": ("User is no longer {item}", "The user said they are no longer {item}.", ("diet",)),
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
    "no_allergy": ("User has no known allergies", "The user said they are not allergic to anything.", ("allergy",)),
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
    text = STRIP_START.sub("", text.strip(" '\"")).strip()
    words = text.lower().split()
    if not 1 <= len(words) <= longest or words[0] in BAD_START or POINTING & set(words):
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


# Words before a statement that deny saying it ("I never said I love sushi"); not "I didn't tell you
# that I moved", "I never told you this: …": telling it now (Language.denial).
# Also a doubt right before it ("I don't think I like sushi", "I'm not sure I'm allergic to it"): only
# at once before it (reading._denied), not "I don't think I can eat that since I'm allergic to peanuts".
DENIAL = re.compile(r"\b(?:I\s+(?:never\s+(?:ever\s+)?(?:said|claimed)|(?:didn'?t|did not)\s+(?:ever\s+)?(?:say|claim))"
                    r"|who said|when did I say"
                    r"|(?P<doubt>I\s+(?:don'?t|do not)\s+(?:think|believe|know\s+(?:if|whether))|I(?:'m|\s+am)\s+not\s+(?:sure"
                    r"|certain|convinced)(?:\s+(?:if|whether))?|I\s+doubt|I\s+wonder\s+(?:if|whether)))\b", re.IGNORECASE)
# A clause that takes back what was just said (Language.retraction): "I hate cilantro, just kidding",
# "I'm allergic to peanuts. JK!", "Just kidding, I love it", "I'm vegan... not really", "…, but
# that's wrong". Not "kidding aside", "I'm not kidding", "You're kidding", nor "not really" before
# more words ("Not really a fan of sour either" says something of its own).
RETRACTION = re.compile(
    # at a clause's start, alone or before a new statement of the user's ("Just kidding, I love it",
    # "jk I'm vegan"); not asked ("Kidding? I wish"), nor about something else ("I was joking
    # earlier about the crab", "I'm kidding you not")
    r"^\s*(?:(?:ha(?:ha)+|lol|lmao|hehe)\b[\s!.]*)*(?:(?:I'm|I am|I was)\s+)?(?:just\s+|only\s+)?"
    r"(?:kidding|joking|jking|j/k|jk(?:jk)*|psych)\b(?:\s*(?:lol|haha+|lmao))?(?=[\s!.…]*$|[\s!.…]+I\b|[\s!.…]+I'm\b)"
    r"|^\s*(?:I lied|scratch that|not really)[\s!.…]*$"
    r"|(?<!\bnot\s)(?<!n't\s)\b(?:(?:just|only)\s+|(?:I'm|I am|I was)\s+(?:just\s+|only\s+)?)(?:kidding|joking)"
    r"(?:\s*(?:lol|haha+|lmao))?[\s!.…]*$"
    r"|\b(?:jk(?:jk)*|j/k|jking)(?:\s*(?:lol|haha+|lmao))?[\s!.…]*$"
    # (a denial of what was just said: "My boss said I'm allergic to shellfish, but that's wrong")
    r"|^\s*(?:but\s+|and\s+)?(?:(?:that'?s|that is|which is)\s+(?:not true|untrue|wrong|false|a lie|not right|incorrect"
    r"|not the case)|(?:it'?s|it is|this is)\s+(?:not true|untrue|a lie|not the case))[\s!.…]*$"
    r"|^\s*(?:but\s+)?(?:not true|untrue)[\s!.…]*$", re.IGNORECASE)


DIETS = r"vegetarian|vegan|pescatarian|lactose intolerant|gluten-free|dairy-free"
# Those a "we" may be outside any project: a decision said in a message naming them is the user's own,
# not the workspace's ("…ran into this super nice couple who had a dog. We decided to do doggy playdates").
# Said as theirs ("my wife", "our pets", "the kids and I"), not a feature's words ("the pet adoption
# feature", "a couple of changes", "my partner on the project").
_CIRCLE = (r"wife|husband|spouse|boyfriend|girlfriend|fianc[eé]e?|kids?|children|son|daughter|baby|family|mom|mum|dad"
           r"|parents|brother|sister|friends?|roommates?|neighbou?rs?|dogs?|cats?|puppy|pets?")
PERSONAL_CIRCLE = re.compile(rf"\b(?:my|our)\s+(?:{_CIRCLE})\b|\b(?:{_CIRCLE})\s+and\s+I\b|\b(?:wedding|honeymoon|vacation)\b",
                             re.IGNORECASE)


# What "I need to …" says that is no task ("I need to relax", "I have to say…").
NOT_A_TASK = re.compile(r"^(?:be|feel|stay|keep|relax|calm|chill|rest|focus|find a|figure|think|take a break|remember"
                        r"|get over|move on|take care|go|get going|run|leave|talk|say|tell|know|see|admit)\b", re.IGNORECASE)


# "Don't remind me to go to the gym", "No need to remind me to call mom"
NOT_REMINDED = re.compile(r"\b(?:don'?t|do not|never|no need to|not|stop|no longer)(?:\s+(?:ever|again|need to))?\s*$",
                          re.IGNORECASE)


# What a supposition's clause says that makes it a hedge about the saying ("If I'm being honest",
# "In case I didn't mention it") or a when-I-eat condition, not a supposition of the user's (Supposition.hedge).
SUPPOSE_HEDGE = re.compile(r"\b(?:honest|mistaken|wrong|right|correct|correctly|remember|remembering|misremembering|recall"
                           r"|understood|understand|real|frank|mention|mentioned|told|tell|said|say|forgot|forget|may"
                           r"|might add|must say|clear|discussed|talked|covered|brought|serious|blunt|truthful|upfront"
                           r"|straight|transparent|guess|eat|eats|eating|drink|touch|smell|have any|have dairy|get near)\b",
                           re.IGNORECASE)
# Where a supposition's consequence begins in its clause: "then", or where the user's would-be
# doing begins without a mark ("If I get pregnant I can't eat sushi") (Supposition.then); and a
# clause that begins as one (Supposition.follows).
SUPPOSE_THEN = re.compile(r"\bthen\b|(?<=\s)(?=(?:I|we)(?:'ll|'d|\s+(?:can't|cannot|can not|won't|will|would|couldn't"
                          r"|wouldn't|shouldn't|should|have to|need to|must|might|may))\b)", re.IGNORECASE)
SUPPOSE_FOLLOWS = re.compile(r"(?:then\s+)?(?:I|we)(?:\s*'ll|\s*'d|\s+(?:can't|cannot|can not|won't|will|would|couldn't"
                             r"|wouldn't|shouldn't|should|have to|need to|must|might|may))\b|then\b", re.IGNORECASE)
