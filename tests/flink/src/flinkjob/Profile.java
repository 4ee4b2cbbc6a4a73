package flinkjob;

/** The POJO value of proc's `profile` state (PojoSerializer: fields in name order hits, name, total). */
public class Profile {
    public int hits;
    public String name;
    public long total;

    public Profile() {}
}
