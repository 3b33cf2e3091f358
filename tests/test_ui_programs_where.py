"""Where a stall's time went (``lanemon.ui.programs.where``): pure functions on folded stacks."""

from __future__ import annotations

from lanemon.ui.programs.where import culprit, is_library, parse_frame, ranked

STDLIB = "/usr/lib/python3.11/asyncio/events.py:80 _run"
SELECTORS = "/usr/lib/python3.11/selectors.py:468 select"
JSON = "/usr/lib/python3.11/json/decoder.py:353 raw_decode"
SITE = "/venv/lib/python3.11/site-packages/qasync/__init__.py:420 run_forever"
MINE = "/home/me/service/app.py:42 handle"
MINE2 = "/home/me/service/app.py:60 serve"
HASH = "/work/main/lanemon/work/_kernel.py:81 hash_range"
HASH_INSTALLED = "/venv/lib/python3.11/site-packages/lanemon/work/_kernel.py:81 hash_range"


def test_a_frame_is_split_into_file_line_and_function_and_odd_strings_are_kept_whole():
    assert parse_frame(MINE) == ("/home/me/service/app.py", 42, "handle")
    assert parse_frame(MINE).where == "/home/me/service/app.py:42"
    assert parse_frame("C:\\My Files\\app.py:7 run") == ("C:\\My Files\\app.py", 7, "run")
    assert parse_frame("garbage") == ("", None, "garbage")
    assert parse_frame("file.py:x f") == ("file.py:x", None, "f")


def test_library_frames_are_the_interpreters_and_installed_packages_never_lanemons():
    assert is_library(STDLIB) and is_library(SITE) and is_library(JSON)
    assert is_library("<frozen importlib._bootstrap>:1 _load")
    assert is_library("shibokensupport/signature/loader.py:60 _mod_uses_pyside")
    assert not is_library("<string>:8 crunch_numbers")
    assert not is_library(MINE)
    assert not is_library(HASH) and not is_library(HASH_INSTALLED)


def test_the_culprit_is_the_innermost_own_frame_with_the_most_samples():
    folded = [((JSON, MINE, STDLIB), 30),          # json called from handle: handle's time
              ((MINE2, STDLIB), 25),
              ((MINE, STDLIB), 5)]
    assert culprit(folded) == "handle"              # 35 against serve's 25
    assert culprit([((HASH, SITE, STDLIB), 40), ((MINE2,), 2)]) == "hash_range"


def test_a_stall_all_in_library_frames_names_the_innermost_and_no_samples_name_nothing():
    assert culprit([((SELECTORS, STDLIB), 3)]) == "select"
    assert culprit([]) is None
    assert culprit([((), 5), ((MINE,), 0)]) is None


def test_ranked_rows_are_per_innermost_frame_most_samples_first_with_shares_and_callers():
    rows = ranked([((MINE2, STDLIB), 10), ((JSON, MINE, STDLIB), 30), ((JSON, MINE2, STDLIB), 10)])
    assert [(r.function, r.samples) for r in rows] == [("raw_decode", 40), ("serve", 10)]
    assert rows[0].where == "/usr/lib/python3.11/json/decoder.py:353"
    assert rows[0].caller == "handle"               # 30 of its 40 samples came from handle
    assert rows[1].caller == "serve"
    assert abs(sum(r.share for r in rows) - 1.0) < 1e-9
    assert rows[0].share == 0.8


def test_a_stall_in_the_loops_own_code_is_named_after_the_loop_not_whoever_started_it():
    qt_paint = ("/venv/lib/python3.11/site-packages/qasync/__init__.py:420 QEventLoop.run_forever",
                "/usr/lib/python3.11/asyncio/runners.py:118 Runner.run",
                "/work/main/lanemon/ui/shell/app.py:200 run_app")
    assert culprit([(qt_paint, 12)]) == "QEventLoop.run_forever"
    assert ranked([(qt_paint, 12)])[0].caller == ""
    in_a_callback = ("/home/me/service/app.py:42 handle",
                     "/usr/lib/python3.11/asyncio/events.py:80 Handle._run",
                     "/usr/lib/python3.11/asyncio/base_events.py:1922 BaseEventLoop._run_once") + qt_paint[1:]
    assert culprit([(in_a_callback, 3)]) == "handle"
