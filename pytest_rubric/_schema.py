"""The rubric file format as pydantic models: a :class:`Suite` of :class:`Case` objects,
each a :class:`Rubric` with criteria, read as the type their ``type`` names in
``pytest_rubric.criteria.registry``. The models only describe and validate.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    Discriminator,
    Field,
    PlainValidator,
    Tag,
    model_validator,
)

from ._defaults import parse_pass_when, parse_repeat
from ._guards.limits import kind_of
from ._trace import Passage
from .criteria.json_text import JsonPointer
from .criteria.model import MODEL_CONFIG, CriterionModel, FieldError, Id, Share, Tags, Timeout
from .criteria.model import check_import_path as _check_import_path
from .criteria.registry import criterion_types, validate_criterion

# Every built-in criterion type by the `type:` it is written with (criteria/registry.py).
CRITERION_TYPES: dict[str, type[CriterionModel]] = criterion_types()

# A criterion, read as the type it names among the session's (built-in and added) types.
Criterion = Annotated[CriterionModel, PlainValidator(validate_criterion)]


def default_ids(value: Any, prefix: str) -> Any:
    """Criteria without an ``id`` (the weight-and-requirement form) are named by position."""
    if isinstance(value, list):
        return [
            {**c, "id": f"{prefix}{i}"} if isinstance(c, dict) and "id" not in c else c
            for i, c in enumerate(value, start=1)
        ]
    return value


# A case's criteria are c1, c2, ... by default, those of `global` g1, g2, ...
CaseCriteria = Annotated[list[Criterion], BeforeValidator(lambda v: default_ids(v, "c"))]
GlobalCriteria = Annotated[list[Criterion], BeforeValidator(lambda v: default_ids(v, "g"))]


# How many answers each (case, subject) item gets (`repeat`), and how they make a pass.
Repeat = Annotated[int, BeforeValidator(parse_repeat)]
PassWhenField = Annotated[str | float, BeforeValidator(parse_pass_when)]


ROLES = ("system", "user", "assistant")
_TURN_EXAMPLE = 'messages:\n      - {role: user, content: "..."}'


class Message(BaseModel):
    """One turn of a conversation (``messages:``): who speaks and what they say."""

    model_config = MODEL_CONFIG

    role: Literal["system", "user", "assistant"]
    content: str


def _check_turns(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        raise FieldError(
            "messages",
            f"`messages` must be a list of turns, got {_kind(value)}",
            hint="write\n    " + _TURN_EXAMPLE,
        )
    if not value:
        raise FieldError("messages", "`messages` is empty", hint="write\n    " + _TURN_EXAMPLE)
    for i, turn in enumerate(value):
        found = None if isinstance(turn, Message) else _turn_problem(turn, f"turn {i + 1}")
        if found is not None:
            raise FieldError("messages", found[0], hint=found[1], path=(i, *found[2]))
    return value


Turns = Annotated[tuple[Message, ...], BeforeValidator(_check_turns)]


def _turn_problem(turn: Any, turn_n: str) -> tuple[str, str, tuple[str, ...]] | None:
    """What is wrong with a turn of ``messages:``: (message, hint, path into the turn)."""
    where, shape = f"{turn_n} of `messages`", 'write it as `{role: user, content: "..."}`'
    if not isinstance(turn, dict):
        return f"{where} must be a mapping, got {_kind(turn)}", shape, ()
    unknown = [str(k) for k in turn if k not in ("role", "content")]
    if unknown:
        message = f"{where} has unknown field `{unknown[0]}`"
        return message, "a turn has only `role` and `content`", (unknown[0],)
    missing = [name for name in ("role", "content") if name not in turn]
    if missing:
        return f"{where} has no `{missing[0]}`", shape, ()
    if turn["role"] not in ROLES:
        return f"{where} has role {turn['role']!r}", "use one of system, user, assistant", ("role",)
    if not isinstance(turn["content"], str):
        message = f"{where}: `content` must be text, got {_kind(turn['content'])}"
        hint = 'quote it: `content: "..."` (parts lists and images are not supported)'
        return message, hint, ("content",)
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {kind_of(value)}"


REPORT_ONLY: Literal["report-only"] = "report-only"
Mark = float | Literal["report-only"] | None
"""A pass mark as written: a number, ``"report-only"`` for an explicit ``min_score: null``,
or None where nothing was said (then the file's, else the ini's, else 0.8)."""


def own_mark(*levels: Rubric | Suite) -> Mark:
    """The pass mark the first of ``levels`` (a case, then its file) that sets one sets."""
    for model in levels:
        if "min_score" in model.model_fields_set:
            return REPORT_ONLY if model.min_score is None else model.min_score
    return None


def _check_targets(value: dict[str, str]) -> dict[str, str]:
    """``targets: {NAME: "module:function"}``: each a valid path, none given twice."""
    seen: dict[str, str] = {}
    for name, path in value.items():
        _check_import_path(path)
        if not name.strip():
            raise FieldError("targets", "a subject name in `targets` is empty; name each target")
        if path in seen:
            raise FieldError(
                "targets",
                f"target {path!r} is given twice, as {seen[path]!r} and {name!r}; "
                "give each target once",
            )
        seen[path] = name
    return value


TargetPath = Annotated[str, AfterValidator(_check_import_path)]
Targets = Annotated[dict[str, str], AfterValidator(_check_targets)]  # name -> "module:function"


class Rubric(BaseModel):
    """A list of criteria with a pass mark: what :func:`assert_rubric` grades against; a
    criterion without an ``id`` is ``c1``, ``c2``, ... (``g1``, ... in ``global``)."""

    model_config = MODEL_CONFIG

    id: str = "rubric"
    question: str | None = None
    messages: Turns | None = None
    criteria: CaseCriteria = []
    min_score: Share | None = None  # null (given explicitly): report-only, see `own_mark`
    reference: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)  # no copy of a default per case

    @model_validator(mode="after")
    def _conversation_shape(self) -> Rubric:
        turns = self.messages
        if not turns:  # a plain question: nothing to check
            return self
        roles = [m.role for m in turns]
        first_other = next((i for i, r in enumerate(roles) if r != "system"), len(roles))
        late = next((i for i, r in enumerate(roles) if r == "system" and i > first_other), None)
        if late is not None:
            raise FieldError(
                "messages",
                f"turn {late + 1} of `messages` is a system turn after the conversation started",
                hint="put system turns first; model APIs take them only at the start",
                path=(late, "role"),
            )
        if self.question is None and roles[-1] != "user":
            raise FieldError(
                "messages",
                f"the conversation ends with {'an' if roles[-1] == 'assistant' else 'a'} "
                f"{roles[-1]} turn; the response under test answers the last user turn",
                hint='end `messages` with `{role: user, content: "..."}`, or add `question:` '
                "(it becomes the last user turn)",
                path=(len(turns) - 1, "role"),
            )
        return self

    @property
    def conversation(self) -> tuple[tuple[str, str], ...] | None:
        """The turns asked, as ``(role, content)``: ``messages``, then ``question`` as the last
        user turn when both are given; None for a plain question."""
        if self.messages is None:
            return None
        turns = tuple((m.role, m.content) for m in self.messages)
        return turns if self.question is None else (*turns, ("user", self.question))

    @property
    def asked(self) -> str | tuple[tuple[str, str], ...] | None:
        """What the judge is shown the response answers: the conversation, else the question."""
        return self.conversation or self.question

    @property
    def shown_question(self) -> str | None:
        """The question reports show: ``question``, else the conversation's last user turn."""
        if self.question is not None or not self.messages:
            return self.question
        return next(m.content for m in reversed(self.messages) if m.role == "user")


class ContextPassage(BaseModel):
    """One passage of a case's fixed ``context:`` (or a plain string)."""

    model_config = MODEL_CONFIG

    text: str
    id: str | int | None = None
    source: str | None = None


class Case(Rubric):
    """One question of a rubric file, with where its responses come from; ``context``, a
    fixed context for an answer that brings none (``_grade.grader.with_case_context``)."""

    id: Id
    response: str | None = None
    responses: dict[str, str] | None = None
    subject: str | None = None
    target: TargetPath | None = None
    targets: Targets | None = None
    # For the target and the callables (a criterion's own wins); default: ini
    # rubric_call_timeout (60 s).
    timeout: Timeout | None = None
    repeat: Repeat | None = None  # default: the file's, else --rubric-repeat (1)
    pass_when: PassWhenField | None = None  # default: the file's, else --rubric-pass-when (mean)
    tags: Tags = ()
    context: tuple[str | ContextPassage, ...] | None = None

    @property
    def fixed_context(self) -> tuple[Passage, ...]:
        return tuple(
            Passage(text=p)
            if isinstance(p, str)
            else Passage(text=p.text, id=None if p.id is None else str(p.id), source=p.source)
            for p in self.context or ()
        )

    @model_validator(mode="after")
    def _subject_needs_response(self) -> Case:
        if self.subject is not None and self.response is None:
            raise FieldError(
                "response", "`subject` names the author of `response`; add `response: ...`"
            )
        return self


class CalibrationExample(BaseModel):
    """One labelled example of a file's ``calibration:``: the verdict, or score, a person gave."""

    model_config = MODEL_CONFIG

    case: str
    criterion: str
    response: str
    verdict: Literal["MET", "UNMET"] | None = None
    score: float | None = None


class JudgeExample(BaseModel):
    """One labelled example of a file's ``judge_examples:``, shown to the judge."""

    model_config = MODEL_CONFIG

    criterion: str
    response: str
    verdict: Literal["MET", "UNMET"]
    reason: str


def _list_or_path(value: Any) -> str:
    return PATH_TAG if isinstance(value, str) else LIST_TAG


# A field written as a list of examples or as the path of a JSONL file of them: validated as
# the shape the file wrote, so a bad example is not also "not a string". The tags are no
# key a file can write; the loader leaves them out of the field it names.
LIST_TAG, PATH_TAG = "(list)", "(path)"
T = TypeVar("T")
ListOrPath = Annotated[
    Annotated[list[T], Tag(LIST_TAG)] | Annotated[str, Tag(PATH_TAG)],
    Discriminator(_list_or_path),
]


class Suite(BaseModel):
    """A rubric file: cases plus file-level defaults and ``global`` criteria."""

    model_config = MODEL_CONFIG

    suite: str | None = None
    min_score: Share | None = None
    responses: str | None = None
    target: TargetPath | None = None
    targets: Targets | None = None
    target_fixed: bool = False  # keep target(s) when the command line names subjects
    repeat: Repeat | None = None
    pass_when: PassWhenField | None = None
    calibration: ListOrPath[CalibrationExample] | None = None  # see _load.examples
    judge_instructions: str | None = None  # see _load.examples
    style_field: JsonPointer | None = None  # where style is measured in a JSON answer
    judge_examples: ListOrPath[JudgeExample] | None = None  # see _load.examples
    global_criteria: GlobalCriteria = Field(
        default=[], validation_alias=AliasChoices("global", "global_criteria")
    )
    cases: list[Case]
