"""A platform's published send limit, as an account config writes it (`{count, seconds}`).

Each adapter declares its own limits with these defaults next to its account model (the
numbers are the platform's); an operator lowers one when the platform still says "retry
after" (a busy bot, a stricter plan), or raises it for a self-hosted server.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bridge.store.pacing import Budget


class SendLimit(BaseModel):
    """At most `count` sends in any `seconds`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(ge=1, description="Sends allowed in the window.")
    seconds: float = Field(gt=0, description="The window, in seconds.")

    def budget(self, key: str) -> Budget:
        """This limit as the send budget `key` (bridge.store.pacing), its window a little
        longer than the platform's (`MARGIN`)."""
        return Budget(key, self.count, self.seconds + min(self.seconds * MARGIN, MAX_MARGIN))


MARGIN = 0.1
MAX_MARGIN = 0.25
"""The window is paced `MARGIN` of itself longer, at most `MAX_MARGIN` seconds: a send is
counted when the bridge spends it but by the platform when it arrives, and two sends a
window apart can arrive closer than that (the first one slowed on the way). A minute's
window loses a quarter of a second; a second's, a tenth."""
