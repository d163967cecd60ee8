"""A served env's reward as OpenEnv 0.10's rubric tree (RFC 004): one child per named component of
the env's rubric, each holding its part of the last step's reward."""

from __future__ import annotations

from served_env import needs_openenv
from test_serve import PROSODY_CALL, SARCASM, play

import affectgym

pytestmark = needs_openenv

FINAL = '<final>{"label": "sarcastic", "confidence": 0.8}</final>'


def test_the_rubric_tree_names_each_component_and_scores_the_last_step_as_the_env_in_process():
    from affectgym.integrations.openenv.environment import environment_factory
    from affectgym.integrations.openenv.models import AffectAction

    local = affectgym.make(SARCASM, split="eval")
    ids, weights = local.unwrapped.scenario_ids, local.unwrapped.rubric.weights
    reward, info, _ = play(local, ids[3], [PROSODY_CALL, FINAL])
    local.close()
    served = environment_factory(SARCASM, {"split": "eval"}, split="eval", scenario_ids=ids, components=list(weights))()
    served.reset(seed=0, index=3)
    served.step(AffectAction(message=PROSODY_CALL))
    assert all(child.last_score is None for child in served.rubric.components.children()), "no answer scored yet"
    last = served.step(AffectAction(message=FINAL))
    scores = {name.removeprefix("components."): rubric.last_score for name, rubric in served.rubric.named_rubrics()
              if name.startswith("components.")}
    assert scores == info["reward_components"] == last.reward_components and set(scores) == set(weights)
    assert served.rubric.last_score == last.reward
    served.close()
