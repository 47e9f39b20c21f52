package headrace.connect;

/**
 * A Kafka Connect {@code Connector} or {@code Task} that wants to know why it stops.
 *
 * <p>headrace calls {@link #stop(boolean)} instead of the plain {@code stop()} on a plugin that
 * implements this interface: with {@code deleted} true exactly once, when the connector was
 * deleted (after a crash of the worker that ran it, too, from wherever the unit runs next), and
 * with false for every other stop (a rebalance, a pause to STOPPED, a shutdown). A plugin that
 * does not implement it gets its plain {@code stop()} in both cases, as on Kafka Connect.
 *
 * <p>Release what the connector holds outside Kafka when {@code deleted} is true: a replication
 * slot, a temporary table, a subscription.
 */
public interface DeletionAware {
    /** Stops the connector or task; {@code deleted} says whether its connector was deleted. */
    void stop(boolean deleted);
}
