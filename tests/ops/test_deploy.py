"""deploy/: every file parses, and each is checked against what reads it — the config loader,
the Kubernetes schemas, systemd, Docker's own Dockerfile parser, the compose structure."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.config import ConfigError, load_config, load_section
from bridge.hub.config import HubConfig
from tests.support.bridge_process import REPO

DEPLOY = REPO / "deploy"
ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def required_tool(name: str) -> str:
    """The path of a tool a deploy check runs. .ci/run installs every one of them, so under
    CI a missing tool fails the check instead of skipping it."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed, but .ci/run installs it")
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return path


def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def documents(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def compose() -> dict[str, Any]:
    [spec] = documents(DEPLOY / "compose.yaml")
    return spec


def environment_for(text: str) -> dict[str, str]:
    """A value for every `${VAR}` the text uses (as the env file or Secret would give)."""
    return {name: f"value-of-{name.lower()}" for name in ENV_VAR.findall(text)}


def test_every_yaml_file_parses() -> None:
    assert len(yaml_files()) >= 12
    for path in yaml_files():
        assert documents(path), path


# ---------------------------------------------------------------------- the configs

def load_deploy_config(path: Path, text: str | None = None) -> None:
    """Load a bridge config as `bcn-bridge run` would: any problem in it fails the test."""
    if text is not None:
        path.write_text(text, encoding="utf-8")
    source = path.read_text(encoding="utf-8")
    config = load_config(path, environ=environment_for(source))
    assert config.bcn.url == "ws://hub:8765" or config.bcn.url.startswith("ws://bcn-hub")


@pytest.mark.parametrize("name", ["bridge-web.yaml", "bridge.yaml", "single.yaml"])
def test_the_bridge_configs_load(name: str) -> None:
    load_deploy_config(DEPLOY / "config" / name)


def test_scaled_instances_share_redis_and_name_their_links_apart() -> None:
    for name in ("bridge-web.yaml", "bridge.yaml"):
        [config] = documents(DEPLOY / "config" / name)
        assert re.fullmatch(r"redis://[a-z-]+:6379/\d+", config["store"])
        assert config["bcn"]["link_name"] == "${HOSTNAME}"
        assert config["bcn"]["token"] == "${BCN_LINK_TOKEN}"
    [single] = documents(DEPLOY / "config" / "single.yaml")
    assert single["store"].startswith("sqlite:////var/lib/bcn-bridge/")


def test_the_hub_configs_load() -> None:
    path = DEPLOY / "config" / "hub.yaml"
    environ = environment_for(path.read_text())
    del environ["STATE_DIRECTORY"]
    hub = load_section(path, "hub", HubConfig, environ=environ)
    assert hub.listen == "0.0.0.0:8765" and [g.id for g in hub.groups] == ["demo"]
    assert hub.registration == "listed"  # /ws/bot registers only Echo and Rules
    assert str(hub.data_dir) == "/var/lib/bcn-bridge/hub"  # no STATE_DIRECTORY: the image's
    hub = load_section(path, "hub", HubConfig,
                       environ={**environ, "STATE_DIRECTORY": "/var/lib/bcn-hub"})
    assert str(hub.data_dir) == "/var/lib/bcn-hub"


def test_the_example_secrets_are_refused_by_name() -> None:
    """Starting with deploy/bcn.env.example copied but not filled in fails, naming the variable."""
    example = (DEPLOY / "bcn.env.example").read_text(encoding="utf-8")
    environ = dict(line.split("=", 1) for line in example.splitlines()
                   if line and not line.startswith("#"))
    assert "BCN_LINK_TOKEN" in environ
    for path in (DEPLOY / "config" / "bridge-web.yaml", DEPLOY / "config" / "hub.yaml"):
        full = {**environment_for(path.read_text(encoding="utf-8")), **environ}
        with pytest.raises(ConfigError, match="BCN_LINK_TOKEN still holds the example's "
                                              "placeholder"):
            if path.name == "hub.yaml":
                load_section(path, "hub", HubConfig, environ=full)
            else:
                load_config(path, environ=full)


# ---------------------------------------------------------------------- compose

SERVICE_KEYS = {
    "image", "build", "command", "environment", "volumes", "ports", "depends_on",
    "healthcheck", "restart", "hostname", "profiles", "read_only", "tmpfs", "cap_drop",
    "security_opt", "mem_limit", "logging", "user",
}
PLATFORM_TOKENS = {"TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "SLACK_BOT_TOKEN",
                   "SLACK_APP_TOKEN"}


def test_compose_services_healthchecks_and_order() -> None:
    spec = compose()
    assert "name" not in spec  # Compose v1 (Debian 12's 1.29.2) rejects the key
    assert set(spec) <= {"services", "volumes", "x-bcn", "x-bridge-env"}
    services = spec["services"]
    assert set(services) == {"redis", "hub", "bridge-1", "bridge-2", "bridge-single",
                             "echo", "rules"}
    for name, service in services.items():
        assert set(service) <= SERVICE_KEYS, (name, set(service) - SERVICE_KEYS)
        assert service["restart"] == "unless-stopped", name
        assert "image" in service, name
        check = service.get("healthcheck")
        if name in ("echo", "rules"):
            assert check == {"disable": True}  # no HTTP port to ask
        elif name == "redis":
            assert check["test"][0] == "CMD" and {"interval", "timeout", "retries"} <= set(check)
        else:  # the image's HEALTHCHECK, asking $BCN_HEALTH_URL: defined once
            assert check is None, name
        for needed, condition in (service.get("depends_on") or {}).items():
            assert needed in services and condition == {"condition": "service_healthy"}
            assert "disable" not in (services[needed].get("healthcheck") or {}), needed
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (DEPLOY / source).is_file(), volume
            else:
                assert source in spec["volumes"], volume
    bridges = ("bridge-1", "bridge-2")
    assert services["bridge-1"]["hostname"] != services["bridge-2"]["hostname"]
    assert all(services[b]["depends_on"].keys() == {"redis", "hub"} for b in bridges)
    assert services["bridge-single"]["profiles"] == ["single"]
    assert "redis" not in services["bridge-single"]["depends_on"]
    assert all("profiles" not in services[n] for n in services if n != "bridge-single")
    ports = [port.rsplit(":", 2)[-2] for s in services.values() for port in s.get("ports", [])]
    assert len(ports) == len(set(ports))
    assert services["hub"]["environment"]["BCN_HEALTH_URL"].endswith(":8765/healthz")


def test_compose_services_are_locked_down_and_bounded() -> None:
    for name, service in compose()["services"].items():
        assert service["read_only"] is True, name
        assert service["cap_drop"] == ["ALL"], name
        assert service["security_opt"] == ["no-new-privileges:true"], name
        assert re.fullmatch(r"\d+m", service["mem_limit"]), name
        assert service["logging"]["options"]["max-size"] and \
            service["logging"]["options"]["max-file"], name
        assert "volumes" in service or "/tmp" in service.get("tmpfs", []), name
    redis = compose()["services"]["redis"]
    assert "--maxmemory" in redis["command"] and redis["user"] == "redis"


def test_compose_gives_each_service_only_its_own_secrets() -> None:
    services = compose()["services"]
    assert all("env_file" not in service for service in services.values())
    assert set(services["hub"]["environment"]) == {"BCN_LINK_TOKEN", "BCN_HEALTH_URL"}
    for bridge in ("bridge-1", "bridge-2", "bridge-single"):
        assert set(services[bridge]["environment"]) == {"BCN_LINK_TOKEN"} | PLATFORM_TOKENS
    for other in ("redis", "echo", "rules"):
        assert "environment" not in services[other], other
    example = (DEPLOY / "bcn.env.example").read_text(encoding="utf-8")
    assert "BCN_LINK_TOKEN=" in example
    assert "bcn.env" in (REPO / ".gitignore").read_text(encoding="utf-8")  # never committed
    # Every variable the bridge configs read, a bridge is given (HOSTNAME: Docker sets it).
    for name in ("bridge-web.yaml", "bridge.yaml", "single.yaml"):
        text = (DEPLOY / "config" / name).read_text(encoding="utf-8")
        used = set(ENV_VAR.findall(text)) - {"HOSTNAME"}
        assert used <= set(services["bridge-1"]["environment"]), name


def test_compose_matches_the_compose_specification() -> None:
    """The Compose Specification's own JSON schema (deploy/tools/compose-spec.json, from
    github.com/compose-spec/compose-spec, Apache-2.0), as `docker compose` checks a file."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DEPLOY / "tools" / "compose-spec.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)  # what its $schema names
    validator.validate(compose())
    broken = copy.deepcopy(compose())
    broken["services"]["hub"]["read_onyl"] = True  # the check can fail
    with pytest.raises(jsonschema.ValidationError, match="read_onyl"):
        validator.validate(broken)


def docker_compose_config(*args: str, env_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker-compose", "-f", str(DEPLOY / "compose.yaml"), "--env-file", str(env_file),
         *args, "config"], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_compose_v1_accepts_the_file(tmp_path: Path) -> None:
    """Debian 12's docker-compose 1.29.2 (`apt-get install docker-compose`) reads the file as
    written: `config` needs no engine."""
    required_tool("docker-compose")
    env_file = tmp_path / "bcn.env"
    env_file.write_text("BCN_LINK_TOKEN=0123456789abcdef0123\n", encoding="utf-8")
    done = docker_compose_config("--profile", "single", env_file=env_file)
    assert done.returncode == 0, done.stderr
    rendered = yaml.safe_load(done.stdout)
    assert set(rendered["services"]) == set(compose()["services"])
    assert rendered["services"]["hub"]["environment"]["BCN_LINK_TOKEN"] == "0123456789abcdef0123"
    # The check can fail: without the link token, compose itself refuses and says where.
    env_file.write_text("", encoding="utf-8")
    done = docker_compose_config(env_file=env_file)
    assert done.returncode != 0 and "set BCN_LINK_TOKEN in deploy/bcn.env" in done.stderr


def test_the_single_profile_command_in_the_docs_starts_one_bridge(tmp_path: Path) -> None:
    """README and docs/operations.md name the services: `--profile single up` alone would
    start the default services as well."""
    command = ("--profile single up -d --build hub echo rules bridge-single")
    for doc in (REPO / "README.md", REPO / "docs" / "operations.md"):
        text = " ".join(doc.read_text(encoding="utf-8").replace("\\\n", " ").split())
        assert command in text, doc
    started = {"hub", "echo", "rules", "bridge-single"}
    services = compose()["services"]
    needed = set(started)
    for name in started:
        needed |= set(services[name].get("depends_on") or {})
    assert needed == started  # nothing else comes up through depends_on


# ---------------------------------------------------------------------- systemd

@pytest.mark.parametrize("unit", ["bcn-hub.service", "bcn-bridge.service"])
def test_systemd_units_are_hardened(unit: str) -> None:
    text = (DEPLOY / "systemd" / unit).read_text(encoding="utf-8")
    settings = dict(re.findall(r"^(\w+)=(.*)$", text, flags=re.MULTILINE))
    command = "hub" if unit == "bcn-hub.service" else "run"
    assert settings["ExecStart"].startswith(f"/opt/bcn-bridge/bin/bcn-bridge {command} -c /etc/")
    assert settings["DynamicUser"] == "yes" and settings["ProtectSystem"] == "strict"
    assert settings["StateDirectory"] and settings["Restart"] == "on-failure"
    assert settings["NoNewPrivileges"] == "yes" and settings["EnvironmentFile"]


@pytest.mark.parametrize("unit", ["bcn-hub.service", "bcn-bridge.service"])
def test_systemd_accepts_the_units(unit: str, tmp_path: Path) -> None:
    analyze, script = required_tool("systemd-analyze"), required_tool("bcn-bridge")
    text = (DEPLOY / "systemd" / unit).read_text(encoding="utf-8")
    (tmp_path / unit).write_text(text.replace("/opt/bcn-bridge/bin/bcn-bridge", script))
    (tmp_path / "bogus.service").write_text("[Service]\nExecStart=/bin/true\nBogusKey=1\n")

    def verify(name: str) -> str:
        done = subprocess.run([analyze, "verify", str(tmp_path / name)], capture_output=True,
                              text=True, timeout=60)
        return done.stdout + done.stderr

    assert "Unknown key" in verify("bogus.service")  # the check can fail
    assert verify(unit) == ""


# ---------------------------------------------------------------------- the image

def dockerfile() -> list[Any]:
    parser = pytest.importorskip("dockerfile")  # Docker's own (Go) Dockerfile parser
    return list(parser.parse_file(str(DEPLOY / "Dockerfile")))


def test_the_dockerfile_is_multi_stage_non_root_and_checks_health() -> None:
    commands = dockerfile()
    stages = [i for i, c in enumerate(commands) if c.cmd.upper() == "FROM"]
    assert len(stages) >= 2
    final = commands[stages[-1]:]
    by_kind: dict[str, list[Any]] = {}
    for command in final:
        by_kind.setdefault(command.cmd.upper(), []).append(command)
    assert "slim" in final[0].value[0]
    [user] = by_kind["USER"]
    assert user.value[0].split(":")[0] not in ("root", "0")
    [check] = by_kind["HEALTHCHECK"]
    assert "BCN_HEALTH_URL" in check.original and any("--interval" in f for f in check.flags)
    assert "/healthz" in " ".join(c.original for c in by_kind["ENV"])
    assert "VOLUME" not in by_kind  # compose and Kubernetes name the volumes; no anonymous ones
    assert by_kind["ENTRYPOINT"][0].value == ("bcn-bridge",)
    for command in commands:
        if command.cmd.upper() == "COPY" and not any(f.startswith("--from") for f in command.flags):
            for source in command.value[:-1]:
                assert (REPO / source).exists(), source


def test_the_dockerfile_needs_no_frontend_image_and_ignores_caches() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert not re.search(r"^#\s*syntax\s*=", text, flags=re.MULTILINE)  # BuildKit would pull it
    assert not (DEPLOY / "Dockerfile.dockerignore").exists()  # read by BuildKit only
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").split()
    assert {"**/__pycache__", "**/*.pyc", "tests", ".git"} <= set(ignored)
    assert "deploy" in ignored and "!deploy/constraints.txt" in ignored
    assert re.search(r"pip wheel .*-c constraints\.txt", text)
    assert re.search(r"pip install .*-c /tmp/constraints\.txt", text)


def test_the_constraints_pin_every_runtime_dependency() -> None:
    sys.path.insert(0, str(DEPLOY / "tools"))
    try:
        import constraints
    finally:
        sys.path.remove(str(DEPLOY / "tools"))
    text = (DEPLOY / "constraints.txt").read_text(encoding="utf-8")
    assert constraints.problems(text) == [], "regenerate: python deploy/tools/constraints.py"
    pins = constraints.read_pins(text)
    assert {"aiohttp", "redis", "pydantic", "python-telegram-bot", "mautrix"} <= set(pins)
    assert all(re.fullmatch(r"\d+(\.\d+)*\w*", version) for version in pins.values())
    # The check can fail: a missing pin and a pin outside the pyproject's range are named.
    stale = re.sub(r"(?m)^aiohttp==.*$", "", text).replace(
        "python-telegram-bot==", "python-telegram-bot==21.0#")
    found = constraints.problems(stale)
    assert "aiohttp is not pinned" in found
    assert any(p.startswith("python-telegram-bot==21.0 is outside") for p in found)


def test_docker_builds_the_image() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("the docker CLI is not installed")
    info = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        pytest.skip("no Docker engine answers `docker info` here, so the image cannot be built")
    done = subprocess.run(
        [docker, "build", "-f", str(DEPLOY / "Dockerfile"), "-t", "bcn-bridge:test", str(REPO)],
        capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    version = subprocess.run([docker, "run", "--rm", "bcn-bridge:test", "--version"],
                             capture_output=True, text=True, timeout=120)
    assert version.stdout.startswith("bcn-bridge ")
