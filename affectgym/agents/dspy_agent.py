"""An agent that runs ``dspy.ReAct`` over the env's tools, with any ``dspy.LM``.

Each env tool becomes a thin ``dspy.Tool``: calling it sends the tool-call text to the env
through ``step`` and returns the observation. When ReAct finishes, its ``answer`` field is
submitted as the episode's last message. The task (the env's system message) is the
signature's instructions, so the model learns the answer format from the env itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from affectgym.agents.base import Agent, StepFn, tool_call_text

ANSWER_DESCRIPTION = "your final message to the environment, written exactly in the answer format the task asks for"


class DSPyAgent(Agent):
    """``dspy.ReAct`` as an affectgym agent.

    Args:
        lm: A ``dspy.LM`` (any provider; ``dspy.utils.DummyLM`` in tests) or a model name.
        base_url: With a model name: an OpenAI-compatible endpoint (the name is sent as
            ``openai/<model>``); without, the name goes to ``dspy.LM`` as it is (e.g.
            ``"openrouter/meta-llama/llama-3.1-8b-instruct"``).
        api_key_env: Environment variable with the key (default ``OPENAI_API_KEY``).
        max_iters: Most ReAct steps (tool calls) before the answer is extracted.
        adapter: A DSPy adapter (default: DSPy's ``ChatAdapter``).
        lm_kwargs: Passed to ``dspy.LM`` with a model name (temperature, max_tokens...).
        name: Name shown in tables.
    """

    def __init__(
        self,
        lm: Any,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        max_iters: int = 6,
        adapter: Any = None,
        name: str | None = None,
        **lm_kwargs: Any,
    ):
        import dspy

        if isinstance(lm, str):
            model = lm
            if base_url is not None:
                model = model if model.startswith("openai/") else f"openai/{model}"
                lm_kwargs.setdefault("api_base", base_url)
                lm_kwargs.setdefault("api_key", os.environ.get(api_key_env or "OPENAI_API_KEY") or "EMPTY")
            lm = dspy.LM(model, **lm_kwargs)
        self.lm = lm
        self.base_url = base_url
        self.max_iters = max_iters
        self.adapter = adapter
        self.name = name or f"dspy:{getattr(lm, 'model', type(lm).__name__)}"

    def act(self, observation: str, info: Mapping[str, Any]) -> str:
        """Not supported: ReAct runs its own loop; the runner calls :meth:`play`."""
        raise NotImplementedError("DSPyAgent plays whole episodes with dspy.ReAct; call play(step, observation, info)")

    def play(self, step: StepFn, observation: str, info: Mapping[str, Any]) -> None:
        """Run ReAct over the env's tools, then submit its answer if the episode is still going.

        Args:
            step: The env's step function.
            observation: First observation.
            info: First ``info`` (``messages`` and ``tools``).
        """
        import dspy

        state = {"done": False}

        def send(action: str) -> str:
            if state["done"]:
                return "The episode is over; give your final answer now."
            text, _, terminated, truncated, _ = step(action)
            state["done"] = terminated or truncated
            return text

        tools = [self._tool(schema, send) for schema in info.get("tools") or []]
        messages = list(info.get("messages") or [])
        task = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        signature = dspy.Signature(
            {
                "observation": (str, dspy.InputField(desc="what the environment said")),
                "answer": (str, dspy.OutputField(desc=ANSWER_DESCRIPTION)),
            },
            task or "Complete the task.",
        )
        react = dspy.ReAct(signature, tools=tools, max_iters=self.max_iters)
        with dspy.context(lm=self.lm, adapter=self.adapter):
            prediction = react(observation=observation)
        if not state["done"]:
            send(str(prediction.answer))

    def describe(self) -> dict[str, Any]:
        """Class, LM and ReAct settings."""
        return {**super().describe(), "lm": getattr(self.lm, "model", type(self.lm).__name__), "base_url": self.base_url, "max_iters": self.max_iters}

    @staticmethod
    def _tool(schema: Mapping[str, Any], send: Any) -> Any:
        import dspy

        function = schema["function"]
        name = function["name"]
        properties = dict((function.get("parameters") or {}).get("properties") or {})

        def call(**arguments: Any) -> str:
            return send(tool_call_text(name, arguments))

        return dspy.Tool(
            call,
            name=name,
            desc=function.get("description") or name,
            args=properties,
            arg_types={key: Any for key in properties},
            arg_desc={key: str(value.get("description", "")) for key, value in properties.items()},
        )


__all__ = ["DSPyAgent"]
