"""Output text as templates: fixed text and named values, written once and rendered two ways.

Spark SQL renders a template as a `concat` of literals and the values' expressions (`sql`); the fast path's
Java function (canonical.py, snowplow_assets/jvm/) renders the same template, handed to it in its spec
(`spec`), from the values it has read. So an entity line, or the folder it is written to, has one
definition, and both paths write exactly the same text. Every value must already be safe where it goes (an
Iglu part, compact JSON, a formatted timestamp): a template escapes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from snowplow_assets.events.sql import literal


@dataclass(frozen=True)
class Value:
    """A named value in a template: which one is the renderer's to know (the Java function knows those of
    an entity, shred.py's ENTITY_VALUES)."""

    name: str


Template = tuple[str | Value, ...]


def sql(template: Template, values: Mapping[str, str]) -> str:
    """The template as a Spark SQL expression, each value's name mapped to the expression that gives it."""
    return "concat(" + ", ".join(literal(p) if isinstance(p, str) else values[p.name] for p in template) + ")"


def spec(template: Template) -> list[dict[str, str]]:
    """The template as the Java function's spec reads it: its pieces in order, `text` or `value`."""
    return [{"text": p} if isinstance(p, str) else {"value": p.name} for p in template]
