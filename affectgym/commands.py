"""The core subcommands: ``list`` and ``demo``."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add ``list`` and ``demo`` to the ``affectgym`` command."""
    listing = subparsers.add_parser("list", help="list every registered environment id")
    listing.add_argument(
        "filter", nargs="?", default=None, metavar="TEXT",
        help="only the envs whose id or summary contains TEXT (any case), e.g. speech or State",
    )
    listing.add_argument("--verbose", "-v", action="store_true", help="print each env's whole docstring")
    listing.add_argument("--datasets", action="store_true",
                         help="list the speech datasets dataset= can name (built-in and plug-ins) instead")
    listing.set_defaults(func=run_list)

    demo = subparsers.add_parser(
        "demo",
        help="the main job on the embedded defaults: list the envs, play one scripted episode, "
        "warm-start SmolLM2-135M on the tool protocol, train it flat with GRPO on Sarcasm-v0, then watch it play "
        "held-out lines with its own tool calls",
    )
    demo.add_argument("--env", default=None, help="environment of the scripted episode (default: the first built-in one)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the episode and of the training run")
    demo.add_argument("--out", default="runs/demo", help="output folder of the training demo (default: runs/demo)")
    demo.add_argument("--no-train", action="store_true", help="only list the envs and play the scripted episode")
    demo.set_defaults(func=run_demo)


def run_list(args: argparse.Namespace) -> int:
    """Print every affectgym id (or those matching ``args.filter``) with the first line of its docstring."""
    import affectgym
    from affectgym.envs.registration import env_summary

    if getattr(args, "datasets", False):
        from affectgym.data.speech_datasets import speech_datasets

        datasets = speech_datasets()
        width = max(map(len, datasets))
        for name, dataset in sorted(datasets.items()):
            folder = "data_dir needed" if dataset.needs_data_dir else "no data_dir"
            print(f"{name:<{width}}  {dataset.summary} ({folder})")
        return 0
    ids = affectgym.list_envs()
    if not ids:
        print("no affectgym environments are registered")
        return 0
    text = (getattr(args, "filter", None) or "").lower()
    if text:
        matching = [env_id for env_id in ids if text in env_id.lower() or text in env_summary(env_id).lower()]
        if not matching:
            print(f"no environment id or summary contains {args.filter!r}; registered: {', '.join(ids)}")
            return 1
        ids = matching
    width = max(map(len, ids))
    for env_id in ids:
        if args.verbose:
            import gymnasium as gym
            from gymnasium.envs.registration import load_env_creator

            print(f"{env_id}\n{load_env_creator(gym.spec(env_id).entry_point).__doc__}\n")
        else:
            print(f"{env_id:<{width}}  {env_summary(env_id)}")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """List the environments, replay one reference episode, then (unless ``--no-train``) the training demo."""
    import affectgym

    ids = affectgym.list_envs()
    if args.env is not None and args.env not in ids:
        raise ValueError(f"unknown environment {args.env!r}; registered: {', '.join(ids) or 'none'}")
    run_list(argparse.Namespace(verbose=False))
    if not ids:
        return 0
    env_id = args.env or ids[0]
    print(f"\n=== one scripted episode of {env_id} (seed {args.seed}) ===\n")
    play_reference_episode(env_id, seed=args.seed)
    if args.no_train:
        return 0
    from affectgym.train.demo import run_demo as run_training_demo

    print("\n=== training demo: train flat, play with tools ===\n")
    run_training_demo(args.out, seed=args.seed)
    return 0


def play_reference_episode(env_id: str, seed: int = 0) -> float:
    """Play the env's own reference answer through reset/step and print the transcript."""
    import json

    import affectgym

    env = affectgym.make(env_id, render_mode="ansi")
    base = env.unwrapped
    _, info = env.reset(seed=seed)
    final_text, trace = base.reference_answer(base.scenario)
    total = 0.0
    for entry in trace:
        if entry.get("type") == "tool_call":
            call = {"name": entry["name"], "arguments": entry.get("arguments", {})}
            _, reward, *_ = env.step(f"<tool_call>{json.dumps(call)}</tool_call>")
            total += reward
    _, reward, terminated, truncated, info = env.step(final_text)
    total += reward
    print(env.render())
    components = ", ".join(f"{k}={v:.3f}" for k, v in info["reward_components"].items() if v is not None)
    print(f"episode reward {total:.3f} ({components})")
    env.close()
    return total
