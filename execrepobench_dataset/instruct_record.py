"""The Repo-Instruct record: one chat-formatted fill-in-the-middle example (no test execution)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from .errors import RecordError
from .record import FILL_TYPES, check_fields, read_records, write_jsonl

SYSTEM_PROMPT = "You are a code completion assistant."
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class InstructRecord:
    record_id: str  # stable content hash
    repo_name: str
    repo_source: str  # pinned spec, as in Sample
    file_name: str
    fill_type: str
    node_type: str
    messages: tuple[Message, ...]  # system, user (context + prefix + suffix), assistant (the middle)
    seed: int
    builder_version: str

    def __post_init__(self) -> None:
        where = f"instruct record {self.record_id!r}"
        if self.fill_type not in FILL_TYPES:
            raise RecordError(f"{where}: fill_type {self.fill_type!r} is not one of {FILL_TYPES}")
        if [m.role for m in self.messages] != list(ROLES):
            raise RecordError(f"{where}: messages must be system, user, assistant in that order")
        for name in ("record_id", "repo_name", "repo_source", "file_name", "node_type", "builder_version"):
            if not isinstance(getattr(self, name), str):
                raise RecordError(f"{where}: field {name} must be a string")

    @property
    def middle(self) -> str:
        return self.messages[2].content

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["messages"] = [dict(m) for m in d["messages"]]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "InstructRecord":
        where = data.get("record_id", "<no record_id>") if isinstance(data, Mapping) else "<not a mapping>"
        if not isinstance(data, Mapping):
            raise RecordError(f"instruct record {where}: expected a mapping")
        check_fields(cls, data, f"instruct record {where}")  # every field: none has a default
        try:
            messages = tuple(Message(m["role"], m["content"]) for m in data["messages"])
        except (TypeError, KeyError) as exc:
            raise RecordError(f"instruct record {where}: messages must be a list of {{role, content}}: {exc}") from None
        return cls(**{**data, "messages": messages})


def instruct_features():
    from datasets import Features, List, Value

    return Features({
        "record_id": Value("string"), "repo_name": Value("string"), "repo_source": Value("string"),
        "file_name": Value("string"), "fill_type": Value("string"), "node_type": Value("string"),
        "messages": List({"role": Value("string"), "content": Value("string")}),
        "seed": Value("int64"), "builder_version": Value("string"),
    })


def write_instruct_jsonl(records: Iterable[InstructRecord], path) -> int:
    return write_jsonl(records, path)


def read_instruct_jsonl(path) -> Iterator[InstructRecord]:
    return read_records(path, InstructRecord.from_dict)
