"""How a favorite's key is spelled, so that one favorite keeps one key whoever writes it
(R-STORE: one active value per key; seed 000 受控 Schema).

Capture writes "My favourite colours are…" and 我最喜欢的颜色是… as favorite_color; an agent may
write fav_colour, favourite_color, favoriteColor or FAVORITE-COLORS. favorite_key gives every one
of them the same key, and memory.services.schema applies it to what agents write and look up. Other key
variants (home_city → home) are the team's key synonyms (memory.schema_defaults).

Plain functions of strings: capture imports this module without Django.
"""

import re

from memory.limits import NODE_KEY_MAX

# The plural of the last word made singular: colors, movies, hobbies, dishes, glasses → color, movie,
# hobby, dish, glass. A few words stay as they are (series, physics); -ies words that are -ie words
# lose s; a few -oes and -ses words lose es.
_INVARIANT = frozenset("series species news clothes".split())
_IE_WORDS = frozenset("""movies cookies pies ties lies brownies smoothies zombies rookies selfies hippies calories
    goalies boogies""".split())
_ES_WORDS = frozenset("heroes tomatoes potatoes mangoes echoes volcanoes mosquitoes buses gases".split())
# What a Chinese favorite names, in the English word of its key: 我最喜欢的颜色是蓝色 and "my
# favorite color is green" are one fact. A Chinese word not listed stays as said (favorite_京剧).
_ZH_WHAT = {
    "颜色": "color", "顏色": "color", "电影": "movie", "電影": "movie", "歌": "song", "歌曲": "song",
    "歌手": "singer", "书": "book", "書": "book", "运动": "sport", "運動": "sport", "食物": "food",
    "菜": "dish", "水果": "fruit", "动物": "animal", "動物": "animal", "季节": "season", "季節": "season",
    "城市": "city", "乐队": "band", "樂隊": "band", "游戏": "game", "遊戲": "game", "花": "flower",
    "饮料": "drink", "飲料": "drink", "球队": "team", "球隊": "team", "演员": "actor", "演員": "actor",
    "电视剧": "tv_show", "電視劇": "tv_show", "作家": "author", "餐厅": "restaurant", "餐廳": "restaurant",
    "甜点": "dessert", "甜點": "dessert", "零食": "snack", "国家": "country", "國家": "country",
    "数字": "number", "數字": "number", "科目": "subject", "爱好": "hobby", "愛好": "hobby",
    "音乐": "music", "音樂": "music", "茶": "tea", "咖啡": "coffee", "蔬菜": "vegetable",
    "节日": "holiday", "節日": "holiday", "菜系": "cuisine",
}
_ES_AFTER = re.compile(r"(?:ss|sh|ch|x|z)es$")
_PLAIN_S = re.compile(r"(?<!s)(?<!u)(?<!i)(?<!ic)s$")
# favorite_color, FAV-COLORS, and in camel case favoriteColor or FavouriteColors; not favIcon, FAVORED
_FAVORITE = re.compile(r"^(?:(?i:favou?rite|fav)[_-]+|[Ff]avou?rite(?=[A-Z][a-z]))(?P<what>[^_-].*)$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def favorite_key(what: str) -> str:
    """The key of a favorite `what` (English words, or Chinese): "colours" → "favorite_color",
    "TV show" → "favorite_tv_show", "颜色" → "favorite_color" (_ZH_WHAT), "京剧" → "favorite_京剧"."""
    if what in _ZH_WHAT:
        return "favorite_" + _ZH_WHAT[what]
    words = _CAMEL.sub(" ", what).replace("-", " ").replace("_", " ").lower().replace("colour", "color").split()
    if words:
        words[-1] = _singular(words[-1])
    return "favorite_" + "_".join(words)


def _singular(word: str) -> str:
    if word in _INVARIANT or len(word) < 4:
        return word
    if word in _ES_WORDS:
        return word[:-2]
    if word.endswith("ies"):
        return word[:-1] if word in _IE_WORDS else word[:-3] + "y"
    if _ES_AFTER.search(word):
        return word[:-2]
    return _PLAIN_S.sub("", word)


def key_spelling(key: str) -> str:
    """`key` as capture spells it when it names a favorite (fav_colour, favouriteColors →
    favorite_color), else `key` unchanged (also when the spelling would pass NODE_KEY_MAX, or the
    key holds white space or controls, which validation refuses as sent)."""
    match = _FAVORITE.match(key)
    if match is None or not key.isprintable() or any(ch.isspace() for ch in key):
        return key
    spelled = favorite_key(match["what"])
    return spelled if len(spelled) <= NODE_KEY_MAX else key
