"""The app in a real browser: every lesson page runs with its defaults and draws a timeline.

Starts ``streamlit run app/main.py`` on a free port and drives Debian's chromium with
Playwright (never ``playwright install``). Skipped without chromium, unless CI is set.
"""

from __future__ import annotations

import re

import pytest

from bench.browser_steps import IDLE, click_run
from pipelab.lessons import LESSONS, get_lesson, i18n
from pipelab.lessons.answer_kinds import CHOICE, is_numeric
from pipelab.lessons.numbers import format_value
from pipelab.lessons.questions import checks_for, predictions_for

pytestmark = pytest.mark.slow  # every test here starts processes (engine ranks, a server, a browser or a tool)



@pytest.mark.parametrize("slug", [lesson.slug for lesson in LESSONS])
def test_lesson_runs_and_draws_a_timeline(app_server, chromium_browser, slug):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_server}/{slug}")
        # A lesson whose claim compares runs its comparison side by side (3 rounds of 2-4
        # settings): lesson 6's twelve runs take about 25 s on a quiet 2-core host.
        compares = next(lesson for lesson in LESSONS if lesson.slug == slug).claim_compares
        click_run(page, chart_timeout_s=240 if compares else 60, idle_after=True)
        first = page.locator("[data-testid=stPlotlyChart]").filter(has_text="Measured").first
        bars = first.locator("g.trace.bars .point path")
        assert bars.count() > 0
        assert page.locator("[data-testid=stException]").count() == 0
        if slug == "gpipe":
            page.set_viewport_size({"width": 1400, "height": 5200})  # the app scrolls inside its own container
            page.wait_for_timeout(1500)
            page.screenshot(path="/tmp/lesson.png", full_page=True)
    except Exception:
        page.screenshot(path=f"/tmp/failed-{slug}.png", full_page=True)
        raise
    finally:
        page.close()


def test_a_lesson_opens_at_its_own_address_and_the_root_opens_the_course_overview(app_server, chromium_browser):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_server}/{LESSONS[0].slug}")
        page.wait_for_selector(IDLE, timeout=30_000)
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=30_000)
        assert page.locator("h1").first.inner_text().startswith(f"1. {LESSONS[0].title}")
        page.goto(f"{app_server}/")
        page.wait_for_selector(IDLE, timeout=30_000)
        assert page.locator("h1").first.inner_text().strip() == i18n.text("en", "overview.title")
        assert page.get_by_role("button", name="Run", exact=True).count() == 0
        assert page.get_by_text("Page not found").count() == 0
        # Its first link opens lesson 1 at lesson 1's own address.
        page.get_by_role("link", name=i18n.text("en", "overview.start", number=1, title=LESSONS[0].title)).click()
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=30_000)
        assert page.url.split("?")[0].endswith(f"/{LESSONS[0].slug}")
    finally:
        page.close()


@pytest.mark.parametrize("slug", ["gpipe", "zero-bubble"])
def test_run_is_on_the_first_screen(app_server, chromium_browser, slug):
    """A student reaches Run without scrolling past the lesson's text (folded above it)."""
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_server}/{slug}")
        page.wait_for_selector(IDLE, timeout=30_000)
        box = page.get_by_role("button", name="Run", exact=True).bounding_box()
        assert box["y"] + box["height"] <= 1000, box
    finally:
        page.close()


def test_a_negative_number_says_why_and_run_starts_nothing(app_server, chromium_browser):
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_server}/gpipe")
        page.wait_for_selector(IDLE, timeout=30_000)
        field = page.get_by_role("textbox", name="micro-batches m (1–64)")
        field.fill("-3")
        field.press("Enter")
        line = "micro-batches m must be a whole number ≥ 1, got -3"
        page.get_by_text(line, exact=True).wait_for(timeout=15_000)  # under the field
        page.get_by_text(f"Run is off until this is fixed: {line}").first.wait_for(timeout=15_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        assert page.get_by_role("button", name="Run", exact=True).is_disabled()
        assert page.locator("[data-testid=stPlotlyChart]").count() == 0  # no preview, no run
    finally:
        page.close()


def _answer(value) -> str:
    """An exact answer as a student may type it: "3/4" rather than "3/4 ≈ 0.750"."""
    return format_value(value, exact=True).split(" ≈ ")[0]


def _fill_form(form, questions, answer_of, lang: str) -> None:
    """Type each number question's answer into the form's text inputs (in order) and pick
    each choice question's option by its text."""
    inputs = form.locator("input[type=text]")
    numbers = [q for q in questions if is_numeric(q.kind)]
    assert inputs.count() == len(numbers)
    for box, q in zip(inputs.all(), numbers):
        box.fill(_answer(answer_of(q)))
    for q in (q for q in questions if q.kind == CHOICE):
        form.get_by_text(i18n.text(lang, q.option_key(answer_of(q))), exact=True).click()


@pytest.mark.parametrize("lang, slug", [("en", "gpipe"), ("zh", "naive")])
def test_the_course_in_each_language(app_server, chromium_browser, lang, slug):
    """Every lesson opens in the language of its link and asks for a prediction; one lesson is
    predicted, run for real (small settings), judged and reported, and its check-yourself
    answered until the sidebar counts it."""
    t = lambda key, **values: i18n.text(lang, key, **values)  # noqa: E731
    page = chromium_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        for lesson in LESSONS:
            page.goto(f"{app_server}/{lesson.slug}?lang={lang}")
            page.wait_for_selector(IDLE, timeout=30_000)
            title = f"{lesson.number}. {i18n.lesson_title(lesson, lang)}"
            assert page.locator("h1").first.inner_text().strip() == title
            # The lesson's own card; a section may ask for a prediction of its own (lesson 3's split or replicate).
            page.get_by_role("button", name=t("predict.submit")).first.wait_for(timeout=10_000)
            assert page.locator("[data-testid=stException]").count() == 0

        lesson = get_lesson(slug)
        page.goto(f"{app_server}/{slug}?lang={lang}")
        page.wait_for_selector(IDLE, timeout=30_000)
        knobs = lesson.defaults.with_overrides({"stages": 2, "microbatches": 2})
        for name in ("stages", "microbatches"):
            field = page.get_by_role("textbox", name=re.compile("^" + re.escape(t(f"knob.{name}"))))
            field.fill(str(getattr(knobs, name)))
            field.press("Enter")
            page.wait_for_timeout(500)
            page.wait_for_selector(IDLE, timeout=30_000)
        questions = [q for q in predictions_for(slug) if q.applies(knobs)]
        # The prediction boxes are plain widgets in a keyed box (no form: a form kept what was
        # typed from Run).
        predict = page.locator(f".st-key-predict-{slug}")
        _fill_form(predict, questions, lambda q: q.answer(knobs), lang)
        page.get_by_role("button", name=t("predict.submit")).click()
        # The prediction locked in opens the theory it kept folded.
        page.get_by_text(t("page.theory_preview")).wait_for(timeout=30_000)

        page.get_by_role("button", name=t("page.run"), exact=True).click()
        page.get_by_text(t("report.header")).wait_for(timeout=120_000)
        page.wait_for_selector(IDLE, timeout=30_000)
        verdict = t("verdict.line", status="", reason="").split("**")[1].rstrip("。.")  # "Verdict: " / "结论："
        alerts = " ".join(page.locator("[data-testid=stAlert]").all_inner_texts())
        statuses = [t(f"verdict.status.{s}") for s in ("holds", "noise", "fails", "untested")]
        assert any(f"{verdict}{status}" in alerts for status in statuses), alerts
        successes = page.locator("[data-testid=stAlertContentSuccess]").all_inner_texts()
        assert sum(s.startswith(t("report.right")) for s in successes) == len(questions), successes

        checks = checks_for(slug)
        _fill_form(page.locator("[data-testid=stForm]").last, checks, lambda c: c.answer(), lang)
        page.get_by_role("button", name=t("check.submit"), exact=True).click()
        page.get_by_text(t("check.done")).wait_for(timeout=30_000)
        progress = t("course.progress", done=1, total=sum(1 for lesson in LESSONS if checks_for(lesson.slug)))
        # Wait for what is read: the sidebar paints after the page's body on a rerun.
        page.locator("[data-testid=stSidebar]").get_by_text(progress).wait_for(timeout=30_000)
        # A reload is a new session: the progress comes back from the server, kept under this
        # browser's cookie as My runs is (issue 47 found it lost).
        page.reload()
        page.wait_for_selector(IDLE, timeout=30_000)
        page.get_by_text(t("check.done")).wait_for(timeout=30_000)
        page.locator("[data-testid=stSidebar]").get_by_text(progress).wait_for(timeout=30_000)
        assert progress in page.locator("[data-testid=stSidebar]").inner_text()
        assert page.locator("[data-testid=stException]").count() == 0
    except Exception:
        page.screenshot(path=f"/tmp/failed-course-{lang}.png", full_page=True)
        raise
    finally:
        page.close()
