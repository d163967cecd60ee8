"""The env image (``deploy/``): its entry command run on the host, and its Dockerfile and manifests linted.

Docker is not running here, so the image is never built: the entry command
(``deploy/serve.sh``) and the health check the image and the manifests use run on the host with
the environment the image sets, the Dockerfile is linted with hadolint and the Kubernetes
manifests are validated against the Kubernetes 1.37 schemas.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from served_env import free_port, needs_openenv, wait_until_healthy

from affectgym.eval import EvalConfig, run_eval

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
BIN = Path(sys.executable).parent
SARCASM = "affectgym/Sarcasm-v0"


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (make setup installs it with the dev extras)")
    return found


def entry_variables(**settings: str) -> dict[str, str]:
    """The environment the image gives its entry command, bound to this machine only."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "AFFECTGYM_HOST": "127.0.0.1",
            "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **settings}


@needs_openenv
def test_the_entry_command_serves_the_env_its_variables_name_and_plays_as_in_process(tmp_path):
    port = free_port()
    variables = entry_variables(AFFECTGYM_ENV_ID=SARCASM, AFFECTGYM_SPLIT="eval", PORT=str(port),
                                AFFECTGYM_MAX_SESSIONS="4", AFFECTGYM_ENV_KWARGS='{"max_turns": 4}')
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        process = subprocess.Popen([str(DEPLOY / "serve.sh")], stdout=output, stderr=subprocess.STDOUT, env=variables)
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process=process, log=log)
        health = subprocess.run([sys.executable, str(DEPLOY / "healthcheck.py")], env=variables, capture_output=True, timeout=60)
        assert health.returncode == 0, health.stderr
        config = {"env_id": SARCASM, "agent": "prosody-rule", "n": 4, "split": "eval", "progress": False}
        served = run_eval(EvalConfig(**config, out=tmp_path / "served", env_url=f"ws://127.0.0.1:{port}"))
        local = run_eval(EvalConfig(**config, out=tmp_path / "local", env_kwargs={"max_turns": 4}))
        assert served.summary["reward"] == local.summary["reward"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    unhealthy = subprocess.run([sys.executable, str(DEPLOY / "healthcheck.py")], env=variables, capture_output=True, timeout=60)
    assert unhealthy.returncode == 1 and b"unhealthy" in unhealthy.stderr


def test_the_entry_command_without_an_env_id_exits_naming_the_variable():
    variables = entry_variables()
    variables.pop("AFFECTGYM_ENV_ID", None)
    run = subprocess.run([str(DEPLOY / "serve.sh")], env=variables, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "set AFFECTGYM_ENV_ID" in run.stderr


@needs_openenv
def test_the_entry_command_passes_a_bad_setting_to_serve_which_refuses_it_by_name():
    variables = entry_variables(AFFECTGYM_ENV_ID=SARCASM, AFFECTGYM_MAX_SESSIONS="many")
    run = subprocess.run([str(DEPLOY / "serve.sh")], env=variables, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--max-sessions" in run.stderr


def test_the_dockerfile_passes_hadolint():
    run = subprocess.run([tool("hadolint"), str(DEPLOY / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_kubernetes_manifests_are_valid_kubernetes_resources():
    manifests = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
    run = subprocess.run([tool("kubernetes-validate"), "--strict", *map(str, manifests)], capture_output=True, text=True,
                         timeout=120)
    assert manifests and run.returncode == 0, run.stdout + run.stderr


def test_every_setting_the_manifests_give_is_one_the_entry_command_reads_and_probes_ask_for_health():
    read = {line.split()[1] for line in (DEPLOY / "serve.sh").read_text().splitlines() if line.startswith("#   ")}
    deployment, service = yaml.safe_load_all((DEPLOY / "kubernetes" / "sarcasm.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert {variable["name"] for variable in container["env"]} <= read
    assert container["readinessProbe"]["httpGet"]["path"] == container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, replica in compose["services"].items():
        assert set(replica["environment"]) | set(replica["build"]["args"]) <= read, name
        assert replica["healthcheck"]["test"][-1] == "/opt/affectgym/deploy/healthcheck.py"
    assert len({replica["ports"][0] for replica in compose["services"].values()}) == len(compose["services"]) == 3
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY deploy/serve.sh deploy/healthcheck.py ./deploy/" in dockerfile and "WORKDIR /opt/affectgym" in dockerfile
    assert 'CMD ["python", "/opt/affectgym/deploy/healthcheck.py"]' in dockerfile
