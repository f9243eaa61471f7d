"""A bot's reply part is posted once, even when the instance posting it dies mid-call.

The outbox records a part's event id as soon as `send` returns; a kill -9 between the
homeserver applying a send and that record makes the next instance send the part again.
Matrix has what Telegram and Slack lack: a send is `PUT …/send/{type}/{txnId}`, and the
homeserver answers a repeated txnId (same user, within its transaction cache's life —
Synapse keeps it for 30 minutes, in memory) with the first send's event id instead of
posting again. So a run's part is sent under a txnId derived from the run and the part,
the same on every instance.

One case needs a note in the store: a streamed part whose first send died unrecorded is
sent again with *newer* text (the stream moved on), and the homeserver's answer is the
event that shows the older text. Before a part's first send, its text's digest is noted
(`begin`); a send that finds a note is a retry, and when the note's text differs from the
text being sent, the adapter replaces the event's text right after (an edit, which is
harmless should the first send never have landed: the event shows that text already).

Only parts of a bot's run are covered: a run posts each part anew once, so the same
(run, part) twice can only be a retry. Outputs without a run (notices) get a fresh txnId.
"""

from __future__ import annotations

import hashlib
import uuid

from bridge.core.account_state import AccountState
from bridge.core.model import Outbound
from bridge.core.outbox import text_digest


def journal_key(out: Outbound) -> str | None:
    return f"sending:{out.run_id}:{out.part}" if out.run_id else None


def txn_id(key: str | None) -> str:
    """The send's transaction id: the same for every attempt at one run's part."""
    if key is None:
        return uuid.uuid4().hex
    return "bcn" + hashlib.sha256(key.encode()).hexdigest()[:32]


async def begin(state: AccountState, key: str, text: str) -> str | None:
    """Note this attempt's text; the digest an earlier attempt noted (a retry), if any."""
    record = await state.get(key)
    if record is not None:
        return str(record.get("digest", ""))
    await shown(state, key, text)
    return None


async def shown(state: AccountState, key: str, text: str) -> None:
    """The part's event shows `text` (noted after the edit that made it so)."""
    await state.put(key, {"digest": text_digest(text)})
