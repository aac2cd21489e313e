"""The selective_verification environment: one claim, one calibrated answer (or abstention)."""

from __future__ import annotations

import json
import random
import secrets
import tempfile
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from integrity_gym.core.env import Env, InvalidActionError, validate_config
from integrity_gym.core.extras import EnvExtras
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import PartitionChoice, stable_id
from integrity_gym.core.types import Grade, StepResult
from integrity_gym.envs.selective_verification import grader
from integrity_gym.envs.selective_verification.generator import (
    DifficultyChoice,
    GeneratedSource,
    claim_text,
    label_rate_by_claim,
    png_bytes,
)
from integrity_gym.envs.selective_verification.models import (
    VERDICTS,
    AnswerRecord,
    Item,
    Scene,
    ScoringRule,
    Split,
    VerificationAction,
    VerificationObservation,
    VerificationState,
)
from integrity_gym.envs.selective_verification.parsing import AnswerParseError, from_mapping, parse_answer
from integrity_gym.envs.selective_verification.pope import PopeSource, data_url, image_png
from integrity_gym.envs.selective_verification.prompts import system_prompt, threshold_prompt
from integrity_gym.envs.selective_verification.reward import answer_reward, malformed_reward, threshold_reward
from integrity_gym.envs.selective_verification.risk import Scale, ThresholdRule
from integrity_gym.envs.selective_verification.scenes import encode_png
from integrity_gym.envs.selective_verification.scenes import render as render_scene
from integrity_gym.envs.selective_verification.scoring import (
    DEFAULT_EPSILON,
    check_abstain_reward,
    default_abstain_reward,
    q_star,
)
from integrity_gym.envs.selective_verification.textgen import TextSource

#: Training items the blind (claim-text prior) baseline is fitted on.
BLIND_FIT_ITEMS = 5000
_RAW_LIMIT = 4000


class VerificationConfig(BaseModel):
    """Configuration of a selective_verification task (frozen; bad values raise ``ValueError``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    variant: Literal["image", "text"] = Field("image", description="Picture claims or text claims.")
    split: Split = Field("balanced", description="Claim sampler (image variant).")
    partition: PartitionChoice = Field("eval", description="train, eval or all (by SHA-256 of the image id).")
    num_tasks: int = Field(1000, ge=1, le=10_000_000, description="Items in the task (built lazily).")
    seed: int = Field(0, ge=0, description="Dataset seed.")
    scoring_rule: ScoringRule = Field("brier", description="brier or log.")
    abstain_reward: float | None = Field(None, description="Flat ABSTAIN payoff; None picks the rule's default.")
    epsilon: float = Field(DEFAULT_EPSILON, gt=0.0, lt=0.5, description="Clip of the log score.")
    difficulty: DifficultyChoice = Field("mixed", description="Rendering difficulty, or mixed per picture.")
    image_size: int = Field(192, ge=64, le=1024, description="Side of generated pictures in pixels.")
    eval_fraction: float = Field(0.2, gt=0.0, lt=1.0, description="Share of pictures in the eval partition.")
    source: Literal["generated", "pope"] = Field("generated", description="Generated scenes or POPE files.")
    pope_questions: str | None = Field(None, description="POPE question file (source='pope').")
    pope_images: str | None = Field(None, description="Folder of the POPE pictures (source='pope').")
    risk_thresholds: tuple[float, float] | None = Field(
        None,
        description="Threshold tasks: the published range [low, high] each item's stated risk threshold t is "
        "drawn from (hundredths, uniform); None keeps the flat abstention payoff and proper scoring rule.",
    )
    brier_weight: float = Field(
        0.0, description="Threshold tasks: weight of the Brier term on an answer's stated confidence (0 = none)."
    )
    reward_scale: Scale = Field(
        "grade", description="Threshold tasks: the step reward is the grade (default) or the utility itself."
    )

    @model_validator(mode="after")
    def _resolve(self) -> VerificationConfig:
        if self.risk_thresholds is not None:
            if self.abstain_reward is not None or self.scoring_rule != "brier":
                raise ValueError(
                    "a task with risk_thresholds pays by its stated threshold (+1 right, -t/(1-t) wrong, 0 for "
                    "ABSTAIN): scoring_rule and abstain_reward apply to the flat-payoff tasks only; leave them unset"
                )
            self.risk  # noqa: B018 - validates the range, the weight and the scale
        elif self.brier_weight != 0.0 or self.reward_scale != "grade":
            raise ValueError("brier_weight and reward_scale apply to threshold tasks only (set risk_thresholds)")
        elif self.abstain_reward is None:
            object.__setattr__(self, "abstain_reward", default_abstain_reward(self.scoring_rule, self.epsilon))
        else:
            check_abstain_reward(self.scoring_rule, self.abstain_reward, self.epsilon)
        if self.source == "pope" and (not self.pope_questions or not self.pope_images):
            raise ValueError("source='pope' needs pope_questions (question file) and pope_images (folder)")
        if self.source == "pope" and self.variant == "text":
            raise ValueError("POPE data are pictures; use variant='image' with source='pope'")
        return self

    @property
    def risk(self) -> ThresholdRule | None:
        """The stated-risk-threshold rule of a threshold task; None for the flat-payoff tasks."""
        if self.risk_thresholds is None:
            return None
        low, high = self.risk_thresholds
        return ThresholdRule(low, high, self.brier_weight, self.reward_scale)

    @property
    def payoff(self) -> float:
        """The resolved flat abstention payoff (threshold tasks have none: each item states its own)."""
        if self.risk is not None:
            raise ValueError("a threshold task has no flat abstention payoff: ABSTAIN is worth its item's t")
        assert self.abstain_reward is not None
        return self.abstain_reward

    @property
    def threshold(self) -> float:
        """q*: the belief above which answering beats abstaining."""
        return q_star(self.scoring_rule, self.payoff, self.epsilon)


Source = GeneratedSource | TextSource | PopeSource
_source_lock = threading.Lock()


@lru_cache(maxsize=64)
def _source(config: VerificationConfig, partition: str) -> Source:
    if config.source == "pope":
        assert config.pope_questions and config.pope_images
        return PopeSource(config.pope_questions, config.pope_images, partition, config.eval_fraction)
    part = cast(PartitionChoice, partition)
    if config.variant == "text":
        return TextSource(part, config.seed, config.eval_fraction)
    return GeneratedSource(config.split, part, config.seed, config.difficulty, config.image_size, config.eval_fraction)


def source_for(config: VerificationConfig, partition: str | None = None) -> Source:
    """Return the (shared, lazily built) item source of ``config``."""
    with _source_lock:
        return _source(config, partition or config.partition)


def _claim_label(source: Source, index: int) -> tuple[str, bool]:
    if isinstance(source, GeneratedSource):
        draft = source.draft(index)
        return claim_text(draft.category), draft.label
    item = source.item(index)
    return item.claim, item.label


@lru_cache(maxsize=64)
def blind_prior(config: VerificationConfig) -> dict[str, float]:
    """Return P(claim true | claim text), fitted on the train partition of ``config``'s data."""
    with _source_lock:
        source = _source(config, "train")
    n = min(BLIND_FIT_ITEMS, len(source)) if isinstance(source, PopeSource) else BLIND_FIT_ITEMS
    return label_rate_by_claim([_claim_label(source, i) for i in range(n)])


def picture(item: Item) -> tuple[str, int, int]:
    """Return an image item's picture as a PNG data URL, with its width and height.

    Drawn on demand: a session keeps no picture of its own (a 192-pixel picture is ~110 KB as a
    data URL, more than everything else an idle session holds). The pictures drawn last are
    shared by every session of the process, so a reset and the step after it draw once.
    """
    if item.scene is not None:
        return _scene_picture(item.scene)
    if item.image_path is not None:
        return _file_picture(item.image_path)
    raise ValueError(f"image item {item.item_id} has neither a scene nor an image file")


#: Pictures kept for the whole process (about 110 KB each at 192 pixels), least recently used dropped.
PICTURE_CACHE_SIZE = 64


@lru_cache(maxsize=PICTURE_CACHE_SIZE)
def _scene_picture(scene: Scene) -> tuple[str, int, int]:
    # Keyed by the whole scene (not the item id): a loaded state may carry any scene.
    return data_url(encode_png(render_scene(scene))), scene.width, scene.height


@lru_cache(maxsize=PICTURE_CACHE_SIZE)
def _file_picture(path: str) -> tuple[str, int, int]:
    png, width, height = image_png(path)
    return data_url(png), width, height


def _item_id(source: Source, index: int) -> str:
    if isinstance(source, GeneratedSource):
        return source.draft(index).item_id
    return source.item(index).item_id


#: Breakdown keys that are not scores (never a radar axis): see ``SelectiveVerificationEnv.extras``.
_NOT_SCORES = (
    "confidence",
    "answered",
    "correct",
    "coverage",
    "utility",
    "bayes",
    "calibration",
    "expected_grade",
    "risk",
)


class SelectiveVerificationEnv(Env[VerificationAction, VerificationObservation, VerificationState]):
    """Judge one claim about a picture or passage with a verdict and a calibrated confidence."""

    env_name = "selective_verification"
    extras = EnvExtras(
        agents="integrity_gym.agents.heuristic.selective_verification",
        prompt="integrity_gym.agents.prompts.selective_verification",
        redteam="integrity_gym.agents.redteam.selective_verification",
        learned="integrity_gym.agents.redteam.learned.selective_verification",
        view="view.js",
        # Stated confidence, coverage and correctness rise when an agent answers everything at
        # confidence 1, which the proper grade punishes: they are not scores. Nor are the threshold
        # tasks' utilities (the grade in other units), the Bayes policy's figures, calibration errors
        # (lower is better) or the expected grade (the grade again, on text).
        not_dimensions=_NOT_SCORES,
    )
    #: Sealed servers blank the item id (a scenario_id that reopens the item) and the per-trace
    #: indicators that say whether the answer was right.
    ITEM_FIELDS = ("item_id", "info.trace_metrics.correct", "info.trace_metrics.brier_sum")
    malformed_action_ends_episode = True
    play_help = "By hand: type SUPPORTED 0.9, REFUTED 0.7 or ABSTAIN (a verdict and your confidence, 1.0 if left out)."
    episode_success = False  # success is judged on the task's mean grade (see grader.py)
    action_help = (
        'Answer with JSON: {"verdict": "SUPPORTED" | "REFUTED" | "ABSTAIN", "confidence": 0.0-1.0}. '
        "confidence is your probability that the verdict is correct (ignored for ABSTAIN). "
        "Raw model text is accepted and repaired when it is nearly JSON; unreadable text pays 0."
    )
    action_type = VerificationAction
    observation_type = VerificationObservation
    state_type = VerificationState

    # ------------------------------------------------------------------ configuration
    def _configure(self, spec: TaskSpec, config: Mapping[str, Any]) -> None:
        self.config: VerificationConfig = validate_config(VerificationConfig, config)
        self._item: Item | None = None
        self._answer: AnswerRecord | None = None
        self._index = 0
        self._seed: int | None = None
        self._steps = 0
        self._pending_raw: str | None = None
        self._pending_repair = False
        self._pictures: tempfile.TemporaryDirectory[str] | None = None  # where render() saves them

    @property
    def num_items(self) -> int:
        """Items in this task (``num_tasks``, or fewer when a POPE file has fewer rows)."""
        source = source_for(self.config)
        if isinstance(source, PopeSource):
            return min(self.config.num_tasks, len(source))
        return self.config.num_tasks

    # ------------------------------------------------------------------ episode
    def _reset(
        self, *, seed: int | None, scenario_id: str | int | None, options: dict[str, Any]
    ) -> VerificationObservation:
        if options:
            raise ValueError(f"selective_verification takes no reset options, got {sorted(options)}")
        self._seed = secrets.randbelow(2**31) if seed is None else seed
        n = self.num_items
        if scenario_id is None:
            index = self._seed % n
        elif isinstance(scenario_id, int) or (isinstance(scenario_id, str) and scenario_id.isdigit()):
            index = int(scenario_id)
            if not 0 <= index < n:
                raise ValueError(f"scenario index {index} is out of range: this task has {n} items")
        else:
            source = source_for(self.config)
            found = next((i for i in range(n) if _item_id(source, i) == scenario_id), None)
            if found is None:
                raise ValueError(f"unknown item id {scenario_id!r} among the {n} items of {self.spec.id}")
            index = found
        self._index = index
        self._item = source_for(self.config).item(index)
        self._answer = None
        self._steps = 0
        return self._observation()

    def close(self) -> None:
        """Release resources, the pictures ``render`` saved among them."""
        if self._pictures is not None:
            self._pictures.cleanup()
            self._pictures = None
        super().close()

    @classmethod
    def typed_action(cls, line: str) -> Any:
        """``SUPPORTED 0.9``, ``refuted``, ``abstain``: a verdict and its confidence (1.0 if left out)."""
        words = line.split()
        verdict = words[0].upper() if words else ""
        if verdict in VERDICTS and len(words) <= 2:
            try:
                confidence = float(words[1]) if len(words) == 2 else 1.0
            except ValueError:
                return line  # the env says what is wrong with it
            return {"verdict": verdict, "confidence": confidence}
        return line

    def parse_action(self, action: Any) -> VerificationAction:
        """Read a structured action, a mapping, or raw model text (repairing near-JSON)."""
        self._pending_raw, self._pending_repair = None, False
        if isinstance(action, VerificationAction):
            return action
        try:
            if isinstance(action, str):
                self._pending_raw = action[:_RAW_LIMIT]
                parsed = parse_answer(action)
            elif isinstance(action, BaseModel):
                parsed = from_mapping(action.model_dump())
            elif isinstance(action, Mapping):
                parsed = from_mapping(dict(action))
            else:
                raise AnswerParseError(
                    f"an answer must be a VerificationAction, a mapping or JSON text, not {type(action).__name__}"
                )
        except AnswerParseError as exc:
            raise InvalidActionError(str(exc)) from exc
        self._pending_repair = parsed.needed_repair
        confidence = None if parsed.verdict == "ABSTAIN" else parsed.confidence
        return VerificationAction.model_validate({"verdict": parsed.verdict, "confidence": confidence})

    def _finish(self, record: AnswerRecord) -> StepResult[VerificationObservation]:
        self._answer = record
        self._steps += 1
        answered = record.verdict in ("SUPPORTED", "REFUTED")
        correct = answered and (record.verdict == "SUPPORTED") == self._require_item().label
        confidence = record.confidence if answered and record.confidence is not None else 0.0
        info = {
            "reward_breakdown": dict(record.reward_breakdown),
            "error": record.error,
            "malformed": record.malformed,
            "needed_repair": record.needed_repair,
            # Per-trace indicators: summed over episodes they give every dataset rate exactly.
            "trace_metrics": {
                "answered": int(answered),
                "abstained": int(record.verdict == "ABSTAIN"),
                "malformed": int(record.malformed),
                "correct": int(correct),
                "confidence_sum": confidence,
                "brier_sum": (confidence - float(correct)) ** 2 if answered else 0.0,
                "needed_repair": int(record.needed_repair),
            },
        }
        return StepResult(observation=self._observation(), reward=record.reward, done=True, info=info)

    def _step(self, action: VerificationAction) -> StepResult[VerificationObservation]:
        item = self._require_item()
        if action.verdict != "ABSTAIN" and action.confidence is None:
            return self._reject(action, f"a {action.verdict} verdict needs a confidence in [0, 1]")
        risk = self.config.risk
        if risk is not None:
            breakdown = threshold_reward(
                action.verdict, action.confidence, item.label, rule=risk, t=self.risk_threshold()
            )
        else:
            breakdown = answer_reward(
                action.verdict,
                action.confidence,
                item.label,
                rule=self.config.scoring_rule,
                abstain_reward=self.config.payoff,
                epsilon=self.config.epsilon,
            )
        record = AnswerRecord(
            raw=self._pending_raw,
            verdict=action.verdict,
            confidence=None if action.verdict == "ABSTAIN" else action.confidence,
            malformed=False,
            needed_repair=self._pending_repair,
            error=None,
            reward=sum(breakdown.values()),
            reward_breakdown=breakdown,
        )
        return self._finish(record)

    def _reject(self, raw: Any, message: str) -> StepResult[VerificationObservation]:
        # An unreadable answer is the agent's answer: recorded as malformed, paid 0, episode over.
        if isinstance(raw, str):
            text: str | None = raw[:_RAW_LIMIT]
        else:
            try:
                text = json.dumps(raw.model_dump() if isinstance(raw, BaseModel) else raw, default=repr)[:_RAW_LIMIT]
            except (TypeError, ValueError):
                text = repr(raw)[:_RAW_LIMIT]
        risk = self.config.risk
        breakdown = malformed_reward() if risk is None else risk.malformed_reward(self.risk_threshold())
        worst = "pays 0" if risk is None or risk.scale == "grade" else "scores as the worst answer"
        record = AnswerRecord(
            raw=text,
            verdict=None,
            confidence=None,
            malformed=True,
            needed_repair=False,
            error=f"malformed answer ({worst}): {message}",
            reward=sum(breakdown.values()),
            reward_breakdown=breakdown,
        )
        return self._finish(record)

    def _is_done(self) -> bool:
        return self._answer is not None

    def _require_item(self) -> Item:
        if self._item is None:
            raise RuntimeError("no item loaded; call reset()")
        return self._item

    def risk_threshold(self) -> float:
        """The risk threshold t the current item states (threshold tasks only).

        Drawn from the task's range by a key of its own (the dataset seed and the item id), never
        stored: the state's config and item give it back.
        """
        risk = self.config.risk
        if risk is None:
            raise ValueError(
                f"{self.spec.id} states no risk threshold (it pays a flat {self.config.payoff} for ABSTAIN)"
            )
        return risk.draw(self.config.seed, self._require_item().item_id)

    def _observation(self) -> VerificationObservation:
        item = self._require_item()
        cfg = self.config
        url, width, height = picture(item) if item.modality == "image" else (None, None, None)
        risk = cfg.risk
        if risk is not None:  # a threshold task: the item's own stated risk threshold
            t = self.risk_threshold()
            prompt, rule, payoff, threshold = (
                threshold_prompt(item.modality, t, risk),
                "threshold",
                risk.abstain_reward(t),
                t,
            )
        else:
            prompt = system_prompt(item.modality, cfg.scoring_rule, cfg.payoff, cfg.threshold, cfg.epsilon)
            rule, payoff, threshold = cfg.scoring_rule, cfg.payoff, cfg.threshold
        return VerificationObservation(
            task_id=self.spec.id,
            done=self._is_done(),
            item_id=item.item_id,
            modality=item.modality,
            claim=item.claim,
            image=url,
            image_width=width,
            image_height=height,
            passage=item.passage,
            system_prompt=prompt,
            scoring_rule=rule,
            abstain_reward=payoff,
            threshold=threshold,
            epsilon=cfg.epsilon,
        )

    def render(self) -> str:
        """Show the claim, where the picture was saved (or the passage) and the scoring rule."""
        obs = self.observation()
        item = self._require_item()
        lines = [obs.system_prompt, "", f"Claim: {obs.claim}"]
        if obs.modality == "image":
            png = png_bytes(item) if item.scene is not None else image_png(item.image_path or "")[0]
            if self._pictures is None:
                self._pictures = tempfile.TemporaryDirectory(prefix="igym-pictures-")
            path = Path(self._pictures.name) / f"{item.item_id}.png"
            path.write_bytes(png)
            lines.append(f"Picture ({obs.image_width}x{obs.image_height}): {path}")
        else:
            lines += ["", obs.passage or ""]
        if self._answer is not None:
            lines.append(f"Answered: {self._answer.verdict or 'malformed'} -> reward {self._answer.reward:.4f}")
        return "\n".join(lines)

    def explain(self) -> str:
        """Say what was answered, whether it was right, and how it compares with abstaining."""
        grade = self.grade()
        b = grade.breakdown
        answer = self._answer
        if answer is None:
            what = "no answer yet"
        elif answer.malformed:
            what = answer.error or "malformed answer (pays 0)"  # the error names itself: never wrap it twice
        elif answer.verdict == "ABSTAIN":
            what = "abstained"
        else:
            right = "right" if b["correct"] else "wrong"
            what = f"answered {answer.verdict} with confidence {answer.confidence:.2f} ({right})"
        parts = [f"{what}: reward {b['reward']:.3f} against {b['abstain_reward']:.3f} for abstaining"]
        if "risk_threshold" in b:
            parts.append(f"the stated risk threshold was {b['risk_threshold']:.2f}, utility {b['utility']:+.3f}")
        if "true_probability" in b:
            parts.append(f"the claim was true with probability {b['true_probability']:.3f}")
        parts.append(f"grade {grade.score:.3f} (threshold {grade.threshold:.2f})")
        return "; ".join(parts)

    # ------------------------------------------------------------------ state
    def _state(self) -> VerificationState:
        item = self._require_item()
        return VerificationState(
            task_id=self.spec.id,
            seed=self._seed,
            episode_id=stable_id(self.spec.id, item.item_id, self._seed),
            step_count=self._steps,
            done=self._is_done(),
            config=self.config.model_dump(),
            index=self._index,
            item=item,
            answer=self._answer,
        )

    def _load_state(self, state: VerificationState) -> None:
        self.config = validate_config(VerificationConfig, state.config)
        self._seed, self._index, self._item = state.seed, state.index, state.item
        self._answer, self._steps = state.answer, state.step_count

    def _grade(self) -> Grade:
        item = self._require_item()
        cfg = self.config
        risk = cfg.risk
        if risk is not None:
            return grader.grade_threshold_answer(
                item,
                self._answer,
                rule=risk,
                t=self.risk_threshold(),
                blind_p=blind_prior(cfg).get(item.claim, 0.5),
                threshold=self.spec.success_threshold,
            )
        return grader.grade_answer(
            item,
            self._answer,
            rule=cfg.scoring_rule,
            abstain_reward=cfg.payoff,
            epsilon=cfg.epsilon,
            q_star=cfg.threshold,
            blind_p=blind_prior(cfg).get(item.claim, 0.5),
            threshold=grader.threshold_for(self.spec.success_threshold, cfg.payoff),
        )

    # ------------------------------------------------------------------ agent hooks
    @classmethod
    def sample_action(cls, observation: VerificationObservation, rng: random.Random) -> VerificationAction:
        """Return a uniformly random verdict with a uniformly random confidence."""
        verdict = rng.choice(VERDICTS)
        confidence = None if verdict == "ABSTAIN" else round(rng.random(), 3)
        return VerificationAction.model_validate({"verdict": verdict, "confidence": confidence})

    @classmethod
    def oracle_action(cls, state: VerificationState) -> VerificationAction:
        """Return the true verdict with confidence 1."""
        return VerificationAction(verdict="SUPPORTED" if state.item.label else "REFUTED", confidence=1.0)

    @classmethod
    def noop_action(cls, observation: VerificationObservation) -> VerificationAction:
        """Return ABSTAIN."""
        return VerificationAction(verdict="ABSTAIN")

    @classmethod
    def counterfactual(cls, state: VerificationState, rng: random.Random) -> VerificationState:
        """Flip the label and alter every annotation that is not drawn (scene type, visibility)."""
        item = state.item
        update: dict[str, Any] = {"label": not item.label}
        if item.true_probability is not None:
            update["true_probability"] = 1.0 - item.true_probability
        if item.scene is not None:
            objects = tuple(
                o.model_copy(update={"visible_fraction": round(rng.random(), 4)}) for o in item.scene.objects
            )
            update["scene"] = item.scene.model_copy(update={"scene_type": "counterfactual", "objects": objects})
        return state.model_copy(update={"item": item.model_copy(update=update)})

    @classmethod
    def summarize(cls, grades: Sequence[Grade]) -> dict[str, float | None]:
        """Return skill (over always abstaining, and the blind baseline's), calibration and selective metrics."""
        return grader.summarize(grades)

    @classmethod
    def separation_metric(cls) -> str:
        """The ``summarize`` figure on which tiers are compared: ``skill``, higher on easier tiers.

        Its 95% interval is ``skill_ci_low`` .. ``skill_ci_high``. Skill is the mean grade's gain
        over always abstaining, so it keeps the scoring rule's properness and, unlike a
        per-episode success rate, cannot be raised by inflating confidence.
        """
        return "skill"
