"""The task format of affectgym/EmpatheticDialogue-v0: how a turn is asked for and the reply read.

A :class:`DialogueFormat` writes the system prompt (three tagged sentences: the human's
emotion, the turn's requested one, a neutral open question), each turn's user message, and
the flat single-shot prompt (the conversation so far rendered into one message). Every
reply is read once by :func:`~affectgym.envs.dialogue_parsing.read_chatbot_reply`; its
structure is scored, never rejected. Named formats: :data:`DIALOGUE_FORMATS`.

>>> from affectgym.data.dialogues import load_embedded_dialogues
>>> turn = load_embedded_dialogues()[0].turns[0]
>>> DIALOGUE_FORMATS["no-hint"].observation(turn) == turn.user_line
True
"""

from __future__ import annotations

from dataclasses import dataclass

from affectgym.data.dialogues import DIALOGUE_LABELS, DialogueTurn
from affectgym.envs.dialogue_criteria import REPLY_WORDS_FULL_CREDIT, render_history
from affectgym.envs.dialogue_parsing import FORMAT_HINT, ChatbotReply, read_chatbot_reply


@dataclass(frozen=True)
class DialogueFormat:
    """How EmpatheticDialogue-v0 asks for a tagged turn.

    Args:
        turn_hint: Whether each user message ends with the turn's three required tags and
            the emotion sentence 2 must carry (the system prompt states the format either way).

    Raises:
        ValueError: ``turn_hint`` that is not a bool.
    """

    turn_hint: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.turn_hint, bool):
            raise ValueError(f"task_format turn_hint must be true or false, got {self.turn_hint!r}")

    def system_prompt(self) -> str:
        """The chatbot's instructions: the reply's structure, its tags and its length."""
        return (
            "You are an empathetic chatbot in an open-domain conversation. Every human turn starts with "
            "its emotion tag. Answer each turn with exactly three sentences, each starting with its tag:\n"
            f"{FORMAT_HINT}\n"
            "- Sentence 1 carries the human's emotion (empathy), sentence 2 the emotion requested for this "
            "turn, sentence 3 is a neutral, open-ended follow-up question that invites a full answer "
            "(no yes/no question).\n"
            f"- Tags: {', '.join(DIALOGUE_LABELS)}.\n"
            f"- The three sentences together: {REPLY_WORDS_FULL_CREDIT[0]}-{REPLY_WORDS_FULL_CREDIT[1]} words.\n"
            "- Show each emotion through what you say; do not name it ('I feel happy').\n"
            "Answer with the chatbot turn only."
        )

    def observation(self, turn: DialogueTurn) -> str:
        """The user message of ``turn``: the human's tagged line, then the hint when asked for."""
        if not self.turn_hint:
            return turn.user_line
        user_tag, target, neutral = turn.required_tags
        return (
            f"{turn.user_line}\n\n"
            f"Reply in three tagged sentences: ({user_tag}) ... ({target}) ... ({neutral}) ...? "
            f"Sentence 2 must carry {target}."
        )

    def flat_observation(self, turn: DialogueTurn) -> str:
        """The flat prompt's one user message: the conversation so far, rendered, then :meth:`observation`."""
        parts = [f"Conversation so far:\n{render_history(turn.history)}"] if turn.history else []
        parts.append(self.observation(turn))
        return "\n\n".join(parts)

    def parse(self, text: str) -> tuple[ChatbotReply, None]:
        """Every text is a reply, read once; structure is scored, not rejected."""
        return read_chatbot_reply(text), None


DIALOGUE_FORMATS: dict[str, DialogueFormat] = {
    "default": DialogueFormat(),
    "no-hint": DialogueFormat(turn_hint=False),
}
"""Named formats: ``"default"`` (each user message ends with its turn's tags) and
``"no-hint"`` (the human's line alone; the system prompt carries the format)."""


__all__ = ["DIALOGUE_FORMATS", "DialogueFormat"]
