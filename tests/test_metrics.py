"""Metric flattening shared by every tracking exporter (SPEC §1)."""

from __future__ import annotations

from evalexport.metrics import flatten_metrics

AGGREGATE = [
    {
        "agent_ref": {"name": "aime24_math_simple_agent"},
        "agent_metrics": {
            "mean/reward": 0.43,
            "pass@1[avg-of-32]/symbolic_accuracy": 43.1,
            "pass@1[avg-of-32]/no_answer": 1.9,
            "pass@1[avg-of-32]/no_answer/std_dev_across_runs": 0.4,
            "nested": {"deeper": {"value": 3}},
            "passed": True,
            "failed": False,
            "judge": "gpt-judge",
            "missing": None,
            "per_sample_aggregate": {"symbolic_accuracy": [1.0, 0.0, 0.5]},
        },
        "key_metrics": {"pass@1[avg-of-32]/symbolic_accuracy": 43.1},
        "group_level_metrics": [{"_ng_task_index": 0, "mean/reward": 1.0}],
    },
    {"agent_ref": {"name": "other"}, "agent_metrics": {"mean/reward": 1}},
]


def test_agent_and_key_metrics_are_flattened_with_their_prefixes() -> None:
    flat = flatten_metrics(AGGREGATE)
    assert flat.metrics == {
        "aime24_math_simple_agent/failed": 0.0,
        "aime24_math_simple_agent/mean/reward": 0.43,
        "aime24_math_simple_agent/nested/deeper/value": 3.0,
        "aime24_math_simple_agent/pass@1[avg-of-32]/no_answer": 1.9,
        "aime24_math_simple_agent/pass@1[avg-of-32]/no_answer/std_dev_across_runs": 0.4,
        "aime24_math_simple_agent/pass@1[avg-of-32]/symbolic_accuracy": 43.1,
        "aime24_math_simple_agent/passed": 1.0,
        "key_metrics/aime24_math_simple_agent/pass@1[avg-of-32]/symbolic_accuracy": 43.1,
        "other/mean/reward": 1.0,
    }


def test_strings_are_text_and_none_and_lists_are_dropped() -> None:
    flat = flatten_metrics(AGGREGATE)
    assert flat.texts == {"aime24_math_simple_agent/judge": "gpt-judge"}
    assert not any("per_sample" in name or "missing" in name for name in flat.metrics)
    assert not any("group_level" in name for name in flat.metrics)


def test_the_order_of_agents_does_not_change_the_result() -> None:
    assert flatten_metrics(AGGREGATE) == flatten_metrics(list(reversed(AGGREGATE)))


def test_non_finite_metrics_are_left_out_and_named() -> None:
    flat = flatten_metrics(
        [
            {
                "agent_ref": {"name": "a"},
                "agent_metrics": {"x": float("inf"), "y": float("nan"), "z": 1},
            }
        ]
    )
    assert flat.metrics == {"a/z": 1.0}
    assert flat.non_finite == ["a/x", "a/y"]
    assert flat.non_finite_warning() == "2 metrics are NaN or infinite and are not logged: a/x, a/y"
