"""The `hub:` section model: defaults, validation messages, and the CLI's use of it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import ValidationError

from bridge.cli.hub import run
from bridge.hub.config import HubConfig
from bridge.listen import parse_listen


def test_defaults_and_driver_membership() -> None:
    config = HubConfig.model_validate(
        {"groups": [{"id": "grp-ops", "driver": "Helper", "bots": ["Mantis"]}]})
    assert (config.host, config.port) == ("127.0.0.1", 8765)
    assert config.bot_ttl_seconds == 300 and config.link_ttl_seconds == 120
    assert config.max_bot_turns == 12
    assert (config.send_queue_chars, config.bot_queue_max, config.observer_queue_max,
            config.observer_shed_limit, config.max_requests_in_flight) == (
        262_144, 400, 200, 1000, 256)
    group = config.groups[0]
    assert group.bots == ["Helper", "Mantis"] and group.name == "grp-ops"


@pytest.mark.parametrize("data, message", [
    ({"listen": "localhost"}, "must look like host:port"),
    ({"listen": "h:99999"}, "port"),
    ({"link_tokens": [""]}, "must not be empty"),
    ({"groups": [{"id": "a"}, {"id": "a"}]}, "appears twice"),
    ({"groups": [{"id": "a:b"}]}, "':'"),
    ({"groups": [{"id": "x" * 79}]}, "78"),
    ({"groups": [{"id": "a", "bots": ["all"]}]}, "reserved"),
    ({"bots": [{"name": "A", "token": "12345678"}, {"name": "a", "token": "87654321"}]},
     "appears twice"),
    ({"bots": [{"name": "A", "token": "short"}]}, "at least 8"),
    ({"deprecations": {7: {"message": "x"}}}, "no protocol version 7"),
    ({"groups": [{"id": "a", "type": "swarm"}]}, "manager_worker"),
    ({"register_tokens": [" "]}, "must not be empty"),
    ({"probe_timeout_seconds": 0}, "greater than 0"),
    ({"observer_queue_max": 401}, "observer_queue_max must not exceed bot_queue_max"),
    ({"send_queue_chars": 100}, "greater than or equal to 1024"),
    ({"surprise": 1}, "Extra inputs"),
])
def test_bad_config_is_a_clear_error(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HubConfig.model_validate(data)


def test_parse_listen_accepts_ipv6() -> None:
    assert parse_listen("[::1]:0") == ("::1", 0)


def test_cli_reports_config_errors_with_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text("hub:\n  listen: 127.0.0.1:0\n  link_tokens: ['${NO_SUCH_VAR_XYZ}']\n")
    code = run(argparse.Namespace(config=str(path), listen=None, log_level="INFO",
                                  log_format=None))
    assert code == 2
    err = capsys.readouterr().err
    assert "hub.yaml:3" in err and "NO_SUCH_VAR_XYZ" in err


def test_cli_rejects_bad_listen_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hub.yaml"
    path.write_text("hub:\n  listen: 127.0.0.1:0\n")
    assert run(argparse.Namespace(config=str(path), listen="nope", log_level="INFO",
                                  log_format=None)) == 2
    assert "--listen" in capsys.readouterr().err


async def test_cli_serves_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    import asyncio
    import json
    import signal
    import sys
    import urllib.request

    path = tmp_path / "hub.yaml"
    path.write_text(f"hub:\n  listen: 127.0.0.1:0\n  data_dir: {tmp_path / 'data'}\n"
                    "  link_tokens: [abcdefgh]\n")
    script = ("import argparse, sys; from bridge.cli.hub import run; "
              f"sys.exit(run(argparse.Namespace(config={str(path)!r}, listen=None, "
              "log_level='WARNING', log_format=None)))")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=str(Path(__file__).parents[2]))
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        url = line.split()[3].replace("ws://", "http://")
        with urllib.request.urlopen(url + "/healthz", timeout=5) as response:  # noqa: ASYNC210
            health = json.load(response)
        assert health["status"] == "ok" and health["bots_online"] == 0
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_failed_start_closes_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bridge.hub.server as server
    from bridge.hub import Hub
    from bridge.hub.storage import HubDatabase

    closed: list[str] = []
    real_close = HubDatabase.close

    def spy_close(db: HubDatabase) -> None:
        closed.append(db.path)
        real_close(db)

    def broken_groups(*_args: object) -> None:
        raise RuntimeError("groups broke")

    monkeypatch.setattr(HubDatabase, "close", spy_close)
    monkeypatch.setattr(server, "GroupDirectory", broken_groups)
    hub = Hub(HubConfig(listen="127.0.0.1:0", data_dir=tmp_path / "data"))
    with pytest.raises(RuntimeError, match="groups broke"):
        await hub.start()
    assert closed == [str(tmp_path / "data" / "hub.db")]
    assert hub.state is None
