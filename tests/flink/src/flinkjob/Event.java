package flinkjob;

/** One input record (a POJO, so Flink serializes it without Kryo). A probe asks proc to dump a key's state. */
public class Event {
    public long seq;
    public int keyIndex;
    public long value;
    public String type;
    public String label;
    public boolean probe;

    public Event() {}

    public Event(long seq, int keyIndex, long value, String type, boolean probe) {
        this.seq = seq;
        this.keyIndex = keyIndex;
        this.value = value;
        this.type = type;
        this.probe = probe;
    }
}
