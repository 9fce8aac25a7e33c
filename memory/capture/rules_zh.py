"""The Chinese rule table of the rule-based extractor (R-EXTRACT; seed 000 写入示例, 更新示例).

Text arrives NFKC-normalised and in simplified characters (，→ ",", 記住 → 记住). Items are short
runs of Han characters with particles trimmed (香菜了 → 香菜); anything that does not look like
an item (太多, 这个, 早饭) vetoes the match: precision over recall. The words the table shares
are in memory.capture.words_zh, the rules about the user's own name, home and work in
memory.capture.facts_zh.
"""

import re
from dataclasses import replace
from datetime import timedelta

from memory.capture import negation_zh as negation
from memory.capture.allergy_zh import allergy, no_allergy
from memory.capture.facts_zh import (
    MOVED_WHEN,
    PLACE_CHARS,
    WE,
    fact_builder,
    home_at,
    job_at,
    own_job,
    own_name,
    said_as_fact,
)
from memory.capture.rules_common import DAY, Finding, Language, Rule, Supposition, alternation, flavor_value
from memory.capture.words_zh import (
    COOKING_WORDS,
    CUISINES,
    DENIAL,
    FACT_SUBJECTS,
    FLAVOR_CUE,
    FLAVOR_RUN,
    FLAVORS,
    HAN,
    KIN,
    LEAD,
    NOT_ITEMS,
    OTHERS,
    PERSONAL_CIRCLE,
    PRONOUN,
    RETRACTION,
    STOP,
    SUBJECTS,
    TEXTS,
    clean,
    is_food,
    items,
    named,
    say,
)
from memory.key_spelling import favorite_key

__all__ = ["FLAVORS", "LANGUAGE", "TEXTS", "say"]  # what memory.capture.rules reads of a language table

# ---- builders: (match, message) -> findings -------------------------------------------------


def _avoid(match: re.Match[str], message: str) -> list[Finding]:
    """别给我推荐香菜 / 做饭不要香菜: a cooking context, or a verb that only takes food."""
    found = items(match["item"])
    if not found:
        return []
    verb = match.groupdict().get("verb")
    cooking = bool(COOKING_WORDS.search(message))
    if not all(is_food(item) or (verb and cooking) for item in found):
        return []
    return [say("avoid", item) for item in found]


def _not_eat(match: re.Match[str], message: str) -> list[Finding]:
    """我不吃香菜 → avoid 香菜; not an amount (不能吃太多肉), not a saying (不吃亏), not the past."""
    before = match.string[: match.start()]
    amount = match["item"].startswith(("太", "过多", "那么多", "这么多", "饱", "亏"))
    unsure = bool(negation.UNSURE_BEFORE.search(before[-negation.WINDOW:])
                  or negation.UNSURE_IN_ITEM.search(match["item"]))
    if (negation.said_before(negation.PAST, before) or negation.negated(before) or before.endswith(negation.DOUBLE)
            or amount or unsure):
        return []  # (negated: 我受不了不吃辣, 我不是不吃香菜; unsure: 我一天不吃辣就难受)
    found = items(match["item"])
    if found in (["荤"], ["荤菜"], ["荤的"]) and re.fullmatch(r"\W*我?(?:从来|一直|从不|已经)?", before.rsplit(",", 1)[-1]):
        return [say("diet", "吃素", value="素食")]  # 我不吃荤: a vegetarian (not 我初一十五不吃荤: some days)
    # 我不吃素: no vegetarian, nothing to avoid (素 was stored as an ingredient: "avoid vegetables")
    return [say("avoid", item) for item in found if item not in ("素", "素的", "素食")]


def _limit(match: re.Match[str], message: str) -> list[Finding]:
    """香菜现在可以接受一点，但不要太多 → limit_ingredient {ingredient, amount: 少量}."""
    item = clean(match["item"])
    if not item or item.startswith(("是说", "意思是", "就是")) or negation.negated(match.string[: match.end("item")]) or not (
            is_food(item) or COOKING_WORDS.search(message)):
        return []  # 不可以放一点: the item group took the negation
    return [say("limit", item, value={"ingredient": item, "amount": "少量"})]


# …，胃就疼 / 就会拉肚子: what eating it does, said in the next clause (not 头疼的时候: a time)
_HURTS_NEXT = re.compile(r"[,，]\s*(?:(?:胃|肚子|嗓子|喉咙|牙|头|脸|皮肤|嘴巴?|身上)(?:就|会|总|容易|总是|老是)*|就会?)"
                         r"(?:拉肚子|胃疼|胃痛|上火|长痘|过敏|难受|不舒服|肚子疼|受不了|疼|痛|痒|起疹子)(?:了|的)?[\s。.!！~]*$")


def _hurts_next(clause: str, message: str) -> bool:
    at = message.find(clause)
    return at >= 0 and _HURTS_NEXT.match(message[at + len(clause): at + len(clause) + 30]) is not None


def _flavor(match: re.Match[str], message: str) -> list[Finding]:
    """少油少辣 → flavor_profile {"oil": "low", "spicy": "low"} when the clause states a wish;
    别吃辣 → {"spicy": "none"}, 不太能吃辣 → {"spicy": "low"} (a wish for more, negated, is none,
    or low when the negation is softened; any other negated wish is left alone)."""
    clause = match.string
    bare = clause.replace(match.group(0), "").strip(" ,.!?。的吧啊哦呢")
    if not (FLAVOR_CUE.search(clause) or not bare):
        return []
    value, phrases = flavor_value(match.group(0), FLAVORS)
    if not value:
        return []
    before, after = clause[: match.start()], clause[match.end():]
    less, denied = negation.said_before(negation.LESS, before), negation.negated(before)
    if negation.said_before(negation.PAST, before) or (negation.said_before(negation.DID_NOT, before) and not denied):
        return []
    unsure = negation.UNSURE_BEFORE.search(before[-negation.WINDOW:]) or negation.UNSURE_AFTER.match(after)
    if set(value.values()) != {"high"} and unsure:
        return []  # 我不得不吃辣, 我一天不吃辣就难受, 我吃不吃辣都无所谓: no wish for less
    if set(value.values()) == {"high"} and (negation.HURTS.match(after) or (
            not after.strip(" 。.!?") and not re.search(r"喜欢|爱", before) and _hurts_next(clause, message))):
        # 我吃辣会拉肚子, 我一吃辣胃就疼, 我现在要是吃辣，胃就疼: the taste hurts, so none
        return [say("flavor", "不" + "".join(phrases), value=dict.fromkeys(value, "none"), entities=phrases)]
    if denied or less:
        if set(value.values()) != {"high"}:
            return []
        softened = less or bool(negation.SOFTENED.search(before)) or phrases[0] in negation.INTENSE
        words = ("少" if softened else "不") + "".join(phrases)
        return [say("flavor", words, value=dict.fromkeys(value, "low" if softened else "none"), entities=phrases)]
    return [say("flavor", "".join(phrases), value=value, entities=phrases)]


def _like_food(match: re.Match[str], message: str) -> list[Finding]:
    return [say("like_food", item) for item in items(match["item"])]


def _cuisine(match: re.Match[str], message: str) -> list[Finding]:
    return [say("cuisine", match["item"])]


def _diet(match: re.Match[str], message: str) -> list[Finding]:
    if match.groupdict().get("ended"):  # 我不再吃素了: ends the stored diet, if any (not 吗？, not 他说…)
        if not said_as_fact(match, message) or _asked_after(match):
            return []
        return [replace(say("diet_ended", "吃素", value={"no_longer": "素食"}), needs_target=True)]
    return [say("diet", "吃素", value="素食")]


_DOUBT = re.compile(r"是不是|会不会|有没有|以为|怀疑|担心|怕|预防|防止|避免|(?:会|就|容易|总|老是|一吃\w*)$")
_RECOVERED = re.compile(r"^(?:已经|早就|都)?(?:好了|好多了|好得差不多|退了|退烧了|没事了|痊愈)")


def _health(match: re.Match[str], message: str) -> list[Finding]:
    """今天有点胃不舒服 → health_condition 胃不舒服 (a passing state: session, with an expiry);
    not a worry or a question (我是不是感冒了, 怕感冒), nor one that is over (我发烧好了)."""
    after = match.string[match.end():]
    if (_DOUBT.search(match.string[: match.start()][-negation.WINDOW:]) or _RECOVERED.match(after)
            or after.startswith(("的时候", "时"))):  # 胃不舒服的时候我不吃辣: a condition, not a state
        return []
    value = (match.groupdict().get("part") or "") + match["ail"]
    return [say("health", value, said=match.string.strip())]


# 我很喜欢这个颜色: a thing the conversation points at, which says nothing without it.
_POINTED = re.compile(r"^(?:很|真|好|超|特别|非常|最|也|还|都)*(?:这|那)(?:个|种|些|款|件|首|部|本|只|条|样)?")


def _like(match: re.Match[str], message: str) -> list[Finding]:
    raw = match["item"]
    item = clean(raw, longest=10) if not raw.startswith(("的", "上", "过")) and not _POINTED.match(raw) else ""
    return [say("like", item)] if len(item) >= 2 else []


def _dislike(match: re.Match[str], message: str) -> list[Finding]:
    item = clean(match["item"], longest=10)
    if len(item) < 2:
        return []
    return [say("avoid" if is_food(item) else "dislike", item)]


# How the favorite is or what it does, not which it is: 我最喜欢的球队输了/是很好听/是最好的/在比赛.
_FAVORITE_STATE = re.compile(r"^(?:很|非常|太|真|挺|特别|超|最|更|没|在|正在|被|已经|又|也|还)|了$")


def _favorite(match: re.Match[str], message: str) -> list[Finding]:
    """我最喜欢的颜色是蓝色 → favorite_color (key_spelling); not asked, someone else's word nor how it is."""
    item, what = clean(match["item"], longest=10), clean(match["what"], longest=4)
    if (not item or not what or "是" in what or re.match(r"不是|否", match["item"])
            or _FAVORITE_STATE.search(match["item"].strip()) or not said_as_fact(match, message) or _asked_after(match)):
        return []
    return [replace(say("favorite", item, what=what), key=favorite_key(what))]


def _asked_after(match: re.Match[str]) -> bool:
    return match.string[match.end():].lstrip().lstrip("了").startswith(("吗", "?", "呢", "么"))


def _text(match: re.Match[str], *, shortest: int = 2, longest: int = 80) -> str:
    text = re.sub(r"^[了吗吧哦啊好的,:\s]+", "", match["x"]).strip(" ,.;:!?。")
    return text if shortest <= len(text) <= longest else ""


def _note(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match, shortest=3, longest=120)
    return [say("note", text, entities=[])] if text else []


def _decision(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match)
    finding = say("decision", text, entities=[]) if text else None
    return [replace(finding, kind="own_decision") if PERSONAL_CIRCLE.search(message) else finding] if finding else []


_ABSTRACT = re.compile(r"^(?:休息|冷静|放松|想想|想一想|考虑|睡觉|静一静|好好|调整)")


_ASKS_YOU = re.compile(r"你|您")  # 我需要你帮我写代码 (not 提醒我给我妈打电话)
_NOT_REMINDED = re.compile(r"(?:别|不要|不用|不必|无需|甭|没必要|不需要)(?:再)?$")  # 以后都别提醒我去健身房了


def _task(match: re.Match[str], message: str) -> list[Finding]:
    text = re.sub(r"^(?:一下|一声)", "", _text(match, longest=60))
    if len(text) < 2 or _ABSTRACT.match(text) or _NOT_REMINDED.search(match.string, 0, match.start()) or _ASKS_YOU.match(text):
        return []  # (提醒我一下, 我需要你帮我写代码: a request to the assistant, no task of the user's)
    finding = say("task", text, value={"task": text, "status": "open"}, entities=[])
    return [finding if re.match(r"\s*(?:待办|todo|to-do)", match.group(0), re.IGNORECASE) else replace(finding, kind="own_task")]


def _task_done(match: re.Match[str], message: str) -> list[Finding]:
    """报告写完了: closes the open task it names; stands alone only without 这/那 (这个做完了)."""
    text = _text(match, longest=40)
    if not text or text in NOT_ITEMS:
        return []
    finding = say("task_done", text, value={"task": text, "status": "done"}, entities=[])
    return [replace(finding, needs_target=bool(PRONOUN.search(text)))]


def _correction(match: re.Match[str], message: str) -> list[Finding]:
    old, new = clean(match["old"], longest=12), clean(match["new"], longest=12)
    if not old or not new or old == new:
        return []
    return [say("correction", new, value={"from": old, "to": new}, old=old, entities=[new])]


def _rule(name: str, build, *patterns: str, **options) -> Rule:
    return Rule(name=f"zh.{name}", patterns=tuple(re.compile(pattern) for pattern in patterns), build=build, **options)


def _own(name: str, build, *patterns: str) -> Rule:
    """A rule about the user's own tastes or health: vetoed where the sentence speaks of a
    family member, a pet or a friend (a newcomer's "我女儿不爱吃青菜" became the user's dislike)."""
    return _rule(name, build, *patterns, subjects=SUBJECTS)


# The user, named, or (at the start of a clause that names nobody) the one the sentence is about:
# 我叫小红，住在杭州，是一名护士 (Rule.subjects vetoes it after a family member).
SELF = r"(?:我|^)"
_NOW = r"(?:现在|已经|如今|再也|从来)?"  # 我现在不喜欢芒果冰淇淋了
# 我在腾讯上班三年了, 已经三年了
_HOW_LONG_SAID = r"(?:(?:已经|快|都|有)?[0-9一二三四五六七八九十两几多半]+(?:个)?(?:年|个月|月)(?:多)?了?)?"
CLAUSE_END = r"(?=[。.!?;~\s]*$)"  # the rest of the clause is its end mark (是一名程序员。)
ITEM = rf"(?P<item>[{HAN}、和与及]{{1,16}})"  # to the end of the clause: 香菜和葱
LAZY_ITEM = rf"(?P<item>[{HAN}]{{1,10}}?)"  # as short as the rest allows: 香菜(现在)可以接受一点
AMOUNT = r"(?:一点点|一点|少量|一些|点)"
RULES = (
    _own("health", negation.wanted(_health),
         r"(?P<part>胃|肚子|头|嗓子|喉咙|牙|腰|肠胃)(?:有点|有些|不太|很|特别|好|又)?(?P<ail>不舒服|疼|痛|难受|不好)",
         r"(?P<ail>感冒了|发烧了|发烧|拉肚子|上火了|上火|咳嗽|生病了)"),
    # 我没有任何过敏, 我什么都不过敏, 我对任何东西都不过敏, 我没有过敏史 (not 我对花生不过敏: one thing)
    _own("no_allergy", no_allergy,
         r"我(?:对)?(?:任何东西|任何食物|什么东西|什么|啥|一切)都?(?:不|没有|没)过敏(?![性史])(?:的)?(?=\W*$)",
         r"我(?:从来)?(?:没有|没|并没有)(?:任何|什么)?(?:食物|东西)?过敏(?:史)?(?![性])(?:的)?(?=\W*$)"),
    _own("allergy", negation.wanted(allergy),
         # The item holds no 对: the 对 right before it is the one that governs it (对了我对虾过敏,
         # 我对我妈说我对花生过敏), not a 对 of a word before (对了, 对呀).
         rf"对(?P<item>(?:(?!对)[{HAN}、和与]){{1,12}}?)过敏(?![性史])",
         rf"(?:^|(?<=[我,]))(?P<item>[{HAN}、和与]{{1,10}}?)过敏(?![性史])"),
    _rule("diet", _diet, r"我(?:已经|现在)?(?P<ended>不再(?:是)?(?:吃素|素食者?|纯素)|不(?:是)?(?:吃素|素食者?|纯素)了)",
          r"我(?:也)?(?:是)?(?:吃素|素食者?|纯素)"),
    _own("flavor", _flavor, FLAVOR_RUN),
    # ({0,4}: with * a run of 也 was read once per start, 3 s for 4,000 characters)
    _own("limit", negation.wanted(_limit),
         rf"{LAZY_ITEM}(?:现在|其实|也|还是|倒是){{0,4}}(?:可以|能|能够)(?:接受|吃|放|加){AMOUNT}",
         rf"(?:可以|能)(?:放|加|吃){AMOUNT}{ITEM}",
         rf"{LAZY_ITEM}(?:少放|少加|放少)(?:一)?点"),
    _own("avoid", _avoid,
         rf"(?:{negation.BIE}|不要|不想要|不许|不准|勿)(?:再)?(?:给我|帮我|为我)?(?:再)?(?P<verb>推荐|放|加|用|安排)?(?:任何)?{ITEM}"),
    _own("not_eat", _not_eat, rf"(?:不{negation.SOFT}?(?:能|敢|爱|喜欢)?吃|吃不了|讨厌吃|忌口|戒了|不碰){ITEM}"),
    _own("cuisine", negation.wanted(_cuisine), rf"(?:喜欢|爱吃|爱|偏爱|最爱)(?:吃)?(?P<item>{alternation(CUISINES)})"),
    _own("like_food", negation.wanted(_like_food), rf"(?:喜欢吃|爱吃|最爱吃|偏爱吃){ITEM}"),
    _rule("correction", _correction,
          rf"(?:我说的|我的意思)?不是(?P<old>{STOP}{{1,12}}?),?\s*(?:而)?是(?P<new>{STOP}{{1,12}})",
          rf"(?:把)?(?P<old>{STOP}{{1,12}}?)改成(?:了)?(?P<new>{STOP}{{1,12}})", unit="sentence"),
    _rule("decision", _decision,
          r"(?:我们|咱们|大家)(?:已经|最终|最后)?(?:决定|商定|定了|说好)(?:了)?[,:]?(?P<x>[^。!?;]{2,80})",
          r"就(?:用|选|按)(?P<x>[^,。!?;]{1,30})吧", unit="sentence"),
    _rule("task_done", _task_done,
          rf"(?:已经|刚刚|刚|终于)?(?:完成了|做完了|搞定了|弄完了|写完了)(?P<x>{STOP}{{2,30}})",
          rf"(?P<x>{STOP}{{2,30}}?)(?:已经|终于)?(?:完成|做完|搞定|弄完|写完)了"),
    _rule("task", _task,
          r"(?:待办|todo|to-do)\s*:\s*(?P<x>[^。!?;]{2,80})", r"提醒我(?P<x>[^,。!?;]{2,60})",
          r"我(?:需要|得|必须|要记得)(?P<x>[^,。!?;]{2,40})"),
    _rule("favorite", _favorite, rf"我最喜欢的(?P<what>[{HAN}]{{1,4}})是(?P<item>[^,。!?;]{{1,12}})", generic=True),
    _rule("fact", fact_builder("lives"), rf"{SELF}{WE}(?:现在)?(?:都|也|一直)?住在(?P<item>{PLACE_CHARS}{{2,12}}){CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", home_at, rf"{SELF}(?:们)?家(?:现在|就|也|一直)*在(?P<item>{PLACE_CHARS}{{2,12}}){CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    # A move is a new home (我搬到上海了, 我们家去年搬到了杭州, 今年又搬回了杭州); not a plan (我想搬到
    # 上海, 我下个月搬去杭州).
    _rule("fact", fact_builder("lives"), rf"{SELF}{WE}{MOVED_WHEN}(?:从{PLACE_CHARS}{{2,8}}?)?搬(?:家)?(?:到|去|回)了?"
          rf"(?P<item>(?!过){PLACE_CHARS}{{2,12}}){CLAUSE_END}", generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", fact_builder("works"),
          rf"{SELF}{WE}(?:现在)?(?:都|也)?在(?P<item>[{HAN}A-Za-z0-9]{{2,12}}?)(?:工作|上班)了?{_HOW_LONG_SAID}{CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", job_at, rf"{SELF}{WE}(?:现在|目前|还|一直)?(?:都|也)?在(?P<place>家|[{HAN}A-Za-z0-9]{{2,12}}?)(?:做|当|担任)"
          rf"(?:一名|一个|一位|个|名)?(?P<job>[{HAN}]{{1,8}}?){_HOW_LONG_SAID}{CLAUSE_END}", generic=True,
          subjects=FACT_SUBJECTS),
    _rule("fact", own_name, rf"^\s*(?:你好|您好|大家好|嗨)?\s*我(?:的名字|名字)?叫(?:做)?(?P<item>[{HAN}]{{2,6}}){CLAUSE_END}",
          rf"^\s*我的名字是(?P<item>[{HAN}]{{2,6}}){CLAUSE_END}", generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", own_job, rf"{SELF}(?:也)?(?:现在)?(?:是|当)(?:一名|一个|一位|个|名)?(?P<item>[{HAN}]{{1,8}}){CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", fact_builder("named"), rf"我(?:家)?(?:的)?(?P<what>{KIN})(?:名字)?叫(?P<item>[{HAN}A-Za-z]{{1,8}})",
          generic=True),
    _rule("like", _like, rf"我{_NOW}(?:很|非常|特别|真的|也|还|一直|最)?(?:喜欢|热爱|享受)(?P<item>[^,。!?;]{{1,12}})",
          generic=True, subjects=SUBJECTS),
    _rule("dislike", _dislike,
          rf"我{_NOW}(?:很|非常|特别|真的|也|最|其实|一点都|一点也)?(?:不{negation.SOFT}?(?:喜欢|爱)|讨厌|受不了)"
          rf"(?P<item>[^,。!?;]{{1,12}})", generic=True, subjects=SUBJECTS),
    _rule("note", _note,
          r"(?:^|(?<=[,:!?;。\s]))(?:请|麻烦)?(?:你)?(?:帮我)?(?:记住|记一下|记下来|记下|记着)(?:吧)?[,:]?\s*(?P<x>[^。!?;]{2,120})",
          generic=True, unit="sentence", quoted=True),
)

# What may stand between a supposition's opener and the statement it governs: time (明天, 有一天,
# 老了), adverbs, someone finding or thinking it (你发现, 检查结果显示, 孩子说), then the user with
# their adverbs and a verb of taste or ability (我喜欢, 我老了不能). Anything else (如果可以我想…,
# 如果没记错…, 如果你推荐菜的话记住…) is a supposition about something else: the statement is a fact.
_TIME_OR_ADVERB = (r"(?:\s|明天|今天|今晚|以后|将来|到时候|到时|有一天|有天|哪天|哪一天|某天|老了|一下|这样|那样|也|还|都|就|又"
                   r"|再|真的|真|确实|其实|本来|早就|天生|一直|从小|已经|突然间|突然|有点|不小心|很|特别|非常|不太|不|没"
                   r"|确诊|被诊断出?)")
_FINDING = (r"(?:你|您|他|她|医生|大夫|检查结果|检查|体检结果|体检|别人|大家|妈妈|爸爸|孩子|家人|老公|老婆)?"
            r"(?:发现|查出来|查出|检查出来|检查出|诊断出|诊断|显示|确诊|告诉我|说|觉得|认为|以为|证明)")
_SUPPOSE_OPENS = (r"如果|假如|假设|假使|倘若|若是|如若|假若|设想|想象一下|(?<![一二三四五六七八九十两0-9防])万一"
                  r"|(?<![^\s,我你他她们可但过])要是")
SUPPOSED_BETWEEN = (rf"{_TIME_OR_ADVERB}*(?:{_FINDING}{_TIME_OR_ADVERB}*)?"
                    rf"(?:(?:我们|我|咱们|咱|俺|本人|自己){_TIME_OR_ADVERB}*(?:喜欢|爱|能|可以|想|要|会)?)?")

# 我老公不吃香菜，我也是; 很多人对花生过敏，我也一样: the user says the clause before of themselves.
_ME_TOO_LEAD = r"(?:而且|而|其实|正好|刚好|巧了|不过|但是|可是|可)?"  # 不过我也不吃: no contrast, still me too
_ME_TOO_WHEN = r"(?P<when>这几天|这两天|最近|从小|现在|今天|今晚|这周|平时|一直)?(?:其实|倒是)?"  # 我最近也是
_ME_TOO = re.compile(_ME_TOO_LEAD + r"(?:我|俺|本人)" + _ME_TOO_WHEN + r"(?:也|同样|也同样|亦)"
                     r"(?:一样|是一样|是|如此|这样|是这样|是的|然)?[的啊呀哦呢哈啦诶耶哟喔嘛]*")
# 小明不吃香菜，我也不吃: the same words again, said short
_ME_TOO_DOING = re.compile(_ME_TOO_LEAD + r"(?:我|俺)" + _ME_TOO_WHEN
                           + r"(?:也|同样)(?:一样|是)?(?P<doing>(?:从来|一直|都|还|太|怎么)*"
                           r"(?:不(?:太|怎么)?(?:吃|喝|爱吃|爱喝|爱|喜欢|能吃|要)?|吃不了|受不了|讨厌|(?:爱|喜欢)(?:吃|喝)?|对))"
                           r"[的啊呀哦呢哈啦]*")
_AVERSE = re.compile(r"不|没|吃不了|受不了|讨厌|别|过敏")  # 我也不吃 repeats 不吃香菜, not 喜欢吃辣
# Whose statement it was: someone named, a family member, and whose (她老公, 我闺蜜的老公, 小明和小红)
_SOMEONE = re.compile(rf"(?:{LEAD.pattern})(?:{OTHERS.pattern}|{named('one')})(?:的?(?:{OTHERS.pattern}|{named('own')}))*"
                      rf"(?:(?:和|跟|与|、)(?:{OTHERS.pattern}|{named('more')}))*(?:也|都|一直|从小就?|本来就?|其实)*")
# What is no statement to say again: a supposition, a doubt, a question, the user themselves.
_NOT_SAID_AGAIN = re.compile(r"我|要是|如果|假如|万一|的话|不一定|未必|不是|吗|呢|\?|记住|记得|记一下|记下")
ME_TOO_LONGEST = 40  # characters of the clause said again
_INTERJECTION = re.compile(r"[嗯哦噢啊哈呵嘿对是的呀唉害]{1,4}")


def me_too(sentence: str) -> str:
    """`sentence` with each clause that says "me too" (我也是, 我也一样) after one whose subject is
    someone else written out as that clause said of the user: 我老公不吃香菜,我也是 → 我老公不吃香菜,
    我也不吃香菜; 很多人对花生过敏,我也是 → …,我也对花生过敏. Otherwise unchanged."""
    clauses = sentence.split(",")
    for index in range(1, len(clauses)):
        said = clauses[index].strip(" 。！!.~…")  # (我也是？ asks)
        also = _ME_TOO.fullmatch(said) or _ME_TOO_DOING.fullmatch(said)
        if not also:
            continue
        back = index - 1
        while back > 0 and _INTERJECTION.fullmatch(clauses[back].strip()):
            back -= 1  # 露西喜欢吃芹菜。嗯，我也是
        before = clauses[back].strip()
        subject = _SOMEONE.match(before)
        rest = before[subject.end():] if subject else ""
        rest = rest.lstrip("也都还")
        doing = also.groupdict().get("doing")
        # (an allergy is said again only by 我也是 or 我也对: 我也不吃 after it says less)
        alike = doing is None or (("对" in rest) if doing == "对" else
                                  "过敏" not in rest and bool(_AVERSE.search(doing)) == bool(_AVERSE.search(rest)))
        if rest and len(rest) <= ME_TOO_LONGEST and not _NOT_SAID_AGAIN.search(rest) and alike:
            clauses[index] = "我" + (also["when"] or "") + "也" + rest
    return ",".join(clauses)


LANGUAGE = Language(
    code="zh",
    rules=RULES,
    # 以后 alone is only "later" (以后再说, 我以后可能会搬家): a lasting request follows it at once.
    explicit=re.compile(r"(?:^|(?<=[,:!?;。\s]))(?:请|麻烦)?(?:你)?(?:帮我)?(?:记住|记一下|记下)"
                        r"|(?:以后|往后|今后)(?:都|也|做饭|吃饭|推荐|每次|请|别|不要|不|少|多|记得)"
                        r"|从现在(?:开始|起)|(?:从|自)(?:今天|明天|本周|这周)(?:开始|起)|别再|不要再|永远(?:不要|别)|每次都"),
    lasting=re.compile(r"(?:从|自)?(?:今天|今晚|明天|本周|这周)(?:开始|起)|从现在(?:开始|起)|以后|往后|今后"),
    temporal=(
        (re.compile(r"今天|今晚|今早|今儿|今日"), DAY),
        (re.compile(r"明天|明早|明晚"), 2 * DAY),
        (re.compile(r"这几天|这两天|最近几天|近几天|最近"), 3 * DAY),
        (re.compile(r"这周|本周|这个星期|这星期"), timedelta(days=7)),
        (re.compile(r"暂时|目前|眼下"), DAY),
    ),
    # 如果我对花生过敏怎么办, 假如我是素食者, 要是我不吃香菜呢, 万一我本来就对花生过敏呢, 如果你发现我对
    # 花生过敏, 如果明天我对花生过敏: suppositions, not facts (SUPPOSED_BETWEEN). 要是 opens one only
    # after a pause, a person or a conjunction (not 主要是, 只要是, 最重要是, 菜要是清淡的 "must be");
    # 万一 not inside a number (一万一) nor in 以防万一 ("just in case").
    supposition=Supposition(
        opens=re.compile(_SUPPOSE_OPENS),
        between=re.compile(SUPPOSED_BETWEEN),
        alone=re.compile(r"(?:假如|如果|假设|要是|假使|倘若)(?:说|这样|那样|是这样|一下)?|打个比方|假设一下|设想一下"),
        imagines=re.compile(r"假如|假设|假使|设想|想象"),
        consequence=re.compile(r"就|那么|那就|则|,|的话.|时候|之后|以后"),
        after=re.compile(r"(?:了|呢)?的话(?!题|剧|梅|语|筒|费|里|中)"),
        # 要是我怀孕了，(那)我就不能吃生鱼片: the consequence of the user's own supposition is supposed
        # too; not after a hedge about the saying (如果我没看错, 如果我之前没说过) nor when the user eats.
        # (a change or a state of the user's: 怀孕, 是素食者, 搬去成都, 吃素; not what they do: 点外卖, 聚餐)
        # (also another's: 如果我老公吃素，我也吃素 supposes what the user would do)
        # (the user may stand before the opener, 我要是怀孕了，就…, or go unsaid, 要是怀孕了，我就…: then
        # only what befalls a person counts, not 如果是周末 nor 如果不吃)
        condition=re.compile(rf"(?:(?:我们|我|咱们|咱|俺){_TIME_OR_ADVERB}*)?(?:{_SUPPOSE_OPENS}){_TIME_OR_ADVERB}*"
                             rf"(?:(?:我们|我|咱们|咱|俺|你|您|他们|她们|他|她|(?:我的?|我家的?)?(?:{OTHERS.pattern}))"
                             rf"{_TIME_OR_ADVERB}*"
                             r"(?:怀孕|怀上|是(?!在)|成了|成为|变成|当上|当了|得了|患了|生病|病了|感冒|发烧|搬|移民|出国|有了|开始"
                             r"|戒|吃素|不吃|不喝|老了|胖|瘦|过敏|确诊|生了|结婚|离婚|退休|失业|辞职|被诊断|不能|没法|不可以|长大)"
                             r"|(?:怀孕|怀上|得了|患了|生病|病了|感冒|发烧|搬|移民|出国|戒|吃素|老了|胖|瘦|过敏|确诊|结婚|离婚|退休"
                             r"|失业|辞职|被诊断))"),
        hedge=re.compile(r"错|混|实话|老实|坦白|说|讲|提|告诉|表达|写|忘|印象|记|啰嗦|清楚|问题"
                         r"|碰|摸|沾|接触|闻|点|外卖|聚餐"),
        then=re.compile(r"那么|那|就|便"),
        # (就是 is no consequence but stress: 如果我没记混的话，我就是对芒果过敏)
        follows=re.compile(r"(?:那么?|那样的话|这样的话)?(?:我们|我|咱们|咱|俺)?(?:也|肯定|一定|应该)?(?:就|便)(?!是)"
                           r"|(?:那么?|那样的话|这样的话)?(?:我们|我|咱们|咱|俺)也(?!是)"),
        apart=re.compile(r"(?:但是|不过|可是)(?!也|还)|反正|对了|顺便"),
        would=re.compile(r"(?:我们|我|咱们|咱|俺)(?:也|肯定|一定|应该|可能|就)*(?:会|就|要|能|得)"),
    ),
    me_too=me_too,
    denial=DENIAL,
    retraction=RETRACTION,
)
