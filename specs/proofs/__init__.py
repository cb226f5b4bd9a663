"""Z3 encodings of the guarantees G1–G6. Each module exposes ``prove(bound, variant)``.

A proof asserts the *negation* of the claim and demands ``unsat``; ``sat`` yields a concrete
counterexample and ``unknown`` (e.g. a timeout) is a failure, never a pass. Each module also
keeps deliberately broken variants of its rule, so tests can show every proof is able to fail.
"""
