"""The full name rewrite: a person answered with the name their own entry opens with, before the dates of their
life, where the run has read it so.

On HotpotQA dev200 it turned three answers right and none wrong (docs/results/2026-12.md, stop 70), the cases these
tests are made of: a songwriter answered "Lee Hazlewood" whose entry opens "Barton Lee Hazlewood (July 9, 1929 -
August 4, 2007)"; the earlier born of two writers answered "Virginia Woolf", "Adeline Virginia Woolf (25 January
1882 - 28 March 1941)"; and the writer from England answered "Robert Erskine Childers", whose entry writes the
name with the letters of his decoration after it. The manual's and the sample's answers have no entry that opens
so. What it must leave alone is made of the same pool: a name whose entry writes a middle name inside it
("Nelson Aldrich Rockefeller" for the right answer "Nelson Rockefeller", and two more in dev200), an entry titled
with the name that opens without dates (a software engineer who shares a name with a football player whose entry
does have them), an entry whose opening name is the answer itself, a thing's entry ("The Scotch Collie is ..."),
and a name whose part is asked.
"""

from __future__ import annotations

import pytest
from test_answer_checks import index_of, make

from offline_agent.checks.names import opening_name


@pytest.mark.parametrize(
    ("text", "name", "full"),
    [
        ("Barton Lee Hazlewood (July 9, 1929 – August 4, 2007) was an American country and pop singer.",
         "Lee Hazlewood", "Barton Lee Hazlewood"),
        ("Adeline Virginia Woolf (25 January 1882 – 28 March 1941) was an English writer.",
         "Virginia Woolf", "Adeline Virginia Woolf"),
        ("Robert Erskine Childers DSC (25 June 1870 – 24 November 1922), universally known as Erskine Childers, "
         "was an English-born Irish writer.", "Robert Erskine Childers", "Robert Erskine Childers DSC"),
        ("Ludwig van Beethoven (baptised 17 December 1770 – 26 March 1827) was a German composer.",
         "Beethoven", "Ludwig van Beethoven"),
        ("William Keith Bostic (born January 17, 1961) is a former professional American football player.",
         "Keith Bostic", "William Keith Bostic"),
        # a middle name inside the name: the answer is the name as the person goes by it, and stands
        ("Nelson Aldrich Rockefeller (July 8, 1908 – January 26, 1979) was an American businessman.",
         "Nelson Rockefeller", None),
        ("Monica Samille Lewinsky (born July 23, 1973) is an American activist.", "Monica Lewinsky", None),
        # no dates of a life after the name: the answer stands
        ("Keith Bostic is an American Software Engineer.", "Keith Bostic", None),
        ("Sergio Pérez Mendoza (Spanish pronunciation) is a Mexican racing driver.", "Sergio Pérez", None),
        # the opening name is the answer itself, or does not hold it
        ("Emma Bull (born December 13, 1954) is an American science fiction writer.", "Emma Bull", None),
        ("Levni Yilmaz (born 1973) is an American filmmaker.", "Lev Yilmaz", None),
        # a thing's entry, and a sentence that is no name
        ("The Scotch Collie (also called the Old-Time Scotch Collie, since 1800s) is a landrace.", "Scotch Collie",
         None),
        ("Formed in Leeds the band (1977 – 1985) released two albums.", "the band", None),
    ],
)  # fmt: skip
def test_the_name_an_entry_opens_with_before_the_dates_of_a_life(text: str, name: str, full: str | None) -> None:
    assert opening_name(text, name) == full


HAZLEWOOD = {
    "hazlewood.md": "# Lee Hazlewood\n\nBarton Lee Hazlewood (July 9, 1929 – August 4, 2007) was an American singer "
    "and songwriter. He wrote the song These Boots Are Made for Walkin'.",
    "boots.md": "# These Boots Are Made for Walkin'\n\nThese Boots Are Made for Walkin' is a song written by Lee "
    "Hazlewood and recorded by Nancy Sinatra.",
}


def test_a_person_is_answered_with_the_name_their_entry_writes_in_full(tmp_path) -> None:
    index = index_of(tmp_path / "songs", HAZLEWOOD)
    outputs = [
        "Thought: a\nAction: search[These Boots Are Made for Walkin' Lee Hazlewood]",
        "Thought: b\nFinal: Lee Hazlewood",
    ]
    agent, _ = make(index, outputs)
    trajectory = agent.run("Who wrote These Boots Are Made for Walkin'?")
    assert trajectory.answer == "Barton Lee Hazlewood"
    assert trajectory.steps[1].details.checked == {"Lee Hazlewood": "full name: Barton Lee Hazlewood"}
    # Left out by name, the answer stands as written.
    assert make(index, outputs, without="full_name")[0].run("Who wrote These Boots Are Made for Walkin'?").answer == (
        "Lee Hazlewood"
    )


def test_a_full_name_the_run_has_not_read_is_not_written(tmp_path) -> None:
    index = index_of(tmp_path / "songs", HAZLEWOOD)
    outputs = ["Thought: a\nAction: search[recorded by Nancy Sinatra]", "Thought: b\nFinal: Lee Hazlewood"]
    agent, _ = make(index, outputs)
    trajectory = agent.run("Who wrote These Boots Are Made for Walkin'?")
    assert "Barton" not in (trajectory.steps[0].observation or "")
    assert trajectory.answer == "Lee Hazlewood"


def test_a_name_whose_part_is_asked_is_not_written_in_full(tmp_path) -> None:
    index = index_of(tmp_path / "songs", HAZLEWOOD)
    outputs = ["Thought: a\nAction: search[Lee Hazlewood]", "Thought: b\nFinal: Lee Hazlewood"]
    question = "What is the last name of the man who wrote These Boots Are Made for Walkin'?"
    assert make(index, outputs)[0].run(question).answer == "Hazlewood"  # the part, cut before the checks
    # With the part's cut left out, the whole name stands as written, not in full.
    assert make(index, outputs, without="name_part")[0].run(question).answer == "Lee Hazlewood"


def test_the_entry_titled_with_the_name_exactly_is_the_one_read_for_it(tmp_path) -> None:
    index = index_of(
        tmp_path / "people",
        {
            "engineer.md": "# Keith Bostic\n\nKeith Bostic is an American software engineer who worked on BSD.",
            "player.md": "# Keith Bostic (American football)\n\nWilliam Keith Bostic (born January 17, 1961) is a "
            "former American football player.",
        },
    )
    outputs = ["Thought: a\nAction: search[Keith Bostic born]", "Thought: b\nFinal: Keith Bostic"]
    trajectory = make(index, outputs)[0].run("Who was born in 1961, Keith Bostic or Jerry Glanville?")
    assert "William Keith Bostic" in (trajectory.steps[0].observation or "")
    assert trajectory.answer == "Keith Bostic"
