"""Writing statectl's own format family (canonical Parquet and RocksDB): its write kind
(:mod:`.write`), the plans of operators written from data (:mod:`.operators`, one module per
kind of state) and of rescaled ones (:mod:`.rescale`), and self-contained copies
(:mod:`.copying`). Chosen by `writers.kinds`; nothing outside this folder and the registry
imports it for a family decision."""
