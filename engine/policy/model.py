"""The policy language, modelled in pydantic (frozen, unknown fields forbidden).

A policy declares, for MemoRepair (the MemoRepair paper, arXiv 2605.07242, §2.3–2.4):

* the artifact ``kinds`` (record, cache, summary, skill), whether each is replayable, which
  skill architectures exist (neural, prompt, chain) and the numeric metadata rules may test;
* the repair-mode map Φ_μ as ordered ``modes`` rules ``when → mode`` (first match wins);
* what "retained support suffices" means (``support``);
* the validation oracles per mode (and per kind / architecture), composed as "all must pass";
* the value w_i and cost c_i of each candidate, the tradeoff λ and an optional budget β;

and, for MeClear (the MeClear paper, Algorithm 1), the query-time ``clearance`` settings.

Structural constraints (types, enums, unknown fields, NaN) are enforced here; semantic
constraints (totality, shadowing, type-safety, λ ≥ 0, …) are findings of
:mod:`memsteward.policy.analysis`, so that ``memsteward check`` can report all of them at once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

KINDS: tuple[str, ...] = ("record", "cache", "summary", "skill")  # the paper's kinds (MemoRepair §2.1)
ROLES: tuple[str, ...] = ("root", "replayable", "text", "skill", "opaque")
# what each paper kind is to the engine when its declaration names no role
PAPER_ROLES: dict[str, str] = {"record": "root", "cache": "replayable", "summary": "text", "skill": "skill"}
ARCHITECTURES: tuple[str, ...] = ("neural", "prompt", "chain")
EVENTS: tuple[str, ...] = ("delete", "correct", "migrate")
MODES: tuple[str, ...] = ("remove", "recompute", "regen", "param")
ORACLES: tuple[str, ...] = ("schema", "replay", "task_regression", "sandbox", "forget_reference", "grounded",
                            "embedding", "plugin")

MAX_KIND_CHARS = 64
MAX_KINDS = 256
KIND_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"  # an identifier: safe in messages, cells, JSON paths and SQL values
# A kind name: the four paper kinds or any kind the policy declares under ``kinds``; whether a name
# used elsewhere (a rule, a weight table) is declared is a finding of ``check``, with its line
Kind = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KIND_CHARS, pattern=KIND_PATTERN)]
Role = Literal["root", "replayable", "text", "skill", "opaque"]
Architecture = Literal["neural", "prompt", "chain"]
EventType = Literal["delete", "correct", "migrate"]
Mode = Literal["remove", "recompute", "regen", "param"]
Support = Literal["sufficient", "insufficient"]

# Upper bounds of the numbers that drive work (documented in the JSON Schema via `le`)
MAX_CONCURRENCY = 64
MAX_TIMEOUT_S = 300.0
MAX_DEADLINE_S = 600.0  # total seconds of one model call, retries and backoff included (issue 25)
MAX_EVENT_DEADLINE_S = 86400.0  # seconds one run of an event may take (repair.event_deadline, issue 25)
MAX_RETRIES = 8
MAX_REPLAY_RUNS = 16
MAX_PROBES = 256
MAX_PERMUTATIONS = 10_000
MAX_SAMPLES = 4096
MAX_RETRIEVAL_BUDGET = 64
MAX_EXACT_RETRIEVAL_BUDGET = 16  # exact Shapley evaluates 2^K coalitions
MAX_TRIALS = 64
MAX_CALL_BUDGET = 10_000_000


# the shapiq approximators of Shapley values memsteward plays its cached game with (shapiq ≥ 1.4)
SHAPIQ_ESTIMATORS = ("KernelSHAP", "UnbiasedKernelSHAP", "kADDSHAP", "SVARM", "PermutationSamplingSV",
                     "OwenSamplingSV", "StratifiedSamplingSV")
Estimator = Literal["permutation", "stratified", "exact", "shapiq:KernelSHAP", "shapiq:UnbiasedKernelSHAP",
                    "shapiq:kADDSHAP", "shapiq:SVARM", "shapiq:PermutationSamplingSV", "shapiq:OwenSamplingSV",
                    "shapiq:StratifiedSamplingSV"]


class Strict(BaseModel):
    """Base: frozen, unknown fields are errors, NaN/inf are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _one_or_many(value: object) -> object:
    """Accept a scalar where a list is expected (``kind: cache`` ≡ ``kind: [cache]``)."""
    if isinstance(value, (str, bool)):
        return [value]
    return value


# --------------------------------------------------------------------------- kinds


class MetaField(Strict):
    """A numeric metadata field of a kind that mode rules may test (e.g. ``age_days``)."""

    min: float | None = None
    max: float | None = None
    default: float = 0.0
    description: str = ""


MAX_FIELDS = 32
MAX_PATH_PARTS = 8
# a governed field: a JSON path of object keys into an artifact's content (``$`` is the whole content)
JsonPath = Annotated[str, StringConstraints(max_length=256,
                                            pattern=rf"^\$(\.[A-Za-z_][A-Za-z0-9_]*){{0,{MAX_PATH_PARTS}}}$")]
# a plugin's name: an entry-point name in the ``memsteward.operators`` / ``memsteward.oracles`` groups
PluginName = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$")]


class EmbedSpec(Strict):
    """Keep a vector of this kind's text in step with repair: every successor gets the vector of its
    governed text, rebuilt by ``repair.embedder``, in ``meta[field]`` (with the text's digest)."""

    field: Annotated[str, StringConstraints(max_length=64, pattern=KIND_PATTERN)] = "embedding"


class KindSpec(Strict):
    """Declaration of one artifact kind: what it is to the engine (``role``), and what rules may test.

    Roles: ``root`` (raw records, the roots of provenance), ``replayable`` (a deterministic transform
    of its inputs: ``recompute`` applies), ``text`` (regenerable text: ``regen``), ``skill`` (has
    ``architectures``: neural, prompt, chain; ``param`` repairs neural ones), ``opaque`` (never
    regenerated: only ``remove``). A paper kind (record, cache, summary, skill) without a role has
    its paper role; any other kind must name one. ``replayable`` defaults to true for the role
    ``replayable`` and to false otherwise, so a paper policy means what it meant before roles.
    ``fields``: the JSON paths of the content the repair governs (default: the whole content).
    ``operators``: a repair operator by name (an installed plugin, see ``memsteward plugins``) for
    a mode of this kind, in place of the built-in one.
    """

    role: Role | None = None
    replayable: bool = False
    architectures: list[Architecture] = Field(default_factory=list)
    meta: dict[str, MetaField] = Field(default_factory=dict)
    fields: list[JsonPath] = Field(default_factory=list, max_length=MAX_FIELDS)
    operators: dict[Mode, PluginName] = Field(default_factory=dict)
    embed: EmbedSpec | None = None
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _replayable_by_role(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("role") == "replayable" and "replayable" not in data:
            return {**data, "replayable": True}
        return data


# --------------------------------------------------------------------------- mode map Φ_μ


class NumericCondition(Strict):
    """Bounds on one numeric metadata field; all given bounds must hold."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    eq: float | None = None
    ne: float | None = None

    @model_validator(mode="after")
    def _non_empty(self) -> NumericCondition:
        if all(getattr(self, k) is None for k in ("gt", "ge", "lt", "le", "eq", "ne")):
            raise ValueError("a metadata condition needs at least one of gt, ge, lt, le, eq, ne")
        return self

    def holds(self, x: float) -> bool:
        """Evaluate the condition on a concrete value."""
        return (
            (self.gt is None or x > self.gt)
            and (self.ge is None or x >= self.ge)
            and (self.lt is None or x < self.lt)
            and (self.le is None or x <= self.le)
            and (self.eq is None or x == self.eq)
            and (self.ne is None or x != self.ne)
        )

    def thresholds(self) -> list[float]:
        return [v for v in (self.gt, self.ge, self.lt, self.le, self.eq, self.ne) if v is not None]


class When(Strict):
    """The guard of a mode rule. An omitted field matches everything."""

    kind: list[Kind] | None = None
    arch: list[Architecture] | None = None
    event: list[EventType] | None = None
    support: Support | None = None
    partitions: bool | None = None
    meta: dict[str, NumericCondition] = Field(default_factory=dict)

    _lists = field_validator("kind", "arch", "event", mode="before")(_one_or_many)


class ModeRule(Strict):
    """One ordered rule of Φ_μ: the first rule whose ``when`` matches assigns ``mode``."""

    name: str | None = None
    when: When = Field(default_factory=When)
    mode: Mode
    description: str = ""


class SupportSpec(Strict):
    """When retained support suffices for a descendant (MemoRepair §2.3).

    An artifact's inputs are its influence parents; an input is *retained* when it is in
    Ret(e) (or is an affected descendant that can itself be repaired). Support suffices when
    ``retained ≥ min_retained`` and ``retained / inputs ≥ min_fraction``.
    """

    min_retained: int = Field(default=1, ge=0)
    min_fraction: float = Field(default=0.0, ge=0.0, le=1.0)

    def sufficient(self, retained: int, inputs: int) -> bool:
        fraction = 1.0 if inputs == 0 else retained / inputs
        return retained >= self.min_retained and fraction >= self.min_fraction


# --------------------------------------------------------------------------- validation oracles


class SchemaOracle(Strict):
    """Successor content must validate against a JSON Schema (per kind, or a default)."""

    oracle: Literal["schema"]
    schema_: dict = Field(default_factory=dict, alias="schema")
    by_kind: dict[Kind, dict] = Field(default_factory=dict)


class ReplayOracle(Strict):
    """Re-running the recorded transform must reproduce the successor (within tolerance)."""

    oracle: Literal["replay"]
    runs: int = Field(default=2, ge=1, le=MAX_REPLAY_RUNS)
    tolerance: float = Field(default=0.0, ge=0.0)


class Probe(Strict):
    query: str
    expect: str


class TaskRegressionOracle(Strict):
    """Probe queries with expected answers; at least ``min_pass`` of them must pass."""

    oracle: Literal["task_regression"]
    probes: list[Probe] = Field(default_factory=list, max_length=MAX_PROBES)
    min_pass: float = Field(default=1.0, ge=0.0, le=1.0)


class SandboxOracle(Strict):
    """A chain procedure's calls must type-check against the current interface κ_e."""

    oracle: Literal["sandbox"]
    allow_extra_args: bool = False


class ForgetReferenceOracle(Strict):
    """Parametric repair: forget-set suppression and retained (reference) utility."""

    oracle: Literal["forget_reference"]
    max_forget_score: float = Field(default=0.2, ge=0.0, le=1.0)
    min_retained_utility: float = Field(default=0.8, ge=0.0, le=1.0)


class GroundedOracle(Strict):
    """Regenerated text: grounded in retained support, no prompt scaffolding or control
    characters, nothing only the forget set holds (the lexical test of ``oracles.grounding_problems``)."""

    oracle: Literal["grounded"]
    min_support: float = Field(default=0.75, ge=0.0, le=1.0)  # share of a sentence's content words


class EmbeddingOracle(Strict):
    """The successor's vector (``meta[<kind>.embed.field]``) was computed from its republished text:
    the text digest it records matches, and re-embedding that text gives the vector (cosine ≥ 1 − tolerance)."""

    oracle: Literal["embedding"]
    tolerance: float = Field(default=1e-6, ge=0.0, le=1.0)


Setting = str | int | float | bool | None


class PluginOracle(Strict):
    """An oracle from an installed plugin (entry-point group ``memsteward.oracles``), with its settings."""

    oracle: Literal["plugin"]
    plugin: PluginName
    settings: dict[str, Setting] = Field(default_factory=dict, max_length=64)


OracleSpec = Annotated[
    SchemaOracle | ReplayOracle | TaskRegressionOracle | SandboxOracle | ForgetReferenceOracle | GroundedOracle
    | EmbeddingOracle | PluginOracle,
    Field(discriminator="oracle"),
]


def oracle_name(spec: Any) -> str:
    """How an oracle is named in reports, coverage and ``compare``: its type, or ``plugin:<name>``."""
    return f"plugin:{spec.plugin}" if spec.oracle == "plugin" else str(spec.oracle)


class ValidationRule(Strict):
    """Oracles that apply to successors built with ``mode`` (optionally only some kinds/archs)."""

    mode: Mode
    kind: list[Kind] | None = None
    arch: list[Architecture] | None = None
    oracles: list[OracleSpec] = Field(default_factory=list)

    _lists = field_validator("kind", "arch", mode="before")(_one_or_many)

    def applies(self, mode: str, kind: str, arch: str | None) -> bool:
        return (
            self.mode == mode
            and (self.kind is None or kind in self.kind)
            and (self.arch is None or (arch is not None and arch in self.arch))
        )


# --------------------------------------------------------------------------- value and cost


class Weight(Strict):
    """How w_i (value) or c_i (cost) is assigned to a candidate.

    Resolution: ``meta[from_meta]`` when the artifact carries it, else ``by_kind[kind]``,
    else ``by_mode[mode]``, else ``default``.
    """

    default: float = Field(default=1.0, ge=0.0)
    by_mode: dict[Mode, float] = Field(default_factory=dict)
    by_kind: dict[Kind, float] = Field(default_factory=dict)
    from_meta: str | None = None

    @field_validator("by_mode", "by_kind")
    @classmethod
    def _non_negative(cls, table: dict[str, float]) -> dict[str, float]:
        for key, v in table.items():
            if v < 0:
                raise ValueError(f"{key}: value must be ≥ 0 (MemoRepair §2.3: w_i, c_i ≥ 0)")
        return table

    def resolve(self, kind: str, mode: str, meta: dict | None = None) -> float:
        return self.resolver(kind, mode)(meta)

    def resolver(self, kind: str, mode: str) -> Callable[[Mapping[str, Any] | None], float]:
        """The weight of a (kind, mode) candidate as a function of its metadata (the table lookups
        done once: planning calls it for every candidate of a cascade)."""
        fallback = self.by_kind[kind] if kind in self.by_kind else (
            self.by_mode[mode] if mode in self.by_mode else self.default)  # type: ignore[index]
        field = self.from_meta
        if not field:
            return lambda meta: fallback

        def weight(meta: Mapping[str, Any] | None) -> float:
            v = meta.get(field) if meta else None
            if type(v) is float and 0.0 <= v < math.inf:  # the common case, decided in one test
                return v
            if isinstance(v, (int, float)):
                v = float(v)
                if math.isfinite(v) and v >= 0:
                    return v
            return fallback

        return weight


class SelectionSpec(Strict):
    """Eq. 1–4: maximise Repair(x) − λ·Cost(x); optional hard budget Σ c_i x_i ≤ β."""

    tradeoff: float = 0.3
    budget: float | None = None
    value: Weight = Field(default_factory=Weight)
    cost: Weight = Field(default_factory=Weight)


# --------------------------------------------------------------------------- LLM endpoints


#: a value memsteward puts in a request header or query (organization, project, API version):
#: printable ASCII without spaces or line breaks, so it can never start another header
HeaderValue = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[!-~]+$")]


class Endpoint(Strict):
    """An OpenAI-compatible endpoint. The API key is read from ``api_key_env`` only.

    Configured as users of the ``openai`` SDK know it: ``organization`` and ``project`` (the
    ``OpenAI-Organization`` / ``OpenAI-Project`` headers), and ``api_version`` for an Azure OpenAI
    resource (``base_url`` is its endpoint, ``https://NAME.openai.azure.com``, ``model`` the
    deployment; the key goes in the ``api-key`` header). None of them is read from the environment."""

    base_url: str
    model: str
    judge_model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    # Bounds on every number that drives work (a policy is untrusted input): per-attempt timeout
    # ≤ 300 s; retries ≤ 8, so the exponential backoff (0.2 s · 2^k) sleeps ≤ 51 s in total;
    # concurrency ≤ 64 parallel requests.
    concurrency: int = Field(default=4, ge=1, le=MAX_CONCURRENCY)
    timeout: float = Field(default=30.0, gt=0, le=MAX_TIMEOUT_S)
    retries: int = Field(default=2, ge=0, le=MAX_RETRIES)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    # total seconds per call: connect + read + retries + backoff (default: every attempt's timeout
    # plus the backoff sleeps); `--deadline` on the command line overrides it
    deadline: float | None = Field(default=None, gt=0, le=MAX_DEADLINE_S)
    organization: HeaderValue | None = None
    project: HeaderValue | None = None
    api_version: HeaderValue | None = None  # set: an Azure OpenAI resource (AzureOpenAI client)


class Evaluator(Strict):
    """The agent + judge that scores a coalition (MeClear Eq. 1–2)."""

    type: Literal["offline", "openai"] = "offline"
    endpoint: Endpoint | None = None
    judge: Literal["llm", "lexical"] = "lexical"
    lexical_threshold: float = Field(default=0.5, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _endpoint_for_openai(self) -> Evaluator:
        if self.type == "openai" and self.endpoint is None:
            raise ValueError("evaluator type 'openai' needs an 'endpoint' (base_url, model)")
        return self


class Recovery(Strict):
    """The recovery predicate ν(S): which share of trials must be correct."""

    rule: Literal["all_trials", "majority", "any_trial", "threshold"] = "all_trials"
    threshold: float = Field(default=1.0, ge=0.0, le=1.0)

    def holds(self, value: float) -> bool:
        """ν from the mean of the trials' 0/1 outcomes (v̂(S))."""
        eps = 1e-9
        if self.rule == "all_trials":
            return value >= 1.0 - eps
        if self.rule == "majority":
            return value > 0.5 + eps
        if self.rule == "any_trial":
            return value > eps
        return value >= self.threshold - eps


class AdaptiveSpec(Strict):
    """Beyond the paper: sample until the removed set of Algorithm 1 is settled by the intervals
    (Theorem D, specs/ADAPTIVE_STOPPING.md), spending further samples only on the memories that
    can change it, or until a memory reaches ``max_permutations`` samples / the call budget."""

    enabled: bool = False
    batch: int = Field(default=8, ge=1, le=MAX_PERMUTATIONS)  # samples added to each relevant memory per look
    max_permutations: int = Field(default=256, ge=1, le=MAX_PERMUTATIONS)  # samples per memory at most
    # bernstein: min(Hoeffding, empirical Bernstein), union bound over memories and looks
    # (rigorous, needs ~300 permutations at τ = 0.2); normal: CLT interval z·s/√L with a
    # Bonferroni z (heuristic, stops after a few batches on clear games).
    bound: Literal["bernstein", "normal"] = "bernstein"


class BaselineSpec(Strict):
    """Settings of the comparison methods (paper Table 4: B = 32, α = 0.01, threshold 0.5)."""

    samples: int = Field(default=32, ge=1, le=MAX_SAMPLES)  # B, random ablations (ContextCite, ProxySPEX)
    lasso_alpha: float = Field(default=0.01, ge=0.0)  # α, L1 weight of the surrogates
    direct_threshold: float = Field(default=0.5, ge=0.0, le=1.0)  # flag when rating ≥ this


class ClearanceSpec(Strict):
    """MeClear settings (Algorithm 1; paper: K = 5, L = 16, κ = τ = 0.05, two trials)."""

    # lower bounds are findings of `check`; upper bounds bound the work one query can cost
    retrieval_budget: int = Field(default=5, le=MAX_RETRIEVAL_BUDGET)  # K (≤ 16 with exact: always)
    permutations: int = Field(default=16, le=MAX_PERMUTATIONS)  # L
    screen_tolerance: float = 0.05  # κ (LOO screening of Eq. 7, Algorithm 1 line 4)
    harm_tolerance: float = 0.05  # τ (harmful set H = {ψ_i < −τ}, Eq. 14)
    trials: int = Field(default=2, le=MAX_TRIALS)
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    exact: Literal["auto", "always", "never"] = "auto"
    # permutation: Eq. 11 (the paper); stratified: every evaluated coalition informs every
    # memory, with the LOO screen as a control variate (memsteward.clearance.stratified, S2);
    # exact: Eq. 3 over all 2^K coalitions; shapiq:<name>: a shapiq approximator (the `shapiq`
    # extra) playing memsteward's cached game (memsteward.clearance.shapiq_games)
    estimator: Estimator = Field(default="permutation", description=(
        "How ψ is estimated (Algorithm 1 line 5): permutation (Eq. 11), stratified (S2, LOO control "
        "variate), exact (Eq. 3, 2^K coalitions), or shapiq:<approximator> (needs memsteward[shapiq])."))
    # paper: Algorithm 1 with call_budget advisory; budgeted: one hard budget for screen,
    # estimation and verification, candidates verified early (memsteward.clearance.budgeted)
    search: Literal["paper", "budgeted"] = Field(default="paper", description=(
        "paper: Algorithm 1 as published (call_budget only caps sampling). budgeted: call_budget is a hard "
        "cap on every evaluator call of the query (screen, estimation, verification); candidate removals "
        "are verified between estimation rounds and the search stops at a verified removal of maximal gain "
        "(specs/BUDGETED_SEARCH.md)."))
    # budgeted only: what the calls left after a verified removal at the gain ceiling buy
    after_verified: Literal["stop", "refine"] = Field(default="stop", description=(
        "search: budgeted only. stop: end the query at the first verified removal of maximal gain (fewest "
        "calls). refine: keep estimating with the rest of call_budget and verify each new chain, so the "
        "ranking uses more samples and the removal can only shrink at equal gain (specs/BUDGETED_SEARCH.md)."))
    # budgeted only: while no removal the LOO ranking offers recovers, group-test blocks of memories
    # (memsteward.clearance.blocks) before the estimation rounds
    block_search: bool = Field(default=True, description=(
        "search: budgeted only. When no removal the LOO screen's ranking offers recovers, test the halves of "
        "the ranking (each test a verification at `trials`), then halves of a recovering half, down to the "
        "smallest recovering block found, before estimating ψ (specs/BUDGETED_SEARCH.md, step 2′)."))
    recovery: Recovery = Field(default_factory=Recovery)
    evaluator: Evaluator = Field(default_factory=Evaluator)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)  # 1 − δ of the radius (Eq. 13)
    exact_premium: float = Field(default=0.25, ge=0.0)  # auto: exact iff 2^K ≤ (1+p)·E[distinct]
    interactions: Literal["harmful", "all", "none"] = "harmful"  # which pairs get ω (Eq. 15)
    adaptive: AdaptiveSpec = Field(default_factory=AdaptiveSpec)
    call_budget: int | None = Field(default=None, ge=1, le=MAX_CALL_BUDGET, description=(
        "Evaluator calls per query (one call = one agent + judge trial). search: paper caps the sampled "
        "attribution only; search: budgeted caps everything and needs at least K + 2·trials."))
    # trials for the coalitions that only feed a sampled ψ estimate (permutation prefixes, the
    # stratified sample, targeted marginals); the LOO screen, v̂(∅) of (S2) and the verification
    # of Eq. 19 keep `trials`. None: `trials` everywhere (the paper).
    sample_trials: int | None = Field(default=None, ge=1, le=MAX_TRIALS)
    baselines: BaselineSpec = Field(default_factory=BaselineSpec)

    @model_validator(mode="after")
    def _budget_fits(self) -> ClearanceSpec:
        """search: budgeted needs a budget that pays for the screen and one verified candidate."""
        k, t = self.retrieval_budget, self.trials
        if self.estimator == "exact" and k > MAX_EXACT_RETRIEVAL_BUDGET:
            raise ValueError(f"estimator 'exact' enumerates 2^K coalitions: retrieval_budget (K) must be "
                             f"≤ {MAX_EXACT_RETRIEVAL_BUDGET}")
        if self.search != "budgeted":
            if self.after_verified != "stop":
                raise ValueError("after_verified 'refine' needs search 'budgeted' (the paper's search verifies once)")
            return self
        if self.call_budget is None:
            raise ValueError("search 'budgeted' needs a call_budget")
        least = k + 2 * t  # v̂(M) and one candidate at `trials`, the K LOO coalitions at one trial
        if self.call_budget < least:
            raise ValueError(f"call_budget {self.call_budget} cannot pay for the screen and one verified "
                             f"candidate: search 'budgeted' needs ≥ K + 2·trials = {least}")
        if self.estimator == "exact" and self.call_budget < (2 ** k) * min(self.sample_trials or 1, t) + least:
            raise ValueError(f"estimator 'exact' under search 'budgeted' needs call_budget ≥ 2^K·sample_trials + "
                             f"K + 2·trials = {(2 ** k) * min(self.sample_trials or 1, t) + least}")
        return self


MAX_EMBEDDING_DIM = 4096


class Embedder(Strict):
    """How vectors are computed for kinds that declare ``embed``: ``offline`` (a deterministic hashed
    bag of words, :mod:`memsteward.repair.embedding`) or ``openai`` (an OpenAI-compatible
    ``/embeddings`` endpoint, under the same allow-lists as every endpoint)."""

    type: Literal["offline", "openai"] = "offline"
    dim: int = Field(default=64, ge=2, le=MAX_EMBEDDING_DIM)  # offline only; an endpoint's model decides its own
    endpoint: Endpoint | None = None

    @model_validator(mode="after")
    def _endpoint_for_openai(self) -> Embedder:
        if self.type == "openai" and self.endpoint is None:
            raise ValueError("embedder type 'openai' needs an 'endpoint' (base_url, model)")
        return self


class RepairSpec(Strict):
    """Repair-time operator settings (offline operators by default).

    ``event_deadline``: seconds one run of an event may take (issue 25). A candidate not started when
    it has passed fails (oracle ``deadline``) and stays withdrawn; the event then publishes. A
    candidate already running ends within its own bound (a model call's ``deadline`` ≤ 600 s)."""

    regen_endpoint: Endpoint | None = None
    embedder: Embedder = Field(default_factory=Embedder)
    event_deadline: float = Field(default=3600.0, gt=0, le=MAX_EVENT_DEADLINE_S)


class LineageSpec(Strict):
    """Finding derivations that provenance does not record (``memsteward.repair.lineage``).

    ``content_scan``: on a delete (or a privacy correction), find every servable artifact outside
    C(F) holding the roots' text and treat matches as part of the cascade. A match shares at least
    ``min_shared`` runs of ``shingle_words`` consecutive words with a root. The scan reads the
    store's lineage index (word-trigram hashes written with each write), so ``shingle_words`` is at
    least 3, the index unit.
    """

    content_scan: bool = True
    shingle_words: int = Field(8, ge=3, le=64)
    min_shared: int = Field(1, ge=1, le=10_000)


# --------------------------------------------------------------------------- the policy


_VALUE_NAME = r"[A-Za-z_][A-Za-z0-9_\-]*"
_VALUE_SEGMENT = rf"(?:{_VALUE_NAME}(?:\[(?:\*|-?[0-9]{{1,6}})\])*|\{{{_VALUE_NAME}(?:,{_VALUE_NAME})*\}})"
MAX_VALUE_FIELDS = 64
_VALUE_PATH = re.compile(rf"^{_VALUE_SEGMENT}(?:\.{_VALUE_SEGMENT}){{0,7}}$")
# a path into an agent store's JSON value, as LangGraph writes its ``index`` fields
# (``content``, ``profile.address``, ``facts[*]``, ``items[0].text``, ``{a,b}``)
ValuePath = Annotated[str, StringConstraints(min_length=1, max_length=256)]
ValueName = Annotated[str, StringConstraints(max_length=64, pattern=rf"^{_VALUE_NAME}$")]


class AdapterSpec(Strict):
    """How an agent-store adapter (``memsteward.integrations.langgraph.GovernedStore``) maps an
    item's JSON value to an artifact. ``fields``: the value's governed fields — their text is the
    artifact's content, so they are what is scanned (fingerprints, tombstones, lineage), repaired
    and re-embedded; the other top-level fields are declared not to be content and are kept by a
    repair. Empty (the default): every string of the value is governed. ``provenance_field`` and
    ``meta_field``: the value's ``[[namespace, key], …]`` list and its metadata object.
    ``reingest``: the re-ingestion rule for writes of erased content (the adapter's default,
    ``allow``, when absent). An adapter argument given in code takes precedence."""

    fields: list[ValuePath] = Field(default_factory=list, max_length=MAX_VALUE_FIELDS)
    provenance_field: ValueName = "derived_from"
    meta_field: ValueName = "meta"
    reingest: Literal["allow", "refuse", "review"] | None = None

    @field_validator("fields")
    @classmethod
    def _paths(cls, fields: list[str]) -> list[str]:
        for f in fields:
            if not _VALUE_PATH.match(f):
                raise ValueError(f"{f[:64]!r} is not a value path: names joined by '.', each name optionally "
                                 "followed by [*] or [n], or a {a,b} group (at most 8 parts)")
        return fields

    @model_validator(mode="after")
    def _distinct(self) -> AdapterSpec:
        if self.provenance_field == self.meta_field:
            raise ValueError("provenance_field and meta_field must differ")
        firsts = [f.split(".")[0] for f in self.fields]  # every alternative of a {a,b} group is a head
        heads = {h for s in firsts for h in (s[1:-1].split(",") if s.startswith("{") else [s.split("[")[0]])}
        clash = sorted(heads & {self.provenance_field, self.meta_field})
        if clash:
            raise ValueError(f"a governed field cannot start at the {clash[0]!r} field (provenance or meta)")
        return self


class Policy(Strict):
    """A memory-governance policy (the root of a policy YAML file)."""

    version: Literal[1] = 1
    name: str = "policy"
    description: str = ""
    kinds: dict[Kind, KindSpec] = Field(max_length=MAX_KINDS)
    support: SupportSpec = Field(default_factory=SupportSpec)
    modes: list[ModeRule] = Field(default_factory=list)
    validation: list[ValidationRule] = Field(default_factory=list)
    selection: SelectionSpec = Field(default_factory=SelectionSpec)
    repair: RepairSpec = Field(default_factory=RepairSpec)
    lineage: LineageSpec = Field(default_factory=LineageSpec)
    clearance: ClearanceSpec = Field(default_factory=ClearanceSpec)
    adapter: AdapterSpec = Field(default_factory=AdapterSpec)

    # ---- pure helpers the engines use --------------------------------------------------

    def role(self, kind: str) -> str | None:
        """What ``kind`` is to the engine: its declared role, else its paper role (None: a declared
        kind without a role, an error of ``check``, or a kind the policy does not declare)."""
        spec = self.kinds.get(kind)
        if spec is None:
            return None
        return spec.role or PAPER_ROLES.get(kind)

    def kinds_with_role(self, role: str) -> tuple[str, ...]:
        """The declared kinds whose role is ``role``, in declaration order."""
        return tuple(k for k in self.kinds if self.role(k) == role)

    def architectures(self, kind: str) -> tuple[str | None, ...]:
        """The architecture values a kind ranges over (``None`` for kinds whose role is not skill)."""
        spec = self.kinds.get(kind)
        if spec is None:
            return ()
        if self.role(kind) == "skill":
            return tuple(spec.architectures) if spec.architectures else ARCHITECTURES
        return (None,)

    def skill_architectures(self) -> tuple[str, ...]:
        """Every architecture some declared skill kind has (what rules may name under ``arch``)."""
        out: list[str] = []
        for kind in self.kinds_with_role("skill"):
            out += [a for a in self.architectures(kind) if a is not None and a not in out]
        return tuple(out)

    def oracles_for(self, mode: str, kind: str, arch: str | None) -> list:
        """All oracles that must pass for a successor (mode, kind, arch): "all must pass"."""
        found: list = []
        for rule in self.validation:
            if rule.applies(mode, kind, arch):
                found.extend(rule.oracles)
        return found

    def value_of(self, kind: str, mode: str, meta: dict | None = None) -> float:
        """w_i for a candidate."""
        return self.selection.value.resolve(kind, mode, meta)

    def cost_of(self, kind: str, mode: str, meta: dict | None = None) -> float:
        """c_i for a candidate."""
        return self.selection.cost.resolve(kind, mode, meta)
