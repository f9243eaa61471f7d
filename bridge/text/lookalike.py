"""Names that look alike: what lets someone pose as a bot or as another person.

A chat shows names, not ids, so "Ru1es", "Rules" with a Cyrillic "е", "Rules" with a
zero-width space inside, and "ＲＵＬＥＳ" all read as the bot Rules. This is a small, fixed
fold in the spirit of Unicode's confusable skeletons (UTS #39), not its full tables: NFKC
(full-width and mathematical letters become plain ones), case folding, accents and
invisible characters dropped, separators ignored, and the usual Cyrillic, Greek and digit
stand-ins mapped to the Latin letters they imitate. Two names with the same `skeleton` are
too close to tell apart; `invisible_characters` and `mixed_scripts` say why a single name is
suspicious on its own.
"""

from __future__ import annotations

import unicodedata

_INVISIBLE_EXTRA = frozenset(
    "\u034f"  # combining grapheme joiner
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers: letters that draw nothing
    "\u17b4\u17b5"  # Khmer inherent vowels
    "\u180b\u180c\u180d\u180e\u180f"  # Mongolian variation selectors, vowel separator
    "\u2800"  # Braille blank
)

_CONFUSABLE = str.maketrans({
    # digits and symbols that pass for letters
    "0": "o", "1": "l", "|": "l", "i": "l", "!": "l", "$": "s", "@": "a",
    # Cyrillic (after case folding)
    "а": "a", "в": "b", "г": "r", "е": "e", "ё": "e", "һ": "h", "і": "l", "ї": "l",
    "ј": "j", "к": "k", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "ь": "b", "ɡ": "g",
    # Greek (after case folding)
    "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "l", "κ": "k", "μ": "u",
    "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "γ": "y",
    # Latin letters that pass for others
    "ı": "l", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ŧ": "t",
})

_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))
"""Letter pairs that read as one letter in most fonts."""

_SEPARATORS = frozenset(" _-.·'’`")

_SCRIPTS_SEEN_AS_ONE = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK",
                        "BOPOMOFO": "CJK", "IDEOGRAPHIC": "CJK"}
"""Scripts written together (Japanese, Korean, Chinese), counted as one."""


def is_invisible(char: str) -> bool:
    """A character that draws nothing (zero-width, bidi controls, fillers, selectors)."""
    return unicodedata.category(char) == "Cf" or char in _INVISIBLE_EXTRA or (
        "\ufe00" <= char <= "\ufe0f" or "\U000e0100" <= char <= "\U000e01ef"
    )


def invisible_characters(text: str) -> list[str]:
    """The invisible characters in `text` as `U+XXXX`, once each, in order."""
    seen: dict[str, None] = {}
    for char in text:
        if is_invisible(char):
            seen.setdefault(f"U+{ord(char):04X}", None)
    return list(seen)


def script_of(char: str) -> str | None:
    """The script a letter belongs to (its Unicode name's first word); None for non-letters."""
    if not unicodedata.category(char).startswith("L"):
        return None
    name = unicodedata.name(char, "")
    first = name.split(" ", 1)[0]
    if not first or first in ("MODIFIER", "FULLWIDTH", "HALFWIDTH"):
        return None
    return _SCRIPTS_SEEN_AS_ONE.get(first, first)


def mixed_scripts(text: str) -> list[str]:
    """The scripts of a name that mixes look-alike alphabets (e.g. Latin with Cyrillic).

    Empty when the name is fine: one script, or Latin beside Chinese, Japanese or Korean
    (they cannot be mistaken for each other, UTS #39's "highly restrictive" level).
    """
    scripts = sorted({script for char in unicodedata.normalize("NFKC", text)
                      if (script := script_of(char)) is not None})
    if len(scripts) <= 1 or set(scripts) == {"CJK", "LATIN"}:
        return []
    return scripts


def skeleton(text: str) -> str:
    """What a name looks like: equal skeletons cannot be told apart at a glance."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    bare = "".join(
        char for char in unicodedata.normalize("NFD", folded)
        if not unicodedata.combining(char) and not is_invisible(char)
        and char not in _SEPARATORS and not char.isspace()
    )
    shape = unicodedata.normalize("NFC", bare).translate(_CONFUSABLE)
    for pair, single in _PAIRS:
        shape = shape.replace(pair, single)
    return shape
