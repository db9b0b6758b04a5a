package bench.topology;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ({@code file:}, with its {@code .crc} checksum files) for the topology's
 * checkpoints, setting a file's permissions through {@code java.nio} instead of a {@code chmod}
 * process.
 *
 * <p>Without Hadoop's native library (a pip-installed pyspark has none), {@code
 * RawLocalFileSystem.setPermission} runs {@code chmod} in a new process, and it is called for every
 * file Hadoop creates: each offset-log and commit-log entry, each state store's changelog and
 * snapshot files, and their {@code .crc} files, about 15 processes per micro-batch at A = 10, each
 * waited for by the task or the stream thread that wrote the file. {@link Raw#setPermission} sets
 * the same permission bits with {@link Files#setPosixFilePermissions}. Everything else is Hadoop's
 * own {@link LocalFileSystem}. Set as {@code spark.hadoop.fs.file.impl} by bench/topology/session.py.
 */
public final class LocalCheckpointFileSystem extends LocalFileSystem {
    public LocalCheckpointFileSystem() {
        super(new Raw());
    }

    /** Hadoop's {@link RawLocalFileSystem} but for {@link #setPermission}. */
    static final class Raw extends RawLocalFileSystem {
        /**
         * The permission's user, group and other bits on the file (symbolic links followed, as
         * {@code chmod} does); the sticky bit, which Hadoop sets on no file it creates, is not kept.
         *
         * @throws FileNotFoundException when {@code p} does not exist, as Hadoop's does
         */
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            try {
                Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
            } catch (NoSuchFileException e) {
                throw new FileNotFoundException("File " + p + " does not exist");
            }
        }
    }

    /** The POSIX permission set of a Hadoop permission's user, group and other actions. */
    static Set<PosixFilePermission> posix(FsPermission permission) {
        return PosixFilePermissions.fromString(permission.getUserAction().SYMBOL
                + permission.getGroupAction().SYMBOL + permission.getOtherAction().SYMBOL);
    }
}
