"""memsteward: declarative governance of agent memory (MemoRepair + MeClear)."""

__version__ = "0.1.0"
