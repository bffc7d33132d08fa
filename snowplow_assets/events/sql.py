"""Writing Spark SQL expressions as text.

Wide per-field logic (131 fields, several expressions each) is built as SQL text and handed to Spark in one
call per projection. Built with the Column API it takes tens of thousands of Python-to-JVM calls, which
cost seconds per DataFrame before any data moves.
"""

from __future__ import annotations


def literal(text: str) -> str:
    """A Spark SQL string literal; backslashes and quotes are escaped, so any text is safe inside it."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def named_struct(**members: str) -> str:
    return "named_struct(" + ", ".join(f"{literal(k)}, {v}" for k, v in members.items()) + ")"


def case(*branches: tuple[str, str], otherwise: str = "NULL") -> str:
    whens = " ".join(f"WHEN {condition} THEN {value}" for condition, value in branches)
    return f"CASE {whens} ELSE {otherwise} END"
