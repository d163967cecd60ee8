"""affectgym/EmpatheticDialogue-v0: hold an emotionally structured dialogue, one tagged turn at a time."""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from affectgym.data.dialogues import (
    EMOTION_OF_LABEL,
    HUB_DATASET,
    Dialogue,
    DialogueTurn,
    load_dialogues,
    normalise_text,
    split_dialogues,
    split_tagged,
)
from affectgym.envs.core import AffectEnv, Continue, Trace, count_invalid_actions
from affectgym.envs.dialogue_criteria import (
    FAR_OFF_LENGTH_CAP,
    earlier_turns,
    emotion_unreadable,
    length_credit,
    listened_sentences,
    open_question,
    relevance,
    render_history,
    reply_length,
    reply_listening,
    reply_turn,
    said_pieces,
    sentence_listening_credit,
    shows_not_tells,
    structure,
    tag_correctness,
    user_said,
    user_words,
)
from affectgym.envs.dialogue_format import DIALOGUE_FORMATS, DialogueFormat
from affectgym.envs.dialogue_parsing import (
    ChatbotReply,
    ChatbotTurn,
    chatbot_reply,
    count_words,
    parse_chatbot_turn,
    question_kind,
    read_chatbot_reply,
    tells_emotion,
)
from affectgym.envs.task_format import coerce_task_format
from affectgym.rewards.classifier import EmotionClassifier, MemoisedClassifier
from affectgym.rewards.factories import make_classifier, make_judge
from affectgym.rewards.judge import EmpathyJudge
from affectgym.rewards.relevance import ConditionalRelevance
from affectgym.rewards.rubric import Cap, Criterion, Reply, Rubric, RubricResult, Unscored

log = logging.getLogger(__name__)

EMOTION_CACHE_SIZE = 100_000  # classified sentences remembered per env
#: The language model that reads whether a reply listens (``relevance_model``): the offline SmolLM2-135M-Instruct.
RELEVANCE_MODEL = "smollm2-135m"
#: What other users said, written for the project (no dialogue of the dataset tells these stories): the listening
#: model reads a sentence after the user's words and after these, and credits only what it expects more after the
#: user's. One glad, one worried, one plain: a sentence that would follow any story gains nothing.
LISTENING_CONTRASTS = (
    "My sister got married last weekend and the whole family came to the wedding.",
    "Our landlord says we have to move out by the end of the month.",
    "I spent the whole afternoon fixing the fence in the back garden.",
)

EMOTION_SLOT_FLOOR = 0.3  # P(tag) / max P below which a sentence in an emotion slot reads as neutral (or as another emotion)

DEFAULT_REWARD_WEIGHTS: Mapping[str, float] = {
    "structure": 0.10,
    "tags": 0.10,
    "expressed_emotion": 0.30,
    "shows_not_tells": 0.05,
    "length": 0.05,
    "open_question": 0.20,
    "relevance": 0.20,
}
"""Weights of the per-turn rubric (they sum to 1); the judge's ``empathy`` is added on top."""


# ----------------------------------------------------------------------------- canary material
# Sentences that carry one emotion without naming it, for canaries and the fallback reference.
_SHOWN: Mapping[str, str] = {
    "ANGER": "This is completely unacceptable and they owe you better!",
    "FEAR": "Walking alone down that dark road at midnight, shivers.",
    "SADNESS": "Losing him after all those years leaves an empty chair.",
    "DISGUST": "Ugh, mouldy leftovers crawling with maggots, yuck, gross.",
    "HAPPINESS": "What wonderful news, congratulations, this is brilliant!",
    "SURPRISE": "Wait, really, no way, I never saw that coming!",
    "NEUTRAL": "The report lists the meeting times for next week.",
}
_GENERIC_QUESTION = "What happened after that?"
_OFF_EMOTION_QUESTION = "Why on earth would anyone be so stupid and careless?"
_NAMED: Mapping[str, str] = {
    "ANGER": "angry",
    "FEAR": "afraid",
    "SADNESS": "sad",
    "DISGUST": "disgusted",
    "HAPPINESS": "happy",
    "SURPRISE": "surprised",
    "NEUTRAL": "neutral",
}


def slot_emotion_credit(sentence: str, tag: str, distribution: Mapping[str, float]) -> float:
    """The expressed-emotion credit of one tagged sentence, from the classifier's reading of it alone.

    ``P(tag) / max P``; 0 when the sentence names its emotion instead of showing it; in an
    emotion slot (any tag but NEUTRAL) also 0 for a question and for a sentence whose credit
    is below ``EMOTION_SLOT_FLOOR`` (it reads as neutral, or as another emotion).

    >>> reading = {"neutral": 0.5, "fear": 0.09, "surprise": 0.25, "joy": 0.16}
    >>> slot_emotion_credit("Hearing footsteps in the attic at night is a common noise.", "FEAR", reading)
    0.0
    >>> slot_emotion_credit("The attic is a quiet place.", "NEUTRAL", reading)
    1.0
    >>> slot_emotion_credit("Did you hear footsteps up there?", "FEAR", {"fear": 0.6, "neutral": 0.4})
    0.0
    >>> round(slot_emotion_credit("Footsteps overhead chill the bone.", "FEAR", {"fear": 0.3, "neutral": 0.5, "joy": 0.2}), 3)
    0.6
    """
    if tells_emotion(sentence, tag):
        return 0.0
    credit = distribution.get(EMOTION_OF_LABEL[tag], 0.0) / max(distribution.values())
    if tag != "NEUTRAL" and (question_kind(sentence) != "not_a_question" or credit < EMOTION_SLOT_FLOOR):
        return 0.0
    return credit


# ----------------------------------------------------------------------------- the env
#: Plays the user: the chat of :func:`user_simulator_messages` in, the user's next line out.
UserSimulator = Callable[[list[dict[str, str]]], str]


def user_simulator_messages(history: Sequence[tuple[str, str]], emotion: str) -> list[dict[str, str]]:
    """The chat a user simulator answers: one user message asking for the human's next line.

    Args:
        history: The (user line, chatbot reply) pairs so far.
        emotion: The emotion the dialogue's arc gives the user's next turn, e.g. ``"SADNESS"``.

    >>> user_simulator_messages([("(FEAR) A storm is coming.", "(FEAR) Stay inside.")], "SADNESS")[0]["content"].splitlines()[-2:]
    ['Human: (FEAR) A storm is coming.', 'Chatbot: (FEAR) Stay inside.']
    """
    prompt = (
        "You play the human in a conversation with a chatbot. Write only your next line: one or two "
        f"sentences that sound {emotion.lower()}, continuing the conversation naturally.\n\n{render_history(history)}"
    )
    return [{"role": "user", "content": prompt}]


def not_listening_replies(turn: DialogueTurn) -> dict[str, str]:
    """Replies that ignore the user: the content-free template, the same template opened by an echo,
    and the template carrying the user's words.

    The template is the env's stock sentence for each required tag, then "What happened
    after that?"; before the relevance term it beat the dataset's reply on 24 of the 27 eval
    turns. With the user's first two content words put in its question, it scored at least the
    reply on 79 of the 95 train turns while shared words counted as listening (4 since).

    >>> turn = DialogueTurn("d/t0", "d", 0, 1, "SADNESS", "My novel got rejected.", "NEUTRAL")
    >>> not_listening_replies(turn)["echoes_the_user"]
    '(SADNESS) My novel got rejected. (NEUTRAL) The report lists the meeting times for next week. (NEUTRAL) What happened after that?'
    >>> not_listening_replies(turn)["template_with_user_words"].split(") ")[-1]
    'What happened with the novel and the got after that?'
    """
    user_tag, target, neutral = turn.required_tags
    words = " and the ".join(user_words(turn)[:2]) or "day"
    return {
        "content_free_template": f"({user_tag}) {_SHOWN[user_tag]} ({target}) {_SHOWN[target]} ({neutral}) {_GENERIC_QUESTION}",
        "echoes_the_user": f"({user_tag}) {turn.user_text} ({target}) {_SHOWN[target]} ({neutral}) {_GENERIC_QUESTION}",
        "template_with_user_words": f"({user_tag}) {_SHOWN[user_tag]} ({target}) {_SHOWN[target]} "
                                    f"({neutral}) What happened with the {words} after that?",
    }


class DialogueEnv(AffectEnv):
    """Hold an emotionally structured dialogue: every chatbot turn is three tagged sentences.

    ## Description
    An episode is a dialogue of several user turns (emotional-RLAIF style). Each user turn
    carries its emotion tag, e.g. ``(SADNESS) Not yet, the results come on Friday.``. The
    agent answers every turn with one chatbot turn of three tagged sentences::

        (USER_EMOTION) empathy sentence. (REQUESTED_EMOTION) emotional sentence. (NEUTRAL) open question?

    Sentence 1 mirrors the user's emotion, sentence 2 carries the emotion the env requests
    for this turn, sentence 3 is a neutral, open follow-up question (not a yes/no one); the
    three together take 20-25 words. Emotions: ANGER, FEAR, SADNESS, DISGUST, HAPPINESS,
    SURPRISE, NEUTRAL (the classifier reads HAPPINESS as ``joy``; the others are its labels
    in lower case).

    ## Action Space
    Text (``TextSpace``): the chatbot turn. Any non-empty text up to ``max_action_chars`` is
    a reply and is scored; one that does not parse earns a low structure score (the error is
    in ``info["parse_error"]``). Only empty, oversized or non-text messages are invalid.

    ## Observation Space
    Text: the user's tagged turn and the tags the reply must use. ``info["required_tags"]``
    holds them (e.g. ``["SADNESS", "HAPPINESS", "NEUTRAL"]``); ``info["messages"]`` holds
    the whole chat. There are no tools.

    ## Rewards
    Every chatbot turn is scored by one per-turn rubric, ``score(turn, reply, [])``:
    0.10 structure (three tagged non-empty sentences; else 0.5 × share of valid ones)
    + 0.10 tags (share of slots with the required tag) + 0.30 expressed emotion (each
    sentence classified alone against its slot's required tag as ``P(tag) / max P``; 0 for a
    sentence that names its emotion instead of showing it, and in an emotion slot 0 for a
    question or a sentence that reads as neutral, see :func:`slot_emotion_credit`; times the
    sentence's own listening credit when a ``relevance_model`` reads it, the question's by the
    reply's: emotion about nothing the user said is not empathy)
    + 0.05 shows-not-tells + 0.05 length (1 at 20-25 words, linear to 0 at 15 words
    outside) + 0.20 open question (1 open, 0.3 yes/no, 0 none) + 0.20 relevance (listening: the user's words taken up, not echoed,
    :func:`~affectgym.envs.dialogue_criteria.relevance`; with a ``relevance_model``, how much
    more likely what the user said, rather than what other users said, makes the reply's best
    sentence, :func:`~affectgym.envs.dialogue_criteria.sentence_listening_credit`, the question's
    counted at a quarter, :func:`~affectgym.envs.dialogue_criteria.reply_listening`), capped at 0.5 when the
    length credit is 0. With a judge, ``empathy`` (weight ``judge_weight``, 0.2) is added.
    The step reward of turn k is exactly its score; an invalid message costs
    ``invalid_action_penalty``; the last step adds ``completion_bonus`` (dialogue finished)
    or subtracts ``truncation_penalty`` (turn limit first). The return is their sum, and
    it is ``score(last turn, last reply, trace)``: the rubric adds, after the length cap,
    ``earlier_turns`` (the rewards of the trace's ``reply`` entries), ``invalid_actions``,
    ``completion_bonus`` and ``truncation_penalty``, all 0 for a turn scored on its own
    (except the bonus on a dialogue's last turn). ``info["reward_components"]`` holds the
    step's components. Each turn's reply, reference reply and required tags are in
    ``info["outcome"]["dialogue_turns"]``; ``affectgym eval`` computes BLEU-4, ROUGE-1/2/L and
    per-slot tag accuracy from them (evaluation only, see :mod:`affectgym.eval.dialogue_metrics`).

    ## Starting State
    ``env.scenarios`` are the *turns* of the split's dialogues (id ``"<dialogue>/t<k>"``):
    flattened training has one row per turn, with the history pre-rendered
    (:meth:`flat_prompt`). ``reset(seed=...)`` draws a dialogue and starts at its first turn;
    ``options={"scenario_id": "<dialogue>/t<k>"}`` starts at turn k with the dataset's
    history (its reference replies) already in ``info["messages"]``, and plays the rest of
    the dialogue; ``options={"scenario_id": "<dialogue>"}`` starts at turn 0;
    ``options={"scenario": turn_or_dialogue}`` runs a :class:`DialogueTurn` or
    :class:`Dialogue` object.

    By default the user is *scripted*: every user turn after the first is the dataset's next
    user line, whatever the agent said. The script follows the reference conversation, so
    when the agent asked something else the user does not answer it (and the reply after
    it is still compared with the reference reply). For a user that responds to the agent,
    pass ``user_simulator=``: any function of the chat, e.g. an agent wrapped by
    :func:`affectgym.agents.base.chat_function` (``affectgym eval --user-simulator SPEC``
    does this for the agent ``SPEC`` names); it writes each next line in the emotion the
    dialogue's arc gives that turn.

    ## Episode End
    Terminates after the reply to the dialogue's last turn; truncates after ``max_turns``
    agent messages (unanswered turns earn nothing). The trace holds one ``reply`` entry per
    answered turn but the last (``turn_id``, ``text``, ``reward`` and the turn's ``record``),
    the invalid messages, and a ``final`` entry when the dialogue was finished.

    ## Arguments
    ``dataset`` ("embedded" | "file" | "hub" | a name registered with
    :func:`~affectgym.data.registry.register_dataset` or the entry-point group
    ``affectgym.datasets.dialogue``, see :class:`~affectgym.data.dialogues.DialogueLoader`),
    ``data_file`` (a LLaMA-Factory JSON/JSONL file; implies "file" when ``dataset`` is left
    "embedded"; "hub" reads it as its local copy), ``hub_name``, ``split`` ("train" | "validation" | "eval" | "all"; a
    stable hash split by dialogue id, validation carved from train so eval is unchanged by it),
    ``eval_fraction`` (0.2), ``user_simulator`` (``None``: the dataset's scripted user turns;
    or any callable ``messages -> str`` that plays the user from the second turn on: it
    receives a one-message chat, :func:`user_simulator_messages`, asking for the user's next
    line in the emotion the dialogue's arc gives that turn, over the conversation so far, and
    returns that line; an LLM chat-completion function or an
    agent fits, and ``affectgym eval --user-simulator SPEC`` passes the agent ``SPEC``
    names), ``classifier`` ("nade" | "transformers" | "auto" | a model id or path | an
    :class:`~affectgym.rewards.classifier.EmotionClassifier` | a callable; see
    :func:`~affectgym.rewards.factories.make_classifier`), ``relevance_model`` (the causal
    language model that reads listening, see :class:`~affectgym.rewards.relevance.ConditionalRelevance`:
    a model alias, a local folder, a :class:`~affectgym.rewards.relevance.ConditionalRelevance` or
    a callable; default ``"smollm2-135m"``, loaded on the first score; ``None`` reads shared words
    only and leaves the emotion credit ungated), ``reward_weights``, ``rubric`` (the
    per-turn :class:`~affectgym.rewards.rubric.Rubric`; default :meth:`default_turn_rubric`; the
    episode's terms are added to any), ``task_format`` (how a turn is asked for and the
    reply read: "default" | "no-hint", see
    :data:`~affectgym.envs.dialogue_format.DIALOGUE_FORMATS` | a
    :class:`~affectgym.envs.dialogue_format.DialogueFormat` | a mapping of its fields),
    ``judge`` (a
    ``dspy.LM`` or :class:`~affectgym.rewards.judge.EmpathyJudge`; off by default),
    ``judge_weight`` (0.2), ``completion_bonus`` (0.0), ``truncation_penalty`` (0.0),
    ``max_turns`` (8), ``invalid_action_penalty`` (0.05), ``render_mode``.

    ```python
    import affectgym
    env = affectgym.make("affectgym/EmpatheticDialogue-v0", split="eval")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(
        "(FEAR) That wait sounds tense. (HAPPINESS) You prepared well! (NEUTRAL) What will you do first?")
    ```

    ## Version History
    * v0: initial version.
    """

    done_message = "The dialogue is over."
    turn_limit_message = "Turn limit of {max_turns} reached before the dialogue ended; the episode is over."

    #: Arguments that reshape the splits, which training refuses (see :class:`~affectgym.envs.core.AffectEnv`).
    split_arguments = ("eval_fraction",)

    def __init__(
        self,
        *,
        dataset: str = "embedded",
        data_file: str | None = None,
        hub_name: str = HUB_DATASET,
        split: str = "train",
        eval_fraction: float = 0.2,
        user_simulator: UserSimulator | None = None,
        classifier: str | EmotionClassifier | Callable[..., Any] = "nade",
        relevance_model: str | ConditionalRelevance | Callable[[str, str], float] | None = RELEVANCE_MODEL,
        reward_weights: Mapping[str, float] | None = None,
        rubric: Rubric | None = None,
        task_format: DialogueFormat | str | Mapping[str, Any] | None = None,
        judge: Any = None,
        judge_weight: float = 0.2,
        completion_bonus: float = 0.0,
        truncation_penalty: float = 0.0,
        max_turns: int = 8,
        invalid_action_penalty: float = 0.05,
        max_action_chars: int = 32_768,
        render_mode: str | None = None,
    ):
        for name, value in (("completion_bonus", completion_bonus), ("truncation_penalty", truncation_penalty), ("judge_weight", judge_weight)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        self.dataset = "file" if data_file is not None and dataset == "embedded" else dataset
        self.data_file = data_file
        self.hub_name = hub_name
        # read before a classifier or judge is made, so an unknown name or a bad file costs nothing
        self.all_dialogues: list[Dialogue] = load_dialogues(self.dataset, data_file=data_file, hub_name=hub_name)
        self.eval_fraction = eval_fraction
        if rubric is not None and not isinstance(rubric, Rubric):
            raise ValueError(f"rubric must be None (the default per-turn rubric) or a Rubric, got {rubric!r}")
        self.reward_weights = dict(reward_weights or {})
        self.turn_rubric = rubric
        self.task_format = coerce_task_format(task_format, DialogueFormat, DIALOGUE_FORMATS)
        self.judge = make_judge(judge, judge_class=EmpathyJudge)
        self.judge_weight = float(judge_weight)
        self.completion_bonus = float(completion_bonus)
        self.truncation_penalty = float(truncation_penalty)
        self.classifier = make_classifier(classifier)
        self.listening_model = (relevance_model if relevance_model is None or isinstance(relevance_model, ConditionalRelevance)
                                else ConditionalRelevance(relevance_model, contrasts=LISTENING_CONTRASTS))
        if user_simulator is not None and not callable(user_simulator):
            raise ValueError(
                f"user_simulator must be None (the dataset's scripted user turns) or a callable messages -> str, "
                f"got {user_simulator!r}; to let an agent play the user, run affectgym eval --user-simulator SPEC"
            )
        self.user_simulator = user_simulator
        self._emotions = MemoisedClassifier(self.classifier, EMOTION_CACHE_SIZE)
        self._all_by_id = {d.id: d for d in self.all_dialogues}
        self.dialogues: list[Dialogue] = split_dialogues(self.all_dialogues, split, eval_fraction)
        self._dialogue_ids = {d.id for d in self.dialogues}
        super().__init__(
            scenarios=self.turn_scenarios(),
            rubric=self.episode_rubric(invalid_action_penalty),
            split=split,
            max_turns=max_turns,
            invalid_action_penalty=invalid_action_penalty,
            max_action_chars=max_action_chars,
            render_mode=render_mode,
        )

    # ------------------------------------------------------------------ data
    def turn_scenarios(self) -> list[DialogueTurn]:
        """Every turn of the split's dialogues, in order."""
        return [turn for dialogue in self.dialogues for turn in dialogue.turns]

    # ------------------------------------------------------------------ prompts
    def system_prompt(self, scenario: DialogueTurn) -> str:
        """The task format's chatbot instructions (the same for every turn)."""
        return self.task_format.system_prompt()

    def first_observation(self, scenario: DialogueTurn) -> str:
        """The task format's user message for the turn."""
        return self.task_format.observation(scenario)

    def flat_observation(self, scenario: DialogueTurn) -> str:
        """The history so far (pre-rendered) and the turn to answer, in one user message."""
        return self.task_format.flat_observation(scenario)

    def parse_final(self, text: str) -> tuple[ChatbotReply, None]:
        """Every text is a reply, read once by the task format; structure is scored, not rejected."""
        return self.task_format.parse(text)

    # ------------------------------------------------------------------ reward
    def episode_rubric(self, invalid_action_penalty: float) -> Rubric:
        """The per-turn rubric (the one passed in, else :meth:`default_turn_rubric`), weights overridden by
        ``reward_weights``, then the episode's terms: earlier turns, invalid actions (each costing
        ``invalid_action_penalty``), completion and truncation."""
        per_turn = (self.turn_rubric if self.turn_rubric is not None else self.default_turn_rubric())
        per_turn = per_turn.with_weights(self.reward_weights)
        episode = [
            Criterion("earlier_turns", earlier_turns, 1.0, capped=False),
            Criterion("invalid_actions", count_invalid_actions, -float(invalid_action_penalty), capped=False),
            Criterion("completion_bonus", self._completion_bonus, 1.0, capped=False),
            Criterion("truncation_penalty", self._truncation_penalty, 1.0, capped=False),
        ]
        return dataclasses.replace(per_turn, criteria=(*per_turn.criteria, *episode))

    def score_bounds(self) -> tuple[float, float]:
        """A turn's lowest and highest score: the per-turn weights' negative and positive sums, with the
        completion bonus or the truncation penalty of a last step."""
        weights = [c.weight for c in self.rubric.criteria if c.capped]
        terminal = (self.completion_bonus, -self.truncation_penalty)
        return (sum(w for w in weights if w < 0) + min(0.0, *terminal), sum(w for w in weights if w > 0) + max(0.0, *terminal))

    def default_turn_rubric(self) -> Rubric:
        """Structure, tags, expressed emotion, shows-not-tells, length, open question (and empathy with a
        judge), capped while the length is far off (see Rewards)."""
        criteria = [
            Criterion("structure", structure, DEFAULT_REWARD_WEIGHTS["structure"]),
            Criterion("tags", tag_correctness, DEFAULT_REWARD_WEIGHTS["tags"]),
            Criterion("expressed_emotion", self.expressed_emotion, DEFAULT_REWARD_WEIGHTS["expressed_emotion"], batched=True),
            Criterion("shows_not_tells", shows_not_tells, DEFAULT_REWARD_WEIGHTS["shows_not_tells"]),
            Criterion("length", reply_length, DEFAULT_REWARD_WEIGHTS["length"]),
            Criterion("open_question", open_question, DEFAULT_REWARD_WEIGHTS["open_question"]),
            Criterion("relevance", self.listening, DEFAULT_REWARD_WEIGHTS["relevance"], batched=True),
        ]
        if self.judge is not None:
            criteria.append(Criterion("empathy", self._judged, self.judge_weight, batched=True, scorer="judge"))
        caps = [Cap("length_far_off", FAR_OFF_LENGTH_CAP, lambda c: c.get("length") == 0.0)]
        return Rubric(criteria, caps=caps)

    def _completion_bonus(self, turn: DialogueTurn, reply: Reply, trace: Trace) -> float:
        """``completion_bonus`` for a reply to the dialogue's last turn (as the step's info reports it), else 0."""
        return self.completion_bonus if reply.text is not None and self._is_last(turn) else 0.0

    def _truncation_penalty(self, turn: DialogueTurn, reply: Reply, trace: Trace) -> float:
        """``-truncation_penalty`` when the episode ended unanswered, else 0."""
        return -self.truncation_penalty if reply.text is None else 0.0

    def expressed_emotion(
        self, scenarios: Sequence[DialogueTurn], replies: Sequence[Reply], traces: Sequence[Trace]
    ) -> list[float]:
        """Batched criterion: mean over the three sentences of each one's credit for its slot's tag.

        A tagged sentence is read piece by piece (:func:`~affectgym.envs.dialogue_criteria.said_pieces`:
        its clauses, as plain text), each piece classified alone, and earns its weakest piece's
        ``P(required tag) / max P``: a sentence added to a slot can lower its credit, never raise it. In an *emotion slot* (a tag other than NEUTRAL) a question
        earns 0, and so does a piece that reads as neutral or as another emotion (its credit
        below ``EMOTION_SLOT_FLOOR``, 0.3; the embedded dataset's neutral statements score under
        0.25 for every tag but HAPPINESS in nine cases out of ten). A piece that names its
        emotion instead of showing it (:func:`tells_emotion`) earns 0, and so does a sentence that
        says nothing (:func:`~affectgym.envs.dialogue_criteria.emotion_unreadable`); a reply that
        does not parse earns 0. With a ``relevance_model``, a piece of the first two sentences
        earns its credit times its own listening credit, and the question its credit times the
        reply's (:meth:`listening`): emotion about nothing the user said is not empathy, so a
        stock emotional sentence earns nothing, and one added to a sentence that listens lowers it.
        Pieces are classified once per env (cached by text), the whole batch in one classifier call.
        """
        parsed = [reply_turn(r) for r in replies]
        said = [[said_pieces(x, s) for x in t.sentences] if t is not None else [] for s, t in zip(scenarios, parsed, strict=True)]
        found = iter(self._emotions.scores([x for slots in said for pieces in slots for x in pieces]))
        heard = self._listening_credits(scenarios, parsed, said) if self.listening_model is not None else None
        values = []
        for number, (scenario, turn, slots) in enumerate(zip(scenarios, parsed, said, strict=True)):
            if turn is None:
                values.append(0.0)
                continue
            credits = []
            for slot, (sentence, tag, pieces) in enumerate(zip(turn.sentences, scenario.required_tags, slots, strict=True)):
                emotions = [slot_emotion_credit(x, tag, next(found)) for x in pieces]  # every piece's reading, in order
                if emotion_unreadable(scenario, sentence):
                    credits.append(0.0)
                elif heard is None:
                    credits.append(min(emotions))
                elif slot < 2:
                    credits.append(min(e * listened for e, listened in zip(emotions, heard[number][slot], strict=True)))
                else:
                    credits.append(min(emotions) * reply_listening(heard[number]))
            values.append(sum(credits) / 3)
        return values

    def listening(
        self, scenarios: Sequence[DialogueTurn], replies: Sequence[Reply], traces: Sequence[Trace]
    ) -> list[float]:
        """Batched criterion: whether each reply listens, in [0, 1].

        Without a ``relevance_model``, :func:`~affectgym.envs.dialogue_criteria.relevance` (the
        user's content stems taken up outside echoes). With one,
        :func:`~affectgym.envs.dialogue_criteria.reply_listening`: the listening credit of the reply's
        best sentence, a sentence's being its weakest piece's (:meth:`_listening_credits`; a sentence
        added to a slot can lower it, never raise it), the question's counted at a quarter. A reply
        that does not parse earns 0.
        """
        if self.listening_model is None:
            return [relevance(s, r, t) for s, r, t in zip(scenarios, replies, traces, strict=True)]
        turns = [reply_turn(r) for r in replies]
        said = [[said_pieces(x, s) for x in t.sentences] if t is not None else [] for s, t in zip(scenarios, turns, strict=True)]
        credits = self._listening_credits(scenarios, turns, said)
        return [reply_listening(slots) for slots in credits]

    def _listening_credits(
        self, scenarios: Sequence[DialogueTurn], turns: Sequence[ChatbotTurn | None], said: Sequence[Sequence[list[str]]]
    ) -> list[list[list[float]]]:
        """Each reply's sentences' pieces' listening credits, slot by slot, piece by piece ([] for a reply
        that does not parse); ``said`` holds each reply's sentences' pieces
        (:func:`~affectgym.envs.dialogue_criteria.said_pieces`), read once by the caller.

        A piece is read for its PMI with everything the user said against the other users of
        :data:`LISTENING_CONTRASTS` (the model's reads are remembered by text, so the two criteria
        that ask pay once), then :func:`~affectgym.envs.dialogue_criteria.sentence_listening_credit`.
        The pieces of an echo of a user line or of a keyword heap earn 0 unread
        (:func:`~affectgym.envs.dialogue_criteria.listened_sentences`).
        """
        assert self.listening_model is not None
        heard = [set(listened_sentences(s, t)) if t is not None else set() for s, t in zip(scenarios, turns, strict=True)]
        slots = [[(pieces, x in h) for x, pieces in zip(t.sentences, reply, strict=True)] if t is not None else []
                 for t, h, reply in zip(turns, heard, said, strict=True)]
        pairs = [(s, x) for s, reply in zip(scenarios, slots, strict=True) for pieces, read in reply if read for x in pieces]
        pmis = iter(self.listening_model.scores([user_said(s) for s, _ in pairs], [x for _, x in pairs]))
        return [[[sentence_listening_credit(next(pmis)) if read else 0.0 for _ in pieces] for pieces, read in reply]
                for reply in slots]

    def _judged(
        self, scenarios: Sequence[DialogueTurn], replies: Sequence[Reply], traces: Sequence[Trace]
    ) -> list[float | Unscored | None]:
        assert self.judge is not None
        return self.judge.score_batch(
            [f"{render_history(t.history)}\nHuman: {t.user_line}".strip() for t in scenarios],
            [t.target_emotion for t in scenarios],
            [r.text for r in replies],
        )

    def turn_record(self, turn: DialogueTurn, reply: Reply, result: RubricResult) -> dict[str, Any]:
        """One turn's evaluation record, from the turn's own score.

        Holds the ids, the required and the written tags, the parse error, the question
        kind and words, the reply and the reference reply, and the turn reward and its
        per-turn components (what the reply itself earned: the capped part of the rubric,
        without the episode's terms); evaluation computes BLEU-4, ROUGE and tag accuracy from
        them (:func:`affectgym.eval.dialogue_metrics.dialogue_summary`).
        """
        read = reply.answer if reply.answer is not None else read_chatbot_reply(reply.text)
        parsed = read.turn
        episode_terms = {c.name for c in self.rubric.criteria if not c.capped}
        return {
            "turn_id": turn.id,
            "dialogue_id": turn.dialogue_id,
            "turn_index": turn.index,
            "required_tags": list(turn.required_tags),
            "tags": list(parsed.tags) if parsed else None,
            "parse_error": read.error,
            "question": question_kind(parsed.sentences[2]) if parsed else None,
            "words": parsed.words if parsed else None,
            "reply": reply.text,
            "reference": turn.reference,
            "reward": result.total,
            "reward_components": {k: v for k, v in result.components.items() if k not in episode_terms},
        }

    def outcome(self, scenario: DialogueTurn, answer: ChatbotReply | None, result: RubricResult) -> dict[str, Any]:
        """The dialogue's evaluation record: completion, the return and one :meth:`turn_record` per answered turn.

        ``answer`` is the last reply read (``None`` when the turn limit came first; its text
        is the trace's ``final`` entry); ``result`` scores the whole episode, so the last
        turn's own reward is its total without the episode's terms.
        """
        records = [entry["record"] for entry in self.trace if entry.get("type") == "reply"]
        if answer is not None:
            carried = sum(
                c.weight * (result.components[c.name] or 0.0) for c in self.rubric.criteria if not c.capped
            )
            final_text = self.trace[-1]["text"]
            records.append(self.turn_record(scenario, Reply(final_text, answer), RubricResult(result.total - carried, result.components)))
        return {
            "dialogue_id": scenario.dialogue_id,
            "completed": answer is not None,
            "turns_answered": len(records),
            "turns_in_dialogue": scenario.n_turns,
            "dialogue_turns": records,
            "return": result.total,
        }

    #: BLEU-4, ROUGE-1/2/L and per-slot tag accuracy of the replies against the references.
    outcome_summaries = ("dialogue",)
    #: The LLM-free agent ``affectgym eval --agent baseline`` plays: tagged sentences from a lexicon.
    recommended_baseline = "dialogue-template"

    # ------------------------------------------------------------------ episodes
    def start_episode(self, options: Mapping[str, Any]) -> DialogueTurn:
        """A turn id starts there (history pre-filled); a dialogue id, a Dialogue or no option starts at turn 0."""
        if "scenario" in options:
            start = options["scenario"]
            if isinstance(start, Dialogue):
                start = start.turns[0]
            if not isinstance(start, DialogueTurn):
                raise ValueError(
                    f"options['scenario'] must be a DialogueTurn or a Dialogue, got {type(start).__name__}"
                )
            return start
        if "scenario_id" in options:
            scenario_id = options["scenario_id"]
            if scenario_id in self._dialogue_ids:
                return self._all_by_id[scenario_id].turns[0]
            return self.get_scenario(scenario_id)
        return self.dialogues[int(self.np_random.integers(len(self.dialogues)))].turns[0]

    def history_messages(self, scenario: DialogueTurn) -> list[dict[str, Any]]:
        """The turns before ``scenario``: each user line and the chatbot reply it got."""
        messages: list[dict[str, Any]] = []
        for user_line, bot_reply in scenario.history:
            messages += [{"role": "user", "content": user_line}, {"role": "assistant", "content": bot_reply}]
        return messages

    def episode_info(self, scenario: DialogueTurn) -> dict[str, Any]:
        """``dialogue_id``, ``turn_index`` and ``required_tags`` of the current turn."""
        return {
            "dialogue_id": scenario.dialogue_id,
            "turn_index": scenario.index,
            "required_tags": list(scenario.required_tags),
        }

    def on_answer(self, reply: Reply) -> Continue | None:
        """A reply to the dialogue's last turn ends the episode; any other is paid its turn score and the next turn follows."""
        turn: DialogueTurn = self.scenario
        following = self._next_turn(turn, reply.text)
        if following is None:
            return None
        result = self.rubric.score(turn, reply, [])
        return Continue(
            observation=self.first_observation(following),
            reward=result.total,
            components=result.components,
            entry={
                "type": "reply",
                "turn_id": turn.id,
                "text": reply.text,
                "reward": result.total,
                "record": self.turn_record(turn, reply, result),
            },
            scenario=following,
            info={"turn_reward": result.total, "parse_error": reply.answer.error},
            result=result,
        )

    def _arc(self, turn: DialogueTurn) -> tuple[DialogueTurn, ...]:
        """The scripted turns of ``turn``'s dialogue (none for a turn outside the env's dialogues)."""
        dialogue = self._all_by_id.get(turn.dialogue_id)
        return dialogue.turns if dialogue is not None and turn.index < len(dialogue.turns) else ()

    def _is_last(self, turn: DialogueTurn) -> bool:
        return turn.index + 1 >= len(self._arc(turn))

    def _next_turn(self, turn: DialogueTurn, reply: str) -> DialogueTurn | None:
        if self._is_last(turn):
            return None
        scripted = self._arc(turn)[turn.index + 1]
        history = (*turn.history, (turn.user_line, reply))
        if self.user_simulator is None:
            return dataclasses.replace(scripted, history=history)
        text = self.user_simulator(user_simulator_messages(history, scripted.user_emotion))
        if not isinstance(text, str) or not text.strip():
            raise RuntimeError(
                f"the user simulator {self.user_simulator!r} returned {text!r}; it must return the user's next line as text"
            )
        lead, segments = split_tagged(text)
        if not lead and segments:  # drop a tag the simulator wrote itself; the arc decides the emotion
            text = " ".join(s.text for s in segments)
        return dataclasses.replace(
            scripted,
            id=f"{scripted.id}/sim",
            user_text=" ".join(normalise_text(text).split()),
            reference=None,
            history=history,
            simulated=True,
        )

    # ------------------------------------------------------------------ checker
    def reference_answer(self, scenario: DialogueTurn) -> tuple[str, Trace]:
        """The dataset's reply; without one, a reply built from stock sentences for the required tags."""
        if scenario.reference:
            return scenario.reference, []
        user_tag, target, _ = scenario.required_tags
        return f"({user_tag}) {_SHOWN[user_tag]} ({target}) {_SHOWN[target]} (NEUTRAL) {_GENERIC_QUESTION}", []

    def bare_answer(self, scenario: DialogueTurn) -> tuple[str, Trace]:
        """The three tags, each over a sentence that says nothing."""
        user_tag, target, neutral = scenario.required_tags
        return f"({user_tag}) I see. ({target}) Okay. ({neutral}) And then?", []

    def other_target(self, scenario: DialogueTurn) -> DialogueTurn:
        """The turn asking its second sentence for the next emotion tag, answered by the stock reply."""
        labels = [label for label in _SHOWN if label != "NEUTRAL"]
        current = labels.index(scenario.target_emotion) if scenario.target_emotion in labels else -1
        return dataclasses.replace(scenario, target_emotion=labels[(current + 1) % len(labels)], reference=None)

    canary_min_share = {"content_free_template": 0.95, "echoes_the_user": 0.95, "template_with_user_words": 0.9}

    def canaries(self, scenario: DialogueTurn) -> dict[str, tuple[str | None, Trace]]:
        """Reward hacks that must score below the reference reply of the turn.

        Tags with empty sentences; correct tags over sentences of far-off emotions; a yes/no
        question; a 200-word reply; naming the emotions instead of expressing them; no reply.
        With a ``relevance_model``, the replies that do not listen too (:func:`not_listening_replies`):
        they must lose on :attr:`canary_min_share` of the turns, not on every one, since the
        model reads meaning with a margin. On the embedded train turns the content-free template
        stays below the dataset's reply on 91 of 95, the echo on 94 (95 % each, tested with a
        binomial margin), the template carrying the user's words on 91 (90 %: the model reads
        the user in a stock question around their words, which the reply's listening counts at a
        quarter; the eval turns were not looked at to set these). Without a model, shared words alone cannot show it (a reference that
        shares no word with the user ties the template), so they are not run.
        """
        reference, _ = self.reference_answer(scenario)
        parsed = parse_chatbot_turn(reference)[0]
        sentences = parsed.sentences if parsed else ("That sounds like a lot.", "Thanks for telling me.", "What happened next?")
        user_tag, target, neutral = scenario.required_tags
        rambling = " ".join([sentences[1]] * max(1, 200 // max(1, count_words(sentences[1]))))
        hacks: dict[str, tuple[str | None, Trace]] = {
            "tags_with_empty_sentences": (f"({user_tag}). ({target}). ({neutral})?", []),
            "correct_tags_off_emotion_sentences": (
                f"({user_tag}) {self._far_sentence(user_tag)} ({target}) {self._far_sentence(target)} "
                f"({neutral}) {_OFF_EMOTION_QUESTION}",
                [],
            ),
            "yes_no_question": (
                f"({user_tag}) {sentences[0]} ({target}) {sentences[1]} ({neutral}) Do you want to talk about it?",
                [],
            ),
            "two_hundred_words": (f"({user_tag}) {sentences[0]} ({target}) {rambling} ({neutral}) {sentences[2]}", []),
            "names_emotions_instead_of_showing": (
                f"({user_tag}) You must feel so {_NAMED[user_tag]} right now. ({target}) I feel {_NAMED[target]} "
                f"about it too. ({neutral}) What else do you feel about it?",
                [],
            ),
            "unanswered": (None, []),
        }
        if self.listening_model is not None:
            hacks.update({name: (text, []) for name, text in not_listening_replies(scenario).items()})
        # One classifier call for every sentence the checker is about to score.
        parsed_hacks = [parse_chatbot_turn(text)[0] for text, _ in hacks.values() if text]
        self._emotions.scores([*sentences, *(s for p in parsed_hacks if p is not None for s in p.sentences)])
        return hacks

    def _far_sentence(self, tag: str) -> str:
        """The stock sentence of another emotion that the classifier finds least like ``tag``."""
        others = [label for label in _SHOWN if label != tag]
        distributions = dict(zip(others, self._emotions.scores([_SHOWN[label] for label in others]), strict=True))
        label = EMOTION_OF_LABEL[tag]

        def likeness(other: str) -> float:
            distribution = distributions[other]
            return distribution[label] / max(distribution.values())

        return _SHOWN[min(others, key=likeness)]

    def fuzz_actions(self) -> list[str]:
        """Well-formed and nearly well-formed replies for the checker's fuzzing."""
        reference, _ = self.reference_answer(self.scenarios[0])
        return [
            reference,
            reference.lower(),
            reference.replace(".", "").replace("?", ""),
            "(SADNESS) Oh no. (HAPPINESS) But well done. (NEUTRAL) Do you want to talk?",
            "(ANGER) Ugh! (FEAR) Careful. (NEUTRAL) What happened next?",
        ]


__all__ = [
    "DEFAULT_REWARD_WEIGHTS",
    "ChatbotReply",
    "ChatbotTurn",
    "DialogueEnv",
    "UserSimulator",
    "chatbot_reply",
    "count_words",
    "earlier_turns",
    "length_credit",
    "not_listening_replies",
    "open_question",
    "parse_chatbot_turn",
    "question_kind",
    "read_chatbot_reply",
    "relevance",
    "render_history",
    "reply_length",
    "shows_not_tells",
    "slot_emotion_credit",
    "structure",
    "tag_correctness",
    "tells_emotion",
    "user_simulator_messages",
]
