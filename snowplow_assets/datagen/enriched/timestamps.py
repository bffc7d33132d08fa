"""Timestamp texts of enriched events, from texts computed once."""

from __future__ import annotations

from datetime import UTC, datetime

_MINUTE_TEXT: dict[int, str] = {}
_SECONDS_TEXT = [f"{millis // 1000:02d}.{millis % 1000:03d}" for millis in range(60_000)]


def timestamp_text(epoch_ms: int) -> str:
    """`yyyy-MM-dd HH:mm:ss.SSS` in UTC from texts computed once: each minute's, and each `ss.SSS`."""
    minute = epoch_ms // 60_000
    try:
        prefix = _MINUTE_TEXT[minute]
    except KeyError:
        prefix = _MINUTE_TEXT[minute] = datetime.fromtimestamp(minute * 60, UTC).strftime("%Y-%m-%d %H:%M:")
    return prefix + _SECONDS_TEXT[epoch_ms % 60_000]
