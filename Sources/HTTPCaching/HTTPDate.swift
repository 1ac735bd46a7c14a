public import Foundation

/// RFC 9110 HTTP dates (section 5.6.7): the IMF-fixdate that `Date`, `Last-Modified`,
/// `Expires` and `If-Modified-Since` carry, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// Written here rather than with `DateFormatter`: a formatter costs tens of microseconds to make
/// and is not `Sendable`, and the cache parses dates on every response. Dates are written as
/// IMF-fixdates only; all three forms are read, as RFC 9110 requires of a recipient: the
/// IMF-fixdate, and the obsolete RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`) forms. Anything else is `nil` (an unreadable `Expires` then
/// means "already expired", an unreadable `If-Modified-Since` is ignored).
public enum HTTPDate {
    private static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longWeekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
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

    /// Parses an HTTP date in any of its three forms; `nil` for anything else. Every field is
    /// checked (the year from 1 to 9999, the day of month against the month, hour, minute and
    /// second against their ranges), so a parsed date is always ``isRepresentable(_:)``; the
    /// weekday must be one of the seven names but is not checked against the date, as RFC 9110
    /// allows. An RFC 850 date's two-digit year is the latest year with those digits whose date
    /// is not more than 50 years after `now` (RFC 9110 5.6.7), which is read only for that form.
    public static func parse(_ text: some StringProtocol, now: @autoclosure () -> Date = Date()) -> Date? {
        let bytes = Array(text.utf8)
        if let fields = imfFixdate(bytes) ?? asctime(bytes) { return date(fields) }
        guard var fields = rfc850(bytes) else { return nil }
        // The years with those two digits around now's, latest first: the first not more than 50
        // years ahead (by date, not by year: 31-Dec-76 read on 1 January 2026 is 1976).
        let moment = now().timeIntervalSince1970
        let seconds = Int64((moment.isFinite ? max(earliest, min(latest, moment)) : 0).rounded(.down))
        let today = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (currentYear, month, day) = civil(fromDays: today)
        // The same moment 50 years on (29 February on to 1 March).
        let horizon = days(fromCivil: currentYear + 50, month, day) * 86_400 + (seconds - today * 86_400)
        let current = Int(currentYear)
        let century = current - current % 100
        let digits = fields.year
        for year in [century + 100 + digits, century + digits, century - 100 + digits] {
            // Compared before the fields are checked: a day that year has not (29 February)
            // makes the chosen year's date nil, not another year's.
            let days = days(fromCivil: Int64(year), Int64(fields.month), Int64(fields.day))
            let moment = days * 86_400 + Int64(fields.hour * 3600 + fields.minute * 60 + fields.second)
            if moment <= horizon {
                fields.year = year
                return date(fields)
            }
        }
        return nil
    }

    /// The moment `fields` name, once each is checked against its range; `nil` when one is out.
    private static func date(_ fields: Fields) -> Date? {
        guard fields.year >= 1, fields.year <= 9999, fields.hour < 24, fields.minute < 60, fields.second < 61,
              fields.day >= 1, fields.day <= daysIn(month: fields.month, year: fields.year)
        else { return nil }
        let days = days(fromCivil: Int64(fields.year), Int64(fields.month), Int64(fields.day))
        let seconds = days * 86_400 + Int64(fields.hour * 3600 + fields.minute * 60 + min(fields.second, 59))
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// A date's fields as written, not yet checked against each other; `month` from 1.
    private struct Fields {
        var year, month, day, hour, minute, second: Int
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`: 29 bytes at fixed offsets.
    private static func imfFixdate(_ bytes: [UInt8]) -> Fields? {
        guard bytes.count == 29, bytes[3] == 0x2C, bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
              bytes[16] == 0x20, bytes[25] == 0x20, bytes[26...28].elementsEqual("GMT".utf8),
              weekdays.contains(where: { $0.utf8.elementsEqual(bytes[0..<3]) }),
              let month = month(bytes[8..<11]), let day = number(bytes[5..<7]), let year = number(bytes[12..<16]),
              case let (hour, minute, second)? = time(bytes[17..<25])
        else { return nil }
        return Fields(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// `Sun Nov  6 08:49:37 1994` (a day under 10 after a space): 24 bytes at fixed offsets.
    private static func asctime(_ bytes: [UInt8]) -> Fields? {
        guard bytes.count == 24, bytes[3] == 0x20, bytes[7] == 0x20, bytes[10] == 0x20, bytes[19] == 0x20,
              weekdays.contains(where: { $0.utf8.elementsEqual(bytes[0..<3]) }),
              let month = month(bytes[4..<7]), let day = number(bytes[8] == 0x20 ? bytes[9..<10] : bytes[8..<10]),
              let year = number(bytes[20..<24]), case let (hour, minute, second)? = time(bytes[11..<19])
        else { return nil }
        return Fields(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`: the weekday's whole name, then 23 bytes at fixed offsets;
    /// `year` holds the two digits as written.
    private static func rfc850(_ bytes: [UInt8]) -> Fields? {
        guard let comma = bytes.firstIndex(of: 0x2C), bytes.count - comma == 24,
              longWeekdays.contains(where: { $0.utf8.elementsEqual(bytes[..<comma]) })
        else { return nil }
        let rest = bytes[(comma + 1)...].map(\.self)
        guard rest[0] == 0x20, rest[3] == 0x2D, rest[7] == 0x2D, rest[10] == 0x20, rest[19] == 0x20,
              rest[20...22].elementsEqual("GMT".utf8),
              let month = month(rest[4..<7]), let day = number(rest[1..<3]), let twoDigits = number(rest[8..<10]),
              case let (hour, minute, second)? = time(rest[11..<19])
        else { return nil }
        return Fields(year: twoDigits, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// `08:49:37`: hour, minute and second, their ranges not yet checked.
    private static func time(_ bytes: ArraySlice<UInt8>) -> (Int, Int, Int)? {
        let start = bytes.startIndex
        guard bytes.count == 8, bytes[start + 2] == 0x3A, bytes[start + 5] == 0x3A,
              let hour = number(bytes[start..<(start + 2)]), let minute = number(bytes[(start + 3)..<(start + 5)]),
              let second = number(bytes[(start + 6)..<(start + 8)])
        else { return nil }
        return (hour, minute, second)
    }

    /// A month's three-letter name, from 1.
    private static func month(_ bytes: ArraySlice<UInt8>) -> Int? {
        months.firstIndex(where: { $0.utf8.elementsEqual(bytes) }).map { $0 + 1 }
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
