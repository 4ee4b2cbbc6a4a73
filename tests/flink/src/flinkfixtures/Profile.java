package flinkfixtures;

/**
 * The dev fixtures' POJO (tests/fixtures/flink-dev): the same fields as flinkjob.Profile in another
 * class, which PojoSerializer's snapshot names; knob pojo-class=flinkfixtures.Profile declares it.
 */
public class Profile {
    public int hits;
    public String name;
    public long total;

    public Profile() {}
}
