"""Talk scripts (``lanemon.talk``): what a talk file holds, every refusal naming its line,
the example talk, and ``lanemon --talk FILE --check`` / ``lanemon talk --example``."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from lanemon import cli
from lanemon.talk import EXAMPLE, TalkError, load, parse
from lanemon.talk import script as s

GOOD = '''\
format = 1
title = "A short talk"

[[step]]
title = "Hello"
text = """First line.
Second line."""

[[step]]
title = "Runs"
do = [
  { tab = "runs" },
  { run = "whole", cpu_ms = 250 },
  { run = "worker", iterations = 1_000_000, worker = "thread" },
]
wait = "run"
undo = [ { tab = "placement" } ]

[[step]]
title = "Lanes and counters"
do = [
  { lanes = "add", workspace = "ws-02", queue = "cafe", seconds = 1.5, fails = true },
  { lanes = "burst", jobs = 10, workspaces = 3 },
  { lanes = "hold", workspace = "ws-02" },
  { lanes = "release" },
  { lanes = "busy", workspace = "ws-04", on = false },
  { counters = "start", strategy = "claim" },
  { counters = "compare" },
  { scenario = "pause" },
  { agents = "start", count = 3 },
  { agents = "pause" },
]
wait = "compare"
'''


def test_a_talk_reads_into_named_immutable_records():
    talk = parse(GOOD, "good.toml")
    assert talk.title == "A short talk" and talk.where == "good.toml"
    assert [st.number for st in talk.steps] == [1, 2, 3]
    assert [st.line for st in talk.steps] == [4, 9, 19]
    one, two, three = talk.steps
    assert one.text == "First line.\nSecond line." and one.actions == () and one.wait is None
    assert two.actions == (s.TabAction(tab="runs", line=12),
                           s.RunAction(kind="whole", iterations=None, cpu_ms=250.0, worker=None, line=13),
                           s.RunAction(kind="worker", iterations=1_000_000, cpu_ms=None, worker="thread", line=14))
    assert two.wait == "run" and two.undo == (s.TabAction(tab="placement", line=17),)
    add, burst, hold, release, busy, counters, compare, scenario, agents, pause = three.actions
    assert (add.do, add.workspace, add.queue, add.seconds, add.fails) == ("add", "ws-02", "cafe", 1.5, True)
    assert (burst.jobs, burst.workspaces, burst.queue, burst.seconds) == (10, 3, "reservations", 1.0)
    assert (hold.do, hold.workspace, release.workspace) == ("hold", "ws-02", None)
    assert (busy.workspace, busy.on) == ("ws-04", False)
    assert counters == s.CountersAction(do="start", strategy="claim", line=27)
    assert compare.do == "compare" and scenario == s.ScenarioAction(scenario="pause", line=29)
    assert (agents.do, agents.count, agents.store, pause.do) == ("start", 3, None, "pause")
    assert [a.line for a in three.actions] == list(range(22, 32))
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.title = "changed"


def test_agents_start_takes_a_store_url_that_agents_can_share():
    talk = parse('[[step]]\ntitle = "x"\ndo = [\n'
                 '  { agents = "start", count = 1, store = "sqlite:///tmp/t.db?lease=1" },\n'
                 '  { agents = "start", store = "postgresql://u:secret@db.example/lanes" },\n]\n')
    one, two = talk.steps[0].actions
    assert one == s.AgentsAction(do="start", count=1, store="sqlite:///tmp/t.db?lease=1", line=4)
    assert (two.count, two.store) == (2, "postgresql://u:secret@db.example/lanes")
    with pytest.raises(TalkError) as caught:      # a refused URL is said without its password
        parse('[[step]]\ntitle = "x"\ndo = [ { agents = "start", store = "postgresql://u:secret@h/db?lease=soon" } ]\n')
    assert "secret" not in str(caught.value) and caught.value.line == 3


def test_the_names_a_talk_uses_are_the_windows():
    """The tabs, kinds, queues and strategies a talk may name are those of the window and domains."""
    from lanemon.agents.scenarios import SCENARIOS
    from lanemon.counters import STRATEGIES
    from lanemon.lanes import QUEUE_NAMES
    from lanemon.work.workers import KINDS

    assert s.WORKER_KINDS == KINDS and s.QUEUES == QUEUE_NAMES
    assert set(s.STRATEGIES) == set(STRATEGIES) and set(s.SCENARIOS) == set(SCENARIOS)
    from lanemon.ui.runs.panel import MAX_CPU_MS
    assert s.MAX_CPU_MS == MAX_CPU_MS


def _step(body: str) -> str:
    return f'title = "t"\n\n[[step]]\ntitle = "a step"\n{body}\n'


# (the talk, the line the error names, words the message must hold)
BAD = [
    ("[[step]\ntitle = 'x'\n", 1, "not valid TOML"),
    ('[[step]]\ntitle = "x"\ntext = "open\n', 3, "not valid TOML"),
    ('title = "no steps"\n', None, "no steps"),
    ('format = 2\n[[step]]\ntitle = "x"\n', 1, "format 2 is newer"),
    ('format = "one"\n[[step]]\ntitle = "x"\n', 1, "format must be a whole number"),
    ('colour = "red"\n[[step]]\ntitle = "x"\n', 1, 'unknown key "colour" at the top'),
    ('[[step]]\ntext = "no title"\n', 1, "step 1's title is missing"),
    ('[[step]]\ntitle = "x"\n\n[[step]]\ntitle = "   "\n', 5, "step 2's title is empty"),
    ('[[step]]\ntitle = 3\n', 2, "must be text in quotes"),
    ('[[step]]\ntitle = "' + "x" * 80 + '"\n', 2, "80 characters; at most 70"),
    ('[[step]]\ntitle = "x"\ntext = """1\n2\n3\n4"""\n', 3, "4 lines; at most 3"),
    (_step("titel = 'typo'"), 5, 'unknown key "titel" in step 1'),
    (_step("wait = 'forever'"), 5, 'wait "forever" is not one of "run", "compare"'),
    (_step("do = { tab = 'runs' }"), 5, "do must be a list of actions"),
    (_step("do = [ 'runs' ]"), 5, "action 1 must be a table"),
    (_step("do = [\n  { tab = 'runs' },\n  { dance = 'now' },\n]"), 7, "an action needs one of run, tab"),
    (_step("do = [ { tab = 'runs', run = 'whole' } ]"), 5, "one action per table"),
    (_step("do = [ { tab = 'timeline' } ]"), 5, 'tab "timeline" is not one of "runs"'),
    (_step("do = [ { tab = 'runs', size = 3 } ]"), 5, 'unknown key "size" in a tab action'),
    (_step("do = [ { run = 'half', cpu_ms = 4 } ]"), 5, 'run "half" is not one of "whole", "sliced", "worker"'),
    (_step("do = [ { run = 'whole' } ]"), 5, "a run needs its size"),
    (_step("do = [ { run = 'whole', cpu_ms = 1, iterations = 5 } ]"), 5, "a run needs its size"),
    (_step("do = [ { run = 'whole', cpu_ms = 0 } ]"), 5, "cpu_ms = 0 is out of range"),
    (_step("do = [ { run = 'whole', cpu_ms = 'lots' } ]"), 5, "cpu_ms must be a number"),
    # what the window's control would round (the Runs tab: whole CPU ms from 1; the Lanes
    # form: tenths of a second) is refused, not played as another value
    (_step("do = [ { run = 'whole', cpu_ms = 0.5 } ]"), 5, "cpu_ms = 0.5 is out of range (1 to 600,000)"),
    (_step("do = [ { run = 'whole', cpu_ms = 2.5 } ]"), 5,
     "cpu_ms = 2.5 is finer than the window takes (whole CPU ms)"),
    (_step("do = [ { lanes = 'add', workspace = 'ws-01', seconds = 0.25 } ]"), 5,
     "seconds = 0.25 is finer than the window takes (tenths of a second)"),
    (_step("do = [ { lanes = 'burst', seconds = 1.05 } ]"), 5, "seconds = 1.05 is finer than the window takes"),
    (_step("do = [ { run = 'whole', iterations = 0 } ]"), 5, "iterations = 0 is out of range"),
    (_step("do = [ { run = 'whole', iterations = 600_000_000 } ]"), 5, "600,000,000 is out of range"),
    (_step("do = [ { run = 'whole', iterations = 2.5 } ]"), 5, "iterations must be a whole number"),
    (_step("do = [ { run = 'whole', iterations = true } ]"), 5, "iterations must be a whole number"),
    (_step("do = [ { run = 'whole', cpu_ms = 5, worker = 'warm' } ]"), 5, "worker = ... is for a worker run"),
    (_step("do = [ { run = 'worker', cpu_ms = 5, worker = 'hot' } ]"), 5, 'worker "hot" is not one of'),
    (_step("do = [ { lanes = 'add' } ]"), 5, 'lanes = "add" needs workspace'),
    (_step("do = [ { lanes = 'jump', workspace = 'ws-01' } ]"), 5, 'lanes "jump" is not one of'),
    (_step("do = [ { lanes = 'add', workspace = 'ws-01', queue = 'bar' } ]"), 5, 'queue "bar" is not one of'),
    (_step("do = [ { lanes = 'add', workspace = 'ws-01', seconds = 601 } ]"), 5, "seconds = 601 is out of range"),
    (_step("do = [ { lanes = 'hold', workspace = 'ws-01', jobs = 3 } ]"), 5, 'lanes = "hold" takes no jobs'),
    (_step("do = [ { lanes = 'burst', jobs = 0 } ]"), 5, "jobs = 0 is out of range"),
    (_step("do = [ { lanes = 'busy', workspace = 'ws-01', on = 'yes' } ]"), 5, "on must be true or false"),
    (_step("do = [ { counters = 'strategy' } ]"), 5, 'counters = "strategy" needs strategy'),
    (_step("do = [ { counters = 'start', strategy = 'mutex' } ]"), 5, 'strategy "mutex" is not one of'),
    (_step("do = [ { counters = 'stop', strategy = 'long_lock' } ]"), 5, 'counters = "stop" takes no strategy'),
    (_step("do = [ { scenario = 'flood' } ]"), 5, 'scenario "flood" is not one of'),
    (_step("do = [ { agents = 'start', count = 17 } ]"), 5, "count = 17 is out of range"),
    (_step("do = [ { agents = 'pause', count = 1 } ]"), 5, 'agents = "pause" takes no count'),
    (_step("do = [ { agents = 'stop', store = 'sqlite:///tmp/a.db' } ]"), 5, 'agents = "stop" takes no store'),
    (_step("do = [ { agents = 'start', store = 'memory:' } ]"), 5,
     'store = "memory:" is one window\'s own: agents share a store'),
    (_step("do = [ { agents = 'start', store = 'mysql://h/db' } ]"), 5, "store: 'mysql://h/db'"),
    (_step("do = [ { agents = 'start', store = 'sqlite:///tmp/a.db?lease=-1' } ]"), 5, "store: "),
    (_step("do = [ { agents = 'start', store = 3 } ]"), 5, "store must be text in quotes"),
    (_step("do = [ { tab = 'runs' } ]\nundo = [\n  { tab = 'lanes' }, { tab = 'nope' },\n]"), 7,
     'tab "nope" is not one of'),
]


def test_values_the_window_shows_exactly_pass_whatever_their_binary_fraction():
    """Tenths of a second (0.3 and 599.9 are not exact binary fractions) and whole CPU ms
    written as 250.0 pass the step check, as their own values."""
    talk = parse(_step("do = [\n  { lanes = 'add', workspace = 'ws-01', seconds = 0.3 },\n"
                       "  { lanes = 'burst', seconds = 599.9 },\n  { run = 'whole', cpu_ms = 250.0 },\n]"))
    add, burst, run = talk.steps[0].actions
    assert (add.seconds, burst.seconds, run.cpu_ms) == (0.3, 599.9, 250.0)


def test_a_step_of_many_actions_is_read_once_not_once_per_action(monkeypatch):
    """Each action's line was found by reading the step from its array's start again: a
    step of n actions read ~n²/2 lines (a 1 MB talk of one-line actions: minutes). Now each
    line of the step is read once for the array, whatever the number of actions."""
    n = 1_000
    body = "do = [\n" + "".join(f"  {{ tab = 'runs' }},  # action {i + 1}\n" for i in range(n)) + "]"
    calls = []
    real = s._code
    monkeypatch.setattr(s, "_code", lambda line: calls.append(line) or real(line))
    talk = parse(_step(body))
    assert len(talk.steps[0].actions) == n
    assert len(calls) <= n + 3                      # the step's lines, once
    # and the lines said are still each action's own
    with pytest.raises(TalkError) as caught:
        parse(_step(body.replace("{ tab = 'runs' },  # action 777", "{ tab = 'nope' },  # action 777")))
    assert caught.value.line == 5 + 777             # (line 5: "do = [")


@pytest.mark.parametrize(("text", "line", "words"), BAD, ids=[b[2][:40] for b in BAD])
def test_every_error_names_its_line_and_what_is_wrong(text, line, words):
    with pytest.raises(TalkError) as caught:
        parse(text, "talk.toml")
    err = caught.value
    assert words in err.message, err.message
    assert err.line == line, (err.line, str(err))
    assert str(err) == (f"talk.toml, line {line}: {err.message}" if line is not None
                        else f"talk.toml: {err.message}")


def test_a_file_that_cannot_be_read_or_is_not_text_is_said(tmp_path):
    with pytest.raises(TalkError, match="cannot read it: No such file"):
        load(str(tmp_path / "missing.toml"))
    binary = tmp_path / "talk.toml"
    binary.write_bytes(b'[[step]]\ntitle = "x"\n\xff\xfe\n')
    with pytest.raises(TalkError) as caught:
        load(str(binary))
    assert caught.value.line == 3 and "not UTF-8" in caught.value.message
    with pytest.raises(TalkError, match="not a file"):
        load(str(tmp_path))          # a folder


def test_a_device_a_pipe_a_huge_file_deep_nesting_or_no_step_is_refused_in_one_line(tmp_path):
    """``--talk /dev/zero`` (or a pipe) read for ever, arrays nested ~1,000 deep raised
    RecursionError, and ``step = []`` passed ``--check`` and then crashed the window."""
    import os

    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        with pytest.raises(TalkError, match="not a file"):
            load(path)
    huge = tmp_path / "huge.toml"
    huge.write_text('[[step]]\ntitle = "x"\n' + "# padding\n" * 150_000)
    with pytest.raises(TalkError, match="larger than 1,000,000 bytes"):
        load(str(huge))
    with pytest.raises(TalkError, match="not valid TOML"):        # (RecursionError in 3.11's tomllib)
        parse("x = " + "[" * 2000 + "]" * 2000, "talk.toml")
    with pytest.raises(TalkError, match="no steps"):
        parse("step = []\n", "talk.toml")


def test_the_example_talk_tells_the_seeds_story_and_is_valid():
    talk = parse(EXAMPLE, "example")
    titles = [st.title for st in talk.steps]
    assert len(titles) == 12
    kinds = [type(a).__name__ for st in talk.steps for a in st.actions]
    runs = [a.kind for st in talk.steps for a in st.actions if isinstance(a, s.RunAction)]
    assert runs == ["whole", "sliced", "worker"]
    assert {"TabAction", "RunAction", "LanesAction", "CountersAction"} <= set(kinds)
    # the story, in order: blocks -> slice -> worker -> placement -> two queues one lane -> claim
    order = [next(i for i, t in enumerate(titles) if word in t.lower())
             for word in ("blocks the loop", "slice it", "worker", "belong", "two queues", "claim is not a lock")]
    assert order == sorted(order)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=60)


def test_talk_example_prints_a_talk_that_passes_check(tmp_path):
    done = _cli("talk", "--example")
    assert done.returncode == 0 and done.stdout == EXAMPLE
    path = tmp_path / "example.toml"
    path.write_text(done.stdout)
    checked = _cli("--talk", str(path), "--check")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == f"{path}: a talk of 12 steps, fine" and checked.stderr == ""


def test_check_exits_2_with_the_line_on_stderr(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('[[step]]\ntitle = "x"\ndo = [ { run = "whole", cpu_ms = -3 } ]\n')
    assert cli.main(["--talk", str(path), "--check"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == (f"lanemon: error: {path}, line 3: cpu_ms = -3 is out of range "
                           "(1 to 600,000)")


def test_check_of_a_one_step_talk_says_step(tmp_path, capsys):
    path = tmp_path / "one.toml"
    path.write_text('[[step]]\ntitle = "x"\n')
    assert cli.main(["--talk", str(path), "--check"]) == 0
    assert capsys.readouterr().out == f"{path}: a talk of 1 step, fine\n"


def test_a_talk_with_an_error_never_opens_the_window(tmp_path, capsys, monkeypatch):
    """``lanemon --talk BAD`` (no --check): the message and exit 2 before any window."""
    import lanemon.ui.shell.app as app

    monkeypatch.setattr(app, "run_app", lambda **kw: pytest.fail("the window was opened"))
    path = tmp_path / "bad.toml"
    path.write_text('[[step]]\ntitle = "x"\nwait = "lunch"\n')
    assert cli.main(["--talk", str(path)]) == 2
    assert f"{path}, line 3: step 1's wait \"lunch\" is not one of" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "words"), [
    (["--check"], "--check checks a talk script"),
    (["talk"], "lanemon talk needs --example"),
    (["--talk", "x.toml", "talk", "--example"], "--talk opens the window with a talk"),
    (["--talk", "/no/such/talk.toml", "--check"], "/no/such/talk.toml: cannot read it"),
])
def test_talk_options_misused_are_refused(argv, words, capsys):
    assert cli.main(argv) == 2
    assert words in capsys.readouterr().err


def test_a_workspace_name_the_window_refuses_is_refused_by_check_too():
    """``workspace = "ws 01"`` passed ``--check`` (only its length was checked) and was refused
    when the step ran: the one rule (``lanemon.lanes.names``) applies in the script too."""
    with pytest.raises(TalkError, match="is not a workspace name"):
        parse('[[step]]\ntitle = "x"\ndo = [ { lanes = "add", workspace = "ws 01" } ]\n', "talk.toml")
    talk = parse('[[step]]\ntitle = "x"\ndo = [ { lanes = "add", workspace = "ws-01/a@b" } ]\n', "talk.toml")
    assert talk.steps[0].actions[0].workspace == "ws-01/a@b"


def test_a_line_separator_inside_a_string_does_not_shift_the_lines_said():
    """TOML lines end at LF (or CRLF) only; a U+2028 inside a step's text made every line said
    after it one too many."""
    text = ('[[step]]\ntitle = "one"\ntext = "a\u2028b"\n[[step]]\ntitle = "two"\n'
            'do = [ { tab = "nosuch" } ]\n')
    with pytest.raises(TalkError) as caught:
        parse(text, "talk.toml")
    assert caught.value.line == 6, caught.value
    with pytest.raises(TalkError) as crlf:
        parse(text.replace("\n", "\r\n"), "talk.toml")
    assert crlf.value.line == 6, crlf.value
