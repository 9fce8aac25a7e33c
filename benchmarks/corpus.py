"""Realistic mixed Chinese/English text for the benchmark (no Django imports here).

Real conversations come from ../shared/data (read-only): LoCoMo turns, observations, event and
session summaries and QA questions (English); MADial memories and dialogue turns (Chinese).
They are mixed with templated memory sentences in Chinese, English and both (preferences,
constraints, decisions, facts, tasks, recipes, skills, corrections), so the keyword index sees
both long-tail real vocabulary and the very common tokens (用户, 环境, staging, …) that
agents' memories repeat.

Everything is driven by one `random.Random`, so a run is reproducible.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

# Same rule as settings.SHARED_DATA_DIR: MEMORY_SHARED_DATA, else ../shared/data beside the checkout.
DATA_DIR = Path(os.environ["MEMORY_SHARED_DATA"]) if os.environ.get("MEMORY_SHARED_DATA") else next(
    (path for path in (Path(__file__).resolve().parents[2] / "shared" / "data", Path("/work/shared/data"))
     if path.exists()),
    Path(__file__).resolve().parents[2] / "shared" / "data",
)
LOCOMO = DATA_DIR / "locomo" / "locomo5.json"
MADIAL_MEMORIES = DATA_DIR / "madial_zh" / "memory-user1.jsonl"
MADIAL_DIALOGUES = DATA_DIR / "madial_zh" / "dialogue-user1.jsonl"

_MADIAL_TURN = re.compile(r'^<(?P<who>[^>]+)>:"?(?P<text>.*?)"?\s*$', re.S)


@dataclass
class RealText:
    en_turns: list[list[str]] = field(default_factory=list)  # per LoCoMo session, in order
    en_facts: list[str] = field(default_factory=list)  # observations + event summaries
    en_summaries: list[str] = field(default_factory=list)
    en_questions: list[str] = field(default_factory=list)
    zh_turns: list[list[tuple[str, str]]] = field(default_factory=list)  # per MADial dialogue: (role, text)
    zh_memories: list[str] = field(default_factory=list)
    zh_queries: list[str] = field(default_factory=list)  # user turns of MADial dialogues


def load_real_text() -> RealText:
    real = RealText()
    for conversation in json.loads(LOCOMO.read_text()):
        turns = conversation["conversation"]
        for name, value in turns.items():
            if name.startswith("session_") and isinstance(value, list):
                real.en_turns.append([turn["text"] for turn in value if turn.get("text")])
        for session in conversation["observation"].values():
            for facts in session.values():
                real.en_facts.extend(fact[0] for fact in facts if fact and isinstance(fact[0], str))
        for session in conversation["event_summary"].values():
            for speaker, events in session.items():
                if speaker != "date":
                    real.en_facts.extend(events)
        real.en_summaries.extend(text for text in conversation["session_summary"].values() if isinstance(text, str))
        real.en_questions.extend(qa["question"] for qa in conversation["qa"] if qa.get("question"))
    for line in MADIAL_MEMORIES.read_text().splitlines():
        if line.strip():
            (memory,) = json.loads(line).values()
            real.zh_memories.append(memory["event"])
    for line in MADIAL_DIALOGUES.read_text().splitlines():
        if not line.strip():
            continue
        dialogue = []
        for raw in json.loads(line)["dialogue"]:
            match = _MADIAL_TURN.match(raw.strip())
            if not match:
                continue
            role = "assistant" if match["who"] == "Assistant" else "user"
            dialogue.append((role, match["text"].strip()))
            if role == "user":
                real.zh_queries.append(match["text"].strip())
        real.zh_turns.append(dialogue)
    return real


# --- templated vocabulary ---------------------------------------------------------------------

FOODS = ["香菜", "葱", "蒜", "辣椒", "海鲜", "牛肉", "花生", "芹菜", "羊肉", "榴莲", "苦瓜", "香肠", "coriander", "peanuts"]
TASTES = ["少油少辣", "清淡", "微辣", "重口味", "酸甜口", "少盐", "不要太甜", "多放醋"]
DRINKS = ["美式咖啡", "拿铁", "乌龙茶", "绿茶", "豆浆", "oat latte", "cold brew", "jasmine tea"]
TOOLS = ["pytest", "ruff", "mypy", "eslint", "tox", "pre-commit", "black", "isort"]
ENVS = ["Staging", "staging", "预发", "生产", "QA", "production", "测试", "dev"]
DBS = ["PostgreSQL", "SQLite", "Redis", "ClickHouse", "MySQL", "Elasticsearch"]
SERVICES = ["billing", "auth", "search", "notifications", "gateway", "ingest", "reporting", "memory", "scheduler"]
PROJECTS = ["星河", "北斗", "青鸟", "Atlas", "Phoenix", "Orion", "麒麟", "Nova"]
PEOPLE = ["张伟", "李娜", "王芳", "刘洋", "陈静", "Caroline", "Melanie", "John", "Bart", "Maria", "Tim", "Joanna"]
TEAMS = ["前端组", "后端组", "数据组", "运维组", "platform team", "mobile team", "QA team"]
DAYS = ["周一", "周二", "周三", "周四", "周五", "Monday", "Wednesday", "Friday"]
THINGS = ["接口文档", "性能测试", "数据库迁移", "代码评审", "发布说明", "监控告警", "the migration plan",
          "the load test", "the release notes", "the on-call handbook"]
LANGS = ["中文", "English", "简体中文", "中英双语"]
TONES = ["简洁", "正式", "友好", "直接", "concise", "friendly"]
EDITORS = ["VS Code", "Vim", "PyCharm", "Emacs", "Neovim", "Cursor"]
THEMES = ["dark", "light", "深色", "浅色", "solarized"]
CITIES = ["北京", "上海", "深圳", "杭州", "成都", "Tokyo", "Berlin", "San Francisco", "Singapore"]
HOTELS = ["靠窗的房间", "高楼层", "安静的房间", "含早餐", "a quiet room", "a room near the elevator"]
ALLERGENS = ["peanuts", "shellfish", "gluten", "lactose", "花粉", "青霉素"]
VERSIONS = ["3.12", "3.11", "v2.4.1", "v1.9", "2026.1", "5.2"]
PORTS = ["8000", "8080", "5432", "6379", "9200", "3000"]
HOURS = ["3", "4", "5", "6"]

DOMAIN_OF_FAMILY = {
    "food": "food", "drink": "food", "reply": "general", "editor": "engineering", "ci": "engineering",
    "deploy": "engineering", "migration": "engineering", "latency": "engineering", "db": "engineering",
    "move": "engineering", "url": "engineering", "port": "engineering", "owner": "work", "deadline": "work",
    "todo": "engineering", "travel": "travel", "allergy": "health", "recipe": "engineering", "skill": "engineering",
    "correction": "general", "zh_memory": "personal", "en_fact": "personal", "turn_note": "general",
}
CATEGORY_OF_DOMAIN = {
    "food": [["饮食", "忌口"], ["饮食", "口味"], ["food", "drinks"]],
    "general": [["沟通", "风格"], ["general"], ["preferences", "reply"]],
    "engineering": [["engineering", "ci"], ["engineering", "deploy"], ["工程", "数据库"], ["engineering", "services"]],
    "work": [["工作", "安排"], ["work", "owners"]],
    "travel": [["出行", "酒店"], ["travel", "flights"]],
    "health": [["健康", "过敏"]],
    "personal": [["生活", "回忆"], ["life", "events"], ["生活", "爱好"]],
}


def _pick(rng: random.Random, items):
    return items[rng.randrange(len(items))]


@dataclass
class MemoryText:
    family: str
    type: str
    title: str
    content: str
    key: str = ""
    value: object = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()


def templated_memory(rng: random.Random, real: RealText) -> MemoryText:
    """One memory sentence (Chinese, English or mixed), with a key/value when it is structured."""
    roll = rng.random()
    p = _pick
    if roll < 0.10:
        food, taste = p(rng, FOODS), p(rng, TASTES)
        return MemoryText("food", "preference", f"不吃{food}", f"用户不吃{food}，喜欢{taste}",
                          "food.avoid", {"items": [food], "taste": taste}, ("饮食", "忌口"), ())
    if roll < 0.16:
        drink = p(rng, DRINKS)
        return MemoryText("drink", "preference", f"喜欢喝{drink}", f"{p(rng, PEOPLE)}喜欢喝{drink}，不加糖，早上一杯",
                          "drink.favorite", drink, ("饮食",), ())
    if roll < 0.22:
        lang, tone = p(rng, LANGS), p(rng, TONES)
        return MemoryText("reply", "preference", f"回复使用{lang}", f"回复时请使用{lang}，语气{tone}，先给结论再解释",
                          "reply.language", {"language": lang, "tone": tone}, ("沟通",), ())
    if roll < 0.27:
        editor, theme = p(rng, EDITORS), p(rng, THEMES)
        return MemoryText("editor", "preference", f"Prefers {editor}",
                          f"Prefers {editor} with the {theme} theme and 4-space indentation", "ui.editor",
                          {"editor": editor, "theme": theme}, ("tooling",), (editor,))
    if roll < 0.36:
        tool, env = p(rng, TOOLS), p(rng, ENVS)
        return MemoryText("ci", "constraint", f"发布前先跑{tool}", f"发布前先跑{tool}再推到{env}环境，失败就不要合并",
                          "ci.pre_deploy", {"steps": [tool], "env": env}, ("ci", "deploy"), (tool, env))
    if roll < 0.42:
        env, hour = p(rng, ENVS), p(rng, HOURS)
        return MemoryText("deploy", "constraint", f"No deploys to {env} late Friday",
                          f"Never deploy to {env} on Fridays after {hour}pm; ask the on-call first",
                          "", None, ("deploy",), (env,))
    if roll < 0.47:
        team = p(rng, TEAMS)
        return MemoryText("migration", "constraint", "数据库迁移窗口",
                          f"数据库迁移必须在凌晨两点到四点之间执行，并提前通知{team}", "", None, ("数据库", "migration"), (team,))
    if roll < 0.51:
        service, ms = p(rng, SERVICES), rng.choice([50, 100, 200, 300])
        return MemoryText("latency", "constraint", f"{service} latency budget",
                          f"All {service} API responses must stay under {ms} ms at p95",
                          f"slo.{service}.p95_ms", ms, ("slo",), (service,))
    if roll < 0.58:
        db, project = p(rng, DBS), p(rng, PROJECTS)
        return MemoryText("db", "decision", f"{project}使用{db}", f"决定使用{db}作为{project}项目的主存储，缓存用Redis",
                          f"project.{rng.randrange(40)}.database", db, ("架构",), (project, db))
    if roll < 0.63:
        service, a, b = p(rng, SERVICES), p(rng, DBS), p(rng, DBS)
        return MemoryText("move", "decision", f"Move {service} to {b}",
                          f"We decided to move the {service} service from {a} to {b} in Q{rng.randint(1, 4)}",
                          "", None, ("architecture",), (service, b))
    if roll < 0.69:
        project, env = p(rng, PROJECTS), p(rng, ENVS)
        host = f"{env.lower()}.{rng.choice(SERVICES)}.example.internal"
        return MemoryText("url", "fact", f"{project} {env}地址", f"{project}的{env}环境地址是 https://{host}",
                          f"env.{rng.randrange(60)}.url", {"url": f"https://{host}"}, ("环境",), (project, env))
    if roll < 0.73:
        service, port = p(rng, SERVICES), p(rng, PORTS)
        return MemoryText("port", "fact", f"{service} port", f"The {service} service listens on port {port} in every environment",
                          f"service.{service}.port", int(port), ("services",), (service,))
    if roll < 0.77:
        person, team = p(rng, PEOPLE), p(rng, TEAMS)
        return MemoryText("owner", "fact", f"{team}负责人", f"{person}是{team}的负责人，有问题先找他", "", None,
                          ("组织",), (person, team))
    if roll < 0.82:
        day, thing = p(rng, DAYS), p(rng, THINGS)
        return MemoryText("deadline", "task", f"{day}前完成{thing}", f"下周{day}之前完成{thing}，完成后在群里同步",
                          "", None, ("待办",), ())
    if roll < 0.86:
        module, version = p(rng, SERVICES), p(rng, VERSIONS)
        return MemoryText("todo", "task", f"Fix flaky test in {module}",
                          f"Task: fix the flaky pytest in tests/{module}/test_api.py before release {version}",
                          "", None, ("pytest", "flaky"), (module,))
    if roll < 0.90:
        city, hotel = p(rng, CITIES), p(rng, HOTELS)
        return MemoryText("travel", "preference", f"{city}出差住宿", f"去{city}出差时订{hotel}，航班选早上的",
                          "travel.hotel", {"city": city, "room": hotel}, ("出行",), (city,))
    if roll < 0.92:
        allergen = p(rng, ALLERGENS)
        return MemoryText("allergy", "constraint", f"Allergic to {allergen}", f"The user is allergic to {allergen}; 点菜时要避开",
                          "health.allergy", [allergen], ("健康",), ())
    if roll < 0.95:
        service, tool = p(rng, SERVICES), p(rng, TOOLS)
        return MemoryText("recipe", "recipe", f"Release {service}",
                          f"To release {service}: run {tool}, tag the commit, then 在Staging验证十分钟后再推生产",
                          "", None, ("release",), (service,))
    if roll < 0.97:
        tool = p(rng, TOOLS)
        return MemoryText("skill", "skill", f"会用{tool}", f"用户熟悉{tool}和Python {p(rng, VERSIONS)}，不需要解释基础用法",
                          "", None, ("技能",), (tool,))
    wrong, right = p(rng, DBS), p(rng, DBS)
    return MemoryText("correction", "correction", "更正存储选型", f"更正：报表服务用的不是{wrong}，而是{right}",
                      "", None, ("更正",), (right,))


def memory_text(rng: random.Random, real: RealText) -> MemoryText:
    """Half templated, half real (LoCoMo facts, MADial memories, a real turn as a note)."""
    roll = rng.random()
    if roll < 0.55:
        return templated_memory(rng, real)
    if roll < 0.80:
        fact = _pick(rng, real.en_facts)
        words = [word for word in re.findall(r"[A-Z][a-z]+", fact)][:2]
        return MemoryText("en_fact", rng.choice(["fact", "preference", "fact", "decision"]), fact[:80], fact,
                          tags=("locomo",), entities=tuple(words))
    if roll < 0.92:
        event = _pick(rng, real.zh_memories)
        return MemoryText("zh_memory", rng.choice(["fact", "preference"]), event[:30], event, tags=("回忆",),
                          entities=("Bart",))
    if rng.random() < 0.5:
        turn = _pick(rng, _pick(rng, real.en_turns))
    else:
        turn = _pick(rng, _pick(rng, real.zh_turns))[1]
    return MemoryText("turn_note", rng.choice(["fact", "task", "decision"]), turn[:60], turn, tags=("note",))


ZH_CHAT = [
    "帮我看下{env}环境的{tool}为什么挂了",
    "今天中午吃什么？不要{food}，{taste}一点",
    "{project}项目的{thing}什么时候能好？",
    "把{service}的日志发我一下，{env}上好像有报错",
    "我下周要去{city}出差，帮我订酒店，{hotel}",
    "{person}说{thing}要延期到{day}",
    "记住：以后回复用{lang}，{tone}一点",
    "数据库迁移跑完了吗？{db}那边有没有锁表",
]
EN_CHAT = [
    "Can you check why {tool} fails on {env}?",
    "Remind me to finish {thing} before {day}",
    "What port does the {service} service use again?",
    "We are moving {service} to {db}, please update the docs",
    "I'm flying to {city} next week, book {hotel}",
    "Please keep answers {tone} from now on",
]


def chat_line(rng: random.Random, *, chinese: bool) -> str:
    template = _pick(rng, ZH_CHAT if chinese else EN_CHAT)
    return template.format(
        env=_pick(rng, ENVS), tool=_pick(rng, TOOLS), food=_pick(rng, FOODS), taste=_pick(rng, TASTES),
        project=_pick(rng, PROJECTS), thing=_pick(rng, THINGS), service=_pick(rng, SERVICES), city=_pick(rng, CITIES),
        hotel=_pick(rng, HOTELS), person=_pick(rng, PEOPLE), day=_pick(rng, DAYS), lang=_pick(rng, LANGS),
        tone=_pick(rng, TONES), db=_pick(rng, DBS),
    )


class ConversationStream:
    """Messages of one session: real dialogue in order, interleaved with templated chat lines."""

    def __init__(self, rng: random.Random, real: RealText, profile: str):
        self.rng, self.real, self.profile = rng, real, profile
        self._queue: list[tuple[str, str]] = []
        self._turn = 0

    def _refill(self) -> None:
        rng, real = self.rng, self.real
        chinese = self.profile == "zh" or (self.profile == "mixed" and rng.random() < 0.5)
        if rng.random() < 0.2 or (self.profile == "mixed" and rng.random() < 0.5):
            self._queue = [("user", chat_line(rng, chinese=chinese)), ("assistant", chat_line(rng, chinese=chinese))]
        elif chinese:
            self._queue = list(_pick(rng, real.zh_turns))
        else:
            session = _pick(rng, real.en_turns)
            start = rng.randrange(max(1, len(session) - 12))
            self._queue = [("user" if index % 2 == 0 else "assistant", text)
                           for index, text in enumerate(session[start : start + 12])]

    def next(self) -> tuple[str, str]:
        while not self._queue:
            self._refill()
        role, text = self._queue.pop(0)
        self._turn += 1
        return role, text


SHORT_QUERIES = ["香菜", "少辣", "pytest", "staging", "咖啡", "数据库迁移", "PostgreSQL", "部署", "出差", "dark theme",
                 "过敏", "回复语言", "Redis 缓存", "on-call", "latency p95", "张伟", "Caroline", "魔术", "生日", "flaky test"]


def queries(rng: random.Random, real: RealText, count: int) -> list[str]:
    """A mix of real English questions (LoCoMo), real Chinese turns (MADial) and short queries."""
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.4:
            out.append(_pick(rng, real.en_questions))
        elif roll < 0.75:
            out.append(_pick(rng, real.zh_queries))
        else:
            out.append(_pick(rng, SHORT_QUERIES))
    return out
