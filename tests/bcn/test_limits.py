"""The BCN size policy's pure parts: the forwarding cut and the send-side check."""

from __future__ import annotations

import pytest

from bridge.bcn.limits import (
    MAX_FORWARDED_CHARS,
    MAX_FRAME_BYTES,
    WORST_ESCAPE_BYTES,
    FrameTooLarge,
    check_fits,
    forwardable,
)
from bridge.fastjson import dumps


def test_text_within_the_limit_is_passed_on_as_it_is() -> None:
    text = "x" * MAX_FORWARDED_CHARS
    assert forwardable(text) is text


def test_a_cut_text_is_within_the_limit_so_cutting_again_changes_nothing() -> None:
    text = "line\n" * MAX_FORWARDED_CHARS
    once = forwardable(text)
    assert len(once) <= MAX_FORWARDED_CHARS
    assert once.endswith(f"(reply truncated: {len(text):,} characters; "
                         f"the first {len(once.split(chr(10) + chr(10) + '…')[0]):,} are shown)")
    assert forwardable(once) is once


def test_the_worst_escaped_forwarded_text_fits_a_frame_twice() -> None:
    worst = "\x01" * MAX_FORWARDED_CHARS  # each one is written `\u0001`
    assert len(dumps(worst)) - 2 == WORST_ESCAPE_BYTES * MAX_FORWARDED_CHARS
    assert 2 * len(dumps(worst).encode()) < MAX_FRAME_BYTES


def test_check_fits_refuses_only_what_a_peer_would_refuse() -> None:
    check_fits("the final", "é" * (MAX_FRAME_BYTES // 3))  # 2 bytes each: ~5.3 MB
    with pytest.raises(FrameTooLarge, match="too large to send"):
        check_fits("the final", "é" * (MAX_FRAME_BYTES // 2))
    with pytest.raises(FrameTooLarge):
        check_fits("the final", "\x01" * (MAX_FRAME_BYTES // 5))  # escaped: 6 bytes each
