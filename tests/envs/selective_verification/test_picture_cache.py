"""Pictures are drawn on demand and shared by the process: none is kept per session."""

from __future__ import annotations

from integrity_gym.core.registry import make
from integrity_gym.envs.selective_verification import env as sv_env
from integrity_gym.envs.selective_verification.generator import png_bytes
from integrity_gym.envs.selective_verification.pope import data_url

TASK = "selective_verification/balanced-v3"


def _fresh_url(item: object) -> str:
    return data_url(png_bytes(item))  # type: ignore[arg-type]


def test_the_observed_picture_is_byte_identical_to_a_fresh_drawing() -> None:
    env = make(TASK)
    for seed in range(3):
        first = env.reset(seed=seed)
        sv_env._scene_picture.cache_clear()  # the step draws again: same bytes
        after = env.step({"verdict": "ABSTAIN"}).observation
        expected = _fresh_url(env.state().item)
        assert first.image == expected
        assert after.image == expected
        assert (first.image_width, first.image_height) == (192, 192)


def test_an_idle_session_holds_no_picture() -> None:
    env = make(TASK)
    obs = env.reset(seed=5)
    assert obs.image is not None
    held = [name for name, value in vars(env).items() if isinstance(value, (str, bytes, tuple)) and obs.image in value]
    assert held == []


def test_the_shared_cache_is_bounded() -> None:
    env = make(TASK)
    sv_env._scene_picture.cache_clear()
    for seed in range(sv_env.PICTURE_CACHE_SIZE + 5):
        env.reset(seed=seed)
    assert sv_env._scene_picture.cache_info().currsize == sv_env.PICTURE_CACHE_SIZE


def test_a_loaded_state_shows_its_own_scene_even_under_a_cached_item_id() -> None:
    env = make(TASK)
    env.reset(seed=1)
    state = env.state()
    other = make(TASK)
    other.reset(seed=2)
    other_scene = other.state().item.scene
    assert other_scene is not None and other_scene != state.item.scene
    swapped = state.model_copy(update={"item": state.item.model_copy(update={"scene": other_scene})})
    env.load_state(swapped)
    assert env.observation().image == _fresh_url(swapped.item)
    assert env.observation().image != _fresh_url(state.item)
