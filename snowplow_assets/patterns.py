"""The end of a value, for regular expressions that Python and Java both run.

Validation patterns run in Python's `re` and in Java's: Spark SQL's RLIKE, which searches, and the
shredder's Java function. In both, `$` also matches before a final line terminator (Python: "\\n"; Java:
"\\n", "\\r", "\\u0085", "\\u2028" or "\\u2029"), and a JSON string or a folder name can end with one:
`^iglu:…/1-0-0$` accepts "iglu:…/1-0-0\\n". `END` ("no character follows") is the end of the value in
both; Python code also validates with `fullmatch`. Java's `\\z` means the same, but Python's `re` rejects it.
"""

END = r"(?![\s\S])"
