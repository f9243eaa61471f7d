"""One throttled log line per kind of refused request.

Anyone can reach an HTTP entry, so a refusal must not cost a log line each: a scanner would
flood the log, and the line that matters (the first, which tells the operator a signing
secret or a webhook is wrong) would drown. The first refusal is a warning saying what was
wrong; later ones go to the debug log, and `count` keeps the tally.
"""

from __future__ import annotations

import logging

PROBLEM_CHARS = 200
"""Longest problem text logged; it may quote what the client sent."""


class RefusalLog:
    """Logs the refusals of one entry (`what`, e.g. ``slack:main``): the first as a warning."""

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._log = logger
        self.what = what
        self.count = 0
        """Requests refused so far."""

    def refused(self, remote: str | None, problem: str, status: int) -> None:
        """Count one refusal of a request from `remote`, and log it (see the module)."""
        self.count += 1
        first = self.count == 1
        if len(problem) > PROBLEM_CHARS:
            problem = problem[: PROBLEM_CHARS - 1] + "…"
        self._log.log(
            logging.WARNING if first else logging.DEBUG,
            "%s refused a request from %s with %s (HTTP %d)%s",
            self.what, remote, problem, status,
            "; later refusals are logged at debug level" if first else "",
        )
