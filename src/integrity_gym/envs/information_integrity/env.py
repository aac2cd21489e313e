"""The information_integrity environment: verify claims, check sources, then decide."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from integrity_gym.core.env import Env, describe_validation_error, validate_config
from integrity_gym.core.extras import EnvExtras
from integrity_gym.core.seeding import Partition, stable_id
from integrity_gym.core.types import Grade, StepResult, WireModel
from integrity_gym.envs.information_integrity import explain as explain_mod
from integrity_gym.envs.information_integrity import reward as rw
from integrity_gym.envs.information_integrity import rules
from integrity_gym.envs.information_integrity.grader import EpisodeRecord, Grader, GraderFactory, summarize
from integrity_gym.envs.information_integrity.models import (
    DECISIONS,
    HARMS,
    SOURCE_TYPES,
    STANCES,
    VERDICTS,
    ClaimView,
    Difficulty,
    Harm,
    HistoryEntry,
    IntegrityAction,
    IntegrityObservation,
    IntegrityState,
    Scenario,
    SourceView,
    StatusFlags,
)

if TYPE_CHECKING:
    from integrity_gym.core.registry import TaskSpec

_HISTORY_REASONING_CHARS = 500
_RESET_OPTIONS = ("difficulty", "source", "partition", "scenario_file", "scenario")
_TEXT_ACTION = re.compile(r"^\s*(?P<verb>[a-z_]+)\s*\(?\s*(?P<arg>[A-Za-z0-9_-]+)?\s*\)?\s*(?P<rest>.*)$", re.S)
_VERBS = {
    "verify": "verify_claim",
    "verify_claim": "verify_claim",
    "check": "check_source",
    "check_source": "check_source",
    "decide": "decide",
}


class IntegrityConfig(WireModel):
    """Configuration of an information_integrity episode (task config plus overrides)."""

    difficulty: Difficulty = Field(description="Tier of the scenarios: easy, medium or hard.")
    source: Literal["generated", "gold"] = Field(
        "generated",
        description="Generated scenarios (the evaluation) or the gold set, a public development set whose "
        "labels ship with the package.",
    )
    partition: Partition = Field("eval", description="Partition of generated scenarios.")
    reward_preset: str = Field("default", description="Reward preset name (default, reference) or YAML path.")
    grader: str | None = Field(None, description="Grader name; default: the scenario's tier.")
    min_claims_verified: int = Field(1, ge=0, description="Claims to verify before deciding is not premature.")
    min_sources_checked: int = Field(2, ge=0, description="Sources to check before deciding is not premature.")
    max_steps: int | None = Field(None, ge=1, description="Override of the task's step budget.")
    reasoning_char_cap: int = Field(2000, ge=1, description="Characters of decision reasoning that are read.")
    reasoning_statement_cap: int = Field(20, ge=1, description="Statements above which reasoning scores 0.")


def load_scenario_file(path: str | Path) -> Scenario:
    """Read a user's scenario JSON, validate it, derive or check its label; ``ValueError`` names the field."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"scenario_file: {str(path)!r} does not exist or is not a file")
    try:
        data = json.loads(file.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"scenario_file: {path} is not valid JSON: {exc}") from exc
    return parse_scenario(data, where=str(path))


def parse_scenario(data: Any, *, where: str = "scenario") -> Scenario:
    """Validate a scenario mapping against the published schema (the ``Scenario`` model)."""
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{where} does not match the scenario schema: {describe_validation_error(exc)}") from exc
    return rules.check_scenario(scenario)


class InformationIntegrityEnv(Env[IntegrityAction, IntegrityObservation, IntegrityState]):
    """Decide allow / flag / remove for a post after verifying its claims and checking sources.

    A claim's verdict is hidden until ``verify_claim``; a source's text, stance, reliability,
    type, date and satire flag until ``check_source``. ``decide`` ends the episode; its reasoning
    is graded from typed statements (see ``reasoning``).
    """

    env_name = "information_integrity"
    extras = EnvExtras(
        agents="integrity_gym.agents.heuristic.information_integrity",
        prompt="integrity_gym.agents.prompts.information_integrity",
        redteam="integrity_gym.agents.redteam.information_integrity",
        learned="integrity_gym.agents.redteam.learned.information_integrity",
        view="view.js",
        profiles={"seed000": "integrity_gym.envs.information_integrity.seed000"},
    )
    #: Its observation names no scenario (no id, seed or episode id) and step info carries rewards only.
    ITEM_FIELDS = ()
    local_only_options = frozenset({"scenario_file"})
    action_type = IntegrityAction
    observation_type = IntegrityObservation
    state_type = IntegrityState
    action_help = (
        "Actions: verify claim_1 | check src_2 | decide allow|flag|remove <reasoning>. Reasoning "
        "is graded from typed statements such as 'src_2 refutes claim_1', 'claim_1 is false', "
        "'src_4 is outdated', 'harm is high'. JSON works too: "
        '{"type": "check_source", "source_id": "src_2"}.'
    )

    # ------------------------------------------------------------------ configuration
    def _configure(self, spec: TaskSpec, config: Mapping[str, Any]) -> None:
        values = {"difficulty": spec.tier, **config}
        self.config: IntegrityConfig = validate_config(IntegrityConfig, values)
        self.reward_config = rw.load_reward_config(self.config.reward_preset)
        if self.config.grader is not None:
            GraderFactory.create(self.config.grader)

    # ------------------------------------------------------------------ reset
    def _reset(
        self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]
    ) -> IntegrityObservation:
        unknown = sorted(set(options) - set(_RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; use {', '.join(_RESET_OPTIONS)}")
        overrides: dict[str, Any] = {k: options[k] for k in ("difficulty", "source", "partition") if k in options}
        if overrides:
            self.config = validate_config(IntegrityConfig, {**self.config.model_dump(), **overrides})
        self._seed = secrets.randbelow(2**31) if seed is None else int(seed)
        scenario = self._pick(self._seed, scenario_id, options)
        self._start(scenario, stable_id(self.spec.id, scenario.id, self._seed))
        return self._observation()

    def _pick(self, seed: int, scenario_id: str | int | None, options: dict[str, Any]) -> Scenario:
        from integrity_gym.envs.information_integrity.data import find_gold, load_gold
        from integrity_gym.envs.information_integrity.generator import generate

        if "scenario_file" in options:
            return load_scenario_file(options["scenario_file"])
        if "scenario" in options:
            raw = options["scenario"]
            return raw if isinstance(raw, Scenario) else parse_scenario(raw)
        tier = self.config.difficulty
        if isinstance(scenario_id, int) or (isinstance(scenario_id, str) and scenario_id.isdigit()):
            gold = load_gold(tier)
            index = int(scenario_id)
            if not 0 <= index < len(gold):
                raise ValueError(f"scenario_id: index {index} is out of range; the {tier} gold set has {len(gold)}")
            return gold[index]
        if isinstance(scenario_id, str):
            found = re.fullmatch(r"gen_(easy|medium|hard)_(train|eval)_(\d+)", scenario_id)
            if found:
                return generate(found[1], int(found[3]), found[2])  # type: ignore[arg-type]
            return find_gold(scenario_id)
        if self.config.source == "gold":
            gold = load_gold(tier)
            return gold[seed % len(gold)]
        return generate(tier, seed, self.config.partition)

    def _start(self, scenario: Scenario, episode_id: str) -> None:
        self.scenario = scenario
        # Room to look at every claim and source once and decide: counted from what the post shows, so
        # that a small max_steps override cannot make steps_left reveal how much of it is gold evidence.
        needed = len(scenario.claims) + len(scenario.sources) + 1
        self.max_steps = max(self.config.max_steps or self.spec.max_steps, needed)
        self._efficient = rw.efficient_steps(self.reward_config, len(scenario.claims), len(scenario.sources))
        self._claim_ids = {c.id for c in scenario.claims}
        self._source_ids = {s.id for s in scenario.sources}
        self._episode_id = episode_id
        self._verified: list[str] = []
        self._checked: list[str] = []
        self._history: list[HistoryEntry] = []
        self._decision: str | None = None
        self._reasoning: str | None = None
        self._premature = False
        self._redundant = 0
        self._invalid = 0
        self._exploration_paid = 0.0
        self._total = 0.0
        self._step_count = 0

    # ------------------------------------------------------------------ actions
    def parse_action(self, action: Any) -> IntegrityAction:
        """Also accept text: ``verify claim_1``, ``check src_2``, ``decide flag <reasoning>``."""
        if isinstance(action, str) and not action.lstrip().startswith("{"):
            action = _parse_text_action(action)
        return super().parse_action(action)

    def _sufficient(self) -> bool:
        return (
            len(self._verified) >= self.config.min_claims_verified
            and len(self._checked) >= self.config.min_sources_checked
        )

    def _step(self, action: IntegrityAction) -> StepResult[IntegrityObservation]:
        number = self._step_count + 1
        if action.type == "verify_claim":
            item = str(action.claim_id)
            if item not in self._claim_ids:
                return self._reject(action, f"unknown claim_id {item!r}; claims are {self._listing(self._claim_ids)}")
            repeated = item in self._verified
            if not repeated:
                self._verified.append(item)
            claim = self.scenario.claim(item)
            outcome = (
                "already verified" if repeated else f"{item} is {claim.verdict} (confidence {claim.confidence:.2f})"
            )
        elif action.type == "check_source":
            item = str(action.source_id)
            if item not in self._source_ids:
                return self._reject(
                    action, f"unknown source_id {item!r}; sources are {self._listing(self._source_ids)}"
                )
            repeated = item in self._checked
            if not repeated:
                self._checked.append(item)
            outcome = "already checked" if repeated else explain_mod.describe_source(self.scenario, item)
        else:
            repeated = False
            self._premature = not self._sufficient()
            self._decision = action.decision
            self._reasoning = action.reasoning
            outcome = f"decided {action.decision}" + (" before sufficient evidence" if self._premature else "")
        if repeated:
            self._redundant += 1
        parts = rw.step_breakdown(
            self.reward_config,
            kind=action.type,
            repeated=repeated,
            sources_checked_after=len(self._checked),
            exploration_paid=self._exploration_paid,
            step_number=number,
            efficient=self._efficient,
            decision=action.decision,
            label=self.scenario.label,
            premature=self._premature,
            grade_terms=self._grader().terms(self._record(steps=number)) if action.type == "decide" else None,
        )
        self._settle(parts, ends=action.type == "decide")
        return self._advance(str(action), outcome, parts, None, action.reasoning)

    def _settle(self, parts: dict[str, float], *, ends: bool) -> None:
        """Account the step's exploration; on the episode's last step, take it back (``rw.settle``)."""
        self._exploration_paid += rw.exploration_of(parts)
        if ends or self._step_count + 1 >= self.max_steps:
            parts |= rw.settle(self.reward_config, exploration_paid=self._exploration_paid)

    def _reject(self, raw: Any, message: str) -> StepResult[IntegrityObservation]:
        self._invalid += 1
        parts = rw.step_breakdown(self.reward_config, kind="invalid", step_number=self._step_count + 1, efficient=0)
        self._settle(parts, ends=False)
        shown = str(raw) if isinstance(raw, IntegrityAction) else "invalid action"
        return self._advance(shown, f"rejected: {message}", parts, message, None)

    def _advance(
        self, action: str, outcome: str, parts: dict[str, float], error: str | None, reasoning: str | None
    ) -> StepResult[IntegrityObservation]:
        reward, clipped = rw.apply_clip(self.reward_config, self._total, parts)
        self._total = round(self._total + reward, 10)
        self._step_count += 1
        self._history.append(
            HistoryEntry(
                step=self._step_count,
                action=action,
                outcome=outcome,
                reward=reward,
                # The history travels in every observation; the full decision reasoning is in the state.
                reasoning=None if reasoning is None else reasoning[:_HISTORY_REASONING_CHARS],
            )
        )
        obs = self._observation()
        info: dict[str, Any] = {"reward_breakdown": parts, "error": error}
        if clipped:
            info["clipped"] = True
        return StepResult[IntegrityObservation](observation=obs, reward=reward, done=obs.done, info=info)

    @staticmethod
    def _listing(ids: set[str]) -> str:
        return ", ".join(sorted(ids))

    def _is_done(self) -> bool:
        return self._decision is not None or self._step_count >= self.max_steps

    # ------------------------------------------------------------------ views
    def _observation(self) -> IntegrityObservation:
        sc = self.scenario
        verified, checked = set(self._verified), set(self._checked)
        claims = [
            ClaimView(
                id=c.id,
                text=c.text,
                verification_status=c.verdict if c.id in verified else "unverified",
                confidence=c.confidence if c.id in verified else 0.0,
            )
            for c in sc.claims
        ]
        sources = []
        for s in sc.sources:
            if s.id in checked:
                view = SourceView(
                    id=s.id, claim_id=s.claim_id, title=s.title, url=s.url, checked=True, text=s.text,
                    stance=s.stance, reliability=s.reliability, source_type=s.source_type,
                    date=s.date.isoformat(), satire=s.satire,
                )  # fmt: skip
            else:
                view = SourceView(
                    id=s.id, claim_id=s.claim_id, title=s.title, url="(check the source to see)", checked=False
                )
            sources.append(view)
        flags = StatusFlags(
            decision_made=self._decision is not None,
            sufficient_evidence=self._sufficient(),
            premature_decision=self._premature,
            redundant_actions=self._redundant,
            max_steps_reached=self._decision is None and self._step_count >= self.max_steps,
        )
        return IntegrityObservation(
            task_id=self.spec.id,
            done=self._is_done(),
            content=sc.content,
            topic=sc.topic,
            harm_level=sc.harm,
            review_date=sc.as_of.isoformat(),
            claims=claims,
            available_sources=sources,
            interaction_history=list(self._history),
            status_flags=flags,
            step_count=self._step_count,
            steps_left=max(0, self.max_steps - self._step_count),
            task_difficulty=sc.difficulty,
        )

    def render(self) -> str:
        """The post, its claims and sources as far as revealed, and the last steps, as text."""
        return explain_mod.render_observation(self._observation())

    def explain(self) -> str:
        """What the evidence showed, why the label follows, and how the episode was graded."""
        return explain_mod.explain_episode(self._record(), self._grade())

    def _state(self) -> IntegrityState:
        return IntegrityState(
            task_id=self.spec.id,
            seed=self._seed,
            episode_id=self._episode_id,
            step_count=self._step_count,
            done=self._is_done(),
            config=self.config.model_dump(),
            scenario=self.scenario,
            difficulty=self.scenario.difficulty,
            max_steps=self.max_steps,
            verified=list(self._verified),
            checked=list(self._checked),
            history=list(self._history),
            decision=self._decision,
            reasoning=self._reasoning,
            premature=self._premature,
            redundant=self._redundant,
            invalid=self._invalid,
            exploration_paid=self._exploration_paid,
            total_reward=self._total,
            max_steps_reached=self._decision is None and self._step_count >= self.max_steps,
        )

    def _load_state(self, state: IntegrityState) -> None:
        self.config = validate_config(IntegrityConfig, state.config)
        self.reward_config = rw.load_reward_config(self.config.reward_preset)
        self._seed = state.seed if state.seed is not None else 0
        self._start(state.scenario, state.episode_id)
        self.max_steps = state.max_steps
        self._verified = list(state.verified)
        self._checked = list(state.checked)
        self._history = list(state.history)
        self._decision = state.decision
        self._reasoning = state.reasoning
        self._premature = state.premature
        self._redundant = state.redundant
        self._invalid = state.invalid
        self._exploration_paid = state.exploration_paid
        self._total = state.total_reward
        self._step_count = state.step_count

    def _record(self, steps: int | None = None) -> EpisodeRecord:
        """The episode so far; ``steps`` overrides the step count (the decide step, before it is counted)."""
        return EpisodeRecord(
            scenario=self.scenario,
            verified=tuple(self._verified),
            checked=tuple(self._checked),
            decision=self._decision,
            reasoning=self._reasoning,
            steps=self._step_count if steps is None else steps,
            premature=self._premature,
            threshold=self.spec.success_threshold,
            reasoning_char_cap=self.config.reasoning_char_cap,
            reasoning_statement_cap=self.config.reasoning_statement_cap,
        )

    def _grader(self) -> Grader:
        return GraderFactory.create(self.config.grader or self.scenario.difficulty)

    def _grade(self) -> Grade:
        return self._grader().grade(self._record())

    # ------------------------------------------------------------------ agent hooks
    @classmethod
    def sample_action(cls, observation: IntegrityObservation, rng: random.Random) -> IntegrityAction:
        """Uniformly one of verify / check / decide, with a uniformly random target."""
        kind = rng.choice(("verify_claim", "check_source", "decide"))
        if kind == "verify_claim":
            return IntegrityAction(type="verify_claim", claim_id=rng.choice(observation.claims).id)
        if kind == "check_source":
            return IntegrityAction(type="check_source", source_id=rng.choice(observation.available_sources).id)
        return IntegrityAction(type="decide", decision=rng.choice(DECISIONS))

    @classmethod
    def oracle_action(cls, state: IntegrityState) -> IntegrityAction:
        """Verify the decisive claims, check the decisive sources, then decide with the gold statements."""
        gold = rules.gold_evidence(state.scenario)
        verified, checked = set(state.verified), set(state.checked)
        for claim_id in gold.claims:
            if claim_id not in verified:
                return IntegrityAction(type="verify_claim", claim_id=claim_id)
        for source_id in gold.sources:
            if source_id not in checked:
                return IntegrityAction(type="check_source", source_id=source_id)
        if len(verified) < int(state.config["min_claims_verified"]):
            spare = next(c.id for c in state.scenario.claims if c.id not in verified)
            return IntegrityAction(type="verify_claim", claim_id=spare)
        if len(checked) < int(state.config["min_sources_checked"]):
            spare = next(s.id for s in state.scenario.sources if s.id not in checked)
            return IntegrityAction(type="check_source", source_id=spare)
        return IntegrityAction(type="decide", decision=gold.label, reasoning=". ".join(gold.statements) + ".")

    @classmethod
    def noop_action(cls, observation: IntegrityObservation) -> IntegrityAction:
        """Verify the first claim again and again, never deciding."""
        return IntegrityAction(type="verify_claim", claim_id=observation.claims[0].id)

    @classmethod
    def counterfactual(cls, state: IntegrityState, rng: random.Random) -> IntegrityState:
        """Alter every fact the agent has not looked at, and the label."""
        verified, checked = set(state.verified), set(state.checked)
        sc = state.scenario

        def other(options: Sequence[Any], current: Any) -> Any:
            return rng.choice([o for o in options if o != current])

        claims = tuple(
            c
            if c.id in verified
            else c.model_copy(update={"verdict": other(VERDICTS, c.verdict), "confidence": round(rng.random(), 2)})
            for c in sc.claims
        )
        sources = tuple(
            s
            if s.id in checked
            else s.model_copy(
                update={
                    "stance": other(STANCES, s.stance),
                    "reliability": round(rng.random(), 2),
                    "text": f"altered text {rng.random():.6f}",
                    "url": f"https://altered.example/{rng.getrandbits(32):08x}",
                    "date": s.date - dt.timedelta(days=1 + rng.randrange(3000)),
                    "satire": not s.satire,
                    "source_type": other(SOURCE_TYPES, s.source_type),
                }
            )
            for s in sc.sources
        )
        label = other(DECISIONS, sc.label)
        scenario = sc.model_copy(update={"claims": claims, "sources": sources, "label": label, "notes": "altered"})
        _ = HARMS  # the harm level is shown to the agent, so it is not hidden truth
        return state.model_copy(update={"scenario": scenario})

    @classmethod
    def summarize(cls, grades: Sequence[Grade]) -> dict[str, float | None]:
        """Decision accuracy, premature rate, success rate and mean dimensions."""
        return summarize(grades)

    @classmethod
    def collect(cls, payload: Mapping[str, Any]) -> Scenario:
        """Build a scenario draft for a claim from the corpus named by ``IGYM_CORPUS_DIR``.

        Serves ``POST /information_integrity/collect``: the client sends only the claim (and the
        number of sources and harm level); the corpus is the server's own, configured with
        ``igym serve --corpus DIR``. Raises ``ValueError`` for a bad request or a missing corpus.
        """
        from integrity_gym.envs.information_integrity.collector import DataCollector, LocalCorpusBackend

        try:
            request = CollectRequest.model_validate(dict(payload))
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc)) from exc
        corpus = os.environ.get(CORPUS_ENV_VAR)
        if not corpus:
            raise ValueError(
                f"this server has no corpus to search: start it with `igym serve --corpus DIR` "
                f"(or set {CORPUS_ENV_VAR})"
            )
        backend = LocalCorpusBackend(corpus)
        try:
            return DataCollector(backend).build_scenario(request.claim, limit=request.limit, harm=request.harm)
        finally:
            backend.close()


#: Environment variable naming the server-side corpus folder of ``collect``.
CORPUS_ENV_VAR = "IGYM_CORPUS_DIR"


class CollectRequest(WireModel):
    """Body of a collect request."""

    claim: str = Field(min_length=1, max_length=2000, description="The claim to research.")
    limit: int = Field(6, ge=2, le=50, description="Sources to retrieve.")
    harm: Harm = Field("medium", description="Harm level of the topic: low, medium or high.")


def _parse_text_action(text: str) -> dict[str, Any] | str:
    """``verify claim_1`` / ``check src_2`` / ``decide flag because ...`` → action mapping."""
    match = _TEXT_ACTION.match(text.strip())
    if not match or match["verb"].lower() not in _VERBS:
        return text  # let the JSON parser produce the error message
    kind = _VERBS[match["verb"].lower()]
    arg = match["arg"]
    rest = (match["rest"] or "").strip() or None
    if kind == "verify_claim":
        return {"type": kind, "claim_id": arg}
    if kind == "check_source":
        return {"type": kind, "source_id": arg}
    return {"type": kind, "decision": arg.lower() if arg else arg, "reasoning": rest}
