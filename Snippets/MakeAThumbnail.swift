// Imaging: probe and thumbnail an image with libvips, within limits against hostile input.
import Foundation
import Imaging

// snippet.show
try Imaging.start()  // first thing, before other threads start
let imaging = Imaging(limits: .init(maxPixels: 20_000_000, maxBytes: 10 * 1024 * 1024))
let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "art.png")))

let info = try imaging.probe(bytes)  // the header only: format, size, alpha
let thumbnail = try imaging.thumbnail(bytes, fitting: 200, format: .png)
print(info.format, info.width, info.height, thumbnail.width, thumbnail.height, thumbnail.data.count)

do {
    _ = try imaging.thumbnail(Array(bytes.prefix(100)), fitting: 200)
} catch {
    print(error)  // a typed Imaging.Error that says what happened: truncated, not an image, too large
}
