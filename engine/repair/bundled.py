"""The bundled demo store (a tool-using agent and a personal assistant) and its three events.

``python -m memsteward.repair.bundled`` regenerates ``engine/data/repair/*.json`` (the neural
skill's parameters are trained here with the same model the ``param`` operator uses).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import neural

WEATHER_V1 = {"name": "weather", "version": 1,
              "tools": {"forecast": {"params": {"location": "string", "days": "integer", "units": "string"},
                                     "required": ["location"]}}}
WEATHER_V2 = {"name": "weather", "version": 2,
              "tools": {"get_forecast": {"params": {"city": "string", "days": "integer"}, "required": ["city"]}},
              "renames": {"forecast": "get_forecast"},
              "arg_renames": {"get_forecast": {"location": "city"}}}
SEARCH_V1 = {"name": "search", "version": 1,
             "tools": {"web_search": {"params": {"q": "string"}, "required": ["q"]}}}

PROFILE = [
    ("p1", "The user is allergic to peanuts and carries an epipen.", "allergy"),
    ("p2", "The user prefers vegetarian meals and cooks tofu often.", "diet"),
    ("p3", "The user lives in Berlin and bikes to work.", "location"),
    ("p4", "The user's sister Anna visits every spring.", "family"),
    ("p5", "The user likes jazz concerts on Friday nights.", "hobby"),
    ("p6", "The user reads science fiction novels before bed.", "hobby"),
]


def artifact_doc(ident: str, kind: str, content: Any, arch: str | None = None, **meta: Any) -> dict[str, Any]:
    """One artifact in the store JSON exchange format (used by the demo data and the benchmarks)."""
    out: dict[str, Any] = {"id": ident, "kind": kind}
    if arch:
        out["arch"] = arch
    out["content"] = content
    out["meta"] = meta
    return out


def _traj(task: str, calls: list[dict], result: str) -> dict[str, Any]:
    return {"task": task, "calls": calls, "result": result}


def demo_store_document() -> dict[str, Any]:
    arts = [
        # --- tool-using agent
        artifact_doc("api-weather-v1", "record", WEATHER_V1),
        artifact_doc("api-search-v1", "record", SEARCH_V1),
        artifact_doc("traj-paris", "record", _traj("Plan a picnic in Paris.", [
            {"tool": "forecast", "args": {"location": "Paris", "days": 2}}], "Sunny in Paris for two days.")),
        artifact_doc("traj-lyon", "record", _traj("Pack for a trip to Lyon.", [
            {"tool": "forecast", "args": {"location": "Lyon", "days": 3}}], "Heavy rain expected in Lyon.")),
        artifact_doc("traj-nice", "record", _traj("Weekend in Nice.", [
            {"tool": "forecast", "args": {"location": "Nice", "units": "metric"}}], "Warm weekend in Nice.")),
        artifact_doc("traj-louvre", "record", _traj("Find museum hours.", [
            {"tool": "web_search", "args": {"q": "Louvre opening hours"}}], "The Louvre opens at 9am.")),
        artifact_doc("cache-paris", "cache", "Sunny in Paris for two days.", transform="texts", age_days=3),
        artifact_doc("cache-lyon", "cache", "Heavy rain expected in Lyon.", transform="texts", age_days=10),
        artifact_doc("cache-lyon-old", "cache", "Rain in Lyon (last year).", transform="texts", age_days=400),
        artifact_doc("cache-louvre", "cache", "The Louvre opens at 9am.", transform="texts", age_days=1),
        artifact_doc("chain-weather", "skill", {"goal": "Check the weather before a trip.", "calls": [
            {"tool": "forecast", "args": {"location": "Paris", "days": 2}},
            {"tool": "forecast", "args": {"location": "Lyon", "days": 3}}]}, "chain"),
        artifact_doc("chain-weekend", "skill", {"goal": "Weekend forecast in metric units.", "calls": [
            {"tool": "forecast", "args": {"location": "Nice", "units": "metric"}}]}, "chain"),
        artifact_doc("chain-museum", "skill", {"goal": "Look up museum hours.", "calls": [
            {"tool": "web_search", "args": {"q": "Louvre opening hours"}}]}, "chain"),
        artifact_doc("prompt-travel", "skill", "Check the forecast first. Sunny in Paris for two days. "
             "Heavy rain expected in Lyon.", "prompt",
             probes=[{"query": "how many sunny days in Paris", "expect": "sunny"}]),
        artifact_doc("sum-trips", "summary", "Trips: Paris picnic (sunny), Lyon (rain), Louvre hours."),
        artifact_doc("sum-weekly", "summary", "This week: rain in Lyon; sunny Paris.", value=1.5),
        artifact_doc("sum-weekend", "summary", "Weekend plan for Nice using the metric forecast.", value=0.6),
        # --- personal assistant
        *[artifact_doc(i, "record", {"text": t, "label": y}) for i, t, y in PROFILE],
        artifact_doc("sum-profile", "summary", "Allergic to peanuts; vegetarian; lives in Berlin."),
        artifact_doc("sum-leisure", "summary", "Jazz on Fridays; science fiction at night; vegetarian."),
        artifact_doc("neural-prefs", "skill", neural.train([(t, y) for _, t, y in PROFILE]), "neural"),
        artifact_doc("prompt-chef", "skill", "Cook vegetarian meals. Never use peanuts.", "prompt"),
        artifact_doc("cache-menu", "cache", "vegetarian menu without peanuts", transform="texts", cost=6.0),
        artifact_doc("sum-digest", "summary", "Digest: a vegetarian who must avoid peanuts.", value=0.3),
        # an expensive shared prerequisite: worth repairing only for both dependents together
        artifact_doc("cache-household", "cache", "peanuts; Berlin", transform="texts", value=0.2, cost=4.0),
        artifact_doc("sum-visit", "summary", "Anna's spring visit: no peanuts in Berlin."),
        artifact_doc("sum-weekend-plans", "summary", "Friday jazz in Berlin, peanut-free snacks."),
    ]
    inf = [
        ("api-weather-v1", "chain-weather"), ("traj-paris", "chain-weather"), ("traj-lyon", "chain-weather"),
        ("api-weather-v1", "chain-weekend"), ("traj-nice", "chain-weekend"),
        ("api-search-v1", "chain-museum"), ("traj-louvre", "chain-museum"),
        ("traj-paris", "cache-paris"), ("traj-lyon", "cache-lyon"), ("traj-lyon", "cache-lyon-old"),
        ("traj-louvre", "cache-louvre"),
        ("traj-paris", "prompt-travel"), ("traj-lyon", "prompt-travel"),
        ("traj-paris", "sum-trips"), ("traj-lyon", "sum-trips"), ("traj-louvre", "sum-trips"),
        ("sum-trips", "sum-weekly"), ("cache-lyon", "sum-weekly"),
        ("chain-weekend", "sum-weekend"), ("traj-nice", "sum-weekend"),
        ("p1", "sum-profile"), ("p2", "sum-profile"), ("p3", "sum-profile"),
        ("p2", "sum-leisure"), ("p5", "sum-leisure"), ("p6", "sum-leisure"),
        *[(i, "neural-prefs") for i, _, _ in PROFILE],
        ("p1", "prompt-chef"), ("p2", "prompt-chef"),
        ("p1", "cache-menu"), ("p2", "cache-menu"),
        ("sum-profile", "sum-digest"), ("prompt-chef", "sum-digest"),
        ("p1", "cache-household"), ("p3", "cache-household"),
        ("cache-household", "sum-visit"), ("p4", "sum-visit"),
        ("cache-household", "sum-weekend-plans"), ("p5", "sum-weekend-plans"),
    ]
    sem = [("sum-profile", "sum-leisure"), ("cache-paris", "cache-lyon"), ("sum-trips", "prompt-travel")]
    edges = [{"src": s, "dst": d, "type": "influence"} for s, d in inf]
    edges += [{"src": s, "dst": d, "type": "semantic"} for s, d in sem]
    return {"artifacts": arts, "edges": edges}


EVENTS: dict[str, dict[str, Any]] = {
    "delete": {"type": "delete", "roots": ["p1"]},
    "correct": {"type": "correct", "roots": ["traj-lyon"], "replacements": [
        {"id": "traj-lyon", "kind": "record", "content": _traj("Pack for a trip to Lyon.", [
            {"tool": "forecast", "args": {"location": "Lyon", "days": 3}}], "Mild and dry weather in Lyon."),
         "meta": {"corrected": 1}}]},
    "migrate": {"type": "migrate", "roots": ["api-weather-v1"], "interface": WEATHER_V2},
}

# Diagnostic tasks (ΔTask): the artifacts each task's action trace reads.
TASKS: list[list[str]] = [
    ["chain-weather", "cache-paris"], ["prompt-chef", "sum-profile"], ["neural-prefs"],
    ["sum-weekly", "cache-lyon"], ["chain-weekend", "sum-weekend"], ["sum-digest"], ["chain-museum"],
    ["sum-visit", "sum-weekend-plans"],
]


def data_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "repair"


def write(directory: Path | None = None) -> None:
    d = directory or data_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / "store.json").write_text(json.dumps(demo_store_document(), indent=1) + "\n")
    for name, ev in EVENTS.items():
        (d / f"event-{name}.json").write_text(json.dumps(ev, indent=2) + "\n")
    (d / "tasks.json").write_text(json.dumps(TASKS, indent=1) + "\n")


if __name__ == "__main__":
    write()
