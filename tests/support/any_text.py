"""Text with every code point in it, lone UTF-16 surrogates (category Cs) often among them.

Hypothesis's `st.text()` draws no surrogate at all, and `st.characters(categories=None)`
draws one in thousands, so the property tests of the doors (issue 31: text is made valid
Unicode where it enters) mix in the surrogate range on purpose.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])
ANY_CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None)
ANY_TEXT = st.text(alphabet=ANY_CHARACTER | SURROGATES)
"""Arbitrary code points, lone surrogates included."""


def sendable(value: Any) -> bool:
    """Every string in `value` (keys too) encodes as UTF-8, as sockets, SQLite and logs need."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(sendable(k) and sendable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(sendable(item) for item in value)
    return True
