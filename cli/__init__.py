"""The `statectl` command line: parse, call the library, render.

Internal: the public API is the ``statectl`` package (its ``__all__``); the modules and names
here may move."""
