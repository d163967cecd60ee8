"""Loading models: many threads at once leave every load of the process whole, and share one copy."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from tiny_models import tiny_causal_lm

from affectgym.models import load_pretrained, shared_model


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


def test_a_shared_model_is_loaded_once_for_callers_that_arrive_while_it_loads():
    loads = []

    def slow_load():
        loads.append(threading.get_ident())
        time.sleep(0.05)  # the other fifteen callers arrive during the load
        return object()

    with ThreadPoolExecutor(max_workers=16) as pool:
        models = list(pool.map(lambda _: shared_model(("test", "slow"), slow_load), range(16)))
    assert len(loads) == 1
    assert all(model is models[0] for model in models)
    assert shared_model(("test", "other"), object) is not models[0]


def test_a_shared_load_may_use_another_shared_model():
    inner = shared_model(("test", "outer"), lambda: ("outer", shared_model(("test", "inner"), lambda: "inner")))
    assert inner == ("outer", "inner")
