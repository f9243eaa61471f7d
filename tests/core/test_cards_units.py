"""Cards' button data and records: what every platform's buttons carry, read back exactly."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from bridge.core.cards import (
    MAX_DATA_BYTES,
    OWN_WORDS,
    STOP,
    Card,
    button_data,
    card_key,
    read_button_data,
)

CHOICES = st.one_of(st.integers(0, 9), st.sampled_from([STOP, OWN_WORDS]))


@given(lane=st.text(), request_id=st.text(), asked_at=st.text(), choice=CHOICES)
def test_button_data_reads_back_and_fits_every_platform(lane, request_id, asked_at, choice):
    key = card_key(lane, request_id, asked_at)
    data = button_data(key, choice)
    assert read_button_data(data) == (key, str(choice))
    # Telegram's callback_data is at most 64 bytes, Discord's custom_id 100.
    assert len(data.encode()) <= 25 <= MAX_DATA_BYTES


@given(st.one_of(st.text(), st.binary(), st.integers(), st.none(), st.lists(st.text())))
def test_anything_else_is_not_button_data(data):
    read = read_button_data(data)
    assert read is None or (isinstance(data, str) and data == button_data(*read))


def test_a_card_record_round_trips_and_settling_drops_the_buttons():
    card = Card(key=card_key("l", "r", "t"), decision="run-1", request_id="ada-1",
                question="Which city?", asker="Rules", requester="Ada", requester_id="u-ada",
                depth=(2, 5), deadline=datetime(2026, 1, 1, tzinfo=UTC),
                options=("Paris", "Tokyo"), lane="testchat:main|room|")
    assert Card.from_record(card.to_record()) == card
    assert [label for label, _ in card.buttons()][:2] == ["Paris", "Tokyo"]
    assert len(card.buttons()) == 4  # the options, own words, Stop
    settled = card.settled("answered", "answered by Bea (slack): Tokyo")
    assert settled.buttons() == [] and Card.from_record(settled.to_record()) == settled
    assert "answered by Bea (slack): Tokyo" in settled.summary()
    assert "1:00 left" in card.summary(datetime(2025, 12, 31, 23, 59, tzinfo=UTC))
