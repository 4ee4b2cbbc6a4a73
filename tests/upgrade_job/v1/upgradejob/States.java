package upgradejob;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/** Version 1: `profile` an Account POJO, `visits` an Integer, `seen` a String without TTL. */
final class States {
    private final ValueState<Account> profile;
    private final ValueState<Integer> visits;
    private final ValueState<String> seen;

    States(RuntimeContext rc) {
        profile = rc.getState(new ValueStateDescriptor<>("profile", TypeInformation.of(Account.class)));
        visits = rc.getState(new ValueStateDescriptor<>("visits", Types.INT));
        seen = rc.getState(new ValueStateDescriptor<>("seen", Types.STRING));
    }

    void update(String key, int n) throws Exception {
        Account a = new Account();
        a.id = key;
        a.balance = n * 100L;
        profile.update(a);
        visits.update(n);
        seen.update("seen-" + key);
    }

    String dump() throws Exception {
        Account a = profile.value();
        return (a == null ? "- -" : a.id + " " + a.balance) + " " + visits.value() + " " + seen.value();
    }
}
