public import Foundation

/// `$XDG_DATA_HOME/emojiart` (default `~/.local/share/emojiart`): where the gallery keeps its
/// signing key and the app its trusted keys. Not the cache directory: clearing the cache must not
/// reset trust.
public enum DataDirectory {
    /// The directory (not created here).
    public static var url: URL {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("emojiart")
        }
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/emojiart")
    }
}
