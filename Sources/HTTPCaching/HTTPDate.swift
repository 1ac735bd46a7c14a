public import Foundation

/// RFC 9110 HTTP dates (section 5.6.7): the IMF-fixdate that `Date`, `Last-Modified`,
/// `Expires` and `If-Modified-Since` carry, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// Written here rather than with `DateFormatter`: a formatter costs tens of microseconds to make
/// and is not `Sendable`, and the cache parses dates on every response. Only the IMF-fixdate
/// form is read; the obsolete RFC 850 and asctime forms are answered `nil`, which RFC 9110 lets
/// a recipient do (an unreadable `Expires` then means "already expired", an unreadable
/// `If-Modified-Since` is ignored).
public enum HTTPDate {
    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The first second an IMF-fixdate can carry: 0001-01-01T00:00:00Z, in seconds since 1970.
    public static let earliest: TimeInterval = -62_135_596_800
    /// The last second an IMF-fixdate can carry: 9999-12-31T23:59:59Z, in seconds since 1970.
    public static let latest: TimeInterval = 253_402_300_799

    /// Whether `date` lies within the years 1 to 9999, the dates an IMF-fixdate can carry
    /// (its year has four digits). `false` for NaN.
    public static func isRepresentable(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds >= earliest && seconds < latest + 1
    }

    /// Formats `date` as an IMF-fixdate, truncated to the second.
    ///
    /// Total: a date before year 1 is written as the first second of year 1, one after year
    /// 9999 (or NaN, which is no moment at all) as the last second of 9999, so no value read
    /// from a file or a clock can trap here. Callers that must not send such a date check
    /// ``isRepresentable(_:)`` first.
    public static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        // Compared as Doubles before any conversion: Int64(x) traps outside its range.
        let clamped = interval >= earliest ? (interval <= latest ? interval : latest) : (interval.isNaN ? latest : earliest)
        let seconds = Int64(clamped.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        // 1970-01-01 was a Thursday (index 3 with Monday first).
        let weekday = Int(((days % 7) + 7 + 3) % 7)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(weekdays[weekday]), \(two(day)) \(months[Int(month) - 1]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Parses an IMF-fixdate; `nil` for anything else. Every field is checked (the year from 1,
    /// the day of month against the month, hour, minute and second against their ranges), so a
    /// parsed date is always ``isRepresentable(_:)``; the weekday must be
    /// one of the seven names but is not checked against the date, as RFC 9110 allows.
    public static func parse(_ text: some StringProtocol) -> Date? {
        let bytes = Array(text.utf8)
        // "Sun, 06 Nov 1994 08:49:37 GMT": 29 bytes at fixed offsets.
        guard bytes.count == 29, bytes[3] == 0x2C, bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
              bytes[16] == 0x20, bytes[19] == 0x3A, bytes[22] == 0x3A, bytes[25] == 0x20,
              bytes[26...28].elementsEqual("GMT".utf8),
              weekdays.contains(where: { $0.utf8.elementsEqual(bytes[0..<3]) }),
              let monthIndex = months.firstIndex(where: { $0.utf8.elementsEqual(bytes[8..<11]) }),
              let day = number(bytes[5..<7]), let year = number(bytes[12..<16]),
              let hour = number(bytes[17..<19]), let minute = number(bytes[20..<22]), let second = number(bytes[23..<25]),
              year >= 1, hour < 24, minute < 60, second < 61, day >= 1, day <= daysIn(month: monthIndex + 1, year: year)
        else { return nil }
        let days = days(fromCivil: Int64(year), Int64(monthIndex + 1), Int64(day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59))
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of ``days(fromCivil:_:_:)``.
    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
