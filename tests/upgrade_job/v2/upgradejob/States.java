package upgradejob;

import java.time.Duration;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/** Version 2: Account gained a field, `visits` widened to a Long, `seen` has a TTL of one day. */
final class States {
    private final ValueState<Account> profile;
    private final ValueState<Long> visits;
    private final ValueState<String> seen;

    States(RuntimeContext rc) {
        profile = rc.getState(new ValueStateDescriptor<>("profile", TypeInformation.of(Account.class)));
        visits = rc.getState(new ValueStateDescriptor<>("visits", Types.LONG));
        ValueStateDescriptor<String> seenDescriptor = new ValueStateDescriptor<>("seen", Types.STRING);
        seenDescriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofDays(1)).build());
        seen = rc.getState(seenDescriptor);
    }

    void update(String key, int n) throws Exception {
        Account a = new Account();
        a.id = key;
        a.balance = n * 100L;
        a.tier = "new";
        profile.update(a);
        visits.update((long) n);
        seen.update("seen-" + key);
    }

    String dump() throws Exception {
        Account a = profile.value();
        return (a == null ? "- - -" : a.id + " " + a.balance + " " + a.tier) + " " + visits.value() + " " + seen.value();
    }
}
