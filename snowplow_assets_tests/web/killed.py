"""Lake file systems of a process that is killed part-way through publishing: what a kill leaves is what
the lake holds when the exception leaves the operation, since the tests' processes go on to the next run."""

from __future__ import annotations

import re
from typing import Any

from snowplow_assets.storage import LocalFileSystem

_ASIDE = re.compile(r"\.replaced-[0-9a-f]+$")


class Killed(BaseException):
    """The process ends here. A BaseException, so that no `except Exception` on the way cleans up after it."""


class KilledAfterMovingAside(LocalFileSystem):
    """Killed between the two renames of replace_tree: the old folder moved aside, the new one not yet in."""

    def __init__(self, below: str) -> None:
        self.below = below.rstrip("/") + "/"

    def move(self, source: str, target: str) -> None:
        super().move(source, target)
        if target.startswith(self.below) and _ASIDE.search(target):
            raise Killed(f"after moving {source} aside")


class KilledAtStep(LocalFileSystem):
    """Killed at its `at`-th move or delete: a move before its rename (a rename is all or nothing), a delete
    having removed one file of the folder (a folder is removed file by file)."""

    def __init__(self, at: int) -> None:
        self.at, self.steps = at, 0

    def _step(self, deleting: str | None = None) -> None:
        self.steps += 1
        if self.steps == self.at:
            files = self.list_files(deleting) if deleting else []
            if files:
                super().delete(files[-1].uri)
            raise Killed(f"at step {self.at}")

    def move(self, source: str, target: str) -> None:
        self._step()
        super().move(source, target)

    def delete(self, uri: str) -> None:
        self._step(uri)
        super().delete(uri)


class KilledAtS3Request:
    """A boto3 S3 client killed at its `at`-th copy or delete request; a DeleteObjects request it is killed in
    has removed the last of its keys (S3 removes them one by one)."""

    def __init__(self, client: Any, at: int) -> None:
        self.client, self.at, self.requests = client, at, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def _request(self) -> bool:
        self.requests += 1
        return self.requests == self.at

    def copy_object(self, **kwargs: Any) -> Any:
        if self._request():
            raise Killed(f"at request {self.at}")
        return self.client.copy_object(**kwargs)

    def delete_objects(self, *, Bucket: str, Delete: dict[str, Any]) -> Any:
        if self._request():
            self.client.delete_objects(Bucket=Bucket, Delete={**Delete, "Objects": Delete["Objects"][-1:]})
            raise Killed(f"at request {self.at}")
        return self.client.delete_objects(Bucket=Bucket, Delete=Delete)
