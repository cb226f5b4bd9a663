"""MemoRepair (arXiv 2605.07242): barrier-first cascade repair of derived agent memory.

Pipeline (Algorithm 1): cascade (:mod:`.graph`) → barrier (:mod:`.store`) → modes and
candidates (:mod:`.candidates`) → selection by min cut (:mod:`.closure`) → execution in
topological order with validation (:mod:`.execute`, :mod:`.operators`, :mod:`.oracles`) →
publication. Plans are values (:mod:`.plan`); metrics are pure functions (:mod:`.metrics`).
"""
