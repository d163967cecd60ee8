"""affectgym/Sarcasm-v0: hear sarcasm in the delivery of a line, with transcript and prosody tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from affectgym.data.speech_splits import LeaveOneGroupOut
from affectgym.envs.speech_emotion import SpeechEmotionEnv

SPEAKER_INDEPENDENT_TEST_SHOW = "FRIENDS"  # MUStARD's speaker-independent setup tests on FRIENDS
#: MUStARD's speaker-independent split: test on FRIENDS, train on the other shows.
SPEAKER_INDEPENDENT = LeaveOneGroupOut("show", SPEAKER_INDEPENDENT_TEST_SHOW)


class SarcasmEnv(SpeechEmotionEnv):
    """Decide whether a spoken line is sarcastic or sincere, where the delivery can flip the words.

    ## Description
    The flagship task of affectgym, after Subtext Arena: a line of dialogue (with the lines
    before it) is either sarcastic or sincere. Many lines are *pivots*: their words are
    ambiguous ("Oh, great.") and only the delivery decides — a wide pitch range, a slower
    rate, a pause before and emphasis on the key phrase. The agent cannot hear the clip; it
    calls tools that read the transcript and measure the prosody, then commits to a label
    and a confidence. Everything else (action format, tools, step rewards) is
    :class:`~affectgym.envs.speech_emotion.SpeechEmotionEnv`'s.

    ## Action Space
    Text: ``<tool_call>{"name": "get_prosody_features", "arguments": {}}</tool_call>`` or
    ``<final>{"label": "sarcastic" | "sincere", "confidence": 0..1}</final>``. An answer
    after tool calls in the same message is not read: the tools run and the message costs
    the invalid-action penalty (see :mod:`affectgym.envs.core`).

    ## Observation Space
    Text: the task, then each tool's output (``get_transcript``, ``get_prosody_features``,
    ``get_pitch_contour``; on clips without audio the audio tools say so plainly).

    ## Rewards
    The rubric the env is composed with (:mod:`affectgym.envs.speech_rubrics`): ``"multi"``
    (the default): 0.50 confidence-weighted correctness + 0.25 prosody grounding (0 on pivot
    clips when no audio tool was called, 0.4 on other clips) + 0.15 tool parsimony (1 for
    1-3 calls, 0.6 for 4-5, 0 for 6; at most 6 calls) + 0.10 format; ``"single"``
    (flattened single-shot training): 0.80 correctness + 0.20 format, grounded reasoning
    (50-150 words citing the audio tools' measurements) logged at weight 0; ``"label"`` (short answers); or any ``Rubric``. Weights are
    overridable with ``reward_weights``.

    ## Starting State
    A clip of the split, drawn with ``np_random`` (or ``options={"scenario_id": id}``).

    ## Episode End
    Terminates on a valid final answer; truncates after ``max_turns`` messages.

    ## Arguments
    ``dataset``: ``"embedded"`` (default: 120+ lines rendered sincere and sarcastic with
    espeak-ng, shipped in the package), ``"mustard"`` with ``data_dir=DIR`` holding
    ``DIR/sarcasm_data.json`` in MUStARD's format (audio from ``DIR/audio/<id>.<ext>`` or
    ``DIR/utterances_final/<id>.mp4`` when present), or ``"hub"`` (downloads MUStARD; fails
    with one line naming ``data_dir`` when offline).
    ``split``: ``"train"`` / ``"validation"`` / ``"eval"`` / ``"all"`` (stable 70/10/20 hash
    split by line: both deliveries of a pivot line are held out together, so eval and
    validation keep their pivot pairs and no held-out line is heard in train; validation was
    carved from train, so eval is as before; ``group_by`` changes the grouping),
    ``mustard_fold(k)`` or ``mustard_fold(k, part="train")`` (MUStARD's speaker-dependent
    fold k = 1..5, its test part by default; needs ``DIR/split_indices.json``),
    ``SPEAKER_INDEPENDENT`` or ``SPEAKER_INDEPENDENT.with_part("train")`` (test on FRIENDS,
    train on the other shows), or any split object of :mod:`affectgym.data.speech_splits`.
    Plus every argument of ``SpeechEmotionEnv`` (``task_format``, ``rubric``, ``reward_weights``,
    ``max_tool_calls``, ``prosody_backend``, ``norms``, ``on_bad_clip``, ``max_turns``, ...).

    ```python
    import affectgym
    env = affectgym.make("affectgym/Sarcasm-v0", split="eval")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(
        '<tool_call>{"name": "get_pitch_contour", "arguments": {}}</tool_call>')
    ```

    ## Version History
    * v0: initial version.
    """

    #: The LLM-free agent ``affectgym eval --agent baseline`` plays: thresholds on the prosody tool's numbers.
    recommended_baseline = "prosody-rule"

    task = "Decide whether the spoken line is sarcastic or sincere; the delivery can flip the literal words."
    #: ``dataset="embedded"`` is the shipped sarcasm corpus, ``"hub"`` MUStARD from the hub.
    dataset_aliases: ClassVar[Mapping[str, str]] = {"embedded": "embedded-sarcasm", "hub": "mustard-hub"}


__all__ = ["SPEAKER_INDEPENDENT", "SarcasmEnv"]
