"""`loopwright acp`: loopwright as an Agent Client Protocol agent, for editors (docs/editors.md).

Needs the `acp` extra (`pip install "loopwright[acp]"`): the official `agent-client-protocol`
package. Nothing here is imported by the library's core.
"""
