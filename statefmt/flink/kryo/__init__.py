"""Kryo-serialized values (Flink's fallback serializer), decoded without the JVM.

`registry` names the class ids of both generations, `classes` reads a job's field layouts from
its class files, `stream` the byte encodings, `decode` one value, `snapshot` the serializer's
snapshot, `column` the Arrow side.
"""
