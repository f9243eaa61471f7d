"""What a person watching the chat saw of a burst's replies: one measurement for every
platform's fault test.

Each fake keeps `versions`: every text each message the bridge posted showed, oldest first,
None once deleted. From that and the texts of the human messages sent (the echo bot's final
is the text it got), `tally` counts, per human message:

- lost: no bridge message shows its final now;
- doubled: more than one does;
- stray: a bridge message that showed part of a reply and now shows something that is no
  reply's final, and was not deleted (a leftover preview, or a finished reply edited back to
  a preview);
- edited after final: a message that showed a final and later showed something else, or was
  deleted. (Re-sending the same text is invisible and not counted: the last preview of a short
  reply can equal its final.)

Other messages of the bridge (a notice of the hub or of the bridge) are listed as `notices`:
printed, never taken for a reply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Tally:
    sent: int
    lost: list[str] = field(default_factory=list)
    doubled: dict[str, int] = field(default_factory=dict)
    stray: list[str] = field(default_factory=list)
    edited_after_final: list[list[str | None]] = field(default_factory=list)
    """The versions of each message changed after it showed a final."""
    notices: list[str] = field(default_factory=list)
    """Messages that never showed any part of a reply: what they say now."""
    previews: int = 0
    """Messages that showed a preview first (the burst streamed, not just finals)."""

    @property
    def clean(self) -> bool:
        return not (self.lost or self.doubled or self.stray or self.edited_after_final)

    def counts(self) -> str:
        return (f"sent={self.sent} lost={len(self.lost)} doubled={len(self.doubled)} "
                f"stray={len(self.stray)} edited_after_final={len(self.edited_after_final)} "
                f"(previews shown: {self.previews}, notices: {len(self.notices)})")

    def details(self) -> str:
        return (f"lost {self.lost}; doubled {self.doubled}; stray {self.stray}; "
                f"edited after final {self.edited_after_final}; notices {self.notices}")


def tally(versions: Mapping[Hashable, Sequence[str | None]], sent: Iterable[str],
          visible: Callable[[str], str] = str.strip) -> Tally:  # fmt: skip
    """Count what `sent` (the human messages, each also the echo bot's final) got as replies.

    `visible` turns a platform text into what the reply says (e.g. without the sender's name
    line the bridge puts above it on Telegram)."""
    finals = [text.strip() for text in sent]
    wanted = set(finals)
    replies: Counter[str] = Counter()
    result = Tally(sent=len(finals))
    for history in versions.values():
        shown = [None if text is None else visible(text) for text in history]
        now = shown[-1]
        if not any(_part_of(text, finals) for text in shown):
            result.notices.append(str(now))
            continue
        result.previews += shown[0] not in wanted
        if now in wanted:
            replies[now] += 1
        elif now is not None:
            result.stray.append(now)
        reached = next((i for i, text in enumerate(shown) if text in wanted), None)
        if reached is not None and any(text != shown[reached] for text in shown[reached:]):
            result.edited_after_final.append(shown)
    result.lost = [text for text in finals if replies[text] == 0]
    result.doubled = {text: count for text, count in replies.items() if count > 1}
    return result


def _part_of(text: str | None, finals: Sequence[str]) -> bool:
    """Does `text` show the start of some reply (a preview, or the whole final)?"""
    return text is not None and text != "" and any(final.startswith(text) for final in finals)
