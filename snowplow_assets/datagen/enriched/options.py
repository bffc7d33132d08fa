"""What to generate and what was generated."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


@dataclass
class GenerationOptions:
    events: int = 1000
    natural_duplicate_rate: float = 0.02
    synthetic_duplicate_rate: float = 0.01
    bad_line_rate: float = 0.01
    files: int = 2
    gzip: bool = False
    seed: int = 1
    start: datetime = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
    users: int | None = None  # None: one visitor per 40 events

    def __post_init__(self) -> None:
        if self.events < 0:
            raise ValueError(f"events must not be negative: {self.events}")
        if self.files < 1:
            raise ValueError(f"files must be at least 1: {self.files}")
        for name in ("natural_duplicate_rate", "synthetic_duplicate_rate", "bad_line_rate"):
            rate = getattr(self, name)
            if not 0 <= rate <= 1:
                raise ValueError(f"{name} is a fraction of events, between 0 and 1: {rate}")
        if self.users is None:
            self.users = max(1, self.events // 40)
        if self.users < 1:
            raise ValueError(f"users must be at least 1: {self.users}")
        self.start = as_utc(self.start)

    @property
    def natural_duplicates(self) -> int:
        return round(self.events * self.natural_duplicate_rate)

    @property
    def synthetic_duplicates(self) -> int:
        return round(self.events * self.synthetic_duplicate_rate)

    @property
    def bad_lines(self) -> int:
        return round(self.events * self.bad_line_rate)


@dataclass
class GenerationStats:
    lines_written: int
    events: int  # distinct original events
    natural_duplicates: int  # extra exact copies of an event
    synthetic_duplicates: int  # extra events reusing another event's id with a different payload
    bad_lines: int
    bad_line_kinds: dict[str, int] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def as_utc(ts: datetime) -> datetime:
    """Naive datetimes are taken as UTC, like every timestamp in the lake."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
