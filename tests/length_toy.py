"""The toy env scored by reply length (``affectgym-test/LengthToy-v0``): a tiny random model's samples differ in it,
so the tests of sampling trainers (DPO's pairs, SFT's best-of) always have a best and a worst reply."""

from __future__ import annotations

import gymnasium as gym
import toy_env

from affectgym.rewards.rubric import Criterion, Rubric

LENGTH_ID = "affectgym-test/LengthToy-v0"


class LengthToy(toy_env.ToyMoodEnv):
    """``ToyMoodEnv`` whose reward is the reply's length in characters / 100."""

    def __init__(self, **kwargs):
        super().__init__(rubric=Rubric([Criterion("length", lambda scenario, reply, trace: len(reply.text or "") / 100)]),
                         **kwargs)


if LENGTH_ID not in gym.registry:
    gym.register(id=LENGTH_ID, entry_point=LengthToy)
