"""The result of a data-quality check, as domain code computes it (Dagster turns it into an asset check result)."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, int] = field(default_factory=dict)
