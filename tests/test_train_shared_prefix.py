"""The shared-prefix GRPO trainer gives TRL's log-probabilities, gradients and samples."""

from __future__ import annotations

import pytest
import torch
from tiny_models import tiny_causal_lm
from trl import GRPOTrainer

from affectgym.train.config import TrainConfig
from affectgym.train.grpo import build_trainer
from affectgym.train.shared_prefix import RolloutCaches, SharedPrefixGRPOTrainer, distinct_rows

GENERATIONS = 3


def tiny_config(model, output_dir, **overrides) -> TrainConfig:
    return TrainConfig(
        env_id="affectgym/Sarcasm-v0", model=str(model), mode="flat", max_steps=1, num_generations=GENERATIONS,
        batch_size=2 * GENERATIONS, max_completion_length=3, lora_r=4, lora_dropout=0.0, eval_episodes=0,
        env_kwargs={"task_format": {"answer": "yesno", "flat_prompt": "compact"}, "rubric": "label"},
        output_dir=str(output_dir), **overrides,
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("models"), architecture="llama")


@pytest.fixture(scope="module")
def trainer(tiny_model, tmp_path_factory):
    trainer = build_trainer(tiny_config(tiny_model, tmp_path_factory.mktemp("run")), gpu=False)
    with torch.no_grad():  # LoRA starts as the identity (B = 0); move off it so every adapter weight has a gradient
        for name, parameter in trainer.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.05, generator=torch.Generator().manual_seed(0))
    return trainer


def grouped_batch(trainer) -> tuple[list[list[int]], torch.Tensor, torch.Tensor, int]:
    """Two prompts of different lengths, each repeated GENERATIONS times, with ragged completions."""
    tokenizer = trainer.processing_class
    texts = ["Is this sarcastic? Oh great, another Monday.", "Is it? Fine."]
    prompts = [tokenizer(text)["input_ids"] for text in texts for _ in range(GENERATIONS)]
    completions = [[5, 7, 9], [11, 13, 0], [17, 0, 0]] * 2
    completion_mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]] * 2)
    width = max(map(len, prompts))
    ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p + c for p, c in zip(prompts, completions, strict=True)])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return prompts, ids, torch.cat([mask, completion_mask], dim=1), 3


def test_runs_share_prompts_unless_told_not_to(trainer, tiny_model, tmp_path):
    assert isinstance(trainer, SharedPrefixGRPOTrainer)
    assert type(build_trainer(tiny_config(tiny_model, tmp_path, share_prompts=False), gpu=False)) is GRPOTrainer


def test_distinct_rows_maps_every_row_to_its_distinct_prompt():
    ids = torch.tensor([[0, 4, 5], [0, 4, 5], [1, 2, 3], [0, 4, 5]])
    mask = torch.tensor([[0, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]])
    distinct_ids, distinct_mask, inverse = distinct_rows(ids, mask)
    assert len(distinct_ids) == 3  # the last row differs from the first two by its mask only
    assert torch.equal(distinct_ids[inverse], ids) and torch.equal(distinct_mask[inverse], mask)


@pytest.mark.parametrize("keep", [3, 1])
def test_log_probabilities_entropies_and_gradients_match_trls_forward_pass(trainer, keep):
    _, ids, mask, length = grouped_batch(trainer)
    ids, mask = ids[:, : ids.size(1) - length + keep], mask[:, : mask.size(1) - length + keep]
    model = trainer.model
    results = []
    for compute in (SharedPrefixGRPOTrainer._get_per_token_logps_and_entropies,
                    GRPOTrainer._get_per_token_logps_and_entropies):
        model.zero_grad()
        logps, entropies, _ = compute(trainer, model, ids, mask, keep, compute_entropy=True)
        (logps * mask[:, -keep:]).sum().backward()
        grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
        results.append((logps, entropies, grads))
    (shared_logps, shared_entropy, shared_grads), (trl_logps, trl_entropy, trl_grads) = results
    real = mask[:, -keep:].bool()
    torch.testing.assert_close(shared_logps[real], trl_logps[real], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(shared_entropy[real], trl_entropy[real], rtol=1e-4, atol=1e-5)
    assert all(grad.abs().sum() > 0 for grad in trl_grads)
    for shared, reference in zip(shared_grads, trl_grads, strict=True):
        torch.testing.assert_close(shared, reference, rtol=1e-3, atol=1e-6)


def test_greedy_completions_match_trls_generation(trainer):
    prompts, *_ = grouped_batch(trainer)
    trainer.generation_config.do_sample = False
    try:
        shared, _ = trainer._generate_single_turn(prompts, None, {}, GENERATIONS)
        reference, _ = GRPOTrainer._generate_single_turn(trainer, prompts, None, {}, GENERATIONS)
    finally:
        trainer.generation_config.do_sample = True
    assert shared == reference
    assert all(len(completion) >= 1 for completion in shared)


def test_one_token_temperature_samples_match_trls_generation_without_repeating_the_cache(trainer):
    prompts, *_ = grouped_batch(trainer)
    trainer.generation_config.max_new_tokens = 1
    try:
        assert trainer._samples_one_token_by_temperature()
        torch.manual_seed(3)
        shared, _ = trainer._generate_single_turn(prompts, None, {}, GENERATIONS)
        torch.manual_seed(3)
        reference, _ = GRPOTrainer._generate_single_turn(trainer, prompts, None, {}, GENERATIONS)
    finally:
        trainer.generation_config.max_new_tokens = 3
    assert shared == reference and all(len(completion) == 1 for completion in shared)


def test_the_trainer_runs_only_on_the_trl_releases_it_is_tested_on_and_setup_cfg_pins_them():
    import configparser
    from pathlib import Path

    import trl

    from affectgym.train.shared_prefix import SUPPORTED_TRL, check_trl_version

    check_trl_version(trl.__version__)  # the installed one is tested
    with pytest.raises(RuntimeError, match=r"tested on trl>=1.16,<1.17, not trl 1.17.0.*--no-share-prompts"):
        check_trl_version("1.17.0")
    setup = configparser.ConfigParser()
    setup.read(Path(__file__).resolve().parents[1] / "setup.cfg")
    assert f"trl{SUPPORTED_TRL}" in setup["options.extras_require"]["train"].split()


def later_turn(prompts: list[list[int]], completions: list[list[int]]) -> list[list[int]]:
    """Each rollout's next prompt as TRL's tool loop builds it: the prompt, the reply and a tool result's ids (ragged)."""
    return [prompt + completion + [21 + row, 23, 25][: 1 + row % 3] for row, (prompt, completion)
            in enumerate(zip(prompts, completions, strict=True))]


def test_a_later_turn_from_the_rollouts_caches_matches_trls_generation_of_the_whole_prompt(trainer):
    prompts, *_ = grouped_batch(trainer)
    trainer.generation_config.do_sample = False
    trainer.rollout_caches = RolloutCaches()
    try:
        first, _ = trainer._generate_single_turn(prompts, None, {}, GENERATIONS)
        assert len(trainer.rollout_caches.entries) == 2, "one entry a distinct prompt and reply (greedy groups agree)"
        second_prompts = later_turn(prompts, first)
        second, _ = trainer._generate_single_turn(second_prompts, None, {}, 1)
        third_prompts = later_turn(second_prompts, second)
        third, _ = trainer._generate_single_turn(third_prompts, None, {}, 1)
        caches = trainer.rollout_caches
        reference_second, _ = GRPOTrainer._generate_single_turn(trainer, second_prompts, None, {}, 1)
        reference_third, _ = GRPOTrainer._generate_single_turn(trainer, third_prompts, None, {}, 1)
    finally:
        trainer.generation_config.do_sample = True
        trainer.rollout_caches = None
    assert second == reference_second and third == reference_third
    later = sum(map(len, second_prompts)) + sum(map(len, third_prompts))
    assert caches.reused_tokens + caches.prefilled_tokens == later
    assert caches.reused_tokens > 0.6 * later, "the later turns read most of their prompts from the caches"


def test_rollout_caches_cover_the_columns_every_row_has_and_replace_the_entries_extended():
    caches = RolloutCaches()
    layer = torch.arange(2 * 5, dtype=torch.float32).reshape(1, 1, 5, 2)
    caches.entries[(1, 2, 3, 4, 5)] = [(layer, -layer)]
    caches.entries[(1, 2, 9)] = [(layer[:, :, :3], -layer[:, :, :3])]
    # Row 0 extends the first entry whole (5 shared), row 1 shares 2 tokens with either: padded to 7 columns, the
    # batch covers min(0 + 5, 4 + 2) = 5 columns.
    cache = caches.batched([[1, 2, 3, 4, 5, 6, 7], [1, 2, 8]], width=7)
    assert cache.get_seq_length() == 5 and cache.layers[0].keys.shape == (2, 1, 5, 2)
    torch.testing.assert_close(cache.layers[0].keys[0], layer[0])
    torch.testing.assert_close(cache.layers[0].keys[1, :, 4:], layer[0, :, :1])  # its first token, after 4 pads
    assert not cache.layers[0].keys[1, :, :4].any()
    assert (1, 2, 3, 4, 5) not in caches.entries and (1, 2, 9) in caches.entries
    assert (caches.reused_tokens, caches.prefilled_tokens) == (5 + 1, 2 + 2)
    assert caches.batched([[7, 7]], width=2) is None, "no entry shares a token"
