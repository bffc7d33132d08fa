"""Names in a message, cut short: the first few, then how many more (the counts beside them stay complete)."""

from __future__ import annotations

from collections.abc import Sequence


def shown(names: Sequence[str], limit: int = 10) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
