"""The folder each output line of a run is written to, and where that folder goes in the loader layout.

The output pass (output_pass.py) writes every output in one write partitioned by one column, `folder`:
`atomic-events`, `bad`, or `shredded-types~vendor~name~format~version` for an entity type (ENTITY_FOLDER).
One string per line, rather than a column per layout level, because a task switches folder at nearly every
line it writes (an event's lines go to several), and each switch compares and copies the partition values
(measured: the write took 15-20% longer with five columns). `~` is in no Iglu part (iglu.py) and Spark leaves
it unescaped in a folder name; layout_folder turns each written folder into its place in the loader layout
of FORMATS.md §3. An entity's folder is a template (templates.py), as the fast path renders it too.
"""

from __future__ import annotations

from snowplow_assets.events import templates
from snowplow_assets.events.shred import FORMAT, NAME, VENDOR, VERSION
from snowplow_assets.events.templates import Template

ATOMIC_EVENTS = "atomic-events"
SHREDDED_TYPES = "shredded-types"
BAD = "bad"

FOLDER = "folder"  # the output pass's partition column
# A line of output: `head || event id || tail` (a null tail: the head is the whole line), and its `folder`.
RECORD_TYPE = "STRUCT<folder: STRING, head: STRING, tail: STRING>"
_SEPARATOR = "~"
_SCHEMA_PARTS = (VENDOR, NAME, FORMAT, VERSION)  # in the folder name and in the layout, in this order
ENTITY_FOLDER: Template = (SHREDDED_TYPES, *(piece for part in _SCHEMA_PARTS for piece in (_SEPARATOR, part)))


def entity_folder_sql(values: dict[str, str]) -> str:
    """The SQL of an entity's folder, from the SQL of its values (shred.entity_values)."""
    return templates.sql(ENTITY_FOLDER, values)


def layout_folder(written: str, good: str, bad: str) -> str:
    """Where a folder the output pass wrote (`folder=…`) belongs in the loader layout."""
    key, _, value = written.partition("=")
    output, *schema = value.split(_SEPARATOR)
    whole_outputs = {ATOMIC_EVENTS: f"{good}/{ATOMIC_EVENTS}", BAD: bad}
    if key == FOLDER and not schema and output in whole_outputs:
        return whole_outputs[output]
    if key == FOLDER and output == SHREDDED_TYPES and len(schema) == len(_SCHEMA_PARTS):
        parts = (f"{part.name}={value}" for part, value in zip(_SCHEMA_PARTS, schema))
        return "/".join([good, SHREDDED_TYPES, *parts])
    raise RuntimeError(f"the output pass wrote a folder that has no place in the loader layout: {written!r}")
