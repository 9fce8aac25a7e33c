"""50 agents against the memory API (`make load`, `make faults`; docs/reliability/faults-load.md).

Each simulated agent is its own user with its own session, and does the realistic mix:
40 % append (one message, some that trigger capture), 30 % context, 10 % propose, 20 %
search, with a think time of LOAD_WAIT seconds ("min,max", default "0.5,1.5") between calls.
Environment: LOAD_KEY (the agent key; required), LOAD_LOG (a JSON-lines file that receives
one line per request at the end: start time, operation, status, milliseconds, error, and
whether an error answer had the API's JSON error shape), LOAD_TIMEOUT (seconds before a call
counts as hung, default 15).
"""

import itertools  # task methods are do_*: User.context() is locust's own
import json
import os
import random

from locust import FastHttpUser, between, events, task

KEY = os.environ.get("LOAD_KEY", "")
WAIT = [float(x) for x in os.environ.get("LOAD_WAIT", "0.5,1.5").split(",")]
TIMEOUT = float(os.environ.get("LOAD_TIMEOUT", "15"))
RECORDS: list[dict] = []
AGENTS = itertools.count(1)
SAID = [
    "今天晚饭想做番茄炒蛋，家里还有两个鸡蛋。", "我明天早上九点要开会，提醒我准备材料。", "记住，我不吃香菜。",
    "周末想去公园跑步，天气好的话。", "The deploy finished, the dashboard looks fine now.", "以后都用少油少盐的做法。",
    "Remember that I prefer aisle seats on flights.", "孩子下周三有家长会，要请半天假。", "这个任务完成了，下一步写测试。",
    "I'd like the summary in English next time.", "不是周二，是周四去看牙医。", "买了新的空气炸锅，想试试烤鸡翅。",
]
QUERIES = ["晚饭吃什么", "明天有什么安排", "饮食偏好", "flight seat preference", "牙医", "家长会", "跑步计划",
           "deploy status", "空气炸锅食谱", "下一步做什么"]


class Agent(FastHttpUser):
    wait_time = between(*WAIT)
    network_timeout = TIMEOUT
    connection_timeout = TIMEOUT

    def on_start(self) -> None:
        number = next(AGENTS)
        self.owner = {"workspace_id": "load", "user_id": f"agent-{number}", "session_id": f"s-{number}-{random.randrange(10**6)}"}
        self.notes = itertools.count(1)
        self.headers = {"Authorization": f"Bearer {KEY}"}

    def call(self, name: str, path: str, body: dict) -> None:
        self.client.post(path, json=body, headers=self.headers, name=name)

    @task(40)
    def do_append(self) -> None:
        self.call("append", "/api/v1/messages", {**self.owner, "role": random.choice(["user", "user", "assistant"]),
                                                 "content": random.choice(SAID)})

    @task(30)
    def do_context(self) -> None:
        self.call("context", "/api/v1/context", {**self.owner, "query": random.choice(QUERIES)})

    @task(10)
    def do_propose(self) -> None:
        number = next(self.notes)
        self.call("propose", "/api/v1/memory/propose", {**self.owner, "operation": "create", "node": {
            "scope": "session", "type": "fact", "key": f"note_{number}", "value_json": number, "title": f"第{number}条笔记"}})

    @task(20)
    def do_search(self) -> None:
        self.call("search", "/api/v1/memory/search", {**self.owner, "query_text": random.choice(QUERIES), "limit": 10})


@events.request.add_listener
def _record(request_type, name, response_time, response_length, response=None, exception=None, start_time=None,
            **kwargs) -> None:
    status = getattr(response, "status_code", 0) or 0
    shaped = False
    if status >= 400:
        try:
            shaped = "code" in json.loads(response.text)["error"]
        except (TypeError, ValueError, KeyError, AttributeError):
            shaped = False
    RECORDS.append({"t": start_time, "op": name, "status": status, "ms": response_time,
                    "error": None if exception is None else f"{type(exception).__name__}: {exception}"[:200],
                    "json_error": shaped})


@events.quitting.add_listener
def _write(environment, **kwargs) -> None:
    path = os.environ.get("LOAD_LOG")
    if path:
        with open(path, "w") as out:
            out.writelines(json.dumps(record) + "\n" for record in RECORDS)
