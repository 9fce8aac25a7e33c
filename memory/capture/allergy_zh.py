"""Reading a Chinese allergy statement (R-EXTRACT): whose it is and what it is to.

Two shapes reach `allergy` from the rule table (memory.capture.rules_zh): 对X过敏 (the item after
对) and X过敏 (the item is everything before 过敏 in the clause: 我花生过敏, 我吃花生会过敏). What
is read here:

- whose: 我 or nobody before the allergy's 对 is the user; someone named or spoken to (小明对花生
  过敏, 你对虾过敏) or a 对 of another word (对方, 我对我妈说…) is not (words_zh.NAMED,
  USER_BEFORE_DUI); in X过敏 a family member, a pet or anyone the clause names first is not;
- what: in X过敏 what the user eats, drinks or touches (CONTACT: 我一吃芒果就过敏, 我碰到猫就过敏,
  吃我妈做的花生, 吃含麸质的食物 → 麸质), without the words around it (AROUND: 会, 就, 好像, 嘴巴,
  的时候, 起疹子);
- whether it holds: not negated (我吃花生不会过敏), not over (我吃花生以前会过敏), not supposed (如果
  我吃花生会过敏怎么办; a consequence said with 就 stays a fact: 如果我吃花生就会过敏).

`no_allergy` reads 我没有任何过敏 (the fact no_allergies, which an allergy said later replaces), but
for the one an exception names (除了花生).
"""

import re

from memory.capture.rules_common import Finding
from memory.capture.words_zh import NAME_LONGEST, NAMED, OTHERS, is_food, items, say

# After a word with 对 earlier in the clause (对了, 对方, 对面的人, 我对我妈说), the allergy is the
# user's only when 我 says it right before its own 对 (对了我对虾过敏, not 对了你对虾过敏, 对方对虾过敏),
# or when that 对 began an allergy said just before (我对花生过敏又对芒果过敏).
USER_BEFORE_DUI = re.compile(r"我(?:也|还|都|就|一直|从小就?|其实|本来就?|真的|确实|自己|本人|最近|有点)*对?$")

_OPENER = r"(?:如果|要是|假如|万一|倘若)"
_LEADS = rf"(?:其实|从小就?|本人|自己|一直|平时|真的|确实|也|还|都|每次|一旦|只要|{_OPENER})"
_VERB = r"(?:吃|喝|碰|碰到|摸|摸到|接触|接触到|闻|闻到|用)"
# 我吃花生会过敏, 我晚上吃海鲜会过敏 (a few words of when or where between 我 and the verb)
CONTACT = re.compile(rf"^{_OPENER}?(?:我(?P<lead>[^吃喝碰摸接闻用对]{{0,5}}?)|{_LEADS}*)一?{_VERB}"
                     r"(?:了|过(?!量)|到|完)?(?P<item>.*)$")
_LEAD_IN = re.compile(rf"^{_OPENER}?我?{_LEADS}*")
_CONTACT_VERB = re.compile(r"吃|喝|碰|摸|接触|闻")
_AMOUNT = re.compile(r"^(?:一点点|一点|一口|一些|少量|少许|几颗|几个|几口|太多|过量|很多|大量|点)")
_AROUND = re.compile(r"(?:我|的话|的时候|时候|的时|过一会儿?|以后|之后|后|就|会|都|也|还|容易|总是|总|老是|马上|立刻|一定|好像"
                     r"|可能|有点|有些|特别|非常|真的|真|还是|是|严重|轻微|轻度|重度|很|比较|稍微|一点|偶尔|有时候|有时|起疹子|起红疹|长疹子"
                     r"|起包|发痒|红肿|皮肤|嘴巴|嘴唇|嘴|身上|全身|浑身|手上|手|脸上|脸|嗓子|喉咙|肚子|身体)+$")
_SUCH_AS = re.compile(r"等.*$")  # 花生等坚果 → 花生
_GENERIC = re.compile(r"^(?:食物|东西|菜|饭|菜品|食品|零食|饮料)$")
_CONTAINING = re.compile(r"^(?:含有|含|带有|带|加了|加|有)")
_PAST = re.compile(r"以前|(?<!从)小时候(?!起)|过去|曾经|那时")
_POSSESSED = re.compile(r"^(?:我们家的?|我家的?|我的|家里的?)")
_NEGATED = re.compile(r"(?:不|没|没有|不会)$|^我?(?:没有|没|并没有|从没|从来没有?)(?:任何|什么)?(?:食物|东西|药物|药)?$")
# 我除了花生没有任何过敏 / 除了花生以外我都不过敏: the one allergy named
_BUT_FOR = re.compile(r"^我?除了(?P<x>.+?)(?:以外|之外)?我?(?:都|也)?(?:没有|没|不)(?:任何|别的|其他的?)?(?:东西|食物)?$")
_ASKED_AFTER = re.compile(r"\s*(?:了)?(?:怎么办|呢|吗|\?|还能|该|能不能|会怎样|会怎么样)")


def _what_is_touched(item: str) -> str:
    """The thing of a contact form's rest (花生会 → 花生, 我妈做的花生 → 花生, 含麸质的食物 → 麸质)."""
    item = _SUCH_AS.sub("", _AMOUNT.sub("", _POSSESSED.sub("", item)))
    item = _AROUND.sub("", item).replace("或者", "、").replace("或", "、")
    if "的" in item:
        head, tail = item.rsplit("的", 1)
        item = _CONTAINING.sub("", head) if not tail or _GENERIC.match(tail) else tail
    return item


_ANIMALS = frozenset({"猫", "狗", "狗狗", "猫咪", "宠物", "兔子", "仓鼠", "鹦鹉"})  # allergens, though OTHERS names them


def _names_someone(item: str) -> bool:
    return any(found.group(0) not in _ANIMALS for found in OTHERS.finditer(item))


def _named(text: str) -> list[Finding]:
    """The allergies an exception names (除了花生: 花生), foods or not."""
    return [say("allergy", one) if is_food(one) else say("allergy_other", one) for one in items(text, longest=8)]


_BUT_FOR_AFTER = re.compile(r"[\s,.…~!]*(?:但是?|不过)?除了(?P<x>[^,。!?;]{1,12}?)(?:以外|之外)?(?:都|也)?(?:会|要)?(?:过敏)?"
                            r"\W*$")


def no_allergy(match: re.Match[str], message: str) -> list[Finding]:
    """我没有任何过敏 → no_allergies; but for one named before or after it (除了花生以外我都不过敏,
    我没有任何过敏，除了花生) that allergy."""
    if "除了" in match.string[: match.start()]:
        return []  # the allergy rule reads the one named before
    at = message.find(match.string)
    rest = re.split(r"[。!?;\n]", message[at + len(match.string): at + len(match.string) + 40])[0] if at >= 0 else ""
    but_for = _BUT_FOR_AFTER.match(rest)
    if but_for:
        return _named(but_for["x"])
    return [say("no_allergy", "无", value="none", entities=[])]


def allergy(match: re.Match[str], message: str) -> list[Finding]:
    """The allergy of one match of the rule table's allergy patterns (see the module doc)."""
    item = match["item"]
    said_with_dui = match.group(0).startswith("对")
    if "对" in item:
        return []  # 我妈对花生过敏: someone else's, which 对…过敏 has already declined
    before = match.string[: match.start()].rsplit("过敏", 1)[-1]  # 我对花生过敏又对芒果过敏: after the user's first
    if said_with_dui and "对" in before and not USER_BEFORE_DUI.search(before):
        return []
    if said_with_dui and len(before) <= NAME_LONGEST and NAMED.fullmatch(before.strip(" :;!~")):
        return []  # 小明对花生过敏, 你对虾过敏: someone named, not the user
    but_for = _BUT_FOR.match(item)
    if but_for:
        return _named(but_for["x"])
    if _NEGATED.search(item) or item in ("有", "我有") or _PAST.search(item):
        return []  # 我不过敏, 我对花生不过敏, 我没有(任何)过敏, 我对什么都不过敏; 我吃花生以前会过敏 (over)
    if not said_with_dui and re.match(rf"^我?{_OPENER}|^{_OPENER}", item):
        # The supposition opens inside the match, where Supposition does not look: 如果我吃花生会过敏
        # 怎么办 is supposed; 如果我吃花生就会过敏 says the consequence, a fact.
        if "就" not in item or _ASKED_AFTER.match(match.string, match.end()):
            return []
    contact = None if said_with_dui else CONTACT.match(item)
    if contact and not OTHERS.search("我" + (contact["lead"] or "")):
        item = _what_is_touched(contact["item"])  # what is eaten or touched is no one's subject (碰到猫)
        if _names_someone(item):
            return []  # 我吃别人做的菜会过敏: what someone made, not a thing named
    elif said_with_dui:
        item = _what_is_touched(item)  # 对一点点花生都过敏, 对含花生的食物过敏, 对芒果轻微过敏
        if _names_someone(item):
            return []
    else:
        item = _AROUND.sub("", re.sub(r"^有", "", _LEAD_IN.sub("", item)))  # 我有虾过敏
        if OTHERS.search(item) or _CONTACT_VERB.search(item):
            return []  # 我女儿花生过敏, 小明吃花生会过敏 (but 对猫过敏 and 猫毛过敏 are the user's)
    found = items(item, longest=8) if item else []
    if not found:
        return []
    if all(is_food(item) for item in found):
        return [say("allergy", item) for item in found]
    whole = "、".join(found)
    return [say("allergy_other", whole, entities=found)]
