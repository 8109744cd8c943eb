"""Renderings of a compiled job: text like Flink's plan descriptions, a JSON contract, pictures."""

from __future__ import annotations

from enum import StrEnum


class Layer(StrEnum):
    STREAM = "stream"
    JOB = "job"
    EXECUTION = "execution"
    PHYSICAL = "physical"
    ALL = "all"


class Format(StrEnum):
    TEXT = "text"
    JSON = "json"
    DOT = "dot"
    MERMAID = "mermaid"
