"""How a favorite's key is spelled, so that one favorite keeps one key whoever writes it
(R-STORE: one active value per key; seed 000 受控 Schema).

Capture writes "My favourite colours are…" as favorite_color; an agent may write fav_colour,
favourite_color, favoriteColor or Favorite-Colors. favorite_key gives every one of them the
same key, and memory.services.schema applies it to what agents write and look up. Other key
variants (home_city → home) are the team's key synonyms (memory.schema_defaults).

Plain functions of strings: capture imports this module without Django.
"""

import re

# The plural of the last word made singular: colors, movies, hobbies, dishes, glasses → color, movie,
# hobby, dish, glass. A few words stay as they are (series); -ies words that are -ie words lose s.
_INVARIANT = frozenset("series species news clothes".split())
_IE_WORDS = frozenset("""movies cookies pies ties lies brownies smoothies zombies rookies selfies hippies calories
    goalies boogies""".split())
_ES_AFTER = re.compile(r"(?:ss|sh|ch|x|z)es$")
_PLAIN_S = re.compile(r"(?<!s)(?<!u)(?<!i)s$")
_FAVORITE = re.compile(r"^(?:favou?rite|fav)(?:[\s_-]+|(?-i:(?=[A-Z])))(?P<what>\S.*)$", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def favorite_key(what: str) -> str:
    """The key of a favorite `what` (English words, or Chinese as said): "colours" →
    "favorite_color", "TV show" → "favorite_tv_show", "颜色" → "favorite_颜色"."""
    words = _CAMEL.sub(" ", what).replace("-", " ").replace("_", " ").lower().replace("colour", "color").split()
    if words:
        words[-1] = _singular(words[-1])
    return "favorite_" + "_".join(words)


def _singular(word: str) -> str:
    if word in _INVARIANT or len(word) < 4:
        return word
    if word.endswith("ies"):
        return word[:-1] if word in _IE_WORDS else word[:-3] + "y"
    if _ES_AFTER.search(word):
        return word[:-2]
    return _PLAIN_S.sub("", word)


def key_spelling(key: str) -> str:
    """`key` as capture spells it when it names a favorite (fav_colour, favouriteColors →
    favorite_color), else `key` unchanged."""
    match = _FAVORITE.match(key)
    if match is None or not match["what"].strip(" _-"):
        return key
    return favorite_key(match["what"])
