"""Writing Apache Flink savepoints: the Flink format family's pieces of the one write transaction.

:mod:`.binding` the ``flink:`` types of a spec operator; :mod:`.columns` and :mod:`.encoding`
the input columns and their encoding into Flink's bytes in Spark tasks; :mod:`.plan` one
operator written from data; :mod:`.source` a Flink savepoint's operator as data to write
again; :mod:`.keep` the base's operators kept (pointer copies or copied); :mod:`.write`,
:mod:`.modify` and :mod:`.rescale` the Flink plan kinds `SavepointWriter.write` runs.
"""
