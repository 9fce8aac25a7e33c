"""The Chinese rule table of the rule-based extractor (R-EXTRACT; seed 000 写入示例, 更新示例).

Text arrives NFKC-normalised and in simplified characters (，→ ",", 記住 → 记住). Items are short
runs of Han characters with particles trimmed (香菜了 → 香菜); anything that does not look like
an item (太多, 这个, 早饭) vetoes the match: precision over recall.
"""

import re
from dataclasses import replace
from datetime import timedelta

from memory.capture import negation_zh as negation
from memory.capture.rules_common import DAY, Finding, Language, Rule, Subjects, alternation, flavor_value

HAN = r"\u4e00-\u9fff"
STOP = r"[^,.;:!?。\s]"  # a character inside one clause

FOOD = set(
    "香菜 葱 姜 蒜 大蒜 洋葱 辣椒 花椒 韭菜 芹菜 茄子 青椒 胡萝卜 土豆 番茄 西红柿 蘑菇 香菇 豆腐 鸡蛋 牛奶 花生 坚果 "
    "海鲜 虾 螃蟹 鱼 牛肉 猪肉 羊肉 鸡肉 内脏 肥肉 味精 糖 蛋 乳制品 芒果 菠萝 苦瓜 榴莲 生姜 香椿 鱼腥草 折耳根 "
    "芝麻 黄豆 大豆 小麦 麸质 贝类 蚝油 酱油 醋 酒 咖啡 奶酪 黄油 巧克力 蜂蜜 木耳 海带 紫菜 茴香 八角 孜然 咖喱".split()
)
FOOD_ENDINGS = tuple("肉菜鱼虾蟹蛋奶瓜豆椒菇果姜蒜葱笋藕米面糖酱醋酒茶")
CUISINES = ("川菜 粤菜 湘菜 鲁菜 苏菜 浙菜 闽菜 徽菜 东北菜 本帮菜 家常菜 日料 日本料理 韩餐 韩国料理 西餐 泰国菜 泰餐 "
            "意大利菜 法餐 法国菜 墨西哥菜 印度菜 越南菜 新疆菜 云南菜 火锅 烧烤").split()
COOKING_WORDS = re.compile(r"做饭|做菜|菜谱|食谱|下厨|烧菜|炒菜|吃|饭|餐|菜|口味|食材|调料|料理")

FLAVORS = (
    ("不能吃辣", {"spicy": "none"}), ("不吃辣", {"spicy": "none"}), ("不要辣", {"spicy": "none"}), ("不辣", {"spicy": "none"}),
    ("不要太辣", {"spicy": "low"}), ("别太辣", {"spicy": "low"}), ("不太辣", {"spicy": "low"}), ("少辣", {"spicy": "low"}),
    ("微辣", {"spicy": "low"}), ("少放辣", {"spicy": "low"}), ("重辣", {"spicy": "high"}), ("特辣", {"spicy": "high"}),
    ("多放辣", {"spicy": "high"}), ("吃辣", {"spicy": "high"}),
    ("少油", {"oil": "low"}), ("少放油", {"oil": "low"}), ("不油腻", {"oil": "low"}), ("不要油腻", {"oil": "low"}),
    ("清淡", {"oil": "low", "salt": "low"}), ("少盐", {"salt": "low"}), ("少放盐", {"salt": "low"}),
)
FLAVOR_RUN = rf"(?:(?:{alternation(phrase for phrase, _ in FLAVORS)})[和、与及]?)+"
FLAVOR_CUE = re.compile(r"喜欢|偏好|爱|要|想|口味|做得|做成|做|来点|希望|习惯|吃")

_HEAD = re.compile(r"^(?:我觉得|我想|其实|不过|但是|现在|以后|今天|今晚|明天|这几天|最近|暂时"
                   r"|那个|这个|任何|那种|这种|有点|一点|一些|都|也|再|我)+")
_TAIL = re.compile(r"(?:之类的?|什么的|这种东西|这类东西|的东西|的菜谱|的菜|了|的|啊|呀|吧|哦|呢|哈|嘛|啦|噢|哟|类)+$")
NOT_ITEMS = set("东西 饭 早饭 早餐 午饭 午餐 晚饭 晚餐 夜宵 零食 什么 太多 太少 很多 多 少 一点 人 事 话 这些 那些 时间 钱"
                .split())
_PRONOUN = re.compile(r"[你我他她它这那哪谁啥]|什么|怎么")
_LIST = re.compile(r"[和、与及跟或]|还有")

TEXTS = {
    # kind: (title, content, tags); {item} is filled in
    "avoid": ("用户不吃{item}", "推荐菜谱时避免{item}。", ("忌口", "菜谱推荐")),
    "limit": ("用户可接受少量{item}", "{item}可以放一点，但不要太多。", ("忌口", "菜谱推荐")),
    "like_food": ("用户喜欢吃{item}", "推荐菜谱时可以多用{item}。", ("喜好", "菜谱推荐")),
    "cuisine": ("用户喜欢{item}", "推荐菜谱时优先{item}。", ("菜系", "菜谱推荐")),
    "flavor": ("用户偏好{item}", "推荐菜谱时优先{item}。", ("口味", "菜谱推荐")),
    "diet": ("用户{item}", "推荐菜谱时遵守：{item}。", ("饮食限制", "菜谱推荐")),
    "allergy": ("用户对{item}过敏", "推荐菜谱时绝对避免{item}。", ("过敏", "菜谱推荐")),
    "allergy_other": ("用户对{item}过敏", "用户说自己对{item}过敏。", ("过敏",)),
    "health": ("用户{item}", "用户说：{said}", ("身体状况", "临时")),
    "like": ("用户喜欢{item}", "用户说自己喜欢{item}。", ("喜好",)),
    "dislike": ("用户不喜欢{item}", "用户说自己不喜欢{item}。", ("喜好",)),
    "favorite": ("用户最喜欢的{what}是{item}", "用户说自己最喜欢的{what}是{item}。", ("喜好",)),
    "fact_lives": ("用户住在{item}", "用户说自己住在{item}。", ("住址",)),
    "fact_works": ("用户在{item}工作", "用户说自己在{item}工作。", ("工作",)),
    "fact_named": ("用户的{what}叫{item}", "用户的{what}叫{item}。", ("家人",)),
    "fact_name": ("用户叫{item}", "用户说自己叫{item}。", ("姓名",)),
    "fact_job": ("用户是{item}", "用户说自己是{item}。", ("工作",)),
    "note": ("{item}", "用户要求记住：{item}", ("记住",)),
    "decision": ("决定：{item}", "决定：{item}", ("决定",)),
    "task": ("待办：{item}", "待办：{item}", ("待办",)),
    "task_done": ("已完成：{item}", "已完成：{item}", ("待办", "已完成")),
    "correction": ("更正：{old} → {item}", "用户更正：不是{old}，是{item}。", ("更正",)),
}


def clean(text: str, *, longest: int = 6) -> str:
    """The item in `text` with particles trimmed, or '' when it is not an item."""
    text = _TAIL.sub("", _HEAD.sub("", text.strip()))
    if not 1 <= len(text) <= longest or text in NOT_ITEMS or _PRONOUN.search(text):
        return ""
    if not re.fullmatch(rf"[{HAN}A-Za-z0-9]+", text):
        return ""
    return text


def items(text: str, *, longest: int = 6) -> list[str]:
    """The items of a list (香菜和葱 → [香菜, 葱]); [] if any part is not an item."""
    parts = [clean(part, longest=longest) for part in _LIST.split(text) if part.strip()]
    return parts if parts and all(parts) else []


def is_food(item: str) -> bool:
    return item in FOOD or (len(item) <= 4 and item.endswith(FOOD_ENDINGS))


def say(kind: str, item: str, *, value=None, old: str = "", said: str = "", what: str = "", entities=None) -> Finding:
    """A Finding of `kind` about `item`, in this table's words (TEXTS)."""
    title, content, tags = TEXTS[kind]
    words = {"item": item, "old": old, "said": said, "what": what}
    return Finding(kind=kind, lang="zh", value=item if value is None else value, title=title.format(**words),
                   content=content.format(**words), tags=tags, entities=tuple(entities if entities is not None else [item]),
                   item=item, old=old)


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
    return [say("avoid", item) for item in items(match["item"])]


def _limit(match: re.Match[str], message: str) -> list[Finding]:
    """香菜现在可以接受一点，但不要太多 → limit_ingredient {ingredient, amount: 少量}."""
    item = clean(match["item"])
    if not item or negation.negated(match.string[: match.end("item")]) or not (
            is_food(item) or COOKING_WORDS.search(message)):
        return []  # 不可以放一点: the item group took the negation
    return [say("limit", item, value={"ingredient": item, "amount": "少量"})]


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
    if set(value.values()) == {"high"} and negation.HURTS.match(after):
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
    return [say("diet", "吃素", value="素食")]


def _allergy(match: re.Match[str], message: str) -> list[Finding]:
    item = match["item"]
    if "对" in item:
        return []  # 我妈对花生过敏: someone else's, which 对…过敏 has already declined
    if not match.group(0).startswith("对") and _OTHERS.search(item):
        return []  # 我女儿花生过敏 (but 对猫过敏 and 猫毛过敏 are the user's)
    if re.search(r"(?:不|没|没有|不会)$", item) or item in ("有", "我有"):
        return []  # 我不过敏, 我对花生不过敏, 我没有过敏
    found = items(item, longest=8)
    if not found:
        return []
    if all(is_food(item) for item in found):
        return [say("allergy", item) for item in found]
    whole = "、".join(found)
    return [say("allergy_other", whole, entities=found)]


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


KIN = "狗|猫|狗狗|猫咪|宠物|儿子|女儿|孩子|老婆|老公|妻子|丈夫|爱人|男朋友|女朋友|哥哥|姐姐|弟弟|妹妹|妈妈|爸爸"
_OTHER_PEOPLE = ("老妈|老爸|我妈|我爸|我姐|我哥|我弟|我妹|外婆|外公|奶奶|爷爷|姥姥|姥爷|叔叔|阿姨|舅舅|舅妈|小姨|姑姑|"
                 "侄子|侄女|外甥|孙子|孙女|表哥|表姐|表弟|表妹|堂哥|堂姐|朋友|闺蜜|同事|同学|室友|舍友|邻居|兄弟|姐妹|"
                 "先生|太太|媳妇|对象|男友|女友|老伴|那口子|宝宝|大宝|二宝|娃|闺女|婆婆|公公|岳父|岳母|丈母娘|父亲|母亲|"
                 "爸妈|父母|老人|客人|家人|小孩|老板|领导|别人|有人|其他人|学生们|双胞胎|仓鼠|兔子|鹦鹉|"
                 "她们|他们|(?<![其吉])他|她")
# A pet is someone else, 猫毛 and 热狗 are things (我对猫毛过敏, 我喜欢吃热狗).
_OTHERS = re.compile(rf"(?<![热单身])(?:{KIN}|{_OTHER_PEOPLE})(?!毛)")
# Who the rules about the user's own tastes and health speak of (Subjects): 我女儿不爱吃青菜 and
# 我女儿今年六岁，对虾过敏 are the daughter's; 医生让我别吃辣, 我妈来了，我不吃香菜 and 带女儿出去吃饭，
# 不要放辣 the user's.
_LEAD = re.compile(r"(?:我|我的|我家|我家的|我们家|我们家的|咱家|家里|家里的|俺|俺家|咱)?")
_ASKING = re.compile(r"谁|怎么可能|难道|吗\W*$")  # 谁不爱吃辣呢, 我和老公都不吃香菜吗: questions, not tastes
# 我和老公都…, 我跟我女儿都…: the user and someone else together (Subjects.joint).
_JOINT = (re.compile(r"我(?:和|跟|与|同)(?:我的?)?$"), re.compile(r"(?:俩|两个人|两个|两人|几个)?(?:也都|都|一起)"))
SUBJECTS = Subjects(others=_OTHERS, user=re.compile("我"), lead=_LEAD, asking=_ASKING, joint=_JOINT)
# Facts may go on about the user in a clause that names nobody (我叫小红，住在杭州，是一名护士),
# and only then (Subjects.topic_user): not 我老公比我大五岁，是医生, nor 住在楼下的邻居对猫过敏.
FACT_SUBJECTS = Subjects(others=_OTHERS, user=re.compile("我"), lead=_LEAD, asking=_ASKING, topic_user=True,
                         joint=_JOINT,
                         carries=re.compile(r"(?:现在)?(?:住在|是|当|在|今年|搬)"))


def _favorite(match: re.Match[str], message: str) -> list[Finding]:
    item, what = clean(match["item"], longest=10), clean(match["what"], longest=4)
    return [say("favorite", item, what=what)] if item and what else []


_HOW_LONG = re.compile(r"(?:已经|快|都)?[0-9一二三四五六七八九十两几多半]+(?:个)?(?:年|个月|月|天|周)(?:多)?(?:了)?$")


# The user alone or with others (我们, 我家, 我们一家, 我和老公都): a home is theirs too.
_WE = r"(?:们家|们一家|们|家|一家|(?:和|跟|与)[\u4e00-\u9fff]{1,5}?(?:都|一起|也))?"
_MOVED_WHEN = r"(?:上个月|上周|去年|前年|今年|年初|最近|前几天|前段时间|刚刚|刚|已经|终于|然后|后来|之后|接着)?又?"
# A place one lives or works in (上海, 阿里巴巴, 北京朝阳区), never a mark or an emoji.
PLACE_CHARS = rf"[{HAN}A-Za-z0-9·]"
_NOT_HOMES = set("新家 新房 新房子 新地方 这边 那边 老家 城里 乡下 郊区 外地 国外 "
                 "楼上 楼下 隔壁 对面 酒店 宾馆 旅馆 民宿 医院 这里 那里 这儿 那儿 附近 家里 外面 宿舍".split())
# Characters no place name holds, which show the words ran on past it (杭州挺好, 上海的时候很不习惯,
# 上海后就胖, 北京的一家公司).
_NOT_IN_PLACE = re.compile(r"[的很挺不吗呢吧啊胖瘦累忙]|时候|习惯|以后|之后|后就|后来|就|还要|不错")
# A verb after the place a move went to (我搬到上海工作了 → 上海).
_AFTER_MOVE = re.compile(r"(?:工作|生活|上学|读书|发展|定居|去|来|住)+$")
_NOT_WORKPLACES = set("公司 一家公司 单位 办公室 家 家里 楼上 楼下 附近 外地 外面 这里 那里 这儿 那儿 这边 那边 店里 厂里 "
                      "网上 线上 远程".split())
_NEAR = ("附近", "旁边", "对面", "隔壁", "楼上", "楼下", "那边", "这边", "宿舍")  # 公司附近: no place of its own
# What makes a statement of the user's home or work no fact, said before it in the sentence: a
# supposition (如果我搬到北京), what someone else says or thinks (我妈说，我搬到北京了; not 说实话,
# 跟你说), a dream; or after it: a joke (…，开玩笑的).
_NOT_SO = re.compile(rf"如果|假如|要是|假设|万一|等$|等到|以为|梦见|梦到|做梦|做了个梦|梦里"
                     rf"|(?:{_OTHERS.pattern}|他们?|她们?|别人|大家|人家)(?:都|也|还)?(?:说|以为|觉得|认为|告诉)")
_JOKING = re.compile(r"开玩笑|玩笑的|逗你的|骗你的|说着玩")


def around(match: re.Match[str], message: str) -> tuple[str, str]:
    """The words of `match`'s sentence before and after it, across commas (its rule reads one
    clause; the message holds the rest)."""
    at = message.find(match.string)
    if at < 0:
        return match.string[: match.start()], match.string[match.end():]
    start, end = at + match.start(), at + match.end()
    before = re.split(r"[。!?;\n]", message[:start])[-1]
    after = re.split(r"[。!?;\n]", message[end:])[0]
    return before, after


def said_as_fact(match: re.Match[str], message: str) -> bool:
    """Whether `match` states something of the user as so (see _NOT_SO and _JOKING)."""
    before, after = around(match, message)
    return not (_NOT_SO.search(before) or _JOKING.search(after))


def _fact(kind: str):
    """A plain fact about the user (我住在上海, 我家的狗叫旺财; 我住在北京三年了 → 北京); not a
    question (我住在杭州吗), a supposition or hearsay (如果我搬到北京, 我妈说我搬到北京了), nor a place
    that is none (住在酒店, 住在楼上, 搬到公司附近, 在公司上班)."""
    def build(match: re.Match[str], message: str) -> list[Finding]:
        item = _HOW_LONG.sub("", _TAIL.sub("", match["item"].strip()))
        if kind == "lives":
            item = _AFTER_MOVE.sub("", item)  # 我搬到北京去了, 我搬到上海工作了
        if not 2 <= len(item) <= 12 or _PRONOUN.search(item) or item.endswith(("吗", "呢")):
            return []
        if kind in ("lives", "works") and (not said_as_fact(match, message) or item.endswith(_NEAR)
                                           or _NOT_IN_PLACE.search(item)):
            return []
        if (kind == "lives" and item in _NOT_HOMES) or (kind == "works" and (
                item in _NOT_WORKPLACES or item.startswith(("一家", "一个", "家")))):
            return []
        what = match.groupdict().get("what") or ""
        return [say(f"fact_{kind}", item, value={kind: item, **({"who": what} if what else {})}, what=what)]
    return build


# 叫 is also "order, call, wake" (我叫外卖, 我叫个车, 我叫代驾, 我叫儿子起床): what follows must
# look like a name, and 我叫 must open the clause (帮我叫个外卖, 我儿子总说我叫奥特曼 are no names).
_NOT_NAME_PART = re.compile("外卖|快递|出租|滴滴|专车|车|代驾|跑腿|闪送|客服|保洁|醒|起来|起床|过来|来了|帮忙|结账|大家"
                            "|保密|秘密|名字|宝贝")
_NOT_NAME_START = tuple("个了的过着做得错不苦你他她它们人车饭菜醒一出破")
OCCUPATIONS = set(
    "护士 医生 大夫 老师 教师 教授 工程师 程序员 设计师 律师 会计 会计师 厨师 司机 学生 大学生 研究生 博士生 硕士生 高中生 "
    "初中生 中学生 小学生 留学生 记者 作家 编辑 警察 销售 经理 产品经理 项目经理 公务员 军人 农民 工人 店主 画家 演员 "
    "歌手 摄影师 翻译 导游 主播 模特 保安 快递员 外卖员 服务员 收银员 空姐 飞行员 科学家 研究员 分析师 咨询师 药剂师 药师 "
    "医师 兽医 牙医 保姆 家庭主妇 全职妈妈 全职爸爸 自由职业者 创业者 实习生 博士后 营养师 理发师 化妆师 美容师 教练 "
    "健身教练 建筑师 心理咨询师 心理医生 产品经理 架构师 运维 会计员 出纳 律师助理 社工 消防员 主持人 调酒师 面包师".split()
)
# What may stand before an occupation: a field (软件工程师, 儿科医生), never a word that makes it
# something else (我当不了老师, 我当过老师, 我当然是老师, 我是说老师, 我是你的老师, 我当了十年老师).
_JOB_PREFIX = re.compile(r"[\u4e00-\u9fff]{0,3}")
_NOT_IN_JOB = re.compile(r"[不没了过时然说问想找来你他她它的是当个年在给让被把要会能老假上好坏成作]")
# 如果我是医生, 我妈想让我当医生, 长大了我当医生, 等我当上医生, 你扮演病人，我是医生: not what the user is
_HYPOTHETICAL = re.compile(r"如果|假如|要是|假设|希望|想当|想做|梦想|以为|让|长大|以后|将来|等")
_ROLE_PLAY = re.compile(r"扮演|假装|就当|当作|当成|角色")  # in the same sentence: 你扮演病人，我是医生


_TITLES = ("房东", "师傅", "师父", "阿姨", "叔叔", "大爷", "大妈", "总", "经理", "老板", "先生", "女士", "小姐", "同学", "大夫",
           "总监", "主任", "部长", "科长", "处长", "局长", "院长", "校长", "主管", "总裁", "董事长", "老板娘", "工")


def is_occupation(item: str) -> bool:
    """An occupation of the list, or one with a field before it (软件工程师)."""
    for length in range(len(item), 0, -1):
        if item[-length:] in OCCUPATIONS:
            prefix = item[:-length]
            return bool(_JOB_PREFIX.fullmatch(prefix)) and not _NOT_IN_JOB.search(prefix)
    return False


def _name(match: re.Match[str], message: str) -> list[Finding]:
    """我叫小红 / 我的名字是王小红 → a fact: the user's own name."""
    item = _TAIL.sub("", match["item"])
    if (not 2 <= len(item) <= 4 or item in OCCUPATIONS or _PRONOUN.search(item) or _NOT_NAME_PART.search(item)
            or item.startswith(_NOT_NAME_START) or item.endswith(("吗", "呢")) or _OTHERS.search(item)
            or item.endswith(_TITLES) or is_occupation(item)):
        return []  # (我叫房东, 我叫张师傅, 我叫王医生: someone called, not a name)
    return [say("fact_name", item, value={"name": item})]


def _job(match: re.Match[str], message: str) -> list[Finding]:
    """我是一名护士 / (我叫小红，)是程序员 / 我是干程序员的 → a fact: what the user does; not a
    wish or a supposition (如果我是医生, 我希望我是医生)."""
    item = re.sub(r"^(?:干|做|搞)", "", _TAIL.sub("", match["item"]))
    before, after = around(match, message)
    if (_HYPOTHETICAL.search(match.string[: match.start()]) or _ROLE_PLAY.search(before + after)
            or not said_as_fact(match, message) or match["item"].endswith(("吧", "吗", "呢"))
            or not is_occupation(item)):
        return []  # (我是医生吧: a guess; 你扮演病人，我是医生: a game; 我妈说我是医生: her word)
    return [say("fact_job", item, value={"job": item})]


def _text(match: re.Match[str], *, shortest: int = 2, longest: int = 80) -> str:
    text = re.sub(r"^[了吗吧哦啊好的,:\s]+", "", match["x"]).strip(" ,.;:!?。")
    return text if shortest <= len(text) <= longest else ""


def _note(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match, shortest=3, longest=120)
    return [say("note", text, entities=[])] if text else []


def _decision(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match)
    return [say("decision", text, entities=[])] if text else []


_ABSTRACT = re.compile(r"^(?:休息|冷静|放松|想想|想一想|考虑|睡觉|静一静|好好|调整)")


def _task(match: re.Match[str], message: str) -> list[Finding]:
    text = _text(match, longest=60)
    if not text or _ABSTRACT.match(text):
        return []
    return [say("task", text, value={"task": text, "status": "open"}, entities=[])]


def _task_done(match: re.Match[str], message: str) -> list[Finding]:
    """报告写完了: closes the open task it names; stands alone only without 这/那 (这个做完了)."""
    text = _text(match, longest=40)
    if not text or text in NOT_ITEMS:
        return []
    finding = say("task_done", text, value={"task": text, "status": "done"}, entities=[])
    return [replace(finding, needs_target=bool(_PRONOUN.search(text)))]


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
CLAUSE_END = r"(?=[。.!?;~\s]*$)"  # the rest of the clause is its end mark (是一名程序员。)
ITEM = rf"(?P<item>[{HAN}、和与及]{{1,16}})"  # to the end of the clause: 香菜和葱
LAZY_ITEM = rf"(?P<item>[{HAN}]{{1,10}}?)"  # as short as the rest allows: 香菜(现在)可以接受一点
AMOUNT = r"(?:一点点|一点|少量|一些|点)"
RULES = (
    _own("health", negation.wanted(_health),
         r"(?P<part>胃|肚子|头|嗓子|喉咙|牙|腰|肠胃)(?:有点|有些|不太|很|特别|好|又)?(?P<ail>不舒服|疼|痛|难受|不好)",
         r"(?P<ail>感冒了|发烧了|发烧|拉肚子|上火了|上火|咳嗽|生病了)"),
    _own("allergy", negation.wanted(_allergy),
         rf"对(?P<item>[{HAN}、和与]{{1,12}}?)过敏(?![性史])",
         rf"(?:^|(?<=[我,]))(?P<item>[{HAN}、和与]{{1,10}}?)过敏(?![性史])"),
    _rule("diet", _diet, r"我(?:是)?(?:吃素|素食者?|纯素)"),
    _own("flavor", _flavor, FLAVOR_RUN),
    _own("limit", negation.wanted(_limit),
         rf"{LAZY_ITEM}(?:现在|其实|也|还是|倒是)*(?:可以|能|能够)(?:接受|吃|放|加){AMOUNT}",
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
    _rule("fact", _fact("lives"), rf"{SELF}{_WE}(?:现在)?(?:都|也|一直)?住在(?P<item>{PLACE_CHARS}{{2,12}}){CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    # A move is a new home (我搬到上海了, 我们家去年搬到了杭州, 今年又搬回了杭州); not a plan (我想搬到
    # 上海, 我下个月搬去杭州).
    _rule("fact", _fact("lives"), rf"{SELF}{_WE}{_MOVED_WHEN}(?:从{PLACE_CHARS}{{2,8}}?)?搬(?:家)?(?:到|去|回)了?"
          rf"(?P<item>(?!过){PLACE_CHARS}{{2,12}}){CLAUSE_END}", generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", _fact("works"),
          rf"{SELF}{_WE}(?:现在)?(?:都|也)?在(?P<item>[{HAN}A-Za-z0-9]{{2,12}}?)(?:工作|上班){CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", _name, rf"^\s*(?:你好|您好|大家好|嗨)?\s*我(?:的名字|名字)?叫(?:做)?(?P<item>[{HAN}]{{2,6}}){CLAUSE_END}",
          rf"^\s*我的名字是(?P<item>[{HAN}]{{2,6}}){CLAUSE_END}", generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", _job, rf"{SELF}(?:现在)?(?:是|当)(?:一名|一个|一位|个|名)?(?P<item>[{HAN}]{{1,8}}){CLAUSE_END}",
          generic=True, subjects=FACT_SUBJECTS),
    _rule("fact", _fact("named"), rf"我(?:家)?(?:的)?(?P<what>{KIN})(?:名字)?叫(?P<item>[{HAN}A-Za-z]{{1,8}})", generic=True),
    _rule("like", _like, rf"我{_NOW}(?:很|非常|特别|真的|也|还|一直|最)?(?:喜欢|热爱|享受)(?P<item>[^,。!?;]{{1,12}})",
          generic=True, subjects=SUBJECTS),
    _rule("dislike", _dislike,
          rf"我{_NOW}(?:很|非常|特别|真的|也|最|其实|一点都|一点也)?(?:不{negation.SOFT}?(?:喜欢|爱)|讨厌|受不了)"
          rf"(?P<item>[^,。!?;]{{1,12}})", generic=True, subjects=SUBJECTS),
    _rule("note", _note,
          r"(?:^|(?<=[,:!?;。\s]))(?:请|麻烦)?(?:你)?(?:帮我)?(?:记住|记一下|记下来|记下|记着)(?:吧)?[,:]?\s*(?P<x>[^。!?;]{2,120})",
          generic=True, unit="sentence"),
)

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
)
