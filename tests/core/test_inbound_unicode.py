"""`Inbound` is every platform's door to the core: whatever text a platform library hands
an adapter, the message the core gets is valid Unicode (issue 31)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bridge.core.model import Attachment, Inbound, Sender
from tests.support.any_text import ANY_TEXT, sendable


@given(text=ANY_TEXT, name=ANY_TEXT, ids=st.lists(ANY_TEXT, min_size=5, max_size=5),
       mentions=st.lists(ANY_TEXT, max_size=3), file_name=ANY_TEXT)
def test_every_text_field_of_an_inbound_is_valid_unicode(
    text: str, name: str, ids: list[str], mentions: list[str], file_name: str
) -> None:
    account, chat, message, thread, reply = ids
    inbound = Inbound(
        channel_type="slack", account=account, chat_id=chat, message_id=message,
        sender=Sender(id=name[::-1], name=name), text=text, thread_id=thread,
        mentions=tuple(mentions), reply_to=reply,
        attachments=(Attachment("file", url="https://x.invalid/f", name=file_name),),
    )
    fields = [inbound.account, inbound.chat_id, inbound.message_id, inbound.thread_id,
              inbound.reply_to, inbound.text, inbound.sender.id, inbound.sender.name,
              list(inbound.mentions), inbound.attachments[0].name]
    assert sendable(fields)


def test_valid_text_is_kept_as_it_is() -> None:
    sender = Sender("U1", "Ada")
    inbound = Inbound("slack", "main", "C1", "1.2", sender, "héllo 😀")
    assert inbound.sender is sender and inbound.text == "héllo 😀"
    lone = Inbound("slack", "main", "C1", "1.3", Sender("U1", "A\ud800"), "x\udc00")
    assert (lone.sender.name, lone.text) == ("A\ufffd", "x\ufffd")
