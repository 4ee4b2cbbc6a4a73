"""statectl's own format family: its place at the format seam (:mod:`.format`)."""
