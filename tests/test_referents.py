"""The `referent` check: a question that refers to "that NOUN", a thing it describes and does not name, answered with
what the entry of the thing it names says.

On the PostgreSQL manual's questions (docs/results/2026-12.md, stop 61) it turned three answers right, the cases these
tests are made of: "-1" (autovacuum_vacuum_cost_limit's own default) for the default of the cost limit autovacuum
falls back on, now "200" from vacuum_cost_limit's entry; "pg_archivecleanup" for the option that makes the utility
an archive_cleanup_command names only print, now "-n" from its Options; and "64" (max_locks_per_transaction's own
default) for the default of the parameter the lock table is sized by besides max_connections, now "zero" from
max_prepared_transactions' entry (with unread letting "0" meant for "zero" stand where the thought writes "zero").

`referred` asks the same of a question that names no entry holding the answer. On the manual it reaches four
questions the defaults answer wrong and no other, and turns the first three below right (docs/results/2026-12.md, stop
69); the tests below are made of the four: "4", the logical replication workers' own default, for the default of the
pool they are taken from (max_worker_processes, 8); "8MB", temp_buffers' default, for the memory setting wal_buffers
is a fraction of (shared_buffers, 128MB); "1" from "njobs + 1 connections" for the default of the setting parallel
jobs must keep high enough (max_connections, 100); and "string", the type of recovery_target_name, for the type the
function that creates a named restore point returns (pg_create_restore_point, pg_lsn). The right answers it must let
stand are made of the manual's too: "100" read as "The default target value is 100." for default_statistics_target,
"60" in pg_promote's own row, "RFC 7677" in the entry of scram-sha-256, which the way sentence writes.
"""

from __future__ import annotations

import pytest
from test_answer_checks import index_of, make

from offline_agent.answer_form import answer_form
from offline_agent.checks.referents import (
    asked_of,
    code_names,
    content_words,
    entry_names,
    referring_sentence,
    refers_to,
    shown_lines,
    way_sentence,
    written_in,
)
from offline_agent.grammar import GbnfChecker


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        (
            "If autovacuum_vacuum_cost_limit is left at its default, autovacuum uses another cost-limit setting "
            "instead. What is that setting's default value?",
            "setting",
        ),
        ("VACUUM caps the table age at 95% of another parameter. What is that other parameter's default?", "parameter"),
        ("The docs mention an extension. How many statements does that extension track by default?", "extension"),
        ("The docs point to a view. In that view, which value means the slot is lost?", "view"),
        ("The docs name a utility. Which option makes that utility only print the files?", "utility"),
        # "that" after a noun opens a clause: the question names what it asks about
        ("Which band that formed in 1990 released the album?", None),
        ("In which city is the museum that owns the painting?", None),
        ("Is it true that the river flows north?", None),
        ("What is the default of the setting that controls WAL senders?", None),
    ],
)
def test_that_after_a_verb_or_preposition_refers_to_a_thing_the_question_does_not_name(question, noun) -> None:
    assert refers_to(answer_form(question)) == noun


def test_the_sentence_that_refers_says_what_is_asked_of_the_thing() -> None:
    assert referring_sentence(answer_form(FALLS_BACK)) == "What is that setting's default value?"
    assert referring_sentence(answer_form("The docs point to a view. In that view, which value means lost?")) == (
        "In that view, which value means lost?"
    )
    assert referring_sentence(answer_form("What is the default of autovacuum_vacuum_cost_limit?")) is None


def test_the_sentence_that_refers_asked_of_a_name() -> None:
    assert asked_of(answer_form(FALLS_BACK), "vacuum_cost_limit") == "What is vacuum_cost_limit's default value?"
    other = answer_form("It caps the age at 95% of another parameter. What is that other parameter's default?")
    assert asked_of(other, "autovacuum_freeze_max_age") == "What is autovacuum_freeze_max_age's default?"
    utility = answer_form("The docs name a utility. Which option makes that utility only print the files?")
    assert asked_of(utility, "pg_archivecleanup") == "Which option makes pg_archivecleanup only print the files?"
    assert asked_of(answer_form("What is the default of autovacuum_vacuum_cost_limit?"), "x") is None


def test_an_observations_lines_and_the_names_of_their_sections() -> None:
    observation = (
        "[1] Automatic Vacuuming > autovacuum_vacuum_cost_limit (integer): If -1 is given, vacuum_cost_limit is used.\n"
        "more text of no line\n"
        "[2] Marie Curie: Marie Curie was a physicist."
    )
    lines = shown_lines(observation)
    assert [label for label, _ in lines] == [
        "Automatic Vacuuming > autovacuum_vacuum_cost_limit (integer)",
        "Marie Curie",
    ]
    assert entry_names(lines[0][0]) == ["autovacuum_vacuum_cost_limit"]
    assert entry_names("Storage > autovacuum_enabled, toast.autovacuum_enabled (boolean)") == [
        "autovacuum_enabled",
        "toast.autovacuum_enabled",
    ]
    assert entry_names("Marie Curie") == ["Marie Curie"]
    # written as in the heading, not inside a longer name
    assert written_in("vacuum_cost_limit", "the regular vacuum_cost_limit value")
    assert not written_in("vacuum_cost_limit", "autovacuum_vacuum_cost_limit is left at its default")
    assert not written_in("Notes", "what notes does it keep")


def test_names_in_code_those_of_the_answers_sentence_first() -> None:
    text = "It scans when pg_class.relfrozenxid is old. VACUUM caps it at 95% of autovacuum_freeze_max_age."
    sentence = "VACUUM caps it at 95% of autovacuum_freeze_max_age."
    assert code_names(text, sentence) == ["autovacuum_freeze_max_age", "pg_class.relfrozenxid"]
    assert code_names("Call pg_create_restore_point() first, then set it.") == ["pg_create_restore_point"]
    assert code_names("A plain sentence of prose, with no name in code.") == []


MANUAL = {
    "autovacuum.md": "# Automatic Vacuuming\n\n## autovacuum_vacuum_cost_limit (integer)\n\nThe cost limit the "
    "autovacuum workers use. If it is -1, which is the default, the regular vacuum_cost_limit value is used "
    "instead.\n",
    "resources.md": "# Resource Consumption\n\n## vacuum_cost_limit (integer)\n\nThe accumulated cost at which a "
    "vacuum sleeps for a while. The default value is 200.\n",
}
FALLS_BACK = (
    "If autovacuum_vacuum_cost_limit is left at its default, autovacuum uses another cost-limit setting instead. "
    "What is that setting's default value?"
)


def test_referent_refuses_what_the_named_entry_says_and_names_what_it_refers_to(tmp_path) -> None:
    index = index_of(tmp_path / "manual", MANUAL)
    outputs = [
        "Thought: a\nAction: search[autovacuum_vacuum_cost_limit]",
        "Thought: b\nFinal: -1",
        "Thought: c\nFinal: 200",
    ]
    agent, backend = make(index, outputs, search_k=1, exclude_refused=True)
    trajectory = agent.run(FALLS_BACK)
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "referent" and refused.details.refusal.answer == "-1"
    assert refused.observation.startswith(
        "-1 is what you read about autovacuum_vacuum_cost_limit, which the question names. The question asks about "
        "that setting, another one; the text of autovacuum_vacuum_cost_limit names vacuum_cost_limit:\n"
        "[1] Resource Consumption > vacuum_cost_limit (integer): "
    )
    assert "The default value is 200." in refused.observation and refused.details.tool.titles == [
        "Resource Consumption"
    ]
    # the entry shown is read (200 is a span the next Final may take), and the refused answer is not
    grammar = GbnfChecker(backend.calls[2].grammar)
    assert grammar.accepts("Thought: c\nFinal: 200\n") and not grammar.accepts("Thought: c\nFinal: -1\n")
    assert trajectory.answer == "200" and trajectory.steps[2].details.refusal is None


def test_referent_lets_stand_an_answer_read_elsewhere_or_for_a_question_that_names_its_thing(tmp_path) -> None:
    index = index_of(tmp_path / "manual", MANUAL)
    # read in the entry the question does not name
    outputs = ["Thought: a\nAction: search[vacuum_cost_limit default]", "Thought: b\nFinal: 200"]
    agent, _ = make(index, outputs, search_k=1)
    trajectory = agent.run(FALLS_BACK)
    assert trajectory.answer == "200" and trajectory.steps[1].details.refusal is None
    # the named entry refers to no name in code: nothing to show, and the answer stands
    plain = {
        "autovacuum.md": "# Automatic Vacuuming\n\n## autovacuum_vacuum_cost_limit (integer)\n\nThe cost limit "
        "the autovacuum workers use. If it is -1, which is the default, the regular limit is used instead.\n"
    }
    agent, _ = make(
        index_of(tmp_path / "plain", plain),
        ["Thought: a\nAction: search[autovacuum_vacuum_cost_limit]", "Thought: b\nFinal: -1"],
        search_k=1,
    )
    trajectory = agent.run(FALLS_BACK)
    assert trajectory.answer == "-1" and trajectory.steps[1].details.refusal is None
    # a question about the named thing itself
    outputs = ["Thought: a\nAction: search[autovacuum_vacuum_cost_limit]", "Thought: b\nFinal: -1"]
    agent, _ = make(index, outputs, search_k=1)
    trajectory = agent.run("What is the default of autovacuum_vacuum_cost_limit?")
    assert trajectory.answer == "-1" and trajectory.steps[1].details.refusal is None


def test_with_read_hop_the_model_also_answers_from_the_entry_shown_alone(tmp_path) -> None:
    index = index_of(tmp_path / "manual", MANUAL)
    outputs = [
        "Thought: a\nAction: search[autovacuum_vacuum_cost_limit]",
        "Thought: b\nFinal: -1",
        "Final: 200",  # the model reading vacuum_cost_limit's entry alone
        "Thought: c\nFinal: 200",
    ]
    agent, backend = make(index, outputs, search_k=1, exclude_refused=True, read_hop=True)
    trajectory = agent.run(FALLS_BACK)
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "referent"
    assert refused.observation.endswith(
        'Read alone for the question, its document answers "200": The default value is 200.'
    )
    read = backend.calls[2]
    assert "Document:\nvacuum_cost_limit: [1] Resource Consumption > vacuum_cost_limit (integer):" in read.prompt
    assert "Question: What is vacuum_cost_limit's default value?\nvacuum_cost_limit is a step on the way" in read.prompt
    assert trajectory.answer == "200"


WORKERS = {
    "replication.md": "# Replication\n\n## max_logical_replication_workers (integer)\n\nSpecifies the most logical "
    "replication workers. Logical replication workers are taken from the pool defined by max_worker_processes. "
    "The default value is 4.\n",
    "resources.md": "# Resource Consumption\n\n## max_worker_processes (integer)\n\nSets the most background "
    "processes that the system can support. The default is 8.\n\n## default_statistics_target (integer)\n\n"
    "Sets the statistics target for table columns that have none of their own.\n",
    "analyze.md": "# ANALYZE\n\n## Notes\n\nThe default target value is 100, but it can be raised for better "
    "planner estimates.\n",
    "vacuumdb.md": "# vacuumdb\n\n## --analyze-in-stages\n\nRun three stages of analyze; the first stage uses the "
    "lowest possible statistics target (see default_statistics_target) to produce usable planner statistics "
    "faster.\n",
}
POOL = (
    "Logical replication workers are taken from a pool that another server parameter defines. What is that "
    "parameter's default?"
)


def test_the_way_is_the_sentence_read_that_says_most_of_what_the_question_says() -> None:
    lines = [
        (
            "Replication > max_logical_replication_workers (integer)",
            "Specifies the most logical replication "
            "workers. Logical replication workers are taken from the pool defined by max_worker_processes.",
        ),
        ("Resource Consumption > max_worker_processes (integer)", "Sets the most background processes."),
    ]
    way = "Logical replication workers are taken from a pool that another server parameter defines."
    assert way_sentence(lines, way) == (
        "Replication > max_logical_replication_workers (integer)",
        "Logical replication workers are taken from the pool defined by max_worker_processes.",
    )
    # fewer than MIN_SHARED words in common: no way
    assert way_sentence(lines, "A pool of workers.") is None
    assert content_words("The workers are taken from max_worker_processes.") == {
        "worker",
        "taken",
        "max_worker_processes",
    }


def test_referred_refuses_what_the_way_entry_says_and_shows_the_entry_it_refers_to(tmp_path) -> None:
    index = index_of(tmp_path / "manual", WORKERS)
    outputs = [
        "Thought: a\nAction: search[logical replication workers pool]",
        "Thought: b\nFinal: 4",
        "Thought: c\nFinal: 8",
    ]
    agent, backend = make(index, outputs, search_k=1, exclude_refused=True)
    trajectory = agent.run(POOL)
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "referred" and refused.details.refusal.answer == "4"
    assert refused.observation.startswith(
        "4 is not what you read about that parameter. The text that says what the question says names it: "
        '"Logical replication workers are taken from the pool defined by max_worker_processes." Its entry, '
        "max_worker_processes:\n[1] Resource Consumption > max_worker_processes (integer): "
    )
    assert "The default is 8." in refused.observation
    # the way sentence is a guess: the refused answer may still be written (it is not excluded)
    grammar = GbnfChecker(backend.calls[2].grammar)
    assert grammar.accepts("Thought: c\nFinal: 8\n") and grammar.accepts("Thought: c\nFinal: 4\n")
    assert trajectory.answer == "8" and trajectory.steps[2].details.refusal is None


def test_referred_lets_stand_an_answer_read_of_the_thing_referred_to(tmp_path) -> None:
    index = index_of(tmp_path / "manual", WORKERS)
    # read in the entry the way sentence refers to
    outputs = [
        "Thought: a\nAction: search[logical replication workers pool]",
        "Thought: b\nAction: search[max_worker_processes default]",
        "Thought: c\nFinal: 8",
    ]
    agent, _ = make(index, outputs, search_k=1)
    trajectory = agent.run(POOL)
    assert trajectory.answer == "8" and trajectory.steps[2].details.refusal is None
    # read in a sentence that writes most of the words of the name: "default target" of default_statistics_target
    stages = (
        "vacuumdb --analyze-in-stages starts with the lowest possible statistics target of a planner setting. "
        "What is the default of that setting?"
    )
    outputs = [
        "Thought: a\nAction: search[vacuumdb analyze in stages lowest statistics target]",
        "Thought: b\nAction: search[ANALYZE default target value]",
        "Thought: c\nFinal: 100",
    ]
    agent, _ = make(index, outputs, search_k=1)
    trajectory = agent.run(stages)
    assert trajectory.answer == "100" and trajectory.steps[2].details.refusal is None
    # the same number in a sentence that names nothing of it is refused, and default_statistics_target's entry shown
    plain = {**WORKERS, "analyze.md": "# ANALYZE\n\n## Notes\n\nThe value is 100 or more on most systems.\n"}
    agent, _ = make(index_of(tmp_path / "plain", plain), [*outputs, "Thought: d\nFinal: 100"], search_k=1)
    refused = agent.run(stages).steps[2]
    assert refused.details.refusal.reason == "referred" and "Its entry, default_statistics_target:" in (
        refused.observation
    )
    # the question names the entry that holds the answer: referent's case, not this one's
    outputs = ["Thought: a\nAction: search[max_logical_replication_workers]", "Thought: b\nFinal: 4"]
    agent, _ = make(index, outputs, search_k=1, without="referent")
    trajectory = agent.run(
        "max_logical_replication_workers takes its workers from a pool another parameter defines. What is that "
        "parameter's default?"
    )
    assert trajectory.answer == "4" and trajectory.steps[1].details.refusal is None


RESTORE = {
    "recovery.md": "# Write Ahead Log\n\n## Recovery Target\n\n### recovery_target_name (string)\n\nThis parameter "
    "specifies the named restore point (created with pg_create_restore_point()) to which recovery will proceed.\n",
    "functions.md": "# System Administration Functions\n\n## Backup Control Functions\n\nThe functions below control "
    "backups. pg_create_restore_point ( name text ) returns pg_lsn and creates a named marker record in the "
    "write-ahead log.\n",
    "restore.md": "# pg_restore\n\npg_restore restores a database from an archive file, a named point of a dump.\n",
}


def test_referred_shows_a_name_a_manual_writes_only_in_prose_or_a_table(tmp_path) -> None:
    # The function has no entry of its own: the line that writes its name is shown, not the first line found.
    index = index_of(tmp_path / "manual", RESTORE)
    outputs = [
        "Thought: a\nAction: search[recovery_target_name named restore point]",
        "Thought: b\nFinal: string",
        "Thought: c\nFinal: pg_lsn",
    ]
    agent, _ = make(index, outputs, search_k=1)
    trajectory = agent.run(
        "recovery_target_name refers to a named restore point created by a certain function. What data type does "
        "that function return?"
    )
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "referred" and refused.details.tool.titles == [
        "System Administration Functions"
    ]
    assert "Its entry, pg_create_restore_point:\n[1] System Administration Functions > Backup Control Functions:" in (
        refused.observation
    )
    assert trajectory.answer == "pg_lsn"


def test_a_read_alone_that_repeats_the_question_is_asked_once_more_without_it(tmp_path) -> None:
    index = index_of(tmp_path / "manual", MANUAL)
    outputs = [
        "Thought: a\nAction: search[autovacuum_vacuum_cost_limit]",
        "Thought: b\nFinal: -1",
        "Final: The default value",  # the words the entry's sentence opens with, which are the question's
        "Final: 200",
        "Thought: c\nFinal: 200",
    ]
    agent, backend = make(index, outputs, search_k=1, exclude_refused=True, read_hop=True)
    trajectory = agent.run(FALLS_BACK)
    assert trajectory.steps[1].observation.endswith(
        'Read alone for the question, its document answers "200": The default value is 200.'
    )
    first, again = GbnfChecker(backend.calls[2].grammar), GbnfChecker(backend.calls[3].grammar)
    assert first.accepts("Final: The default value\n") and not again.accepts("Final: The default value\n")
    assert again.accepts("Final: 200\n") and trajectory.answer == "200"


def test_referred_lets_stand_an_answer_whose_sentence_or_entry_names_what_the_way_refers_to(tmp_path) -> None:
    # The answer's sentence writes the name (a row of a table of functions, of no entry of its own).
    promote = {
        "standby.md": "# Replication\n\n## Standby Servers\n\n### promote_trigger_file (string)\n\nSpecifies a "
        "trigger file whose presence ends recovery in the standby. Even if this value is not set, you can still "
        "promote the standby using pg_ctl promote or calling pg_promote().\n",
        "functions.md": "# System Administration Functions\n\n## Recovery Control Functions\n\npg_promote ( wait "
        "boolean DEFAULT true, wait_seconds integer DEFAULT 60 ) promotes a standby server to primary status.\n",
    }
    outputs = [
        "Thought: a\nAction: search[promote_trigger_file]",
        "Thought: b\nAction: search[pg_promote wait seconds]",
        "Thought: c\nFinal: 60",
    ]
    agent, _ = make(index_of(tmp_path / "promote", promote), outputs, search_k=1)
    trajectory = agent.run(
        "The promote_trigger_file docs say that, besides pg_ctl promote, a standby can be promoted by calling an SQL "
        "function. How many seconds does that function wait by default?"
    )
    assert trajectory.answer == "60" and trajectory.steps[2].details.refusal is None
    # The answer is read in the entry of a thing the way sentence writes, a value and no name in code.
    auth = {
        "auth.md": "# Password Authentication\n\nTo upgrade an existing installation from md5, set "
        "password_encryption = 'scram-sha-256', the default method for new passwords, in postgresql.conf.\n\n"
        "## scram-sha-256\n\nThe method scram-sha-256 performs SCRAM-SHA-256 authentication, as described in "
        "RFC 7677.\n",
        "config.md": "# Connections and Authentication\n\n## password_encryption (enum)\n\nThis parameter "
        "determines the algorithm that encrypts a password. The default value is scram-sha-256.\n",
    }
    outputs = [
        "Thought: a\nAction: search[upgrade from md5 default method new passwords]",
        "Thought: b\nAction: search[scram-sha-256 RFC]",
        "Thought: c\nFinal: RFC 7677",
    ]
    agent, _ = make(index_of(tmp_path / "auth", auth), outputs, search_k=1)
    trajectory = agent.run(
        "PostgreSQL 15 encrypts new passwords with a certain method by default. Which RFC describes the "
        "authentication performed by that method?"
    )
    assert trajectory.answer == "RFC 7677" and trajectory.steps[2].details.refusal is None
