import Foundation
import HTTPCaching
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// ssh's StrictModes for a directory's parents, in a real temporary tree (tests run as root; a
/// folder of another user is made with `chown` to 65534, nobody).
@Suite struct StrictModesTests {
    let root: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("emojiart-strict-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url.appendingPathComponent("a/b/c"), withIntermediateDirectories: true)
        return url
    }()

    var leaf: String { root.appendingPathComponent("a/b/c").path }

    @Test func privateParentsPass() {
        #expect(StrictModes.unsafeParent(of: leaf) == nil)
    }

    /// The nearest unsafe parent is named, however far up; the directory's own mode is not a
    /// parent's business.
    @Test func theNearestParentOthersMayWriteIsNamed() {
        let a = root.appendingPathComponent("a").path
        #expect(chmod(a, 0o757) == 0)
        #expect(chmod(leaf, 0o777) == 0)
        let finding = StrictModes.unsafeParent(of: leaf)
        #expect(finding?.parent == a)
        #expect(finding?.problem == "may be written by group or others (mode 757)")
        #expect(chmod(root.appendingPathComponent("a/b").path, 0o770) == 0)
        #expect(StrictModes.unsafeParent(of: leaf)?.parent == root.appendingPathComponent("a/b").path)
        #expect(chmod(a, 0o1777) == 0 && chmod(root.appendingPathComponent("a/b").path, 0o1770) == 0)
        #expect(StrictModes.unsafeParent(of: leaf) == nil, "sticky parents pass")
        #expect(chown(a, 65534, 65534) == 0)
        #expect(StrictModes.unsafeParent(of: leaf)?.problem.contains("owned by user 65534") == true, "a sticky parent of another user does not")
    }

    /// A link is followed: the parents checked are the real directory's, not the link's.
    @Test func theParentsOfALinksTargetAreChecked() {
        let link = root.appendingPathComponent("link").path
        #expect(symlink(leaf, link) == 0)
        #expect(chmod(root.appendingPathComponent("a/b").path, 0o777) == 0)
        #expect(StrictModes.unsafeParent(of: link)?.parent == root.appendingPathComponent("a/b").path)
        #expect(StrictModes.unsafeParent(of: root.appendingPathComponent("missing").path) == nil, "not made yet: checked once made")
    }
}
