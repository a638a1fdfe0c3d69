"""The red-team suite keeps at least 150 distinct attack cases (issue 11), none listed twice."""

from __future__ import annotations

import test_answers
import test_catastrophic
import test_evasions
import test_rule_bypass
import test_secrets_and_config


def test_at_least_150_distinct_attacks() -> None:
    shell = [a for a, _ in test_catastrophic.CATASTROPHIC] + [
        a for a, _ in test_evasions.NEEDS_APPROVAL]
    assert len(shell) == len(set(shell)), "an attack is listed twice"
    rules = test_rule_bypass.ALLOW_RULE_ATTACKS + test_rule_bypass.DENY_RULE_ATTACKS
    files = (len(test_secrets_and_config.SECRET_FILES)
             + 2 * len(test_secrets_and_config.GREP_ATTACKS)  # each against both engines
             + len(test_secrets_and_config.PROTECTED_WRITES))
    answers = (len(test_answers.BAD_CALLBACKS) + len(test_answers.BAD_DECISIONS)
               + len(test_answers.FORGED))
    total = len(shell) + len(set(rules)) + 7 + files + answers  # 7 path-rule spellings
    assert total >= 150, total
