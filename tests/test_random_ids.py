"""`bridge.random_ids`: ids from the kernel's random source, handed out from a pooled read."""

from __future__ import annotations

import os
import re

from bridge import random_ids


def test_ids_are_hex_of_the_length_asked_and_never_repeat() -> None:
    ids = [random_ids.token_hex(16) for _ in range(5_000)]  # several refills of the pool
    assert all(re.fullmatch(r"[0-9a-f]{32}", each) for each in ids)
    assert len(set(ids)) == len(ids)
    assert len(random_ids.token_hex(5000)) == 10_000  # more than a pool at once


def test_a_forked_child_does_not_hand_out_the_parents_next_bytes() -> None:
    random_ids.token_hex(16)  # the pool is filled
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, to the parent
        os.close(read)
        os.write(write, random_ids.token_hex(16).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child != random_ids.token_hex(16)
