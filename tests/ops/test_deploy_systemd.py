"""The systemd install, done as documented into a temporary root: the modes and owners that
`DynamicUser=yes` needs, secrets 0600, and configs that load with exactly the environment
systemd gives the services (the env file, STATE_DIRECTORY; no HOSTNAME)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from bridge.config import load_config, load_section
from bridge.hub.config import HubConfig
from tests.support.bridge_process import REPO

SYSTEMD = REPO / "deploy" / "systemd"
ETC = Path("etc/bcn-bridge")


def install(root: Path) -> str:
    done = subprocess.run(["sh", str(SYSTEMD / "install.sh"), "--root", str(root)],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def unreadable_by_a_dynamic_user(path: Path, root: Path) -> str | None:
    """Why a user that owns nothing (DynamicUser) cannot read `path`, or None."""
    if not path.stat().st_mode & stat.S_IROTH:
        return f"{path.relative_to(root)} is {oct(path.stat().st_mode & 0o777)}: not o+r"
    for folder in path.relative_to(root).parents:
        if not (root / folder).stat().st_mode & stat.S_IXOTH:
            return f"{folder} is not o+x"
    return None


def systemd_environment(root: Path, env_file: str, state_directory: str) -> dict[str, str]:
    """What a unit's process gets: its EnvironmentFile, plus what systemd sets itself."""
    text = (root / ETC / env_file).read_text(encoding="utf-8")
    values = dict(line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")
    return {**values, "STATE_DIRECTORY": state_directory}


def test_the_documented_install_gives_dynamic_user_what_it_needs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir(mode=0o755)
    install(root)
    owner = os.geteuid()
    for unit in ("bcn-hub.service", "bcn-bridge.service"):
        path = root / "etc/systemd/system" / unit
        assert path.read_bytes() == (SYSTEMD / unit).read_bytes()
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    for config in ("hub.yaml", "bridge.yaml"):
        path = root / ETC / config
        assert stat.S_IMODE(path.stat().st_mode) == 0o644 and path.stat().st_uid == owner
        assert unreadable_by_a_dynamic_user(path, root) is None
    tokens = set()
    for env in ("hub.env", "bridge.env"):
        path = root / ETC / env  # read by systemd (root) before it drops privileges
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_uid == owner
        [line] = path.read_text(encoding="utf-8").splitlines()
        assert re.fullmatch(r"BCN_LINK_TOKEN=[0-9a-f]{48}", line)
        tokens.add(line)
    assert len(tokens) == 1  # the bridge sends what the hub accepts
    # The check can fail: what the old instructions did (0640 root) is refused.
    (root / ETC / "old.yaml").write_text("x", encoding="utf-8")
    (root / ETC / "old.yaml").chmod(0o640)
    assert "not o+r" in (unreadable_by_a_dynamic_user(root / ETC / "old.yaml", root) or "")


def test_installing_again_keeps_the_configs_and_the_secret(tmp_path: Path) -> None:
    install(tmp_path)
    (tmp_path / ETC / "bridge.yaml").write_text("# edited\n", encoding="utf-8")
    before = (tmp_path / ETC / "hub.env").read_text(encoding="utf-8")
    install(tmp_path)
    assert (tmp_path / ETC / "bridge.yaml").read_text(encoding="utf-8") == "# edited\n"
    assert (tmp_path / ETC / "hub.env").read_text(encoding="utf-8") == before


def test_the_installed_configs_load_with_what_systemd_sets(tmp_path: Path) -> None:
    install(tmp_path)
    hub = load_section(tmp_path / ETC / "hub.yaml", "hub", HubConfig,
                       environ=systemd_environment(tmp_path, "hub.env", "/var/lib/bcn-hub"))
    assert str(hub.data_dir) == "/var/lib/bcn-hub" and hub.registration == "listed"
    environ = systemd_environment(tmp_path, "bridge.env", "/var/lib/bcn-bridge")
    assert "HOSTNAME" not in environ
    config = load_config(tmp_path / ETC / "bridge.yaml", environ=environ)
    assert config.bcn.token == environ["BCN_LINK_TOKEN"]
    assert config.bcn.url == "ws://127.0.0.1:8765"
    assert config.store.startswith("sqlite:////var/lib/bcn-bridge/")


@pytest.mark.parametrize("unit", ["bcn-hub.service", "bcn-bridge.service"])
def test_the_units_stop_on_a_config_error_and_run_from_the_venv(unit: str) -> None:
    text = (SYSTEMD / unit).read_text(encoding="utf-8")
    settings = dict(re.findall(r"^(\w+)=(.*)$", text, flags=re.MULTILINE))
    assert settings["RestartPreventExitStatus"] == "2"  # `cannot read config` is exit 2
    assert settings["ExecStart"].startswith("/opt/bcn-bridge/bin/bcn-bridge ")
    assert "HOSTNAME" not in text.split("[Unit]", 1)[1]
    assert "pip install -c deploy/constraints.txt ." in (SYSTEMD / "bcn-bridge.service").read_text()
    done = subprocess.run(["bcn-bridge", "run", "-c", "/nonexistent/bridge.yaml"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr  # what RestartPreventExitStatus names
