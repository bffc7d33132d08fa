package snowplow_assets.jvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without checksum files (RawLocalFileSystem), setting permissions through
 * java.nio instead of a `chmod` process.
 *
 * <p>Without Hadoop's native library, which PySpark does not ship, RawLocalFileSystem starts a `chmod`
 * process for every directory it creates: each write's job and task folders and, in a partitioned write,
 * every partition folder of every task. A tiny shred run created about 60, at some 9 milliseconds each in a
 * JVM of a gigabyte or more, a tenth of the run (benchmarks/README.md). java.nio sets the same nine
 * permission bits in the same call that chmod makes. The sticky bit, which java.nio cannot set, and a file
 * system without POSIX permissions still take Hadoop's own way.
 */
public final class PosixLocalFileSystem extends RawLocalFileSystem {
  // java.nio's permissions from the owner's read bit (0400) down to the others' execute bit (0001).
  private static final PosixFilePermission[] BITS_FROM_HIGHEST = {
    PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE,
    PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE,
  };

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    if (permission.getStickyBit()) {
      super.setPermission(path, permission);
      return;
    }
    try {
      Files.setPosixFilePermissions(pathToFile(path).toPath(), posixPermissions(permission.toShort()));
    } catch (UnsupportedOperationException notPosix) {
      super.setPermission(path, permission);
    }
  }

  static Set<PosixFilePermission> posixPermissions(short mode) {
    Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < BITS_FROM_HIGHEST.length; i++) {
      if ((mode & (0400 >> i)) != 0) {
        permissions.add(BITS_FROM_HIGHEST[i]);
      }
    }
    return permissions;
  }
}
