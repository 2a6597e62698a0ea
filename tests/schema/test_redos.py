"""Regular expressions from untrusted schemas cannot stall the host.

Every pattern runs either on Python's ``re`` (only when :mod:`mcphost.schema.ambiguity`
proves backtracking linear for it) or on the linear-time matcher; back-references run on a
backtracker with a step budget. These tests count *steps* inside the matchers (never
wall-clock time): the classic catastrophic patterns finish within a bound linear in the
input, give the right answer, and the engines agree with each other and with ``re`` on
2,000 seeded random patterns.
"""

from __future__ import annotations

import gc
import random
import re
from typing import Any

import pytest

from mcphost import schema
from mcphost.errors import SchemaError
from mcphost.schema import linear
from mcphost.schema.backtrack import Backtracker
from mcphost.schema.linear import LinearMatcher, budget
from mcphost.schema.nfa import PatternTooExpensive, Program, max_length
from mcphost.schema.regex import compile_pattern, parse, trim
from mcphost.schema.regex_translate import to_python

# (pattern, adversarial input, the right answer)
ATTACKS: list[tuple[str, str, bool]] = [
    # the four from the review
    ("^(a?){30}a{30}$", "a" * 30, True),
    ("^(a|a)*$", "a" * 5000 + "!", False),
    ("^(a|aa)*b$", "a" * 5000, False),
    (r"\d+\d+\d+\d+x", "1" * 3000, False),
    # classic ReDoS shapes
    ("(a+)+$", "a" * 5000 + "!", False),
    ("^(a+)+$", "a" * 5000 + "!", False),
    ("(a|a)*", "b" * 5000, True),
    ("^(a|a)*c", "a" * 5000, False),
    ("(.*a){20}", "a" * 19 + "b" * 5000, False),
    ("(x+x+)+y", "x" * 5000, False),
    ("^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 5000 + "!", False),
    (r"^(\w+\s?)*$", "a" * 5000 + "!", False),
    ("^(a*)*b", "a" * 5000, False),
    (r"^(\d+)*$", "1" * 5000 + "x", False),
    ("^(a|b|ab)*c", "ab" * 2500, False),
    (r"^[\s\S]*?x[\s\S]*?x[\s\S]*?x$", "x" * 3000 + "y", False),
    (r"^(\w+\d+)+C", "a1" * 2500, False),
    (
        r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}"
        r"(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
        "a" * 5000 + "!",
        False,
    ),
    (r"^\s*(\S+\s*)*;$", "a " * 2500 + "\u2028", False),
    ("^(.*?,){11}P", "1," * 2500, False),
]


def _untrimmed_linear(source: str) -> LinearMatcher:
    ast, ngroups = parse(source)
    return LinearMatcher(Program(ast, ngroups), source)


def _small(source: str, text: str) -> bool:
    """Python's re on the ECMA translation: the reference for small inputs."""
    ast, _ = parse(source)
    return re.compile(to_python(ast)).search(text) is not None


@pytest.mark.parametrize(("source", "text", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_patterns_finish_within_a_linear_step_bound(
    source: str, text: str, expected: bool
) -> None:
    pattern = compile_pattern(source)
    # The untrimmed automaton: at most one visit per state and character, plus the
    # character itself (the lazy DFA's cached transitions cost one step each).
    lm = _untrimmed_linear(source)
    found, steps = lm.run(text)
    assert found is expected
    assert steps <= 2 * (len(text) + 1) * len(lm.prog)
    assert pattern.search(text) is expected
    if pattern.matcher is not None:
        found, steps = pattern.matcher.run(text)
        assert found is expected
        assert steps <= 2 * (len(text) + 1) * len(pattern.matcher.prog)
    else:
        # re was chosen for what is left after trimming: the backtracking model of it
        # explores a number of steps linear in the input.
        _assert_backtracking_linear(source, text)


def _assert_backtracking_linear(source: str, text: str) -> None:
    ast, ngroups = parse(source)
    prog = Program(trim(ast), ngroups, captures=True)
    bt = Backtracker(prog, source)
    _, steps = bt.run(text, limit=10**8)
    _, steps4 = bt.run(text * 4, limit=10**8)
    assert steps4 <= 6 * max(steps, 1)


@pytest.mark.parametrize(("source", "text", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_patterns_answer_like_re_on_small_inputs(
    source: str, text: str, expected: bool
) -> None:
    # "^(a?){30}a{30}$" itself is exponential for re even at 30 characters: compare the
    # same shape with smaller counts.
    small_source = source.replace("{30}", "{6}").replace("{20}", "{3}").replace("{11}", "{3}")
    pattern = compile_pattern(small_source)
    lm = _untrimmed_linear(small_source)
    rng = random.Random(small_source)
    alphabet = [*sorted(set(text)), "a", "b", "1", ",", " ", "x", "P"]
    for n in range(0, 13):
        for _ in range(6):
            s = "".join(rng.choice(alphabet) for _ in range(n))
            want = _small(small_source, s)
            assert pattern.search(s) is want, (small_source, s)
            assert lm.search(s) is want, (small_source, s)


def test_the_reviewed_tool_output_validates_without_freezing() -> None:
    output_schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "pattern": "^(a?){30}a{30}$"}},
    }
    v = schema.compile(output_schema)
    assert v.is_valid({"text": "a" * 30})
    assert not v.is_valid({"text": "a" * 29 + "b"})
    props = schema.compile({"patternProperties": {"^(a|a)*$": {"type": "string"}}})
    assert not props.is_valid({"a" * 3000: 1})
    assert props.is_valid({"a" * 3000 + "!": 1})
    names = schema.compile({"propertyNames": {"pattern": "^(a|aa)*b$"}})
    assert not names.is_valid({"a" * 3000: 1})
    assert names.is_valid({"a" * 3000 + "b": 1})
    args = schema.compile({"properties": {"n": {"pattern": r"\d+\d+\d+\d+x"}}})
    assert not args.is_valid({"n": "1" * 3000})
    assert args.is_valid({"n": "1" * 3000 + "x"})
    assert schema.compile({"pattern": "^(a|a)*$"}).is_valid("a" * 3000)
    regex = schema.compile({"format": "regex"}, format_assert=True)
    assert regex.is_valid("^(a|a)*$") and not regex.is_valid("(" * 200 + ")" * 200)


# --- which engine runs which pattern --------------------------------------------------------

PROVABLY_SAFE = [
    "^[a-z]+(-[a-z]+)*$", "^.*bar$", "^(GET|POST|PUT)$", "^[a-zA-Z0-9_-]{1,64}$",
    r"^\d{4}-\d{2}-\d{2}$", r"^[\w.+-]+@[\w-]+\.[\w.-]+$", r"^(?=.*\d)(?=.*[a-z]).{8,}$",
    r"^(?!\s*$).+", r"^(?:(?!ab).)*$", "a+", "[0-9]{2,}", r"\bfoo\b", "X_", r"\wcole",
    r"^(?:[a-z0-9-]{1,63}\.)+[a-z]{2,}$", "^[A-Za-z0-9+/]*={0,2}$", r"^(\d+\.)*\d+$",
    # trimmed first: a search for "(a+)+$" is a search for "a$"
    "(a+)+$", "(a|a)*", ".*foo.*", "[a-z]+\\.com",
]
NOT_PROVABLY_SAFE = [
    "^(a?){30}a{30}$", "^(a|a)*$", "^(a|aa)*b$", r"\d+\d+\d+\d+x", "(.*a){20}", "(x+x+)+y",
    "^(([a-z])+.)+[A-Z]([a-z])+$", "f.*o", r"^\s*(\S+\s*)*$", "^(a+)+$", "^(a*)*$",
    "^(?:(?=(a|a)*c).)*$", "foo.*bar", "^(?:a|())*b",
]


@pytest.mark.parametrize("source", PROVABLY_SAFE)
def test_safe_patterns_run_on_re(source: str) -> None:
    assert compile_pattern(source).engine == "re"


@pytest.mark.parametrize("source", NOT_PROVABLY_SAFE)
def test_unsafe_patterns_run_on_the_linear_matcher(source: str) -> None:
    pattern = compile_pattern(source)
    assert pattern.engine in ("dfa", "pike", "pike+look")
    assert pattern.linear


def test_lazy_dfa_caches_are_bounded_for_the_whole_process(monkeypatch: Any) -> None:
    tiny = linear._CacheMemory(20_000)
    monkeypatch.setattr(linear, "_memory", tiny)
    source = "^(?:a|[ab])*a[ab]{8}c"  # its DFA has thousands of states
    lm = _untrimmed_linear(source)
    rng = random.Random(5)
    text = "".join(rng.choice("ab") for _ in range(5000))
    found, steps = lm.run(text)
    assert not found and steps <= 2 * (len(text) + 1) * len(lm.prog)
    assert 0 <= tiny.free < 20_000  # it cached what the allowance let it
    assert lm.search(text + "c") is _small(source, text[-40:] + "c")
    del lm
    gc.collect()
    assert tiny.free == 20_000  # given back when the matcher went away


def test_engines_by_feature() -> None:
    assert compile_pattern(r"^(a|a)*\bx").engine == "pike"
    assert compile_pattern("(?<=^a+)b").engine == "pike+look"  # variable-width look-behind
    assert compile_pattern(r"(\w+)\s\1").engine == "backtrack"
    # Safe, but too many class ranges for re's slow charset compiler.
    big = compile_pattern(r"^\p{L}\p{N}\p{P}\p{S}\p{M}\P{Cn}$")
    assert big.engine == "dfa" and big.search("a1.+\u0301b") and not big.search("a1.+\u0301\U000e0000")


# --- budgets: what no automaton can do fails as a SchemaError, never a stall ------------------


def test_back_references_follow_ecma_semantics() -> None:
    # ECMA-262 22.2.2.7.2: a group that did not take part matches the empty string
    # (Python's re fails there), and 22.2.2.3.1: captures reset at each iteration.
    assert schema.compile({"pattern": r"^(a)?b\1$"}).is_valid("b")
    assert schema.compile({"pattern": r"^(?:(a)|b)\1$"}).is_valid("b")
    assert schema.compile({"pattern": r"^(z)((a+)?(b+)?(c))*\4$"}).is_valid("zaacbbbcac")
    assert schema.compile({"pattern": r"(?<y>\d{4})-\k<y>"}).is_valid("2024-2024")
    assert not schema.compile({"pattern": r"^(\w+) \1$"}).is_valid("ab ba")
    assert schema.compile({"pattern": r"(?<=(a)\1)b"}).is_valid("aab")
    assert schema.compile({"pattern": r"^(?:(a)|\1b)*$"}).is_valid("ab")  # \1 reset: empty


def test_exponential_back_reference_pattern_exceeds_its_budget() -> None:
    v = schema.compile({"type": "string", "pattern": r"^(a|a)*\1b$"})
    assert v.is_valid("aab")
    text = "a" * 60
    with pytest.raises(SchemaError, match="too expensive") as info:
        v.is_valid(text)
    assert isinstance(info.value, PatternTooExpensive)
    assert text not in str(info.value)  # the value is not echoed
    with pytest.raises(PatternTooExpensive):
        v.validate(text)
    pattern = compile_pattern(r"^(a|a)*\1b$")
    assert pattern.matcher is not None
    with pytest.raises(PatternTooExpensive):
        pattern.matcher.run(text)
    # The budget is what stops it: the steps taken never exceed it.
    limit = budget(len(text), len(pattern.matcher.prog))
    assert limit < 10**6


def test_quadratic_look_around_exceeds_its_budget() -> None:
    # A look-ahead with an unbounded body evaluated at every position is quadratic.
    pattern = compile_pattern("^(?:(?=[ab]*c)[ab])*$")
    assert pattern.engine == "pike+look"
    assert pattern.search("ab" * 50 + "c") is False
    assert pattern.search("") is True
    with pytest.raises(PatternTooExpensive):
        pattern.search("ab" * 20_000 + "c")
    # Bounded look-around stays linear.
    linear = compile_pattern("^(?:(?=(a|a)b)..)*$")
    found, steps = linear.matcher.run("ab" * 10_000) if linear.matcher else (True, 0)
    assert found and steps <= 8 * 20_001 * 30


def test_strict_mode_refuses_what_needs_a_budget() -> None:
    with pytest.raises(SchemaError, match="step budget"):
        schema.compile({"pattern": r"(a)\1"}, strict=True)
    with pytest.raises(SchemaError, match="step budget"):
        schema.compile({"pattern": "x(?=[ab]*c)"}, strict=True)
    schema.compile({"pattern": "^(?=.*\\d).{8,}$"}, strict=True)  # proven cheap


# --- the fuzz: 2,000 random patterns, every engine agrees with re ----------------------------

_ATOMS = ["a", "b", "c", ".", "[ab]", "[^a]", r"\d", r"\w", r"\s", "[a-c]", "1", "_", r"\.",
          " ", r"\S", r"\W", "[^\\d ]"]
_QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}", "*?", "+?", "??", "{1,2}?"]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    k = rng.random()
    if depth > 3 or k < 0.35:
        return rng.choice(_ATOMS)
    if k < 0.55:
        return "".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    if k < 0.65:
        return "|".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    if k < 0.8:
        inner = _random_pattern(rng, depth + 1)
        group = f"(?:{inner})" if rng.random() < 0.5 else f"({inner})"
        return group + rng.choice(_QUANTIFIERS)
    if k < 0.87:
        return rng.choice(["^", "$", r"\b", r"\B"]) + _random_pattern(rng, depth + 1)
    if k < 0.93:
        # Python's re needs fixed-width look-behind: bodies of one or two characters.
        body = rng.choice(_ATOMS) + rng.choice(["", rng.choice(_ATOMS)])
        return f"({rng.choice(['?=', '?!', '?<=', '?<!'])}{body})"
    return "(" + _random_pattern(rng, depth + 1) + ")"


def _fuzz_cases(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        src = _random_pattern(rng)
        if rng.random() < 0.3:
            src = "^" + src + ("$" if rng.random() < 0.5 else "")
        out.append(src)
    return out


def test_fuzz_every_engine_agrees_with_re() -> None:
    rng = random.Random(20240601)
    alphabet = "ab1 _\nc.x"
    engines: dict[str, int] = {}
    for source in _fuzz_cases(2000, 1):
        ast, ngroups = parse(source)
        reference = re.compile(to_python(ast))
        chosen = compile_pattern(source)
        engines[chosen.engine] = engines.get(chosen.engine, 0) + 1
        untrimmed = LinearMatcher(Program(ast, ngroups), source)
        trimmed = LinearMatcher(Program(trim(ast), ngroups), source)
        backtracker = Backtracker(Program(ast, ngroups, captures=True), source)
        for _ in range(12):
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
            want = reference.search(s) is not None
            got = [m.search(s) for m in (chosen, untrimmed, trimmed, backtracker)]
            assert got == [want] * 4, (source, s, want, got, chosen.engine)
    # Every engine was exercised.
    assert set(engines) >= {"re", "dfa", "pike", "pike+look"}, engines


def test_fuzz_patterns_proven_safe_backtrack_linearly() -> None:
    """The soundness check of the rule: for patterns the analysis sends to re, a
    backtracking matcher (a model of re's exploration) takes steps linear in the input on
    repetitive adversarial strings (4x the input, at most ~4x the steps)."""
    units = ["a", "b", "1", " ", "_", "ab", "a1", "a ", "aab", "ba", "1a", "a_b", "c"]
    checked = 0
    for source in _fuzz_cases(400, 2):
        if compile_pattern(source).engine != "re":
            continue
        ast, ngroups = parse(source)
        trimmed = trim(ast)
        longest = max_length(trimmed)
        if longest is not None and longest > 40:
            continue  # bounded patterns longer than the input are not in their linear regime
        bt = Backtracker(Program(trimmed, ngroups, captures=True), source)
        checked += 1
        for unit in units:
            for tail in ("", "!", "a"):
                _, small = bt.run(unit * (100 // len(unit)) + tail, limit=10**8)
                _, large = bt.run(unit * (400 // len(unit)) + tail, limit=10**8)
                assert large <= 6 * max(small, 1), (source, unit, tail, small, large)
    assert checked > 200
