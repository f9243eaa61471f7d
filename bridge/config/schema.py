"""`BridgeConfig`, the whole YAML file, and `load_config` that reads it.

Sections are validated one by one so that each is checked by the model that owns it:
the hub by `bridge.hub.config.HubConfig`, every `accounts.<type>.<name>` by the model its
adapter declares (found through `bridge.core.registry`), bindings by `Binding`. Then the
rules that span sections run. All problems from all stages are reported together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError

from bridge.config.checks import cross_section_problems
from bridge.config.document import Document, read_document
from bridge.config.errors import ConfigError, ConfigIssue, Loc
from bridge.config.expand import FILE_SUFFIX
from bridge.config.loader import issue_hiding_secrets, top_level, validate_at
from bridge.config.messages import describe_value, did_you_mean, unknown_key_message
from bridge.config.sections import (
    DEFAULT_STORE,
    BcnSection,
    CommandNames,
    LogSection,
    RelaySection,
    WebSection,
    check_store_url,
)
from bridge.core import registry
from bridge.core.binding import Binding
from bridge.hub.config import HubConfig

ModelT = TypeVar("ModelT", bound=BaseModel)

ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

SECTIONS = ("hub", "bcn", "store", "web", "log", "relay", "accounts", "bindings", "commands")

AccountConfigs = dict[str, dict[str, SerializeAsAny[BaseModel]]]
"""`accounts[type][name]` -> the config model instance the adapter of `type` declares."""


class BridgeConfig(BaseModel):
    """One deployment: the BCN it talks to, its accounts, and which chat goes where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hub: HubConfig | None = Field(
        None, description="Run the embedded BCN hub in this process (with bcn.url: embedded)."
    )
    bcn: BcnSection = Field(default_factory=BcnSection)
    store: Annotated[str, AfterValidator(check_store_url)] = Field(
        DEFAULT_STORE,
        description="Where state is kept: sqlite:///path.db, redis://host:port/db (several "
        "instances share it), or memory://.",
    )
    web: WebSection = Field(default_factory=WebSection)
    log: LogSection = Field(default_factory=LogSection)
    relay: RelaySection = Field(default_factory=RelaySection)
    accounts: AccountConfigs = Field(
        default_factory=dict, description="Platform accounts by channel type, then by name."
    )
    bindings: list[Binding] = Field(default_factory=list)
    commands: CommandNames = Field(default_factory=CommandNames)

    def account(self, channel: str) -> BaseModel:
        """The account config for `"telegram:main"`; KeyError when not configured."""
        channel_type, _, name = channel.partition(":")
        return self.accounts[channel_type][name]


def load_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> BridgeConfig:
    """Read, expand and validate a whole config file; `ConfigError` lists every problem."""
    doc = read_document(path)
    top = top_level(doc)
    issues: list[ConfigIssue] = [
        doc.issue((key,), unknown_key_message(key, SECTIONS))
        for key in top
        if not _is_section_key(key)
    ]
    for key in [key for key in SECTIONS if key in top and top[key] is None]:
        if key in ("hub", "accounts"):
            top[key] = {}  # `hub:` alone: present, with all defaults
        else:
            del top[key]  # an empty section means its defaults
    hub: HubConfig | None = None
    if "hub" in top:
        hub, hub_issues = validate_at(doc, ("hub",), HubConfig, environ=environ)
        issues += hub_issues
    accounts, declared, account_issues = _load_accounts(doc, environ)
    issues += account_issues

    rest = {key: value for key, value in top.items() if _is_section_key(key)}
    rest.pop("hub", None)
    rest.pop("accounts", None)
    rest_doc = Document(file=doc.file, data=rest, lines=doc.lines, hidden=doc.hidden)
    core, core_issues = validate_at(rest_doc, (), BridgeConfig, environ=environ)
    issues += core_issues
    if core is None or issues:
        top.update(rest_doc.data)
        problems = _partial_problems(rest_doc.data, hub, declared, hub_written="hub" in top)
        raise ConfigError([*issues, *(issue_hiding_secrets(doc, loc, message)
                                      for loc, message in problems)])

    config = core.model_copy(update={"hub": hub, "accounts": accounts})
    problems = cross_section_problems(config, declared)
    if problems:
        top.update(rest_doc.data)  # the values as resolved, to recognise hidden ones
        raise ConfigError(issue_hiding_secrets(doc, loc, message) for loc, message in problems)
    return config


def _partial_problems(
    rest: dict[str, Any], hub: HubConfig | None, declared: dict[str, list[str]], *,
    hub_written: bool,
) -> list[tuple[Loc, str]]:
    """The cross-section rules over the parts that are valid on their own, so a file with
    problems in several sections shows them all at once instead of one pass at a time."""
    bcn = _valid(BcnSection, rest.get("bcn", {}))
    if bcn is None:  # an unreadable bcn: check the rest as for a remote BCN, which needs none
        bcn = BcnSection.model_construct(url="ws://unknown", token="unknown")
    raw = rest.get("bindings")
    bindings = [
        (index, binding)
        for index, item in enumerate(raw if isinstance(raw, list) else [])
        if (binding := _valid(Binding, item)) is not None
    ]
    config = BridgeConfig.model_construct(hub=hub, bcn=bcn, bindings=[], accounts={})
    return cross_section_problems(config, declared, bindings=bindings, hub_written=hub_written)


def _valid(model: type[ModelT], data: Any) -> ModelT | None:
    """`data` as `model`, or None when it is not valid (its errors are reported already)."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _is_section_key(key: str) -> bool:
    """A section, or `store_file:` and the like (a section's value read from a file)."""
    return key in SECTIONS or key.removesuffix(FILE_SUFFIX) in SECTIONS


def _load_accounts(
    doc: Document, environ: Mapping[str, str] | None
) -> tuple[AccountConfigs, dict[str, list[str]], list[ConfigIssue]]:
    """Validate each account with its adapter's model; also return the names declared."""
    section = doc.data.get("accounts")
    if section is None:
        return {}, {}, []
    if not isinstance(section, dict):
        got = describe_value(section, hidden=True)
        message = f"expected a mapping of channel types (e.g. 'telegram:'), got {got}"
        return {}, {}, [doc.issue(("accounts",), message)]
    accounts: AccountConfigs = {}
    declared: dict[str, list[str]] = {}
    issues: list[ConfigIssue] = []
    for channel_type, named in section.items():
        loc = ("accounts", channel_type)
        if named is None:
            named = section[channel_type] = {}
        if not isinstance(named, dict):
            got = describe_value(named, hidden=True)
            message = f"expected a mapping of account names (e.g. 'main:'), got {got}"
            issues.append(doc.issue(loc, message))
            continue
        declared[channel_type] = list(named)
        model_cls, problem = _account_model(channel_type)
        for name in named:
            if not ACCOUNT_NAME.match(name):
                issues.append(
                    doc.issue(
                        (*loc, name), "an account name is 1-64 letters, digits, '_', '.' or '-'"
                    )
                )
        if model_cls is None:
            issues.append(doc.issue(loc, problem))
            continue
        for name in named:
            if named[name] is None:
                named[name] = {}  # `main:` with nothing under it means all defaults
            model, model_issues = validate_at(doc, (*loc, name), model_cls, environ=environ)
            issues += model_issues
            if model is not None:
                accounts.setdefault(channel_type, {})[name] = model
    return accounts, declared, issues


def _account_model(channel_type: str) -> tuple[type[BaseModel] | None, str]:
    """The adapter's account model, or None and a sentence saying why there is none."""
    try:
        return registry.account_config_model(channel_type), ""
    except registry.UnknownChannelType:
        known = sorted(registry.ADAPTERS)
        hint = did_you_mean(channel_type, known)
        return None, f"unknown channel type '{channel_type}'{hint} (known: {', '.join(known)})"
    except Exception as exc:  # the adapter module is missing or broken
        return None, (
            f"the '{channel_type}' adapter cannot be loaded ({type(exc).__name__}: {exc}), "
            "so its accounts cannot be checked"
        )
