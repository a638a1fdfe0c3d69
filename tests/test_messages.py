"""History rules: what every provider accepts, whatever the history went through."""

from loopwright.interrupted import INTERRUPTED_RESULT, close_interrupted_calls
from loopwright.messages import (
    Message,
    ToolCall,
    assistant,
    sanitize,
    system,
    tool_result,
    user,
)


def _roles(history: list[Message]) -> list[str]:
    return [m.role for m in history]


def test_orphan_tool_call_is_dropped_from_its_assistant_message() -> None:
    answered = ToolCall(id="a", name="read", arguments="{}")
    orphan = ToolCall(id="b", name="read", arguments="{}")
    history = [system("s"), user("u"), assistant("", [answered, orphan]),
               tool_result(answered, "ok")]
    clean = sanitize(history)
    assert [c.id for c in clean[2].tool_calls] == ["a"]
    assert _roles(clean) == ["system", "user", "assistant", "tool"]


def test_assistant_left_empty_by_dropped_calls_disappears() -> None:
    orphan = ToolCall(id="b", name="read", arguments="{}")
    clean = sanitize([system("s"), user("u"), assistant("", [orphan]), user("again")])
    assert _roles(clean) == ["system", "user"]
    assert clean[1].content == "u\n\nagain"


def test_orphan_result_is_removed() -> None:
    stray = tool_result(ToolCall(id="zz", name="x"), "late")
    clean = sanitize([system("s"), user("u"), stray, assistant("hi")])
    assert _roles(clean) == ["system", "user", "assistant"]


def test_duplicate_results_keep_the_first_and_follow_call_order() -> None:
    a, b = ToolCall(id="a", name="t"), ToolCall(id="b", name="t")
    history = [user("u"), assistant("", [a, b]), tool_result(b, "B"), tool_result(a, "A1"),
               tool_result(a, "A2")]
    clean = sanitize(history)
    assert [m.content for m in clean if m.role == "tool"] == ["A1", "B"]


def test_a_group_answered_in_order_is_kept_as_it_is() -> None:
    """The run's own group (one result per call, in order) is reused, not rebuilt."""
    a, b = ToolCall(id="a", name="t", arguments='{"k":1}'), ToolCall(id="b", name="t")
    reply = assistant("", [a, b])
    results = [tool_result(a, "A"), tool_result(b, "B")]
    clean = sanitize([user("u"), reply, *results])
    assert clean[1] is reply and clean[2] is results[0] and clean[3] is results[1]


def test_calls_sharing_an_id_are_not_taken_for_a_group_answered_in_order() -> None:
    """A hostile reply's two calls with one id, each "answered": the first result is kept
    (copies of one call's result are dropped) and both calls stay, as they always did."""
    first, second = ToolCall(id="x", name="t", arguments="{}"), ToolCall(id="x", name="u")
    clean = sanitize([user("u"), assistant("", [first, second]), tool_result(first, "1"),
                      tool_result(second, "2")])
    assert _roles(clean) == ["user", "assistant", "tool"]
    assert [c.name for c in clean[1].tool_calls] == ["t", "u"]
    assert clean[2].content == "1"


def test_consecutive_user_and_assistant_messages_are_merged() -> None:
    clean = sanitize([system("s"), user("one"), user("two"), assistant("x"), assistant("y")])
    assert _roles(clean) == ["system", "user", "assistant"]
    assert clean[1].content == "one\n\ntwo"
    assert clean[2].content == "x\n\ny"


def test_sanitize_does_not_modify_its_input() -> None:
    orphan = ToolCall(id="b", name="read")
    history = [user("u"), assistant("", [orphan])]
    sanitize(history)
    assert history[1].tool_calls == [orphan]


def test_interrupted_calls_get_a_did_not_complete_result() -> None:
    a, b = ToolCall(id="a", name="t"), ToolCall(id="b", name="t")
    history = [user("u"), assistant("", [a, b]), tool_result(a, "done")]
    repaired = close_interrupted_calls(history)
    assert [m.tool_call_id for m in repaired if m.role == "tool"] == ["a", "b"]
    assert repaired[-1].content == INTERRUPTED_RESULT and repaired[-1].is_error


def test_message_round_trips_through_its_dict_form() -> None:
    msg = Message(role="assistant", content="c", tool_calls=[ToolCall(id="1", name="n")],
                  reasoning="r", provider_data={"anthropic_messages": {"blocks": [1]}})
    assert Message.from_dict(msg.to_dict()) == msg


def test_the_incremental_sanitizer_matches_a_full_sanitize_as_history_grows() -> None:
    from loopwright.messages import Sanitizer

    clean = Sanitizer()
    history: list[Message] = [system("s"), user("u")]
    for n in range(6):
        a = ToolCall(id=f"a{n}", name="t")
        orphan = ToolCall(id=f"o{n}", name="t")
        history += [assistant("", [a, orphan]), tool_result(a, f"r{n}")]
        assert clean(history) == sanitize(history)
        history.append(user(f"more {n}"))
        history.append(user(f"and more {n}"))
        assert clean(history) == sanitize(history)
    # an in-place edit before the remembered boundary is seen, not served stale
    history[3] = tool_result(ToolCall(id="a0", name="t"), "pruned")
    assert clean(history) == sanitize(history)
    assert clean(history)[3].content == "pruned"
    # a replaced history is cleaned from scratch
    fresh = [system("s"), user("new task")]
    assert clean(fresh) == sanitize(fresh)


def test_a_new_message_has_every_field_s_declared_default() -> None:
    """Message's __init__ is written out (no __setattr__ call per field): its defaults must
    stay the fields' own, and no two messages may share a mutable default."""
    import dataclasses

    first, second = Message(role="user"), Message(role="user")
    for spec in dataclasses.fields(Message):
        if spec.default is not dataclasses.MISSING:
            assert getattr(first, spec.name) == spec.default, spec.name
        elif spec.default_factory is not dataclasses.MISSING:
            assert getattr(first, spec.name) == spec.default_factory(), spec.name
            assert getattr(first, spec.name) is not getattr(second, spec.name), spec.name
    every = {spec.name: f"{spec.name}-value" for spec in dataclasses.fields(Message) if spec.init}
    made = Message(**every)  # every field the dataclass declares is a keyword of __init__
    assert all(getattr(made, name) == value for name, value in every.items())


def test_editing_a_message_with_cached_forms_empties_its_cache() -> None:
    message = assistant("text")
    message.wire_cache["chat_completions"] = {"role": "assistant"}
    message.content = "edited"
    assert message.wire_cache == {}


def test_the_incremental_sanitizer_matches_a_full_sanitize_when_results_come_one_by_one() -> None:
    """A request may end on a group whose results answer every call (the boundary is then
    kept after it) or only some of them (it must not be: the missing result may still come)."""
    from loopwright.messages import Sanitizer

    clean = Sanitizer()
    history: list[Message] = [system("s"), user("u")]
    for n in range(4):
        first, second = ToolCall(id=f"a{n}", name="t"), ToolCall(id=f"b{n}", name="t")
        history.append(assistant("", [first, second]))
        history.append(tool_result(first, f"first {n}"))
        assert clean(history) == sanitize(history)  # one call unanswered: dropped for now
        history.append(tool_result(second, f"second {n}"))
        assert clean(history) == sanitize(history)  # both answered: kept, and remembered
        assert [c.id for c in clean(history)[-3].tool_calls] == [f"a{n}", f"b{n}"]
        history.append(tool_result(first, "a copy of the first result"))
        assert clean(history) == sanitize(history)  # a late copy is dropped either way
        history.append(tool_result(ToolCall(id="stray", name="t"), "an orphan"))
        assert clean(history) == sanitize(history)


def test_usage_since_is_the_difference_in_the_dict_form() -> None:
    from loopwright.messages import Usage

    total = Usage(input_tokens=10, output_tokens=2, cache_read_tokens=4, requests=1)
    before = total.copy()
    total.add(Usage(input_tokens=7, output_tokens=3, cache_write_tokens=5, reasoning_tokens=1,
                    requests=2))
    added = total.since(before)
    assert list(added) == list(total.to_dict())  # the same keys, in the same order
    assert added == {"input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 0,
                     "cache_write_tokens": 5, "reasoning_tokens": 1, "requests": 2}


def test_a_usage_copy_is_equal_independent_and_a_usage() -> None:
    from dataclasses import fields

    from loopwright.messages import Usage

    usage = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4,
                  reasoning_tokens=5, requests=6)
    copy = usage.copy()
    assert type(copy) is Usage and copy == usage and copy is not usage
    assert [getattr(copy, f.name) for f in fields(Usage)] == [1, 2, 3, 4, 5, 6]
    copy.add(usage)
    assert usage.to_dict() == {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 3,
                               "cache_write_tokens": 4, "reasoning_tokens": 5, "requests": 6}
    assert copy.input_tokens == 2 and Usage().copy() == Usage()
