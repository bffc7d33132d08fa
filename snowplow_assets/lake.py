"""Every path of the lake, in one place (DESIGN.md "Interfaces").

The lake root is a local folder or an `s3://bucket/prefix` URI. Paths are built only from the root, fixed
folder names and names that passed validation here, so a folder name or a schema URI from the data can never
point outside the lake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RUN_FOLDER = re.compile(r"^run=\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}$")
SHREDDING_COMPLETE = "shredding_complete.json"


def validate_run_folder(name: str) -> str:
    """Return `name` if it is a run folder name (`run=YYYY-MM-DD-hh-mm-ss`); raise ValueError otherwise."""
    if not RUN_FOLDER.match(name):
        raise ValueError(f"not a run folder name (expected run=YYYY-MM-DD-hh-mm-ss): {name!r}")
    return name


def join_uri(base: str, *parts: str) -> str:
    for part in parts:
        if not part or part in (".", "..") or "/" in part or "\\" in part:
            raise ValueError(f"unsafe path segment {part!r}")
    return "/".join([base.rstrip("/"), *parts])


@dataclass(frozen=True)
class Lake:
    root: str

    @property
    def is_s3(self) -> bool:
        return self.root.startswith("s3://")

    def uri(self, *parts: str) -> str:
        return join_uri(self.root, *parts)

    # Enriched input
    @property
    def enriched(self) -> str:
        return self.uri("enriched")

    def enriched_run(self, run: str) -> str:
        return self.uri("enriched", validate_run_folder(run))

    # Shredded output (FORMATS.md §3-4)
    def shredded_good(self, run: str) -> str:
        return self.uri("shredded", "good", validate_run_folder(run))

    def shredded_bad(self, run: str) -> str:
        return self.uri("shredded", "bad", validate_run_folder(run))

    def shredding_complete(self, run: str) -> str:
        return join_uri(self.shredded_good(run), SHREDDING_COMPLETE)

    def shred_staging(self, run: str, token: str) -> str:
        """A private folder a shred attempt writes into before it publishes; hidden from lake readers."""
        if not re.fullmatch(r"[0-9a-f]{8,32}", token):
            raise ValueError(f"bad staging token {token!r}")
        return self.uri("shredded", ".staging", f"{validate_run_folder(run)}.{token}")
