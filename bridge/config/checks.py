"""Rules that span sections, checked once every section is valid on its own.

Each rule returns the key path it is about, so the loader can point at the exact line
(`bindings[2].group`), and every rule runs, so one `config check` lists everything.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from bridge.config.errors import Loc
from bridge.config.messages import did_you_mean

if TYPE_CHECKING:
    from bridge.config.schema import BridgeConfig

Problem = tuple[Loc, str]


def cross_section_problems(
    config: BridgeConfig, declared_accounts: Mapping[str, Collection[str]] | None = None
) -> list[Problem]:
    """Everything wrong between sections; `declared_accounts` defaults to the config's own.

    The loader passes the accounts written in the file, including those it could not
    validate, so a binding to such an account is not reported a second time.
    """
    if declared_accounts is None:
        declared_accounts = {kind: list(names) for kind, names in config.accounts.items()}
    return [
        *_bcn_problems(config),
        *_binding_account_problems(config, declared_accounts),
        *_binding_group_problems(config),
        *_duplicate_binding_problems(config),
    ]


def _bcn_problems(config: BridgeConfig) -> list[Problem]:
    bcn = config.bcn
    if bcn.embedded:
        if config.hub is None:
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
    config: BridgeConfig, declared: Mapping[str, Collection[str]]
) -> list[Problem]:
    configured = sorted(f"{kind}:{name}" for kind, names in declared.items() for name in names)
    problems: list[Problem] = []
    for index, binding in enumerate(config.bindings):
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


def _binding_group_problems(config: BridgeConfig) -> list[Problem]:
    """With the embedded hub the groups are known here; a remote BCN checks its own."""
    if not config.bcn.embedded or config.hub is None:
        return []
    groups = [group.id for group in config.hub.groups]
    problems: list[Problem] = []
    for index, binding in enumerate(config.bindings):
        if binding.group in groups:
            continue
        message = f"unknown group '{binding.group}'" + did_you_mean(binding.group, groups)
        message += (
            f"; hub.groups defines: {', '.join(groups)}" if groups else "; hub.groups is empty"
        )
        problems.append((("bindings", index, "group"), message))
    return problems


def _duplicate_binding_problems(config: BridgeConfig) -> list[Problem]:
    first: dict[tuple[str, str, str | None], int] = {}
    problems: list[Problem] = []
    for index, binding in enumerate(config.bindings):
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
