"""How hard a speech dataset is: the discrimination ladder of ``affectgym data report``.

A corpus asks for the skill only if nothing simpler than the skill separates its labels.
The ladder fits ever richer readers of what a speech env's tools show on the env's
train split and scores each on a chosen split (accuracy and macro-F1), with a 5-fold
cross-validated accuracy over the train split whose folds keep every split group (by
default the spoken line, :meth:`~affectgym.envs.core.AffectEnv.split_group`) on one side:

1. ``majority``: the most frequent train label;
2. ``text``: TF-IDF and a logistic regression on what a text-only reader sees
   (:meth:`~affectgym.envs.core.AffectEnv.scenario_text`);
3. ``threshold``: the best single-feature threshold (a depth-1 decision stump, the feature
   chosen on train) on the raw measurements of ``get_prosody_features``' data, and
   ``threshold_vs_speaker`` on its speaker-relative ones (keys ending ``_vs_speaker``; n/a
   when there are none);
4. ``band_word``: the best single band word of the tool's text, every detail it offers:
   each ``[BAND]`` and each "cue word" pair of a summary line is a yes/no indicator, keyed
   by the feature it follows (:func:`band_words`);
5. ``tree``: a depth-2 decision tree on every numeric measurement;
6. ``logistic``: a standardised logistic regression on every numeric measurement.

Missing measurements are imputed with the median of the data a rung is fitted on. A corpus
where rung 3 or 4 is near 1.0 is solved by one cue: an agent trained on it learns that cue.
The first embedded Sarcasm corpus (``dataset="embedded-sarcasm-v1"``) is one: on its eval
split one threshold (``f0_range_hz``) scores 1.00 and one band word (the summary's
"loudness loud") 0.98, while its words score 0.46, below the majority's 0.50.

```python
from affectgym.eval.difficulty import discrimination_ladder
report = discrimination_ladder("affectgym/SpeechEmotion-v0", env_kwargs={"dataset": "folder", "data_dir": "clips"})
```

or ``affectgym data report affectgym/SpeechEmotion-v0 --env-kwargs '{"data_dir": "clips"}' --json ladder.json``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from affectgym.eval.metrics import classification_metrics
from affectgym.eval.summary import format_number

#: The tool whose data and text the ladder reads.
PROSODY_TOOL = "get_prosody_features"
#: Suffix of the speaker-relative measurements (a z-score against the speaker's own baseline).
SPEAKER_RELATIVE_SUFFIX = "_vs_speaker"
#: Folds of the grouped cross-validation over the train split (fewer when there are fewer groups).
CV_FOLDS = 5

_SENTENCE_BREAK = re.compile(r"(?<=\.)\s+(?=[A-Z])")
_BRACKETED = re.compile(r"\[([^\[\]]+)\]")
_NAME_BEFORE_EQUALS = re.compile(r"([A-Za-z][A-Za-z ]*?)\s*=[^=]*$")
_LEADING_WORDS = re.compile(r"^[\s,;]*([A-Za-z][A-Za-z ]*?)\s*(?:$|[^A-Za-z ])")
_CUE_WORD = re.compile(r"^([a-z][a-z -]*?) ([a-z-]+)$")
# Words that stand where a measurement would ("Pauses: none [NORMAL]"): a value, not a feature's name.
_VALUE_WORDS = frozenset({"none", "no", "n/a", "nothing"})


@dataclass(frozen=True)
class ClipReading:
    """What the ladder reads of one clip through the env's public methods.

    Attributes:
        label: The gold label.
        group: The clip's split group.
        clip_id: The clip's id (``""`` for clips made up in tests).
        text: What a text-only reader sees.
        numbers: The numeric measurements by name (``None`` where unmeasured).
        bands: The band indicators of the tool's text (``"Pitch mean: HIGH"``).
    """

    label: str
    group: str
    text: str
    numbers: Mapping[str, float | None]
    bands: frozenset[str]
    clip_id: str = ""


@dataclass(frozen=True)
class Fitted:
    """A rung fitted on some rows: how it predicts, and what it chose."""

    predict: Callable[[Any], list[str]]
    chosen: str | None = None
    rule: str | None = None


def band_words(text: str, speaker: str | None = None) -> list[tuple[str, str]]:
    """The ``(feature, band word)`` pairs of a prosody tool's text (of a clip by ``speaker``).

    A bracketed band belongs to the feature whose name precedes it on its line (the name
    before ``=``, else the words opening its stretch, else the line's heading alone); a
    summary line (``Heading: cue word, cue word.``, two cues or more, letters only) gives
    each cue with its last word. Each is keyed by its line's heading without what the bands
    are relative to (a `` vs ...`` tail after a word, anything in parentheses or after a
    comma, and the ``speaker``'s name), so that a key names the same feature on every clip.
    Each sentence of a line is read on its own.

    >>> band_words("Pitch: mean=208Hz (34.7st) [HIGH], median=202Hz, sd=40Hz (3.4st) [NORMAL]")
    [('Pitch mean', 'HIGH'), ('Pitch sd', 'NORMAL')]
    >>> band_words("Pauses: 2 (total 0.75s, longest 0.42s) [VERY MANY]; leading silence 0.72s")
    [('Pauses', 'VERY MANY')]
    >>> band_words("Pauses: none [NORMAL]; leading silence 0.10s")
    [('Pauses', 'NORMAL')]
    >>> band_words("Delivery vs embedded corpus, 256 clips: pitch range wide, loudness soft.")
    [('Delivery pitch range', 'wide'), ('Delivery loudness', 'soft')]
    >>> band_words("Relative to Nora's baseline (9 clips): pitch level +1.2 sd [HIGH], tempo -0.3 sd [NORMAL].", "Nora")
    [("Relative to SPEAKER's baseline pitch level", 'HIGH'), ("Relative to SPEAKER's baseline tempo", 'NORMAL')]
    >>> band_words("Delivery vs corpus: pitch range wide, tempo slow. Vs Wen's baseline: pitch range narrow, tempo slow.", "Wen")
    [('Delivery pitch range', 'wide'), ('Delivery tempo', 'slow'), ("Vs SPEAKER's baseline pitch range", 'narrow'), ("Vs SPEAKER's baseline tempo", 'slow')]
    >>> band_words("Duration: 4.34s, voiced 59%, syllables 9\\nPitch: no voiced frames")
    []
    """
    if speaker:
        text = re.sub(rf"\b{re.escape(speaker)}\b", "SPEAKER", text)
    pairs: list[tuple[str, str]] = []
    for sentence in (part for line in text.splitlines() for part in _SENTENCE_BREAK.split(line)):
        heading, colon, body = sentence.partition(": ")
        if not colon:
            continue
        heading = _heading_key(heading)
        bands = list(_BRACKETED.finditer(body))
        if bands:
            start = 0
            for band in bands:
                stretch = body[start:band.start()]
                named = _NAME_BEFORE_EQUALS.search(stretch) or _LEADING_WORDS.match(stretch)
                name = named.group(1).strip() if named else ""
                if name.split(" ", 1)[0].lower() in _VALUE_WORDS:
                    name = ""
                pairs.append((f"{heading} {name}".strip(), band.group(1).strip()))
                start = band.end()
            continue
        cues = [_CUE_WORD.match(item.strip()) for item in body.strip().rstrip(".").split(",")]
        if len(cues) >= 2 and all(cues):
            pairs += [(f"{heading} {cue.group(1)}", cue.group(2)) for cue in cues if cue]
    return pairs


def _heading_key(heading: str) -> str:
    """``"Delivery vs speaker Nora, 12 clips"`` -> ``"Delivery"``; ``"Vs speaker (Nora)"`` -> ``"Vs speaker"``."""
    heading = re.sub(r"\([^()]*\)", " ", heading).split(",", 1)[0]
    return re.split(r"(?i)(?<=\S)\s+vs\s", heading, maxsplit=1)[0].strip()


def discrimination_ladder(
    env_id: str,
    split: str = "eval",
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    progress: bool = True,
    console: Any = None,
) -> dict[str, Any]:
    """Fit the ladder on ``env_id``'s train split and score it on ``split``.

    Args:
        env_id: A speech env (one with a ``get_prosody_features`` tool and a label set),
            e.g. ``"affectgym/Sarcasm-v0"``.
        split: The split scored (any the env accepts; default ``"eval"``).
        env_kwargs: Arguments of the env, e.g. ``{"dataset": "folder", "data_dir": "clips"}``
            (not ``split``).
        progress: Show a progress bar while clips are measured (plain lines when the
            console is not a terminal).
        console: A ``rich.console.Console`` for the progress; default stdout.

    Returns:
        A JSON-ready dict: ``env_id``, ``env_kwargs``, ``split``, ``labels``, ``n_train``,
        ``n_split``, ``n_groups`` (train groups), ``n_split_groups``, ``cv_folds``,
        ``n_features`` (numeric, of which ``n_speaker_relative``), ``n_band_words``, and
        ``rungs``: one dict per rung of :data:`RUNGS` with ``key``, ``name``, ``accuracy``,
        ``macro_f1``, ``cv_accuracy``, ``chosen`` (the feature or band word, else ``None``),
        ``rule``, ``note`` (why a rung is n/a) and ``predictions`` (clip id -> predicted label,
        so that an agent can be paired with a rung clip by clip).

    Raises:
        ValueError: ``env_kwargs`` holds ``split``, or the env has no labels or no prosody tool.
    """
    import affectgym

    env_kwargs = dict(env_kwargs or {})
    if "split" in env_kwargs:
        raise ValueError("env_kwargs may not hold 'split': pass split= (the ladder is fitted on 'train')")
    train_env = affectgym.make(env_id, split="train", **env_kwargs)
    _check_env(env_id, train_env.unwrapped)
    split_env = train_env if split == "train" else affectgym.make(env_id, split=split, **env_kwargs)
    try:
        with _Progress(progress, console) as bar:
            train = [_read_clip(train_env, clip) for clip in bar.each(train_env.unwrapped.scenarios, "train")]
            scored = [_read_clip(split_env, clip) for clip in bar.each(split_env.unwrapped.scenarios, split)]
    finally:
        train_env.close()
        split_env.close()
    report = {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "split": split,
        "labels": list(train_env.unwrapped.label_set),
    }
    report.update(ladder_from_readings(train, scored))
    return report


def ladder_from_readings(train: Sequence[ClipReading], scored: Sequence[ClipReading]) -> dict[str, Any]:
    """The ladder's counts and rungs from clips already read: fitted on ``train``, scored on ``scored``."""
    import numpy as np

    features = [name for name in _numeric_names(train) if any(r.numbers.get(name) is not None for r in train)]
    relative = [name for name in features if name.endswith(SPEAKER_RELATIVE_SUFFIX)]
    columns = {
        "raw": [name for name in features if name not in relative],
        "speaker_relative": relative,
        "all": features,
        "bands": sorted({band for r in train for band in r.bands}),
    }

    def matrix(readings: Sequence[ClipReading], reads: str) -> Any:
        if reads == "text":
            return np.array([r.text for r in readings], dtype=object)
        names = columns.get(reads, [])
        if reads == "bands":
            rows = [[band in r.bands for band in names] for r in readings]
        else:
            rows = [[_as_float(r.numbers.get(name)) for name in names] for r in readings]
        return np.array(rows, dtype=float).reshape(len(readings), len(names))

    groups = [r.group for r in train]
    folds = min(CV_FOLDS, len(set(groups)))
    y_train = np.array([r.label for r in train], dtype=object)
    rungs = []
    for rung in _LADDER:
        names = columns.get(rung.reads, [])
        row: dict[str, Any] = {"key": rung.key, "name": rung.name, "accuracy": None, "macro_f1": None,
                               "cv_accuracy": None, "chosen": None, "rule": None, "note": None, "predictions": None}
        rungs.append(row)
        if rung.reads in columns and not names:
            row["note"] = rung.absent
            continue
        x_train, x_scored = matrix(train, rung.reads), matrix(scored, rung.reads)
        fit = _guarded(rung.fit)
        fitted = fit(x_train, y_train, names)
        predicted = fitted.predict(x_scored)
        metrics = classification_metrics([{"label": r.label, "prediction": p} for r, p in zip(scored, predicted, strict=True)])
        row.update(accuracy=metrics.get("accuracy"), macro_f1=metrics.get("macro_f1"), chosen=fitted.chosen, rule=fitted.rule,
                   predictions={r.clip_id: str(p) for r, p in zip(scored, predicted, strict=True)})
        if folds >= 2:
            row["cv_accuracy"] = _grouped_cv_accuracy(fit, x_train, y_train, names, groups, folds)
    return {
        "n_train": len(train),
        "n_split": len(scored),
        "n_groups": len(set(groups)),
        "n_split_groups": len({r.group for r in scored}),
        "cv_folds": folds if folds >= 2 else None,
        "n_features": len(features),
        "n_speaker_relative": len(relative),
        "n_band_words": len(columns["bands"]),
        "rungs": rungs,
    }


def render_ladder_table(report: Mapping[str, Any]) -> Any:
    """The ladder of :func:`discrimination_ladder` as a ``rich.table.Table``."""
    from rich.table import Table

    table = Table(
        title=f"discrimination ladder: {report['env_id']} ({report['split']}: {report['n_split']} clips; "
        f"train: {report['n_train']} clips in {report['n_groups']} groups)",
        caption=f"fitted on train; CV: {report['cv_folds'] or 'no'} folds of train grouped by split group",
        show_header=True,
    )
    table.add_column("rung", no_wrap=True)
    table.add_column(f"{report['split']} acc", justify="right")
    table.add_column("macro-F1", justify="right")
    table.add_column("train CV acc", justify="right")
    table.add_column("chosen feature / word", overflow="fold")
    for row in report["rungs"]:
        if row["note"]:
            table.add_row(row["name"], "n/a", "n/a", "n/a", row["note"])
            continue
        table.add_row(row["name"], format_number(row["accuracy"]), format_number(row["macro_f1"]),
                      format_number(row["cv_accuracy"]), row["chosen"] or "")
    return table


# ----------------------------------------------------------------------------- reading clips
def _check_env(env_id: str, env: Any) -> None:
    if not getattr(env, "label_set", ()):
        raise ValueError(f"{env_id} hides no label (its label_set is empty); data report works on labelled speech envs "
                         "such as affectgym/Sarcasm-v0 and affectgym/SpeechEmotion-v0")
    if PROSODY_TOOL not in env.tools:
        raise ValueError(f"{env_id} has no {PROSODY_TOOL} tool; data report works on speech envs such as "
                         "affectgym/Sarcasm-v0 and affectgym/SpeechEmotion-v0")


def _read_clip(env: Any, clip: Any) -> ClipReading:
    """One clip through the public contract: reset on it, then the prosody tool in every detail it offers."""
    base = env.unwrapped
    env.reset(options={"scenario": clip})
    parameters = base.tools[PROSODY_TOOL].schema["function"]["parameters"]["properties"]
    details = parameters.get("detail", {}).get("enum") or [None]
    tool = getattr(base, PROSODY_TOOL)
    texts = [tool() if detail is None else tool(detail=detail) for detail in details]
    data = base.tool_data(PROSODY_TOOL, {}) or {}
    numbers = {name: value for name, value in data.items()
               if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))}
    return ClipReading(
        label=str(clip.label),
        group=str(base.split_group(clip)),
        text=base.scenario_text(clip) or "",
        numbers=numbers,
        bands=frozenset(f"{feature}: {word}" for text in texts for feature, word in band_words(text, clip.speaker)),
        clip_id=str(clip.id),
    )


class _Progress:
    """Clips measured so far: a rich bar on a terminal, a plain line every tenth otherwise, or nothing."""

    def __init__(self, enabled: bool, console: Any):
        self.enabled = enabled
        self.console = console
        self._bar: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console

            self.console = self.console or Console()
            if self.console.is_terminal:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeRemainingColumn,
                )

                self._bar = Progress(TextColumn("[bold]measuring {task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeRemainingColumn(), console=self.console)
                self._bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def each(self, items: Sequence[Any], what: str) -> Any:
        """``items``, counting each as it is handed out."""
        if self._bar is not None:
            task = self._bar.add_task(f"{what} clips", total=len(items))
        step = max(1, math.ceil(len(items) / 10))
        for done, item in enumerate(items, start=1):
            yield item
            if self._bar is not None:
                self._bar.update(task, advance=1)
            elif self.enabled and (done % step == 0 or done == len(items)):
                self.console.print(f"measuring {what} clips: {done}/{len(items)}", highlight=False)


# ----------------------------------------------------------------------------- the rungs
def _numeric_names(readings: Sequence[ClipReading]) -> list[str]:
    seen: dict[str, None] = {}
    for reading in readings:
        seen.update(dict.fromkeys(reading.numbers))
    return list(seen)


def _as_float(value: float | None) -> float:
    return math.nan if value is None or not math.isfinite(float(value)) else float(value)


def _guarded(fit: Callable[..., Fitted]) -> Callable[..., Fitted]:
    """``fit``, except that rows of one label (a cross-validation fold can have them) get that label."""

    def guarded(x: Any, y: Any, names: Sequence[str]) -> Fitted:
        if len(set(y)) < 2:
            return _fit_majority(x, y, names)
        return fit(x, y, names)

    return guarded


def _fit_majority(x: Any, y: Any, names: Sequence[str]) -> Fitted:
    label = Counter(y).most_common(1)[0][0]
    return Fitted(lambda rows: [label] * len(rows), rule=f"always {label}")


def _fit_text(x: Any, y: Any, names: Sequence[str]) -> Fitted:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LogisticRegression(max_iter=1000))
    model.fit(list(x), list(y))
    return Fitted(lambda rows: list(model.predict(list(rows))))


def _median_imputer(x: Any) -> Any:
    from sklearn.impute import SimpleImputer

    return SimpleImputer(strategy="median", keep_empty_features=True).fit(x)


def _best_stump(x: Any, y: Any) -> tuple[int, Any, float]:
    """The column whose depth-1 tree fits ``y`` best (the first of equals), that tree and its accuracy."""
    from sklearn.tree import DecisionTreeClassifier

    best: tuple[int, Any, float] | None = None
    for column in range(x.shape[1]):
        stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(x[:, [column]], y)
        accuracy = float((stump.predict(x[:, [column]]) == y).mean())
        if best is None or accuracy > best[2]:
            best = (column, stump, accuracy)
    assert best is not None
    return best


def _stump_rule(stump: Any, feature: str, binary: bool) -> str:
    if stump.tree_.node_count < 3:
        return f"{feature}: no split (always {stump.classes_[0]})"
    tree = stump.tree_
    left, right = (stump.classes_[tree.value[node][0].argmax()] for node in (tree.children_left[0], tree.children_right[0]))
    if binary:
        return f"{feature} → {right}, else {left}"
    return f"{feature} ≤ {tree.threshold[0]:.4g} → {left}, else {right}"


def _fit_stump(x: Any, y: Any, names: Sequence[str], binary: bool) -> Fitted:
    imputer = _median_imputer(x)
    column, stump, _ = _best_stump(imputer.transform(x), y)
    return Fitted(lambda rows: list(stump.predict(imputer.transform(rows)[:, [column]])), chosen=names[column],
                  rule=_stump_rule(stump, names[column], binary))


def _fit_threshold(x: Any, y: Any, names: Sequence[str]) -> Fitted:
    return _fit_stump(x, y, names, binary=False)


def _fit_band_word(x: Any, y: Any, names: Sequence[str]) -> Fitted:
    return _fit_stump(x, y, names, binary=True)


def _fit_tree(x: Any, y: Any, names: Sequence[str]) -> Fitted:
    from sklearn.tree import DecisionTreeClassifier

    imputer = _median_imputer(x)
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(imputer.transform(x), y)
    used = [names[f] for f in dict.fromkeys(tree.tree_.feature) if f >= 0]
    return Fitted(lambda rows: list(tree.predict(imputer.transform(rows))), chosen=", ".join(used) or None,
                  rule=f"splits on {', '.join(used)}" if used else None)


def _fit_logistic(x: Any, y: Any, names: Sequence[str]) -> Fitted:
    import numpy as np
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler(),
                          LogisticRegression(max_iter=2000))
    model.fit(x, y)
    weights = np.abs(model[-1].coef_).mean(axis=0)
    top = names[int(weights.argmax())]
    return Fitted(lambda rows: list(model.predict(rows)), chosen=top, rule=f"largest weight: {top}")


def _grouped_cv_accuracy(fit: Callable[..., Fitted], x: Any, y: Any, names: Sequence[str], groups: Sequence[str],
                         folds: int) -> float:
    """Mean accuracy over ``folds`` group folds of the train rows (every group on one side of each fold)."""
    from sklearn.model_selection import GroupKFold

    accuracies = []
    for fit_rows, test_rows in GroupKFold(n_splits=folds).split(x, y, groups):
        fitted = fit(x[fit_rows], y[fit_rows], names)
        predicted = fitted.predict(x[test_rows])
        accuracies.append(sum(p == g for p, g in zip(predicted, y[test_rows], strict=True)) / len(test_rows))
    return float(sum(accuracies) / len(accuracies))


@dataclass(frozen=True)
class _Rung:
    """One rung: what it reads of a clip (``"text"``, nothing, or a set of columns), how it fits, why it may be n/a."""

    key: str
    name: str
    reads: str  # "nothing", "text", or a column set: "raw", "speaker_relative", "all", "bands"
    fit: Callable[..., Fitted]
    absent: str | None = None  # the note when its column set is empty


_LADDER: tuple[_Rung, ...] = (
    _Rung("majority", "majority class", "nothing", _fit_majority),
    _Rung("text", "text only (TF-IDF + LR)", "text", _fit_text),
    _Rung("threshold", "one threshold (raw)", "raw", _fit_threshold, "no numeric features"),
    _Rung("threshold_vs_speaker", "one threshold (vs speaker)", "speaker_relative", _fit_threshold,
          f"no *{SPEAKER_RELATIVE_SUFFIX} features"),
    _Rung("band_word", "one band word", "bands", _fit_band_word, "the tools show no band word"),
    _Rung("tree", "depth-2 tree", "all", _fit_tree, "no numeric features"),
    _Rung("logistic", "logistic regression", "all", _fit_logistic, "no numeric features"),
)
#: The rungs, bottom first: key -> the name a table shows.
RUNGS: dict[str, str] = {rung.key: rung.name for rung in _LADDER}


__all__ = [
    "CV_FOLDS", "PROSODY_TOOL", "RUNGS", "SPEAKER_RELATIVE_SUFFIX", "ClipReading", "band_words",
    "discrimination_ladder", "ladder_from_readings", "render_ladder_table",
]
