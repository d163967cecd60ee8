"""Reference metrics of emotionally tagged dialogue replies: BLEU-4, ROUGE-1/2/L, per-slot tag accuracy.

These are the evaluation metrics of the emotional-RLAIF work (evaluation only; they are not
part of the reward unless a researcher adds them). BLEU and ROUGE compare a reply with the
dataset's reference reply, both as written (tags included, after NFKC normalisation), on a
0-100 scale: sentence BLEU-4 from ``sacrebleu`` (its default exponential smoothing) and the
F-measure of ``rouge-score`` (Porter stemming). Tag accuracy compares the reply's tags, slot
by slot, with the three the turn requires (user's emotion, requested emotion, NEUTRAL).

:func:`dialogue_summary` aggregates per-turn rows (or episode outcomes holding them under
``"dialogue_turns"``, as ``EmpatheticDialogue-v0`` reports each turn's reply, reference and
required tags) into the numbers an eval report prints: the mean of sentence BLEU-4 (as
LLaMA-Factory reports it), corpus BLEU-4, mean ROUGE-1/2/L, tag accuracy per slot and overall.
The env only reports what was said; the metrics are computed here, at evaluation time.

>>> required = ("SADNESS", "HAPPINESS", "NEUTRAL")
>>> slot_tag_accuracy("(sadness) Oh no. (SURPRISE) Wow. (NEUTRAL) What next?", required)
[True, False, True]
>>> row = turn_metrics("(SADNESS) Oh no. (HAPPINESS) Well done. (NEUTRAL) What next?",
...                    "(SADNESS) Oh no. (HAPPINESS) Well done. (NEUTRAL) What next?", required)
>>> row["bleu4"], row["rougeL"], row["tags_correct"]
(100.0, 100.0, 3)
>>> summary = dialogue_summary([{"dialogue_turns": [row]}])
>>> summary["turns"], summary["bleu4"], summary["tag_accuracy"]
(1, 100.0, 1.0)
>>> said = {"reply": "(SADNESS) Oh no. (HAPPINESS) Well done. (NEUTRAL) What next?",
...         "reference": "(SADNESS) Oh no. (HAPPINESS) Well done. (NEUTRAL) What next?", "required_tags": required}
>>> dialogue_summary([{"outcome": {"dialogue_turns": [said]}}]) == {**summary, "corpus_bleu4": 100.0}
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from affectgym.data.dialogues import normalise_text, reply_tags

SLOTS = ("slot1_user_emotion", "slot2_requested_emotion", "slot3_neutral")
"""Names of the three tag slots in summaries."""


def slot_tag_accuracy(reply: str | None, required_tags: Sequence[str]) -> list[bool]:
    """Whether each of the three slots of ``reply`` carries its required tag.

    Args:
        reply: The chatbot reply (``None`` counts as no tags).
        required_tags: The three tags the turn requires.

    Returns:
        Three booleans; a missing slot is wrong.
    """
    tags = reply_tags(reply)
    return [i < len(tags) and tags[i] == required for i, required in enumerate(required_tags[:3])]


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def bleu4(reply: str, reference: str) -> float:
    """Sentence BLEU-4 (sacrebleu, exponential smoothing) of ``reply`` against ``reference``, 0-100.

    >>> bleu4("the cat sat on the mat", "the cat sat on the mat")
    100.0
    """
    import sacrebleu

    score = sacrebleu.sentence_bleu(normalise_text(reply), [normalise_text(reference)]).score
    return min(100.0, float(score))  # sacrebleu can overshoot 100 by a rounding error


def rouge(reply: str, reference: str) -> dict[str, float]:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measures of ``reply`` against ``reference``, 0-100.

    >>> {k: round(v, 1) for k, v in rouge("the cat sat on the mat", "the cat is on the mat").items()}
    {'rouge1': 83.3, 'rouge2': 60.0, 'rougeL': 83.3}
    """
    scores = _rouge_scorer().score(normalise_text(reference), normalise_text(reply))
    return {name: 100.0 * scores[name].fmeasure for name in ("rouge1", "rouge2", "rougeL")}


def turn_metrics(reply: str | None, reference: str | None, required_tags: Sequence[str]) -> dict[str, Any]:
    """The reference metrics of one chatbot turn.

    Args:
        reply: The agent's reply (``None`` when the turn went unanswered).
        reference: The dataset's reply (``None`` when there is none: BLEU/ROUGE are ``None``).
        required_tags: The three tags the turn requires.

    Returns:
        ``bleu4``, ``rouge1``, ``rouge2``, ``rougeL`` (``None`` without a reference or a reply),
        ``tag_correct`` (three booleans) and ``tags_correct`` (how many).
    """
    correct = slot_tag_accuracy(reply, required_tags)
    row: dict[str, Any] = {"bleu4": None, "rouge1": None, "rouge2": None, "rougeL": None}
    if reference and reply is not None:
        row["bleu4"] = bleu4(reply, reference)
        row.update(rouge(reply, reference))
    row["tag_correct"] = correct
    row["tags_correct"] = sum(correct)
    return row


#: Keys under which an episode outcome holds its per-turn rows (the env's ``dialogue_turns``, or ``turns``).
TURN_LIST_KEYS = ("dialogue_turns", "turns")


def _turn_rows(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The per-turn rows of the records, each with its metrics (computed unless it carries them)."""
    rows: list[Mapping[str, Any]] = []
    for record in records:
        nested = record.get("outcome") if isinstance(record.get("outcome"), Mapping) else record
        lists = [nested[key] for key in TURN_LIST_KEYS if isinstance(nested.get(key), list)]
        if lists:
            rows += [t for t in lists[0] if isinstance(t, Mapping)]
        elif "tag_correct" in nested or "required_tags" in nested:
            rows.append(nested)
    return [_with_metrics(row) for row in rows]


def _with_metrics(row: Mapping[str, Any]) -> Mapping[str, Any]:
    if "tag_correct" in row or not isinstance(row.get("required_tags"), (list, tuple)):
        return row
    return {**row, **turn_metrics(row.get("reply"), row.get("reference"), row["required_tags"])}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def dialogue_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate reference metrics over many turns.

    Args:
        records: Per-turn rows (as :func:`turn_metrics` gives them, or the env's rows of
            ``reply``, ``reference`` and ``required_tags``, whose metrics are computed here),
            episode outcomes holding them under ``"dialogue_turns"`` (``info["outcome"]`` of
            the env), or eval records with that outcome under ``"outcome"``; other records
            are ignored.

    Returns:
        ``turns`` (rows read), ``turns_with_reference``, ``bleu4`` (mean sentence BLEU-4),
        ``corpus_bleu4``, ``rouge1``, ``rouge2``, ``rougeL`` (means, ``None`` without any
        reference), ``tag_accuracy`` (share of slots right), ``tag_accuracy_<slot>`` for the
        three slots, ``all_tags_correct`` (share of turns with all three right),
        ``mean_turn_reward`` where rows carry a ``reward``, and ``turn_<component>``, the
        mean of each per-turn reward component where rows carry ``reward_components``.
    """
    rows = _turn_rows(records)
    scored = [r for r in rows if r.get("bleu4") is not None]
    summary: dict[str, Any] = {"turns": len(rows), "turns_with_reference": len(scored)}
    for name in ("bleu4", "rouge1", "rouge2", "rougeL"):
        summary[name] = _mean([float(r[name]) for r in scored])
    pairs = [(r.get("reply"), r.get("reference")) for r in scored]
    if pairs and all(isinstance(a, str) and isinstance(b, str) for a, b in pairs):
        import sacrebleu

        hypotheses = [normalise_text(a) for a, _ in pairs]
        references = [normalise_text(b) for _, b in pairs]
        summary["corpus_bleu4"] = min(100.0, float(sacrebleu.corpus_bleu(hypotheses, [references]).score))
    else:
        summary["corpus_bleu4"] = None
    slots = [list(r["tag_correct"]) for r in rows if isinstance(r.get("tag_correct"), (list, tuple))]
    for i, name in enumerate(SLOTS):
        summary[f"tag_accuracy_{name}"] = _mean([float(s[i]) for s in slots if len(s) > i])
    summary["tag_accuracy"] = _mean([float(v) for s in slots for v in s])
    summary["all_tags_correct"] = _mean([float(len(s) == 3 and all(s)) for s in slots])
    rewards = [float(r["reward"]) for r in rows if isinstance(r.get("reward"), (int, float))]
    if rewards:
        summary["mean_turn_reward"] = _mean(rewards)
    components: dict[str, list[float]] = {}
    for row in rows:
        for name, value in (row.get("reward_components") or {}).items():
            if isinstance(value, (int, float)):
                components.setdefault(name, []).append(float(value))
    for name, values in sorted(components.items()):
        summary[f"turn_{name}"] = _mean(values)
    return summary


__all__ = ["SLOTS", "TURN_LIST_KEYS", "bleu4", "dialogue_summary", "rouge", "slot_tag_accuracy", "turn_metrics"]
