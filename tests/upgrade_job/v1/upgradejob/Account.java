package upgradejob;

/** Version 1 of the profile POJO. */
public class Account {
    public String id;
    public long balance;
}
