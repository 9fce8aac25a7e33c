"""The shared evaluation datasets, read into plain records (see ../shared/data/README.md).

LoCoMo (locomo5.json): a list of samples; each has `conversation` (speaker_a, speaker_b,
session_N lists of turns with `dia_id` "D<session>:<turn>", session_N_date_time) and `qa`
(question, answer, evidence turn ids, category). Evidence is cleaned as the data README says:
split on ";" and spaces, "D:11:26" → "D11:26", leading zeros of the turn dropped, ids naming
no turn dropped. Questions of category 5 (adversarial) or without evidence are not scored.

MADial-Bench zh (memory-user1.jsonl, dialogue-user1.jsonl): dated memories of one person, and
dialogues whose `test-turn` (an index into `dialogue`) is the assistant turn that should use
the memories in `relevant-id`. The query is the dialogue before the test turn.
"""

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_EVIDENCE_ID = re.compile(r"^D:?(\d+):0*(\d+)$")
_SPEAKER_PREFIX = re.compile(r"^<([^>]+)>:\s*")


@dataclass(frozen=True)
class Turn:
    session_id: str
    role: str  # speaker A is the end user ("user"), speaker B the "assistant"
    content: str
    occurred_at: datetime
    speaker: str
    dia_id: str


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_turns(sample: dict[str, Any]) -> list[Turn]:
    """The conversation as a flat list of turns, 30 s apart from each session's start; an
    image a speaker shares is kept as its caption."""
    conversation = sample["conversation"]
    turns: list[Turn] = []
    index = 1
    while f"session_{index}" in conversation:
        started = locomo_date(conversation[f"session_{index}_date_time"])
        for position, turn in enumerate(conversation[f"session_{index}"]):
            content = turn["text"]
            if turn.get("blip_caption"):
                content += f" [shares an image: {turn['blip_caption']}]"
            turns.append(Turn(
                session_id=f"{sample['sample_id']}-s{index}",
                role="user" if turn["speaker"] == conversation["speaker_a"] else "assistant",
                content=content,
                occurred_at=started + timedelta(seconds=30 * position),
                speaker=turn["speaker"],
                dia_id=turn.get("dia_id", ""),
            ))
        index += 1
    return turns


def clean_evidence(raw: list[str], known: set[str]) -> frozenset[str]:
    """Evidence turn ids as the turns name them; ids that name no turn are dropped."""
    found = set()
    for entry in raw:
        for part in re.split(r"[;\s]+", str(entry)):
            match = _EVIDENCE_ID.match(part.strip())
            if match:
                turn_id = f"D{int(match.group(1))}:{int(match.group(2))}"
                if turn_id in known:
                    found.add(turn_id)
    return frozenset(found)


def locomo_load(path: Path) -> list[Conversation]:
    """Every conversation of a LoCoMo file with its scored questions (categories 1–4 with evidence)."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(samples, list) or not samples:
        raise ValueError("expected a JSON list of LoCoMo samples")
    conversations = []
    for sample in samples:
        turns = locomo_turns(sample)
        known = {turn.dia_id for turn in turns}
        questions = []
        for qa in sample.get("qa", []):
            category = int(qa.get("category", 0))
            evidence = clean_evidence(qa.get("evidence") or [], known)
            if category in (1, 2, 3, 4) and evidence:
                questions.append(Question(text=str(qa["question"]), evidence=evidence, category=category))
        speakers = (sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"])
        conversations.append(Conversation(sample["sample_id"], speakers, tuple(turns), tuple(questions)))
    return conversations


@dataclass(frozen=True)
class Memory:
    id: str
    date: str  # YYYY-MM-DD
    scene: str
    emotion: str
    event: str


@dataclass(frozen=True)
class Dialogue:
    id: int
    query: str  # the turns before the test turn, one per line, "speaker: text"
    relevant: frozenset[str]


def madial_turn(line: str) -> tuple[str, str] | None:
    """A MADial-Bench dialogue line `<Speaker>:"text"` as (speaker, text); None for a line
    without a speaker (<BOD>, <EOD>)."""
    line = line.strip()
    match = _SPEAKER_PREFIX.match(line)
    if not match:
        return None
    return match.group(1), line[match.end():].strip().strip(chr(34))


def _turn_text(line: str) -> str:
    turn = madial_turn(line)
    return line.strip() if turn is None else f"{turn[0]}: {turn[1]}"


def madial_load(folder: Path) -> tuple[list[Memory], list[Dialogue]]:
    """The memories and the scored dialogues of MADial-Bench user 1."""
    folder = Path(folder)
    memories = []
    for line in (folder / "memory-user1.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            for key, value in json.loads(line).items():
                memories.append(Memory(id=str(value.get("id", key)), date=value["time"], scene=value["scene"],
                                       emotion=value["emotion"], event=value["event"]))
    dialogues = []
    for line in (folder / "dialogue-user1.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        test_turn = min(record["test-turn"])
        before = [_turn_text(text) for text in record["dialogue"][:test_turn] if text.strip() not in ("<BOD>", "<EOD>")]
        dialogues.append(Dialogue(id=int(record["id"]), query="\n".join(part for part in before if part),
                                  relevant=frozenset(str(item) for item in record["relevant-id"])))
    return memories, dialogues
