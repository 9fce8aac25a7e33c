"""The user's own name, home, workplace and occupation in Chinese (R-EXTRACT): the builders
that memory.capture.rules_zh's table calls for them, and what makes such a statement no fact
(a supposition, someone else's word, a dream, a joke, a place that names none).
"""

import re

from memory.capture.rules_common import Finding
from memory.capture.words_zh import HAN, OTHERS, PRONOUN, TAIL, say
from memory.search.concepts import thesaurus
from memory.search.text import normalize

# How long, said after the place (北京三年了, 杭州有两年半了, 杭州三个多月了, 杭州好多年了, 杭州一辈子了).
_HOW_LONG = re.compile(r"(?:已经|快|都|有)?(?:[0-9一二三四五六七八九十两几多半好]+(?:个)?多?(?:年|个月|月|天|周|星期|礼拜)半?多?"
                       r"|一辈子|至今)(?:了)?$")


# The user alone or with others (我们, 我家, 我们一家, 我和老公都, 我和老公一起): a home is theirs
# too. Without 都/一起/也 only a companion named as one, right before the verb (我和老公住在杭州):
# a gap may hold a negation, a plan or a time (我和爸妈不住在上海, 我和老公打算住在杭州, 我和他以前住在上海).
COMPANIONS = ("老公|老婆|丈夫|妻子|爱人|先生|太太|媳妇|对象|男朋友|女朋友|男友|女友|老伴|爸妈|父母|爸爸|妈妈|家人|孩子"
              "|儿子|女儿|室友|舍友|朋友|闺蜜|同学|同事|他|她")
WE = (r"(?:们家|们一家|们|家|一家|(?:和|跟|与)[\u4e00-\u9fff]{1,5}?(?:都|一起|也)"
      rf"|(?:和|跟|与)(?:我的?)?(?:{COMPANIONS})(?=住在|搬|在))?")
MOVED_WHEN = r"(?:上个月|上周|去年|前年|今年|年初|最近|前几天|前段时间|刚刚|刚|已经|终于|然后|后来|之后|接着)?又?"
# A place one lives or works in (上海, 阿里巴巴, 北京朝阳区), never a mark or an emoji.
PLACE_CHARS = rf"[{HAN}A-Za-z0-9·]"
_NOT_HOMES = set("新家 新房 新房子 新地方 这边 那边 老家 城里 乡下 郊区 外地 国外 "
                 "楼上 楼下 隔壁 对面 对门 酒店 宾馆 旅馆 民宿 医院 这里 那里 这儿 那儿 附近 家里 外面 宿舍 一起 一块 "
                 "一块儿 同城 婆家 娘家 公婆家 朋友家 亲戚家 别人家 房子 老房子 出租屋 单位宿舍".split())
# Words that open no place of its own (住在同一个小区, 住在一栋楼, 在这家公司上班, 住在两个城市).
_NOT_PLACE_START = ("同一", "同个", "同栋", "同楼", "同小区", "一个", "一家", "一所", "一间", "一栋", "一处", "一条", "一套",
                    "两个", "两地", "这个", "那个", "这家", "那家", "某")
# Characters no place name holds, which show the words ran on past it (杭州挺好, 上海的时候很不习惯,
# 上海后就胖, 北京的一家公司).
_NOT_IN_PLACE = re.compile(r"[的很挺不吗呢吧啊胖瘦累忙有]|时候|习惯|以后|之后|之前|以前|前$|时$|后就|后来|就|还要|不错"
                           r"|一段|一阵|几天|住[一两几上]")  # 搬到杭州住一段时间: a stay, not a home
# A floor or a room rather than a place (我住在三楼, 我住在302室).
_ROOM = ("楼", "层", "室", "号", "单元", "栋", "号楼")
# A stay, not a home, said around it (这次出差我和同事住在杭州, 我和朋友住在三亚，玩得很开心).
_STAY = re.compile(r"出差|旅游|旅行|度假|这次|假期|放假|国庆|春节|过年|五一|十一|玩得|玩了|[一两几三四五六七八九十]天"
                   r"|[一两几]晚|今晚|这周|住[一两几上]")
# A verb after the place a move went to (我搬到上海工作了 → 上海).
_AFTER_MOVE = re.compile(r"(?:工作|生活|上学|读书|发展|定居|去|来|住)+$")
_NOT_WORKPLACES = set("公司 一家公司 单位 办公室 家 家里 楼上 楼下 附近 外地 外面 这里 那里 这儿 那儿 这边 那边 店里 厂里 "
                      "网上 线上 远程".split())
_NEAR = ("附近", "旁边", "对面", "隔壁", "楼上", "楼下", "那边", "这边", "宿舍")  # 公司附近: no place of its own
# What makes a statement of the user's home or work no fact, said before it in the sentence: a
# supposition (如果我搬到北京), what someone else says or thinks (我妈说，我搬到北京了; not 说实话,
# 跟你说), a dream; or after it: a joke (…，开玩笑的).
_NOT_SO = re.compile(rf"如果|假如|要是|假设|万一|等$|等到|以为|梦见|梦到|做梦|做了个梦|梦里|据说|听说|估计|可能|大概|好像|也许"
                     rf"|(?:{OTHERS.pattern}|他们?|她们?|别人|大家|人家)(?:都|也|还)?(?:说|以为|觉得|认为|告诉)")
_JOKING = re.compile(r"开玩笑|玩笑的|逗你的|骗你的|说着玩|假的|做梦呢|梦想|才怪|是不可能的")


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


def _no_home(item: str, match: re.Match[str], message: str, group: str) -> bool:
    """Whether the place a home rule read is none (住在酒店; 住在外婆家: someone's home; 住在三楼: a
    floor) or a stay (_STAY, around it or in it)."""
    return (item in _NOT_HOMES or item.endswith("家") or item.endswith(_ROOM) or _STAY.search(match[group])
            or any(_STAY.search(part) for part in around(match, message)))


def fact_builder(kind: str, group: str = "item"):
    """A plain fact about the user (我住在上海, 我家的狗叫旺财; 我住在北京三年了 → 北京); not a
    question (我住在杭州吗), a supposition or hearsay (如果我搬到北京, 我妈说我搬到北京了), nor a place
    that is none (住在酒店, 住在楼上, 搬到公司附近, 在公司上班)."""
    def build(match: re.Match[str], message: str) -> list[Finding]:
        item = _HOW_LONG.sub("", TAIL.sub("", match[group].strip()))
        if kind == "lives":
            item = _AFTER_MOVE.sub("", item)  # 我搬到北京去了, 我搬到上海工作了
        if (not 2 <= len(item) <= 12 or PRONOUN.search(item) or item.endswith(("吗", "呢"))
                or match[group].rstrip().endswith("吧")):  # 我住在上海吧: a guess
            return []
        if kind in ("lives", "works") and (not said_as_fact(match, message) or item.endswith(_NEAR)
                                           or _NOT_IN_PLACE.search(item)):
            return []
        if item.startswith(_NOT_PLACE_START) or (kind == "lives" and _no_home(item, match, message, group)) or (
                kind == "works" and (item in _NOT_WORKPLACES or item.startswith("家"))):
            return []
        what = match.groupdict().get("what") or ""
        return [say(f"fact_{kind}", item, value={kind: item, **({"who": what} if what else {})}, what=what)]
    return build


# A place by its name's end (西湖区, 余杭镇, 文三路), or a city, country or region the thesaurus
# knows (Cilin Cb25a 城市, Di02 国家和地区, Di03 首都和都市: 杭州, 美国, 东京).
_PLACE_END = re.compile(r"(?:市|省|区|县|镇|乡|村|路|街|巷|小区|州|国|岛)$")
_PLACE_CONCEPTS = ("zzccb25a", "zzcdi02", "zzcdi03")


_LIVED = re.compile(r"(?:住|生活|待|呆)了?.*")  # 我家在杭州住了十年了: how long, still the home


def place_said(text: str) -> str:
    """The place `text` begins with (杭州住了十年 → 杭州, 杭州市西湖区 → all of it), or ''. A
    place is a run ending as a place name does, or a city, country or region the thesaurus
    knows; without the thesaurus (MEMORY_CONCEPTS off), by its end only."""
    text = normalize(text)
    if _PLACE_END.search(text):
        return text
    model = thesaurus()
    words = model.words(text) if model is not None else []
    if words and text.startswith(words[0]) and any(token.startswith(_PLACE_CONCEPTS) for token in model.concepts[words[0]]):
        return words[0]
    return ""


# 我家在杭州买了房, 在泰国玩, 在杭州上班, 在南京吃饭, 我家在上海谢谢
_DOING_THERE = re.compile(r"[了过着买租开玩做去来看读学办干和跟与及或工班习吃喝睡聊谢好吗呢吧啊呀哈]")


def home_at(match: re.Match[str], message: str) -> list[Finding]:
    """我家在杭州, 我们家在成都, 我家在北京朝阳, 我家在杭州住了十年了 → where the user lives; not
    我家在装修, 我家在三楼 (no place), nor 我家在杭州买了房, 我们家在泰国玩 (what the family does
    there)."""
    said = TAIL.sub("", match["item"].strip())  # 我家在杭州呢
    place = place_said(said)
    rest = said[len(place):]
    if not place or (rest and not _LIVED.fullmatch(rest) and (_DOING_THERE.search(rest) or len(rest) > 4)):
        return []
    if not fact_builder("lives")(match, message):  # a question, a guess, hearsay, a stay
        return []
    place = said if rest and not _LIVED.fullmatch(rest) else place  # 北京朝阳, 杭州西湖边
    return [say("fact_lives", place, value={"lives": place})]


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
    "健身教练 建筑师 心理咨询师 心理医生 产品经理 架构师 运维 会计员 出纳 律师助理 社工 消防员 主持人 调酒师 面包师 "
    "全职太太 家庭煮夫 护士长 咖啡师 柜员 私教 护工 程序猿 前端工程师 后端工程师".split()
)
# What may stand before an occupation: a field (软件工程师, 儿科医生), never a word that makes it
# something else (我当不了老师, 我当过老师, 我当然是老师, 我是说老师, 我是你的老师, 我当了十年老师).
_JOB_PREFIX = re.compile(r"[\u4e00-\u9fff]{0,3}")
_NOT_IN_JOB = re.compile(r"[不没了过时然说问想找来你他她它的是当个年在给让被把要会能老假上好坏成作前退休]")
# 如果我是医生, 我妈想让我当医生, 长大了我当医生, 等我当上医生, 你扮演病人，我是医生: not what the user is
_HYPOTHETICAL = re.compile(r"如果|假如|要是|假设|希望|想当|想做|梦想|以为|让|长大|以后|将来|等|不如|要不|干脆")
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


def own_name(match: re.Match[str], message: str) -> list[Finding]:
    """我叫小红 / 我的名字是王小红 → a fact: the user's own name."""
    item = TAIL.sub("", match["item"])
    if (not 2 <= len(item) <= 4 or item in OCCUPATIONS or PRONOUN.search(item) or _NOT_NAME_PART.search(item)
            or item.startswith(_NOT_NAME_START) or item.endswith(("吗", "呢")) or OTHERS.search(item)
            or item.endswith(_TITLES) or is_occupation(item) or not said_as_fact(match, message)):
        return []  # (我叫房东, 我叫张师傅, 我叫王医生: someone called, not a name; 我叫小绿，开玩笑的)
    return [say("fact_name", item, value={"name": item})]


# What, in the words between 在 and 做/当, shows that the sentence tells no job the user has: a
# negation, a wish or a plan (我在腾讯不做程序员了, 我在腾讯想当程序员), a game, a dream or a story
# (我在游戏里当医生), an occasion (我在婚礼上当主持人), a choice (还是, 或), the family served
# (我在家给孩子当老师).
_NOT_A_JOB_PLACE = re.compile(rf"[不没想要或梦]|里$|上$|还是|还想|还要|游戏|剧本|小说|电视剧|故事"
                              rf"|(?:给|帮|替)(?:我的?)?(?:{COMPANIONS}|家人|娃)")
# ...and what shows they are no place, though the job holds: someone served (给老板, 帮老板), two
# places (北京和上海), a stint or a manner (实习, 兼职, 一直, 暂时), the work itself (银行工作).
_NOT_A_PLACE = re.compile(r"[给帮替和跟与]|也$|实习|兼职|全职|一直|主要|偶尔|暂时|临时|工作|上班|打工|支教")
# When the job was: over (三年前, 小时候, 上大学的时候, 毕业后) or left since (，已经离职了).
_JOB_BEFORE = re.compile(r"前|以前|之前|曾经|当年|那年|那几年|去年|前年|那时|那会|小时候|时候|毕业后|以后|将来")
_JOB_AFTER = re.compile(r"离职|辞职|退休|不干了|被裁")
_NOW = re.compile(r"现在|目前|如今")  # 以前我在阿里做程序员，现在我在腾讯做程序员: the time said last counts
# Role play said around it, across commas (我们玩个游戏吧，…; 你当病人，…). A workplace said with a
# person's (老公公司, 朋友圈, 别人家) is not the user's own, nor one left unnamed (北京一家公司).
_GAME = re.compile(r"游戏|剧本杀|过家家|你当|你演|你扮")
_NOT_OWN_PLACE = re.compile(rf"(?:{COMPANIONS}|别人|亲戚|爸|妈|哥|姐|弟|妹|家|一家|一个|一所|某)")
# A student's school is no workplace (我在清华当研究生).
_STUDENTS = ("学生", "研究生", "博士生", "硕士生", "留学生", "实习生", "交换生")


# Occupations done at home: 我在家当全职妈妈 tells one (我在家当老师 or 我在家里做饭 tells none).
HOME_JOBS = ("全职妈妈", "全职爸爸", "家庭主妇", "家庭煮夫", "全职太太")
_HOME = ("家", "家里")


def job_at(match: re.Match[str], message: str) -> list[Finding]:
    """我在腾讯做程序员 / 我在一家医院当护士 → what the user does and, when the place names one,
    where (the workplace and the occupation builders' own checks: 在公司当经理 gives the
    occupation only); nothing unless what follows 做/当 is an occupation (我在家做饭, 我在腾讯做项目) and
    own_job takes it, nor when the words before it tell of none (_NOT_A_JOB_PLACE); the occupation
    alone when they name no place of the user's own (_NOT_A_PLACE, _NOT_OWN_PLACE, a student's school).
    At home (家, 家里) only an occupation done there counts (HOME_JOBS: 我在家当全职妈妈; not 我在家当老师)."""
    place = match["place"]
    if place in _HOME:
        job = own_job(match, message, group="job")
        return job if job and job[0].item.endswith(HOME_JOBS) else []
    if _NOT_A_JOB_PLACE.search(place):
        return []
    job = own_job(match, message, group="job")
    if not job:
        return []
    if (job[0].item.endswith(_STUDENTS) or _NOT_OWN_PLACE.search(place) or _NOT_A_PLACE.search(place)
            or place.endswith(("厨房", "客厅", "卧室"))):
        return job
    return fact_builder("works", group="place")(match, message) + job


def own_job(match: re.Match[str], message: str, group: str = "item") -> list[Finding]:
    """我是一名护士 / (我叫小红，)是程序员 / 我是干程序员的 → a fact: what the user does; not a
    wish or a supposition (如果我是医生, 我希望我是医生), another time (_JOB_BEFORE, _JOB_AFTER) or
    a game (_GAME)."""
    item = re.sub(r"^(?:干|做|搞)", "", TAIL.sub("", match[group]))
    before, after = around(match, message)
    if (_HYPOTHETICAL.search(match.string[: match.start()]) or _ROLE_PLAY.search(before + after)
            or _JOB_BEFORE.search(_NOW.split(before)[-1]) or _JOB_AFTER.search(after) or _GAME.search(before + after)
            or not said_as_fact(match, message) or match[group].endswith(("吧", "吗", "呢"))
            or not is_occupation(item)):
        return []  # (我是医生吧: a guess; 你扮演病人，我是医生: a game; 我妈说我是医生: her word)
    return [say("fact_job", item, value={"job": item})]
