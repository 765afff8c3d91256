"""The verifying agent (`--agent verify`, the default): ReAct whose Final answers are checked before they count.

Why: on HotpotQA a 1.5B model's wrong answers are mostly well-formed answers written too early. After one search it
writes the first hop's entity ("Shirley Temple" for "What government position was held by the woman who
portrayed Corliss Archer?"), a fact from memory it never read ("1961"), or an entity the question itself names.
Each of these can be caught without asking the model anything, and each has an obvious next move, so a refused
Final is not the end of the run but an Observation that says why, and the model goes on:

- `unread`: under a grounded grammar, the grammar refused the model's first word of the answer: what it meant
  to write is nowhere in what the run has read (not where that word begins an answer the run refused as wrong,
  which the grammar took out, nor where it writes the number the grammar made it write without its thousands
  separator). Observation: search for the fact that is missing, and the passages a search for the whole question
  finds that the run has not read (`_with_found`).
- `in_question`: an open question's answer repeats words of the question ("Gator Country"), which names the
  first hop, not the answer; a name of the kind asked for, as the question writes it after which/what, is not
  refused ("Hawaii County" for "... is in what Hawaii county?"). Observation: find what the question asks about it.
- `unnamed`: an open question's answer is the definite article and one lower-case word ("The film", "The
  journal"): it refers to a thing the run read about without naming it. Likewise a title of office alone
  ("President") where the question asks who, where or which holder of an office (AnswerForm.names_an_office): it
  names the office, not the person. Observation: find its name.
- `kind`: an open question that asks for a year, a date or a number gets an answer with no digit or number word
  in it ("Kansas" for "a population of how many inhabitants?", answer_form.py), or asks for a number and gets a
  year ("1959" for "How many copies ... sold?": a count of a thousand or more is written with a comma), or asks
  for a date and gets a bare number of one to three digits ("17", the day of "February 17, 1945"), or asks
  for a kind of thing ("which city") and gets a bare number that titles no document ("1927"). Observation: what
  the question asks for.
- `name_part`: a question asks for one part of a person's name ("What is the middle name of the actress who
  ...?", answer_form.name_part) and gets one word that is another part of a name read ("Sela", the first name in
  "Sela Ward"), or a name with no such part: Observation: that name's own document, and the part asked where the
  document writes the name in full ("Sela Ann Ward: its middle name is Ann"). A whole name that has the part is
  not refused but answered with it (review_step: "Lester" of 'Lester Ben "Benny" Binion' for a first name).
- `asks_for`: a "which/what NOUN" question ("Which river flows through the birth city of James Joyce?") is
  answered with the title of a document whose first sentence does not say it is one ("Dublin": "Dublin is the
  capital and largest city of Ireland"): the answer is a hop on the way, not the thing asked for. Observation:
  that sentence and what the question asks for. Only what the sentence says its subject is counts, not the names
  of what it is in ("McLean is a census-designated place in Fairfax County" is not a county). A question about a
  place (answer_form.AnswerForm.about_a_place) also finds the answer's document titled with a region after a
  comma ("McLean, Virginia" for "McLean"), for this check and the next.
- `modifier`: the answer's document says it is the kind of thing asked for, but never uses a word the question
  puts before that kind ("Woodblock printing", "a technique for printing ...", for "D1NZ is a series based on
  what oversteering technique?"): a thing of the right kind from another passage of the page. Observation: the
  word its document lacks; the document is not shown (it is no hop).
- `described`: the question describes an entity on the way ("the company that Sachin Warrier worked for", "a
  university that is located in what city") and the answer is the title of a document whose first sentence says
  it is one ("Tata Consultancy Services ... is an Indian multinational ... company"): the model named the hop, not
  what the question asks about it. Not when the question asks for the described entity itself ("What is the name
  of the singer who ...", or the kind it asks for is also named). Observation: that sentence and the question.
- `one_side`: a yes/no or "A or B" question names documents the run has not read ("Are the Laleli Mosque and
  Esma Sultan Mansion in the same neighborhood?" answered after reading only the mosque): a comparison judged from
  one side is a guess. The Observation is those documents, so the model reads the other side before answering.
- `compare`: a "Which is higher, A or B?" or "Who was born first, A or B?" question (compare.py) is answered
  with the option whose number loses, by the numbers the two options' documents give (a year, a length in
  metres, or a count the question names: "Which element has the higher atomic number, gold or mercury?"): the
  model read both numbers and guessed which is larger. Observation: both numbers, the sentences they
  come from, and which is larger.
- `sides`: a yes/no question asks one thing of two ("Are both Duke Energy and Affiliated Managers Group based in
  Massachusetts?", "Are A and B both American?"; answer_form.paired_subjects), and the answer disagrees with the
  model's own judgment of each side on that side's document alone (two one-word calls, SIDES_SYSTEM/SIDES_USER):
  "yes" only if both are "yes". Read together, after a page of other passages, a 1.5B model mixes the two up
  ("[5] says Lange is American" of a French director) and leans to "yes"; judging one document at a time it does
  not. The same for a choice that compares nothing ("Which writer was from England, Henry Roth or Robert Erskine
  Childers?": no "older", "more", ...): when the model says yes of exactly one option, on its document alone,
  and the answer is the other. Observation: each side's verdict and the answer they give.
- `same`: a "Were A and B born in the same year?" question (compare.same_year) is answered against the years the
  two documents give: equal years mean "yes". Observation: both years and their sentences. Any other "same X"
  question ("Are both Coldplay and Pierre Bouvier from the same country?") is answered against X as each document
  alone gives it (one call a side under a grammar of its spans: "British", "Canadian") and the model's "same" or
  "different" on the two. Observation: both answers, their sentences and the verdict.
- `shared`: an open question asks what two things have in common ("What occupation do Chris Menges and Aram
  Avakian share?", "Where are A and B located?"; answer_form.shared_subjects), and the answer is not in one of the
  two documents (their first passages, as whole words): the model took an attribute of one side
  ("cinematographer", which only Menges' document says). Observation: both documents' first sentences, where the
  attribute they share is ("director").
- `unopened`: the answer is the title of a document the run has not read (its title, a qualifier such as
  "(1945 film)" aside, is the answer as written): the model names a hop it has not made. The Observation is that
  document, so the model reads it before answering again (an answer that really is that entity is then
  accepted, one search later).

A bare year that stands as the answer to a question that asks when, not in what year (AnswerForm.whole_date), gives
the date the sentences read write in full with that year (final_answer: "April 1, 1949" of "born April 1, 1949" for
"When was ... born?"; where they write two, the year stands; the checks weigh the year): the date is what was
asked, and the model, having read it, wrote its year (dev200 #35 and #85, gold "October 1922" and "April 1, 1949").
Likewise the answer to a "what type of NOUN" question that a sentence read writes before the noun gets the noun
(AnswerForm.with_noun: "fictional character" for "fictional"; dev200 #113), and a "who" question's answer that
opens with a person's possessive ('J. R. R. Tolkien's "The Lord of the Rings"') gives the person (AnswerForm.owner).

An asks_for or described refusal shows the refused answer's own document (the hop), and with `read_hop` also what
the model answers from that document alone, in a call of its own (READ_SYSTEM, READ_USER; `_read_alone`).

A run refuses at most MAX_REFUSALS Finals; after that, and always on the last step (which may only answer), a
Final counts as written. On the last step, with `exclude_refused`, a comparison whose two numbers the documents
give (`compare`) takes the losing option out of the grammar instead: what the check would have refused cannot be
written. So does a question that asks for a number or a date, on the last step and after MAX_REFUSALS refusals
(`final_grounding`): its Final may only be a span read that is of that kind, where there is one.
With `exclude_refused` (and a grounded grammar), an answer refused as wrong (in_question, unnamed, kind, name_part,
event, asks_for, modifier, described, compare, sides, same, shared: EXCLUDED_REASONS) is taken out of every later
step's grammar, so the model cannot write it again (a refused "yes" leaves "no"); one refused
for want of reading (unread, one_side, unopened) can be, once the run has read more. With `search_after_refusal` (off by
default), the step after a refusal whose Observation says what to find (SEARCH_REASONS) and shows no document may
only search: told to search, the 1.5B model most often wrote another Final from the same page ("Shazzan" after
"Shirley Temple" was refused). On dev200 the searches it forced found no better answers (EM 39.0 with and without),
and a forced search that also left out the calls already made ran into one cut-off step (the model could only write
its last search again), so it leaves repeats to the loop, as every step does without fresh_calls.
Everything else is ReAct's loop, grammar, parser and tools; the prompt's worked examples show refusals and how to
go on after one (prompt_files/verify_*.txt).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from offline_agent.agents.options import VerifyOptions
from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.agents.step_runner import STOP_SEQUENCES, StepRunner, TurnResult
from offline_agent.answer_form import (
    AnswerForm,
    answer_form,
    choice_options,
    compares,
    dates_with_year,
    in_question,
    kind_asked,
    names_kind,
    paired_subjects,
    part_of_name,
    reads_as_year,
    same_what,
    shared_subjects,
)
from offline_agent.backends.base import aside
from offline_agent.compare import Comparison, Measure, comparison, measure, same_year, winner
from offline_agent.details import RefusalDetails, Rejection, ToolDetails
from offline_agent.grammar import StepGrammar
from offline_agent.grounding import Grounding, OptionsGrounding
from offline_agent.parse import StepParser, WordParser
from offline_agent.prompts import PromptParts
from offline_agent.retrieval import first_sentence, split_sentences
from offline_agent.steps import Step, StepRecord

Named = tuple[str, str]  # a document a question names: (title, head), from the search tool's named_document
YES_OR_NO = WordParser(("yes", "no"))

MAX_REFUSALS = 3
# The longest answer (in grounding's tokens) a step narrowed to the kind asked may write: "April 1, 1949" is four,
# "more than 70 countries" four, "276,170 inhabitants" four.
FITTING_TOKENS = 6
# Refusals that judge the answer itself wrong: with exclude_refused, it cannot be written again (Grounding.exclude).
# Not `unread`: its answer is what the grammar let the model write instead of what it meant, and that is as often
# the right span written after a refused first token (sample s017: "Burnham Thorpe") as a wrong one.
EXCLUDED_REASONS = frozenset(
    ["in_question", "unnamed", "kind", "name_part", "event", "asks_for", "modifier", "described"]
    + ["compare", "sides", "same", "shared"]
)
# Refusals whose Observation says what to find: with search_after_refusal, the next step may only search.
SEARCH_REASONS = frozenset(["unread", "in_question", "unnamed", "kind", "event", "asks_for", "modifier", "described"])
FINAL = "Final: "

UNREAD = "Your answer is not in anything you have read. Search for the fact you still need. The question: {question}"
IN_QUESTION = "{answer} is named in the question, so it is not the answer. Find what the question asks: {question}"
UNNAMED = "{answer} names no particular thing; the question asks for its name. Find it: {question}"
# "The film", "the journal": the definite article and one lower-case word refer to a thing without naming it.
_NAMES_NOTHING = re.compile(r"(?:[Tt]he|[Tt]his|[Tt]hat)\s+[a-z][a-z-]*")
KIND = "The question asks for {wants}, and {answer} is not one. Find it: {question}"
KIND_YEAR = (
    "The question asks for {wants}, and {answer} reads as a year (a count of a thousand or more is written with a "
    "comma). Find it: {question}"
)
WANTS = {"date": "a year or a date", "number": "a number"}
NUMBER_FOR_A_THING = (
    "{answer} is a number, and the question asks for a thing of another kind ({kind}). Find it: {question}"
)
_LETTER = re.compile(r"[^\W\d_]")
EVENT = (
    'What you have read gives {answer} as the date of something else, not of when it was {event}: "{sentence}"\n'
    "Find the date the question asks for: {question}"
)
FOUND = "What a search for the whole question finds that you have not read:\n{text}"
UNOPENED = "{title} has a document of its own that you have not read:\n{text}\nNow answer the question: {question}"
ASKS_FOR = "{answer} is not what the question asks for ({kind}): {definition}\nFind it: {question}"
MODIFIER = (
    "The question asks for {article} {kind}, and nothing in the document of {answer} says {words}: {definition}\n"
    "Find it: {question}"
)
DESCRIBED = (
    "{answer} is the {kind} the question describes, a step on the way: {definition}\n"
    "Find what the question asks about it: {question}"
)
ONE_SIDE = "The question also names {titles}, which you have not read:\n{text}\nNow answer the question: {question}"
COMPARE = (
    "Compare the numbers: {first} {first_value} ({first_text}); {second} {second_value} ({second_text}). "
    "{order}. Now answer the question: {question}"
)

SIDES_SYSTEM = "You check one thing against one document. Reply yes or no only."
SIDES_USER = (
    "Document:\n{title}: {text}\n\nQuestion: {question}\n"
    "Answer for {name} alone, from the document: is it true of {name}? Reply yes or no."
)
SHARED = (
    "{answer} is {where}, and the question asks what {first} and {second} have in common:\n{documents}\n"
    "Now answer the question: {question}"
)
SIDES = "Checked one document at a time: {checks}. So the answer is {verdict}. Now answer the question: {question}"
READ_SYSTEM = "You answer a question from one document. Reply with the answer only, copied from the document."
READ_USER = (
    "Document:\n{title}: {text}\n\nQuestion: {question}\n"
    "{name} is a step on the way to the answer. What does the document say the answer is?"
)
READ = 'Read alone for the question, its document answers "{found}": {sentence}'
DOCUMENT = "Its own document:\n{text}"
IN_FULL = "Its document writes the name in full, {longer}: its {part} name is {piece}."
NO_NAME_PART = "The question asks for a {part} name, and {answer} has none. Find it: {question}"
OTHER_NAME_PART = "{answer} is the {its} name in {full}, and the question asks for the {part} name. Find it: {question}"
_CAPITALISED = r"(?:[A-Z]\.|[A-Z][\w'’-]*)"  # a capitalised word, or an initial with its full stop
SAME = (
    "Compare the years: {first} {first_value} ({first_text}); {second} {second_value} ({second_text}). "
    "{order}, so the answer is {verdict}. Now answer the question: {question}"
)

SAME_SYSTEM = "You read one fact off one document. Reply with a word or a few words copied from the document."
SAME_USER = (
    "Document:\n{title}: {text}\n\nQuestion: {question}\n"
    "What {what} does the document give for {name}? Reply with a few words."
)
# "same" or "different", not yes or no: asked "Is that the same X?" of two short answers, the 1.5B model said yes to
# all 7 pairs tried, Laleli and Ortaköy included; offered the two words, it told 5 of the 7 apart.
SAME_OR_DIFFERENT = WordParser(("same", "different"))
SAME_JUDGE_SYSTEM = "You compare two short answers. Reply same or different only."
SAME_JUDGE_USER = (
    "{first}: {first_value}\n{second}: {second_value}\n"
    "Is that the same {what} or a different {what}? Reply same or different."
)
SAME_VALUES = (
    "Read one document at a time: {first}: {first_value} ({first_text}); {second}: {second_value} ({second_text}). "
    "{order}, so the answer is {verdict}. Now answer the question: {question}"
)


class VerifyAgent(ReActAgent):
    """ReAct whose Finals are checked (unread, in the question, unnamed, kind, name part, asks for, modifier,
    described, one side, compare, sides, same, shared, unopened) first."""

    name = "verify"
    prompt_name = "verify"
    options_type = VerifyOptions
    options: VerifyOptions

    def check_final(self, state: LoopState, record: StepRecord, step: Step, turn: TurnResult) -> str | None:
        refusal = self._check(state, record, step, turn)
        details = record.details
        reason = details.refusal.reason if details is not None and details.refusal is not None else None
        excluding = self.options.exclude_refused and reason in EXCLUDED_REASONS
        if refusal is not None and excluding and state.grounding is not None:
            assert step.final is not None
            state.grounding.exclude(step.final)
        return refusal

    def must_search(self, state: LoopState) -> bool:
        """With search_after_refusal: the step after a refusal that says what to find (SEARCH_REASONS) may only
        search, unless the refusal showed a document (asks_for and described show the answer's own): then the
        next step may answer from it."""
        steps = state.trajectory.steps
        details = steps[-1].details if steps else None
        if not self.options.search_after_refusal or details is None or details.tool is not None:
            return False
        return details.refusal is not None and details.refusal.reason in SEARCH_REASONS

    def step_grammar(self, state: LoopState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        """ReAct's grammar, except on a step that may only answer (the last), which no check sees: there, a
        comparing question whose two numbers the documents give (`compare`) may only be answered with the option
        that wins. Dev200 #127 read both birth years, then wrote the later-born player on its last step."""
        decided = self._decided(state) if final_only and state.grounding is not None else None
        if decided is not None:
            assert state.grounding is not None
            state.grounding.exclude(decided[0])  # in any case the grammar may write it
        return super().step_grammar(state, index, final_only)

    def final_grounding(self, state: LoopState, final_only: bool) -> Grounding | None:
        """What the run has read; but on a step no check sees (the last, or any after MAX_REFUSALS refusals), a
        question that wants a number or a date (AnswerForm.wants) may only be answered with a span of at most
        FITTING_TOKENS tokens that is one (AnswerForm.fits: "250 million", not "1978" for "How many copies ...
        sold?"), where the run has read any. What the `kind` check refuses on every other step cannot be written
        there. Dev200 #71 ("What is the inhabitant of the city ...?") now answers "276,170" there, not "Straßburg";
        #64 and #88, which wrote a year for a count, still miss: the model picks another number ("17th century").
        Narrowing a question about what two things share to the words both documents hold was tried and undone:
        on 6 questions it made none right and one worse ("June" as a profession both documents "hold")."""
        grounding = state.grounding
        form = state.form
        unchecked = final_only or len(_refusals(state.trajectory.steps)) >= MAX_REFUSALS
        if grounding is None or form is None or form.wants is None or not unchecked:
            return grounding
        fitting = grounding.spans(form.fits, FITTING_TOKENS)
        return OptionsGrounding(fitting, capitals=False) if fitting else grounding

    def review_step(self, state: LoopState, record: StepRecord, step: Step | None) -> Step | None:
        """Record on a last step whose answer a comparison decided (step_grammar) the numbers that decided it; and
        answer a question that asks for one part of a person's name (AnswerForm.name_part) with that part of a
        whole name the model wrote ("Lester" of 'Lester Ben "Benny" Binion' for "What is the first name of ...?"),
        recorded in `checked` (the name written: the part). Refused, the 1.5B model wrote the whole name again;
        and excluding it would take out the part, which begins it."""
        decided = self._decided(state) if record.final_only and state.grounding is not None else None
        if decided is not None and step is not None and step.is_final:
            self.details(record).checked = decided[1]
        form = state.form or answer_form(state.trajectory.question)
        if form.name_part is not None and step is not None and step.final is not None:
            piece = part_of_name(step.final, form.name_part) if len(step.final.split()) > 1 else None
            if piece is not None:
                self.details(record).checked = {step.final: f"{form.name_part} name: {piece}"}
                step = replace(step, final=piece)
        return super().review_step(state, record, step)

    def final_answer(self, state: LoopState, record: StepRecord, step: Step) -> str:
        """The Final as written; but a bare year that stands as the answer to a question that asks when, not in what
        year (AnswerForm.whole_date), gives the date the sentences read write in full with it (`_written_date`:
        "April 1, 1949" of "born April 1, 1949"), and the answer to a "what type of NOUN" question gets the noun
        that a sentence read writes after it (AnswerForm.with_noun: "fictional character" of "a fictional character"
        for "fictional"), and the answer to a "who" question that names a person's work by its possessive gives the
        person (AnswerForm.owner: "J. R. R. Tolkien" of 'J. R. R. Tolkien's "The Lord of the Rings" ...'; dev200
        #152), each recorded in `checked` (what was written: what it became). The checks weigh what the model
        wrote, so a refused answer is the one taken out of the grammar."""
        answer = super().final_answer(state, record, step)
        form = state.form or answer_form(state.trajectory.question)
        if form.whole_date and reads_as_year(answer):
            written, how = _written_date(state, form, answer.strip()), "date as written"
        elif (owner := form.owner(answer)) is not None:
            written, how = owner, "person named"
        elif form.type_of is not None:
            found = (form.with_noun(answer, sentence) for sentence in _sentences_holding(state, answer))
            written, how = next((extended for extended in found if extended is not None), None), "kind as written"
        else:
            return answer
        if written is None:
            return answer
        self.details(record).checked = {answer: f"{how}: {written}"}
        return written

    def _decided(self, state: LoopState) -> tuple[str, dict[str, str]] | None:
        """The option a comparison rules out (the loser) and the numbers it read, by option; None where the
        question compares nothing measurable or the numbers are not found."""
        if not self.options.exclude_refused:
            return None
        measured = self._measured(state.trajectory.question)
        if measured is None:
            return None
        how, first, second, best = measured
        checked = {how.options[0]: _shown(how, first.value), how.options[1]: _shown(how, second.value)}
        return how.options[1 - best], checked

    def _check(self, state: LoopState, record: StepRecord, step: Step, turn: TurnResult) -> str | None:
        assert step.final is not None
        from offline_agent.normalize import normalize_answer

        refusals = _refusals(state.trajectory.steps)
        answer = step.final
        if len(refusals) >= MAX_REFUSALS:
            return None
        question = state.trajectory.question
        form = state.form or answer_form(question)
        reasons = {refusal.reason for refusal in refusals}
        # After a sides or same refusal the grammar has only the other word left: a refused first word is the one
        # they took out, not unread text.
        judged = bool(reasons & {"sides", "same"})
        # A model that writes a refused answer again, after the Observation that refused it, keeps it; but an answer
        # to a choice or yes/no question refused only for want of reading (one_side) is still judged, once a run,
        # by the checks that weigh it (compare, sides, same), and an open question's answer refused only as unread
        # by the checks of its own words (in_question, kind, ...): it was never weighed ("former Soviet statesman",
        # written again after a search, repeats the question).
        earlier = {r.reason for r in refusals if normalize_answer(r.answer) == normalize_answer(answer)}
        if earlier and (form.kind != "open" or earlier != {"unread"}):
            return self._weigh(state, record, answer, reasons) if form.kind != "open" else None
        # A choice with options: the grammar offers the options only, so a refused first word is not unread text.
        # With exclude_refused, a refused first word may be an answer the run refused as wrong, which the grammar
        # took out: the model meant that answer again, not unread text.
        excluded = _refused_as_wrong(state, record) if self.options.exclude_refused else []
        rejections = [rejection for rejection in turn.last_rejections if not _begins_any(rejection[1], excluded)]
        unread = not (earlier or form.options or judged) and refused_first_word(record.raw, rejections)
        if state.grounding is not None and unread:
            return self._refuse(
                record, "unread", answer, self._with_found(state, record, UNREAD.format(question=question))
            )
        if form.kind != "open":
            return self._one_side(state, record, answer) or self._weigh(state, record, answer, reasons)
        if in_question(answer, question):
            return self._refuse(record, "in_question", answer, IN_QUESTION.format(answer=answer, question=question))
        if _NAMES_NOTHING.fullmatch(answer.strip()) or form.names_an_office(answer):
            return self._refuse(record, "unnamed", answer, UNNAMED.format(answer=answer, question=question))
        if not form.fits(answer):
            return self._kind(state, record, form, answer)
        named = self._name_part(state, record, form, answer)
        if named is not None:
            return named
        event = self._event(state, record, form, answer)
        if event is not None:
            return event
        shared = self._shared(state, record, answer, question)
        if shared is not None:
            return shared
        unopened = self._unopened(state, record, answer)
        if unopened is not None or not (form.asks_for or form.described):
            return unopened
        # The answer's own document, read once for every check on it; its first sentence says what it is. A place
        # may be titled with its region ("McLean, Virginia"), which the answer leaves out.
        place = form.about_a_place
        own = self._own_document(answer, place)
        sentence = (first_sentence(own) or None) if own is not None else None
        if own is None or sentence is None:
            return self._number_for_a_thing(form, record, answer)
        refused = self._asks_for(form, record, answer, sentence) or self._described(form, record, answer, sentence)
        if refused is None:
            return self._modifier(form, record, answer, sentence, own)
        return self._with_document(state, record, answer, refused, place, own)

    def _search_tool(self) -> object | None:
        """The run's search tool, whose document lookups (document, open_named, open_mentioned) the checks use."""
        return self.tools.get("search") if "search" in self.tools else None

    def _own_document(self, answer: str, place: bool) -> str | None:
        """The text of the document titled `answer` (with `place`, also one titled with a region after it: "McLean,
        Virginia"), through the search tool's `document`; None where there is none or the tool cannot look one up."""
        document = getattr(self._search_tool(), "document", None)
        return document(answer, place=place) if document is not None else None

    def _refuse(self, record: StepRecord, reason: str, answer: str, observation: str) -> str:
        self.details(record).refusal = RefusalDetails(reason, answer)
        return observation

    def _with_document(
        self, state: LoopState, record: StepRecord, answer: str, refusal: str, place: bool, own: str
    ) -> str:
        """An asks_for, described or kind refusal's Observation with the refused answer's own document, read or not,
        as a search shows it (its sentences nearest the question): the answer is the entity on the way, and its
        document most often holds what the question asks about it. Read among a page of other passages, the 1.5B
        model missed it ("Sonic" in Jim Cummings' document); shown alone after the refusal, it is the next hop
        without a search. With `place`, a document titled with the answer and a region counts as its own (`own`,
        its text)."""
        shown = self._open(state, record, "open_named", answer, exclude_seen=False, place=place)
        if shown is None:
            return refusal
        read = self._read_alone(state, record, answer, own) if self.options.read_hop else None
        return "\n".join([refusal, DOCUMENT.format(text=shown[0]), *([read] if read else [])])

    def _with_found(self, state: LoopState, record: StepRecord, refusal: str) -> str:
        """`refusal` and the passages a search for the whole question finds that the run has not read (the search
        tool's `open_found`), which the run then reads. An `unread` refusal says the model meant a fact it has not
        read, and on dev200 the whole question finds more of the supporting passages than the model's own first
        search (270 of 400 in the top 4 against 204); shown there, 26 questions with an unread refusal answered 3
        right against 2 (F1 2.0 to 3.9 of 26: "April 1, 1949", "Ricard Rubio"). Ranking every search by the query
        and the question instead pulled in the distractors HotpotQA picks by their likeness to the question (71
        questions: EM 49.3 to 46.5), and adding the passages to `in_question` refusals gained nothing (7 questions:
        one right, one lost)."""
        shown = self._open(state, record, "open_found", state.trajectory.question)
        return refusal if shown is None else "\n".join([refusal, FOUND.format(text=shown[0])])

    def _read_alone(self, state: LoopState, record: StepRecord, answer: str, own: str) -> str | None:
        """With read_hop: the model's answer to the question from the refused answer's own document (`own`) alone (one
        call, READ_SYSTEM and READ_USER, `_read_off`), and the sentence it is in, which the run reads; None where
        the call gave no answer or one that repeats the question or is not of the kind it wants (in_question,
        AnswerForm.fits). Read among a page of passages, the hop's document is one of many; read alone, it is the
        whole question."""
        from offline_agent.tools.titles import bare_title

        if state.grounding is None:
            return None
        text = self.fit_observation(own)
        question = state.trajectory.question
        user = READ_USER.format(title=answer, text=text, question=question, name=bare_title(answer))
        found = self._read_off(state, record, text, READ_SYSTEM, user)
        form = state.form or answer_form(question)
        if not found or in_question(found, question) or not form.fits(found):
            return None  # what the first checks would refuse is not shown as the document's answer
        sentence = _sentence_with(text, found)
        state.grounding.add(sentence)
        return READ.format(found=found, sentence=sentence)

    def _read_off(self, state: LoopState, record: StepRecord, text: str, system: str, user: str) -> str | None:
        """The model's answer to `user` (which shows one document, `text`), in a call of its own under a grammar of
        that document's spans less the answers the run refused as wrong; its cost is booked on the step. None where
        the call gave no answer."""
        from offline_agent.grammar import GrammarSpec, build_grammar
        from offline_agent.grounding import Grounding
        from offline_agent.parse import parser_for

        grounding = Grounding([text], yes_no=False)
        for refused in _refused_as_wrong(state, record):
            grounding.exclude(refused)
        if grounding.is_empty:
            return None
        spec = GrammarSpec(thought=False, allow_action=False, grounded=True)
        prompt = self.prompt_prefix(PromptParts(system=system, user=user))
        with aside(self.backend):  # the run's own prompt stays in the cache for its next step
            result = self.runner.turn(
                state,
                prompt,
                build_grammar(spec, grounding),
                parser_for(spec),
                max_tokens=self.config.max_tokens,
                stop=STOP_SEQUENCES,
                seed=self.config.seed,
                stream=False,
                grounding=grounding,
            )
        StepRunner.add_cost(record, result)
        return result.value.final if result.value is not None and result.value.is_final else None

    def _asks_for(self, form: AnswerForm, record: StepRecord, answer: str, sentence: str) -> str | None:
        """The `asks_for` check: refuse an answer that is the title of a document whose first sentence (`sentence`)
        does not name the kind of thing the question asks for."""
        if not form.asks_for or form.describes(sentence):
            return None
        text = ASKS_FOR.format(kind=" ".join(form.asks_for), answer=answer, definition=sentence, question=form.question)
        return self._refuse(record, "asks_for", answer, text)

    def _modifier(self, form: AnswerForm, record: StepRecord, answer: str, sentence: str, own: str) -> str | None:
        """The `modifier` check: the answer's document (`own`, whose first sentence is `sentence`) says it is the kind
        of thing asked for, but never uses a word the question puts before that kind (AnswerForm.unsaid_modifiers):
        "Woodblock printing" for "D1NZ is a series based on what oversteering technique?", read on the page beside
        D1NZ's "drifting series". Its document is not shown: it is no hop, only a thing of the right kind from
        another page."""
        missing = form.unsaid_modifiers(sentence, own)
        if not missing:
            return None
        kind = " ".join(form.asks_for)
        observation = MODIFIER.format(
            article="an" if kind[:1] in "aeiou" else "a",
            kind=kind,
            answer=answer,
            words=", ".join(f'"{word}"' for word in missing),
            definition=sentence,
            question=form.question,
        )
        return self._refuse(record, "modifier", answer, observation)

    def _kind(self, state: LoopState, record: StepRecord, form: AnswerForm, answer: str) -> str:
        """The `kind` refusal of an answer that is not the number or date the question wants. Where the answer is a
        name that titles a document ("Carrefour" for "... bought by a chain that operated how many hypermarkets?"),
        it is most often the entity on the way, and the Observation also shows its own document, as asks_for's does
        (`_with_document`): dev200 #51 had Carrefour's passage on its page, "1,462 hypermarkets at the end of 2016",
        and after the bare refusal searched for Euromarché five times."""
        assert form.wants is not None
        template = KIND_YEAR if reads_as_year(answer) else KIND
        refusal = self._refuse(
            record, "kind", answer, template.format(wants=WANTS[form.wants], answer=answer, question=form.question)
        )
        own = self._own_document(answer, form.about_a_place) if _LETTER.search(answer) else None
        if own is None:
            return refusal
        return self._with_document(state, record, answer, refusal, form.about_a_place, own)

    def _number_for_a_thing(self, form: AnswerForm, record: StepRecord, answer: str) -> str | None:
        """The `kind` check of a "which/what NOUN" question answered with a bare number that titles no document
        ("1927" for "In which city was the composer of The Magic Flute born?"): a number is no city, river or
        person. A number that titles a document ("1989", an album) is left to asks_for."""
        if not form.asks_for or _LETTER.search(answer):
            return None
        text = NUMBER_FOR_A_THING.format(kind=" ".join(form.asks_for), answer=answer, question=form.question)
        return self._refuse(record, "kind", answer, text)

    def _name_part(self, state: LoopState, record: StepRecord, form: AnswerForm, answer: str) -> str | None:
        """The `name_part` check: a question that asks for one part of a person's name (AnswerForm.name_part; a
        whole name was cut to that part by review_step) is answered with a name that has no such part ("Sela Ward"
        for a middle name), or with one word that is another part of a name the run read ("Sela", the first name
        in "Sela Ward"). The Observation also shows that name's own document, which most often writes the name in
        full ("Sela Ann Ward")."""
        part = form.name_part
        if part is None:
            return None
        question = state.trajectory.question
        if len(answer.split()) > 1:
            full = answer
            refusal = NO_NAME_PART.format(answer=answer, part=part, question=question)
        else:
            other = _other_part(answer, part, _read_sentences(state))
            if other is None:
                return None
            full, its = other
            refusal = OTHER_NAME_PART.format(answer=answer, its=its, full=full, part=part, question=question)
        shown = self._open(state, record, "open_named", full, exclude_seen=False)
        if shown is None:
            return self._refuse(record, "name_part", answer, refusal)
        lines = [refusal, DOCUMENT.format(text=shown[0])]
        longer = _in_full(full, shown[0])
        piece = part_of_name(longer, part) if longer is not None else None
        if longer is not None and piece is not None:
            lines.append(IN_FULL.format(longer=longer, part=part, piece=piece))
        return self._refuse(record, "name_part", answer, "\n".join(lines))

    def _event(self, state: LoopState, record: StepRecord, form: AnswerForm, answer: str) -> str | None:
        """The `event` check: refuse a date that the sentences read hold (as whole words) only where they date
        something other than the event the question asks about (AnswerForm.dates_event). An answer no read
        sentence holds (written across two, or from the question) is left alone."""
        if form.event is None:
            return None
        sentences = _sentences_holding(state, answer)
        if not sentences or any(form.dates_event(sentence, answer) for sentence in sentences):
            return None
        event = "died" if form.event == "die" else form.event
        text = EVENT.format(answer=answer, event=event, sentence=sentences[0], question=form.question)
        return self._refuse(record, "event", answer, text)

    def _described(self, form: AnswerForm, record: StepRecord, answer: str, sentence: str) -> str | None:
        """The `described` check: refuse an answer that is the title of a document whose first sentence
        (`sentence`) says it is of the kind of an entity the question describes on the way ("the company that
        ..."), unless it says it is also of the kind the question asks for."""
        kind = form.description_in(sentence)
        if kind is None or form.predicate_describes(sentence):
            return None
        text = DESCRIBED.format(answer=answer, kind=kind, definition=sentence, question=form.question)
        return self._refuse(record, "described", answer, text)

    def _shared(self, state: LoopState, record: StepRecord, answer: str, question: str) -> str | None:
        """The `shared` check: refuse the answer to a question about what two things have in common
        (answer_form.shared_subjects) when one of their documents does not hold it (as whole words, case aside, in
        its first passage); each is the first document its part of the question names (through the search tool's
        `named_document` and `document`). The Observation is both documents' first sentences, which a grounded run
        reads."""
        from offline_agent.tools.titles import bare_title

        pair = shared_subjects(question)
        tool = self._search_tool()
        named, document = getattr(tool, "named_document", None), getattr(tool, "document", None)
        if pair is None or named is None or document is None:
            return None
        found = _two_documents(state, named, pair)
        if found is None:
            return None
        holds = _as_words(answer)
        texts = {
            title: document(bare_title(title), prefer=lambda t, _, title=title: t == title) or head
            for title, head in found
        }
        checked = {title: "yes" if holds.search(text) else "no" for title, text in texts.items()}
        self.details(record).checked = checked
        missing = [bare_title(title) for title, verdict in checked.items() if verdict == "no"]
        if not missing:
            return None
        where = "in neither document" if len(missing) == 2 else f"not in the document of {missing[0]}"
        listed = "\n".join(
            f"[{rank}] {title}: {first_sentence(text)}" for rank, (title, text) in enumerate(texts.items(), 1)
        )
        if self.reads(state):
            assert state.grounding is not None
            state.grounding.add(listed)
        first, second = (bare_title(title) for title, _ in found)
        text = SHARED.format(
            answer=answer, where=where, first=first, second=second, documents=listed, question=question
        )
        return self._refuse(record, "shared", answer, text)

    def _unopened(self, state: LoopState, record: StepRecord, answer: str) -> str | None:
        """The `unopened` check: refuse an answer that is the title of a document the run has not read, and show
        that document (through the search tool's `open_named`; a search tool without it skips the check)."""
        shown = self._open(state, record, "open_named", answer)
        if shown is None:
            return None
        observation, titles = shown
        text = UNOPENED.format(
            title=titles[0] if titles else answer, text=observation, question=state.trajectory.question
        )
        return self._refuse(record, "unopened", answer, text)

    def _one_side(self, state: LoopState, record: StepRecord, answer: str) -> str | None:
        """The `one_side` check: refuse the answer to a yes/no or choice question that names documents the run has
        not read, and show them (through the search tool's `open_mentioned`)."""
        question = state.trajectory.question
        shown = self._open(state, record, "open_mentioned", question)
        if shown is None:
            return None
        observation, titles = shown
        text = ONE_SIDE.format(titles=" and ".join(titles), text=observation, question=question)
        return self._refuse(record, "one_side", answer, text)

    def _compare(self, record: StepRecord, answer: str, question: str) -> str | None:
        """The `compare` check: refuse the option of a comparing question whose number loses, by the numbers its
        and the other option's documents give (`_measured`)."""
        from offline_agent.normalize import normalize_answer

        how = comparison(question)
        if how is None:
            return None
        chosen = [i for i, option in enumerate(how.options) if normalize_answer(option) == normalize_answer(answer)]
        measured = self._measured(question) if chosen else None
        if measured is None or measured[3] == chosen[0]:
            return None
        how, first_measure, second_measure, _ = measured
        shown = [_shown(how, first_measure.value), _shown(how, second_measure.value)]
        low, high = shown if first_measure.value < second_measure.value else shown[::-1]
        order = f"{low} is earlier than {high}" if how.dimension == "time" else f"{high} is more than {low}"
        first, second = how.options
        text = COMPARE.format(
            first=first,
            first_value=shown[0],
            first_text=first_measure.text.rstrip("."),
            second=second,
            second_value=shown[1],
            second_text=second_measure.text.rstrip("."),
            order=order,
            question=question,
        )
        return self._refuse(record, "compare", answer, text)

    def _measured(self, question: str) -> tuple[Comparison, Measure, Measure, int] | None:
        """A comparing question's comparison, the numbers its two options' documents give (compare.py, through the
        search tool's `document`) and the index of the option whose number wins; None where the question compares
        nothing measurable, a number is not found, or the two tie."""
        how = comparison(question)
        document = getattr(self._search_tool(), "document", None)
        if how is None or document is None:
            return None
        kinds = kind_asked(question)  # "Which movie ...": of two documents named "The Guest", the film's
        prefer = (lambda title, text: names_kind(f"{title} {first_sentence(text)}", kinds)) if kinds else None
        # An option the question writes in lower case ("gold or mercury") titles its document with a capital.
        texts = [
            document(option, prefer=prefer) or document(_capitalised(option), prefer=prefer) for option in how.options
        ]
        first, second = (measure(text, how) if text is not None else None for text in texts)
        if first is None or second is None:
            return None
        best = winner(how, first, second)
        return None if best is None else (how, first, second, best)

    def _weigh(self, state: LoopState, record: StepRecord, answer: str, reasons: set[str]) -> str | None:
        """The checks that weigh a choice's or a yes/no answer against the documents (compare, then sides and
        same), each at most once a run (`reasons`: those that refused already)."""
        question = state.trajectory.question
        compared = self._compare(record, answer, question) if "compare" not in reasons else None
        if compared is not None or reasons & {"sides", "same"}:
            return compared
        return self._pair(state, record, answer, question)

    def _pair(self, state: LoopState, record: StepRecord, answer: str, question: str) -> str | None:
        """The `sides` and `same` checks of an answer to a question about two things: a yes/no question's two
        subjects (answer_form.paired_subjects), or a choice's two options; each found by the first document its
        part of the question names (through the search tool's `named_document`)."""
        from offline_agent.normalize import normalize_answer

        given = normalize_answer(answer)
        pair = paired_subjects(question)
        options = choice_options(question) if pair is None and not compares(question) else None
        named = getattr(self._search_tool(), "named_document", None)
        if named is None:
            return None
        if pair is not None and given in ("yes", "no"):
            parts = (pair[1], pair[2])
        elif options is not None and given in {normalize_answer(option) for option in options}:
            parts = options
        else:
            return None
        documents = _two_documents(state, named, parts)
        if documents is None:
            return None
        if pair is not None and pair[0] == "same":
            if same_year(question) is None:
                return self._same_values(state, record, given, answer, question, documents)
            return self._same(record, given, answer, question, documents)
        checked = self._judge(state, record, question, documents)
        if checked is None:
            return None
        verdicts = [checked[title] for title, _ in documents]
        if options is None:
            verdict = "yes" if verdicts == ["yes", "yes"] else "no"
        elif verdicts.count("yes") == 1:  # a choice: the one option the question holds of
            verdict = options[verdicts.index("yes")]
        else:
            return None
        if normalize_answer(verdict) == given:
            return None
        return self._sides(record, answer, question, documents, checked, verdict)

    def _judge(
        self, state: LoopState, record: StepRecord, question: str, documents: Sequence[Named]
    ) -> dict[str, str] | None:
        """The model's yes or no on the question for each document alone (SIDES_SYSTEM, SIDES_USER), by title; its
        cost is booked on the step. None when a call gave no word (the run stopped, or a backend without a grammar
        wrote something else)."""
        from offline_agent.tools.titles import bare_title

        checked: dict[str, str] = {}
        for title, text in documents:
            user = SIDES_USER.format(title=title, text=text, question=question, name=bare_title(title))
            word = self._word(state, record, SIDES_SYSTEM, user, YES_OR_NO)
            if word is None:
                return None
            checked[title] = word
        self.details(record).checked = checked
        return checked

    def _word(self, state: LoopState, record: StepRecord, system: str, user: str, words: WordParser) -> str | None:
        """The model's one word of `words` ("yes" or "no", ...) to `user`, in a call of its own; its cost is booked
        on the step. None when the call gave no word (the run stopped, or a backend without a grammar wrote
        something else)."""
        prompt = self.prompt_prefix(PromptParts(system=system, user=user))
        with aside(self.backend):  # the run's own prompt stays in the cache for its next step
            result = self.runner.word(state, prompt, words, seed=self.config.seed)
        StepRunner.add_cost(record, result)
        return result.value

    def _sides(
        self,
        record: StepRecord,
        answer: str,
        question: str,
        documents: Sequence[Named],
        checked: dict[str, str],
        verdict: str,
    ) -> str:
        """The `sides` refusal: each document's verdict, its first sentence, and the answer they give."""
        from offline_agent.tools.titles import bare_title

        lines = [
            f"{bare_title(title)}: {checked[title]} ({first_sentence(text).rstrip('.')})" for title, text in documents
        ]
        observation = SIDES.format(checks="; ".join(lines), verdict=verdict, question=question)
        return self._refuse(record, "sides", answer, observation)

    def _same(
        self, record: StepRecord, given: str, answer: str, question: str, documents: Sequence[Named]
    ) -> str | None:
        """The `same` check: the years the two documents give (compare.measure), equal or not."""
        from offline_agent.tools.titles import bare_title

        how = same_year(question)
        if how is None:
            return None
        first, second = (measure(text, how) for _, text in documents)
        if first is None or second is None:
            return None
        self.details(record).checked = {
            documents[0][0]: _shown(how, first.value),
            documents[1][0]: _shown(how, second.value),
        }
        verdict = "yes" if first.value == second.value else "no"
        if verdict == given:
            return None
        text = SAME.format(
            first=bare_title(documents[0][0]),
            first_value=_shown(how, first.value),
            first_text=first.text.rstrip("."),
            second=bare_title(documents[1][0]),
            second_value=_shown(how, second.value),
            second_text=second.text.rstrip("."),
            order="The same year" if verdict == "yes" else "Different years",
            verdict=verdict,
            question=question,
        )
        return self._refuse(record, "same", answer, text)

    def _same_values(
        self, state: LoopState, record: StepRecord, given: str, answer: str, question: str, documents: Sequence[Named]
    ) -> str | None:
        """The `same` check of any other "same X" question ("Are both Coldplay and Pierre Bouvier from the same
        country?"): X as each document alone gives it (SAME_SYSTEM, SAME_USER: one call a side under a grammar of
        its spans), then whether the two are the same X: equal as answers, or the model's "same" or "different"
        on the two (SAME_JUDGE_SYSTEM, SAME_JUDGE_USER). Dev200 #156 read "British" and "Canadian" side by side
        and answered yes; read one at a time, each is one short answer, and comparing two is all that is left."""
        from offline_agent.normalize import normalize_answer
        from offline_agent.tools.titles import bare_title

        asked = same_what(question)
        if asked is None:
            return None
        found: list[tuple[str, str, str]] = []  # (name, value, the sentence it is in)
        for title, text in documents:
            name = bare_title(title)
            user = SAME_USER.format(title=title, text=text, question=question, what=asked, name=name)
            value = self._read_off(state, record, text, SAME_SYSTEM, user)
            if not value:
                return None
            found.append((name, value, _sentence_with(text, value)))
        (first, first_value, first_text), (second, second_value, second_text) = found
        self.details(record).checked = {documents[0][0]: first_value, documents[1][0]: second_value}
        if normalize_answer(first_value) == normalize_answer(second_value):
            verdict = "yes"
        else:
            user = SAME_JUDGE_USER.format(
                what=asked, first=first, first_value=first_value, second=second, second_value=second_value
            )
            word = self._word(state, record, SAME_JUDGE_SYSTEM, user, SAME_OR_DIFFERENT)
            if word is None:
                return None
            verdict = "yes" if word == "same" else "no"
        if verdict == given:
            return None
        text = SAME_VALUES.format(
            first=first,
            first_value=first_value,
            first_text=first_text.strip().rstrip("."),
            second=second,
            second_value=second_value,
            second_text=second_text.strip().rstrip("."),
            order=f"The same {asked}" if verdict == "yes" else f"Not the same {asked}",
            verdict=verdict,
            question=question,
        )
        return self._refuse(record, "same", answer, text)

    def _open(
        self, state: LoopState, record: StepRecord, how: str, text: str, exclude_seen: bool = True, **lookup: bool
    ) -> tuple[str, list[str]] | None:
        """Show the documents the search tool's `how` (open_named or open_mentioned) finds for `text` (those the run
        has read left out, with `exclude_seen`; `lookup` is passed on: open_named's `place`), as this step's tool
        result: (the Observation, their titles), or None where there are none or the search tool cannot open
        documents. A grounded run reads the Observation."""
        tool = self._search_tool()
        opener = getattr(tool, how, None)
        if opener is None:
            return None
        shown = opener(text, exclude=_seen_titles(state) if exclude_seen else frozenset(), **lookup)
        reported = ToolDetails.from_dict(getattr(tool, "last_details", None))
        if shown is None or reported is None:
            return None
        self.details(record).tool = reported
        observation = self.fit_observation(shown)
        if self.reads(state):
            assert state.grounding is not None
            state.grounding.add(observation)
        return observation, list(reported.titles)


def _two_documents(
    state: LoopState, named: Callable[..., Named | None], parts: Sequence[str]
) -> tuple[Named, Named] | None:
    """The first document each of a question's two parts names (the search tool's `named_document`, preferring
    those the run has read); None when a part names none or both name the same one."""
    seen = _seen_titles(state)
    first, second = (named(part, prefer=seen) for part in parts)
    if first is None or second is None or first[0] == second[0]:
        return None
    return first, second


def _other_part(answer: str, part: str, sentences: Sequence[str]) -> tuple[str, str] | None:
    """The first name of two or more capitalised words in `sentences` that has `answer` as a part other than the
    one asked (`part`), and which part it is there: ("Sela Ward", "first") for "Sela" and a middle name."""
    word = re.escape(answer.strip())
    names = re.compile(rf"(?:{_CAPITALISED}\s+)*(?<![\w.'’-]){word}(?![\w'’-])(?:\s+{_CAPITALISED})*")
    for sentence in sentences:
        for found in names.finditer(sentence):
            name = found.group(0)
            for its in ("first", "middle", "last"):
                if its != part and part_of_name(name, its) == answer.strip():
                    return name, its
    return None


def _in_full(name: str, text: str) -> str | None:
    """The first name in `text` that writes `name` with more words between its first and last ("Sela Ann Ward" for
    "Sela Ward"), or None."""
    words = name.split()
    for found in re.finditer(rf"{_CAPITALISED}(?:\s+{_CAPITALISED})+", text):
        longer = found.group(0).split()
        if len(longer) > len(words) and longer[0] == words[0] and longer[-1] == words[-1]:
            return found.group(0)
    return None


def _refusals(steps: Sequence[StepRecord]) -> list[RefusalDetails]:
    """The refusals recorded on `steps`, in order."""
    return [step.details.refusal for step in steps if step.details is not None and step.details.refusal]


def _begins_any(token: str, answers: Sequence[str]) -> bool:
    """Whether the token `token` (the model's refused choice) begins one of `answers`, case aside."""
    piece = token.strip().casefold()
    return bool(piece) and any(answer.strip().casefold().startswith(piece) for answer in answers)


def _refused_as_wrong(state: LoopState, record: StepRecord) -> list[str]:
    """The answers the run, and the step `record` (not yet in the trajectory), refused as wrong (EXCLUDED_REASONS)."""
    refusals = _refusals([*state.trajectory.steps, record])
    return [refusal.answer for refusal in refusals if refusal.reason in EXCLUDED_REASONS]


def _as_words(answer: str) -> re.Pattern[str]:
    """A pattern that finds `answer` in a text as whole words, case aside."""
    return re.compile(rf"(?<!\w){re.escape(answer.strip())}(?!\w)", re.IGNORECASE)


def _sentence_with(text: str, found: str) -> str:
    """The first sentence of `text` that holds `found` as whole words (`found` itself where none does)."""
    holds = _as_words(found)
    return next((text[a:b] for a, b in split_sentences(text) if holds.search(text[a:b])), found)


def _written_date(state: LoopState, form: AnswerForm, year: str) -> str | None:
    """The date that the sentences read which give `year` write in full with it ("April 1, 1949" of "born April 1,
    1949"), among those that date the question's event where any does; None where none does, or they write two."""
    sentences = _sentences_holding(state, year)
    sentences = [sentence for sentence in sentences if form.dates_event(sentence, year)] or sentences
    dates = {date for sentence in sentences for date in dates_with_year(year, sentence)}
    return dates.pop() if len(dates) == 1 else None


def _sentences_holding(state: LoopState, answer: str) -> list[str]:
    """The sentences read (`_read_sentences`) that hold `answer` as whole words, case aside."""
    holds = _as_words(answer)
    return [sentence for sentence in _read_sentences(state) if holds.search(sentence)]


def _read_sentences(state: LoopState) -> list[str]:
    """The sentences of every Observation the run has had, in order; a passage's " ... " between the excerpts of
    a document ends a sentence too."""
    sentences = []
    for step in state.trajectory.steps:
        for excerpt in (step.observation or "").split(" ... "):
            sentences.extend(excerpt[start:end] for start, end in split_sentences(excerpt))
    return sentences


def _seen_titles(state: LoopState) -> set[str]:
    return {title for step in state.trajectory.steps if step.details is not None for title in step.details.seen_titles}


def _capitalised(name: str) -> str:
    return name[:1].upper() + name[1:]


def _shown(how: Comparison, value: float) -> str:
    """A measured number as the refusal shows it: a year as written, a length in metres, a count with its commas."""
    if how.dimension == "time":
        return f"{value:.0f}"
    number = f"{value:,.0f}" if value.is_integer() else f"{value:,}"
    return f"{number} metres" if how.dimension == "size" else number


def refused_first_word(raw: str, rejections: Sequence[Rejection]) -> bool:
    """True if the grammar refused the model's choice at the start of the Final's answer (before the end of its
    first word): the answer the model meant is not among what the grammar allowed."""
    start = raw.find(FINAL)
    if start < 0:
        return False
    answer_start = start + len(FINAL)
    rest = raw[answer_start:]
    first_word = rest.split()[0] if rest.split() else ""
    # A refused token may begin at the space before the answer (" 1961" after "Final:").
    return any(
        answer_start - 1 <= offset < answer_start + max(len(first_word), 1)
        and not _same_number(rest[: max(offset - answer_start, 0)] + token, first_word)
        for offset, token in rejections
    )


def _same_number(meant: str, written: str) -> bool:
    """Whether the model meant the number the grammar made it write, but without the thousands separators the
    text read has: "1462" for "1,462" (dev200 #51: refused as unread with "1,462 hypermarkets" on its page)."""
    digits = meant.strip()
    return "," in written and digits.isdigit() and written.replace(",", "").startswith(digits)


__all__ = ["MAX_REFUSALS", "VerifyAgent", "refused_first_word"]
