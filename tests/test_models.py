"""Loading models: many threads at once leave every load of the process whole."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tiny_models import tiny_causal_lm

from affectgym.models import load_pretrained


def meta_parameters(model) -> list[str]:
    return [name for name, p in model.named_parameters() if p.device.type == "meta"]


def test_models_loaded_by_many_threads_at_once_leave_every_later_load_whole(tmp_path):
    # Sixteen agents or scorers loading at once. Unserialised, transformers left the tied lm_head on
    # the meta device in later loads of the process (a DPO round after a concurrent eval failed:
    # "Cannot copy out of meta tensor"; huggingface/transformers#44940).
    from transformers import AutoModelForCausalLM

    folder = str(tiny_causal_lm(tmp_path))
    with ThreadPoolExecutor(max_workers=16) as pool:
        loaded = list(pool.map(lambda _: load_pretrained(AutoModelForCausalLM.from_pretrained, folder), range(16)))
    assert [meta_parameters(model) for model in loaded] == [[]] * 16
    assert meta_parameters(AutoModelForCausalLM.from_pretrained(folder)) == []
