"""OpenEnv 0.10's Task API on ``affectgym serve``: the served split's scenarios are its tasks, and
``reset(split=, index=)`` plays one, as OpenEnv's own client drives it."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from typing import Any

import pytest
from served_env import ServedEnv, needs_openenv
from test_serve import PROSODY_CALL, SARCASM, play

import affectgym

pytestmark = needs_openenv

NAME = "affectgym-sarcasm-v0"
FINAL = '<final>{"label": "sincere", "confidence": 0.6}</final>'


@pytest.fixture(scope="module")
def served():
    with ServedEnv(SARCASM, {"split": "eval"}, max_sessions=4) as served:
        yield served


@pytest.fixture(scope="module")
def eval_ids() -> list[str]:
    env = affectgym.make(SARCASM, split="eval")
    yield list(env.unwrapped.scenario_ids)
    env.close()


def request(served: ServedEnv, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(served.url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(call, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_task_api_lists_the_served_split_whose_tasks_are_its_scenarios_in_order(served, eval_ids):
    assert request(served, "/list_environments") == (200, [NAME])
    assert request(served, f"/{NAME}/splits") == (200, [{"name": "eval", "type": "test"}])
    assert request(served, f"/{NAME}/num_tasks", {"split": "eval"}) == (200, {"num_tasks": len(eval_ids)})
    status, listed = request(served, f"/{NAME}/tasks", {"split": "eval"})
    assert status == 200 and [task["id"] for task in listed["tasks"]] == eval_ids
    assert listed["tasks"][2] == {"id": eval_ids[2], "index": 2, "split": "eval"}, "a task carries no gold label"
    assert request(served, f"/{NAME}/task_range", {"split": "eval", "start": 1, "stop": 3})[1]["tasks"] == listed["tasks"][1:3]


def test_a_split_not_served_has_no_tasks_and_an_index_out_of_range_is_a_bad_request(served, eval_ids):
    assert request(served, f"/{NAME}/num_tasks", {"split": "train"}) == (200, {"num_tasks": 0})
    assert request(served, f"/{NAME}/tasks", {"split": "train"}) == (200, {"tasks": [], "env_name": NAME})
    assert request(served, f"/{NAME}/task", {"split": "eval", "index": len(eval_ids)})[0] == 400
    assert request(served, "/affectgym/Sarcasm-v0/splits")[0] == 404


def test_openenvs_client_resets_on_a_task_by_split_and_index_for_the_in_process_reward(served, eval_ids):
    from openenv.core import GenericEnvClient

    local = affectgym.make(SARCASM, split="eval")
    local_reward, local_info, _ = play(local, eval_ids[5], [PROSODY_CALL, FINAL])
    local.close()
    with GenericEnvClient(base_url=served.url) as client:
        first = client.reset(seed=0, split="eval", index=5)
        assert first.observation["scenario_id"] == eval_ids[5]
        results = [client.step({"message": action}) for action in (PROSODY_CALL, FINAL)]
    assert math.fsum(result.reward for result in results) == local_reward
    assert results[-1].observation["outcome"] == local_info["outcome"]


@pytest.mark.parametrize(("reset", "message"), [
    ({"split": "train", "index": 0}, "serves the 'eval' split only, not 'train'"),
    ({"split": "eval", "index": 10_000}, "index must be an int from 0 to"),
    ({"split": "eval", "index": "3"}, "got '3'"),
    ({"split": "eval", "index": 3, "options": {"scenario_id": "sc0001"}}, "the task's index or a scenario option, not both"),
])
def test_a_task_reset_the_server_cannot_play_is_refused_naming_what_it_accepts(served, reset, message):
    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url=served.url) as client, pytest.raises(RuntimeError, match=message):
        client.reset(seed=0, **reset)
