"""The catalog of guarantees G1–G6. Each is stated here and nowhere else.

Z3 encodings and the Hypothesis properties that test the implementation against each statement
are named per guarantee; ``memsteward verify`` runs the encodings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .code_checks import CHECKS as CODE_CHECKS


@dataclass(frozen=True)
class Guarantee:
    id: str
    name: str
    statement: str
    notation: str
    source: str
    assumptions: str
    properties: tuple[str, ...] = ()  # pytest node ids of the properties testing the implementation


_STATEMENTS: tuple[Guarantee, ...] = (
    Guarantee(
        "G1", "efficiency",
        "The contributions of all memories add up to the value of the full context minus the value of the empty one, "
        "exactly for the Shapley value, for every sampled-permutation estimate and for every stratified "
        "sample-reuse estimate (S2).",
        "Σ_i ψ_i = v(M) − v(∅)", "MeClear Eq. 3, 34–35", "any value function v: 2^M → ℝ; any multiset of L ≥ 1 permutations; any sampled coalitions (S2)"),
    Guarantee(
        "G2", "redundant-harm blind spot",
        "For a redundant harmful group R, leave-one-out sees no effect of any member while each member's Shapley "
        "contribution is −Δ/r.",
        "∀ i ∈ R: d_i = 0 ∧ ψ_i = −Δ/r", "MeClear Thm 1, Cor. A.1 (Eq. 31)", "v(S) = u(S \\ R) − Δ·[S ∩ R ≠ ∅], Δ > 0, |R| = r ≥ 2"),
    Guarantee(
        "G3", "non-degradation",
        "Clearance never lowers the task value; if it removes anything the task is recovered; and it removes the fewest "
        "memories among the admissible candidates of maximal gain.",
        "v̂(M̃) ≥ v̂(M); ĵ > 0 ⇒ ν(M̃) = 1; ĵ = min argmax_{j ∈ J} g(j)", "MeClear Thm 2, Eq. 19–22", "a fixed evaluator (cached v̂)"),
    Guarantee(
        "G4", "predecessor closure",
        "Every selection is closed under prerequisites, excludes non-executable candidates, and is optimal for "
        "Repair − λ·Cost.",
        "x_i ≤ v_i; x_i ≤ x_j ∀ j ∈ P̄_i; x ∈ argmax Σ (w_i − λ c_i) x_i", "MemoRepair Eq. 1–4, Thm 1", "λ ≥ 0, w_i, c_i ≥ 0"),
    Guarantee(
        "G5", "barrier isolation",
        "From the barrier on, no artifact of the cascade is servable unless it is a validated successor whose "
        "prerequisites are republished; failures and their dependents stay withdrawn.",
        "∀ t ≥ t_B, x ∈ C(F): servable_t(x) ⇒ validated(z_x) ∧ ∀ j ∈ P̄_x: republished_t(j)",
        "MemoRepair §2.2, Alg. 1 lines 2, 7–8",
        "complete influence provenance; crashes at any step; agent writes at any step (fenced on servable inputs)"),
    Guarantee(
        "G6", "erasure",
        "After a delete is published, no version of any artifact built from a deleted root's content holds that "
        "content (database file, WAL, exports, served artifacts), the data key of every such version is destroyed "
        "(so no copy of its ciphertext — replica, backup — decrypts), and no servable artifact carries a fingerprint "
        "of it (untracked derivations are found by content scan); the audit records ids and keyed digests only.",
        "∀ i, v: built_from(i@v, F) ⇒ erased(i@v) ∧ ¬dek_alive(i@v); ∀ servable i: ¬fingerprint(F) ⊑ content(i)",
        "GDPR Art. 17 practice; MemoRepair §2.1 (C(F))",
        "untracked copies share a fingerprint with the root (content scan); every version sealed at rest under its "
        "own DEK (AES-256-GCM), DEKs only in the key store"),
)

# The Hypothesis properties (and process-level tests) that tie the implementation to each statement.
PROPERTIES: dict[str, tuple[str, ...]] = {
    "G1": ("proofs_tests/test_meclear_properties.py::test_exact_efficiency",
           "proofs_tests/test_meclear_properties.py::test_sampled_efficiency",
           "proofs_tests/test_meclear_properties.py::test_exact_equals_average_over_all_permutations",
           "proofs_tests/test_specs_proposition1.py::test_deviation_frequency_stays_under_hoeffding_bound",
           "proofs_tests/test_meclear_stratified.py::test_stratified_efficiency",
           "proofs_tests/test_meclear_stratified.py::test_unbiased_and_radius_covers"),
    "G2": ("proofs_tests/test_meclear_paper.py::test_theorem1_redundant_pair_blind_spot",
           "proofs_tests/test_meclear_paper.py::test_corollary_a1_redundant_group"),
    "G3": ("proofs_tests/test_meclear_properties.py::test_theorem2_selection",
           "proofs_tests/test_meclear_properties.py::test_no_coalition_is_evaluated_twice",
           "proofs_tests/test_specs_certificates.py::test_real_clearance_plans_hold",
           # search: budgeted (Theorem E, specs/BUDGETED_SEARCH.md): G3 on every estimator path
           "proofs_tests/test_meclear_budgeted.py::test_g3_and_the_hard_budget_on_every_estimator",
           "proofs_tests/test_meclear_budgeted.py::test_stop_at_the_ceiling_selects_the_papers_j_hat"),
    "G4": ("proofs_tests/test_repair_closure.py::test_mincut_is_feasible_and_matches_brute_force",
           "proofs_tests/test_repair_closure.py::test_networkx_and_ortools_agree",
           "proofs_tests/test_repair_closure.py::test_baselines_feasible_and_greedy_never_beats_mincut",
           "proofs_tests/test_repair_pipeline.py::test_barrier_isolation_and_closure_after_every_event"),
    "G5": ("proofs_tests/test_specs_stateful.py::test_barrier_isolation_state_machine",
           "proofs_tests/test_specs_stateful.py::test_state_machine_catches_engine_mutation",
           "proofs_tests/test_specs_stateful.py::test_concurrent_staging_interleavings_keep_g5",
           "proofs_tests/test_repair_executors.py::test_a_worker_killed_mid_task_leaves_the_event_recoverable",
           "proofs_tests/test_repair_pipeline.py::test_any_validation_failure_keeps_itself_and_dependents_withdrawn",
           "proofs_tests/test_repair_crash.py::test_killed_repair_recovers_to_uninterrupted_result"),
    "G6": ("proofs_tests/test_repair_erasure.py::test_delete_erases_the_root_and_every_version_derived_from_it",
           "proofs_tests/test_repair_erasure.py::test_erase_rows_chain_the_digest_of_every_erased_version",
           "proofs_tests/test_repair_erasure.py::test_erasure_check_fails_when_a_derived_version_keeps_content",
           "proofs_tests/test_repair_erasure.py::test_every_shipped_demo_event_passes_its_own_audit",
           "proofs_tests/test_repair_erasure.py::test_marker_gone_with_a_concurrent_reader",
           "proofs_tests/test_repair_erasure.py::test_marker_gone_when_secure_delete_is_off_by_default",
           "proofs_tests/test_repair_erasure.py::test_content_scan_finds_an_untracked_copy_and_its_descendants"),
}

# Every guarantee with a code-level check (specs/code_checks.py) is also tested through it.
_CODE = "proofs_tests/test_specs_code_checks.py::test_code_check_holds_on_the_engine"
PROPERTIES = {gid: (*props, _CODE) if gid in CODE_CHECKS else props for gid, props in PROPERTIES.items()}

CATALOG: tuple[Guarantee, ...] = tuple(replace(g, properties=PROPERTIES[g.id]) for g in _STATEMENTS)
