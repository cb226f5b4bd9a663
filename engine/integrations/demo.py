"""`memsteward demo` scene: a LangGraph store behind the governed adapter."""

from __future__ import annotations

from collections.abc import Callable

NS = ("memories", "alice")


def run_langgraph_demo(echo: Callable[[str], None]) -> None:
    """A handful of memories and summaries derived from them in LangGraph's InMemoryStore;
    deleting a source hides and repairs the summaries; a search before and after shows it."""
    try:
        from langgraph.store.memory import InMemoryStore

        from .langgraph import GovernedStore
    except ImportError:
        echo("  (skipped: LangGraph is not installed; pip install 'memsteward[langgraph]')")
        return
    from ..api import bundled_path, load_policy, open_store
    from ..errors import WriteRefused

    inner = InMemoryStore()
    gs = GovernedStore(inner, open_store(), load_policy(bundled_path("policies", "default.yaml")))
    notes = {"home": "Alice lives at 12 Rue Cler, Paris.", "tea": "Alice drinks green tea.",
             "work": "Alice works as a nurse.", "cat": "Alice has a cat named Miso."}
    for key, text in notes.items():
        gs.put(NS, key, {"content": text})
    src = lambda *keys: [[list(NS), k] for k in keys]  # noqa: E731
    gs.put(NS, "profile", {"content": " ".join(notes[k] for k in ("home", "tea", "work")),
                           "derived_from": src("home", "tea", "work")})
    gs.put(NS, "address-card", {"content": notes["home"], "derived_from": src("home")})
    gs.put(NS, "pets", {"content": notes["cat"], "derived_from": src("cat")})

    def show(title: str) -> None:
        echo(f"  {title}")
        for it in gs.search(NS, limit=20):
            echo(f"    {it.key:<13} {it.value['content']}")

    show("search before (GovernedStore over langgraph InMemoryStore):")
    echo("  delete ('memories', 'alice') / 'home'  → a MemoRepair delete event under policies/default.yaml")
    gs.delete(NS, "home")
    plan = gs.last_plan
    echo(f"    barrier hid {len(plan.barrier)} items at once; republished {len(plan.republished)} repaired "
         f"summary; {len(plan.withdrawn) - 1} stays withdrawn (no retained support)")
    show("search after:")
    raw = [it for it in inner.search(NS, limit=100) if "Rue Cler" in str(it.value)]
    echo(f"  the wrapped store itself holds the deleted address in {len(raw)} item(s); a summary carrying it again:")
    try:
        gs.put(NS, "card2", {"content": notes["home"], "derived_from": src("tea")})
    except WriteRefused as exc:
        echo(f"    refused ({exc.reason}): {exc.message}")
    gs.put(NS, "home2", {"content": notes["home"]})
    echo("  the user saying it again first-hand is a new memory (reingest: allow): "
         f"{gs.get(NS, 'home2') is not None}")
