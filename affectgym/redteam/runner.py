"""A red-team run over a split: every scenario searched, each result written as it is found, resumable.

>>> import tempfile
>>> report = red_team("affectgym/Sarcasm-v0", env_kwargs={"rubric": "single"}, budget=4, max_scenarios=2,
...                   families=["filler", "echo"], out_dir=tempfile.mkdtemp())
>>> report.scenarios, sorted(f.family for f in report.families)
(2, ['combined', 'echo', 'filler'])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from affectgym.data.jsonl import iter_json_lines
from affectgym.data.splits import spread
from affectgym.envs.core import AffectEnv
from affectgym.envs.registration import make
from affectgym.redteam.report import DEFAULT_MAX_SHARE, RedTeamReport, not_applicable, summarise
from affectgym.redteam.search import DEFAULT_BUDGET, DEFAULT_MARGIN, ItemResult, search_scenario

ITEMS_FILE, SETTINGS_FILE = "items.jsonl", "settings.json"
#: The fields of a run's record that may hold the policy's reply, in the order they are looked for.
REPLY_FIELDS = ("final_text", "reply", "completion")


def red_team(
    env: str | gym.Env,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    split: str = "eval",
    budget: int = DEFAULT_BUDGET,
    seed: int = 0,
    margin: float = DEFAULT_MARGIN,
    max_share: float = DEFAULT_MAX_SHARE,
    max_scenarios: int | None = None,
    families: Sequence[str] | None = None,
    extra_material: Mapping[str, Sequence[str]] | None = None,
    policy_replies: Mapping[str, Sequence[str | None]] | None = None,
    out_dir: str | Path | None = None,
    on_item: Callable[[ItemResult, int, int], None] | None = None,
) -> RedTeamReport:
    """Search cheap replies that beat the honest one on every scenario of a split.

    Args:
        env: A registered env id (made with ``split`` and ``env_kwargs``) or an env.
        env_kwargs: Arguments of :func:`affectgym.make`.
        split: The split searched (an env given is searched on its own split).
        budget: Score calls per family per scenario.
        seed: The search's seed.
        margin: How far a cheap reply must beat the reference.
        max_share: Largest share of scenarios a family may win for the reward to hold.
        max_scenarios: Search only this many scenarios, spread over the split.
        families: The families searched (default: all).
        extra_material: More pieces by kind.
        policy_replies: Replies of a trained policy by scenario id, scored as the ``policy_replies`` family.
        out_dir: Write ``settings.json`` and ``items.jsonl`` (one line per scenario, as it is
            searched) here; a second run with the same settings resumes where the first stopped.
        on_item: Called with each scenario's result, the scenarios searched and all of them (a progress bar).

    Returns:
        The report, families ordered worst first.

    Raises:
        ValueError: A bad setting, or ``out_dir`` holds a run made with other settings.
    """
    env_id = env if isinstance(env, str) else (env.spec.id if env.spec else type(env.unwrapped).__name__)
    made = make(env, split=split, **dict(env_kwargs or {})) if isinstance(env, str) else env
    base = made.unwrapped
    split = getattr(base, "split", split)
    label = env_id + (f" {json.dumps(dict(env_kwargs), sort_keys=True)}" if env_kwargs else "")
    if not isinstance(base, AffectEnv):
        return not_applicable(label, split, f"{type(base).__name__}'s actions are vectors, not text: there is no reply to edit")
    if not 0 < max_share < 1:
        raise ValueError(f"max_share must be in (0, 1), got {max_share!r}")
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin!r}")
    scenarios = spread(base.scenarios, max_scenarios) if max_scenarios else list(base.scenarios)
    settings = {"env": label, "split": split, "budget": budget, "seed": seed, "margin": margin,
                "families": list(families) if families else None, "scenarios": [s.id for s in scenarios]}
    done = _resume(Path(out_dir), settings) if out_dir else {}
    items: list[ItemResult] = []
    for number, scenario in enumerate(scenarios, 1):
        if scenario.id in done:
            item = done[scenario.id]
        else:
            replies = [(text, base.flat_trace(scenario)) for text in (policy_replies or {}).get(scenario.id, ())]
            item = search_scenario(base, scenario, budget=budget, seed=seed, margin=margin, families=families,
                                   extra_material=extra_material, policy_replies=replies)
            if out_dir:
                with (Path(out_dir) / ITEMS_FILE).open("a", encoding="utf-8") as file:
                    file.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
        items.append(item)
        if on_item:
            on_item(item, number, len(scenarios))
    return summarise(items, env_id=label, split=split, budget=budget, seed=seed, margin=margin, max_share=max_share)


def _resume(folder: Path, settings: Mapping[str, Any]) -> dict[str, ItemResult]:
    """The scenarios a run in ``folder`` already searched; a new run writes its settings first."""
    folder.mkdir(parents=True, exist_ok=True)
    settings_file = folder / SETTINGS_FILE
    if settings_file.is_file():
        before = json.loads(settings_file.read_text(encoding="utf-8"))
        changed = sorted(key for key in settings if before.get(key) != settings[key])
        if changed:
            raise ValueError(f"{folder} holds a red-team run with other settings ({', '.join(changed)}); "
                             "give another --out folder or delete it")
    else:
        settings_file.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    items = folder / ITEMS_FILE
    if not items.is_file():
        return {}
    with items.open(encoding="utf-8") as lines:
        return {record["scenario_id"]: ItemResult(**record) for _, record in iter_json_lines(lines, items, ValueError)}


def policy_replies_from(path: str | Path, where: Mapping[str, str] | None = None) -> dict[str, list[str | None]]:
    """A training or eval run's replies by scenario id: ``path`` is a JSONL file or a run folder holding ``results.jsonl``.

    Each record needs ``scenario_id`` and one of :data:`REPLY_FIELDS`; ``where`` keeps only the
    records whose fields equal the given values (e.g. ``{"arm": "classifier-only"}``).

    Raises:
        ValueError: The path holds no such records.
    """
    file = Path(path)
    file = file / "results.jsonl" if file.is_dir() else file
    if not file.is_file():
        raise ValueError(f"--from-run {str(path)!r}: no JSONL file there (give a run folder with results.jsonl or a .jsonl file)")
    replies: dict[str, list[str | None]] = {}
    with file.open(encoding="utf-8") as lines:
        records = [record for _, record in iter_json_lines(lines, file, ValueError) if isinstance(record, dict)]
    for record in records:
        field = next((name for name in REPLY_FIELDS if name in record), None)
        if "scenario_id" not in record or field is None:
            continue
        if all(str(record.get(key)) == value for key, value in (where or {}).items()):
            replies.setdefault(str(record["scenario_id"]), []).append(record[field])
    if not replies:
        raise ValueError(f"--from-run {str(path)!r}: no record with scenario_id and one of {', '.join(REPLY_FIELDS)}"
                         + (f" matching {dict(where)}" if where else ""))
    return replies


__all__ = ["red_team", "policy_replies_from"]
