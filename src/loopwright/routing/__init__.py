"""Which model answers which call: side models per side task (`side`), the per-call
`choose_model` hook (`choose`) and the built-in intent router (`router`)."""
