"""Key/value caches of recent prompts, reused by the longest token prefix a new prompt shares with one.

A multi-step episode's prompt for turn k+1 is turn k's prompt, its reply and the env's
answer: re-reading it whole every turn makes prefill most of an episode's cost on a CPU.
:class:`PrefixCache` keeps the transformers ``Cache`` of each recent generation under the
token ids it holds (the prompt and the reply). A new prompt takes the entry sharing its
longest prefix, cut back to that prefix, so ``generate`` reads only the tokens after it:

* the entry of the same episode's previous turn, whole, when the chat template renders the
  previous reply as it was generated (it is then removed: the new turn extends it);
* a copy of the part another episode shares (the system prompt and the tool schemas),
  when nothing longer matches; the entry stays for its own episode.

Keys are token ids, not episodes, so any caller gets the reuse it can and never a wrong
prefix: a cache holds exactly the keys and values of the tokens it is stored under.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any


def common_prefix_length(first: Sequence[int], second: Sequence[int]) -> int:
    """How many leading token ids ``first`` and ``second`` share.

    >>> common_prefix_length([1, 2, 3], [1, 2, 4, 5])
    2
    """
    for position, (left, right) in enumerate(zip(first, second, strict=False)):
        if left != right:
            return position
    return min(len(first), len(second))


class PrefixCache:
    """The caches of the last ``max_entries`` generations, by the token ids each holds.

    Args:
        max_entries: Caches kept (least recently used dropped first); each holds one
            prompt and reply, about 46 KB a token for SmolLM2-135M in fp32.

    Attributes:
        reused_tokens: Prompt tokens read from a cache so far.
        prefilled_tokens: Prompt tokens the model had to read so far.
    """

    def __init__(self, max_entries: int = 8):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self.entries: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.reused_tokens = 0
        self.prefilled_tokens = 0

    def take(self, prompt_ids: Sequence[int]) -> Any:
        """A cache holding the longest prefix of ``prompt_ids`` kept (at most all but its last token), or ``None``."""
        best, shared = None, 0
        for ids in self.entries:
            length = common_prefix_length(ids, prompt_ids)
            if length > shared:
                best, shared = ids, length
        shared = min(shared, len(prompt_ids) - 1)  # generate reads at least one token
        if best is None or shared < 1:
            self.prefilled_tokens += len(prompt_ids)
            return None
        if shared == len(best):  # the whole entry: this prompt extends it
            cache = self.entries.pop(best)
        else:
            cache = copy.deepcopy(self.entries[best])
            cache.crop(shared - cache.get_seq_length())
            self.entries.move_to_end(best)
        self.reused_tokens += shared
        self.prefilled_tokens += len(prompt_ids) - shared
        return cache

    def put(self, ids: Sequence[int], cache: Any) -> None:
        """Keep ``cache``, which holds the keys and values of exactly ``ids``."""
        key = tuple(ids)
        self.entries[key] = cache
        self.entries.move_to_end(key)
        while len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)


__all__ = ["PrefixCache", "common_prefix_length"]
