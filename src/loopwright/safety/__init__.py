"""Safety: what a tool call may do, and where its commands run.

The gates every call passes after the `before_tool` hooks, in order (`plugin.py` assembles them
for a run, docs/safety.md explains them): the policy and approvals (`policy.py`, shell commands
read by `shell/`), the egress policy for anything that reaches the network (`egress.py`), the
secret and protected paths every file tool and the sandbox share (`sensitive.py`,
`protected.py`, `git_hooks.py`), and the OS sandbox the commands run in (`sandbox/`).

Nothing is imported here: an agent that runs no command loads neither the bash grammar nor the
sandbox.
"""
