package groupings;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * VNODE: RisingWave-style virtual nodes, as {@code groupings/vnode.py}: vnode {@code CRC-32(UTF-8
 * bytes of the key) % V}, first mapping {@code v * n / V} (KEY_GROUP's ranges); later mappings, by
 * RisingWave's minimal move, come from the control plane through {@link #assign}
 * (docs/reference/rescaling.md §2).
 */
public final class VNodeGrouping extends OwnershipGrouping {
    private static final long serialVersionUID = 1L;
    /** RisingWave's vnode count before 2.0 ({@code VirtualNode::COUNT_FOR_COMPAT}). */
    public static final int DEFAULT_VNODES = 256;
    /** RisingWave's largest vnode count ({@code VirtualNode::MAX_COUNT}). */
    public static final int MAX_VNODES = 1 << 15;

    public VNodeGrouping(int numWorkers, long startMs) {
        this(numWorkers, startMs, DEFAULT_VNODES);
    }

    /** @throws IllegalArgumentException {@code vnodes} outside [numWorkers, 32768] */
    public VNodeGrouping(int numWorkers, long startMs, int vnodes) {
        super(numWorkers, startMs, vnodes, "vnodes", MAX_VNODES);
    }

    /** The vnode of {@code key}: CRC-32 of its UTF-8 bytes ({@code ?} for an unpaired surrogate) mod V. */
    public static int vnodeOf(String key, int vnodes) {
        CRC32 crc = new CRC32();
        crc.update(key.getBytes(StandardCharsets.UTF_8));
        return (int) (crc.getValue() % vnodes);
    }

    @Override
    public int groupOf(String key) {
        return vnodeOf(key, groups);
    }

    @Override
    public String name() {
        return "VNODE";
    }
}
