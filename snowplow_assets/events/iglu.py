"""Iglu schema URIs (FORMATS.md §2), as plain Python and as Spark column expressions.

An Iglu URI is the only thing in an event that may name a path in the lake (the `vendor=`/`name=` folders
of shredded types), so it is validated with one anchored pattern and nothing else is ever used for paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from snowplow_assets.patterns import END

IGLU_URI_PATTERN = (
    r"^iglu:([a-zA-Z0-9\-_.]+)/([a-zA-Z0-9\-_]+)/([a-zA-Z0-9\-_]+)/([1-9][0-9]*(?:-(?:0|[1-9][0-9]*)){2})" + END
)
_IGLU_URI = re.compile(IGLU_URI_PATTERN)

# The shredder's own schema: it adds a context of it to each event it renames (shred.DUPLICATE_SCHEMA), and in
# its output such a context is what says that an event was renamed, and from which id (output_checks.py,
# manifest/populate.py). An input entity of this vendor and name makes its line bad, so that nothing else says
# so: counted as a rename, it failed the blocking check of the run folder for good, and the event manifest's
# back-fill took the event for another (until 2026-11-28).
SHREDDER_DUPLICATE_PREFIX = "iglu:com.snowplowanalytics.snowplow/duplicate/"
# An input entity's schema URI: a valid Iglu URI, and not the shredder's own.
ENTITY_SCHEMA_PATTERN = "^(?!" + re.escape(SHREDDER_DUPLICATE_PREFIX) + ")" + IGLU_URI_PATTERN.removeprefix("^")

# The longest schema URI an entity may have to be shredded. Its type's folders are named after its parts
# (output_folders.py), and a file system's name is at most 255 bytes: the longest, written while the job runs
# (`folder=shredded-types~vendor~name~format~version`), is 17 more than the URI, whose characters are ASCII.
# 200 leaves room to spare and is far beyond any real schema's URI.
MAX_SCHEMA_URI_LENGTH = 200


@dataclass(frozen=True, order=True)
class SchemaKey:
    vendor: str
    name: str
    format: str
    version: str

    @classmethod
    def parse(cls, uri: str) -> SchemaKey:
        match = _IGLU_URI.fullmatch(uri)
        if match is None:
            raise ValueError(f"not a valid Iglu URI: {uri!r}")
        return cls(*match.groups())

    @property
    def uri(self) -> str:
        return f"iglu:{self.vendor}/{self.name}/{self.format}/{self.version}"

    @property
    def model(self) -> int:
        return int(self.version.split("-")[0])
