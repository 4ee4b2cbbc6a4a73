"""The `statectl` command line: parse, call the library, render."""
