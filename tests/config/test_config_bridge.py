"""`load_config`: the whole file, per-adapter accounts, and the rules across sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from config_test_env import ENV
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from bridge.config import BridgeConfig, ConfigError, load_config
from bridge.config.schema import SECTIONS
from bridge.core import registry
from bridge.core.binding import Binding
from bridge.hub.config import HubConfig

REPO = Path(__file__).resolve().parents[2]

HUB = """
hub:
  groups:
    - {id: ops, bots: [Lotbot]}
    - {id: demo, bots: [Echo]}
"""


HUB_WITH_ACCOUNT = HUB + "\naccounts:\n  testchat: {main: {token: x}}\nbindings:\n"
"""The hub above, the account `testchat:main`, and the start of a `bindings:` list."""


def _problems(
    path: Path, environ: dict[str, str] | None = None
) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=environ or {})
    return [(i.line, i.path, i.message) for i in caught.value.issues]


def test_demo_config_loads() -> None:
    config = load_config(REPO / "config" / "demo.yaml", environ={})
    assert isinstance(config.hub, HubConfig)
    assert config.bcn.embedded
    (group,) = config.hub.groups
    assert (group.id, group.driver, group.bots, group.auto_join) == (
        "demo",
        "Echo",
        ["Echo", "Rules"],
        True,
    )
    assert config.store == "sqlite:///./data/demo.db"
    assert config.web.listen == "127.0.0.1:8080"
    assert list(config.accounts) == ["webchat"]
    assert [(b.channel, b.chat, b.group, b.protocol.enabled) for b in config.bindings] == [
        ("webchat:main", "lobby", "demo", True)
    ]


def test_example_config_shows_every_account_key() -> None:
    """config/example.yaml says it covers every key: each account model's every field is
    written there (as itself or as its `_file` form)."""
    text = (REPO / "config" / "example.yaml").read_text(encoding="utf-8")
    missing = []
    for channel_type in yaml.safe_load(text)["accounts"]:
        model = registry.account_config_model(channel_type)
        block = account_block(text, channel_type)
        missing += [f"{channel_type}.{name}" for name in model.model_fields
                    if not re.search(rf"^\s*(# )?{name}(_file)?:", block, re.MULTILINE)]
    assert missing == []


def account_block(text: str, channel_type: str) -> str:
    """The lines of `accounts.<channel_type>` in the example (commented keys included)."""
    lines = text.split("\n")
    start = lines.index("accounts:")
    start = next(i for i in range(start, len(lines)) if lines[i] == f"  {channel_type}:")
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].strip() and not lines[i].startswith("   ")), len(lines))
    return "\n".join(lines[start:end])


def test_example_config_loads() -> None:
    config = load_config(REPO / "config" / "example.yaml", environ=ENV)
    telegram = config.account("telegram:main")
    assert telegram.token.get_secret_value() == ENV["TELEGRAM_BOT_TOKEN"]
    assert config.bcn.token == ENV["BCN_LINK_TOKEN"]
    assert config.hub is not None and config.hub.link_tokens == [ENV["BCN_LINK_TOKEN"]]
    assert config.hub.listen == "127.0.0.1:8765"  # ${HUB_LISTEN:-...} default
    assert {b.channel for b in config.bindings} == {
        "telegram:main", "discord:main", "slack:main", "webchat:main",
    }
    discord, slack = config.account("discord:main"), config.account("slack:main")
    assert discord.token.get_secret_value() == ENV["DISCORD_BOT_TOKEN"]
    assert slack.bot_token.get_secret_value() == ENV["SLACK_BOT_TOKEN"]
    assert config.commands.enabled() == {
        "ask": "ask",
        "requests": "requests",
        "stop": "stop",
        "new": "new",
    }
    assert ENV["BCN_LINK_TOKEN"] not in repr(config.bcn)


def test_accounts_are_validated_by_the_adapter_model(write_config, test_adapters) -> None:
    path = write_config(
        """
        bcn: {url: "ws://bcn.example:8765", token: t}
        accounts:
          testchat:
            main: {token: abc, retries: 1}
            other:
              token: def
        bindings:
          - {channel: "testchat:main", chat: "-100123", group: ops}
        """
    )
    config = load_config(path, environ={})
    assert config.accounts["testchat"]["main"].token == SecretStr("abc")
    assert config.account("testchat:other").retries == 3
    assert config.bindings == [Binding(channel="testchat:main", chat="-100123", group="ops")]


def test_account_errors_carry_the_account_path(write_config, test_adapters) -> None:
    path = write_config(
        """
        bcn: {url: "ws://h", token: t}
        accounts:
          testchat:
            main:
              token: abc
              mode: pigeon
              retrys: 2
        """
    )
    assert _problems(path) == [
        (
            6,
            "accounts.testchat.main.mode",
            "expected a string matching '^(polling|webhook)$', got the string 'pigeon'",
        ),
        (7, "accounts.testchat.main.retrys", "unknown key 'retrys'; did you mean 'retries'?"),
    ]


def test_empty_account_means_defaults_and_missing_required_is_reported(
    write_config, test_adapters
) -> None:
    path = write_config(
        """
        bcn: {url: "ws://h", token: t}
        accounts:
          testchat:
            main:
        """
    )
    assert _problems(path) == [(4, "accounts.testchat.main.token", "required key is missing")]


def test_unknown_channel_type_suggests_a_known_one(write_config) -> None:
    path = write_config("bcn: {url: 'ws://h', token: t}\naccounts:\n  telegarm:\n    main: {}\n")
    ((line, where, message),) = _problems(path)
    assert (line, where) == (3, "accounts.telegarm")
    assert message.startswith("unknown channel type 'telegarm'; did you mean 'telegram'?")


def test_adapter_that_cannot_be_imported_is_named(write_config, monkeypatch) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "pigeon", "adapters.pigeon_not_written:PigeonAdapter")
    path = write_config(
        """
        bcn: {url: 'ws://h', token: t}
        accounts:
          pigeon: {main: {}}
        bindings:
          - {channel: "pigeon:main", chat: c, group: g}
        """
    )
    ((line, where, message),) = _problems(path)  # the binding is not blamed as well
    assert (line, where) == (3, "accounts.pigeon")
    assert message.startswith("the 'pigeon' adapter cannot be loaded (ModuleNotFoundError")


def test_unknown_section_with_did_you_mean(write_config) -> None:
    path = write_config("bcn: {url: 'ws://h', token: t}\nbinding: []\n")
    assert _problems(path) == [(2, "binding", "unknown key 'binding'; did you mean 'bindings'?")]


def test_embedded_needs_a_hub_section(write_config) -> None:
    path = write_config("bcn: {url: embedded}\n")
    ((line, where, message),) = _problems(path)
    assert (line, where) == (1, "bcn.url")
    assert "needs a 'hub:' section" in message


def test_embedded_is_the_default(write_config) -> None:
    path = write_config(HUB)
    config = load_config(path, environ={})
    assert config.bcn.embedded and config.store == "sqlite:///./data/bridge.db"


def test_remote_bcn_needs_a_token(write_config) -> None:
    path = write_config("bcn:\n  url: wss://bcn.example.com\n")
    assert _problems(path) == [
        (1, "bcn.token", "required when bcn.url points at a remote BCN"),
    ]


def test_bcn_url_shape(write_config) -> None:
    path = write_config("bcn:\n  url: http://bcn.example.com\n  token: t\n")
    assert _problems(path) == [
        (2, "bcn.url", 'expected "embedded" or a ws:// or wss:// URL'),
    ]


def test_embedded_link_token_need_not_be_listed_in_the_hub(write_config) -> None:
    """The bridge adds its own link token to the hub it starts (bridge.app)."""
    path = write_config(HUB + "  link_tokens: [other]\nbcn:\n  url: embedded\n  token: mine\n")
    assert load_config(path, environ={}).bcn.token == "mine"


def test_binding_needs_a_configured_account(write_config, test_adapters) -> None:
    path = write_config(
        HUB_WITH_ACCOUNT
        + """\
  - {channel: "testchat:mian", chat: c, group: ops}
  - {channel: "otherchat:main", chat: c, group: ops}
"""
    )
    assert _problems(path) == [
        (
            9,
            "bindings[0].channel",
            "no account 'testchat:mian': add accounts.testchat.mian; did you mean "
            "'testchat:main'? (configured: testchat:main)",
        ),
        (
            10,
            "bindings[1].channel",
            "no account 'otherchat:main': add accounts.otherchat.main; did you mean "
            "'testchat:main'? (configured: testchat:main)",
        ),
    ]


def test_binding_group_must_exist_in_the_embedded_hub(write_config, test_adapters) -> None:
    path = write_config(
        HUB_WITH_ACCOUNT
        + """\
  - {channel: "testchat:main", chat: c, group: opps}
"""
    )
    assert _problems(path) == [
        (
            9,
            "bindings[0].group",
            "unknown group 'opps'; did you mean 'ops'?; hub.groups defines: ops, demo",
        )
    ]


def test_remote_bcn_groups_are_not_checked_here(write_config, test_adapters) -> None:
    path = write_config(
        """
        bcn: {url: "wss://bcn.example.com", token: t}
        accounts:
          testchat: {main: {token: x}}
        bindings:
          - {channel: "testchat:main", chat: c, group: anything}
        """
    )
    assert load_config(path, environ={}).bindings[0].group == "anything"


def test_duplicate_bindings(write_config, test_adapters) -> None:
    path = write_config(
        HUB_WITH_ACCOUNT
        + """\
  - {channel: "testchat:main", chat: c, group: ops}
  - {channel: "testchat:main", chat: c, thread: t1, group: ops}
  - {channel: "testchat:main", chat: c, group: demo}
  - {channel: "testchat:main", chat: c, thread: t1, group: demo}
"""
    )
    assert _problems(path) == [
        (
            11,
            "bindings[2]",
            "binds chat 'c' on 'testchat:main' again (already bound by bindings[0])",
        ),
        (
            12,
            "bindings[3]",
            "binds thread 't1' of chat 'c' on 'testchat:main' again (already bound by bindings[1])",
        ),
    ]


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        ("postgres://u:pw@db/x", "unknown scheme 'postgres'; supported: memory://"),
        ("sqlite://relative.db", "write sqlite:///relative.db or sqlite:////absolute.db"),
        ("bridge.db", "has no scheme"),
    ],
)
def test_store_url_is_checked(write_config, store: str, expected: str) -> None:
    path = write_config(HUB + f"store: '{store}'\n")
    ((line, where, message),) = _problems(path)
    assert (line, where) == (5, "store")
    assert expected in message
    assert "pw@" not in message


def test_redis_password_is_not_echoed(write_config) -> None:
    path = write_config(HUB + "store: 'redis://:sekrit@cache:6379/zero'\n")
    ((_, where, message),) = _problems(path)
    assert where == "store" and "sekrit" not in message


def test_only_secrets_from_the_environment_are_masked(write_config, test_adapters) -> None:
    environ = {"STORE": "weird://api-key-12345@cache", "CHAT": "private-chat-67890"}
    store = write_config(HUB + "store: ${STORE}\n")
    bindings = write_config(
        HUB_WITH_ACCOUNT
        + """\
  - {channel: "testchat:main", chat: "${CHAT}", group: ops}
  - {channel: "testchat:main", chat: "${CHAT}", group: demo}
""",
        name="bindings.yaml",
    )

    assert _problems(store, environ) == [
        (5, "store", "store URL '***': unknown scheme 'weird'; supported: memory://, "
         "sqlite:///path.db, redis://host:port/db"),
    ]  # fmt: skip
    assert _problems(bindings, environ) == [  # a chat id is no secret: shown, to be fixed
        (10, "bindings[1]", "binds chat 'private-chat-67890' on 'testchat:main' again (already "
         "bound by bindings[0])"),
    ]  # fmt: skip


def test_store_from_a_file(write_config, tmp_path: Path) -> None:
    (tmp_path / "store-url").write_text("memory://\n", encoding="utf-8")
    path = write_config(HUB + "store_file: store-url\n")
    assert load_config(path, environ={}).store == "memory://"


def test_commands_rename_disable_and_clash(write_config) -> None:
    path = write_config(HUB + "commands: {ask: delegate, new: false}\n")
    config = load_config(path, environ={})
    assert config.commands.enabled() == {"ask": "delegate", "requests": "requests", "stop": "stop"}

    path = write_config(HUB + "commands: {ask: stop, new: New}\n")
    problems = _problems(path)
    assert (
        5,
        "commands.new",
        "a command name is 1-32 lowercase letters, digits or '_'",
    ) in problems


def test_command_names_must_differ(write_config) -> None:
    path = write_config(HUB + "commands: {ask: stop}\n")
    assert _problems(path) == [
        (5, "commands", "'ask' and 'stop' both use the name 'stop'"),
    ]


def test_hub_errors_are_located_too(write_config) -> None:
    path = write_config("hub:\n  listen: nowhere\n  groups:\n    - {id: 'a b'}\n")
    problems = _problems(path)
    assert problems[0][:2] == (2, "hub.listen")
    assert problems[1] == (4, "hub.groups[0].id", "a group id must not contain ':' or whitespace")


def test_bridge_config_is_a_plain_model() -> None:
    config = BridgeConfig(hub=HubConfig(), bindings=[])
    assert config.bcn.embedded and config.web.enabled


def test_empty_sections_mean_defaults(write_config) -> None:
    path = write_config("hub:\nweb:\ncommands:\nbindings:\n")
    config = load_config(path, environ={})
    assert config.hub == HubConfig()
    assert config.web.listen == "127.0.0.1:8080" and config.bindings == []


_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_KEYS = st.sampled_from(
    [*SECTIONS, "url", "token", "token_file", "main", "webchat", "testchat", "groups", "id",
     "channel", "chat", "group", "listen", "x"]
)  # fmt: skip
_TREES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tree=st.dictionaries(_KEYS, _TREES, max_size=5))
def test_any_shape_of_file_is_loaded_or_refused_cleanly(write_config, test_adapters, tree) -> None:
    path = write_config(yaml.safe_dump(tree))
    try:
        load_config(path, environ={})
    except ConfigError as exc:
        assert all(issue.message for issue in exc.issues)


def test_absurdly_deep_nesting_is_refused_cleanly(write_config) -> None:
    path = write_config("hub: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError):
        load_config(path, environ={})


@pytest.mark.parametrize(
    ("accounts", "line", "where", "message"),
    [
        ("[webchat]", 2, "accounts", "expected a mapping of channel types (e.g. 'telegram:'), "
         "got a list"),
        ("{testchat: [main]}", 2, "accounts.testchat", "expected a mapping of account names "
         "(e.g. 'main:'), got a list"),
        ("{testchat: {'bad name': {token: x}}}", 2, "accounts.testchat.bad name",
         "an account name is 1-64 letters, digits, '_', '.' or '-'"),
    ],
)  # fmt: skip
def test_accounts_shape(write_config, test_adapters, accounts, line, where, message) -> None:
    path = write_config(f"bcn: {{url: 'ws://h', token: t}}\naccounts: {accounts}\n")
    assert _problems(path) == [(line, where, message)]
