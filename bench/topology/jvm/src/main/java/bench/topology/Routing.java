package bench.topology;

import com.fasterxml.jackson.databind.JsonNode;
import groupings.KeyGrouping;
import groupings.OwnershipGrouping;
import groupings.ReferenceGrouping;
import java.io.Serializable;

/** One routing of a rescale's schedule, as the control plane computed it. */
final class Routing implements Serializable {
    private static final long serialVersionUID = 1L;
    final int workers;
    final int[] owners;

    Routing(int workers, int[] owners) {
        this.workers = workers;
        this.owners = owners;
    }

    static Routing parse(JsonNode node) {
        if (node.has("owners")) {
            int[] owners = new int[node.get("owners").size()];
            for (int g = 0; g < owners.length; g++) {
                owners[g] = node.get("owners").get(g).asInt();
            }
            return new Routing(0, owners);
        }
        if (node.has("workers")) {
            return new Routing(node.get("workers").asInt(), null);
        }
        throw new IllegalArgumentException("a routing is {\"workers\": n} or {\"owners\": [...]}, got " + node);
    }

    /** This routing in force at {@code grouping}, in place. */
    void install(ReferenceGrouping grouping) {
        if (owners != null && grouping instanceof OwnershipGrouping ownership) {
            ownership.assign(owners);
        } else if (owners == null && grouping instanceof KeyGrouping key) {
            key.rescale(workers);
        } else {
            throw new IllegalArgumentException(grouping.name() + " cannot install the routing "
                    + (owners == null ? "{workers: " + workers + "}" : "{owners: [" + owners.length + " groups]}"));
        }
    }
}
