/// A field that lists weighted preferences, as `Accept` and `Accept-Encoding` do (RFC 9110
/// 12.4.2): comma-separated elements, each a name (a media range, a content-coding) and
/// parameters after `;`, one of which may be its weight, `q`.
///
/// Its elements come in their order, each with its weight in thousandths: 1000 without a `q`; a
/// `q` as RFC 9110 writes it (`0` to `1`, at most three decimals) read exactly; any other `q`
/// counts as 0, not acceptable: the safe reading of a value nobody can interpret. A parameter's
/// value may be a quoted string holding commas and semicolons: they end nothing. Elements with
/// no name (`,,`) are skipped, and a field longer than ``maxLength`` is not read at all: it has
/// no elements.
///
/// Read in place, byte by byte, allocating nothing: the image routes read `Accept` on the event
/// loop for every request.
package struct WeightedPreferences: Sequence {
    /// One element of the list.
    package struct Element {
        /// What it names, without the optional whitespace around it, in the case it was sent.
        package let name: Substring.UTF8View
        /// Its weight in thousandths, 0 to 1000; 0: not acceptable.
        package let weight: Int

        /// Whether ``name`` is `lowercase`, ignoring ASCII case (media types and content-codings
        /// are case-insensitive).
        package func names(_ lowercase: StaticString) -> Bool {
            WeightedPreferences.matches(name, lowercase)
        }
    }

    /// The longest field read; no client sends more than a few hundred bytes.
    package static let maxLength = 2048

    /// The field, or nothing when it is longer than ``maxLength``.
    private let field: Substring.UTF8View

    /// The preferences of `field` (all its lines joined with commas); none for `nil` or for a
    /// field longer than ``maxLength``.
    package init(_ field: String?) {
        guard let field, field.utf8.count <= Self.maxLength else {
            self.field = Substring().utf8
            return
        }
        self.field = field.utf8[...]
    }

    package func makeIterator() -> Iterator {
        Iterator(rest: field)
    }

    /// Reads one element at a time from what is left of the field.
    package struct Iterator: IteratorProtocol {
        var rest: Substring.UTF8View

        package mutating func next() -> Element? {
            while !rest.isEmpty {
                let end = WeightedPreferences.firstUnquoted(UInt8(ascii: ","), in: rest)
                let element = rest[..<end]
                rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
                let nameEnd = element.firstIndex(of: UInt8(ascii: ";")) ?? element.endIndex
                let name = WeightedPreferences.trimmed(element[..<nameEnd])
                guard !name.isEmpty else { continue }
                return Element(name: name, weight: WeightedPreferences.weight(of: element[nameEnd...]))
            }
            return nil
        }
    }

    /// The weight the parameters `parameters` (each after a `;`) give: the last `q`'s, 1000
    /// without one.
    package static func weight(of parameters: Substring.UTF8View) -> Int {
        var weight = 1000
        var parameters = parameters
        while parameters.first == UInt8(ascii: ";") {
            parameters = parameters.dropFirst()
            let parameterEnd = firstUnquoted(UInt8(ascii: ";"), in: parameters)
            let parameter = parameters[..<parameterEnd]
            parameters = parameters[parameterEnd...]
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")), matches(trimmed(parameter[..<equals]), "q") else { continue }
            weight = qValue(trimmed(parameter[parameter.index(after: equals)...])) ?? 0
        }
        return weight
    }

    /// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
    package static func trimmed(_ text: Substring.UTF8View) -> Substring.UTF8View {
        var text = text
        while let first = text.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { text = text.dropFirst() }
        while let last = text.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { text = text.dropLast() }
        return text
    }

    /// The index of the first `separator` in `text` outside a quoted string (a parameter's value
    /// may be one, and hold commas and semicolons: RFC 9110 5.6.4, `\` escaping the next byte),
    /// or the end.
    package static func firstUnquoted(_ separator: UInt8, in text: Substring.UTF8View) -> Substring.UTF8View.Index {
        var quoted = false
        var escaped = false
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            if escaped {
                escaped = false
            } else if quoted {
                if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { quoted = false }
            } else if byte == UInt8(ascii: "\"") {
                quoted = true
            } else if byte == separator {
                return index
            }
            text.formIndex(after: &index)
        }
        return index
    }

    /// Whether `text` is `lowercase`, ignoring ASCII case.
    package static func matches(_ text: Substring.UTF8View, _ lowercase: StaticString) -> Bool {
        guard text.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            zip(text, expected).allSatisfy { byte, want in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == want
            }
        }
    }

    /// A q-value as RFC 9110 writes it, in thousandths: `0`, `1`, `0.` or `1.` and up to three
    /// digits (1's all zeros); `nil` for anything else. The digits are counted before any is read.
    package static func qValue(_ text: Substring.UTF8View) -> Int? {
        guard let first = text.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return nil }
        let whole = Int(first - UInt8(ascii: "0")) * 1000
        let afterFirst = text.dropFirst()
        guard let point = afterFirst.first else { return whole }
        let digits = afterFirst.dropFirst()
        guard point == UInt8(ascii: "."), digits.count <= 3,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        var fraction = 0
        var scale = 100
        for digit in digits {
            fraction += Int(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        guard whole == 0 || fraction == 0 else { return nil }
        return whole + fraction
    }
}
