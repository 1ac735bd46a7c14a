import ArgumentParser
import Foundation
import Imaging

/// An error whose message is printed as it is, with exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}
