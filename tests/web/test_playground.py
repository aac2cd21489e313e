"""The playground in a real browser: one episode of each environment played by clicking and typing.

Every episode is replayed in-process with the same actions: each step's reward, the observation
the page shows, the grade and explain() must be the environment's own. After every step the page
holds each id once. The page must use only the
public API (never the full state, the grade only after the last step), show rejected actions'
messages, and respect the server's capacity and lost sessions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from integrity_gym.core.registry import get_spec
from tests.server.servers import ServerProcess, running_server
from tests.web.conftest import Watched, assert_sound_ids

VIEWPORT_NAMES = ["desktop", "phone"]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    """``igym serve`` with every registered task (and an admin token configured, never used here)."""
    with running_server(cli=True) as process:
        yield process


def local_env(task: str, seed: int) -> Any:
    spec = get_spec(task)
    env = spec.env_class()(spec)
    env.reset(seed=seed)
    return env


def number(text: str) -> float:
    """A number as the page prints it (a true minus sign for negatives)."""
    return float(text.replace("−", "-").replace("+", ""))


def start(watched: Watched, base: str, task: str, seed: int) -> Any:
    page = watched.page
    page.goto(f"{base}/web/?task={quote(task)}&seed={seed}")
    page.wait_for_selector("body[data-ready]")
    assert page.input_value("#task") == task
    page.click("#start")
    page.wait_for_selector("#observation")
    return page


def wait_steps(page: Any, n: int) -> None:
    from playwright.sync_api import expect  # the browser extra (the browser fixture skipped without it)

    # Locator waits, not wait_for_function: the page's policy forbids the eval that one needs.
    expect(page.locator("#steps > li")).to_have_count(n)
    page.wait_for_selector("body:not([data-busy])")
    assert_sound_ids(page)


def check_last_step(page: Any, text: str, reward: float) -> None:
    top = page.locator("#steps > li").first
    assert text in top.inner_text()
    shown = top.locator(".row > span").nth(2).inner_text()
    assert number(shown) == pytest.approx(reward, abs=5e-4)


def check_end(watched: Watched, env: Any, total: float, name: str) -> None:
    page = watched.page
    page.wait_for_selector("#grade")
    grade = env.grade()
    assert number(page.inner_text("#grade .score")) == pytest.approx(grade.score, abs=5e-4)
    verdict = page.locator("#grade .chip").first.inner_text()
    if grade.success:
        assert verdict == "success"
    else:  # reaching the threshold is not always success, and the page must not say it is
        assert verdict == (
            "threshold reached, not counted a success" if grade.score >= grade.threshold else "below threshold"
        )
    assert page.inner_text("#explain") == env.explain()
    assert number(page.inner_text("#return")) == pytest.approx(total, abs=5e-4)
    for dimension in grade.breakdown:
        assert page.locator("#grade table.dims td", has_text=dimension).count() >= 1
    assert page.locator("#ended").count() == 1 and page.locator("#stage button").count() == 0
    watched.shot(f"{name}-graded", full_page=True)
    # Only the public API: never the full state, no token, and the grade only after the last step.
    calls = [r for r in watched.requests if "/web/static/" not in r]
    assert not [r for r in calls if "/state" in r], calls
    assert watched.credentials == []
    last_step = max(i for i, r in enumerate(calls) if r.startswith("POST") and r.endswith("/step"))
    graded = [i for i, r in enumerate(calls) if "/grade/" in r or "/api/explain/" in r]
    assert len(graded) == 2 and min(graded) > last_step, calls


#: ``at(k)``: the text node of the document window holding its character k, and k's offset in it.
_CHARACTER_AT = """
  const doc = document.getElementById('pii-text');
  const at = (k) => {
    const walk = document.createTreeWalker(doc, NodeFilter.SHOW_TEXT);
    let node, seen = 0;
    while ((node = walk.nextNode())) {
      if (k < seen + node.length) return [node, k - seen];
      seen += node.length;
    }
  };
"""


def character_points(page: Any, start: int, end: int) -> list[float]:
    """Where characters ``start`` and ``end - 1`` of the document window are drawn, once scrolled into view."""
    points: list[float] = page.evaluate(
        """([a, b]) => {"""
        + _CHARACTER_AT
        + """
          const box = (k) => {
            const [node, i] = at(k);
            const r = document.createRange();
            r.setStart(node, i);
            r.setEnd(node, i + 1);
            return r.getClientRects()[0];
          };
          const first = box(a);
          window.scrollBy(0, first.top - window.innerHeight / 3);
          const p = box(a), q = box(b - 1);
          return [p.left + 1, p.top + p.height / 2, q.right - 1, q.top + q.height / 2];
        }""",
        [start, end],
    )
    return points


def drag_select(page: Any, start: int, end: int) -> None:
    """Select characters [start, end) of the document window by dragging the mouse over them."""
    points = character_points(page, start, end)
    page.mouse.move(points[0], points[1])
    page.mouse.down()
    page.mouse.move(points[2], points[3], steps=8)
    page.mouse.up()


def handle_select(page: Any, start: int, end: int) -> None:
    """Select characters [start, end) through the Selection API, from the end backwards.

    A phone's long press and selection handles change the selection without sending the page a
    mouse or touch event; headless Chromium makes no selection from emulated touches at all (a
    1.2 s press, by Input.synthesizeTapGesture or by raw touch events, selects nothing), so the
    gesture cannot be driven here: the selection it would leave is set directly.
    """
    page.evaluate(
        "([a, b]) => {"
        + _CHARACTER_AT
        + "const [s, i] = at(a), [e, j] = at(b - 1); getSelection().setBaseAndExtent(e, j + 1, s, i); }",
        [start, end],
    )


def selection_listeners(page: Any) -> int:
    """How many selectionchange listeners the document holds (Chromium's DevTools protocol counts them)."""
    cdp = page.context.new_cdp_session(page)
    try:
        document = cdp.send("Runtime.evaluate", {"expression": "document"})["result"]["objectId"]
        found = cdp.send("DOMDebugger.getEventListeners", {"objectId": document})["listeners"]
    finally:
        cdp.detach()
    return sum(1 for listener in found if listener["type"] == "selectionchange")


def expect_offsets(page: Any, start: int, end: int) -> None:
    """The REDACT form holds these offsets (the page fills it on the selection's change event)."""
    from playwright.sync_api import expect

    expect(page.locator("#redact-start")).to_have_value(str(start))
    expect(page.locator("#redact-end")).to_have_value(str(end))


def test_the_keyboard_selects_in_the_document(server: ServerProcess, open_page: Any) -> None:
    """Kills: no key handler on the window (Chromium moves no caret in text that is not editable)."""
    task, seed = "pii_redaction/gdpr_contract_easy-v4", 0
    env = local_env(task, seed)
    text = env.observation().visible_text
    entity = next(e for e in env.state().document.entities if e.end <= len(text) and " " in e.text)
    watched = open_page("desktop")
    page = start(watched, server.url, task, seed)
    assert page.input_value("#redact-start") == ""
    assert "step budget 40 decisions" in page.inner_text("#task-info")  # the budget as the env counts it
    x, y = character_points(page, entity.start, entity.start + 1)[:2]
    page.mouse.click(x, y)  # the caret before the entity's first character
    for _ in range(entity.end - entity.start):
        page.keyboard.press("Shift+ArrowRight")
    expect_offsets(page, entity.start, entity.end)
    assert entity.text in page.inner_text("#redact-selection")
    first = entity.text.split()[0]
    page.keyboard.press("Shift+Home")  # back to the line's start: the selection turns round the click point
    line_start = text.rfind("\n", 0, entity.start) + 1
    before = text[line_start : entity.start]
    if before.strip():  # what the form takes: the selection without the spaces at its ends
        lead = len(before) - len(before.lstrip())
        expect_offsets(page, line_start + lead, line_start + len(before.rstrip()))
    page.click("#observation h2")  # drop the selection, then put the caret back before the entity
    page.mouse.click(x, y)
    page.keyboard.press("Control+Shift+ArrowRight")  # by word
    expect_offsets(page, entity.start, entity.start + len(first))
    page.keyboard.press("Shift+ArrowLeft")
    expect_offsets(page, entity.start, entity.start + len(first) - 1)


@pytest.mark.parametrize("viewport", VIEWPORT_NAMES)
def test_play_pii_redaction(server: ServerProcess, open_page: Any, viewport: str) -> None:
    task, seed = "pii_redaction/gdpr_contract_easy-v4", 0
    env = local_env(task, seed)
    window = env.observation().window_size
    gold = [e for e in env.state().document.entities if e.end <= window][:2]
    assert len(gold) == 2
    watched = open_page(viewport)
    page = start(watched, server.url, task, seed)
    assert page.text_content("#pii-text") == env.observation().visible_text
    watched.shot("pii_redaction-start")
    word = gold[0].text.split()[0]  # a double click on a name's first word selects that word
    x, y = character_points(page, gold[0].start, gold[0].start + 1)[:2]
    page.mouse.dblclick(x, y)
    expect_offsets(page, gold[0].start, gold[0].start + len(word))
    page.click("#observation h2")  # a click elsewhere drops the selection (a drag on it would move it)
    total, n = 0.0, 0
    for entity in gold:
        drag_select(page, entity.start, entity.end)
        expect_offsets(page, entity.start, entity.end)
        assert entity.text in page.inner_text("#redact-selection")
        page.select_option("#redact-label", entity.label)
        page.click("#act-REDACT")
        result = env.step({"action_type": "REDACT", "start": entity.start, "end": entity.end, "label": entity.label})
        total, n = total + result.reward, n + 1
        wait_steps(page, n)
        check_last_step(page, f"REDACT({entity.start},{entity.end},{entity.label})", result.reward)
        assert page.input_value("#redact-label") == entity.label  # the label chosen stays chosen
    assert page.locator("#pii-text mark").all_text_contents() == [
        env.observation().visible_text[e.start : e.end] for e in gold
    ]
    # Typed offsets the environment rejects: its message is shown, the step still counts.
    page.fill("#redact-start", "10")
    page.fill("#redact-end", "5")
    page.click("#act-REDACT")
    rejected = env.step({"action_type": "REDACT", "start": 10, "end": 5, "label": page.input_value("#redact-label")})
    total, n = total + rejected.reward, n + 1
    wait_steps(page, n)
    assert rejected.info["error"] in page.inner_text("#banner")
    assert f"rejected: {rejected.info['error']}" in page.inner_text("#steps > li:first-child .err")
    watched.shot("pii_redaction-playing")
    page.click("#act-NEXT_CHUNK")
    result = env.step({"action_type": "NEXT_CHUNK"})
    total, n = total + result.reward, n + 1
    wait_steps(page, n)
    assert page.text_content("#pii-text") == env.observation().visible_text
    read = page.get_by_role("progressbar", name="document read")  # how far, for a screen reader too
    assert read.get_attribute("aria-valuenow") == str(math.floor(100 * env.observation().progress_pct + 0.5))
    page.click("#act-FINISH")
    result = env.step({"action_type": "FINISH"})
    total, n = total + result.reward, n + 1
    wait_steps(page, n)
    check_end(watched, env, total, "pii_redaction")


def test_redact_on_a_phone_by_touch(server: ServerProcess, open_page: Any) -> None:
    """On a touch phone: a selection made without mouse or key events fills REDACT, a tap sends it."""
    task, seed = "pii_redaction/gdpr_contract_easy-v4", 1
    env = local_env(task, seed)
    window = env.observation().window_size
    gold = [e for e in env.state().document.entities if e.end <= window][:2]
    assert len(gold) == 2
    watched = open_page("phone")
    page = start(watched, server.url, task, seed)
    assert page.evaluate("[navigator.maxTouchPoints > 0, matchMedia('(pointer: coarse)').matches]") == [True, True]
    total = 0.0
    for n, entity in enumerate(gold, start=1):
        handle_select(page, entity.start, entity.end)
        expect_offsets(page, entity.start, entity.end)
        assert entity.text in page.inner_text("#redact-selection")
        page.select_option("#redact-label", entity.label)
        page.tap("#act-REDACT")  # a touch tap, not a click
        result = env.step({"action_type": "REDACT", "start": entity.start, "end": entity.end, "label": entity.label})
        total += result.reward
        wait_steps(page, n)
        check_last_step(page, f"REDACT({entity.start},{entity.end},{entity.label})", result.reward)
    watched.shot("pii_redaction-touch")
    # Each step drew a new window, each with its listener; a selection change removes the stale ones.
    handle_select(page, gold[0].start, gold[0].end)
    expect_offsets(page, gold[0].start, gold[0].end)
    assert selection_listeners(page) == 1
    shown = env.observation().visible_text  # the window starts at 0: offsets are the window's own
    assert page.locator("#pii-text mark").all_text_contents() == [shown[e.start : e.end] for e in gold]
    assert number(page.inner_text("#return")) == pytest.approx(total, abs=5e-4)


@pytest.mark.parametrize("viewport", VIEWPORT_NAMES)
def test_play_information_integrity(server: ServerProcess, open_page: Any, viewport: str) -> None:
    task, seed = "information_integrity/easy-v3", 0
    env = local_env(task, seed)
    watched = open_page(viewport)
    page = start(watched, server.url, task, seed)
    sources = [s.id for s in env.observation().available_sources]
    for sid in sources:  # nothing about a source is shown before it is checked
        assert page.locator(f"[data-source={sid}] .chip").all_inner_texts() == ["not checked"]
    assert page.inner_text("#observation blockquote") == env.observation().content
    claim = env.observation().claims[0]
    reasoning = f"harm is {env.observation().harm_level}."
    page.locator("#reasoning").press_sequentially(reasoning)  # typed early: it must survive the steps
    assert page.is_disabled("#act-decide")  # no decision chosen yet
    total, n = 0.0, 0
    actions: list[tuple[str, dict[str, Any]]] = [
        ("#verify-claim_1", {"type": "verify_claim", "claim_id": "claim_1"}),
        (f"#check-{sources[0]}", {"type": "check_source", "source_id": sources[0]}),
        (f"#check-{sources[1]}", {"type": "check_source", "source_id": sources[1]}),
    ]
    for selector, action in actions:
        page.click(selector)
        result = env.step(action)
        total, n = total + result.reward, n + 1
        wait_steps(page, n)
        check_last_step(page, str(env.action_type.model_validate(action)), result.reward)
    obs = env.observation()
    claim = obs.claims[0]
    assert claim.verification_status.replace("_", " ") in page.inner_text("[data-claim=claim_1]")
    for view in obs.available_sources:
        chips = page.locator(f"[data-source={view.id}] .chip").all_inner_texts()
        if view.checked:
            assert view.stance in chips and any(f"{view.reliability:.2f}" in c for c in chips), chips
            assert view.text is not None and view.text in page.inner_text(f"[data-source={view.id}]")
        else:
            assert chips == ["not checked"]
    assert page.input_value("#reasoning") == reasoning
    page.check("#decision-remove")
    page.locator("#reasoning").press_sequentially(f" claim_1 is {claim.verification_status}.")
    reasoning += f" claim_1 is {claim.verification_status}."
    watched.shot("information_integrity-playing")
    page.click("#act-decide")
    result = env.step({"type": "decide", "decision": "remove", "reasoning": reasoning})
    total, n = total + result.reward, n + 1
    wait_steps(page, n)
    check_end(watched, env, total, "information_integrity")


@pytest.mark.parametrize(
    ("viewport", "task", "verdict"),
    [
        ("desktop", "selective_verification/random-v3", "SUPPORTED"),
        ("phone", "selective_verification/text-v3", "ABSTAIN"),
    ],
)
def test_play_selective_verification(
    server: ServerProcess, open_page: Any, viewport: str, task: str, verdict: str
) -> None:
    seed = 0
    env = local_env(task, seed)
    obs = env.observation()
    watched = open_page(viewport)
    page = start(watched, server.url, task, seed)
    assert page.inner_text("#claim") == obs.claim
    if obs.modality == "image":
        assert page.get_attribute("#picture", "src") == obs.image
        assert page.evaluate("document.getElementById('picture').naturalWidth") == obs.image_width
    else:
        assert obs.passage is not None
        blocks = [b.strip() for b in obs.passage.split("\n\n")]
        tables = [b for b in blocks if b.startswith("|")]
        shown = page.locator("#passage p").all_inner_texts()
        assert shown == [b for b in blocks if not b.startswith("|")] and len(tables) == 1
        rows = [line for line in tables[0].splitlines() if not set(line) <= set("|-: ")]
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in rows]
        assert page.locator("#passage th").all_inner_texts() == cells[0]
        assert page.locator("#passage tbody tr").count() == len(cells) - 1
        assert page.locator("#passage tbody td").all_inner_texts() == [c for row in cells[1:] for c in row]
    page.focus("#confidence")
    for _ in range(15):  # 0.75 → 0.90 with the keyboard, 0.01 a press
        page.keyboard.press("ArrowRight")
    assert page.inner_text("#confidence-value") == "0.90"
    watched.shot(f"selective_verification-{obs.modality}")
    page.click(f"#act-{verdict}")
    action = {"verdict": verdict} if verdict == "ABSTAIN" else {"verdict": verdict, "confidence": 0.9}
    result = env.step(action)
    wait_steps(page, 1)
    check_last_step(page, verdict, result.reward)
    check_end(watched, env, result.reward, f"selective_verification-{obs.modality}")


def test_a_lost_session_says_so(server: ServerProcess, open_page: Any) -> None:
    watched = open_page("desktop")
    page = watched.page
    page.goto(f"{server.url}/web/?task=pii_redaction/gdpr_contract_easy-v4&seed=1")
    page.wait_for_selector("body[data-ready]")
    with page.expect_response(lambda r: r.url.endswith("/pii_redaction/reset")) as reply:
        page.click("#start")
    sid = reply.value.json()["session_id"]
    page.wait_for_selector("#pii-text")
    # As if the idle TTL had reaped it: the server forgets the session.
    assert httpx.delete(f"{server.url}/pii_redaction/session/{sid}", trust_env=False).status_code == 200
    page.click("#act-SKIP")
    page.wait_for_selector("#banner:not([hidden])")
    assert "SESSION_NOT_FOUND" in page.inner_text("#banner") and "Start the episode again" in page.inner_text("#banner")
    watched.allow(404)  # the browser logs the refused request itself


def test_a_session_reaped_after_its_ttl(open_page: Any) -> None:
    with running_server(["--session-ttl", "1"], cli=True) as quick:
        watched = open_page("desktop")
        page = start(watched, quick.url, "information_integrity/easy-v3", 0)
        time.sleep(3)  # idle past the TTL: the server's reaper closes the session
        page.click("#verify-claim_1")
        page.wait_for_selector("#banner:not([hidden])")
        assert "SESSION_NOT_FOUND" in page.inner_text("#banner")
        assert page.locator("#steps > li").count() == 0
        watched.allow(404)


def test_one_environment_server_at_capacity(open_page: Any) -> None:
    with running_server(
        ["--root", "pii_redaction", "--tasks", "pii_redaction/*", "--max-sessions", "1"], cli=True
    ) as one:
        first = open_page("desktop")
        page = start(first, one.url, "pii_redaction/gdpr_contract_easy-v4", 0)
        options = page.locator("#task option").all_inner_texts()
        assert options and all(o.startswith("pii_redaction/") for o in options)
        second = open_page("desktop")
        other = second.page
        other.goto(f"{one.url}/web/")
        other.wait_for_selector("body[data-ready]")
        second.allow(503)
        other.click("#start")
        other.wait_for_selector("#banner:not([hidden])")
        assert "CAPACITY_REACHED" in other.inner_text("#banner")
        second.shot("playground-at-capacity")
        page.click("#act-FINISH")  # the episode ends, the page closes its session ...
        page.wait_for_selector("#explain")
        page.wait_for_selector("body:not([data-busy])")
        other.click("#start")  # ... and the slot is free again
        other.wait_for_selector("#pii-text")
        assert other.locator("#banner").is_hidden()
        first.allow(503)
        page.click("#start")  # now the first page is refused, and its finished episode is cleared away
        page.wait_for_selector("#banner:not([hidden])")
        assert "CAPACITY_REACHED" in page.inner_text("#banner")
        assert page.inner_text("#stage") == "No episode is running." and page.locator("#grade").count() == 0
        assert page.locator("#steps > li").count() == 0 and page.inner_text("#return") == "0.000"


@pytest.mark.parametrize("path", ["/docs", "/information_integrity/docs"])
def test_the_api_docs_render_with_nothing_from_another_origin(server: ServerProcess, open_page: Any, path: str) -> None:
    """/docs worked only online (Swagger UI from a CDN): every request but the server's own is now refused."""
    watched: Watched = open_page("desktop")
    page = watched.page
    outside: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(server.url + path)
    page.wait_for_selector(".swagger-ui .info .title")
    assert "integrity-gym" in page.inner_text(".swagger-ui .info .title") and outside == []
    page.wait_for_selector(".opblock")  # the operations are listed
    watched.shot("api-docs" + path.replace("/", "-"))
    # `igym serve` says where the playground and these docs are.
    assert any("playground at /web/ and API docs at /docs" in " ".join(line.split()) for line in server.log)
