"""The words the Chinese rule table shares (memory.capture.rules_zh, facts_zh): foods,
cuisines and flavours, what an item looks like, the table's own wording of each kind of memory
(TEXTS, say), and who a sentence speaks of (SUBJECTS: the user, a family member, a friend).
"""

import re
from functools import cache
from importlib.resources import files

from memory.capture.rules_common import Finding, Subjects, alternation
from memory.search.concepts import thesaurus
from memory.search.text import normalize

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

# (喝牛奶 → 牛奶, but 喝茶 stays: one character is no item)
HEAD = re.compile(r"^(?:我觉得|我想|其实|不过|但是|现在|以后|今天|今晚|明天|这几天|最近|暂时"
                   r"|那个|这个|任何|那种|这种|有点|一点|一些|都|也|再|我|(?:吃|喝)(?:点儿?)?+(?=..))+")
# …and a tag after a statement (我不吃香菜好不好, 对吧): the statement stays, the tag is no part of the item.
# (not the 对 of 派对, 绝对: 我喜欢派对吧 is 派对; 行吧 is left alone, as 旅行吧, 自由行吧 are places and trips).
TAIL = re.compile(r"(?:好不好|行不行|(?<![派绝相反配一面针应核不])对吧|对不对|是吧|(?<![爱友美良只最正刚还])好吧|的说"
                  r"|之类的?|什么的|这种东西|这类东西|的东西|的菜谱|的菜|了|的|啊|呀|吧|哦|呢|哈|嘛|啦|噢|哟|类|呗|嘿|嘻|呵)+$")
NOT_ITEMS = set("东西 饭 早饭 早餐 午饭 午餐 晚饭 晚餐 夜宵 零食 什么 太多 太少 很多 多 少 一点 人 事 话 这些 那些 时间 钱"
                .split())
PRONOUN = re.compile(r"[你我他她它这那哪谁啥]|什么|怎么")
LIST = re.compile(r"[和、与及跟或]|还有")

TEXTS = {
    # kind: (title, content, tags); {item} is filled in
    "avoid": ("用户不吃{item}", "推荐菜谱时避免{item}。", ("忌口", "菜谱推荐")),
    "limit": ("用户可接受少量{item}", "{item}可以放一点，但不要太多。", ("忌口", "菜谱推荐")),
    "like_food": ("用户喜欢吃{item}", "推荐菜谱时可以多用{item}。", ("喜好", "菜谱推荐")),
    "cuisine": ("用户喜欢{item}", "推荐菜谱时优先{item}。", ("菜系", "菜谱推荐")),
    "flavor": ("用户偏好{item}", "推荐菜谱时优先{item}。", ("口味", "菜谱推荐")),
    "diet_ended": ("用户不再{item}", "用户说自己不再{item}了。", ("饮食限制",)),
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
    "no_allergy": ("用户没有已知的过敏", "用户说自己没有任何过敏。", ("过敏",)),
    "fact_job": ("用户是{item}", "用户说自己是{item}。", ("工作",)),
    "note": ("{item}", "用户要求记住：{item}", ("记住",)),
    "decision": ("决定：{item}", "决定：{item}", ("决定",)),
    "task": ("待办：{item}", "待办：{item}", ("待办",)),
    "task_done": ("已完成：{item}", "已完成：{item}", ("待办", "已完成")),
    "correction": ("更正：{old} → {item}", "用户更正：不是{old}，是{item}。", ("更正",)),
}


def clean(text: str, *, longest: int = 6) -> str:
    """The item in `text` with particles trimmed, or '' when it is not an item."""
    text = TAIL.sub("", HEAD.sub("", text.strip()))
    if not 1 <= len(text) <= longest or text in NOT_ITEMS or PRONOUN.search(text):
        return ""
    if not re.fullmatch(rf"[{HAN}A-Za-z0-9]+", text):
        return ""
    return text


def items(text: str, *, longest: int = 6) -> list[str]:
    """The items of a list (香菜和葱 → [香菜, 葱]); [] if any part is not an item."""
    parts = [clean(part, longest=longest) for part in LIST.split(text) if part.strip()]
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


KIN = "狗|猫|狗狗|猫咪|宠物|儿子|女儿|孩子|老婆|老公|妻子|丈夫|爱人|男朋友|女朋友|哥哥|姐姐|弟弟|妹妹|妈妈|爸爸"
OTHER_PEOPLE = ("老妈|老爸|我妈|我爸|我姐|我哥|我弟|我妹|外婆|外公|奶奶|爷爷|姥姥|姥爷|叔叔|阿姨|舅舅|舅妈|小姨|姑姑|"
                 "侄子|侄女|外甥|孙子|孙女|表哥|表姐|表弟|表妹|堂哥|堂姐|朋友|闺蜜|同事|同学|室友|舍友|邻居|兄弟|姐妹|"
                 "先生|太太|媳妇|对象|男友|女友|老伴|那口子|宝宝|大宝|二宝|娃|闺女|婆婆|公公|岳父|岳母|丈母娘|父亲|母亲|"
                 "爸妈|父母|老人|客人|家人|小孩|老板|领导|别人|有人|其他人|学生们|双胞胎|仓鼠|兔子|鹦鹉|"
                 "她们|他们|(?<![其吉])他|她")
# A pet is someone else, 猫毛 and 热狗 are things (我对猫毛过敏, 我喜欢吃热狗).
OTHERS = re.compile(rf"(?<![热单身])(?:{KIN}|{OTHER_PEOPLE})(?!毛)")
# Someone named or spoken to, all a clause says before what they do (小明对花生过敏, 老王也对虾过敏,
# 张伟一直对芒果过敏, 你对虾过敏, 我家小王对虾过敏, Tom对花生过敏, 记住小明对花生过敏, 王小明不吃香菜, 大家都爱吃辣):
# not the user (allergy_zh; Subjects.named). A list of what names someone, not of what may precede the user's own 对 (其实, 从小,
# 一直…), so an unusual lead-in never costs the user's allergy; words that begin like a name are
# not one (小时候, 老是, 老子 "I", 于是, 马上, 夏天, 周末, 黄昏, 黄梅天, 白天).
_SURNAMES = ("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡杜叶程苏魏吕丁任"
             "沈姚卢姜崔钟谭陆汪范廖贾夏韦方邹孟熊秦邱尹薛闫段雷侯龙陶黎贺顾郝龚邵钱严戴孔汤于白")
_NOT_NAMES = ("于是|马上|高度|方才|白天|白色|夏天|夏季|夏日|周末|周[一二三四五六日天]|黄昏|黄梅|陈年|高温|雷雨|任何|龙年"
              "|钱包|孔雀|冯|高中|许多|许久|林间|何时|罗马|程度|苏醒|韩国|曾经|田里|汤里|严重|戴上|贺年|顾客|邵|熊猫")
_SAYING = (r"(?:对了|嗯|哦|啊|其实|另外|还有|而且|但是|不过|可是|因为|所以|然后|顺便说一下|顺便说一句|顺便提一下"
           r"|记住|请记住|记一下|告诉你|你知道吗|我?听说|我?发现|我知道|如果|假如|要是|万一|假设|就算|即使)")
# Names from other languages are written with a small set of characters (安娜, 大卫, 凯文, 克里斯, 艾薇儿):
# two to five of them make a name, but for the few words of those characters alone (哈哈, 大约). A
# doubled character of a given name is a pet name (莉莉, 乐乐, 多多); other doubled characters are
# adverbs, frequencies and interjections (天天, 年年都, 微微, 明明, 恩恩). The characters that are
# also surnames are read as a surname and a given name (汤姆, 罗丽), so a name is read one way only
# (read two ways, a list of names took seconds to be found no name: backtracking).
_FOREIGN = "".join(dict.fromkeys(
    character for character in "大安娜丽莉莎琳妮露丝玛艾汤姆杰克约翰彼得保罗卫斯特凯尼迪米拉萨森伦芬维琪茜蒂黛娅雅薇乔治詹"
    "威廉亨利苏珊贝尔伯奥索菲亚瑞托史夫埃德华兹莫里哈格吉布朗赫曼麦肯西卡戴爱琴丹南希本路易卢雷蕾娃茉瑟宾佩莱恩泰勒科比古"
    "迈当伊芙朵萝诺霍普文达汉海劳可逊儿历山明"
    if character not in _SURNAMES))
_NOT_FOREIGN = "哈哈|哈利路亚|大约|大伦|斯文|可可西里"
_PET_NAME = "莉丽乐婷欢贝豆多牛球糖果朵甜晶静芳亮冬东毛妞笑悠依佳琪娜菲露兰红涛浩洋阳晨轩航萌圆团壮"
NAME_LONGEST = 48  # characters before an allergy's 对 read for a name; longer is a lead-in of the user's


# Latin words that are no name before Chinese (OK我住在杭州, btw不吃香菜, emmm, hhh, Actually不吃香菜)
_NOT_LATIN_NAMES = (r"(?i:ok(?:ay)?|btw|lol|hello|hi|hey|hm+|e+m+|h+|ha(?:ha)+|he(?:he)+|yes|yeah|yep|wow|oh|ah|well|so|and"
                    r"|but|also|plus|ps|fyi|anyway|tbh|sorry|thanks?|actually|basically|honestly|seriously|really"
                    r"|personally|generally|usually|normally|note|please|pls|plz|no|nope|nah|sure|fine|or|then"
                    r"|now|today|tonight|tomorrow|yesterday|maybe|still|just|even|again|m+|um+|uh+|er+|eh|aha|omg|yup|yea"
                    r"|ya|thx|ty|gosh|damn|dang|jeez|hah|xd|oops|alright|imo|imho|dear|bro|sis|dude|man|guys|bruh|babe"
                    r"|honey|k+|ok+)(?![A-Za-z])")
# What may follow a name (Tom老师, Lisa姐)
_TITLES = "老师|哥|姐|总|先生|女士|小姐|叔叔?|阿姨|同学|医生|大夫|经理"
# People in general (很多人对花生过敏). 大家 and 所有人 are the thesaurus's words, and so the user's
# (大家都爱吃辣，包括我; 我们家大家都对花生过敏): they often include the user. GENERAL never does
# (普通人对花生过敏), whatever the thesaurus knows of it.
GENERAL = "很多人|好多人|有些人|有的人|许多人|不少人|一般人|普通人|别人|其他人"
PEOPLE = f"大家|所有人|{GENERAL}"


def named(tag: str, *, spoken_to: bool = True, latin: bool = True, capitalised: bool = False) -> str:
    """Someone named (the group `tag` reads a doubled character; a Latin word when `latin`, only
    a capitalised one (Tom, Anna) when `capitalised`), or spoken to (你, 您) when `spoken_to`."""
    return (rf"(?:{'你|您|' if spoken_to else ''}{PEOPLE}"
            + (rf"|(?!{_NOT_LATIN_NAMES})[A-Za-z][A-Za-z.'-]*" if latin else "")
            + (rf"|(?!{_NOT_LATIN_NAMES})[A-Z][a-z]{{1,15}}(?:\s[A-Z][a-z]{{1,15}})?\s?(?:{_TITLES})?" if capitalised else "") +
            rf"|(?:欧阳|司马|上官|诸葛|东方|慕容)[{HAN}]{{1,2}}"
            rf"|(?!小时|小心|小的|老是|老实|老早|老子|老娘|老夫)[小老阿][{HAN}]|(?!{_NOT_NAMES})[{_SURNAMES}](?:(?!我)[{HAN}]){{1,2}}?"
            rf"|(?!{_NOT_FOREIGN}|(?P<{tag}_twice>.)(?P={tag}_twice))[{_FOREIGN}]{{2,5}}|(?P<{tag}>[{_PET_NAME}])(?P={tag}))")


# What may stand between a name and what they do: adverbs, a time, a guess (小明最近对花生过敏,
# 安娜这几天不吃火锅, 小明可能对花生过敏)
_AFTER_NAME = (r"(?:也|还|都|就|一直|从小就?|本来就?|其实|好像|可能|大概|应该|最近|这几天|这两天|今天|现在|平时|一般"
               r"|以后|从今天开始|从今天起|这周|暂时)*")
NAMED = re.compile(
    rf"{_SAYING}?(?:{named('said')}(?:说|讲|告诉我|提到))?(?:我们家的?|我家的?)?{named('one')}"
    rf"(?:(?:和|跟|与|还有|、){named('more')})*{_AFTER_NAME}")
_NAMED_DOING = re.compile(
    rf"(?:{_SAYING}\s*)?(?P<who>(?:我们家的?|我家的?)?{named('one', spoken_to=False, latin=False, capitalised=True)}"
    rf"(?:(?:和|跟|与|还有|、){named('more', spoken_to=False, latin=False, capitalised=True)})*)"
    rf"{_AFTER_NAME}")
# What only a person does (不吃, 爱吃, 喜欢, 住在, 是…); a request for a dish is the user's whoever
# it names (小份不要香菜, 黄焖鸡别放辣, Note: 不要香菜).
_PERSON_DOES = re.compile(r"(?:不|也|都|一直|从来|从不|还)*(?:吃|喝|爱|喜欢|讨厌|能|住|是|在|对|会)")


_DOES_LAST = re.compile(r"(?:不|也|都|一直|从来|从不|还)*(?:吃|喝|爱|喜欢|讨厌|能)+$")
_DISH_ENDINGS = tuple("餐式鸡锅饭面粉汤粥饼菜料份碗底堡包")  # 韩餐不吃辣, 黄焖鸡: no one's name


# First names that are everyday English words too (May, Will, Hope, Grace, Summer): no name before Chinese.
_WORD_NAMES = frozenset("""may will june april august hope joy faith grace dawn ruby amber pearl rose lily ivy jasmine
    olive cherry candy honey sunny summer autumn winter spring mark bill pat sue ray guy max art don frank gene grant
    rich earl carol christian dean lance chase hunter clay reed sage miles robin sky storm page drew young king""".split())


@cache
def latin_names() -> frozenset[str]:
    """Common English first names, lower-case: the 400 commonest men's and 600 commonest women's
    names of the US Census 1990 lists the `names` package bundles, but _WORD_NAMES."""
    found: set[str] = set()
    for listed, most in (("dist.male.first", 400), ("dist.female.first", 600)):
        lines = files("names").joinpath(listed).read_text(encoding="ascii").splitlines()
        found.update(line.split()[0].lower() for line in lines[:most] if line.strip())
    return frozenset(found - _WORD_NAMES)


def names_someone(before: str, statement: str) -> bool:
    """Whether `before`, all a clause says before `statement` (a statement of taste or fact),
    names someone else who does it (王小明不吃香菜, 安娜爱吃辣, 张伟住在杭州): a name (NAMED, but not
    the one spoken to, 你别放香菜; a Latin word only if a common first name, Tom不吃鸡肉, not
    Halal不吃猪肉 nor OK我住在杭州) that is no word the thesaurus knows and no food (何况, 黄瓜),
    before what only a person does (_PERSON_DOES)."""
    doing = _DOES_LAST.search(before)  # a rule's match may start after the verb (大家都爱吃|辣, 大家都爱|吃辣)
    if doing is not None:
        before = before[: doing.start()]
    elif not _PERSON_DOES.match(statement):
        return False
    found = _NAMED_DOING.fullmatch(before.strip())
    if found is None:
        return False
    who = found["who"].strip()
    if re.fullmatch(rf"(?:{GENERAL})(?:(?:和|跟|与|还有|、)(?:{GENERAL}))*", who):
        return True
    latin = re.findall(r"[A-Za-z]+(?: [A-Za-z]+)?", who)
    if latin:
        return all(run.split()[0].lower() in latin_names() for run in latin)  # Tom不吃鸡肉, not Halal不吃猪肉
    if is_food(who.lower()) or who.endswith(_DISH_ENDINGS):
        return False
    model = thesaurus()
    return model is None or normalize(who) not in model.concepts

# Who the rules about the user's own tastes and health speak of (Subjects): 我女儿不爱吃青菜 and
# 我女儿今年六岁，对虾过敏 are the daughter's; 医生让我别吃辣, 我妈来了，我不吃香菜 and 带女儿出去吃饭，
# 不要放辣 the user's.
# Those a 我们 may be outside any project (我和老公决定…; 我们决定下个月去度假): a decision said in a
# message naming them is the user's own, not the workspace's.
# (as theirs: 我妈, 我家的狗; not 旅游推荐功能, 宠物模块, 爸爸级别的bug)
PERSONAL_CIRCLE = re.compile(r"老公|老婆|丈夫|妻子|爱人|男朋友|女朋友|孩子|儿子|女儿|宝宝|全家|我们家|婚礼|蜜月|度假"
                             r"|我(?:的|家的?|们的)?(?:爸|妈|父母|哥|姐|弟|妹|朋友|室友|邻居|家人|狗|猫|宠物)")
LEAD = re.compile(r"(?:我|我的|我家|我家的|我们家|我们家的|咱家|家里|家里的|俺|俺家|咱)?")
# 谁不爱吃辣呢, 我和老公都不吃香菜吗, 我是不是对花生过敏啊: questions, not tastes; 我以为我对花生过敏,
# 我怀疑我对花生过敏: a belief or a suspicion, no fact.
ASKING = re.compile(r"谁|怎么可能|难道|吗\W*$|是不是|以为|怀疑|不确定")
# 我和老公都…, 我跟我女儿都…: the user and someone else together (Subjects.joint).
JOINT = (re.compile(r"我(?:和|跟|与|同)(?:我的?)?$"), re.compile(r"(?:俩|两个人|两个|两人|几个)?(?:也都|都|一起)"))
SUBJECTS = Subjects(others=OTHERS, user=re.compile("我"), lead=LEAD, asking=ASKING, joint=JOINT, named=names_someone)
# Facts may go on about the user in a clause that names nobody (我叫小红，住在杭州，是一名护士),
# and only then (Subjects.topic_user): not 我老公比我大五岁，是医生, nor 住在楼下的邻居对猫过敏.
FACT_SUBJECTS = Subjects(others=OTHERS, user=re.compile("我"), lead=LEAD, asking=ASKING, topic_user=True,
                         joint=JOINT, named=names_someone,
                         carries=re.compile(r"(?:现在)?(?:住在|是|当|在|今年|搬)"))


# (Language.denial and .retraction of the Chinese table)
# 我不吃香菜，开玩笑的 / 我对花生过敏，骗你的 / 我喜欢吃火锅，假的 / 哈哈逗你玩呢 / 其实不是: what was
# just said is taken back. Not disbelief (开玩笑吧, 开什么玩笑, 开玩笑呢?), an assurance (我不是开玩笑的, 骗你是小狗)
# nor a statement about jokes (我不喜欢开玩笑).
# (not 我好像没提过…, 我之前没说过…: telling it now; nor 医生不是说过…嘛: asking)
# (and a doubt at once before it: 我不觉得我喜欢寿司; not 我不觉得这个能吃因为我对花生过敏)
DENIAL = re.compile(r"从来没(?:有)?说过|从没说过|哪里说过|什么时候说过|我(?:并)?不是说(?!过)"
                    r"|(?P<doubt>我(?:并|也)?不(?:觉得|认为))"
                    r"|(?<!好像)(?<!可能)(?<!似乎)(?<!之前)(?<!以前)(?<!还)(?<!忘了)(?<!是不是)我(?:可|并|根本)?没(?:有)?说过")
RETRACTION = re.compile(
    r"^[\s哈呵嘿嘻哎啊嗯哦噢]*(?:好吧|好啦|算了)?[\s,]*(?:刚才|刚刚|之前)?(?:我|我是|我在|我是在|只是|就是|是)?(?:跟你|和你|同你)?"
    r"(?:开(?:个|了个)?玩笑|逗你玩?|骗你|唬你|说着玩|闹着玩|瞎说|胡说|假的|假滴|才怪|不是真的)(?:的|呢|啦|哈|嘛|哒|嘞|而已)*"
    r"[\s!~.…。]*$"
    # (a denial of what was just said: 我同事说我对海鲜过敏，其实不是)
    # (not a bare 不是, 没有, 不对: an answer or a correction said next, 我住在上海，不对，浦东)
    r"|^\s*(?:但是?|可是|不过)?(?:(?:其实|实际上|事实上)(?:并)?(?:不是|没有)|并不是|才不是)(?:的|啦|呢|这样)?[\s!~.…。]*$")
