"""`bcn-bridge conversations`, run in-process through `bridge.cli.main`."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tracking_messages import clarify, request, response

from bridge.cli import main
from bridge.cli.conversations import render_table, short_duration
from bridge.store import open_store
from bridge.tracking import Tracker

MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


@pytest.fixture
async def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/bridge.db"
    now = datetime.now(UTC)
    async with open_store(url) as store:
        tracker = Tracker(store)
        await tracker.track(request("lotbot-1"), now=now - 5 * MINUTE, chat="discord:main:42")
        await tracker.track(request("lotbot-2", to="Maps"), now=now - 3 * MINUTE, chat="slack:w:C1")
        await tracker.track(clarify("lotbot-2", from_="Maps"), now=now - 2 * MINUTE)
        await tracker.track(request("lotbot-3"), now=now - 60 * MINUTE, chat="discord:main:42")
        await tracker.track(response("lotbot-3"), now=now - 59 * MINUTE)
    return url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["conversations", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_lists_every_conversation(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--store", store_url)
    assert code == 0
    header, *lines = out.splitlines()
    assert header.split("  ")[0] == "REQUEST ID"
    for column in ("TYPE", "FROM → TO", "STATUS", "DEPTH", "AGE", "DEADLINE"):
        assert column in header
    assert [line.split()[0] for line in lines] == ["lotbot-3", "lotbot-1", "lotbot-2"]
    first = lines[1].split()
    assert first[:6] == ["lotbot-1", "REQUEST", "Lotbot", "→", "Weather", "open"]
    assert first[6] == "1/5"
    assert lines[2].split()[5] == "clarifying"
    assert lines[0].split()[-1] == "-"  # finished: no deadline


def test_status_and_chat_filters(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--store", store_url, "--status", "open")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["lotbot-1"]
    _, out, _ = run(capsys, "--store", store_url, "--status", "open", "--status", "clarifying")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["lotbot-1", "lotbot-2"]
    _, out, _ = run(capsys, "--store", store_url, "--chat", "discord:main:42", "--json")
    assert [item["request_id"] for item in json.loads(out)] == ["lotbot-3", "lotbot-1"]
    _, out, _ = run(capsys, "--store", store_url, "--chat", "nowhere")
    assert out.strip() == "no conversations"


def test_json_carries_full_records(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--store", store_url, "--json", "--to", "Maps")
    assert code == 0
    [item] = json.loads(out)
    assert item["request_id"] == "lotbot-2"
    assert (item["from"], item["to"], item["status"]) == ("Lotbot", "Maps", "clarifying")
    assert item["depth"] == [2, 5]
    assert datetime.fromisoformat(item["deadline"]) > datetime.fromisoformat(item["created_at"])
    assert [entry["type"] for entry in item["history"]] == ["REQUEST", "CLARIFY"]
    assert item["history"][1]["content"] == "Which date?"


def test_missing_store_file_is_an_error_not_a_new_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.db"
    code, out, err = run(capsys, "--store", f"sqlite:///{path}")
    assert code == 1
    assert "no store at" in err and out == ""
    assert not path.exists()


def test_bad_urls_and_files_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--store", "mysql://x/y")
    assert code == 2 and "unknown scheme" in err
    code, _, err = run(capsys, "--store", "redis://u:hunter2@h/zero")
    assert code == 2 and "database number" in err and "hunter2" not in err
    junk = tmp_path / "junk.db"
    junk.write_text("this is not a database" * 100)
    code, _, err = run(capsys, "--store", f"sqlite:///{junk}")
    assert code == 1 and "cannot read" in err


def test_unknown_status_is_refused_by_the_parser(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["conversations", "--store", store_url, "--status", "opne"])
    assert exit_.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


async def test_table_renders_ages_and_deadlines_relative_to_now() -> None:
    t0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    async with open_store("memory://") as store:
        tracker = Tracker(store)
        await tracker.track(request("a"), now=t0)
        await tracker.track(request("b", depth=(2, 5)), now=t0 - 40 * MINUTE)
        lines = render_table(await tracker.list(), t0 + 90 * SECOND).splitlines()
    assert lines[1].split() == ["b", "REQUEST", "Lotbot", "→", "Weather", "open", "2/5", "41m",
                                "overdue", "11m"]  # fmt: skip
    assert lines[2].split()[-4:] == ["1/5", "1m", "in", "28m"]
    assert render_table([], t0) == "no conversations"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (60, "1m"), (3599, "59m"), (3600, "1h00m"), (3 * 3600 + 300, "3h05m"),
     (86400 * 2 + 4 * 3600, "2d04h"), (-5, "0s")],
)  # fmt: skip
def test_short_duration(seconds: int, text: str) -> None:
    assert short_duration(timedelta(seconds=seconds)) == text


def test_an_unreachable_redis_is_one_line_without_the_password(capsys) -> None:
    from tests.support.bridge_process import free_port

    port = free_port()  # nobody listens there
    code = main(["conversations", "--store", f"redis://:s3cret-pw@127.0.0.1:{port}/0"])
    err = capsys.readouterr().err
    assert code != 0
    assert f"127.0.0.1:{port}" in err and "s3cret-pw" not in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
