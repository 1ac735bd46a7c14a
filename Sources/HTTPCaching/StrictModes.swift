#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether only root and this user can swap a directory away, as ssh's `StrictModes` checks a
/// user's files: every parent of the directory, up to `/`, must be owned by root or this user and
/// not be writable by group or others. Whoever may write a parent can rename the directory and put
/// their own in its place (a cache of their choosing, their trusted keys), whatever the
/// directory's own mode. One exception to ssh's rule: a sticky directory owned by root or this
/// user (`/tmp`, mode 1777) passes, since no one else may rename what this user owns in it.
///
/// Used for the cache directory (`ImageCache`'s set-up), the signing key's and the trusted
/// keys' directories. Stateless; safe from any thread.
public enum StrictModes {
    /// A parent that lets someone else swap the directory, why, and what to do.
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// The parent directory (its real path: links resolved).
        public var parent: String
        /// What is wrong with it: "is owned by user 1001 ...", "may be written by group or others ...".
        public var problem: String

        /// What the user can do.
        public var fix: String {
            "chmod go-w \(parent) if it is yours, or choose a directory whose parents only you and root may write"
        }

        /// The problem and the fix, in one sentence.
        public var description: String { "its parent \(parent) \(problem): \(fix)" }
    }

    /// The first parent of the directory at `path`, from the nearest up, that another user could
    /// swap it from; `nil` when there is none, or when `path` does not exist (the caller checks
    /// again once it has made it). Links in `path` are followed: the parents checked are those of
    /// the directory itself.
    public static func unsafeParent(of path: String) -> Finding? {
        guard let resolved = realpath(path, nil) else { return nil }
        var current = String(cString: resolved)
        free(resolved)
        let user = geteuid()
        while current != "/", !current.isEmpty {
            current = parent(of: current)
            var status = stat()
            guard stat(current, &status) == 0 else {
                return Finding(parent: current, problem: "cannot be examined (\(String(cString: strerror(errno))))")
            }
            if status.st_uid != 0, status.st_uid != user {
                return Finding(parent: current, problem: "is owned by user \(status.st_uid), neither root nor this user (\(user))")
            }
            if status.st_mode & 0o022 != 0, status.st_mode & S_ISVTX == 0 {
                return Finding(
                    parent: current,
                    problem: "may be written by group or others (mode \(String(status.st_mode & 0o7777, radix: 8)))")
            }
        }
        return nil
    }

    /// `/a/b` of `/a/b/c`; `/` of `/a`.
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
