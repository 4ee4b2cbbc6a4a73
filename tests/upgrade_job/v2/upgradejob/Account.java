package upgradejob;

/** Version 2 of the profile POJO: a field added. */
public class Account {
    public String id;
    public long balance;
    public String tier;
}
