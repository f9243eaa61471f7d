"""Who is who in one chat: names as bots write them ↔ ids as the platform needs them.

Mentions are the one piece of formatting that needs outside knowledge, so it comes in through
this small interface instead of a global registry; the adapters build one per chat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable


@runtime_checkable
class Directory(Protocol):
    """Maps display names to platform ids and back for one chat."""

    def id_for(self, name: str) -> str | None: ...

    def name_for(self, platform_id: str) -> str | None: ...


class StaticDirectory:
    """A Directory over a fixed name → id mapping; names match case-insensitively."""

    def __init__(self, ids_by_name: Mapping[str, str]) -> None:
        self._ids = {name.casefold(): str(pid) for name, pid in ids_by_name.items()}
        self._names = {str(pid): name for name, pid in ids_by_name.items()}

    def id_for(self, name: str) -> str | None:
        return self._ids.get(name.lstrip("@").casefold())

    def name_for(self, platform_id: str) -> str | None:
        return self._names.get(platform_id)

    def __repr__(self) -> str:
        return f"StaticDirectory({self._names!r})"


class EmptyDirectory:
    """The directory used when none is given: nobody is known."""

    def id_for(self, name: str) -> str | None:
        return None

    def name_for(self, platform_id: str) -> str | None:
        return None


NO_DIRECTORY = EmptyDirectory()
