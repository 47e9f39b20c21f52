"""The web console in a real browser (Debian's Chromium, headless, driven by Playwright) against
the whole stack as real processes: what an operator does from the console, seen in the page and
checked again through the REST API. Each test saves a screenshot under ``var/screenshots``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic
from headrace.local import chromium
from headrace.local.stack import Stack
from tests.support import crash, wait_for

pytestmark = pytest.mark.kafka

SCREENSHOTS = Path(__file__).parents[2] / "var" / "screenshots"
WAIT_MS = 30_000  # a page's answer may wait on a worker's rebalance


def browser_executable() -> str:
    """The Chromium to drive; without one the tests fail under CI and are skipped elsewhere."""
    wanted = chromium.executable()
    if not Path(wanted).is_file():
        message = (
            f"no Chromium at {wanted}: the console's browser tests need Debian's packages "
            f"(apt-get install {chromium.PACKAGES}), or HEADRACE_CHROMIUM naming another"
        )
        if os.environ.get("HEADRACE_CI"):
            pytest.fail(message)
        pytest.skip(message)
    return wanted


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = browser_executable()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=list(chromium.ARGS))
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        opened.screenshot(path=SCREENSHOTS / f"{request.node.name}.png", full_page=True)
        context.close()
    assert not errors, f"the page's script failed: {errors}"


def console(stack: Stack, where: str = "") -> str:
    return f"http://{stack.settings.rest_addr}/ui/{where}"


def open_console(page: Page, stack: Stack, where: str = "") -> None:
    page.goto(console(stack, where))
    expect(page.locator("body[data-ready]")).to_have_count(1)


def confirm(page: Page) -> None:
    """Says yes in the console's confirmation dialog."""
    dialog = page.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    dialog.locator("#confirm-ok").click()
    expect(dialog).to_be_hidden()


def made_topic(stack: Stack, topic: str) -> None:
    """Creates a topic of one partition, from a thread: Playwright runs an event loop in this
    one."""
    with ThreadPoolExecutor(1) as thread:
        thread.submit(
            asyncio.run, ensure_topic(stack.settings.bootstrap_servers, topic, 1)
        ).result()


def state_of(client: ConfigClient, name: str) -> tuple[str, list[str]]:
    status = status_json(client.status(name))
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def row(page: Page, name: str) -> Any:
    return page.locator(f'#connectors tr[data-connector="{name}"]')


def test_a_connector_is_created_from_the_form_after_its_per_key_error_is_fixed(
    stack: Stack, page: Page, tmp_path: Path
) -> None:
    name, topic = f"{tmp_path.name}-formed", f"{tmp_path.name}-formed"
    open_console(page, stack, "#/new")
    page.fill("#connector-name", name)
    page.select_option("#plugin", label="headrace_datagen.DatagenSourceConnector 1.0.0 (source)")
    page.fill("#key-topic", topic)
    page.fill("#connector-name", "")  # a connector needs a name, and is told so beside it
    expect(page.locator("#error-name")).not_to_have_text("")
    page.fill("#connector-name", name)
    expect(page.locator("#error-name")).to_have_text("")
    page.check("#show-optional")
    page.fill("#key-batch\\.size", "ten")
    error = page.locator("#error-batch\\.size")
    expect(error).to_contain_text("Invalid value ten for configuration batch.size")
    page.fill("#key-batch\\.size", "7")
    expect(error).to_have_text("")
    page.click("#create")
    expect(page.locator("#connector-state [data-state]")).to_have_text("RUNNING")
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        config = client.get(name).config
        assert (config["batch.size"], config["topic"]) == ("7", topic)
        assert "connector.plugin.version" in config  # the version chosen in the form
        client.delete(name)


def test_a_pause_made_elsewhere_shows_without_a_reload_and_the_console_resumes_and_pauses(
    stack: Stack, page: Page, tmp_path: Path
) -> None:
    name = f"{tmp_path.name}-paused"
    config = {"connector.class": "DatagenSource", "topic": name, "interval.ms": "200"}
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(name, config)
        open_console(page, stack)
        expect(row(page, name).locator("[data-state]")).to_have_text("RUNNING")
        page.evaluate("window.loadedOnce = true")
        client.pause(name)
        expect(row(page, name).locator("[data-state]")).to_have_text("PAUSED")
        assert page.evaluate("window.loadedOnce") is True, "the page was loaded again"
        row(page, name).locator("a").click()
        page.click("button:text-is('Resume')")
        confirm(page)
        expect(page.locator("#connector-state [data-state]")).to_have_text("RUNNING")
        assert state_of(client, name)[0] == "RUNNING"
        page.click("button:text-is('Pause')")
        confirm(page)
        expect(page.locator("#connector-state [data-state]")).to_have_text("PAUSED")
        assert state_of(client, name)[0] == "PAUSED"
        # Made with an alias, it is listed under the class and version it runs.
        open_console(page, stack, "#/plugins")
        plugin = page.locator(
            '#plugins tr[data-plugin="headrace_datagen.DatagenSourceConnector"]'
            '[data-version="1.0.0"]'
        )
        expect(plugin).to_contain_text(name)
        client.delete(name)


def test_a_failed_task_is_restarted_from_its_connector_page(
    stack: Stack, page: Page, tmp_path: Path
) -> None:
    name, topic = f"{tmp_path.name}-flaky", f"{tmp_path.name}-flaky"
    made_topic(stack, topic)
    config = {
        "connector.class": "failing_source.FailingSourceConnector",
        "tasks.max": "1",
        "topic": topic,
        "fail.times": "1",  # its first run fails, the next runs
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(name, config)
        open_console(page, stack, f"#/connectors/{name}")
        task = page.locator('#tasks tr[data-task="0"]')
        expect(task.locator("[data-state]")).to_have_text("FAILED")
        expect(task).to_contain_text("failing on purpose in poll")
        expect(row_error(page, stack, name)).to_contain_text("task 0")
        open_console(page, stack, f"#/connectors/{name}")
        task.locator("button:text-is('Restart')").click()
        confirm(page)
        expect(task.locator("[data-state]")).to_have_text("RUNNING")
        assert state_of(client, name)[1] == ["RUNNING"]
        history = page.locator("#history")
        expect(history).to_contain_text("FAILED")
        client.delete(name)


def row_error(page: Page, stack: Stack, name: str) -> Any:
    """The last error the connectors' list shows for ``name``."""
    open_console(page, stack)
    return row(page, name).locator("td.error")


def test_offsets_are_reset_on_a_stopped_connector_and_it_is_deleted(
    stack: Stack, page: Page, tmp_path: Path
) -> None:
    name, topic = f"{tmp_path.name}-reader", f"{tmp_path.name}-read"
    made_topic(stack, topic)
    writer = {"connector.class": "DatagenSource", "topic": topic, "records": "20"}
    reader = {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "topics": topic,
        "path": str(tmp_path),
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(f"{name}-writer", writer)
        client.create(name, reader)
        wait_for("the sink's offsets at 20", lambda: offset_of(client, name) == 20)
        open_console(page, stack, f"#/connectors/{name}")
        expect(page.locator("#reset-offsets")).to_be_disabled()  # not while it runs
        page.click("button:text-is('Stop')")
        confirm(page)
        expect(page.locator("#connector-state [data-state]")).to_have_text("STOPPED")
        expect(page.locator("#offsets")).to_contain_text('{"kafka_offset":20}')
        page.click("#reset-offsets")
        confirm(page)
        expect(page.locator("#no-offsets")).to_be_visible()
        assert client.offsets(name) == []
        page.click("button:text-is('Delete')")
        confirm(page)
        expect(page.locator("#connectors")).to_be_visible()
        expect(row(page, name)).to_have_count(0)
        assert name not in client.names()
        client.delete(f"{name}-writer")


def offset_of(client: ConfigClient, name: str) -> int | None:
    found = client.offsets(name)
    return found[0]["offset"]["kafka_offset"] if found else None


def test_a_killed_worker_shows_as_a_rebalance_in_the_history(
    stack: Stack, page: Page, tmp_path: Path
) -> None:
    name = f"{tmp_path.name}-spread"
    config = {"connector.class": "DatagenSource", "topic": name, "tasks.max": "2"}
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(name, config)
        open_console(page, stack, "#/cluster")
        expect(page.locator("#coordinators tr[data-role='leader']")).to_have_count(1)
        expect(page.locator("#coordinators tr[data-role='standby']")).to_have_count(1)
        for worker in ("worker-1", "worker-2"):  # a task of it on each
            expect(page.locator(f"#workers [data-worker='{worker}']")).to_contain_text(name)
        generations = page.locator("#generations tbody tr")
        newest = int(generations.first.get_attribute("data-generation") or 0)
        crash(stack, "worker-2")
        try:
            departed = page.locator("#generations td.departed", has_text="worker-2")
            expect(departed.first).to_be_visible(timeout=60_000)
            assert int(generations.first.get_attribute("data-generation") or 0) > newest
            moved = page.locator("#generations td.moved", has_text="worker-2 → worker-1")
            expect(moved.first).to_be_visible(timeout=60_000)  # once its grace is over
        finally:
            stack.start("worker-2")
            client.delete(name)
