"""Secrets never reach a log line, however a library words it."""

from __future__ import annotations

import logging
import re

from bridge.logs import REDACTED, SecretRedactor


def test_registered_secrets_and_shapes_are_masked_in_messages_and_tracebacks() -> None:
    redactor = SecretRedactor()
    redactor.add(["link-token-123456", None, "abc"])  # too-short values are not secrets
    redactor.add_pattern(re.compile(r"tok-[0-9a-f]{8}"))
    try:
        raise RuntimeError("refused link-token-123456 at ws://x?t=tok-deadbeef")
    except RuntimeError:
        import sys

        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "lib", logging.ERROR, __file__, 1, "connect with %s (abc)", ("link-token-123456",),
        exc_info,
    )
    assert redactor.filter(record) is True
    assert record.getMessage() == f"connect with {REDACTED} (abc)"
    assert "link-token-123456" not in record.exc_text and "tok-deadbeef" not in record.exc_text
    assert REDACTED in record.exc_text


def test_the_run_command_registers_every_configured_secret() -> None:
    from bridge.cli.run import register_secrets
    from bridge.config.schema import BridgeConfig
    from bridge.logs import REDACTOR

    config = BridgeConfig.model_validate({
        "hub": {"link_tokens": ["hub-link-secret-1"], "groups": [{"id": "g"}],
                "bots": [{"name": "Helper", "token": "helper-bot-secret"}]},
        "bcn": {"url": "embedded", "token": "bcn-link-secret-2"},
    })
    register_secrets(config)
    assert REDACTOR.redact("a hub-link-secret-1 b helper-bot-secret c bcn-link-secret-2") == (
        f"a {REDACTED} b {REDACTED} c {REDACTED}"
    )
