"""The leakage check: can a text-only memoriser of the train split beat chance on eval?

A held-out split is only held out if nothing an agent could memorise in train answers the
eval items. The memoriser here reads only the words of a scenario (for a speech clip: the
context and the line, never the audio), finds the most similar train scenario by TF-IDF
cosine similarity, and answers its label (``copy``) or, for two labels, the other one
(``flip``: the attack on a corpus whose eval clips are train lines spoken the other way).
Scenarios with no similar train text get the train majority label.

On a valid split both rules stay at chance (the best constant answer's accuracy) plus a
small margin. A split drawn clip by clip from a corpus of pivot pairs (the same line said
sincerely and sarcastically) fails: ``flip`` answers nearly every eval clip right.

Any env with hidden labels (``label_set`` and ``scenario.label``) and a
``scenario_text(scenario)`` method can be checked; ``affectgym validate`` and
:func:`affectgym.check_env` run this check on registered envs as part of
``no_solution_leakage``, by remaking their train, eval and validation splits
(:func:`affectgym.envs.validation.split_memoriser`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: How far above chance a memoriser may score before a split counts as leaky.
DEFAULT_MARGIN = 0.10
#: Rules of the memoriser: answer the nearest train item's label, or (two labels) the other one.
MEMORISER_RULES = ("copy", "flip")


@dataclass(frozen=True)
class LeakageReport:
    """What the text-only memoriser scored on the eval split.

    Attributes:
        accuracy_by_rule: Eval accuracy of each rule (``flip`` only for two labels).
        chance: Eval accuracy of always answering the most frequent eval label.
        margin: Allowed excess over chance.
        n_train: Train scenarios memorised.
        n_eval: Eval scenarios answered.
        exact_twins: Eval scenarios whose words occur verbatim in train.
    """

    accuracy_by_rule: dict[str, float]
    chance: float
    margin: float
    n_train: int
    n_eval: int
    exact_twins: int

    @property
    def best_accuracy(self) -> float:
        """The memoriser's accuracy under its best rule."""
        return max(self.accuracy_by_rule.values())

    @property
    def passed(self) -> bool:
        """Whether every rule stays within ``chance + margin``."""
        return self.best_accuracy <= self.chance + self.margin + 1e-12

    def __str__(self) -> str:
        rules = ", ".join(f"{rule} {accuracy:.2f}" for rule, accuracy in self.accuracy_by_rule.items())
        verdict = "OK" if self.passed else "LEAKY"
        return (
            f"text memoriser on {self.n_eval} eval scenarios ({self.exact_twins} with a verbatim twin in train): "
            f"{rules}; chance {self.chance:.2f}, limit {self.chance + self.margin:.2f}: {verdict}"
        )


class TextMemoriser:
    """Answers an item with the label of the most similar train item (TF-IDF cosine), or its flip.

    Args:
        texts: Train texts.
        labels: Their labels.
        rule: ``"copy"`` or ``"flip"`` (two labels only).

    >>> memo = TextMemoriser(["Oh great, rain.", "Lovely weather today."], ["sarcastic", "sincere"], rule="flip")
    >>> memo.predict(["oh great, rain."])
    ['sincere']
    """

    def __init__(self, texts: Sequence[str], labels: Sequence[str], rule: str = "copy"):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if rule not in MEMORISER_RULES:
            raise ValueError(f"rule must be one of {MEMORISER_RULES}, got {rule!r}")
        if not texts or len(texts) != len(labels):
            raise ValueError(f"need as many train labels as texts (at least one), got {len(texts)} and {len(labels)}")
        self.labels = [str(label) for label in labels]
        self.label_set = sorted(set(self.labels))
        if rule == "flip" and len(self.label_set) != 2:
            raise ValueError(f"rule='flip' needs exactly two labels, got {self.label_set}")
        self.rule = rule
        self.majority = Counter(self.labels).most_common(1)[0][0]
        self.vectorizer = TfidfVectorizer(lowercase=True, ngram_range=(1, 2), sublinear_tf=True)
        self.matrix = self.vectorizer.fit_transform(texts)

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The memoriser's label for each text."""
        similarity = (self.vectorizer.transform(texts) @ self.matrix.T).toarray()
        answers = []
        for row in similarity:
            if row.size == 0 or row.max() <= 0:
                answers.append(self.majority)
                continue
            nearest = self.labels[int(row.argmax())]
            if self.rule == "flip":
                nearest = next(label for label in self.label_set if label != nearest)
            answers.append(nearest)
        return answers


def labelled_texts(env: Any) -> tuple[list[str], list[str]]:
    """``(texts, labels)`` of an env's scenarios, through its ``scenario_text`` method.

    Raises:
        ValueError: The env has no ``scenario_text`` or its scenarios carry no label.
    """
    base = getattr(env, "unwrapped", env)
    texts = [base.scenario_text(s) for s in base.scenarios] if hasattr(base, "scenario_text") else [None]
    if any(text is None for text in texts):
        raise ValueError(f"{type(base).__name__}.scenario_text(scenario) gives no text: nothing text-only to memorise")
    if not all(hasattr(s, "label") for s in base.scenarios):
        raise ValueError(f"the scenarios of {type(base).__name__} carry no label")
    return [str(text) for text in texts], [str(s.label) for s in base.scenarios]


def check_leakage(train_env: Any, eval_env: Any, margin: float = DEFAULT_MARGIN) -> LeakageReport:
    """Fit the memoriser on ``train_env``'s scenarios and score it on ``eval_env``'s.

    Args:
        train_env: The env made on the train split.
        eval_env: The same env made on the eval split.
        margin: Allowed excess of the memoriser's accuracy over chance.

    Returns:
        A :class:`LeakageReport` (``report.passed`` says whether the split holds).
    """
    train_texts, train_labels = labelled_texts(train_env)
    eval_texts, eval_labels = labelled_texts(eval_env)
    if not eval_texts:
        raise ValueError("the eval split has no scenarios")
    rules = MEMORISER_RULES if len(set(train_labels) | set(eval_labels)) == 2 else ("copy",)
    accuracy = {}
    for rule in rules:
        predictions = TextMemoriser(train_texts, train_labels, rule=rule).predict(eval_texts)
        accuracy[rule] = sum(p == y for p, y in zip(predictions, eval_labels, strict=True)) / len(eval_labels)
    seen = {" ".join(text.lower().split()) for text in train_texts}
    return LeakageReport(
        accuracy_by_rule=accuracy,
        chance=Counter(eval_labels).most_common(1)[0][1] / len(eval_labels),
        margin=margin,
        n_train=len(train_texts),
        n_eval=len(eval_texts),
        exact_twins=sum(" ".join(text.lower().split()) in seen for text in eval_texts),
    )


__all__ = ["DEFAULT_MARGIN", "MEMORISER_RULES", "LeakageReport", "TextMemoriser", "check_leakage", "labelled_texts"]
