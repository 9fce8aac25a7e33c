"""How the Chinese rules read a negation, a doubt or the past before a wish (R-EXTRACT; used by
memory.capture.rules_zh): 不太能吃辣 wants little, 我不喜欢川菜 nothing, 今天没吃辣 says what
happened, 我以前很爱吃辣 what was. Each finding of a newcomer's or a reviewer's that stored the
opposite of what the user said is a case in tests/memory/capture/test_rules.py."""

import re

from memory.capture.rules_common import Finding

# A negation said before a wish, with the words of degree, ability or liking that may stand
# between: 别吃辣, 不太能吃辣, 一点都不爱吃辣, 不是很喜欢川菜 do not want what follows (newcomers'
# "医生让我别吃辣了" and "我不太能吃辣" became "prefers spicy", "我不喜欢川菜" "likes Sichuan food").
# 没 says what happened, not what is wanted (今天没吃辣): neither a wish nor its negation. Only
# the last WINDOW characters before a wish are read, and the repeated groups never backtrack
# (*+): a review's "我不" + "算太" × 30 before 吃辣 took hours with a plain *.
WINDOW = 16
BIE = r"(?<![特分区告性级类识个辨差离])别"  # 别 as "don't", not the end of 特别 (我特别喜欢吃鱼)
# 不了 after 戒 改 离 忘 少 免 断 is "cannot stop": 我戒不了吃辣 wants it; 禁忌 is no 忌
NOT = (rf"(?:不(?!了)|(?<![戒改离忘少免断])不了|{BIE}|甭|勿|没法|没办法|无法|禁止|避免|戒|(?<!禁)忌|(?<!不)怕"
       r"|没有?那么|没有?这么)")
# 不太能吃辣, 不是那么喜欢: little, not none (longer words first: each tried once)
SOFT = r"(?:算太|是很|是太|是特别|是那么|是非常|是真的|特别|怎么|见得|那么|太|大|咋|算|很)"
BETWEEN = r"(?:让我|给我|需要|可以|喜欢|习惯|经常|做得|再|能|会|敢|爱|想|要|准|许|常|够|了|吃|做|放|加|用)"
NEGATED = re.compile(rf"{NOT}(?:{SOFT}|{BETWEEN})*+$")
SOFTENED = re.compile(rf"不{SOFT}|(?<![多至不])少|怕|没有?[那这]么")
INTENSE = ("重辣", "特辣", "多放辣")  # 吃不了特辣: less, not none
DOUBLE = ("不是", "并不是", "并非", "没有", "受不了")  # before a negation: 我不是不爱吃辣
# Before or after a flavour said negated, words that undo the negation: 我不得不吃辣, 我一天不吃辣
# 就难受, 我没有一天不吃辣, 我吃不吃辣都无所谓, 我觉得不吃辣的人真可怜, 不管辣不辣我都吃.
UNSURE_BEFORE = re.compile(r"(?:不得|一天|可能|怎么|觉得|知道|吃|能|不管.*)$|不管")
UNSURE_AFTER = re.compile(r"(?:就|的人|的话|都|也行|也可以|不行|会死|难受)")
UNSURE_IN_ITEM = re.compile(r"就|的人|的话|都|也行|也可以|不行|会死|难受|是假|假的|开玩笑")  # 我不吃香菜是假的
# After a flavour wished for, what it does to the user: 我吃辣会拉肚子, 吃辣对我来说是折磨.
HURTS = re.compile(r"(?:就|会|总|容易|总是|老是|一)?(?:拉肚子|胃疼|胃痛|上火|长痘|过敏|难受|不舒服|肚子疼|受不了|不行"
                   r"|对我来说是折磨|是折磨)"
                   # (a body part that hurts: 我一吃辣胃就疼; not 痛快, 疼并快乐着)
                   r"|(?:胃|肚子|嗓子|喉咙|牙|头|脸|皮肤|嘴巴?|身上)(?:就|会|总|容易|总是|老是)*(?:疼|痛|痒|起疹子)(?!快|并)")
LESS = re.compile(rf"(?<![多至不])少(?:{SOFT}|{BETWEEN})*+$")  # 很少吃辣, 医生让我少吃辣
DID_NOT = re.compile(rf"没有?(?:{SOFT}|{BETWEEN})*+$")
# 我以前很爱吃辣，现在不行了: a taste of the past
PAST = re.compile(r"以前|之前|小时候|过去|曾经|原来|那时|那会儿|当年|当初|从前|年轻时|年前|的时候")


def negated(before: str) -> bool:
    """Whether the clause up to a wish ends in a negation of it (我不太能 before 吃辣), not in a
    question of the form A不A (会不会, 是不是) nor a double negation (我不是不爱吃辣)."""
    before = before[-WINDOW:]
    match = NEGATED.search(before)
    if not match:
        return False
    at = match.start()
    if before[:at].endswith(DOUBLE):
        return False
    return not (before[at] == "不" and 0 < at < len(before) - 1 and before[at - 1] == before[at + 1])


def said_before(pattern: re.Pattern[str], before: str) -> bool:
    """`pattern` (LESS, DID_NOT, PAST) in the last characters of the clause before a wish."""
    return bool(pattern.search(before[-2 * WINDOW:]))


def wanted(build):
    """The rule's findings only when what it reads as wanted holds now: not negated, not said
    not to have happened, not in the past (我不喜欢川菜, 今天没吃川菜, 我以前爱吃川菜)."""
    def checked(match: re.Match[str], message: str) -> list[Finding]:
        before = match.string[: match.start()]
        if negated(before) or said_before(DID_NOT, before) or said_before(PAST, before):
            return []
        return build(match, message)
    checked.__doc__ = build.__doc__
    return checked
