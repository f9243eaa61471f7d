"""Request ids belong to the chat they were opened in.

A RequestId is chosen by whoever opens a request, so two chats can use the same one — by
chance, or on purpose: a visitor in another room typing a RESPONSE with the id of Alice's
request used to close it. A conversation is therefore owned by its chat (the platform chat
of the binding; a thread inside it is the same chat), and a protocol message from another
chat never touches it.

The id as written stays the conversation's store key in the chat that used it first — the
common case costs nothing. The same id used in another chat is tracked under
`<id>@<8 hex digits of that chat>` (`scoped_id`): ids collide only within a chat. Lanes
are `channel|chat|thread` keys (bridge.core.outbox.Lane); a conversation without a chat
(tracked before chats were recorded) belongs to every chat.
"""

from __future__ import annotations

import hashlib

from bridge.store.records import Conversation


def chat_scope(chat: str | None) -> str | None:
    """The platform chat of a lane key (`channel|chat`), without its thread."""
    if chat is None:
        return None
    channel, _, rest = chat.partition("|")
    return f"{channel}|{rest.partition('|')[0]}"


def same_chat(owner: str | None, chat: str | None) -> bool:
    """Whether a message seen in `chat` may touch a conversation owned by `owner`."""
    return owner is None or chat is None or chat_scope(owner) == chat_scope(chat)


def scoped_id(request_id: str, chat: str | None) -> str:
    """The store key of `request_id` in a chat that did not use it first."""
    tag = hashlib.sha256((chat_scope(chat) or "").encode("utf-8", "surrogatepass"))
    return f"{request_id}@{tag.hexdigest()[:8]}"


def protocol_id(conversation: Conversation) -> str:
    """The RequestId as the protocol text writes it (a scoped key without its chat tag)."""
    key = conversation.request_id
    request_id, at, _ = key.rpartition("@")
    if at and scoped_id(request_id, conversation.chat) == key:
        return request_id
    return key
