"""Rules that span sections, checked once every section is valid on its own.

Each rule returns the key path it is about, so the loader can point at the exact line
(`bindings[2].group`), and every rule runs, so one `config check` lists everything.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from bridge.config.errors import Loc
from bridge.config.messages import did_you_mean

if TYPE_CHECKING:
    from bridge.config.schema import BridgeConfig
    from bridge.core.binding import Binding

Problem = tuple[Loc, str]


Indexed = Sequence[tuple[int, "Binding"]]
"""Bindings with their index in the file (the valid ones, when some are not)."""


def cross_section_problems(
    config: BridgeConfig,
    declared_accounts: Mapping[str, Collection[str]] | None = None,
    *,
    bindings: Indexed | None = None,
    hub_written: bool | None = None,
) -> list[Problem]:
    """Everything wrong between sections; `declared_accounts` defaults to the config's own.

    The loader passes the accounts written in the file, including those it could not
    validate, so a binding to such an account is not reported a second time. When other
    sections are invalid it passes the bindings that are valid (`bindings`) and whether the
    file has a `hub:` section at all (`hub_written`; `config.hub` is None when it is invalid),
    so every rule that can still be checked is reported in the same pass.
    """
    if declared_accounts is None:
        declared_accounts = {kind: list(names) for kind, names in config.accounts.items()}
    indexed = list(enumerate(config.bindings)) if bindings is None else list(bindings)
    hub_written = config.hub is not None if hub_written is None else hub_written
    return [
        *_bcn_problems(config, hub_written),
        *_binding_account_problems(indexed, declared_accounts),
        *_binding_group_problems(config, indexed),
        *_duplicate_binding_problems(indexed),
    ]


def _bcn_problems(config: BridgeConfig, hub_written: bool) -> list[Problem]:
    bcn = config.bcn
    if bcn.embedded:
        if not hub_written:
            return [
                (
                    ("bcn", "url"),
                    "'embedded' runs the BCN hub inside the bridge and needs a 'hub:' section "
                    "(or set bcn.url to a ws:// address)",
                )
            ]
        return []  # the bridge hands its own link token to the hub it starts
    if not bcn.token:
        return [(("bcn", "token"), "required when bcn.url points at a remote BCN")]
    return []


def _binding_account_problems(
    indexed: Indexed, declared: Mapping[str, Collection[str]]
) -> list[Problem]:
    configured = sorted(f"{kind}:{name}" for kind, names in declared.items() for name in names)
    problems: list[Problem] = []
    for index, binding in indexed:
        if binding.account in declared.get(binding.channel_type, ()):
            continue
        message = (
            f"no account '{binding.channel}': add accounts.{binding.channel_type}."
            f"{binding.account}" + did_you_mean(binding.channel, configured)
        )
        if configured:
            message += f" (configured: {', '.join(configured)})"
        problems.append((("bindings", index, "channel"), message))
    return problems


def _binding_group_problems(config: BridgeConfig, indexed: Indexed) -> list[Problem]:
    """With the embedded hub the groups are known here; a remote BCN checks its own."""
    if not config.bcn.embedded or config.hub is None:
        return []
    groups = [group.id for group in config.hub.groups]
    problems: list[Problem] = []
    for index, binding in indexed:
        if binding.group in groups:
            continue
        message = f"unknown group '{binding.group}'" + did_you_mean(binding.group, groups)
        message += (
            f"; hub.groups defines: {', '.join(groups)}" if groups else "; hub.groups is empty"
        )
        problems.append((("bindings", index, "group"), message))
    return problems


def _duplicate_binding_problems(indexed: Indexed) -> list[Problem]:
    first: dict[tuple[str, str, str | None], int] = {}
    problems: list[Problem] = []
    for index, binding in indexed:
        key = (binding.channel, binding.chat, binding.thread)
        if key in first:
            where = f"thread '{binding.thread}' of " if binding.thread is not None else ""
            problems.append(
                (
                    ("bindings", index),
                    f"binds {where}chat '{binding.chat}' on '{binding.channel}' again "
                    f"(already bound by bindings[{first[key]}])",
                )
            )
        else:
            first[key] = index
    return problems
